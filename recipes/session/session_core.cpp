#include "recipes/session/session_core.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace warden::client::session {

int32_t loss_margin_ms(int32_t timeout_ms) { return timeout_ms / 10; }

void HostOrder::reset(size_t hosts) {
  order_.clear();
  for (size_t i = 0; i < hosts; ++i) order_.push_back(i);
  std::shuffle(order_.begin(), order_.end(), rng_);
  next_ = 0;
}

size_t HostOrder::next() {
  if (order_.empty()) return 0;
  return order_[next_++ % order_.size()];
}

std::chrono::milliseconds HostOrder::pause(bool was_connected) const {
  if (was_connected || order_.empty() || next_ % order_.size() != 0) return std::chrono::milliseconds(0);
  return round_pause;
}

std::optional<State> ConnectionStates::ready() {
  if (ended_) return std::nullopt;
  bool again = ever_ready_;
  ever_ready_ = true;
  return again ? State::reconnected : State::connected;
}

std::optional<State> ConnectionStates::broken() {
  bool was = connected_;
  connected_ = false;
  if (ended_ || !was) return std::nullopt;
  return State::suspended;
}

std::optional<State> ConnectionStates::lost_deadline() {
  if (connected_ || ended_) return std::nullopt;
  return State::lost;
}

State ConnectionStates::end(State last) {
  connected_ = false;
  ended_ = true;
  return last;
}

void SessionClock::connected() {
  confirmed_ = std::max(confirmed_, handshake_sent_);
  confirming_sent_ = handshake_sent_;
}

void SessionClock::request_sent(Clock::time_point t, bool confirms) {
  if (confirms) confirming_sent_ = t;
}

void SessionClock::answered(Clock::time_point sent, bool confirms) {
  if (confirms) confirmed_ = std::max(confirmed_, sent);
}

Clock::time_point SessionClock::ping_due(int32_t timeout_ms) const {
  return confirming_sent_ + std::chrono::milliseconds(std::max(10, timeout_ms / 3));
}

void SessionClock::ping_sent(Clock::time_point t) {
  pings_.push_back(t);
  confirming_sent_ = t;
}

void SessionClock::ping_answered() {
  if (pings_.empty()) return;
  confirmed_ = std::max(confirmed_, pings_.front());
  pings_.pop_front();
}

Clock::time_point SessionClock::lost_at(int32_t timeout_ms) const {
  return confirmed_ + std::chrono::milliseconds(timeout_ms - loss_margin_ms(timeout_ms));
}

int32_t Requests::next_xid() {
  int32_t xid = next_xid_;
  next_xid_ = xid == std::numeric_limits<int32_t>::max() ? 1 : xid + 1;
  return xid;
}

bool Requests::queue(Request& q) {
  if (queued_.size() >= max_queued_requests) return false;
  queued_.push_back(std::move(q));
  return true;
}

Requests::Request Requests::pop_queued() {
  Request q = std::move(queued_.front());
  queued_.pop_front();
  return q;
}

std::deque<Requests::Request> Requests::take_queued() { return std::exchange(queued_, {}); }

std::optional<Requests::Request> Requests::answer(int32_t xid) {
  if (in_flight_.empty() || in_flight_.front().xid != xid) return std::nullopt;
  Request q = std::move(in_flight_.front());
  in_flight_.pop_front();
  return q;
}

std::deque<Requests::Request> Requests::take_in_flight() { return std::exchange(in_flight_, {}); }

void WatchRegistry::add(Kind k, const std::string& path, Watcher w) {
  if (!w) return;
  auto& m = k == Kind::data ? data_ : k == Kind::exist ? exist_ : child_;
  m[path].push_back(std::move(w));
}

void WatchRegistry::add_persistent(const std::string& path, bool recursive, Watcher w) {
  persistent_[path].emplace_back(recursive, std::move(w));
}

void WatchRegistry::remove_all(const std::string& path) {
  data_.erase(path);
  exist_.erase(path);
  child_.erase(path);
  persistent_.erase(path);
}

void WatchRegistry::clear() {
  data_.clear();
  exist_.clear();
  child_.clear();
  persistent_.clear();
}

std::vector<Watcher> WatchRegistry::fire(EventType t, const std::string& path) {
  std::vector<Watcher> out;
  auto take = [&](std::map<std::string, std::vector<Watcher>>& m) {
    auto it = m.find(path);
    if (it == m.end()) return;
    for (auto& w : it->second) out.push_back(std::move(w));
    m.erase(it);
  };
  switch (t) {
    case EventType::nodeCreated:
    case EventType::nodeDataChanged:
      take(data_);
      take(exist_);
      break;
    case EventType::nodeDeleted:
      take(data_);
      take(exist_);
      take(child_);
      break;
    case EventType::nodeChildrenChanged:
      take(child_);
      break;
    default:
      break;
  }
  for (auto& [p, ws] : persistent_) {
    bool here = p == path;
    bool below =
        p == "/" ? path != "/" : path.size() > p.size() && path.compare(0, p.size(), p) == 0 && path[p.size()] == '/';
    for (auto& [recursive, w] : ws) {
      if (recursive && (here || below) && t != EventType::nodeChildrenChanged) out.push_back(w);
      if (!recursive && here) out.push_back(w);
    }
  }
  return out;
}

std::vector<wire::SetWatches2> WatchRegistry::set_watches(
    Zxid last_zxid, const std::function<std::string(const std::string&)>& server_path, size_t max_bytes) const {
  std::vector<wire::SetWatches2> out;
  wire::SetWatches2 sw;
  size_t bytes = 0;
  auto close_record = [&] {
    if (bytes == 0) return;
    sw.relativeZxid = last_zxid;
    out.push_back(std::move(sw));
    sw = wire::SetWatches2{};
    bytes = 0;
  };
  auto add = [&](std::vector<std::string> wire::SetWatches2::*kind, const std::string& path) {
    std::string f = server_path(path);
    if (bytes > 0 && bytes + f.size() > max_bytes) close_record();
    bytes += f.size() + 4;
    (sw.*kind).push_back(std::move(f));
  };
  for (const auto& [p, w] : data_) add(&wire::SetWatches2::dataWatches, p);
  for (const auto& [p, w] : exist_) add(&wire::SetWatches2::existWatches, p);
  for (const auto& [p, w] : child_) add(&wire::SetWatches2::childWatches, p);
  for (const auto& [p, ws] : persistent_) {
    bool rec = false, plain = false;
    for (const auto& [recursive, w] : ws) (recursive ? rec : plain) = true;
    if (plain) add(&wire::SetWatches2::persistentWatches, p);
    if (rec) add(&wire::SetWatches2::persistentRecursiveWatches, p);
  }
  close_record();
  return out;
}

}  // namespace warden::client::session
