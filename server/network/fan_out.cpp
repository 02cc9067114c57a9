#include "server/network/fan_out.hpp"

#include <algorithm>
#include <cerrno>
#include <sys/socket.h>

namespace warden::server {

FanOutSender::FanOutSender(unsigned helpers) {
  helpers_.reserve(helpers);
  for (unsigned i = 0; i < helpers; ++i) helpers_.emplace_back([this] { helper_loop(); });
}

FanOutSender::~FanOutSender() {
  stopping_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& t : helpers_) t.join();
}

unsigned FanOutSender::helpers_for_this_machine() {
  unsigned cores = std::thread::hardware_concurrency();
  return cores <= 1 ? 0 : std::min(cores - 1, most_helpers);
}

void FanOutSender::send_all(std::vector<Target>& targets, std::string_view frame) {
  if (targets.empty()) return;
  Batch b;
  b.targets = targets.data();
  b.count = targets.size();
  b.frame = frame;
  bool shared = !helpers_.empty() && targets.size() >= helpers_from;
  if (shared) {
    current_.store(&b);
    generation_.fetch_add(1);
    generation_.notify_all();
  }
  send_claimed(b);
  if (!shared) return;
  // A helper that took the batch before it was withdrawn is counted in active_ (it counts
  // itself before it looks, both sequentially consistent), so once active_ is 0 no helper
  // holds `b` or sends on its descriptors.
  // A helper still sending was most likely preempted (on loopback, by the very client its send
  // woke): this thread sleeps rather than spins, so its core falls idle and the scheduler moves
  // the helper onto it at once.
  current_.store(nullptr);
  for (unsigned spins = 0;; ++spins) {
    unsigned a = active_.load();
    if (a == 0) return;
    if (spins >= spins_before_sleep) active_.wait(a);
  }
}

void FanOutSender::send_claimed(Batch& b) {
  for (;;) {
    size_t first = b.next.fetch_add(chunk);
    if (first >= b.count) return;
    size_t end = std::min(first + chunk, b.count);
    for (size_t i = first; i < end; ++i) {
      Target& t = b.targets[i];
      ssize_t r;
      do r = ::send(t.fd, b.frame.data(), b.frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      while (r < 0 && errno == EINTR);
      t.result = r >= 0 ? r : (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
    }
  }
}

void FanOutSender::helper_loop() {
  // The generation the constructor started with, not the one this thread first sees: a stop
  // (or a batch) that came before this thread ran has moved it on already.
  uint32_t seen = 0;
  for (;;) {
    generation_.wait(seen);
    seen = generation_.load();
    if (stopping_.load()) return;
    active_.fetch_add(1);
    if (Batch* b = current_.load()) send_claimed(*b);
    if (active_.fetch_sub(1) == 1) active_.notify_all();
  }
}

}  // namespace warden::server
