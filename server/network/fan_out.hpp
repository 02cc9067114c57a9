#pragma once
// Writes one frame to many sockets at once, over more than one thread: a watch event's
// watchers. On loopback, and in good part on a real network, one small send costs a few
// microseconds of kernel time (TCP's transmit path, and on loopback the receiver's side too),
// so 10,000 watchers cost one thread tens of milliseconds; helpers wake for a large fan-out
// and take part of it.
//
// The helpers only call send(2) on descriptors the caller hands them, and touch nothing else:
// every connection's state stays with the server's thread, which reads the results after
// send_all() returns. While send_all() runs the caller owns the descriptors (none is closed,
// none written by anyone else), so no write can come between or interleave with these.
//
// Work is claimed in small chunks from a shared index: the caller starts at once and a helper
// takes what is left when it wakes, so a helper slow to wake delays nothing; one preempted with
// a chunk claimed is waited for (send_all sleeps meanwhile, freeing its core for it).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace warden::server {

class FanOutSender {
 public:
  // One socket of a fan-out. `result`: the bytes sent (all, some, or 0 when the socket's
  // buffer was full), or -errno when the send failed.
  struct Target {
    int fd = -1;
    ssize_t result = 0;
  };

  // `helpers` threads besides the caller's (0: the caller sends all).
  explicit FanOutSender(unsigned helpers);
  ~FanOutSender();
  FanOutSender(const FanOutSender&) = delete;
  FanOutSender& operator=(const FanOutSender&) = delete;

  // Helpers for this machine: one fewer than its cores, at most `most_helpers`.
  static unsigned helpers_for_this_machine();

  // Sends `frame` to every target without blocking (MSG_DONTWAIT) and fills in its result.
  void send_all(std::vector<Target>& targets, std::string_view frame);

  // A fan-out below this many targets is sent by the caller alone: waking a helper costs
  // tens of microseconds, about what a few dozen sends cost.
  static constexpr size_t helpers_from = 128;
  // Targets claimed at a time: few, since the caller waits for a claimed chunk to be sent.
  static constexpr size_t chunk = 8;
  // The caller's checks for a helper's last chunk before it sleeps until the helper is done.
  static constexpr unsigned spins_before_sleep = 100;
  static constexpr unsigned most_helpers = 3;

 private:
  struct Batch {
    Target* targets = nullptr;
    size_t count = 0;
    std::string_view frame;
    std::atomic<size_t> next{0};
  };

  static void send_claimed(Batch& b);
  void helper_loop();

  std::atomic<Batch*> current_{nullptr};
  std::atomic<uint32_t> active_{0};       // helpers between taking current_ and finishing
  std::atomic<uint32_t> generation_{0};   // bumped (and waited on: a futex) to wake the helpers
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> helpers_;
};

}  // namespace warden::server
