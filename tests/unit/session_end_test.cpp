// How sessions end and what they leave behind: ephemerals created while the session closes,
// prep's overlay under sustained writes, expiry after a restart, and session ids.
#include "harness.hpp"
#include "server/state/txn.hpp"

using namespace test;

namespace {
wire::CreateRequest ephemeral(const std::string& path) { return {path, std::string("x"), Client::open_acl(), 1}; }

// The close a client sends: an empty request with the closeSession opcode.
void send_close(Client& c) {
  c.send_raw(wire::encode(wire::RequestHeader{99, static_cast<int32_t>(OpCode::closeSession)}));
}
}  // namespace

TEST_CASE("an ephemeral created while its session is closed on another connection goes with the session") {
  Harness h;
  Client a(h), watcher(h);
  a.connect();
  watcher.connect();
  a.create("/locks");
  h.defer_sync = true;  // a group commit in progress: the create is in flight
  a.send(OpCode::create, ephemeral("/locks/lock-"));
  // The same session re-attaches elsewhere and closes at once, before the create is durable.
  // The close keeps the session's order: it waits for the create, then takes it along.
  Client b(h);
  REQUIRE(b.connect(30000, a.session(), a.passwd()));
  send_close(b);
  h.sync();
  h.sync();
  auto close = b.next_reply();
  CHECK(close.err() == Err::ok);
  h.defer_sync = false;
  CHECK(watcher.children("/locks").empty());
  CHECK(h.server.tree().ephemerals().count(a.session()) == 0);
  CHECK(watcher.exists("/locks")->numChildren == 0);
}

TEST_CASE("an ephemeral created by a multi in flight goes with its session too") {
  Harness h;
  Client a(h), watcher(h);
  a.connect();
  watcher.connect();
  a.create("/m");
  h.defer_sync = true;
  wire::MultiOpRecord op = ephemeral("/m/e");
  std::string body = wire::encode(wire::MultiHeader{static_cast<int32_t>(OpCode::create), false, -1}) +
                     wire::encode(ephemeral("/m/e")) + wire::encode(wire::MultiHeader{-1, true, -1});
  a.send_raw(wire::encode(wire::RequestHeader{50, static_cast<int32_t>(OpCode::multi)}) + body);
  Client b(h);
  REQUIRE(b.connect(30000, a.session(), a.passwd()));
  send_close(b);
  h.sync();
  h.sync();
  h.defer_sync = false;
  CHECK(watcher.children("/m").empty());
}

TEST_CASE("a read on a re-attached connection waits for the session's writes from the old one") {
  // A lock's create is waiting for its fsync when the connection drops; the client re-attaches
  // and lists the lock's children at once. The list must hold the create (ZooKeeper orders a
  // session's requests, not a connection's), or the client would queue a second node behind an
  // orphan of its own live session.
  Harness h;
  Client a(h);
  a.connect();
  a.create("/lock");
  h.defer_sync = true;
  a.send(OpCode::create, ephemeral("/lock/n-"));
  a.disconnect();
  Client b(h);
  REQUIRE(b.connect(30000, a.session(), a.passwd()));
  b.send(OpCode::getChildren, wire::PathWatchRequest{"/lock", false});
  CHECK_FALSE(b.has_frames());  // held behind the session's create
  h.sync();
  h.defer_sync = false;
  auto kids = b.next_reply();
  REQUIRE(kids.err() == Err::ok);
  CHECK(wire::decode<wire::GetChildrenResponse>(kids.body)->children == std::vector<std::string>{"n-"});
}

TEST_CASE("a session that expires during a long sync stall takes its in-flight ephemeral with it") {
  Harness h;
  Client a(h), watcher(h);
  a.connect(4000);
  watcher.connect(40000);
  h.defer_sync = true;
  a.send(OpCode::create, ephemeral("/stalled"));
  a.disconnect();
  h.advance(10000);  // the disk stalls past the session's timeout: the expiry is queued behind
  h.sync();
  h.defer_sync = false;
  CHECK_FALSE(watcher.exists("/stalled"));
  CHECK(h.server.session_count() == 1);
  CHECK(h.server.tree().ephemerals().empty());
}

TEST_CASE("apply removes every ephemeral of a closed session, also one the close txn does not list") {
  // Defence in depth, and the same on every replica: the tree, not the list, decides.
  Harness h;
  Client a(h), watcher(h);
  a.connect();
  watcher.connect();
  a.create("/x", "", 1);
  a.create("/y", "", 1);
  server::Txn t;
  t.session = a.session();
  t.type = static_cast<int32_t>(OpCode::closeSession);
  t.body = server::CloseSessionTxn{{"/x"}};
  server::DataTree tree;
  std::vector<server::WatchTrigger> ignored;
  // Replay the log so far into a tree of our own, then the short close.
  for (const auto& e : h.log.read_after(0)) tree.apply(*server::decode_txn(e.payload), e.zxid, ignored);
  REQUIRE(tree.find("/y"));
  tree.apply(t, h.log.last_zxid() + 1, ignored);
  CHECK_FALSE(tree.find("/x"));
  CHECK_FALSE(tree.find("/y"));
  CHECK(tree.ephemerals().empty());
}

TEST_CASE("prep's overlay stays bounded under writes that never let it drain, and TTL nodes still expire") {
  server::ServerOptions o;
  o.extended_types = true;
  o.container_check_interval_ms = 200;
  Harness h(o);
  Client a(h);
  a.connect(40000);
  REQUIRE(a.call(OpCode::createTTL, wire::CreateTTLRequest{"/ttl", std::string(), Client::open_acl(), 5, 1000})
              .err() == Err::ok);
  h.defer_sync = true;
  size_t most = 0;
  for (int i = 0; i < 5000; ++i) {
    a.send(OpCode::create, wire::CreateRequest{"/n" + std::to_string(i), std::string(), Client::open_acl(), 0});
    h.sync_all_but(2);  // the newest two writes always wait for the next group
    REQUIRE(h.server.outstanding() > 0);
    most = std::max(most, h.server.prep_overlay_size());
    if (i % 10 == 0) h.advance(20);
  }
  CHECK(most <= 8);  // two creates in flight touch a node and its parent each, plus the expiry
  h.sync();
  h.defer_sync = false;
  a.link().frames.clear();
  CHECK_FALSE(a.exists("/ttl"));  // 10 s passed meanwhile, with writes always in flight
  CHECK(a.exists("/n4999"));
  CHECK(h.server.prep_overlay_size() == 0);
}

TEST_CASE("a session both in the snapshot and in the log after it keeps its full timeout after a restart") {
  Harness before;
  Client a(before);
  a.connect(6000);
  auto records = before.server.session_records();
  auto log = before.log.read_after(0);

  Harness after(server::ServerOptions{}, before.now + 60000);
  after.server.start_snapshot_load();
  for (const auto& [k, r] : records) REQUIRE(after.server.load_snapshot_session(k, r));
  after.server.finish_snapshot_load(0);
  after.now += 3000;  // a long snapshot load: the log replays later
  for (const auto& e : log) after.server.replay(e.zxid, e.payload);

  Client back(after);
  REQUIRE(back.connect(6000, a.session(), a.passwd())->timeOut == 6000);
  for (int i = 0; i < 20; ++i) {  // 20 s of pings, one a second: well within the timeout
    after.advance(1000);
    REQUIRE(back.call_raw(OpCode::ping, "", wire::xid::ping).err() == Err::ok);
  }
  CHECK(after.server.session_count() == 1);
  CHECK_FALSE(back.link().closed);
}

TEST_CASE("session ids carry the server id and never repeat, across servers and restarts") {
  server::ServerOptions one, two;
  one.server_id = 1;
  two.server_id = 2;
  Harness h1(one), h2(two);  // the same clock
  Client a(h1), b(h2);
  a.connect();
  b.connect();
  CHECK(a.session() != b.session());
  CHECK((static_cast<uint64_t>(a.session()) >> 56) == 1);
  CHECK((static_cast<uint64_t>(b.session()) >> 56) == 2);

  // The same server restarted with a clock an hour behind still hands out higher ids.
  std::vector<wire::SessionId> seen;
  for (int i = 0; i < 5; ++i) {
    Client c(h1);
    c.connect();
    seen.push_back(c.session());
  }
  Harness again(one, h1.now - 3600 * 1000);
  for (const auto& e : h1.log.read_after(0)) again.server.replay(e.zxid, e.payload);
  Client fresh(again);
  fresh.connect();
  for (auto s : seen) CHECK(fresh.session() > s);
}

TEST_CASE("with a random seed given, session passwords replay exactly") {
  server::ServerOptions o;
  o.random_seed = 42;
  Harness h1(o), h2(o);
  Client a(h1), b(h2);
  a.connect();
  b.connect();
  CHECK(a.passwd() == b.passwd());
  server::ServerOptions other = o;
  other.random_seed = 43;
  Harness h3(other);
  Client c(h3);
  c.connect();
  CHECK(c.passwd() != a.passwd());
}
