// A session that mixes reads and writes: its writes are proposed without waiting for its reads,
// and each read is answered at its exact point in the apply order (after the session's write
// before it, before the next), so it sees its own earlier writes and none of its later ones,
// and replies leave in request order.
#include "harness.hpp"

#include <random>

#include "server/admin/commands.hpp"

using namespace test;

namespace {
std::string value_of(const Reply& r) {
  REQUIRE(r.err() == Err::ok);
  auto resp = wire::decode<wire::GetDataResponse>(r.body);
  REQUIRE(resp);
  return resp->data.value_or("");
}
}  // namespace

TEST_CASE("a session's reads between its writes are answered in apply order, its writes not held") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/v", "0");
  h.defer_sync = true;
  a.send(OpCode::setData, wire::SetDataRequest{"/v", std::string("1"), -1});
  a.send(OpCode::getData, wire::PathWatchRequest{"/v", false});
  a.send(OpCode::setData, wire::SetDataRequest{"/v", std::string("2"), -1});
  a.send(OpCode::getData, wire::PathWatchRequest{"/v", false});
  a.send(OpCode::exists, wire::PathWatchRequest{"/v", true});  // set after "2", so "3" fires it
  a.send(OpCode::setData, wire::SetDataRequest{"/v", std::string("3"), -1});
  a.send(OpCode::getData, wire::PathWatchRequest{"/v", false});
  // Every write is proposed at once: none waits behind the reads before it.
  CHECK(h.unsynced.size() == 3);
  CHECK_FALSE(a.has_frames());

  h.sync_all_but(2);
  CHECK(a.next_reply().err() == Err::ok);  // the first setData
  CHECK(value_of(a.next_reply()) == "1");
  CHECK_FALSE(a.has_frames());  // the next read waits for the second write

  h.sync_all_but(1);
  CHECK(a.next_reply().err() == Err::ok);
  CHECK(value_of(a.next_reply()) == "2");
  auto seen = a.next_reply();
  REQUIRE(seen.err() == Err::ok);
  CHECK(wire::decode<wire::StatResponse>(seen.body)->stat.version == 2);
  CHECK(a.events.empty());
  CHECK_FALSE(a.has_frames());

  h.sync();
  CHECK(a.next_reply().err() == Err::ok);
  REQUIRE(a.events.size() == 1);  // the watch set between "2" and "3" fired on "3", before its reply
  CHECK(a.events[0].type == static_cast<int32_t>(wire::EventType::nodeDataChanged));
  CHECK(value_of(a.next_reply()) == "3");
  CHECK_FALSE(a.has_frames());
}

TEST_CASE("a session's random mix of reads and writes sees exactly its own order, whatever the commit steps") {
  // Two sessions write their own node and read both; the log syncs in random groups. Each read
  // of a session's own node must return the value of the session's last write before it (never
  // an older one, never a later one), and replies must come back in request order. Now and then
  // a frame that is neither a read nor a write (a sync, an auth) comes between: it and every
  // frame after it wait for the session's writes, as before.
  std::mt19937 rng(GENERATE(1u, 2u, 3u, 4u, 5u));
  Harness h;
  Client a(h), b(h);
  a.connect();
  b.connect();
  a.create("/a", "0");
  b.create("/b", "0");
  h.defer_sync = true;
  struct Sent {
    int32_t xid;
    enum { write, read, other } kind;
    std::string expect;  // a read of the session's own node: the value it must see
  };
  std::vector<Sent> sent[2];
  int counter[2] = {0, 0};
  Client* clients[2] = {&a, &b};
  const char* nodes[2] = {"/a", "/b"};
  auto expected_now = [&](int who) { return std::to_string(counter[who]); };
  for (int step = 0; step < 600; ++step) {
    int who = static_cast<int>(rng() % 2);
    Client& c = *clients[who];
    int kind = static_cast<int>(rng() % 20);
    if (kind < 6) {
      ++counter[who];
      int32_t x = c.send(OpCode::setData, wire::SetDataRequest{nodes[who], expected_now(who), -1});
      sent[who].push_back({x, Sent::write, ""});
    } else if (kind < 17) {
      bool own = rng() % 4 != 0;
      int32_t x = c.send(OpCode::getData, wire::PathWatchRequest{own ? nodes[who] : nodes[1 - who], rng() % 2 == 0});
      sent[who].push_back({x, own ? Sent::read : Sent::other, own ? expected_now(who) : ""});
    } else if (kind < 19) {
      int32_t x = c.send(OpCode::sync, wire::SyncRequest{nodes[who]});
      sent[who].push_back({x, Sent::other, ""});
    } else {
      int32_t x = c.send(OpCode::exists, wire::PathWatchRequest{"/missing", false});
      sent[who].push_back({x, Sent::other, ""});
    }
    if (rng() % 8 == 0) h.sync_all_but(rng() % (h.unsynced.size() + 1));
  }
  h.sync();
  for (int i = 0; i < 10000 && !h.unsynced.empty(); ++i) h.sync();
  for (int who = 0; who < 2; ++who) {
    Client& c = *clients[who];
    for (const auto& s : sent[who]) {
      Reply r = c.next_reply();
      REQUIRE(r.header.xid == s.xid);
      if (s.kind == Sent::read) CHECK(value_of(r) == s.expect);
      if (s.kind == Sent::write) CHECK(r.err() == Err::ok);
    }
    CHECK(c.drain() == 0);  // watch events may follow the last reply; no other reply may
  }
  CHECK(h.server.outstanding() == 0);
}

TEST_CASE("reads behind writes a dropped connection left are answered with them gone, and garbage is refused") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/g", "0");
  h.defer_sync = true;
  a.send(OpCode::setData, wire::SetDataRequest{"/g", std::string("1"), -1});
  a.send(OpCode::getData, wire::PathWatchRequest{"/g", false});
  // A frame too short for a header behind a write in flight: it waits, then closes the
  // connection as it would have at once.
  a.send_raw(std::string("\x01\x02", 2));
  h.sync();
  CHECK(a.next_reply().err() == Err::ok);
  CHECK(value_of(a.next_reply()) == "1");
  CHECK(h.server.outstanding() == 0);
}

TEST_CASE("read_commitproc_time_ms counts each read with its wait, and no ConnectRequest") {
  Harness h;
  auto count = [&] {
    for (const auto& [name, s] : server::admin::summaries(h.server, server::FourLetterEnv{}))
      if (name == "read_commitproc_time_ms") return s->view().count;
    FAIL("no read_commitproc_time_ms");
    return int64_t{-1};
  };
  {
    // A ConnectRequest's bytes 4-8 are the high half of lastZxidSeen: epoch 3 reads as the
    // exists opcode, which must not count as a read (the server refuses a zxid it has not seen).
    Client stale(h);
    stale.connect(30000, 0, std::string(16, '\0'), wire::Zxid{3} << 32);
  }
  CHECK(count() == 0);
  Client a(h);
  REQUIRE(a.connect());
  h.defer_sync = true;  // from here, a write waits for sync()
  a.call(OpCode::exists, wire::PathWatchRequest{"/", false});
  CHECK(count() == 1);
  a.send(OpCode::create, wire::CreateRequest{"/w", "x", Client::open_acl(), 0});
  a.send(OpCode::getData, wire::PathWatchRequest{"/w", false});  // waits for the create
  h.advance(300);
  h.sync();
  CHECK(a.next_reply().err() == Err::ok);
  CHECK(a.next_reply().err() == Err::ok);
  CHECK(count() == 2);
  int64_t waited = 0;
  for (const auto& [name, s] : server::admin::summaries(h.server, server::FourLetterEnv{}))
    if (name == "read_commitproc_time_ms") waited = s->view().max;
  CHECK(waited >= 300);
}
