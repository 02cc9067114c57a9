#include "server/network/accept_thread.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

namespace warden::server {

namespace {

bool for_want_of_resources(int e) { return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM; }

}  // namespace

AcceptThread::AcceptThread(Deliver deliver) : deliver_(std::move(deliver)) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0)
    throw std::runtime_error(std::string("cannot make the accept thread's eventfd: ") + strerror(errno));
}

AcceptThread::~AcceptThread() {
  stop();
  close(wake_fd_);
}

void AcceptThread::wake() {
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof one);
  (void)n;  // EAGAIN only when the counter is already huge: the thread is woken all the same
}

void AcceptThread::listen_on(std::vector<Listener> listeners) {
  for (const Listener& l : listeners) fcntl(l.fd, F_SETFL, fcntl(l.fd, F_GETFL) | O_NONBLOCK);
  std::unique_lock<std::mutex> l(mu_);
  if (stopping_) return;
  wanted_ = std::move(listeners);
  uint64_t mine = ++requested_;
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  wake();
  adopted_cv_.wait(l, [&] { return adopted_ >= mine || stopping_; });
}

void AcceptThread::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  adopted_cv_.notify_all();
  if (!thread_.joinable()) return;
  wake();
  thread_.join();
}

uint64_t AcceptThread::pauses() const {
  std::lock_guard<std::mutex> l(mu_);
  return pauses_;
}

void AcceptThread::run() {
  std::vector<Listener> listeners;
  std::vector<pollfd> polled;
  bool failing = false;  // in an episode of failed accepts (EMFILE and the like): said once
  for (;;) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return;
      if (adopted_ != requested_) {
        listeners = wanted_;
        adopted_ = requested_;
        adopted_cv_.notify_all();
      }
    }
    polled.assign(1, pollfd{wake_fd_, POLLIN, 0});
    for (const Listener& l : listeners) polled.push_back(pollfd{l.fd, POLLIN, 0});
    if (poll(polled.data(), polled.size(), -1) < 0) {
      if (errno != EINTR) pause();  // not expected (ENOMEM): never spin on it
      continue;
    }
    if (polled[0].revents) {
      uint64_t n = 0;
      ssize_t r = read(wake_fd_, &n, sizeof n);
      (void)r;
      continue;  // settings first: a listener may be on its way to being closed
    }
    bool paused = false;
    for (size_t i = 1; i < polled.size() && !paused; ++i) {
      if (!polled[i].revents) continue;
      std::vector<Accepted> batch;
      while (batch.size() < max_batch) {
        int fd = accept4(polled[i].fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
          batch.push_back(Accepted{fd, listeners[i - 1].tag});
          failing = false;
          continue;
        }
        int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK) break;
        if (e == EINTR || e == ECONNABORTED || e == EPROTO || e == EPERM) continue;  // that one connection only
        // Out of descriptors or memory the socket stays readable; any other failure is not
        // expected on a listening socket. Either way: a pause before the next try, never a spin.
        std::string why = std::generic_category().message(e);
        if (!failing && for_want_of_resources(e))
          spdlog::warn("cannot accept a connection: {}; trying again every {} ms", why, resource_pause_ms);
        else if (!failing)
          spdlog::error("accept on descriptor {} failed: {}; trying again every {} ms", polled[i].fd, why,
                        resource_pause_ms);
        failing = true;
        {
          std::lock_guard<std::mutex> l(mu_);
          ++pauses_;
        }
        paused = true;
        break;
      }
      if (!batch.empty()) deliver_(std::move(batch));
    }
    if (paused) pause();
  }
}

void AcceptThread::pause() {
  // Waits on the eventfd alone, so that stop() and listen_on() still end the pause at once.
  pollfd w{wake_fd_, POLLIN, 0};
  poll(&w, 1, resource_pause_ms);
}

}  // namespace warden::server
