#pragma once
// The client's session without its socket: what client.cpp's Asio shell decides with, kept
// free of sockets and clocks so that it is tested alone (tests/unit/client_session_test.cpp,
// with time points made by hand):
// - SessionClock: the `lost` rule. When the server that expires sessions last certainly heard
//   this session, when the next ping is due, when a connection that heard nothing is dead, and
//   when a suspended session must be called lost (loss_margin_ms before it can have expired).
// - Requests: xids, the requests waiting for a connection (bounded) and those in flight, whose
//   replies must come back in order.
// - WatchRegistry: one-shot and persistent watches, which of them an event fires, and the
//   setWatches2 frames that set them again on a new connection (at most
//   max_set_watches_bytes of paths each, as ZooKeeper's client splits them).
// - HostOrder: the servers in a shuffled order, each tried in turn, and the pause before the
//   next attempt.
// - ConnectionStates: which state a connection's events make the client report (connected,
//   reconnected, suspended, lost, and the last ones).
// The shell (client.cpp, client_connection.cpp) keeps the sockets, timers, TLS, the SASL
// exchange and the listeners' calls.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "recipes/client.hpp"
#include "wire/records.hpp"

namespace warden::client::session {

using Clock = std::chrono::steady_clock;

// How much earlier than the session timeout after `confirmed` a client calls its session lost:
// a tenth of the timeout (see SessionClock for what it covers).
int32_t loss_margin_ms(int32_t timeout_ms);

// The send time of the latest request whose answer says the server that expires sessions (the
// leader) heard this session then or later: a ping (a Warden follower answers one only once
// the leader acknowledged the touch it carried), a write, sync or close (they go through the
// leader), the handshake. So the session cannot expire before confirmed + the session timeout.
// A lost connection is reported `lost` loss_margin earlier than that, so that a lock holder
// stops before the server can have expired its session and let another in. The margin covers
// what the rule does not see: a deposed leader that answers pings until it steps down a
// subtick after the others elected a new one (which gives every session a fresh timeout), and
// clocks that run at slightly different rates. Reads do not count: a member answers them
// alone. Against ZooKeeper, whose followers answer pings without the leader for up to
// syncLimit, the window is that long; fencing tokens are the defence.
class SessionClock {
 public:
  explicit SessionClock(Clock::time_point now) : confirmed_(now), confirming_sent_(now), handshake_sent_(now) {}

  void handshake_sent(Clock::time_point t) { handshake_sent_ = t; }
  // The server answered the handshake: it heard the session when the handshake was sent.
  void connected();
  // A request left at `t`; `confirms`: its answer will confirm the session (see above).
  void request_sent(Clock::time_point t, bool confirms);
  // The answer to a request sent at `sent` came.
  void answered(Clock::time_point sent, bool confirms);
  // Pings: one is due once no confirming request left for a third of the timeout, timed from
  // that send (a fixed period from the last check could put it off to nearly two thirds, and
  // the read deadline then pass before its answer came).
  Clock::time_point ping_due(int32_t timeout_ms) const;
  void ping_sent(Clock::time_point t);
  void ping_answered();
  // The connection ended: pings in flight will never be answered.
  void connection_dropped() { pings_.clear(); }

  // When a suspended session is to be reported lost.
  Clock::time_point lost_at(int32_t timeout_ms) const;
  // Nothing heard for this long: the connection is dead (ZooKeeper's client rule: two thirds of
  // the timeout); the session may still live, elsewhere.
  static std::chrono::milliseconds read_timeout(int32_t timeout_ms) {
    return std::chrono::milliseconds(timeout_ms * 2 / 3);
  }

  Clock::time_point confirmed() const { return confirmed_; }

 private:
  Clock::time_point confirmed_, confirming_sent_, handshake_sent_;
  std::deque<Clock::time_point> pings_;  // send times of the pings not answered yet
};

// The order in which the servers of a connect string are tried, as ZooKeeper's client's
// StaticHostProvider: shuffled once (so that clients spread over the servers), then in turn.
class HostOrder {
 public:
  HostOrder(size_t hosts, uint64_t seed) : rng_(seed) { reset(hosts); }
  // A new list of `hosts` servers (the ensemble's members changed): shuffled again, from the first.
  void reset(size_t hosts);
  // The index of the server to try next.
  size_t next();
  // How long to wait before the next attempt: none after a working connection broke, and after
  // a failed attempt none until every server failed once in this round, then a short pause.
  std::chrono::milliseconds pause(bool was_connected) const;
  static constexpr std::chrono::milliseconds round_pause{100};

 private:
  std::mt19937_64 rng_;
  std::vector<size_t> order_;
  size_t next_ = 0;
};

// What the client reports of its connection (Curator's ConnectionState names): connected on
// the first session established, reconnected on each later one, suspended when a working
// connection breaks (the session may live on), lost once the SessionClock says the session may
// have expired, and expired, auth_failed or closed at the end, after which no connection is made.
// Each event returns the state to report, or nothing when the state stays.
class ConnectionStates {
 public:
  // The server answered this connection's handshake (SASL may still follow).
  void handshake_answered() { connected_ = true; }
  // The session is usable on this connection.
  std::optional<State> ready();
  // The connection is gone, or an attempt failed: suspended when it was working.
  std::optional<State> broken();
  // The socket is closed (broken, ended, or dropped by the user): no handshake done on it.
  void dropped() { connected_ = false; }
  // The lost deadline passed: lost, unless a connection is back or the session ended.
  std::optional<State> lost_deadline();
  // No more connections: `last` (expired, auth_failed or closed). A close after the session
  // expired reports closed, as before.
  State end(State last);

  bool connected() const { return connected_; }
  bool ended() const { return ended_; }

 private:
  bool connected_ = false;  // the handshake of the current connection is done
  bool ever_ready_ = false;
  bool ended_ = false;
};

// Requests waiting for a connection, at most: past it a caller is issuing faster than any
// server takes them, and a new request fails at once (ConnectionLoss) instead of growing memory.
constexpr size_t max_queued_requests = 100000;

class Requests {
 public:
  // `first_xid`: where the xids start (tests start near the largest to see them wrap).
  explicit Requests(int32_t first_xid = 1) : next_xid_(first_xid) {}
  using Done = std::function<void(Err, Zxid, std::string_view)>;
  struct Request {
    int32_t xid = 0;
    wire::OpCode op = wire::OpCode::ping;
    std::string frame;
    Done done;
    Clock::time_point sent{};  // when written to the connection
    // Its reply says the leader heard the session then (a write, sync or close goes through the
    // leader); a read's is answered by the member alone and says nothing of the kind.
    bool confirms = false;
  };

  // The next xid: positive, wrapping past the largest back to 1 (the negative ones are
  // ZooKeeper's special xids).
  int32_t next_xid();

  // Waits for a connection; false (and `q` untouched) when max_queued_requests already wait.
  bool queue(Request& q);
  bool any_queued() const { return !queued_.empty(); }
  // The oldest that waits (any_queued() first).
  Request pop_queued();
  // What waited, oldest first; the queue is empty after.
  std::deque<Request> take_queued();

  void sent(Request q) { in_flight_.push_back(std::move(q)); }
  // The request a reply with `xid` answers: the oldest in flight, or nothing when the reply is
  // out of order (the connection is then broken).
  std::optional<Request> answer(int32_t xid);
  std::deque<Request> take_in_flight();

 private:
  int32_t next_xid_;
  std::deque<Request> queued_, in_flight_;
};

// A setWatches2 frame carries watches of at most this many bytes of paths, as ZooKeeper's
// client splits them (its SET_WATCHES_MAX_LENGTH), far below any server's jute.maxbuffer.
constexpr size_t max_set_watches_bytes = 128 * 1024;

class WatchRegistry {
 public:
  enum class Kind { data, exist, child };
  // Paths are the caller's (relative to the chroot).
  void add(Kind k, const std::string& path, Watcher w);
  void add_persistent(const std::string& path, bool recursive, Watcher w);
  // Every watch on `path`, one-shot and persistent (removeWatches with WatcherType.Any).
  void remove_all(const std::string& path);
  void clear();

  // The watchers an event fires, in the order they are called: the one-shot ones (spent) on
  // the path as ZooKeeper's client picks them by event type, then the persistent ones on the
  // path and the recursive ones on it or an ancestor (they get no NodeChildrenChanged).
  std::vector<Watcher> fire(EventType t, const std::string& path);

  // The watches again, for a new connection: setWatches2 records of at most `max_bytes` of
  // paths each, in ZooKeeper's order of kinds; `server_path` maps a path to the one the server
  // knows (the chroot's), `last_zxid` is each record's relativeZxid.
  std::vector<wire::SetWatches2> set_watches(Zxid last_zxid, const std::function<std::string(const std::string&)>& server_path,
                                             size_t max_bytes = max_set_watches_bytes) const;

 private:
  std::map<std::string, std::vector<Watcher>> data_, exist_, child_;
  std::map<std::string, std::vector<std::pair<bool, Watcher>>> persistent_;  // (recursive, watcher)
};

}  // namespace warden::client::session
