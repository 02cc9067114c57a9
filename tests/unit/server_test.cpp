#include <catch2/catch.hpp>

#include "harness.hpp"
#include "server/state/txn.hpp"

using namespace test;
using wire::EventType;

TEST_CASE("a new session gets a timeout negotiated into [min, max] and an id that never repeats") {
  Harness h;  // tick 2000: min 4000, max 40000
  Client a(h), b(h), c(h);
  CHECK(a.connect(100)->timeOut == 4000);
  CHECK(b.connect(100000)->timeOut == 40000);
  CHECK(c.connect(10000)->timeOut == 10000);
  CHECK(a.session() != b.session());
  CHECK(b.session() != c.session());
  CHECK(a.passwd().size() == 16);
  // Ids of a server started later never meet those of this one: the start time is in them.
  Harness later({}, h.now + 1000);
  Client d(later);
  d.connect();
  CHECK(d.session() > c.session());
}

TEST_CASE("a client that has seen a newer zxid than the server is refused") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/x");
  Client b(h);
  // Epoch 100: far past anything this server applied.
  CHECK_FALSE(b.connect(30000, 0, std::string(16, '\0'), consensus::make_zxid(100, 0)));
  CHECK(b.link().closed);
}

TEST_CASE("re-attaching checks the password and closes the session's old connection") {
  Harness h;
  Client a(h);
  a.connect();
  Client wrong(h);
  auto r = wrong.connect(30000, a.session(), std::string(16, 'z'));
  REQUIRE(r);
  CHECK(r->timeOut == 0);  // what a client reads as an expired session
  CHECK(wrong.link().closed);

  Client again(h);
  auto ok = again.connect(30000, a.session(), a.passwd());
  REQUIRE(ok);
  CHECK(ok->sessionId == a.session());
  CHECK(a.link().closed);
  CHECK(again.create("/after-reattach").err() == Err::ok);
}

TEST_CASE("sequential nodes take the parent's create counter as a ten-digit suffix") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/q");
  auto r1 = a.create("/q/item-", "", 2);
  CHECK(wire::decode<wire::CreateResponse>(r1.body)->path == "/q/item-0000000000");
  a.call(OpCode::remove, wire::DeleteRequest{"/q/item-0000000000", -1});
  auto r2 = a.create("/q/item-", "", 2);
  CHECK(wire::decode<wire::CreateResponse>(r2.body)->path == "/q/item-0000000001");
  // ZooKeeper's reported cversion counts creates and deletes.
  CHECK(a.exists("/q")->cversion == 3);
}

TEST_CASE("Stat fields follow ZooKeeper") {
  Harness h;
  Client a(h);
  a.connect();
  auto r = a.create("/s", "abc", 0, OpCode::create2);
  REQUIRE(r.err() == Err::ok);
  auto st = wire::decode<wire::Create2Response>(r.body)->stat;
  CHECK(st.czxid == r.header.zxid);
  CHECK(st.mzxid == r.header.zxid);
  CHECK(st.pzxid == r.header.zxid);
  CHECK(st.ctime == h.now);
  CHECK(st.dataLength == 3);
  h.now += 5;
  auto set = a.call(OpCode::setData, wire::SetDataRequest{"/s", std::string("zz"), 0});
  auto st2 = wire::decode<wire::StatResponse>(set.body)->stat;
  CHECK(st2.version == 1);
  CHECK(st2.mtime == h.now);
  CHECK(st2.mzxid == set.header.zxid);
  CHECK(st2.czxid == st.czxid);
  CHECK(a.call(OpCode::setData, wire::SetDataRequest{"/s", std::string("q"), 0}).err() == Err::badVersion);
  a.create("/s/kid");
  CHECK(a.exists("/s")->numChildren == 1);
  CHECK(a.exists("/")->cversion == 0);  // root: one create (/s), two children: 2*1 - 2
}

TEST_CASE("path validation and error codes match ZooKeeper's") {
  Harness h;
  Client a(h);
  a.connect();
  CHECK(a.create("/bad/").err() == Err::noNode);  // the parent is looked up first, as ZooKeeper does
  CHECK(a.create("/a//b").err() == Err::noNode);
  CHECK(a.create("noslash").err() == Err::badArguments);
  CHECK(a.create("/x/.").err() == Err::noNode);
  a.create("/x");
  CHECK(a.create("/x/.").err() == Err::badArguments);
  CHECK(a.create("/x/..").err() == Err::badArguments);
  CHECK(a.create(std::string("/x/\x01")).err() == Err::badArguments);
  CHECK(a.create("/x/\xef\xbf\xbf").err() == Err::badArguments);  // U+FFFF
  CHECK(a.create("/x/ok.name").err() == Err::ok);
  CHECK(a.create("/x").err() == Err::nodeExists);
  CHECK(a.create("/x/y", "", 9).err() == Err::badArguments);  // no such create mode
  CHECK(a.call(OpCode::remove, wire::DeleteRequest{"/x", -1}).err() == Err::notEmpty);
  CHECK(a.call(OpCode::remove, wire::DeleteRequest{"/zookeeper", -1}).err() == Err::badArguments);
  CHECK(a.call(OpCode::remove, wire::DeleteRequest{"/", -1}).err() == Err::badArguments);
  CHECK(a.call(OpCode::remove, wire::DeleteRequest{"/x/ok.name", 7}).err() == Err::badVersion);
  CHECK(a.create("/x/e", "", 1).err() == Err::ok);
  CHECK(a.create("/x/e/child").err() == Err::noChildrenForEphemerals);
  CHECK(a.create("/x/z", "", 0, OpCode::create, {}).err() == Err::invalidACL);
  CHECK(a.create("/x/z", "", 0, OpCode::create, {wire::Acl{31, wire::Id{"world", "someone"}}}).err() ==
        Err::invalidACL);
  CHECK(a.create("/x/z", "", 0, OpCode::create, {wire::Acl{31, wire::Id{"auth", ""}}}).err() == Err::invalidACL);
}

TEST_CASE("every failed write still takes a zxid, as ZooKeeper's error txns do") {
  Harness h;
  Client a(h);
  a.connect();
  auto r1 = a.create("/dup");
  auto r2 = a.create("/dup");
  CHECK(r2.err() == Err::nodeExists);
  CHECK(r2.header.zxid == r1.header.zxid + 1);
  auto r3 = a.create("/dup/x");
  CHECK(r3.header.zxid == r2.header.zxid + 1);
}

TEST_CASE("multi is all or nothing and reports each op as ZooKeeper does") {
  Harness h;
  Client a(h);
  a.connect();
  std::vector<wire::MultiOp> ops{
      {OpCode::create, wire::CreateRequest{"/m", std::nullopt, Client::open_acl(), 0}},
      {OpCode::create, wire::CreateRequest{"/m/child", std::nullopt, Client::open_acl(), 0}},
      {OpCode::setData, wire::SetDataRequest{"/m", std::string("v"), 0}},
      {OpCode::check, wire::CheckVersionRequest{"/m", 1}},
  };
  auto ok = a.call_raw(OpCode::multi, wire::encode_multi_request(ops));
  REQUIRE(ok.err() == Err::ok);
  auto results = wire::decode_multi_response(ok.body);
  REQUIRE(results);
  REQUIRE(results->size() == 4);
  CHECK(std::get<wire::CreateResponse>((*results)[1].record).path == "/m/child");
  CHECK(std::get<wire::StatResponse>((*results)[2].record).stat.version == 1);

  std::vector<wire::MultiOp> bad{
      {OpCode::create, wire::CreateRequest{"/n", std::nullopt, Client::open_acl(), 0}},
      {OpCode::remove, wire::DeleteRequest{"/m", -1}},  // not empty
      {OpCode::create, wire::CreateRequest{"/o", std::nullopt, Client::open_acl(), 0}},
  };
  auto failed = a.call_raw(OpCode::multi, wire::encode_multi_request(bad));
  CHECK(failed.err() == Err::ok);  // the header says OK; the results say why
  auto fr = wire::decode_multi_response(failed.body);
  REQUIRE(fr);
  REQUIRE(fr->size() == 3);
  CHECK((*fr)[0].err == 0);
  CHECK((*fr)[1].err == static_cast<int32_t>(Err::notEmpty));
  CHECK((*fr)[2].err == static_cast<int32_t>(Err::runtimeInconsistency));
  CHECK_FALSE(a.exists("/n"));
  CHECK_FALSE(a.exists("/o"));
  // Ops see the ops before them, also after a failed multi rolled its view back.
  CHECK(a.create("/n").err() == Err::ok);
}

TEST_CASE("a watch event reaches the client before the reply that shows the change") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/w", "1");
  REQUIRE(a.call(OpCode::getData, wire::PathWatchRequest{"/w", true}).err() == Err::ok);
  a.order.clear();
  a.call(OpCode::setData, wire::SetDataRequest{"/w", std::string("2"), -1});
  REQUIRE(a.order == std::vector<std::string>{"event:/w", "reply"});
  CHECK(a.events.back().type == static_cast<int32_t>(EventType::nodeDataChanged));
  // One-shot: a second change fires nothing.
  a.events.clear();
  a.call(OpCode::setData, wire::SetDataRequest{"/w", std::string("3"), -1});
  CHECK(a.events.empty());
}

TEST_CASE("exists, data and child watches fire ZooKeeper's event types, one per watcher per trigger") {
  Harness h;
  Client a(h), b(h);
  a.connect();
  b.connect();
  CHECK_FALSE(a.exists("/e", true));  // a watch on a missing node
  a.children("/", true);
  b.create("/e");
  a.drain();
  REQUIRE(a.events.size() == 2);
  CHECK(a.events[0].type == static_cast<int32_t>(EventType::nodeCreated));
  CHECK(a.events[0].path == "/e");
  CHECK(a.events[1].type == static_cast<int32_t>(EventType::nodeChildrenChanged));
  CHECK(a.events[1].path == "/");
  a.events.clear();
  // A data and a child watch on one node: its deletion is one NodeDeleted for the connection.
  a.call(OpCode::getData, wire::PathWatchRequest{"/e", true});
  a.children("/e", true);
  b.call(OpCode::remove, wire::DeleteRequest{"/e", -1});
  a.drain();
  REQUIRE(a.events.size() == 1);
  CHECK(a.events[0].type == static_cast<int32_t>(EventType::nodeDeleted));
  CHECK(h.server.watch_count() == 0);
}

TEST_CASE("events come in zxid order across paths") {
  Harness h;
  Client a(h), b(h);
  a.connect();
  b.connect();
  for (auto p : {"/z1", "/z2", "/z3"}) a.exists(p, true);
  b.create("/z2");
  b.create("/z3");
  b.create("/z1");
  a.drain();
  REQUIRE(a.events.size() == 3);
  CHECK(a.events[0].path == "/z2");
  CHECK(a.events[1].path == "/z3");
  CHECK(a.events[2].path == "/z1");
}

TEST_CASE("setWatches on re-attach fires at once for what changed after relativeZxid") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/same", "x");
  a.create("/changed", "x");
  a.create("/gone");
  auto seen = a.create("/kids").header.zxid;
  a.call(OpCode::setData, wire::SetDataRequest{"/changed", std::string("y"), -1});
  a.call(OpCode::remove, wire::DeleteRequest{"/gone", -1});
  a.create("/kids/k");
  a.create("/born");
  Client b(h);
  b.connect();
  wire::SetWatches sw{seen, {"/same", "/changed", "/gone"}, {"/born", "/unborn"}, {"/kids"}};
  auto r = b.call_raw(OpCode::setWatches, wire::encode(sw), wire::xid::setWatches);
  CHECK(r.err() == Err::ok);
  CHECK(r.header.xid == wire::xid::setWatches);
  std::map<std::string, int32_t> got;
  for (auto& e : b.events) got[e.path] = e.type;
  CHECK(got.size() == 4);
  CHECK(got["/changed"] == static_cast<int32_t>(EventType::nodeDataChanged));
  CHECK(got["/gone"] == static_cast<int32_t>(EventType::nodeDeleted));
  CHECK(got["/born"] == static_cast<int32_t>(EventType::nodeCreated));
  CHECK(got["/kids"] == static_cast<int32_t>(EventType::nodeChildrenChanged));
  // The rest stay watched.
  b.events.clear();
  a.call(OpCode::setData, wire::SetDataRequest{"/same", std::string("z"), -1});
  a.create("/unborn");
  b.drain();
  CHECK(b.events.size() == 2);
}

TEST_CASE("closing a session removes all its ephemerals in one txn") {
  Harness h;
  Client a(h), watcher(h);
  a.connect();
  watcher.connect();
  a.create("/reg");
  a.create("/reg/e1", "", 1);
  a.create("/reg/e2", "", 3);
  CHECK(a.exists("/reg/e1")->ephemeralOwner == a.session());
  watcher.children("/reg", true);
  auto before = h.log.last_zxid();
  auto r = a.call_raw(OpCode::closeSession, "");
  CHECK(r.err() == Err::ok);
  CHECK(h.log.last_zxid() == before + 1);
  CHECK(a.link().closed);
  CHECK(watcher.children("/reg").empty());
  CHECK(watcher.exists("/reg")->pzxid == r.header.zxid);
  watcher.drain();
  CHECK(watcher.events.size() == 1);  // one child watch, one trigger
}

// A session (timeout 6000; the tick is 2000) that owns the ephemeral /eph, and a long-lived one.
struct OwnerAndWatcher {
  Harness h;
  Client owner{h}, watcher{h};
  OwnerAndWatcher() {
    owner.connect(6000);
    watcher.connect(40000);
    owner.create("/eph", "", 1);
  }
  // The owner goes silent: /eph is still there 5 s later, and gone 4 s after that (6000 rounded
  // up to the next tick, then that tick's check).
  void owner_expires_on_time() {
    owner.disconnect();
    h.advance(5000);
    CHECK(watcher.exists("/eph"));
    h.advance(4000);
    CHECK_FALSE(watcher.exists("/eph"));
    CHECK(h.server.session_count() == 1);
  }
};

TEST_CASE("a session expires on ticks, and a late re-attach learns it expired") {
  OwnerAndWatcher t;
  t.owner_expires_on_time();
  Client late(t.h);
  auto r = late.connect(6000, t.owner.session(), t.owner.passwd());
  REQUIRE(r);
  CHECK(r->timeOut == 0);
  CHECK(late.link().closed);
}

TEST_CASE("a wall clock stepped forward or back neither expires sessions nor keeps silent ones") {
  OwnerAndWatcher t;
  t.h.advance(1000);
  t.h.step_wall_clock(120'000);  // forward two minutes: every deadline would have passed
  t.h.advance(1000);
  CHECK(t.owner.call_raw(OpCode::ping, "", wire::xid::ping).header.xid == wire::xid::ping);
  CHECK(t.watcher.exists("/eph"));
  CHECK(t.h.server.session_count() == 2);
  t.h.step_wall_clock(-600'000);  // back ten minutes: a silent session must still go on time
  t.h.advance(1000);
  t.owner_expires_on_time();
  CHECK(t.watcher.create("/after", "").err() == Err::ok);  // mtimes still read the wall clock
  CHECK(t.watcher.exists("/after")->mtime == t.h.now);
}

TEST_CASE("pings and requests keep a session alive") {
  Harness h;
  Client a(h);
  a.connect(4000);
  a.create("/alive", "", 1);
  for (int i = 0; i < 10; ++i) {
    h.advance(1000);
    CHECK(a.call_raw(OpCode::ping, "", wire::xid::ping).header.xid == wire::xid::ping);
  }
  CHECK(a.exists("/alive"));
}

TEST_CASE("containers go once their last child is gone; TTL nodes once idle past their TTL") {
  server::ServerOptions o;
  o.extended_types = true;
  o.container_check_interval_ms = 1000;
  Harness h(o);
  Client a(h);
  a.connect(40000);
  REQUIRE(a.create("/c", "", 4, OpCode::createContainer).err() == Err::ok);
  REQUIRE(a.create("/never", "", 4, OpCode::createContainer).err() == Err::ok);
  CHECK(a.exists("/c")->ephemeralOwner == 0);  // clients see no owner on containers
  a.create("/c/x");
  h.advance(2000);
  CHECK(a.exists("/c"));
  a.call(OpCode::remove, wire::DeleteRequest{"/c/x", -1});
  h.advance(2000);
  CHECK_FALSE(a.exists("/c"));
  CHECK(a.exists("/never"));  // never had a child: left alone

  auto ttl = a.call(OpCode::createTTL, wire::CreateTTLRequest{"/t", std::string(), Client::open_acl(), 5, 3000});
  REQUIRE(ttl.err() == Err::ok);
  h.advance(2000);
  CHECK(a.exists("/t"));
  h.advance(3000);
  CHECK_FALSE(a.exists("/t"));
  CHECK(a.call(OpCode::createTTL, wire::CreateTTLRequest{"/t0", std::string(), Client::open_acl(), 5, 0}).err() ==
        Err::badArguments);
}

TEST_CASE("TTL nodes need extendedTypesEnabled, as in ZooKeeper") {
  Harness h;
  Client a(h);
  a.connect();
  auto r = a.call(OpCode::createTTL, wire::CreateTTLRequest{"/t", std::string(), Client::open_acl(), 5, 1000});
  CHECK(r.err() == Err::unimplemented);
}

TEST_CASE("digest ACLs: auth, NoAuth, auth-scheme expansion, and getACL without ADMIN") {
  Harness h;
  Client owner(h), stranger(h);
  owner.connect();
  stranger.connect();
  auto auth = owner.call_raw(OpCode::auth, wire::encode(wire::AuthPacket{0, "digest", std::string("alice:secret")}),
                             wire::xid::auth);
  REQUIRE(auth.err() == Err::ok);
  REQUIRE(owner.create("/private", "s", 0, OpCode::create, {wire::Acl{wire::perms::all, wire::Id{"auth", ""}}}).err() ==
          Err::ok);
  auto acl = owner.call(OpCode::getACL, wire::PathRequest{"/private"});
  auto list = wire::decode<wire::GetACLResponse>(acl.body)->acl;
  REQUIRE(list.size() == 1);
  CHECK(list[0].id == wire::Id{"digest", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="});
  CHECK(stranger.call(OpCode::getData, wire::PathWatchRequest{"/private", false}).err() == Err::noAuth);
  CHECK(stranger.call(OpCode::setData, wire::SetDataRequest{"/private", std::string("x"), -1}).err() == Err::noAuth);
  CHECK(stranger.call(OpCode::getACL, wire::PathRequest{"/private"}).err() == Err::noAuth);

  owner.call(OpCode::setACL,
             wire::SetACLRequest{"/private",
                                 {wire::Acl{wire::perms::all, wire::Id{"digest", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="}},
                                  wire::Acl{wire::perms::read, wire::Id{"world", "anyone"}}},
                                 -1});
  auto masked = stranger.call(OpCode::getACL, wire::PathRequest{"/private"});
  REQUIRE(masked.err() == Err::ok);
  CHECK(wire::decode<wire::GetACLResponse>(masked.body)->acl[0].id.id == "alice:x");
  CHECK(stranger.call(OpCode::setACL, wire::SetACLRequest{"/private", Client::open_acl(), -1}).err() == Err::noAuth);
  CHECK(owner.call(OpCode::setACL, wire::SetACLRequest{"/private", Client::open_acl(), 5}).err() == Err::badVersion);

  auto bad = stranger.call_raw(OpCode::auth, wire::encode(wire::AuthPacket{0, "kerberos", std::string("x")}),
                               wire::xid::auth);
  CHECK(bad.err() == Err::authFailed);
  CHECK(stranger.link().closed);
}

TEST_CASE("skipACL (zookeeper.skipACL=yes): no permission is checked, as in ZooKeeper") {
  for (bool skip : {false, true}) {
    server::ServerOptions o;
    o.skip_acl = skip;
    Harness h(o);
    Client owner(h), stranger(h);
    owner.connect();
    stranger.connect();
    REQUIRE(owner.call_raw(OpCode::auth, wire::encode(wire::AuthPacket{0, "digest", std::string("alice:secret")}),
                           wire::xid::auth)
                .err() == Err::ok);
    REQUIRE(owner.create("/private", "s", 0, OpCode::create, {wire::Acl{wire::perms::all, wire::Id{"auth", ""}}})
                .err() == Err::ok);
    Err want = skip ? Err::ok : Err::noAuth;
    CAPTURE(skip);
    CHECK(stranger.call(OpCode::getData, wire::PathWatchRequest{"/private", false}).err() == want);
    CHECK(stranger.call(OpCode::setData, wire::SetDataRequest{"/private", std::string("x"), -1}).err() == want);
    CHECK(stranger.create("/private/child", "c").err() == want);
    auto acl = stranger.call(OpCode::getACL, wire::PathRequest{"/private"});
    REQUIRE(acl.err() == want);
    if (skip)  // as with ADMIN: the digest is shown whole
      CHECK(wire::decode<wire::GetACLResponse>(acl.body)->acl[0].id.id == "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=");
    // The parent's DELETE permission is checked before the child is looked up, as in ZooKeeper.
    CHECK(stranger.call(OpCode::remove, wire::DeleteRequest{"/private/child", -1}).err() == want);
    CHECK(stranger.call(OpCode::setACL, wire::SetACLRequest{"/private", Client::open_acl(), -1}).err() == want);
  }
}

TEST_CASE("the super digest's user passes every ACL; auth sent again on re-attach counts again") {
  server::ServerOptions o;
  o.super_digest = server::digest_id("root:toor");  // "root:<base64 sha1>", as in zoo.cfg
  Harness h(o);
  Client owner(h), admin(h);
  owner.connect();
  admin.connect();
  auto auth = [](Client& c, const char* who) {
    return c.call_raw(OpCode::auth, wire::encode(wire::AuthPacket{0, "digest", std::string(who)}), wire::xid::auth).err();
  };
  REQUIRE(auth(owner, "alice:secret") == Err::ok);
  owner.create("/locked", "s", 0, OpCode::create, {wire::Acl{wire::perms::all, wire::Id{"auth", ""}}});
  CHECK(admin.call(OpCode::getData, wire::PathWatchRequest{"/locked", false}).err() == Err::noAuth);
  REQUIRE(auth(admin, "root:wrong") == Err::ok);  // a digest like any other: no super powers
  CHECK(admin.call(OpCode::getData, wire::PathWatchRequest{"/locked", false}).err() == Err::noAuth);
  REQUIRE(auth(admin, "root:toor") == Err::ok);
  CHECK(admin.call(OpCode::getData, wire::PathWatchRequest{"/locked", false}).err() == Err::ok);
  auto acl = admin.call(OpCode::getACL, wire::PathRequest{"/locked"});  // with ADMIN: unmasked
  CHECK(wire::decode<wire::GetACLResponse>(acl.body)->acl[0].id.id == "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=");
  CHECK(admin.call(OpCode::setData, wire::SetDataRequest{"/locked", std::string("x"), -1}).err() == Err::ok);
  CHECK(admin.call(OpCode::remove, wire::DeleteRequest{"/locked", -1}).err() == Err::ok);

  // Auth belongs to a connection: a client that re-attaches its session sends it again.
  owner.create("/mine", "m", 0, OpCode::create, {wire::Acl{wire::perms::all, wire::Id{"auth", ""}}});
  Client again(h);
  again.connect(30000, owner.session(), owner.passwd());
  CHECK(again.call(OpCode::getData, wire::PathWatchRequest{"/mine", false}).err() == Err::noAuth);
  REQUIRE(auth(again, "alice:secret") == Err::ok);
  CHECK(again.call(OpCode::getData, wire::PathWatchRequest{"/mine", false}).err() == Err::ok);
}

TEST_CASE("ip ACLs match the connection's address with a prefix") {
  Harness h;
  Client a(h);
  a.connect();
  REQUIRE(a.create("/lan", "", 0, OpCode::create, {wire::Acl{wire::perms::all, wire::Id{"ip", "127.0.0.0/8"}}}).err() ==
          Err::ok);
  CHECK(a.call(OpCode::getData, wire::PathWatchRequest{"/lan", false}).err() == Err::ok);
  REQUIRE(a.create("/other", "", 0, OpCode::create, {wire::Acl{wire::perms::all, wire::Id{"ip", "10.0.0.0/8"}}}).err() ==
          Err::ok);
  CHECK(a.call(OpCode::getData, wire::PathWatchRequest{"/other", false}).err() == Err::noAuth);
  CHECK(a.create("/bad", "", 0, OpCode::create, {wire::Acl{wire::perms::all, wire::Id{"ip", "300.1.1.1"}}}).err() ==
        Err::invalidACL);
}

TEST_CASE("bad input: a truncated record is a MarshallingError and the connection lives on") {
  Harness h;
  Client a(h);
  a.connect();
  auto r = a.call_raw(OpCode::create, std::string("\x00\x00\x00\x03/t", 6));
  CHECK(r.err() == Err::marshallingError);
  CHECK_FALSE(a.link().closed);
  CHECK(a.create("/fine").err() == Err::ok);
  auto g = a.call_raw(OpCode::getData, std::string("\xff\xff", 2));
  CHECK(g.err() == Err::marshallingError);
}

TEST_CASE("bad input: an unknown opcode gets Unimplemented and that connection is closed") {
  Harness h;
  Client a(h), b(h);
  a.connect();
  b.connect();
  a.create("/kept");
  auto r = a.call_raw(static_cast<OpCode>(77), "");
  CHECK(r.err() == Err::unimplemented);
  CHECK(r.header.zxid == -1);
  CHECK(a.link().closed);
  CHECK(b.exists("/kept"));
}

TEST_CASE("bad input: garbage instead of a handshake closes that connection only") {
  Harness h;
  Client good(h);
  good.connect();
  good.create("/kept");
  h.server.receive(987654, "junk");  // an unknown connection id is ignored
  Client junk(h);
  junk.send_raw(std::string("\x00\x00\x00\x01\x00\x00\x00\x01", 8));  // a request header, not a ConnectRequest
  CHECK(junk.link().frames.empty());
  CHECK(junk.link().closed);
  CHECK(good.exists("/kept"));
}

TEST_CASE("txns encode and decode to the same txn; garbage does not decode") {
  server::Txn t;
  t.session = 7;
  t.cxid = 3;
  t.time = 99;
  t.type = static_cast<int32_t>(OpCode::multi);
  server::MultiTxn m;
  m.ops.push_back({1, server::CreateTxn{"/a", std::string("d"), Client::open_acl(), 0, 4}});
  m.ops.push_back({2, server::DeleteTxn{"/b"}});
  t.body = m;
  auto back = server::decode_txn(server::encode_txn(t));
  REQUIRE(back);
  CHECK(back->session == 7);
  auto& mm = std::get<server::MultiTxn>(back->body);
  REQUIRE(mm.ops.size() == 2);
  CHECK(std::get<server::CreateTxn>(mm.ops[0].body).parentCreates == 4);
  std::string enc = server::encode_txn(t);
  for (size_t cut = 0; cut < enc.size(); ++cut) CHECK_FALSE(server::decode_txn(enc.substr(0, cut)));
}

TEST_CASE("txn bodies carry fixed tags on disk, whatever the order of the variants in txn.hpp") {
  // The log's format: these numbers are what logs written by earlier versions hold.
  auto tag = [](const server::Txn& t) { return wire::Reader(server::encode_txn(t).substr(24, 4)).get_int(); };
  auto with = [](server::TxnBody b) {
    server::Txn t;
    t.body = std::move(b);
    return t;
  };
  CHECK(tag(with(server::CreateTxn{})) == 0);
  CHECK(tag(with(server::DeleteTxn{})) == 1);
  CHECK(tag(with(server::SetDataTxn{})) == 2);
  CHECK(tag(with(server::SetAclTxn{})) == 3);
  CHECK(tag(with(server::CheckTxn{})) == 4);
  CHECK(tag(with(server::ErrorTxn{})) == 5);
  CHECK(tag(with(server::CreateSessionTxn{})) == 6);
  CHECK(tag(with(server::CloseSessionTxn{})) == 7);
  server::MultiTxn m;
  m.ops.push_back({13, server::CheckTxn{"/c"}});
  m.ops.push_back({-1, server::ErrorTxn{0}});
  std::string enc = server::encode_txn(with(m));
  wire::Reader r(std::string_view(enc).substr(24));
  CHECK(r.get_int() == 8);   // multi
  CHECK(r.get_int() == 2);   // two ops
  CHECK(r.get_int() == 13);  // the first op's type, then its tag inside a multi
  CHECK(r.get_int() == 3);
  r.get_string();  // its path
  CHECK(r.get_int() == -1);
  CHECK(r.get_int() == 4);  // an error op
  REQUIRE(server::decode_txn(enc));
  CHECK(std::holds_alternative<server::CheckTxn>(std::get<server::MultiTxn>(server::decode_txn(enc)->body).ops[0].body));
}

TEST_CASE("nodes with equal ACLs share one copy of the list") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/one");
  a.create("/two");
  const auto& tree = h.server.tree();
  auto acl = [&](const char* p) { return tree.acl_of(*tree.find(p)).get(); };
  CHECK(acl("/one") == acl("/two"));
  a.call(OpCode::setACL, wire::SetACLRequest{"/two", {wire::Acl{1, wire::Id{"world", "anyone"}}}, -1});
  CHECK(acl("/two") != acl("/one"));
  CHECK(acl("/zookeeper/config")->at(0).perms == 1);
  CHECK(acl("/two")->at(0).perms == 1);
  wire::AclList read_only{wire::Acl{1, wire::Id{"world", "anyone"}}};
  a.create("/three", "", 0, OpCode::create, read_only);
  CHECK(acl("/three") == acl("/two"));
  // A list no node uses any more is dropped, and made anew when wanted again.
  a.call(OpCode::setACL, wire::SetACLRequest{"/three", {wire::Acl{31, wire::Id{"world", "anyone"}}}, -1});  // world may not: NoAuth
  CHECK(acl("/three") == acl("/two"));
  a.call(OpCode::remove, wire::DeleteRequest{"/two", -1});
  a.call(OpCode::remove, wire::DeleteRequest{"/three", -1});
  a.create("/four", "", 0, OpCode::create, read_only);
  CHECK(acl("/four")->at(0).perms == 1);
  CHECK(h.server.tree().size() == 6);
}

TEST_CASE("a node keeps its children, Stat and place when its data changes length") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/p", "x");
  for (const char* kid : {"c", "a", "b"}) a.create(std::string("/p/") + kid, "kid");
  auto before = *a.exists("/p");
  std::string sizes[] = {"", std::string(5000, 'L'), "y", std::string(300, 'M'), "x"};
  int version = 0;
  for (const auto& data : sizes) {
    auto r = a.call(OpCode::setData, wire::SetDataRequest{"/p", data, -1});
    REQUIRE(r.err() == Err::ok);
    auto st = *a.exists("/p");
    CHECK(st.version == ++version);
    CHECK(st.dataLength == static_cast<int32_t>(data.size()));
    CHECK(st.czxid == before.czxid);
    CHECK(st.pzxid == before.pzxid);
    CHECK(st.cversion == before.cversion);
    CHECK(st.numChildren == 3);
    CHECK(a.children("/p") == std::vector<std::string>{"a", "b", "c"});
    CHECK(a.get("/p") == data);
    CHECK(a.get("/p/b") == "kid");
  }
  // The root too: it has no parent set to sit in.
  for (const auto& data : sizes) REQUIRE(a.call(OpCode::setData, wire::SetDataRequest{"/", data, -1}).err() == Err::ok);
  CHECK(a.get("/") == "x");
  CHECK(a.children("/") == std::vector<std::string>{"p", "zookeeper"});
  CHECK(a.get("/p/c") == "kid");
  // A null value and an empty one are different data of the same length.
  REQUIRE(a.call(OpCode::setData, wire::SetDataRequest{"/p/a", std::nullopt, -1}).err() == Err::ok);
  CHECK(h.server.tree().find("/p/a")->data_bytes() == std::nullopt);
  REQUIRE(a.call(OpCode::setData, wire::SetDataRequest{"/p/a", std::string(), -1}).err() == Err::ok);
  CHECK(h.server.tree().find("/p/a")->data_bytes() == std::string());
  CHECK(a.call(OpCode::remove, wire::DeleteRequest{"/p", -1}).err() == Err::notEmpty);
  for (const char* kid : {"a", "b", "c"}) a.call(OpCode::remove, wire::DeleteRequest{std::string("/p/") + kid, -1});
  CHECK(a.call(OpCode::remove, wire::DeleteRequest{"/p", -1}).err() == Err::ok);
  CHECK(h.server.tree().size() == 4);
}
