// The pipeline's side of the consensus seam, with a replicator the test drives: commits are
// matched to this server's proposals by zxid; txns it did not prepare (a follower's case) are
// applied and answer nobody; proposals a commit passed by, or in flight when leadership is lost,
// end their clients' connections (their outcome is not known to this server).
#include "harness.hpp"
#include <random>

#include "server/pipeline/forward.hpp"
#include "server/state/txn.hpp"

using namespace test;

namespace {
// Hands out zxids and commits only when the test says so.
struct ScriptedReplicator final : consensus::Replicator {
  CommitHandler on_commit;
  std::map<wire::Zxid, std::string> proposed;
  wire::Zxid next = consensus::make_zxid(1, 1), committed = 0;
  void set_commit_handler(CommitHandler h) override { on_commit = std::move(h); }
  std::optional<wire::Zxid> propose(std::string payload) override {
    proposed[next] = std::move(payload);
    return next++;
  }
  wire::Zxid last_committed() const override { return committed; }
  void start(wire::Zxid) override {}
  void durable(wire::Zxid) override {}  // commits come from the script alone
  void commit(wire::Zxid z, const std::string& payload) {
    committed = z;
    on_commit(z, payload);
  }
  void commit_own(wire::Zxid z) { commit(z, proposed.at(z)); }
};

std::string foreign_create(const std::string& path) {
  server::Txn t;
  t.session = 0x7700000000000001;
  t.time = 1'700'000'000'000;
  t.type = static_cast<int32_t>(OpCode::create);
  t.body = server::CreateTxn{path, std::string("from the leader"), Client::open_acl(), 0, 1};
  return server::encode_txn(t);
}

struct Scripted {
  int64_t now = 1'700'000'000'000;
  ScriptedReplicator rep;
  server::RequestPipeline server{server::ServerOptions{}, rep, [this] { return now; }};
};

// A client of the scripted server: the harness's Client needs a Harness, so this one is raw.
struct Conn {
  FakeLink link;
  server::ConnId id;
  Scripted& s;
  explicit Conn(Scripted& sc) : s(sc) { id = s.server.open(&link); }
  void send(OpCode op, const std::string& body, int32_t xid) {
    s.server.receive(id, wire::encode(wire::RequestHeader{xid, static_cast<int32_t>(op)}) + body);
  }
};

// Connects `c`: its session is a txn, committed at once.
void connect(Conn& c) {
  c.s.server.receive(c.id, wire::encode_connect_request({0, 0, 30000, 0, std::string(16, '\0'), false}));
  c.s.rep.commit_own(c.s.rep.next - 1);
  REQUIRE(c.link.frames.size() == 1);
  c.link.frames.clear();
}
}  // namespace

TEST_CASE("a txn this server did not prepare is applied, fires watches and answers nobody") {
  Scripted s;
  Conn c(s);
  connect(c);
  c.send(OpCode::exists, wire::encode(wire::PathWatchRequest{"/from-leader", true}), 5);
  REQUIRE(c.link.frames.size() == 1);  // NoNode, and a watch
  c.link.frames.clear();
  s.rep.commit(consensus::make_zxid(1, 50), foreign_create("/from-leader"));
  REQUIRE(s.server.tree().find("/from-leader"));
  CHECK(s.server.tree().last_applied() == consensus::make_zxid(1, 50));
  REQUIRE(c.link.frames.size() == 1);  // the event, and no reply to anyone
  auto scan = wire::scan_frame(c.link.frames.front(), wire::default_max_buffer);
  wire::Reader r(scan.payload);
  wire::ReplyHeader h;
  h.visit(r);
  CHECK(h.xid == wire::xid::notification);
}

TEST_CASE("commits are matched by zxid: a proposal of ours that a commit passed by ends its connection") {
  Scripted s;
  Conn c(s), d(s);
  connect(c);
  connect(d);
  c.send(OpCode::create, wire::encode(wire::CreateRequest{"/mine", std::nullopt, Client::open_acl(), 0}), 7);
  wire::Zxid mine = s.rep.next - 1;
  CHECK(c.link.frames.empty());
  // The new leader's history holds another txn at a higher zxid, and not ours.
  s.rep.commit(mine + 1, foreign_create("/theirs"));
  CHECK(c.link.closed);  // its outcome is unknown here: a lost connection
  CHECK(c.link.frames.empty());
  CHECK_FALSE(s.server.tree().find("/mine"));
  CHECK(s.server.tree().find("/theirs"));
  CHECK(s.server.outstanding() == 0);
  // The other client's next write goes on as usual.
  d.send(OpCode::create, wire::encode(wire::CreateRequest{"/d", std::nullopt, Client::open_acl(), 0}), 8);
  s.rep.commit_own(s.rep.next - 1);
  CHECK(s.server.tree().find("/d"));
  CHECK(d.link.frames.size() == 1);
}

TEST_CASE("when leadership is lost, clients with writes in flight see a lost connection") {
  Scripted s;
  Conn c(s);
  connect(c);
  c.send(OpCode::create, wire::encode(wire::CreateRequest{"/p", std::nullopt, Client::open_acl(), 0}), 9);
  c.send(OpCode::create, wire::encode(wire::CreateRequest{"/p/child", std::nullopt, Client::open_acl(), 0}), 10);
  s.server.leadership_lost();
  CHECK(c.link.closed);
  CHECK(s.server.outstanding() == 0);
  CHECK(s.server.prep_overlay_size() == 0);
  // If the next leader commits the first after all, it applies as any txn would.
  s.rep.commit_own(consensus::make_zxid(1, 2));
  CHECK(s.server.tree().find("/p"));
}

TEST_CASE("a restart replays the log to the commit mark, and the core commits the rest as it leads") {
  Harness before;
  Client a(before);
  a.connect();
  a.create("/one");
  a.create("/two");
  a.create("/three");
  auto entries = before.log.read_after(0);
  REQUIRE(entries.size() == 4);  // the session and three creates

  storage::MemoryLogStore store;
  store.append(entries);
  store.set_replica_state({1, 1, entries[1].zxid});  // the mark lags: only "/one" is known applied
  consensus::ZabReplicator rep(store, [&](storage::LogEntry e) { store.append({e}); });
  int64_t now = before.now;
  server::RequestPipeline server(server::ServerOptions{}, rep, [&] { return now; });
  for (const auto& e : entries)
    if (e.zxid <= store.replica_state().commit_mark) server.replay(e.zxid, e.payload);
  CHECK(server.tree().find("/one"));
  CHECK_FALSE(server.tree().find("/three"));
  rep.start(server.tree().last_applied());
  CHECK(server.tree().find("/three"));
  CHECK(server.tree().last_applied() == entries.back().zxid);
  CHECK(server.tree().digest() == before.server.tree().digest());
  CHECK(store.replica_state().commit_mark == entries.back().zxid);
}

TEST_CASE("a leader drops forwarded requests that are garbage, and prepares the ones that are not") {
  Scripted s;
  std::mt19937_64 rng(11);
  server::Forwarded good;
  good.kind = server::Forwarded::request;
  good.session = 0x7700000000000001;
  good.cxid = 5;
  good.type = static_cast<int32_t>(OpCode::create);
  good.body = wire::encode(wire::CreateRequest{"/fwd", std::string("x"), Client::open_acl(), 0});
  std::string bytes = server::encode_forwarded(good);
  // Random bytes, every truncation of a valid one, and valid ones with bytes flipped: logged
  // and dropped, or turned into a txn (an ErrorTxn for a session it does not know); never a crash.
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng());
    s.server.receive_forwarded(2, junk);
  }
  for (size_t n = 0; n < bytes.size(); ++n) s.server.receive_forwarded(2, bytes.substr(0, n));
  for (int i = 0; i < 2000; ++i) {
    std::string flipped = bytes;
    flipped[rng() % flipped.size()] ^= static_cast<char>(1 + rng() % 255);
    s.server.receive_forwarded(2, flipped);
  }
  // A well-formed one is prepared and proposed: its session is unknown here, so its txn is an
  // error (the member that sent it answers its client with it).
  size_t before = s.rep.proposed.size();
  s.server.receive_forwarded(2, bytes);
  REQUIRE(s.rep.proposed.size() == before + 1);
  auto txn = server::decode_txn(s.rep.proposed.rbegin()->second);
  REQUIRE(txn);
  CHECK(txn->session == good.session);
  CHECK(txn->cxid == 5);
}
