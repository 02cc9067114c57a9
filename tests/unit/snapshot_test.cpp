// Fuzzy snapshots: taken in chunks while writes go on, then loaded and brought up to date by
// the log after their start zxid.
#include <rocksdb/db.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>

#include "harness.hpp"
#include "server/backup/backup.hpp"
#include "server/config/config.hpp"
#include "server/state/snapshot_walk.hpp"

using namespace test;

namespace {
// Loads a snapshot and replays the log after it into a fresh server.
// As the store does, the records are loaded sorted by path.
void restore(Harness& into, std::vector<std::pair<std::string, std::string>> nodes,
             const std::vector<std::pair<std::string, std::string>>& sessions, wire::Zxid at,
             const std::vector<storage::LogEntry>& log) {
  std::sort(nodes.begin(), nodes.end());
  into.server.start_snapshot_load();
  for (const auto& [p, r] : nodes) REQUIRE(into.server.load_snapshot_node(p, r));
  for (const auto& [k, r] : sessions) REQUIRE(into.server.load_snapshot_session(k, r));
  into.server.finish_snapshot_load(at);
  for (const auto& e : log)
    if (e.zxid > at) into.server.replay(e.zxid, e.payload);
}
// Takes the walk's next chunk and splits it into (path, record) pairs.
std::vector<std::pair<std::string, std::string>> take(server::SnapshotWalk& walk, size_t max_nodes) {
  std::vector<std::pair<std::string, std::string>> out;
  auto chunk = walk.next_chunk(max_nodes);
  REQUIRE(server::for_each_in_chunk(chunk.second, [&](std::string_view p, std::string_view r) {
    out.emplace_back(p, r);
    return true;
  }));
  CHECK(out.size() <= max_nodes);
  return out;
}
// Where a snapshot loads: a fresh server's tree and sessions.
server::SnapshotSink sink_into(Harness& into) {
  return server::SnapshotSink{
      [&into] { into.server.start_snapshot_load(); },
      [&into](std::string_view p, std::string_view r) { return into.server.load_snapshot_node(p, r); },
      [&into](std::string_view k, std::string_view r) { return into.server.load_snapshot_session(k, r); }};
}
// Writes a whole snapshot of `h` through the store, `per_chunk` nodes a chunk, as the runtime
// does; returns its zxid.
wire::Zxid write_snapshot(storage::RocksDbLogStore& store, Harness& h, size_t per_chunk) {
  server::SnapshotWalk walk(h.server.tree());
  while (!walk.done())
    store.put_snapshot_records(walk.at(), storage::RocksDbLogStore::SnapshotPart::node, {walk.next_chunk(per_chunk)});
  store.put_snapshot_records(walk.at(), storage::RocksDbLogStore::SnapshotPart::session, h.server.session_records());
  store.finish_snapshot(walk.at(), std::to_string(walk.written()) + " nodes");
  return walk.at();
}
}  // namespace

TEST_CASE("a snapshot due by snapCount also waits for txns a share of the tree's size (snapTreePercent)") {
  using server::Config;
  using server::parse_config;
  using server::snapshot_due;
  CHECK(snapshot_due(1, 1000000, 0));  // 0: ZooKeeper's rule alone
  CHECK_FALSE(snapshot_due(249999, 1000000, 25));
  CHECK(snapshot_due(250000, 1000000, 25));
  CHECK(snapshot_due(10, 40, 25));
  CHECK_FALSE(snapshot_due(9, 40, 25));
  CHECK(snapshot_due(5, 0, 25));                    // an empty tree
  CHECK_FALSE(snapshot_due(1000, 1000000000, 1000000));  // no overflow at the key's largest value
  CHECK(std::get<Config>(parse_config("dataDir=/d\nclientPort=1\n", "f")).snap_tree_percent == 25);
  CHECK(std::get<Config>(parse_config("dataDir=/d\nclientPort=1\nsnapTreePercent=0\n", "f")).snap_tree_percent == 0);
  for (const char* bad : {"snapTreePercent=-1\n", "snapTreePercent=lots\n", "snapTreePercent=\n"}) {
    auto r = parse_config(std::string("dataDir=/d\nclientPort=1\n") + bad, "my.cfg");
    REQUIRE(std::holds_alternative<std::string>(r));
    CHECK(std::get<std::string>(r).rfind("my.cfg:3: snapTreePercent=", 0) == 0);
  }
}

TEST_CASE("a snapshot taken in chunks while writes go on, plus the log after it, rebuilds the same tree") {
  server::ServerOptions o;
  o.extended_types = true;
  Harness h(o);
  Client a(h), b(h);
  a.connect(40000);
  b.connect(40000);
  a.create("/a");
  for (int i = 0; i < 20; ++i) a.create("/a/n" + std::to_string(i), "v");
  a.create("/b");
  a.create("/b/x");
  a.create("/b/x/y", "deep");
  a.create("/q");
  b.create("/a/eph-b", "", 1);
  a.create("/c", "", 4, OpCode::createContainer);
  a.create("/c/kid");
  server::SnapshotWalk walk(h.server.tree());
  std::vector<std::pair<std::string, std::string>> nodes;
  int step = 0;
  while (!walk.done()) {
    for (auto& rec : take(walk, 3)) nodes.push_back(std::move(rec));
    switch (step++ % 7) {
      case 0: a.call(OpCode::remove, wire::DeleteRequest{"/a/n" + std::to_string(step), -1}); break;
      case 1: a.create("/a/new" + std::to_string(step), "fresh"); break;
      case 2: a.call(OpCode::setData, wire::SetDataRequest{"/b/x/y", std::to_string(step), -1}); break;
      case 3:  // a subtree goes and comes back, possibly between its parent's chunk and its own
        a.call(OpCode::remove, wire::DeleteRequest{"/b/x/y", -1});
        a.call(OpCode::remove, wire::DeleteRequest{"/b/x", -1});
        a.create("/b/x", "again");
        a.create("/b/x/y", "again");
        break;
      case 4: a.create("/q/s-", "", 2); break;
      case 5: a.call(OpCode::setACL, wire::SetACLRequest{"/a", {wire::Acl{31, wire::Id{"world", "anyone"}}}, -1}); break;
      case 6: a.create("/a/n0/under", "x"); break;
    }
  }
  b.call_raw(OpCode::closeSession, "");  // after the walk: its ephemeral goes in the log
  auto sessions = h.server.session_records();
  CHECK(walk.written() > 20);

  Harness restored(o, h.now);
  restore(restored, nodes, sessions, walk.at(), h.log.read_after(0));
  CHECK(restored.server.tree().digest() == h.server.tree().digest());
  CHECK(restored.server.tree().size() == h.server.tree().size());
  CHECK(restored.server.session_count() == h.server.session_count());
  // It goes on as the original would: sequential names, the container check, sessions.
  Client c(restored);
  c.connect();
  auto seq = wire::decode<wire::CreateResponse>(c.create("/q/s-", "", 2).body)->path;
  Client a2(h);
  a2.connect();
  CHECK(seq == wire::decode<wire::CreateResponse>(a2.create("/q/s-", "", 2).body)->path);
}

TEST_CASE("a node whose parent was gone when the walk reached it is left out at load") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/p");
  a.create("/p/c");
  server::SnapshotWalk walk(h.server.tree());
  // Walk node by node; once /p/c is written, /p/c and /p go and /p comes back, so /p may be
  // written without /p/c, or /p/c without /p: either way the load must agree with the log.
  std::vector<std::pair<std::string, std::string>> nodes;
  bool churned = false;
  while (!walk.done()) {
    for (auto& r : take(walk, 1)) {
      if (r.first == "/p/c" && !churned) {
        a.call(OpCode::remove, wire::DeleteRequest{"/p/c", -1});
        a.call(OpCode::remove, wire::DeleteRequest{"/p", -1});
        churned = true;
      }
      nodes.push_back(std::move(r));
    }
  }
  CHECK(churned);
  Harness restored({}, h.now);
  restore(restored, nodes, h.server.session_records(), walk.at(), h.log.read_after(0));
  CHECK(restored.server.tree().digest() == h.server.tree().digest());
}

TEST_CASE("a damaged snapshot record is refused") {
  Harness h;
  h.server.start_snapshot_load();
  CHECK_FALSE(h.server.load_snapshot_node("/", "\x01"));
  CHECK_FALSE(h.server.load_snapshot_node("no-slash", ""));
  CHECK_FALSE(h.server.load_snapshot_session("short", ""));
  auto accept = [](std::string_view, std::string_view) { return true; };
  CHECK(server::for_each_in_chunk("", accept));
  CHECK_FALSE(server::for_each_in_chunk(std::string("\0\0\0\x02/a\0\0", 8), accept));  // the record is cut
  CHECK_FALSE(server::for_each_in_chunk(std::string("\xff\xff\xff\xfe", 4), accept));      // a negative length
}

TEST_CASE("the walk meets every node that lives through it, whatever changes around it") {
  Harness h;
  Client a(h);
  a.connect();
  std::mt19937 rng(7);
  std::vector<std::string> stable, churn;
  for (int i = 0; i < 12; ++i) {
    std::string dir = "/d" + std::to_string(i);
    a.create(dir);
    stable.push_back(dir);
    for (int j = 0; j < 15; ++j) {
      std::string p = dir + "/k" + std::to_string(j);
      a.create(p, "v");
      (j % 3 == 0 ? churn : stable).push_back(p);  // a third of the leaves come and go
    }
  }
  server::SnapshotWalk walk(h.server.tree());
  std::vector<std::pair<std::string, std::string>> nodes;
  int fresh = 0;
  while (!walk.done()) {
    for (auto& r : take(walk, 1 + rng() % 4)) nodes.push_back(std::move(r));
    // Between chunks: delete or re-create a churning leaf, and add new siblings that sort
    // before and after the cursor.
    const auto& p = churn[rng() % churn.size()];
    if (h.server.tree().find(p))
      a.call(OpCode::remove, wire::DeleteRequest{p, -1});
    else
      a.create(p, "back");
    std::string dir = "/d" + std::to_string(rng() % 12);
    // Data of another length moves a node in memory (see znode.hpp): the walk must not care.
    size_t len = rng() % 7 == 0 ? 3000 : rng() % 300;  // sometimes past the node pool's largest size
    a.call(OpCode::setData, wire::SetDataRequest{stable[rng() % stable.size()], std::string(len, 'm'), -1});
    a.call(OpCode::setData, wire::SetDataRequest{rng() % 5 == 0 ? "/" : dir, std::string(rng() % 40, 'r'), -1});
    a.create(dir + "/a" + std::to_string(fresh), "new");
    a.create(dir + "/z" + std::to_string(fresh++), "new");
  }
  CHECK(walk.met_every_survivor());  // its own check holds under churn with deletes
  std::set<std::string> seen;
  for (const auto& [p, r] : nodes) CHECK(seen.insert(p).second);  // each node once
  for (const auto& p : stable) CHECK(seen.count(p) == 1);
  CHECK(seen.count("/") == 1);
  CHECK(seen.count("/zookeeper/quota") == 1);
  Harness restored({}, h.now);
  restore(restored, nodes, h.server.session_records(), walk.at(), h.log.read_after(0));
  CHECK(restored.server.tree().digest() == h.server.tree().digest());
}

TEST_CASE("loading a large snapshot reports its progress, and the tree comes back whole") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/big");
  for (int i = 0; i < 450; ++i) a.create("/big/n-", std::string(100, static_cast<char>('a' + i % 26)), 2);
  TempDir d;
  storage::RocksDbLogStore log(d.str(), false);
  server::SnapshotWalk walk(h.server.tree());
  while (!walk.done()) {
    auto chunk = walk.next_chunk(64);
    log.put_snapshot_records(walk.at(), storage::RocksDbLogStore::SnapshotPart::node, {std::move(chunk)});
  }
  log.finish_snapshot(walk.at(), std::to_string(walk.written()) + " nodes");
  Harness copy;
  std::vector<size_t> reported;
  auto sink = sink_into(copy);
  auto at = server::load_newest_snapshot(log, sink, [&](wire::Zxid z, size_t n) {
    CHECK(z == walk.at());
    reported.push_back(n);
  }, 100);
  copy.server.finish_snapshot_load(at);
  CHECK(walk.written() == 455);  // the root, /zookeeper and its two, /big and its 450
  CHECK(reported == std::vector<size_t>{100, 200, 300, 400});
  CHECK(copy.server.tree().size() == h.server.tree().size());
  CHECK(copy.server.tree().digest() == h.server.tree().digest());
}

// The runtime asks the walk for chunks for about half a millisecond at a time and takes an empty
// answer for the end of the walk. A thread preempted past that deadline before its first chunk
// once got an empty answer mid-walk, and the snapshot was finished with whole chunks only (it_crash
// loaded exactly 2000 and 4800 of ~5000 and ~6500 nodes). A deadline already passed must still
// give a chunk each call until the walk is done.
TEST_CASE("a walk asked for chunks past its deadline still gives one each call until it is done") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/wide");
  for (int i = 0; i < 500; ++i) a.create("/wide/n" + std::to_string(i), "x");
  server::SnapshotWalk walk(h.server.tree());
  auto past = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  size_t calls = 0, nodes = 0;
  for (;;) {
    auto chunks = walk.next_chunks(200, past);
    if (chunks.empty()) break;
    ++calls;
    CHECK(chunks.size() == 1);
    for (const auto& c : chunks)
      REQUIRE(server::for_each_in_chunk(c.second, [&](std::string_view, std::string_view) { return ++nodes, true; }));
  }
  CHECK(walk.done());
  CHECK(walk.met_every_survivor());
  CHECK(calls == 3);
  CHECK(nodes == h.server.tree().size());
  CHECK(walk.next_chunks(200, std::chrono::steady_clock::now() + std::chrono::seconds(1)).empty());
  // With time to spare, one call takes the whole tree.
  server::SnapshotWalk again(h.server.tree());
  CHECK(again.next_chunks(200, std::chrono::steady_clock::now() + std::chrono::hours(1)).size() == 3);
  CHECK(again.done());
  // A walk cut short fails its own check; removals meanwhile count for the nodes not met (all
  // of /wide's children here: with the 200 written they cover the 505 at the start).
  server::SnapshotWalk cut(h.server.tree());
  cut.next_chunk(200);
  CHECK_FALSE(cut.met_every_survivor());
  for (int i = 0; i < 500; ++i) a.call(OpCode::remove, wire::DeleteRequest{"/wide/n" + std::to_string(i), -1});
  CHECK(cut.met_every_survivor());
}

// A snapshot is written chunk by chunk and completed by a marker that counts its records. One
// that lost a chunk (or gained one) after it was finished must never load as if whole: the
// start passes it over for the one before it, whose log is still kept, and the tree comes
// back whole; a tool without that choice (no `unusable`) refuses it, naming the counts.
TEST_CASE("a snapshot missing a chunk is passed over for an older one, never loaded short") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/wide");
  TempDir d;
  wire::Zxid older, newer;
  {
    storage::RocksDbLogStore store(d.str(), false);
    for (int i = 0; i < 40; ++i) a.create("/wide/a" + std::to_string(i), "x");
    older = write_snapshot(store, h, 16);
    for (int i = 0; i < 40; ++i) a.create("/wide/b" + std::to_string(i), "y");
    Client b(h);
    b.connect();  // a session the older snapshot does not hold
    newer = write_snapshot(store, h, 16);
    auto counts = store.snapshot_record_counts(newer);
    REQUIRE(counts);
    CHECK(counts->node == 6);  // 85 nodes in chunks of 16
    CHECK(counts->session == 2);
  }
  {  // the newest snapshot's last chunk goes, as a storage fault would take it
    rocksdb::DB* db = nullptr;
    REQUIRE(rocksdb::DB::Open(rocksdb::Options(), d.str(), &db).ok());
    std::string k(1, 'S');
    for (int i = 0; i < 8; ++i) k.push_back(static_cast<char>(static_cast<uint64_t>(newer) >> (56 - 8 * i)));
    k.push_back('n');
    for (int i = 0; i < 8; ++i) k.push_back(static_cast<char>(i == 7 ? 5 : 0));
    std::string v;
    REQUIRE(db->Get(rocksdb::ReadOptions(), k, &v).ok());
    REQUIRE(db->Delete(rocksdb::WriteOptions(), k).ok());
    delete db;
  }
  storage::RocksDbLogStore store(d.str(), false);
  Harness copy({}, h.now);
  auto sink = sink_into(copy);
  CHECK_THROWS_WITH(server::load_newest_snapshot(store, sink),
                    Catch::Contains("holds 5 chunk and 2 session records where its marker says 6 and 2"));
  // Nor is a backup made from it: its end frame would count what was read, and check out.
  TempDir out;
  CHECK_THROWS_WITH(server::backup::write_backup(store, newer, (out.path / "short.backup").string()),
                    Catch::Contains("holds 5 chunk and 2 session records where its marker says 6 and 2: no backup"));
  std::vector<std::string> told;
  wire::Zxid at = server::load_newest_snapshot(store, sink, {}, 1000000, [&](const std::string& why) { told.push_back(why); });
  CHECK(at == older);
  CHECK(copy.server.session_count() == 1);  // the refused snapshot's sessions went with it
  REQUIRE(told.size() == 1);
  CHECK_THAT(told[0], Catch::Contains("trying the one before it"));
  copy.server.finish_snapshot_load(at);
  for (const auto& e : h.log.read_after(at)) copy.server.replay(e.zxid, e.payload);
  CHECK(copy.server.tree().size() == h.server.tree().size());
  CHECK(copy.server.tree().digest() == h.server.tree().digest());
}

// A crash between a snapshot's ingestion and its marker leaves its records behind without a
// marker. Another attempt at the same zxid (chunked differently: walks' boundaries differ)
// must not mix with them: its records alone make the snapshot.
TEST_CASE("a snapshot written again at the same zxid holds only the new attempt's records") {
  Harness h;
  Client a(h);
  a.connect();
  a.create("/wide");
  for (int i = 0; i < 60; ++i) a.create("/wide/n" + std::to_string(i), std::string(static_cast<size_t>(i % 7), 'v'));
  TempDir d;
  wire::Zxid at;
  {
    storage::RocksDbLogStore store(d.str(), false);
    at = write_snapshot(store, h, 3);  // 22 chunks
  }
  {  // its marker never came
    rocksdb::DB* db = nullptr;
    REQUIRE(rocksdb::DB::Open(rocksdb::Options(), d.str(), &db).ok());
    std::string k(1, 'M');
    for (int i = 0; i < 8; ++i) k.push_back(static_cast<char>(static_cast<uint64_t>(at) >> (56 - 8 * i)));
    REQUIRE(db->Delete(rocksdb::WriteOptions(), k).ok());
    delete db;
  }
  storage::RocksDbLogStore store(d.str(), false);
  CHECK(store.complete_snapshots().empty());
  CHECK(write_snapshot(store, h, 16) == at);  // 5 chunks
  CHECK(store.snapshot_record_counts(at) == storage::SnapshotStore::RecordCounts{5, 1});
  Harness copy({}, h.now);
  auto sink = sink_into(copy);
  REQUIRE(server::load_newest_snapshot(store, sink) == at);
  copy.server.finish_snapshot_load(at);
  CHECK(copy.server.tree().size() == h.server.tree().size());
  CHECK(copy.server.tree().find("/wide")->creates == h.server.tree().find("/wide")->creates);
}

// The shape of it_crash (which once lost the last few children of a wide node in CI): writers
// add names all over a node of a thousand children and more (many leaves of the child index),
// bump counters (nodes that move) and add sequential nodes, while snapshots go through the
// RocksDB store chunk by chunk, are purged, and the store is closed and opened again as a
// restart would. At random moments a fresh server recovers as a start does (the newest
// complete snapshot, loaded in the store's order, then the log after it) and must equal the
// live tree. WARDEN_SNAPSHOT_SEEDS sets how many histories run (default 12).
TEST_CASE("snapshots of a wide, busy node through the store always recover the live tree") {
  int seeds = 12;
  if (const char* s = std::getenv("WARDEN_SNAPSHOT_SEEDS")) seeds = std::max(1, std::atoi(s));
  for (int seed = 1; seed <= seeds; ++seed) {
    INFO("seed " << seed);
    std::mt19937 rng(static_cast<unsigned>(seed));
    Harness h;
    Client a(h);
    a.connect();
    a.create("/crash");
    a.create("/crash/seq");
    for (int k = 0; k < 3; ++k) a.create("/crash/counter-" + std::to_string(k), "none");
    TempDir d;
    auto store = std::make_unique<storage::RocksDbLogStore>(d.str(), false);
    std::unique_ptr<server::SnapshotWalk> walk;
    int until_snapshot = 100, round = 1, recoveries = 0;
    std::vector<int> next(3, 0);
    auto recover_and_compare = [&] {
      Harness copy({}, h.now);
      auto sink = sink_into(copy);
      wire::Zxid at = server::load_newest_snapshot(*store, sink);
      if (at == 0) return;
      copy.server.finish_snapshot_load(at);
      for (const auto& e : h.log.read_after(at)) copy.server.replay(e.zxid, e.payload);
      ++recoveries;
      REQUIRE(copy.server.tree().size() == h.server.tree().size());
      if (copy.server.tree().digest() != h.server.tree().digest()) {
        for (const auto& p : h.server.tree().sorted_paths()) {
          const auto* x = h.server.tree().find(p);
          const auto* y = copy.server.tree().find(p);
          if (!y) { WARN("missing " << p); continue; }
          if (x->data() != y->data() || x->czxid != y->czxid || x->mzxid != y->mzxid || x->pzxid != y->pzxid ||
              x->version != y->version || x->creates != y->creates || x->aversion != y->aversion || x->ctime != y->ctime || x->mtime != y->mtime)
            WARN("differs " << p << " data " << x->data() << "/" << y->data() << " czxid " << x->czxid << "/" << y->czxid
                 << " mzxid " << x->mzxid << "/" << y->mzxid << " pzxid " << x->pzxid << "/" << y->pzxid << " v " << x->version << "/" << y->version
                 << " creates " << x->creates << "/" << y->creates << " at " << at);
        }
      }
      REQUIRE(copy.server.tree().digest() == h.server.tree().digest());
    };
    for (int step = 0; step < 2500; ++step) {
      int k = static_cast<int>(rng() % 3);
      switch (rng() % 4) {
        case 0:
        case 1:
          a.create("/crash/w" + std::to_string(k) + "-r" + std::to_string(round) + "-" + std::to_string(++next[k]),
                   "x");
          break;
        case 2:
          a.call(OpCode::setData, wire::SetDataRequest{"/crash/counter-" + std::to_string(k),
                                                       std::to_string(round * 1000000 + next[k]), -1});
          break;
        case 3: a.create("/crash/seq/s-", "", 2); break;
      }
      if (--until_snapshot <= 0 && !walk) {
        until_snapshot = 100 + static_cast<int>(rng() % 100);
        walk = std::make_unique<server::SnapshotWalk>(h.server.tree());
      }
      if (walk) {  // a few chunks between writes, of sizes the runtime and smaller ones use
        for (int c = static_cast<int>(rng() % 3); c > 0 && !walk->done(); --c) {
          size_t n = rng() % 2 ? 200 : 1 + rng() % 70;
          store->put_snapshot_records(walk->at(), storage::RocksDbLogStore::SnapshotPart::node,
                                      {walk->next_chunk(n)});
        }
        if (walk->done()) {
          CHECK(walk->met_every_survivor());
          store->put_snapshot_records(walk->at(), storage::RocksDbLogStore::SnapshotPart::session,
                                      h.server.session_records());
          store->finish_snapshot(walk->at(), std::to_string(walk->written()) + " nodes");
          walk.reset();
        }
      }
      if (rng() % 250 == 0) {  // a restart: what is being built is lost, old snapshots are purged
        walk.reset();
        store.reset();
        store = std::make_unique<storage::RocksDbLogStore>(d.str(), false);
        store->purge(3);
        std::fill(next.begin(), next.end(), 0);
        ++round;
      }
      if (rng() % 50 == 0) recover_and_compare();
    }
    recover_and_compare();
    CHECK(recoveries > 10);
  }
}

TEST_CASE("a walk's chunks and batches stay near a megabyte however large the nodes") {
  Harness h;
  Client a(h);
  a.connect(40000);
  a.create("/big");
  std::string data(900 * 1024, 'd');
  for (int i = 0; i < 12; ++i) a.create("/big/n" + std::to_string(i), data);
  server::SnapshotWalk walk(h.server.tree());
  size_t chunks = 0, nodes = 0;
  while (!walk.done()) {
    auto batch = walk.next_chunks(200, std::chrono::steady_clock::now() + std::chrono::hours(1));
    size_t batch_bytes = 0;
    for (const auto& [k, v] : batch) {
      ++chunks;
      batch_bytes += v.size();
      // One node larger than the bound goes alone; else a chunk ends once past a megabyte.
      CHECK(v.size() < server::SnapshotWalk::max_chunk_bytes + data.size() + 1024);
      server::for_each_in_chunk(v, [&](std::string_view, std::string_view) {
        ++nodes;
        return true;
      });
    }
    CHECK(batch_bytes < server::SnapshotWalk::max_batch_bytes + server::SnapshotWalk::max_chunk_bytes + data.size());
  }
  CHECK(nodes == h.server.tree().size());
  CHECK(chunks >= 6);  // not one chunk of 200 nodes: about two of these nodes per chunk
}

TEST_CASE("ZooKeeper's digest, kept as txns apply, is the tree's through every kind of txn and a load") {
  server::ServerOptions o;
  o.extended_types = true;
  Harness h(o);
  auto same = [&](const char* after) {
    INFO("after " << after);
    CHECK(h.server.tree().zk_digest() == h.server.tree().zk_digest_full());
    CHECK(h.server.tree().zk_digest_parts_agree());
  };
  uint64_t empty = h.server.tree().zk_digest();
  same("nothing");
  Client a(h), b(h);
  a.connect(40000);
  b.connect(4000);
  a.create("/a", "data");
  same("a create");
  a.create("/a/seq-", "", 2);
  a.create("/a/seq-", "x", 2);
  same("sequential creates (the parent's cversion and pzxid move)");
  b.create("/a/eph", "e", 1);
  b.create("/a/eph2", "", 1);
  same("ephemerals");
  a.create("/c", "", 4, OpCode::createContainer);
  a.create("/c/kid");
  same("a container");
  a.call(OpCode::setData, wire::SetDataRequest{"/a", std::string("new data, longer than before"), -1});
  a.call(OpCode::setData, wire::SetDataRequest{"/a", std::nullopt, -1});
  same("setData, to null");
  a.call(OpCode::setACL, wire::SetACLRequest{"/a", Client::open_acl(), -1});
  same("setACL (aversion)");
  a.call(OpCode::remove, wire::DeleteRequest{"/c/kid", -1});
  same("a delete");
  std::vector<wire::MultiOp> ops{
      {OpCode::create, wire::CreateRequest{"/m", std::nullopt, Client::open_acl(), 0}},
      {OpCode::create, wire::CreateRequest{"/m/x", std::string("mx"), Client::open_acl(), 0}},
      {OpCode::setData, wire::SetDataRequest{"/m", std::string("v"), 0}},
      {OpCode::remove, wire::DeleteRequest{"/a/seq-0000000000", -1}},
  };
  REQUIRE(a.call_raw(OpCode::multi, wire::encode_multi_request(ops)).err() == Err::ok);
  same("a multi");
  a.create("/zookeeper/quota/a", "");
  same("a node under /zookeeper/ (it counts 0)");
  uint64_t before_close = h.server.tree().zk_digest();
  h.advance(20000);  // b's session (4 s) expires: its ephemerals go in a closeSession
  REQUIRE_FALSE(h.server.tree().find("/a/eph"));
  same("a session's expiry");
  CHECK(h.server.tree().zk_digest() != before_close);
  CHECK(h.server.tree().zk_digest() != empty);
  // A snapshot and the log after it load to the same digest.
  server::SnapshotWalk walk(h.server.tree());
  std::vector<std::pair<std::string, std::string>> nodes;
  while (!walk.done()) {
    auto more = take(walk, 3);
    nodes.insert(nodes.end(), more.begin(), more.end());
  }
  Harness restored(o);
  restore(restored, nodes, h.server.session_records(), walk.at(), {});
  CHECK(restored.server.tree().zk_digest() == h.server.tree().zk_digest());
  CHECK(restored.server.tree().zk_digest_parts_agree());
}

TEST_CASE("a complete snapshot is never cleared to write another at its zxid") {
  // Issue 45, point 4: clearing it first left the log's base with no complete snapshot until
  // the new one was in; a crash or an ingest error between lost the state up to it.
  Harness h;
  Client a(h);
  a.connect();
  for (int i = 0; i < 20; ++i) a.create("/n" + std::to_string(i), "v");
  TempDir d;
  storage::RocksDbLogStore store(d.str(), false);
  wire::Zxid at = write_snapshot(store, h, 4);
  auto counts = store.snapshot_record_counts(at);
  CHECK_THROWS_WITH(write_snapshot(store, h, 16), Catch::Contains("is in") && Catch::Contains("not written again"));
  CHECK_THROWS_WITH(store.finish_snapshot(at, ""), Catch::Contains("not written again"));
  CHECK(store.complete_snapshots() == std::vector<wire::Zxid>{at});
  CHECK(store.snapshot_record_counts(at) == counts);
  Harness copy({}, h.now);
  auto sink = sink_into(copy);
  REQUIRE(server::load_newest_snapshot(store, sink) == at);
  copy.server.finish_snapshot_load(at);
  CHECK(copy.server.tree().size() == h.server.tree().size());
}
