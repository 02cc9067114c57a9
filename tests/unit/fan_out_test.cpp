// FanOutSender: one frame to many sockets over helper threads; each socket gets every frame of
// every batch once and in order, and each target's result says what its send did.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "server/network/fan_out.hpp"

using warden::server::FanOutSender;

namespace {
// Socket pairs: the sender's ends and the reader's ends.
struct Pairs {
  std::vector<int> ours, theirs;
  explicit Pairs(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      int sv[2];
      REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
      ours.push_back(sv[0]);
      theirs.push_back(sv[1]);
    }
  }
  ~Pairs() {
    for (int fd : ours) ::close(fd);
    for (int fd : theirs)
      if (fd >= 0) ::close(fd);
  }
  std::vector<FanOutSender::Target> targets() const {
    std::vector<FanOutSender::Target> t;
    for (int fd : ours) t.push_back({fd, -999});
    return t;
  }
};

std::string read_all(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string out;
  char buf[4096];
  for (ssize_t r; (r = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(r));
  return out;
}
}  // namespace

TEST_CASE("every socket of a fan-out gets each batch's frame once and in order, with or without helpers") {
  for (unsigned helpers : {0u, 1u, 3u}) {
    CAPTURE(helpers);
    FanOutSender sender(helpers);
    // Above helpers_from, so that helpers take part; many batches, so that a helper waking
    // late for one batch meets the next (the frame differs in each: a stale one would show).
    Pairs p(FanOutSender::helpers_from * 2 + 7);
    std::string expected;
    for (int batch = 0; batch < 150; ++batch) {
      std::string frame = "frame " + std::to_string(1000 + batch) + ";";
      expected += frame;
      auto t = p.targets();
      sender.send_all(t, frame);
      for (const auto& target : t) REQUIRE(target.result == static_cast<ssize_t>(frame.size()));
    }
    for (int fd : p.theirs) REQUIRE(read_all(fd) == expected);
  }
}

TEST_CASE("a fan-out reports a full socket's short send and a closed peer's failure, and sends the rest") {
  FanOutSender sender(1);
  Pairs p(FanOutSender::helpers_from + 3);
  // Target 5's buffer is full: its send takes nothing (or the little room left).
  int small = 4096;
  ::setsockopt(p.ours[5], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  ::fcntl(p.ours[5], F_SETFL, ::fcntl(p.ours[5], F_GETFL) | O_NONBLOCK);
  std::string filler(1024, 'f');
  while (::send(p.ours[5], filler.data(), filler.size(), MSG_NOSIGNAL) > 0) {
  }
  // Target 9's reader is gone.
  ::close(p.theirs[9]);
  p.theirs[9] = -1;
  std::string frame(512, 'e');
  auto t = p.targets();
  sender.send_all(t, frame);
  for (size_t i = 0; i < t.size(); ++i) {
    CAPTURE(i);
    if (i == 5) {
      CHECK(t[i].result >= 0);
      CHECK(t[i].result < static_cast<ssize_t>(frame.size()));
    } else if (i == 9) {
      CHECK(t[i].result == -EPIPE);
    } else {
      CHECK(t[i].result == static_cast<ssize_t>(frame.size()));
      CHECK(read_all(p.theirs[i]) == frame);
    }
  }
}

TEST_CASE("a sender stops even when it ends before its helpers have started") {
  // A server whose start fails right after the sender is made (a bad setting, a data
  // directory in use) ends it at once; its helpers must not wait for a wake-up that came.
  for (int i = 0; i < 300; ++i) FanOutSender sender(3);
  SUCCEED("every sender's helpers were joined");
}
