// The pipeline when commits come later than proposals, as with a log that syncs in groups:
// a session's replies stay in request order and its reads see its own writes.
#include <catch2/catch.hpp>

#include "harness.hpp"

using namespace test;

TEST_CASE("with writes in flight, a session's read waits for them and replies keep request order") {
  Harness h;
  Client a(h);
  a.connect();
  h.defer_sync = true;
  int32_t w = a.send(OpCode::create, wire::CreateRequest{"/g", std::string("v"), Client::open_acl(), 0});
  int32_t r = a.send(OpCode::getData, wire::PathWatchRequest{"/g", false});
  int32_t p = wire::xid::ping;
  a.send_raw(wire::encode(wire::RequestHeader{p, static_cast<int32_t>(OpCode::ping)}));
  CHECK_FALSE(a.has_frames());  // nothing may overtake the write
  h.sync();
  auto first = a.next_reply();
  CHECK(first.header.xid == w);
  CHECK(first.err() == Err::ok);
  auto second = a.next_reply();
  CHECK(second.header.xid == r);
  CHECK(second.err() == Err::ok);  // the read sees the session's own write
  CHECK(wire::decode<wire::GetDataResponse>(second.body)->data == std::string("v"));
  CHECK(a.next_reply().header.xid == p);
}

TEST_CASE("writes in flight see each other in prep, and are applied in one group") {
  Harness h;
  Client a(h);
  a.connect();
  h.defer_sync = true;
  a.send(OpCode::create, wire::CreateRequest{"/p", std::nullopt, Client::open_acl(), 0});
  a.send(OpCode::create, wire::CreateRequest{"/p/c", std::nullopt, Client::open_acl(), 0});
  a.send(OpCode::create, wire::CreateRequest{"/p/s-", std::nullopt, Client::open_acl(), 2});
  a.send(OpCode::create, wire::CreateRequest{"/p/s-", std::nullopt, Client::open_acl(), 2});
  a.send(OpCode::create, wire::CreateRequest{"/p", std::nullopt, Client::open_acl(), 0});
  a.send(OpCode::remove, wire::DeleteRequest{"/p", -1});
  CHECK(h.unsynced.size() == 6);
  h.sync();
  CHECK(a.next_reply().err() == Err::ok);
  CHECK(a.next_reply().err() == Err::ok);
  CHECK(wire::decode<wire::CreateResponse>(a.next_reply().body)->path == "/p/s-0000000001");
  CHECK(wire::decode<wire::CreateResponse>(a.next_reply().body)->path == "/p/s-0000000002");
  CHECK(a.next_reply().err() == Err::nodeExists);
  CHECK(a.next_reply().err() == Err::notEmpty);
  h.defer_sync = false;
  CHECK(a.children("/p").size() == 3);
}

TEST_CASE("a failed multi in flight rolls back only its own view") {
  Harness h;
  Client a(h);
  a.connect();
  h.defer_sync = true;
  a.send(OpCode::create, wire::CreateRequest{"/base", std::nullopt, Client::open_acl(), 0});
  std::vector<wire::MultiOp> bad{{OpCode::create, wire::CreateRequest{"/base/x", std::nullopt, Client::open_acl(), 0}},
                                 {OpCode::remove, wire::DeleteRequest{"/nothing", -1}}};
  a.send_raw(wire::encode(wire::RequestHeader{77, static_cast<int32_t>(OpCode::multi)}) +
             wire::encode_multi_request(bad));
  a.send(OpCode::create, wire::CreateRequest{"/base/y", std::nullopt, Client::open_acl(), 0});
  h.sync();
  CHECK(a.next_reply().err() == Err::ok);
  auto multi = a.next_reply();
  CHECK(multi.header.xid == 77);
  CHECK((*wire::decode_multi_response(multi.body))[1].err == static_cast<int32_t>(Err::noNode));
  CHECK(a.next_reply().err() == Err::ok);
  h.defer_sync = false;
  CHECK(a.children("/base") == std::vector<std::string>{"y"});
}

TEST_CASE("another session's read is not held up by this session's writes") {
  Harness h;
  Client a(h), b(h);
  a.connect();
  b.connect();
  h.defer_sync = true;
  a.send(OpCode::create, wire::CreateRequest{"/slow", std::nullopt, Client::open_acl(), 0});
  b.send(OpCode::exists, wire::PathWatchRequest{"/slow", false});
  REQUIRE(b.has_frames());
  CHECK(b.next_reply().err() == Err::noNode);  // not committed yet: not visible
  h.sync();
  CHECK(a.next_reply().err() == Err::ok);
}

TEST_CASE("requests sent right behind the handshake wait for the session to exist") {
  Harness h;
  h.defer_sync = true;
  Client a(h);
  a.send_connect();
  a.send_raw(wire::encode(wire::RequestHeader{1, static_cast<int32_t>(OpCode::create)}) +
             wire::encode(wire::CreateRequest{"/early", std::nullopt, Client::open_acl(), 1}));
  CHECK_FALSE(a.has_frames());
  h.sync();  // the session
  auto resp = a.read_connect_response();
  REQUIRE(resp);
  CHECK(resp->sessionId != 0);
  h.sync();  // the create, proposed once the session existed
  auto r = a.next_reply();
  CHECK(r.err() == Err::ok);
  h.defer_sync = false;
  CHECK(a.exists("/early")->ephemeralOwner == a.session());
}

TEST_CASE("closing a session with writes in flight applies them first") {
  Harness h;
  Client a(h), w(h);
  a.connect();
  w.connect();
  h.defer_sync = true;
  a.send(OpCode::create, wire::CreateRequest{"/e1", std::nullopt, Client::open_acl(), 1});
  a.send_raw(wire::encode(wire::RequestHeader{9, static_cast<int32_t>(OpCode::closeSession)}));
  h.sync();
  CHECK(a.next_reply().err() == Err::ok);
  h.sync();  // the close, proposed after the create was applied
  CHECK(a.next_reply().header.xid == 9);
  h.defer_sync = false;
  CHECK_FALSE(w.exists("/e1"));
}

TEST_CASE("a failed log write fails the writes in flight, reads go on, and later writes succeed") {
  Harness h;
  Client a(h), b(h);
  a.connect();
  b.connect();
  a.create("/kept", "v");
  auto before = h.server.tree().last_applied();
  h.defer_sync = true;
  int32_t w1 = a.send(OpCode::create, wire::CreateRequest{"/lost", std::nullopt, Client::open_acl(), 0});
  int32_t w2 = a.send(OpCode::setData, wire::SetDataRequest{"/kept", std::string("x"), -1});
  int32_t r = a.send(OpCode::getData, wire::PathWatchRequest{"/kept", false});
  h.fail_sync();
  auto f1 = a.next_reply();
  CHECK(f1.header.xid == w1);
  CHECK(f1.err() == Err::systemError);
  CHECK(f1.header.zxid == before);  // never a zxid the server has not applied
  auto f2 = a.next_reply();
  CHECK(f2.header.xid == w2);
  CHECK(f2.err() == Err::systemError);
  auto read = a.next_reply();
  CHECK(read.header.xid == r);
  CHECK(wire::decode<wire::GetDataResponse>(read.body)->data == std::string("v"));  // nothing half-applied
  CHECK_FALSE(b.exists("/lost"));
  // Space is back: the next write succeeds. The lost txns' zxids are never handed out again:
  // the server leads again in a new epoch.
  h.defer_sync = false;
  auto ok = a.create("/lost");
  CHECK(ok.err() == Err::ok);
  CHECK(ok.header.zxid == consensus::make_zxid(consensus::zxid_epoch(before) + 1, 1));
  CHECK(h.log.read_after(0).back().zxid == ok.header.zxid);
}

TEST_CASE("a session whose close was lost to a failed write is closed again later") {
  Harness h;
  Client a(h), w(h);
  a.connect(4000);
  w.connect(40000);
  a.create("/eph", "", 1);
  h.defer_sync = true;
  a.send_raw(wire::encode(wire::RequestHeader{5, static_cast<int32_t>(OpCode::closeSession)}));
  h.fail_sync();
  CHECK(a.next_reply().err() == Err::systemError);
  h.defer_sync = false;
  h.advance(2000);  // the next expiry check closes it for good
  CHECK_FALSE(w.exists("/eph"));
  CHECK(h.server.session_count() == 1);
}

TEST_CASE("a session that could not be created closes its connection") {
  Harness h;
  h.defer_sync = true;
  Client a(h);
  a.send_connect();
  h.fail_sync();
  CHECK(a.link().closed);
  CHECK(h.server.session_count() == 0);
}
