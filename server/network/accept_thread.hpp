#pragma once
// Takes new connections off the client ports' listening sockets on a thread of its own, so that
// a server thread busy with thousands of TLS handshakes never leaves the kernel's accept queue
// full. A SYN that finds the queue full is dropped, and the client sends it again only a second
// later (then three seconds later): in a storm of 5,000 TLS clients, a few hundred of them
// waited one or three seconds more because the server thread reached its accept handler once per
// round of handshakes. ZooKeeper accepts on a thread of its own too (NIOServerCnxnFactory's
// AcceptThread, Netty's boss group).
//
// The thread only calls poll(2) and accept4(2) on the descriptors it is given and hands each
// batch of new connections to `deliver` (which must be safe to call from it: the runtime posts
// the batch to its own thread, where each connection is set up as before). It never closes a
// listening descriptor: the owner does, after listen_on() has taken it out of the set.
//
// When accept fails for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) the
// listening socket stays readable; the thread waits `resource_pause_ms` before trying again (as
// ZooKeeper's AcceptThread pauses), instead of spinning, and says so once per episode.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace warden::server {

class AcceptThread {
 public:
  struct Listener {
    int fd = -1;  // a listening socket
    int tag = 0;  // the owner's name for it, handed back with each connection from it
  };
  struct Accepted {
    int fd = -1;  // the new connection, non-blocking, close-on-exec
    int tag = 0;  // its listener's
  };
  // Takes ownership of the descriptors it is given; called on the accept thread.
  using Deliver = std::function<void(std::vector<Accepted>)>;

  explicit AcceptThread(Deliver deliver);
  ~AcceptThread();  // stop()
  AcceptThread(const AcceptThread&) = delete;
  AcceptThread& operator=(const AcceptThread&) = delete;

  // The listening descriptors to accept from (made non-blocking here); the thread starts on the
  // first call. Returns once the thread has stopped using any descriptor left out, which the
  // caller may then close.
  void listen_on(std::vector<Listener> listeners);
  // Ends the thread; nothing is accepted after it returns.
  void stop();

  // How often accept failed (for want of a resource, mostly), each followed by a pause.
  uint64_t pauses() const;

  // At most this many connections per batch handed over, so that the server thread's setting
  // up of one batch stays short when a storm lands at once.
  static constexpr size_t max_batch = 256;
  static constexpr int resource_pause_ms = 10;

 private:
  void run();
  void wake();
  void pause();  // resource_pause_ms, or less if woken

  Deliver deliver_;
  int wake_fd_ = -1;  // an eventfd: written to make the thread look at its settings again
  mutable std::mutex mu_;
  std::condition_variable adopted_cv_;
  std::vector<Listener> wanted_;  // guarded by mu_
  uint64_t requested_ = 0;        // guarded by mu_: listen_on() calls so far
  uint64_t adopted_ = 0;          // guarded by mu_: the ones the thread has taken up
  bool stopping_ = false;         // guarded by mu_
  uint64_t pauses_ = 0;           // guarded by mu_
  std::thread thread_;
};

}  // namespace warden::server
