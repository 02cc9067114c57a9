// AcceptThread: takes connections off listening sockets on a thread of its own, hands each one
// over once with its listener's tag, stops using a listener once told, and pauses (never spins)
// when the process is out of descriptors.
#include "server/network/accept_thread.hpp"

#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

using warden::server::AcceptThread;

namespace {

// A listening socket on a free loopback port.
struct Listening {
  int fd = -1;
  uint16_t port = 0;
  Listening() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 1024) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listening() { ::close(fd); }
};

// A client's connection (blocking connect: the kernel completes it from its accept queue), on
// `fd` if one is given.
int dial(uint16_t port, int fd = -1) {
  if (fd < 0) fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

// What the thread handed over, collected.
struct Received {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<AcceptThread::Accepted> got;
  size_t batches = 0;
  AcceptThread::Deliver deliver() {
    return [this](std::vector<AcceptThread::Accepted> b) {
      std::lock_guard<std::mutex> l(mu);
      got.insert(got.end(), b.begin(), b.end());
      ++batches;
      cv.notify_all();
    };
  }
  // Waits (bounded) until at least `n` connections came; returns how many did.
  size_t wait_for(size_t n, std::chrono::milliseconds bound = std::chrono::seconds(10)) {
    std::unique_lock<std::mutex> l(mu);
    cv.wait_for(l, bound, [&] { return got.size() >= n; });
    return got.size();
  }
  ~Received() {
    for (auto& a : got) ::close(a.fd);
  }
};

}  // namespace

TEST_CASE("the accept thread hands over every connection once, tagged with the port it came to") {
  Listening plain, secure;
  Received r;
  std::vector<int> clients;
  {
    AcceptThread t(r.deliver());
    t.listen_on({{plain.fd, 0}, {secure.fd, 1}});
    for (int i = 0; i < 300; ++i) clients.push_back(dial(i % 3 == 0 ? secure.port : plain.port));
    REQUIRE(r.wait_for(300) == 300);
  }
  size_t tagged_secure = 0;
  for (auto& a : r.got) {
    tagged_secure += a.tag == 1;
    sockaddr_in local{};
    socklen_t len = sizeof local;
    REQUIRE(::getsockname(a.fd, reinterpret_cast<sockaddr*>(&local), &len) == 0);
    CHECK(ntohs(local.sin_port) == (a.tag == 1 ? secure.port : plain.port));
  }
  CHECK(tagged_secure == 100);
  for (int fd : clients) ::close(fd);
}

TEST_CASE("a listener taken out of the accept thread's set is no longer accepted from") {
  Listening a, b;
  Received r;
  AcceptThread t(r.deliver());
  t.listen_on({{a.fd, 0}, {b.fd, 1}});
  int first = dial(a.port);
  REQUIRE(r.wait_for(1) == 1);
  t.listen_on({{b.fd, 1}});   // returns once the thread no longer polls a
  int second = dial(a.port);  // completed by the kernel; waits in a's queue
  int third = dial(b.port);
  REQUIRE(r.wait_for(2) == 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  {
    std::lock_guard<std::mutex> l(r.mu);
    REQUIRE(r.got.size() == 2);
    CHECK(r.got[1].tag == 1);
  }
  t.stop();
  int fourth = dial(b.port);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(r.wait_for(3, std::chrono::milliseconds(10)) == 2);  // stopped: nothing more
  for (int fd : {first, second, third, fourth}) ::close(fd);
}

TEST_CASE("out of descriptors, the accept thread pauses and takes the connection once it can") {
  Listening l;
  Received r;
  AcceptThread t(r.deliver());
  t.listen_on({{l.fd, 0}});
  int client = dial(l.port);
  REQUIRE(r.wait_for(1) == 1);

  // Lower the soft limit to what is open now: the next accept fails with EMFILE. The client's
  // socket is made before and connected after, so that only the server's side lacks one.
  int waiting = ::socket(AF_INET, SOCK_STREAM, 0);
  rlimit before{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &before) == 0);
  int spare = ::dup(0);  // the lowest free descriptor: everything below it is taken
  ::close(spare);
  // Descriptors above `spare` may be open too; hold every free one up to the limit set below.
  rlimit low = before;
  low.rlim_cur = static_cast<rlim_t>(spare) + 1;
  std::vector<int> held;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  for (int fd; (fd = ::dup(0)) >= 0;) held.push_back(fd);
  dial(l.port, waiting);
  int pauses_seen = 0;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((pauses_seen = static_cast<int>(t.pauses())) < 3 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  size_t meanwhile = r.wait_for(2, std::chrono::milliseconds(1));
  // A pause is resource_pause_ms: a few in 50 ms, not the thousands a spin makes.
  auto slept_from = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  uint64_t more = t.pauses() - static_cast<uint64_t>(pauses_seen);
  auto slept_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - slept_from);
  for (int fd : held) ::close(fd);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &before) == 0);

  CHECK(pauses_seen >= 3);
  CHECK(meanwhile == 1);
  CHECK(more <= static_cast<uint64_t>(slept_ms.count() / AcceptThread::resource_pause_ms + 2));
  CHECK(r.wait_for(2) == 2);  // descriptors back: the waiting connection is taken
  ::close(client);
  ::close(waiting);
}

TEST_CASE("a descriptor that is not listening makes the accept thread pause, not spin") {
  // A TCP socket never put to listen: poll says it is hung up and accept fails with EINVAL at
  // once, every time, as a listener gone wrong would.
  int odd = ::socket(AF_INET, SOCK_STREAM, 0);
  Received r;
  AcceptThread t(r.deliver());
  t.listen_on({{odd, 0}});
  auto from = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  uint64_t pauses = t.pauses();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - from).count();
  t.stop();
  ::close(odd);
  CHECK(pauses >= 1);
  CHECK(pauses <= static_cast<uint64_t>(ms / AcceptThread::resource_pause_ms + 2));
  CHECK(r.wait_for(1, std::chrono::milliseconds(1)) == 0);
}
