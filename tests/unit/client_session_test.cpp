// The client's session core (recipes/session/session_core.hpp) without a socket or a clock:
// time points are made by hand, so the `lost` rule, the pings, the xids and the watches are
// checked exactly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <set>
#include <string>
#include <vector>

#include "recipes/session/session_core.hpp"

using namespace warden::client;
using namespace warden::client::session;
using std::chrono::milliseconds;

namespace {
const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(1);
Clock::time_point at(int64_t ms) { return t0 + milliseconds(ms); }
}  // namespace

TEST_CASE("a session is lost a tenth of its timeout before the server can expire it", "[client_session]") {
  SessionClock c(at(0));
  c.handshake_sent(at(100));
  c.connected();
  CHECK(c.confirmed() == at(100));
  CHECK(loss_margin_ms(10000) == 1000);
  CHECK(c.lost_at(10000) == at(100 + 9000));

  // A read is answered by the member alone: it confirms nothing.
  c.request_sent(at(2000), false);
  c.answered(at(2000), false);
  CHECK(c.confirmed() == at(100));
  // A write goes through the leader: the session was heard when it was sent, not answered.
  c.request_sent(at(3000), true);
  c.answered(at(3000), true);
  CHECK(c.confirmed() == at(3000));
  CHECK(c.lost_at(10000) == at(12000));
  // An answer to an older request never moves the mark back.
  c.answered(at(2500), true);
  CHECK(c.confirmed() == at(3000));
}

TEST_CASE("a ping is due a third of the timeout after the last confirming send, and confirms", "[client_session]") {
  SessionClock c(at(0));
  c.handshake_sent(at(0));
  c.connected();
  CHECK(c.ping_due(9000) == at(3000));
  c.request_sent(at(1000), false);  // a read does not put the ping off
  CHECK(c.ping_due(9000) == at(3000));
  c.request_sent(at(2000), true);  // a write does
  CHECK(c.ping_due(9000) == at(5000));
  c.ping_sent(at(5000));
  CHECK(c.ping_due(9000) == at(8000));
  c.ping_sent(at(8000));
  c.ping_answered();  // the first ping's answer: heard at its send
  CHECK(c.confirmed() == at(5000));
  // The connection ends with the second ping unanswered: an answer on the next connection
  // (to that connection's own first ping) cannot be credited to it.
  c.connection_dropped();
  c.ping_answered();
  CHECK(c.confirmed() == at(5000));
  // A tiny timeout still leaves 10 ms between pings.
  CHECK(c.ping_due(3) == at(8000 + 10));
  CHECK(SessionClock::read_timeout(9000) == milliseconds(6000));
}

TEST_CASE("xids count up from 1 and wrap past the largest back to 1", "[client_session]") {
  Requests r;
  CHECK(r.next_xid() == 1);
  CHECK(r.next_xid() == 2);
  Requests near(INT32_MAX - 1);
  CHECK(near.next_xid() == INT32_MAX - 1);
  CHECK(near.next_xid() == INT32_MAX);
  CHECK(near.next_xid() == 1);
}

TEST_CASE("replies are matched in order; one out of order or with a garbage xid matches nothing", "[client_session]") {
  Requests r;
  std::vector<int32_t> answered;
  for (int i = 0; i < 3; ++i) {
    Requests::Request q;
    q.xid = r.next_xid();
    q.done = [&answered, xid = q.xid](Err, Zxid, std::string_view) { answered.push_back(xid); };
    r.sent(std::move(q));
  }
  for (int32_t garbage : {2, 3, 0, -1, -2, INT32_MIN, INT32_MAX}) CHECK_FALSE(r.answer(garbage).has_value());
  auto first = r.answer(1);
  REQUIRE(first.has_value());
  first->done(Err::ok, 0, {});
  CHECK(answered == std::vector<int32_t>{1});
  auto rest = r.take_in_flight();
  REQUIRE(rest.size() == 2);
  CHECK(rest.front().xid == 2);
  CHECK_FALSE(r.answer(3).has_value());  // taken: nothing is in flight
}

TEST_CASE("at most max_queued_requests wait for a connection; the next is refused untouched", "[client_session]") {
  Requests r;
  size_t taken = 0;
  for (size_t i = 0; i < max_queued_requests; ++i) {
    Requests::Request q;
    q.xid = static_cast<int32_t>(i + 1);
    taken += r.queue(q);
  }
  REQUIRE(taken == max_queued_requests);
  bool called = false;
  Requests::Request extra;
  extra.xid = -7;
  extra.done = [&](Err, Zxid, std::string_view) { called = true; };
  CHECK_FALSE(r.queue(extra));
  REQUIRE(extra.done);  // still the caller's, to fail with ConnectionLoss
  extra.done(Err::connectionLoss, 0, {});
  CHECK(called);
  CHECK(r.pop_queued().xid == 1);  // oldest first
  CHECK(r.take_queued().size() == max_queued_requests - 1);
  CHECK_FALSE(r.any_queued());
}

namespace {
// A watcher that records the events it gets under `name`.
Watcher recorder(std::vector<std::string>& log, std::string name) {
  return [&log, name](const WatchEvent& e) { log.push_back(name + ":" + std::to_string(static_cast<int>(e.type))); };
}

}  // namespace

TEST_CASE("an event fires the one-shot watches its type names, once, and the persistent ones", "[client_session]") {
  std::vector<std::string> log;
  WatchRegistry w;
  using K = WatchRegistry::Kind;
  w.add(K::data, "/a", recorder(log, "data"));
  w.add(K::exist, "/a", recorder(log, "exist"));
  w.add(K::child, "/a", recorder(log, "child"));
  w.add(K::data, "/a", nullptr);  // no watcher: nothing registered
  w.add_persistent("/a", false, recorder(log, "here"));
  w.add_persistent("/", true, recorder(log, "root-rec"));
  w.add_persistent("/a", true, recorder(log, "a-rec"));

  for (auto& f : w.fire(EventType::nodeDataChanged, "/a")) f(WatchEvent{EventType::nodeDataChanged, "/a"});
  // One-shot ones first, then the persistent ones by path, each path's in the order set.
  CHECK(log == std::vector<std::string>{"data:3", "exist:3", "root-rec:3", "here:3", "a-rec:3"});
  log.clear();
  // Spent: a second change reaches only the persistent ones.
  for (auto& f : w.fire(EventType::nodeDataChanged, "/a")) f(WatchEvent{EventType::nodeDataChanged, "/a"});
  CHECK(log == std::vector<std::string>{"root-rec:3", "here:3", "a-rec:3"});
  log.clear();
  // Children changed: the child watch and the plain persistent one; recursive ones get none.
  for (auto& f : w.fire(EventType::nodeChildrenChanged, "/a")) f(WatchEvent{EventType::nodeChildrenChanged, "/a"});
  CHECK(log == std::vector<std::string>{"child:4", "here:4"});
  log.clear();
  // Below /a: the recursive watches; "/ab" is not below "/a".
  for (auto& f : w.fire(EventType::nodeCreated, "/a/b")) f(WatchEvent{EventType::nodeCreated, "/a/b"});
  CHECK(log == std::vector<std::string>{"root-rec:1", "a-rec:1"});
  log.clear();
  for (auto& f : w.fire(EventType::nodeCreated, "/ab")) f(WatchEvent{EventType::nodeCreated, "/ab"});
  CHECK(log == std::vector<std::string>{"root-rec:1"});
  log.clear();

  // Garbage events and paths fire no one-shot watch and do not fail; the root's recursive
  // watch takes any event but a children change on any path but "/" itself.
  w.add(K::data, "/x", recorder(log, "x"));
  CHECK(w.fire(EventType::none, "/x").size() == 1);
  CHECK(w.fire(static_cast<EventType>(77), "/x").size() == 1);
  CHECK(w.fire(static_cast<EventType>(-9), "").size() == 1);
  CHECK(w.fire(EventType::nodeDeleted, "not a path").size() == 1);
  CHECK(w.fire(EventType::nodeChildrenChanged, "").empty());
  CHECK(log.empty());  // nothing was called: fire() only picks
  WatchRegistry plain;
  plain.add(K::data, "/x", recorder(log, "x"));
  CHECK(plain.fire(EventType::none, "/x").empty());
  CHECK(plain.fire(static_cast<EventType>(77), "/x").empty());
  CHECK(plain.fire(EventType::nodeDataChanged, "/x/").empty());
  CHECK(plain.fire(EventType::nodeDataChanged, "/x").size() == 1);  // still there after the garbage
  w.remove_all("/a");
  w.remove_all("/x");
  for (auto& f : w.fire(EventType::nodeDeleted, "/a")) f(WatchEvent{EventType::nodeDeleted, "/a"});
  CHECK(log == std::vector<std::string>{"root-rec:2"});
}

TEST_CASE("setWatches2 records hold the watches in ZooKeeper's order, split by their paths' bytes", "[client_session]") {
  WatchRegistry w;
  using K = WatchRegistry::Kind;
  auto any = [](const WatchEvent&) {};
  w.add(K::data, "/d1", any);
  w.add(K::data, "/d2", any);
  w.add(K::exist, "/e", any);
  w.add(K::child, "/c", any);
  w.add_persistent("/p", false, any);
  w.add_persistent("/p", true, any);
  auto chroot = [](const std::string& p) { return "/root" + p; };

  auto one = w.set_watches(42, chroot);
  REQUIRE(one.size() == 1);
  CHECK(one[0].relativeZxid == 42);
  CHECK(one[0].dataWatches == std::vector<std::string>{"/root/d1", "/root/d2"});
  CHECK(one[0].existWatches == std::vector<std::string>{"/root/e"});
  CHECK(one[0].childWatches == std::vector<std::string>{"/root/c"});
  CHECK(one[0].persistentWatches == std::vector<std::string>{"/root/p"});
  CHECK(one[0].persistentRecursiveWatches == std::vector<std::string>{"/root/p"});

  // Paths of 7 and 8 bytes, 4 bytes of length each: a record holds two under 25 bytes.
  auto split = w.set_watches(7, chroot, 25);
  size_t paths = 0;
  for (const auto& r : split) {
    size_t bytes = 0;
    for (const auto* kind : {&r.dataWatches, &r.existWatches, &r.childWatches, &r.persistentWatches,
                             &r.persistentRecursiveWatches})
      for (const auto& p : *kind) bytes += p.size() + 4, ++paths;
    CHECK(bytes <= 25);
    CHECK(r.relativeZxid == 7);
  }
  CHECK(paths == 6);
  CHECK(split.size() == 3);

  // A path longer than a record's bound still goes, alone.
  WatchRegistry big;
  big.add(K::data, "/" + std::string(100, 'x'), any);
  big.add(K::data, "/y", any);
  auto records = big.set_watches(0, [](const std::string& p) { return p; }, 16);
  REQUIRE(records.size() == 2);
  CHECK(records[0].dataWatches.size() == 1);
  CHECK(records[0].dataWatches[0].size() == 101);

  WatchRegistry none;
  CHECK(none.set_watches(1, chroot).empty());
}

TEST_CASE("servers are tried in a shuffled order, in turn, pausing once a round failed", "[client_session]") {
  HostOrder order(5, 42);
  std::vector<size_t> round;
  for (int i = 0; i < 5; ++i) {
    // Within a round no pause after a failed attempt: the next server is tried at once.
    if (i > 0) CHECK(order.pause(false) == milliseconds(0));
    round.push_back(order.next());
  }
  std::vector<size_t> sorted = round;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<size_t>{0, 1, 2, 3, 4});  // each server once
  // Every server failed once: a short pause, unless a working connection just broke.
  CHECK(order.pause(false) == HostOrder::round_pause);
  CHECK(order.pause(true) == milliseconds(0));
  for (size_t want : round) CHECK(order.next() == want);  // the same order, round after round
  // The same seed, the same order; clients with other seeds spread over the servers.
  HostOrder same(5, 42);
  for (size_t want : round) CHECK(same.next() == want);
  std::set<std::vector<size_t>> firsts;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    HostOrder o(5, seed);
    std::vector<size_t> r;
    for (int i = 0; i < 5; ++i) r.push_back(o.next());
    firsts.insert(r);
  }
  CHECK(firsts.size() > 1);
  // A new member list starts a new shuffled round; an empty one (garbage in) never divides by 0.
  order.next();
  order.reset(3);
  std::set<size_t> three;
  for (int i = 0; i < 3; ++i) three.insert(order.next());
  CHECK(three == std::set<size_t>{0, 1, 2});
  HostOrder none(0, 1);
  CHECK(none.next() == 0);
  CHECK(none.pause(false) == milliseconds(0));
}

TEST_CASE("connection states: connected once, then suspended, reconnected, lost and the end", "[client_session]") {
  ConnectionStates s;
  // An attempt that failed before its handshake reports nothing.
  CHECK_FALSE(s.broken().has_value());
  CHECK_FALSE(s.connected());
  s.handshake_answered();
  CHECK(s.connected());
  CHECK(s.ready() == State::connected);
  CHECK(s.broken() == State::suspended);
  CHECK_FALSE(s.connected());
  CHECK_FALSE(s.broken().has_value());  // a second break while suspended changes nothing
  s.handshake_answered();
  // The lost deadline passing while a connection is back reports nothing.
  CHECK_FALSE(s.lost_deadline().has_value());
  CHECK(s.ready() == State::reconnected);
  CHECK(s.broken() == State::suspended);
  CHECK(s.lost_deadline() == State::lost);
  s.handshake_answered();
  CHECK(s.ready() == State::reconnected);
  // The end: no more connections, and nothing after it reports a state but another end.
  CHECK(s.end(State::expired) == State::expired);
  CHECK(s.ended());
  CHECK_FALSE(s.connected());
  CHECK_FALSE(s.broken().has_value());
  CHECK_FALSE(s.lost_deadline().has_value());
  CHECK_FALSE(s.ready().has_value());
  CHECK(s.end(State::closed) == State::closed);
  // The socket dropped without a break (the user's drop, the end): no state of its own.
  ConnectionStates d;
  d.handshake_answered();
  d.dropped();
  CHECK_FALSE(d.connected());
  CHECK_FALSE(d.broken().has_value());
}
