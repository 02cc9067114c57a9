// Watch kinds side by side (standard, persistent, recursive), their removal and checks, and the
// reads that came with ZooKeeper 3.6+: multiRead, getEphemerals, getAllChildrenNumber, whoAmI.
#include <catch2/catch.hpp>

#include "harness.hpp"
#include "server/state/snapshot_walk.hpp"

using namespace test;
using wire::EventType;

namespace {
std::vector<std::pair<EventType, std::string>> take_events(Client& c) {
  c.exists("/");  // a round trip: events sent before it have arrived
  std::vector<std::pair<EventType, std::string>> out;
  for (const auto& e : c.events) out.emplace_back(static_cast<EventType>(e.type), e.path);
  c.events.clear();
  return out;
}

Err add_watch(Client& c, const std::string& path, int32_t mode) {
  auto r = c.call(OpCode::addWatch, wire::AddWatchRequest{path, mode});
  if (r.err() == Err::ok) CHECK(r.body == std::string(4, '\0'));  // ZooKeeper's body: an ErrorResponse of 0
  return r.err();
}

Err watches(Client& c, OpCode op, const std::string& path, int32_t type) {
  return c.call(op, wire::CheckWatchesRequest{path, type}).err();
}
}  // namespace

TEST_CASE("a recursive watch reports every create, change and delete below it, and stays") {
  Harness h;
  Client a(h), w(h);
  a.connect();
  w.connect();
  a.create("/r");
  REQUIRE(add_watch(w, "/r", 1) == Err::ok);
  a.create("/r/x");
  a.create("/r/x/y", "1");
  a.call(OpCode::setData, wire::SetDataRequest{"/r/x/y", "2", -1});
  a.call(OpCode::remove, wire::DeleteRequest{"/r/x/y", -1});
  a.create("/elsewhere");
  using V = std::vector<std::pair<EventType, std::string>>;
  // No child-list events: the creates and deletes already tell.
  CHECK(take_events(w) == V{{EventType::nodeCreated, "/r/x"},
                            {EventType::nodeCreated, "/r/x/y"},
                            {EventType::nodeDataChanged, "/r/x/y"},
                            {EventType::nodeDeleted, "/r/x/y"}});
  a.call(OpCode::setData, wire::SetDataRequest{"/r", "again", -1});
  CHECK(take_events(w) == V{{EventType::nodeDataChanged, "/r"}});
}

TEST_CASE("a persistent watch reports its node's changes and child list, and stays") {
  Harness h;
  Client a(h), w(h);
  a.connect();
  w.connect();
  REQUIRE(add_watch(w, "/p", 0) == Err::ok);  // the node need not exist
  a.create("/p");
  a.create("/p/kid");
  a.create("/p/kid/deeper");  // not its business
  a.call(OpCode::setData, wire::SetDataRequest{"/p", "1", -1});
  a.call(OpCode::setData, wire::SetDataRequest{"/p", "2", -1});
  using V = std::vector<std::pair<EventType, std::string>>;
  CHECK(take_events(w) == V{{EventType::nodeCreated, "/p"},
                            {EventType::nodeChildrenChanged, "/p"},
                            {EventType::nodeDataChanged, "/p"},
                            {EventType::nodeDataChanged, "/p"}});
}

TEST_CASE("kinds of watch live side by side, one event per trigger, and go by kind") {
  Harness h;
  Client a(h), w(h);
  a.connect();
  w.connect();
  a.create("/n");
  REQUIRE(add_watch(w, "/n", 0) == Err::ok);
  REQUIRE(add_watch(w, "/", 1) == Err::ok);
  w.exists("/n", true);  // a standard watch too: it must not make the persistent one a one-shot
  a.call(OpCode::setData, wire::SetDataRequest{"/n", "1", -1});
  a.call(OpCode::setData, wire::SetDataRequest{"/n", "2", -1});
  using V = std::vector<std::pair<EventType, std::string>>;
  CHECK(take_events(w) == V{{EventType::nodeDataChanged, "/n"}, {EventType::nodeDataChanged, "/n"}});

  CHECK(watches(w, OpCode::checkWatches, "/n", 1) == Err::ok);
  CHECK(watches(w, OpCode::checkWatches, "/n", 4) == Err::ok);
  CHECK(watches(w, OpCode::checkWatches, "/n", 5) == Err::noWatcher);  // the recursive one is on "/"
  CHECK(watches(w, OpCode::checkWatches, "/", 5) == Err::ok);
  CHECK(watches(a, OpCode::checkWatches, "/n", 3) == Err::noWatcher);  // only the caller's own count
  CHECK(watches(w, OpCode::checkWatches, "/n", 0) == Err::marshallingError);
  CHECK(watches(w, OpCode::checkWatches, "/n", 6) == Err::marshallingError);

  // Removing the child side leaves the data side: a child-list change goes unreported.
  CHECK(watches(w, OpCode::removeWatches, "/n", 1) == Err::ok);
  CHECK(watches(w, OpCode::checkWatches, "/n", 1) == Err::noWatcher);
  a.create("/n/kid");
  CHECK(take_events(w) == V{{EventType::nodeCreated, "/n/kid"}});  // the recursive watch on "/"
  CHECK(watches(w, OpCode::removeWatches, "/", 5) == Err::ok);
  CHECK(watches(w, OpCode::removeWatches, "/", 5) == Err::noWatcher);
  a.call(OpCode::setData, wire::SetDataRequest{"/n", "3", -1});
  CHECK(take_events(w) == V{{EventType::nodeDataChanged, "/n"}});
  CHECK(watches(w, OpCode::removeWatches, "/n", 3) == Err::ok);
  a.call(OpCode::setData, wire::SetDataRequest{"/n", "4", -1});
  CHECK(take_events(w).empty());
  CHECK(h.server.watch_count() == 0);

  CHECK(add_watch(w, "/n", 2) == Err::marshallingError);
  CHECK(w.call_raw(OpCode::addWatch, "\x01").err() == Err::marshallingError);
  CHECK(w.call_raw(OpCode::removeWatches, "garbage").err() == Err::marshallingError);
}

TEST_CASE("a closed connection's watches of every kind go with it") {
  Harness h;
  Client a(h), w(h);
  a.connect();
  w.connect();
  a.create("/c");
  add_watch(w, "/c", 0);
  add_watch(w, "/", 1);
  w.exists("/c", true);
  w.children("/c", true);
  CHECK(h.server.watch_count() == 4);  // (path, connection) pairs in the data and child managers
  w.disconnect();
  CHECK(h.server.watch_count() == 0);
  a.create("/c/x");  // nobody to tell, nothing breaks
}

TEST_CASE("setWatches2 sets persistent and recursive watches again") {
  Harness h;
  Client a(h), w(h);
  a.connect();
  w.connect();
  a.create("/s");
  auto r = w.call(OpCode::setWatches2, wire::SetWatches2{h.server.tree().last_applied(), {}, {}, {}, {"/s"}, {"/"}});
  CHECK(r.err() == Err::ok);
  a.create("/s/k");
  using V = std::vector<std::pair<EventType, std::string>>;
  CHECK(take_events(w) == V{{EventType::nodeCreated, "/s/k"}, {EventType::nodeChildrenChanged, "/s"}});
  CHECK(w.call_raw(OpCode::setWatches2, "\x00\x01").err() == Err::marshallingError);
}

TEST_CASE("multiRead answers each read on its own") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/m", "data");
  a.create("/m/k");
  a.create("/secret", "", 0, OpCode::create, {wire::Acl{wire::perms::write, wire::Id{"world", "anyone"}}});
  std::vector<wire::MultiOp> ops{{OpCode::getData, wire::PathWatchRequest{"/m", false}},
                                 {OpCode::getChildren, wire::PathWatchRequest{"/m", true}},
                                 {OpCode::getData, wire::PathWatchRequest{"/missing", false}},
                                 {OpCode::getData, wire::PathWatchRequest{"/secret", false}}};
  auto r = a.call_raw(OpCode::multiRead, wire::encode_multi_request(ops));
  REQUIRE(r.err() == Err::ok);
  auto results = wire::decode_multi_response(r.body);
  REQUIRE(results);
  REQUIRE(results->size() == 4);
  CHECK(std::get<wire::GetDataResponse>((*results)[0].record).data == "data");
  CHECK(std::get<wire::GetChildrenResponse>((*results)[1].record).children == std::vector<std::string>{"k"});
  CHECK((*results)[2].err == static_cast<int32_t>(Err::noNode));
  CHECK((*results)[3].err == static_cast<int32_t>(Err::noAuth));
  CHECK(h.server.watch_count() == 0);  // multiRead's ops set no watches, as in ZooKeeper
  CHECK(a.call_raw(OpCode::multiRead, "\x00\x00").err() == Err::marshallingError);
  auto with_write = a.call_raw(OpCode::multiRead, wire::encode_multi_request({ops[0], {OpCode::create, wire::CreateRequest{"/x", "", Client::open_acl(), 0}}}));
  CHECK(with_write.err() == Err::marshallingError);
  auto partial = wire::decode_multi_response(with_write.body);
  REQUIRE(partial);
  CHECK(partial->size() == 1);  // the reads before the bad op, as ZooKeeper sends them
}

TEST_CASE("getEphemerals, getAllChildrenNumber and whoAmI") {
  Harness h;
  Client a(h), b(h);
  a.connect();
  b.connect();
  a.create("/e");
  a.create("/e/1", "", 1);
  a.create("/e/2", "", 1);
  a.create("/f", "", 1);
  b.create("/e/b", "", 1);
  auto eph = [&](Client& c, const std::string& prefix) {
    auto r = c.call(OpCode::getEphemerals, wire::PathRequest{prefix});
    REQUIRE(r.err() == Err::ok);
    return wire::decode<wire::GetEphemeralsResponse>(r.body)->ephemerals;
  };
  using S = std::vector<std::string>;
  CHECK(eph(a, "/") == S{"/e/1", "/e/2", "/f"});
  CHECK(eph(a, "") == S{"/e/1", "/e/2", "/f"});
  CHECK(eph(a, "/e/") == S{"/e/1", "/e/2"});
  CHECK(eph(a, "/e/1") == S{"/e/1"});
  CHECK(eph(b, "/") == S{"/e/b"});
  CHECK(a.call_raw(OpCode::getEphemerals, "\x00").err() == Err::marshallingError);

  auto count = [&](const std::string& path) {
    auto r = a.call(OpCode::getAllChildrenNumber, wire::PathRequest{path});
    return r.err() == Err::ok ? wire::decode<wire::GetAllChildrenNumberResponse>(r.body)->totalNumber
                              : static_cast<int32_t>(r.err());
  };
  CHECK(count("/e") == 3);
  CHECK(count("/e/1") == 0);
  CHECK(count("/") == 8);  // /zookeeper, its two children, /e and its three, /f
  CHECK(count("/none") == static_cast<int32_t>(Err::noNode));

  auto who = [&] { return wire::decode<wire::WhoAmIResponse>(a.call_raw(OpCode::whoAmI, "").body)->clientInfo; };
  CHECK(who().size() == 1);
  CHECK(who()[0].authScheme == "ip");
  a.call(OpCode::auth, wire::AuthPacket{0, "digest", std::string("alice:pw")});
  auto after = who();
  REQUIRE(after.size() == 2);
  CHECK(after[1].authScheme == "digest");
  CHECK(after[1].user == "alice");
}

TEST_CASE("sasl and reconfig get ZooKeeper's answers and the session lives") {
  Harness h;
  Client a(h);
  a.connect();
  auto s = a.call(OpCode::sasl, wire::GetSaslRequest{std::string("token")});
  CHECK(s.err() == Err::ok);
  CHECK_FALSE(wire::decode<wire::SetSaslResponse>(s.body)->token.has_value());
  CHECK(a.call(OpCode::reconfig, wire::ReconfigRequest{"", "", "server.1=h:1:2", -1}).err() == Err::reconfigDisabled);
  CHECK(a.exists("/zookeeper"));
}

TEST_CASE("quotas: the tree keeps the stats, hard limits refuse with enforceQuota, a snapshot recounts") {
  server::ServerOptions o;
  o.enforce_quota = true;
  Harness h(o);
  Client a(h);
  a.connect();
  a.create("/q", "12");
  a.create("/q/a", "3");
  a.create("/zookeeper/quota/q");
  a.create("/zookeeper/quota/q/zookeeper_limits", "count=-1,bytes=-1=;countHardLimit=4");
  a.create("/zookeeper/quota/q/zookeeper_stats", "count=0,bytes=0");  // the tree counts it anew
  auto stats = [&] { return std::string(h.server.tree().find("/zookeeper/quota/q/zookeeper_stats")->data()); };
  CHECK(stats() == "count=2,bytes=3");
  CHECK(a.create("/q/b", "45").err() == Err::ok);
  a.create("/q/a/deep", "");
  CHECK(stats() == "count=4,bytes=5");
  CHECK(a.create("/q/c").err() == Err::quotaExceeded);
  CHECK(a.create("/elsewhere").err() == Err::ok);  // outside the quota
  a.call(OpCode::setData, wire::SetDataRequest{"/q/b", std::string("4567"), -1});
  CHECK(stats() == "count=4,bytes=7");
  a.call(OpCode::remove, wire::DeleteRequest{"/q/a/deep", -1});
  CHECK(stats() == "count=3,bytes=7");
  CHECK(a.create("/q/c").err() == Err::ok);

  // Garbage in the limits: no limit, never a crash.
  a.call(OpCode::setData, wire::SetDataRequest{"/zookeeper/quota/q/zookeeper_limits", std::string("\x01=\xff,,;="), -1});
  CHECK(a.create("/q/d").err() == Err::ok);

  // A snapshot's stats may be stale: loading counts again.
  Harness copy(o, h.now);
  copy.server.start_snapshot_load();
  server::SnapshotWalk walk(h.server.tree());
  while (!walk.done())
    server::for_each_in_chunk(walk.next_chunk(50).second, [&](std::string_view p, std::string_view r) {
      if (p == "/zookeeper/quota/q/zookeeper_stats") {
        // as if the walk met it before the last changes
        auto n = wire::decode<server::SnapshotNode>(r);
        REQUIRE(n);
        n->data = "count=0,bytes=0";
        return copy.server.load_snapshot_node(p, wire::encode(*n));
      }
      return copy.server.load_snapshot_node(p, r);
    });
  copy.server.finish_snapshot_load(walk.at());
  CHECK(copy.server.tree().find("/zookeeper/quota/q/zookeeper_stats")->data() == "count=5,bytes=7");
}

TEST_CASE("a watch event reaches only connections that may read the node; the watch is spent anyway") {
  Harness h;
  Client owner(h), other(h);
  owner.connect();
  other.connect();
  owner.create("/open", "x");
  CHECK(other.exists("/open", true));
  // The owner locks the node: the other connection's watch fires but it hears nothing.
  owner.call_raw(OpCode::auth, wire::encode(wire::AuthPacket{0, "digest", std::string("o:pw")}), wire::xid::auth);
  owner.call(OpCode::setACL, wire::SetACLRequest{"/open", {wire::Acl{wire::perms::all, wire::Id{"auth", ""}}}, -1});
  owner.call(OpCode::setData, wire::SetDataRequest{"/open", std::string("y"), -1});
  CHECK(take_events(other).empty());
  CHECK(h.server.watch_count() == 0);
  // Child-list events are checked against the parent's ACL, deletes against the deleted node's.
  owner.create("/p");
  other.children("/p", true);
  other.exists("/p/locked", true);
  owner.create("/p/locked", "", 0, OpCode::create, {wire::Acl{wire::perms::all, wire::Id{"auth", ""}}});
  using V = std::vector<std::pair<EventType, std::string>>;
  CHECK(take_events(other) == V{{EventType::nodeChildrenChanged, "/p"}});  // /p is open; /p/locked is not
  REQUIRE(add_watch(other, "/p", 1) == Err::ok);
  owner.call(OpCode::remove, wire::DeleteRequest{"/p/locked", -1});
  CHECK(take_events(other).empty());
}

TEST_CASE("inside a multi, flags make the kind of a create, as ZooKeeper rebuilds each op") {
  Harness h;
  Client a(h);
  a.connect();
  auto acl = Client::open_acl();
  std::vector<wire::MultiOp> ops{{OpCode::create, wire::CreateRequest{"/c1", "", acl, 4}},            // a container
                                 {OpCode::createContainer, wire::CreateRequest{"/c2", "", acl, 0}},   // a plain node
                                 {OpCode::create2, wire::CreateRequest{"/c3", "", acl, 0}},           // a create
                                 {OpCode::create, wire::CreateRequest{"/c4", "", acl, 99}}};          // persistent
  auto r = a.call_raw(OpCode::multi, wire::encode_multi_request(ops));
  auto results = wire::decode_multi_response(r.body);
  REQUIRE(results);
  REQUIRE(results->size() == 4);
  CHECK((*results)[0].type == static_cast<int32_t>(OpCode::create2));  // with a stat
  CHECK((*results)[1].type == static_cast<int32_t>(OpCode::create));
  CHECK((*results)[2].type == static_cast<int32_t>(OpCode::create));
  CHECK((*results)[3].type == static_cast<int32_t>(OpCode::create));
  CHECK(a.exists("/c1")->ephemeralOwner == 0);  // containers show no owner
  CHECK(h.server.tree().find("/c1")->ephemeralOwner != 0);
  CHECK(h.server.tree().find("/c2")->ephemeralOwner == 0);
  // Standalone, the opcode decides, as before.
  CHECK(a.create("/c5", "", 4).err() == Err::ok);
  CHECK(h.server.tree().find("/c5")->ephemeralOwner == 0);
}

namespace {
// Records each fan-out the pipeline asks for and hands the frame to every link.
struct RecordingFanOut : server::FanOut {
  std::vector<size_t> sizes;
  void send_to_all(const std::vector<server::ClientLink*>& links, std::string_view frame) override {
    sizes.push_back(links.size());
    for (auto* l : links) l->send(std::string(frame));
  }
};
}  // namespace

TEST_CASE("a watch event for many watchers is one frame handed to all of them at once, readers only") {
  Harness h;
  RecordingFanOut fan;
  h.server.set_fan_out(&fan);
  Client owner(h), a(h), b(h), c(h);
  for (Client* x : {&owner, &a, &b, &c}) x->connect();
  owner.create("/n", "x");
  for (Client* x : {&a, &b, &c}) CHECK(x->exists("/n", true));
  owner.call(OpCode::setData, wire::SetDataRequest{"/n", std::string("y"), -1});
  CHECK(fan.sizes == std::vector<size_t>{3});
  using V = std::vector<std::pair<EventType, std::string>>;
  for (Client* x : {&a, &b, &c}) CHECK(take_events(*x) == V{{EventType::nodeDataChanged, "/n"}});
  // One watcher: its link's own send. A watcher that may not read the node is left out.
  a.exists("/n", true);
  owner.call(OpCode::setData, wire::SetDataRequest{"/n", std::string("z"), -1});
  CHECK(fan.sizes == std::vector<size_t>{3});
  CHECK(take_events(a) == V{{EventType::nodeDataChanged, "/n"}});
  for (Client* x : {&a, &b, &c}) x->exists("/n", true);
  for (Client* x : {&owner, &a, &b})
    x->call_raw(OpCode::auth, wire::encode(wire::AuthPacket{0, "digest", std::string("o:pw")}), wire::xid::auth);
  owner.call(OpCode::setACL, wire::SetACLRequest{"/n", {wire::Acl{wire::perms::all, wire::Id{"auth", ""}}}, -1});
  // setACL fires no watch; the delete fires all three, checked against the deleted node's ACL:
  // c may not read it and hears nothing.
  owner.call(OpCode::remove, wire::DeleteRequest{"/n", -1});
  CHECK(fan.sizes == std::vector<size_t>{3, 2});
  for (Client* x : {&a, &b}) CHECK(take_events(*x) == V{{EventType::nodeDeleted, "/n"}});
  CHECK(take_events(c).empty());
  CHECK(h.server.watch_count() == 0);
  // Anyone may write the node but not read it: a reader is one of the ACL's own ids.
  owner.call(OpCode::create, wire::CreateRequest{"/w", std::string("x"),
                                                 {wire::Acl{wire::perms::write, wire::Id{"world", "anyone"}},
                                                  wire::Acl{wire::perms::all, wire::Id{"auth", ""}}},
                                                 0});
  for (Client* x : {&a, &b, &c}) CHECK(x->exists("/w", true));
  c.call(OpCode::setData, wire::SetDataRequest{"/w", std::string("y"), -1});
  CHECK(fan.sizes == std::vector<size_t>{3, 2, 2});
  for (Client* x : {&a, &b}) CHECK(take_events(*x) == V{{EventType::nodeDataChanged, "/w"}});
  CHECK(take_events(c).empty());
}
