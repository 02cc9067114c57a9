// The Zab core driven by hand, as scripts: peers exchange their Ready messages through a tiny
// in-memory network, logs are vectors, durability comes when the script says. The seeded
// simulator (tests/sim) covers the histories; these pin single behaviours.
#include <catch2/catch.hpp>

#include <deque>
#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "consensus/memory_log.hpp"
#include "consensus/peer_codec.hpp"
#include "consensus/replicator.hpp"
#include "consensus/zab_peer.hpp"
#include "storage/log_store.hpp"

using namespace warden::consensus;

namespace {

// A memory log that can also hold entries below its snapshot (a purge keeps the log after its
// oldest snapshot, not its newest), with sizes for the DIFF-or-SNAP rule.
struct MemLog : MemoryLog {
  std::optional<Zxid> base_at;  // none: the snapshot is the base
  uint64_t snap_bytes = 0;
  Zxid base() const override { return base_at.value_or(snap_zxid); }
  Zxid floor(Zxid z) const override {
    if (z < base()) return 0;
    Zxid out = base();
    for (const auto& e : log)
      if (e.zxid <= z) out = std::max(out, e.zxid);
    return out;
  }
  uint64_t bytes(Zxid after, Zxid upto) const override {
    uint64_t n = 0;
    for (const auto& e : log)
      if (e.zxid > after && e.zxid <= upto) n += e.payload.size();
    return n;
  }
  uint64_t snapshot_bytes() const override { return snap_bytes; }
};

// Peers 1..n, all voters. Messages go through the codec; `cut` holds servers that send and
// receive nothing; `auto_durable` makes every append durable at once.
struct Net {
  std::map<PeerId, MemLog> logs;
  std::map<PeerId, std::unique_ptr<ZabPeer>> peers;
  std::map<PeerId, Epochs> epochs;
  std::map<PeerId, Zxid> committed;
  std::deque<std::pair<PeerId, std::pair<PeerId, std::string>>> wire;  // (to, (from, bytes))
  std::set<PeerId> cut;
  std::set<std::pair<PeerId, PeerId>> dropped;  // (from, to): messages lost on that way only
  bool auto_durable = true;
  std::map<PeerId, std::vector<std::pair<PeerId, std::string>>> requests;  // what each leader was forwarded

  // Host-streamed syncs (PeerConfig::stream_sync): this net plays the host, sending a streamed
  // Sync's entries as SyncData frames of `frame_entries`; `lose_frame` drops that frame.
  bool stream = false;
  size_t frame_entries = 2;
  int lose_frame = -1;
  std::map<PeerId, std::vector<pb::Sync::Mode>> syncs;  // the modes each member was synced with
  std::map<PeerId, std::pair<Zxid, bool>> installed;    // snapshots installed: zxid, streamed
  std::map<PeerId, int> resets;                          // times a member emptied its log and tree
  std::map<PeerId, std::vector<std::string>> notes;      // what each core said an operator must hear
  // Each member's synced mark as its Ready said it, in order, and whether a reset came while
  // the mark was still set (a host must persist the unsynced mark before emptying its store).
  std::map<PeerId, std::vector<bool>> synced_marks;
  std::map<PeerId, int> resets_while_synced;
  std::map<PeerId, std::vector<std::pair<Zxid, uint64_t>>> leader_digests;  // what each heard in pings
  std::map<PeerId, std::vector<uint32_t>> ensemble_versions;  // each change of the ensemble version

  explicit Net(int n, std::map<PeerId, std::vector<Entry>> start = {}, std::map<PeerId, Epochs> e = {},
               std::function<void(PeerId, PeerConfig&, MemLog&)> setup = nullptr,
               std::map<PeerId, Zxid> commit_marks = {}) {
    PeerConfig base;
    for (int i = 1; i <= n; ++i) base.ensemble.voters.push_back(i);
    for (int i = 1; i <= n; ++i) {
      logs[i].log = start[i];
      epochs[i] = e[i];
      PeerConfig c = base;
      c.id = i;
      if (setup) setup(i, c, logs[i]);
      stream = stream || c.stream_sync;
      peers[i] = std::make_unique<ZabPeer>(c, logs[i], e[i], commit_marks[i]);
    }
    for (int i = 1; i <= n; ++i) drain(i);
  }
  void send(PeerId from, PeerId to, const pb::PeerMessage& m) {
    if (!cut.count(from) && !cut.count(to) && !dropped.count({from, to}))
      wire.push_back({to, {from, encode_peer_message(m)}});
  }
  void drain(PeerId id) {
    Ready r = peers[id]->ready();
    if (r.epochs) epochs[id] = *r.epochs;
    for (auto& n : r.notes) notes[id].push_back(n);
    if (r.synced) synced_marks[id].push_back(*r.synced);
    if (r.leader_digest) leader_digests[id].push_back(*r.leader_digest);
    if (r.ensemble_version) ensemble_versions[id].push_back(*r.ensemble_version);
    if (r.reset && (synced_marks[id].empty() || synced_marks[id].back())) ++resets_while_synced[id];
    if (r.reset) {  // the host empties the log, its snapshot and the tree
      logs[id].log.clear();
      logs[id].snap_zxid = 0;
      logs[id].base_at.reset();
      ++resets[id];
    }
    if (r.truncate_after)
      logs[id].truncate_after(*r.truncate_after);
    if (r.snapshot) {
      // The state machine is opaque here: the snapshot's zxid is what matters.
      logs[id].log.clear();
      logs[id].snap_zxid = r.snapshot->first;
      logs[id].base_at.reset();
      installed[id] = {r.snapshot->first, r.snapshot_streamed};
    }
    for (auto& e : r.append) logs[id].log.push_back(e);
    for (auto& [to, m] : r.messages) {
      if (m.has_sync()) syncs[to].push_back(m.sync().mode());
      send(id, to, m);
      if (!m.has_sync() || !m.sync().streamed()) continue;
      // The host's part: the entries after the Sync, in frames, before anything else.
      auto all = logs[id].entries(m.sync().trunc_after(), m.sync().sync_last(), SIZE_MAX, SIZE_MAX);
      int n = 0;
      for (size_t i = 0; i < all.size(); i += frame_entries, ++n) {
        pb::PeerMessage f;
        f.set_version(oldest_protocol);
        f.set_from(id);
        f.set_epoch(m.epoch());
        f.set_link(m.link());
        f.mutable_sync_data()->set_after(i == 0 ? m.sync().trunc_after() : all[i - 1].zxid);
        for (size_t j = i; j < std::min(all.size(), i + frame_entries); ++j) {
          auto* pe = f.mutable_sync_data()->add_entries();
          pe->set_zxid(all[j].zxid);
          pe->set_payload(all[j].payload);
        }
        if (n != lose_frame) send(id, to, f);
      }
    }
    committed[id] = r.committed;
    for (auto& q : r.requests) requests[id].push_back(std::move(q));
    if (auto_durable && (!r.append.empty() || r.truncate_after)) {
      peers[id]->durable(logs[id].last_zxid());
      drain(id);
    }
  }
  void deliver_all(int limit = 100000) {
    while (!wire.empty() && limit-- > 0) {
      auto [to, msg] = wire.front();
      wire.pop_front();
      if (cut.count(to) || !peers.count(to)) continue;  // a stranger a test speaks for hears nothing
      auto d = decode_peer_message(msg.second);
      REQUIRE(d.message);
      peers[to]->receive(msg.first, *d.message);
      drain(to);
    }
  }
  void ticks(int n) {
    for (int t = 0; t < n; ++t) {
      for (auto& [id, p] : peers) {
        if (cut.count(id)) continue;
        p->tick(static_cast<uint64_t>(t));
        drain(id);
      }
      deliver_all();
    }
  }
  // Lets the ensemble elect and establish a leader; returns it (0: none).
  PeerId settle() {
    deliver_all();
    ticks(10);
    return leader();
  }
  PeerId leader() const {
    for (const auto& [id, p] : peers)
      if (p->role() == Role::leading && p->serving() && !cut.count(id)) return id;
    return 0;
  }
};

Entry entry(uint32_t epoch, uint32_t counter, std::string p = "x") { return Entry{make_zxid(epoch, counter), p}; }

std::vector<Entry> history(uint32_t epoch, uint32_t upto) {
  std::vector<Entry> h;
  for (uint32_t c = 1; c <= upto; ++c) h.push_back(entry(epoch, c));
  return h;
}

// One voter of five, alone: a test feeds it hand-made messages.
struct OnePeer {
  MemoryLog log;
  std::unique_ptr<ZabPeer> peer;
  OnePeer(PeerId id, std::vector<Entry> entries, Epochs epochs) {
    PeerConfig c;
    c.id = id;
    c.ensemble.voters = {1, 2, 3, 4, 5};
    log.log = std::move(entries);
    peer = std::make_unique<ZabPeer>(c, log, epochs, 0);
    (void)peer->ready();
  }
};

// A vote as a peer sends it.
pb::PeerMessage vote(PeerId from, uint64_t round, PeerId leader, Zxid zxid, uint32_t epoch, pb::PeerState state) {
  pb::PeerMessage m;
  m.set_version(oldest_protocol);
  m.set_from(from);
  auto* v = m.mutable_vote();
  v->set_round(round);
  v->set_leader(leader);
  v->set_zxid(zxid);
  v->set_epoch(epoch);
  v->set_state(state);
  return m;
}

}  // namespace

TEST_CASE("peer messages: garbage is an error naming the problem, never a crash") {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    auto d = decode_peer_message(junk);
    CHECK((d.message.has_value() || !d.error.empty()));
  }
  pb::PeerMessage m;
  m.set_version(oldest_protocol);
  CHECK(decode_peer_message(encode_peer_message(m)).error == "no body");
  m.mutable_ack()->set_zxid(-5);
  CHECK(decode_peer_message(encode_peer_message(m)).error == "a negative zxid");
  m.mutable_ack()->set_zxid(5);
  REQUIRE(decode_peer_message(encode_peer_message(m)).message);
  // Ranges that do not meet this build's 2 to 3 are refused, the line naming both.
  m.set_version(newest_protocol + 1);
  CHECK(decode_peer_message(encode_peer_message(m)).error == "it speaks peer protocol 4, this member 2 to 3");
  m.set_version(1);
  CHECK(decode_peer_message(encode_peer_message(m)).error == "it speaks peer protocol 1, this member 2 to 3");
  m.set_speaks(2);  // a newer build that speaks 1 to 2 meets it at 2
  CHECK(decode_peer_message(encode_peer_message(m)).message);
  m.set_version(3);  // an oldest above the newest is garbage
  CHECK(decode_peer_message(encode_peer_message(m)).error == "it speaks peer protocol 3 to 2, this member 2 to 3");
  m.set_speaks(0);
  m.set_version(oldest_protocol);
  auto* p = m.mutable_proposal();
  p->add_entries()->set_zxid(9);
  p->add_entries()->set_zxid(3);
  CHECK(decode_peer_message(encode_peer_message(m)).error.find("not in ascending") != std::string::npos);
  {  // a streamed sync's frames
    pb::PeerMessage f;
    f.set_version(oldest_protocol);
    f.mutable_sync_data()->set_after(7);
    f.mutable_sync_data()->add_entries()->set_zxid(7);
    CHECK(decode_peer_message(encode_peer_message(f)).error.find("after its start") != std::string::npos);
    f.mutable_sync_data()->mutable_entries(0)->set_zxid(8);
    CHECK(decode_peer_message(encode_peer_message(f)).message);
    f.mutable_sync_data()->set_after(-1);
    CHECK(decode_peer_message(encode_peer_message(f)).error == "sync data with a negative zxid");
    pb::PeerMessage c;
    c.set_version(oldest_protocol);
    c.mutable_snap_chunk()->set_zxid(5);
    c.mutable_snap_chunk()->set_part('x');
    CHECK(decode_peer_message(encode_peer_message(c)).error == "a snapshot chunk of an unknown part");
    c.mutable_snap_chunk()->set_part('s');
    CHECK(decode_peer_message(encode_peer_message(c)).message);
    c.mutable_snap_chunk()->set_end(true);
    c.mutable_snap_chunk()->set_digest_from(-3);
    CHECK(decode_peer_message(encode_peer_message(c)).error == "a negative zxid");
    c.mutable_snap_chunk()->set_digest_from(9);
    CHECK(decode_peer_message(encode_peer_message(c)).message);
    c.mutable_snap_chunk()->set_zxid(0);
    CHECK(decode_peer_message(encode_peer_message(c)).error == "a snapshot chunk without a zxid");
  }
  {  // configurations in votes
    pb::PeerMessage v = vote(1, 1, 1, 0, 0, pb::LOOKING);
    auto* c = v.mutable_vote()->mutable_config();
    CHECK(decode_peer_message(encode_peer_message(v)).error == "a configuration without voters");
    c->add_voters(1);
    c->add_observers(2);
    CHECK(decode_peer_message(encode_peer_message(v)).message);
    c->add_voters(2);
    CHECK(decode_peer_message(encode_peer_message(v)).error == "a configuration naming server 2 twice");
    c->clear_observers();
    c->set_version(-3);
    CHECK(decode_peer_message(encode_peer_message(v)).error == "a configuration with a negative version");
    c->set_version(1);
    c->add_voters(900);
    CHECK(decode_peer_message(encode_peer_message(v)).message);  // a reconfig may name any id
    c->add_voters(int64_t{1} << 40);
    CHECK(decode_peer_message(encode_peer_message(v)).error == "a configuration naming server id 1099511627776");
    c->clear_voters();
    c->add_voters(1);
    v.mutable_vote()->mutable_pending()->add_observers(3);
    CHECK(decode_peer_message(encode_peer_message(v)).error == "a configuration without voters");
  }
  std::string whole = encode_peer_message(m);
  for (size_t cut = 0; cut < whole.size(); ++cut) {  // every truncation of a valid message
    auto d = decode_peer_message(std::string_view(whole).substr(0, cut));
    CHECK((d.message.has_value() || !d.error.empty()));
  }
}

TEST_CASE("a lone voter leads at once and commits a proposal once its own log holds it durably") {
  MemLog log;
  PeerConfig c;
  c.id = 1;
  c.ensemble.voters = {1};
  ZabPeer p(c, log, Epochs{}, 0);
  p.tick(0);
  p.tick(0);
  Ready r = p.ready();
  REQUIRE(p.role() == Role::leading);
  REQUIRE(r.epochs);
  CHECK(r.epochs->accepted == 1);
  CHECK(r.epochs->current == 1);
  CHECK(p.serving());
  auto z = p.propose("t1");
  REQUIRE(z);
  CHECK(*z == make_zxid(1, 1));
  r = p.ready();
  REQUIRE(r.append.size() == 1);
  CHECK(r.committed == 0);  // not durable yet
  log.log.push_back(r.append[0]);
  p.durable(*z);
  CHECK(p.ready().committed == *z);
}

TEST_CASE("the server with the newest history wins, and a follower's uncommitted txns are cut (TRUNC)") {
  // Server 3 holds an epoch-1 txn nobody else has (never committed); 1 and 2 moved on to epoch 2.
  std::map<PeerId, std::vector<Entry>> logs{{1, {entry(1, 1), entry(2, 1)}},
                                            {2, {entry(1, 1), entry(2, 1)}},
                                            {3, {entry(1, 1), entry(1, 2, "lost")}}};
  std::map<PeerId, Epochs> e{{1, {2, 2}}, {2, {2, 2}}, {3, {1, 1}}};
  Net net(3, logs, e);
  net.deliver_all();
  net.ticks(20);
  PeerId l = net.leader();
  CHECK((l == 1 || l == 2));  // never 3: its history is older
  REQUIRE(net.peers[3]->serving());
  // 3 now holds the leader's history: its epoch-1 extra is gone.
  CHECK(net.logs[3].log.size() == 2);
  CHECK(net.logs[3].log[1].zxid == make_zxid(2, 1));
  CHECK(net.epochs[3].current == net.epochs[l].current);
}

TEST_CASE("a proposal commits once a quorum holds it durably, and the commit reaches followers") {
  Net net(3);
  PeerId l = net.settle();
  REQUIRE(l != 0);
  net.auto_durable = false;
  auto z = net.peers[l]->propose("w");
  REQUIRE(z);
  net.drain(l);
  net.deliver_all();
  CHECK(net.committed[l] < *z);  // no one is durable yet
  PeerId f = l == 1 ? 2 : 1;
  net.peers[f]->durable(*z);  // one follower's disk only
  net.drain(f);
  net.deliver_all();
  CHECK(net.committed[l] < *z);  // the follower alone, without the leader, is one of three
  net.peers[l]->durable(*z);
  net.drain(l);
  net.deliver_all();
  CHECK(net.committed[l] == *z);
  net.ticks(1);  // the commit travels
  CHECK(net.committed[f] == *z);
}

TEST_CASE("a follower forwards requests to its leader on the link, in order; without a leader it cannot") {
  Net net(3);
  PeerId l = net.settle();
  REQUIRE(l != 0);
  PeerId f = l == 1 ? 2 : 1;
  CHECK_FALSE(net.peers[l]->forward("the leader has no one to forward to"));
  REQUIRE(net.peers[f]->forward("first"));
  REQUIRE(net.peers[f]->forward("second"));
  net.drain(f);
  net.deliver_all();
  REQUIRE(net.requests[l].size() == 2);
  CHECK(net.requests[l][0] == std::make_pair(f, std::string("first")));
  CHECK(net.requests[l][1] == std::make_pair(f, std::string("second")));
  // Cut off, the follower gives up its leader and refuses to forward until it follows again.
  net.cut.insert(l);
  net.ticks(8);
  CHECK_FALSE(net.peers[l]->forward("x"));
  PeerId again = net.settle();
  REQUIRE(again != 0);
  PeerId g = 0;
  for (PeerId i = 1; i <= 3; ++i)
    if (i != again && i != l) g = i;
  CHECK(net.peers[g]->forward("to the new leader"));
  net.drain(g);
  net.deliver_all();
  REQUIRE_FALSE(net.requests[again].empty());
  CHECK(net.requests[again].back().second == "to the new leader");
}

TEST_CASE("a leader that cannot hear a quorum within syncLimit stops leading and takes no writes") {
  Net net(3);
  PeerId l = net.settle();
  REQUIRE(l != 0);
  for (PeerId i = 1; i <= 3; ++i)
    if (i != l) net.cut.insert(i);  // the leader is alone
  net.ticks(7);                     // syncLimit is 5 ticks
  CHECK(net.peers[l]->role() == Role::looking);
  CHECK_FALSE(net.peers[l]->propose("late"));
}

TEST_CASE("a follower that loses its leader goes back to election, and the rest elect a new one") {
  Net net(3);
  PeerId l = net.settle();
  REQUIRE(l != 0);
  net.cut.insert(l);
  net.ticks(25);
  PeerId again = net.leader();
  CHECK(again != 0);
  CHECK(again != l);
  CHECK(net.peers[again]->epoch() > net.peers[l]->epoch());
}

TEST_CASE("the standalone server's ensemble of one: a new epoch at every start, above the log's") {
  warden::storage::MemoryLogStore store;
  store.append({{make_zxid(3, 7), "old"}});  // a log from before the replica state was kept
  std::vector<Zxid> committed;
  bool disk_ok = true;
  auto start = [&](Zxid applied) {
    auto r = std::make_unique<ZabReplicator>(store, [&](warden::storage::LogEntry e) {
      if (disk_ok) store.append({e});
    });
    r->set_commit_handler([&](Zxid z, std::string_view) { committed.push_back(z); });
    r->start(applied);
    return r;
  };
  // Nothing applied yet: the log is its history, committed as it leads.
  auto first = start(0);
  CHECK(committed == std::vector<Zxid>{make_zxid(3, 7)});
  CHECK(first->epoch() == 4);
  CHECK(store.replica_state().accepted_epoch == 4);
  CHECK(store.replica_state().current_epoch == 4);
  auto z = first->propose("a");
  REQUIRE(z);
  CHECK(*z == make_zxid(4, 1));
  first->durable(*z);
  CHECK(committed == std::vector<Zxid>{make_zxid(3, 7), make_zxid(4, 1)});
  first.reset();
  CHECK(store.replica_state().commit_mark == make_zxid(3, 7));  // saved when it led: it may lag
  auto second = start(make_zxid(4, 1));  // a restart that replayed everything
  CHECK(second->epoch() == 5);
  CHECK(second->last_committed() == make_zxid(4, 1));
  disk_ok = false;
  z = second->propose("b");
  REQUIRE(z);
  CHECK(*z == make_zxid(5, 1));
  CHECK(second->abort() == 1);  // the write failed: it is taken back, never handed out again
  disk_ok = true;
  z = second->propose("c");
  REQUIRE(z);
  CHECK(*z == make_zxid(6, 1));
}

// ZooKeeper's counter is 32 bits: a standalone server that writes on for long enough runs out
// of zxids in its epoch and must lead again in a new one. Its writes are persisted
// asynchronously (the group committer), so some are always in flight then: they must commit
// only once durable, whole, and in order, and the first write after them goes to the new
// epoch with its payload intact.
TEST_CASE("a lone voter whose epoch runs out of zxids commits only what is durable, then leads a new epoch") {
  warden::storage::MemoryLogStore store;
  std::deque<warden::storage::LogEntry> in_flight;  // persisted, not yet written
  std::vector<std::pair<Zxid, std::string>> committed;
  ZabReplicator r(store, [&](warden::storage::LogEntry e) { in_flight.push_back(std::move(e)); }, 3);
  r.set_commit_handler([&](Zxid z, std::string_view p) { committed.emplace_back(z, std::string(p)); });
  r.start(0);
  uint32_t epoch = r.epoch();
  auto write_upto = [&](Zxid upto) {
    while (!in_flight.empty() && in_flight.front().zxid <= upto) {
      store.append({in_flight.front()});
      in_flight.pop_front();
    }
    r.durable(upto);
  };
  std::vector<Zxid> zs;
  for (const char* p : {"a", "b", "c"}) {
    auto z = r.propose(p);
    REQUIRE(z);
    zs.push_back(*z);
  }
  CHECK(zs.back() == make_zxid(epoch, 3));
  write_upto(zs[0]);
  REQUIRE(committed.size() == 1);
  // The epoch is spent and b, c are in flight: refused, and nothing else commits.
  CHECK_FALSE(r.propose("d"));
  CHECK(committed.size() == 1);
  CHECK(r.epoch() == epoch);
  write_upto(zs[2]);
  REQUIRE(committed.size() == 3);
  CHECK(committed[1] == std::make_pair(zs[1], std::string("b")));
  CHECK(committed[2] == std::make_pair(zs[2], std::string("c")));
  // Nothing in flight: the next write leads again, in a new epoch, whole.
  auto z = r.propose("e");
  REQUIRE(z);
  CHECK(r.epoch() > epoch);
  CHECK(*z == make_zxid(r.epoch(), 1));
  CHECK(committed.size() == 3);  // not before it is durable
  write_upto(*z);
  REQUIRE(committed.size() == 4);
  CHECK(committed[3] == std::make_pair(*z, std::string("e")));
}

TEST_CASE("a broken connection to the leader sends its followers looking at once, not after syncLimit") {
  Net net(3);
  PeerId l = net.settle();
  REQUIRE(l != 0);
  PeerId f = l == 1 ? 2 : 1;
  net.peers[f]->peer_lost(l == 3 ? 2 : 3);  // another follower: nothing changes
  CHECK(net.peers[f]->role() == Role::following);
  net.peers[f]->peer_lost(l);
  CHECK(net.peers[f]->role() == Role::looking);
  // The leader drops its link to a lost follower; the follower rejoins with a new one.
  net.drain(f);
  net.peers[l]->peer_lost(f);
  CHECK(net.peers[l]->role() == Role::leading);
  net.ticks(10);
  CHECK(net.leader() != 0);
  CHECK(net.peers[f]->serving());
}

TEST_CASE("a follower that decided before its leader did is synced as soon as the leader leads, not at its next retry") {
  Net net(3);
  PeerId l = net.settle();
  REQUIRE(l != 0);
  std::vector<PeerId> rest;
  for (PeerId p = 1; p <= 3; ++p)
    if (p != l) rest.push_back(p);
  PeerId lo = rest[0], hi = rest[1];  // the same history: the higher id wins
  net.cut.insert(l);
  for (PeerId p : rest) {
    net.peers[p]->peer_lost(l);
    net.drain(p);
  }
  net.deliver_all();
  auto tick_until = [&](PeerId p, Role leaves) {
    for (uint64_t t = 0; t < 5 && net.peers[p]->role() == leaves; ++t) {
      net.peers[p]->tick(t);
      net.drain(p);
      net.deliver_all();
    }
  };
  // lo decides on its own tick first; its FollowerInfo finds hi still looking.
  tick_until(lo, Role::looking);
  REQUIRE(net.peers[lo]->role() == Role::following);
  REQUIRE(net.peers[hi]->role() == Role::looking);
  // hi decides on its tick; lo gets no tick of its own (no retry) and must still be synced.
  tick_until(hi, Role::looking);
  REQUIRE(net.peers[hi]->role() == Role::leading);
  CHECK(net.peers[hi]->serving());
  CHECK(net.peers[lo]->serving());
}

// Simulator seed 431533584 (5 voters): after the faults, 3 and 4 led minorities in turn for 8 s.
// In each round a looking voter (5 here) had voted for the candidate but had missed the
// candidate's own looking vote of that round (it came while 5 still followed the last leader,
// and a settled voter answers a looking vote instead of counting it). The candidate led on 5's
// vote; 5, hearing it lead, counted only settled votes (the leader's and 1's: two of five) and
// stayed looking, so the leader was one voter short and gave up after initLimit.
TEST_CASE("a voter whose round elected a leader joins it once it leads even if it missed the leader's own vote") {
  // 3 has the newest history (two uncommitted txns beyond 4's), 1 is behind it, 2 and 5 an epoch
  // behind; 2 and 4 are away (in the seed 4 led a minority with 2 following it).
  std::map<PeerId, std::vector<Entry>> logs{{1, history(8, 1)}, {2, history(7, 17)}, {3, history(8, 8)},
                                            {4, history(8, 6)}, {5, history(7, 17)}};
  std::map<PeerId, Epochs> e{{1, {8, 8}}, {2, {7, 7}}, {3, {8, 8}}, {4, {8, 8}}, {5, {7, 7}}};
  Net net(5, logs, e);
  net.cut = {2, 4};
  std::erase_if(net.wire, [&](const auto& w) { return net.cut.count(w.first) || net.cut.count(w.second.first); });
  // 3's looking votes never reach 5; 1's and 5's reach everyone.
  std::erase_if(net.wire, [](const auto& w) { return w.first == 5 && w.second.first == 3; });
  net.dropped.insert({3, 5});
  net.deliver_all();
  // 1 and 5 now vote for 3: 3 has its quorum (1, 3, 5) and decides on its own tick first. From
  // here on its messages reach 5 (in the seed, its LEADING vote did).
  REQUIRE(net.peers[5]->role() == Role::looking);
  net.dropped.clear();
  for (uint64_t t = 0; t < 3 && net.peers[3]->role() == Role::looking; ++t) {
    net.peers[3]->tick(t);
    net.drain(3);
    net.deliver_all();
  }
  REQUIRE(net.peers[3]->role() == Role::leading);
  CHECK(net.peers[5]->role() == Role::following);
  CHECK(net.peers[5]->leader() == 3);
  // Well within initLimit (10 ticks), the leader it was elected with establishes.
  net.ticks(3);
  CHECK(net.leader() == 3);
  CHECK(net.peers[5]->serving());
  CHECK(net.peers[1]->serving());
}

TEST_CASE("a looking voter forgets what a peer said while settled once it looks again") {
  OnePeer one(5, history(7, 3), Epochs{7, 7});
  ZabPeer& p = *one.peer;
  // 3 said it leads, then stepped down; 1 and 2 have not noticed yet and still follow it.
  p.receive(3, vote(3, 1, 3, make_zxid(8, 8), 0, pb::LEADING));
  p.receive(3, vote(3, 2, 3, make_zxid(8, 8), 8, pb::LOOKING));
  p.receive(1, vote(1, 1, 3, make_zxid(8, 1), 0, pb::FOLLOWING));
  p.receive(2, vote(2, 1, 3, make_zxid(7, 17), 0, pb::FOLLOWING));
  CHECK(p.role() == Role::looking);  // 3 no longer says it leads: nobody to join
}

TEST_CASE("a candidate does not decide on the vote of a voter that has since settled on another leader") {
  OnePeer one(3, history(8, 8), Epochs{8, 8});
  ZabPeer& p = *one.peer;
  p.receive(1, vote(1, 1, 3, make_zxid(8, 8), 8, pb::LOOKING));
  p.receive(5, vote(5, 1, 3, make_zxid(8, 8), 8, pb::LOOKING));
  // A quorum (1, 3, 5) votes for 3; before its decision tick 5 reports that it follows 4.
  p.receive(5, vote(5, 1, 4, make_zxid(8, 6), 0, pb::FOLLOWING));
  for (uint64_t t = 0; t < 3; ++t) p.tick(t);
  CHECK(p.role() == Role::looking);
  // Once 2 votes for it as well, it has its quorum again and leads.
  p.receive(2, vote(2, 1, 3, make_zxid(8, 8), 8, pb::LOOKING));
  for (uint64_t t = 0; t < 3; ++t) p.tick(t);
  CHECK(p.role() == Role::leading);
}

// Simulator seed 500028206 (5 voters), after a calm began with four servers restarted: 1, 2 and
// 3 elected 5, which had just joined 4 instead (their followers waited out initLimit), and
// later elected 3 in a round whose better candidates (4 and 5, each with two txns more) had sent
// their votes while 1, 2 and 3 still followed 5; 3's leadership then failed on the first
// follower ahead of it, and the calm went by without a commit.
TEST_CASE("a voter does not follow a candidate that has said it follows another leader") {
  OnePeer one(1, history(2, 0xfc), Epochs{2, 2});
  ZabPeer& p = *one.peer;
  Zxid z = make_zxid(2, 0xfc);
  p.receive(2, vote(2, 1, 5, z, 2, pb::LOOKING));
  p.receive(3, vote(3, 1, 5, z, 2, pb::LOOKING));  // 1, 2 and 3 vote for 5: a quorum of five
  p.receive(5, vote(5, 1, 4, make_zxid(2, 0x105), 0, pb::FOLLOWING));
  for (uint64_t t = 0; t < 3; ++t) p.tick(t);
  CHECK(p.role() == Role::looking);
}

TEST_CASE("a follower whose leader looks again in a later round looks at once") {
  OnePeer one(1, {}, Epochs{2, 2});
  ZabPeer& p = *one.peer;
  Zxid z = make_zxid(2, 9);
  for (PeerId from : {2, 3, 5}) p.receive(from, vote(from, 1, 5, z, 2, pb::LOOKING));
  for (uint64_t t = 0; t < 3 && p.role() == Role::looking; ++t) p.tick(t);
  REQUIRE(p.role() == Role::following);
  REQUIRE(p.leader() == 5);
  // A looking vote of 5's from the round this server decided in is from before 5 led: stale.
  p.receive(5, vote(5, 1, 5, z, 2, pb::LOOKING));
  CHECK(p.role() == Role::following);
  // One from a later round: 5 stepped down (its ahead check, or its quorum went). Waiting out
  // initLimit in discovery would only delay the next election (simulator seed 600013218).
  p.receive(5, vote(5, 2, 5, z, 2, pb::LOOKING));
  CHECK(p.role() == Role::looking);
}

TEST_CASE("a looking voter answers a worse vote of its own round with its vote") {
  OnePeer one(4, history(2, 0x109), Epochs{2, 2});
  ZabPeer& p = *one.peer;
  p.receive(1, vote(1, 1, 1, make_zxid(2, 0xfc), 2, pb::LOOKING));  // 1 never heard 4's vote
  bool told = false;
  for (const auto& [to, m] : p.ready().messages)
    told = told || (to == 1 && m.has_vote() && m.vote().leader() == 4 && m.vote().state() == pb::LOOKING);
  CHECK(told);
}

TEST_CASE("a leader's pings tell each follower the last of its messages the leader received") {
  Net net(3);
  PeerId l = net.settle();
  REQUIRE(l != 0);
  PeerId f = l == 1 ? 2 : 1;
  ZabPeer& fp = *net.peers[f];
  REQUIRE(fp.link() != 0);
  REQUIRE(fp.forward("touch"));
  net.drain(f);
  uint64_t sent = fp.link_sent();
  CHECK(fp.link_acked() < sent);  // not heard of yet
  net.deliver_all();
  net.peers[l]->tick(0);  // the leader's next ping
  net.drain(l);
  net.deliver_all();
  CHECK(fp.link_acked() >= sent);
  // Cut off: the follower's messages no longer reach the leader, and nothing says they did.
  net.cut.insert(l);
  REQUIRE(fp.forward("touch"));
  net.drain(f);
  net.ticks(1);
  CHECK(fp.link_acked() < fp.link_sent());
}

namespace {
// Three voters: 1 leads with `leader_log`; 3 comes back with `behind`; 2 holds what 1 holds.
Net sync_net(const std::vector<Entry>& leader_log, const std::vector<Entry>& behind,
             std::function<void(MemLog&)> leader_store, bool stream = false) {
  std::map<PeerId, Epochs> e{{1, {1, 1}}, {2, {1, 1}}, {3, {1, 1}}};
  return Net(3, {{1, leader_log}, {2, leader_log}, {3, behind}}, e, [=](PeerId id, PeerConfig& c, MemLog& log) {
    c.stream_sync = stream;
    if (id != 3) leader_store(log);
  });
}
}  // namespace

TEST_CASE("a follower behind the log's base is sent the snapshot (SNAP), one within it a DIFF") {
  // 1 and 2 purged their logs: they hold a snapshot at (1,6), and the log after (1,3) only.
  auto purged = [](MemLog& log) {
    log.snap_zxid = make_zxid(1, 6);
    log.snap = "tree at 6";
    log.base_at = make_zxid(1, 3);
  };
  std::vector<Entry> after3;
  for (uint32_t c = 4; c <= 10; ++c) after3.push_back(entry(1, c));
  {
    Net net = sync_net(after3, history(1, 2), purged);
    net.settle();
    REQUIRE(net.leader() != 0);
    REQUIRE(net.peers[3]->serving());
    CHECK(net.syncs[3].back() == pb::Sync::SNAP);
    CHECK(net.installed[3].first == make_zxid(1, 6));
    CHECK(net.logs[3].last_zxid() == make_zxid(1, 10));
    CHECK(net.logs[3].log.front().zxid == make_zxid(1, 7));  // the log after the snapshot only
  }
  {
    // 3 holds (1,3), the base itself: the log reaches it, a DIFF does.
    Net net = sync_net(after3, history(1, 3), purged);
    net.settle();
    REQUIRE(net.peers[3]->serving());
    CHECK(net.syncs[3].back() == pb::Sync::DIFF);
    CHECK(net.installed.count(3) == 0);
    CHECK(net.logs[3].last_zxid() == make_zxid(1, 10));
  }
}

TEST_CASE("a DIFF larger than a third of the snapshot goes as the snapshot, as ZooKeeper's snapshotSizeFactor") {
  std::vector<Entry> whole;
  for (uint32_t c = 1; c <= 10; ++c) whole.push_back(entry(1, c, std::string(100, 'x')));
  for (uint64_t snapshot_size : {1000u, 100000u}) {
    Net net = sync_net(whole, history(1, 2), [&](MemLog& log) {
      log.snap_zxid = make_zxid(1, 6);
      log.base_at = 0;  // nothing purged: the log reaches back to the start
      log.snap_bytes = snapshot_size;
    });
    net.settle();
    REQUIRE(net.peers[3]->serving());
    // 800 bytes to send: more than a third of 1000, less than a third of 100000.
    CHECK(net.syncs[3].back() == (snapshot_size == 1000 ? pb::Sync::SNAP : pb::Sync::DIFF));
    CHECK(net.logs[3].last_zxid() == make_zxid(1, 10));
  }
}

TEST_CASE("a streamed sync carries nothing itself; its entries come as SyncData, and a lost frame is noticed") {
  std::vector<Entry> whole = history(1, 9);
  {
    Net net = sync_net(whole, history(1, 2), [](MemLog&) {}, true);
    net.settle();
    REQUIRE(net.peers[3]->serving());
    CHECK(net.syncs[3].back() == pb::Sync::DIFF);
    CHECK(net.logs[3].log.size() == 9);
    CHECK(net.logs[3].last_zxid() == make_zxid(1, 9));
  }
  {
    // A SNAP: the host installs the snapshot it received (snapshot_streamed), then the entries.
    Net net = sync_net(history(1, 9), history(1, 1), [](MemLog& log) {
      log.log.erase(log.log.begin(), log.log.begin() + 4);
      log.snap_zxid = make_zxid(1, 4);
    }, true);
    net.settle();
    REQUIRE(net.peers[3]->serving());
    CHECK(net.syncs[3].back() == pb::Sync::SNAP);
    CHECK(net.installed[3] == std::make_pair(make_zxid(1, 4), true));
    CHECK(net.logs[3].last_zxid() == make_zxid(1, 9));
  }
  {
    // The second frame is lost: 3 must not take the third after a gap; it syncs again.
    Net net = sync_net(whole, history(1, 2), [](MemLog&) {}, true);
    net.lose_frame = 1;
    for (int t = 0; t < 40 && !net.peers[3]->serving(); ++t) {
      net.ticks(1);
      for (size_t i = 1; i < net.logs[3].log.size(); ++i)  // never a hole in 3's log
        REQUIRE(net.logs[3].log[i].zxid == net.logs[3].log[i - 1].zxid + 1);
    }
    // Each sync lost its second frame; 3 noticed every time (a gap, or the link's next message
    // before the stream's end) and asked again from where it was, until one fit in one frame.
    REQUIRE(net.peers[3]->serving());
    CHECK(net.logs[3].last_zxid() == make_zxid(1, 9));
    CHECK(net.syncs[3].size() >= 2);
  }
}

TEST_CASE("proposals are packed by bytes as well as by count") {
  Net net(3, {}, {}, [](PeerId, PeerConfig& c, MemLog&) { c.max_message_bytes = 250; });
  PeerId l = net.settle();
  REQUIRE(l != 0);
  for (int i = 0; i < 5; ++i) net.peers[l]->propose(std::string(100, 'p'));
  // One ready() for all five: at most two 100-byte entries per message.
  Ready r = net.peers[l]->ready();
  size_t proposals = 0;
  for (const auto& [to, m] : r.messages)
    if (m.has_proposal()) {
      ++proposals;
      CHECK(m.proposal().entries_size() <= 2);
    }
  CHECK(proposals == 2 * 3);  // to each of the two followers: 2 + 2 + 1
}

TEST_CASE("a member that accepted a later epoch than the leader's makes it look again, and wins with the newest history") {
  // 3 was restored from a backup (POST /commands/restore): its history is one snapshot labelled
  // (17, 0), above the others', and it accepted epoch 17. While it was away 1 and 2 elected a
  // leader of a lower epoch; 3 can never follow it (that LeaderInfo is below what 3 accepted),
  // and used to ask again and again. The leader now looks again, and 3 is elected.
  Zxid restored = make_zxid(17, 0);
  std::map<PeerId, Epochs> e{{1, {1, 1}}, {2, {1, 1}}, {3, {17, 17}}};
  Net net(3, {{1, history(1, 5)}, {2, history(1, 5)}, {3, {}}}, e, [&](PeerId id, PeerConfig&, MemLog& log) {
    if (id == 3) {
      log.snap_zxid = restored;
      log.snap = "the restored tree";
    }
  });
  net.cut.insert(3);
  for (int i = 0; i < 100 && net.leader() == 0; ++i) net.ticks(1);
  PeerId interim = net.leader();
  REQUIRE((interim == 1 || interim == 2));
  net.cut.erase(3);
  for (int i = 0; i < 100 && net.leader() != 3; ++i) net.ticks(1);
  CHECK(net.leader() == 3);
  net.ticks(5);
  for (PeerId id : {1, 2}) {
    CHECK(net.peers[id]->serving());
    CHECK(net.installed[id].first == restored);  // synced to the restored history (SNAP)
  }
}

namespace {
// A reconfig's payload in these tests: "cfg:" and the voters, e.g. "cfg:1,4,5".
std::optional<Ensemble> test_config_of(std::string_view payload) {
  if (payload.substr(0, 4) != "cfg:") return std::nullopt;
  Ensemble e;
  for (char c : payload.substr(4))
    if (c >= '1' && c <= '9') e.voters.push_back(c - '0');
  return e;
}
}  // namespace

TEST_CASE("a reconfig commits on a quorum of the old and of the new configuration, then the new one rules") {
  // Voters 1, 2 and 3; servers 4 and 5 are outside the configuration and follow without counting.
  Net net(5, {}, {}, [](PeerId, PeerConfig& c, MemLog&) {
    c.ensemble.voters = {1, 2, 3};
    c.config_of = test_config_of;
  });
  PeerId l = net.settle();
  REQUIRE(l != 0);
  REQUIRE(l <= 3);
  net.ticks(3);
  CHECK(net.peers[4]->role() == Role::following);
  CHECK(net.peers[5]->role() == Role::following);
  PeerId stays = l == 1 ? 2 : 1;           // an old voter in the new configuration
  PeerId goes = 6 - l - stays;             // the other old voter, removed with the leader
  Ensemble next;
  next.voters = {stays, 4, 5};
  std::sort(next.voters.begin(), next.voters.end());
  CHECK(net.peers[l]->quorum_synced(next));
  Ensemble unreachable;
  unreachable.voters = {stays, 7, 8};
  CHECK_FALSE(net.peers[l]->quorum_synced(unreachable));  // ZooKeeper's NewConfigNoQuorum

  net.auto_durable = false;
  std::string payload = "cfg:" + std::to_string(next.voters[0]) + "," + std::to_string(next.voters[1]) + "," +
                        std::to_string(next.voters[2]);
  auto z = net.peers[l]->propose(payload);
  REQUIRE(z);
  CHECK_FALSE(net.peers[l]->propose("cfg:1,2,3"));  // one reconfig at a time
  REQUIRE(net.peers[l]->pending_config());
  CHECK(net.peers[l]->pending_config()->first == *z);
  net.drain(l);
  net.deliver_all();
  auto durable = [&](PeerId p) {
    net.peers[p]->durable(*z);
    net.drain(p);
    net.deliver_all();
  };
  durable(l);
  durable(goes);
  CHECK(net.committed[l] < *z);  // a quorum of the old configuration alone
  durable(4);
  CHECK(net.committed[l] < *z);  // and one of the new
  durable(5);
  CHECK(net.committed[l] == *z);  // a quorum of both
  CHECK(net.peers[l]->ensemble().voters == next.voters);
  CHECK(net.peers[l]->ensemble().version == *z);
  CHECK(net.peers[l]->role() != Role::leading);  // removed: it stops leading
  // ... and hands leadership over with the commit (ZooKeeper's designated leader): a voter of
  // the new configuration leads at once, the others follow it, with no election.
  PeerId handed = 0;
  for (PeerId p : next.voters)
    if (net.peers[p]->role() == Role::leading) handed = p;
  CHECK(handed != 0);
  for (PeerId p : next.voters)
    if (p != handed) CHECK((net.peers[p]->role() == Role::following && net.peers[p]->leader() == handed));

  net.auto_durable = true;
  for (PeerId p : {stays, PeerId{4}, PeerId{5}}) durable(p);
  PeerId l2 = net.settle();
  REQUIRE(l2 != 0);
  CHECK(next.is_voter(l2));
  CHECK(l2 == handed);
  for (PeerId p = 1; p <= 5; ++p) CHECK(net.peers[p]->ensemble().version == *z);
  // The new configuration's quorum alone commits now: the removed voters are cut off.
  net.cut = {l, goes};
  auto w = net.peers[l2]->propose("after");
  REQUIRE(w);
  net.drain(l2);
  net.deliver_all();
  CHECK(net.committed[l2] == *w);
}

TEST_CASE("a member that missed a reconfig learns the configuration in force from a vote") {
  OnePeer p(2, {}, Epochs{1, 1});
  pb::PeerMessage v = vote(1, 5, 4, make_zxid(3, 9), 3, pb::FOLLOWING);
  auto* c = v.mutable_vote()->mutable_config();
  c->set_version(make_zxid(3, 2));
  for (int64_t id : {1, 2, 4}) c->add_voters(id);
  c->set_members("server.4=h4:2888:3888");  // where the host reaches a member it did not know
  p.peer->receive(1, v);
  CHECK(p.peer->ensemble().version == make_zxid(3, 2));
  CHECK(p.peer->ensemble().voters == std::vector<PeerId>{1, 2, 4});
  auto r = p.peer->ready();
  REQUIRE(r.config);
  CHECK(r.config->version == make_zxid(3, 2));
  CHECK(r.config->members == "server.4=h4:2888:3888");
  // An older one, or one from a server outside the configuration, is not taken.
  pb::PeerMessage old = vote(4, 5, 4, make_zxid(3, 9), 3, pb::FOLLOWING);
  old.mutable_vote()->mutable_config()->set_version(make_zxid(3, 1));
  old.mutable_vote()->mutable_config()->add_voters(9);
  p.peer->receive(4, old);
  pb::PeerMessage stranger = vote(7, 5, 7, make_zxid(3, 9), 3, pb::LOOKING);
  stranger.mutable_vote()->mutable_config()->set_version(make_zxid(9, 9));
  stranger.mutable_vote()->mutable_config()->add_voters(7);
  p.peer->receive(7, stranger);
  CHECK(p.peer->ensemble().version == make_zxid(3, 2));
  CHECK(p.peer->ensemble().voters == std::vector<PeerId>{1, 2, 4});
}

namespace {
// One server with a reconfiguration-aware configuration: `voters` in force at `version`, its log
// `entries` (a "cfg:..." one above `committed` is pending), fed hand-made messages.
struct ConfigPeer {
  MemoryLog log;
  std::unique_ptr<ZabPeer> peer;
  ConfigPeer(PeerId id, std::vector<PeerId> voters, Zxid version, std::vector<Entry> entries, Epochs epochs,
             Zxid committed, std::vector<PeerId> observers = {}) {
    PeerConfig c;
    c.id = id;
    c.ensemble.voters = std::move(voters);
    c.ensemble.observers = std::move(observers);
    c.ensemble.version = version;
    c.config_of = test_config_of;
    log.log = std::move(entries);
    peer = std::make_unique<ZabPeer>(c, log, epochs, committed);
    (void)peer->ready();
  }
};

// A vote that carries the sender's configuration in force (and a reconfig pending in its log).
pb::PeerMessage config_vote(PeerId from, uint64_t round, PeerId leader, Zxid zxid, uint32_t epoch,
                            pb::PeerState state, Zxid config_version, std::vector<PeerId> voters,
                            std::optional<std::pair<Zxid, std::vector<PeerId>>> pending = std::nullopt) {
  pb::PeerMessage m = vote(from, round, leader, zxid, epoch, state);
  auto* c = m.mutable_vote()->mutable_config();
  c->set_version(config_version);
  for (PeerId v : voters) c->add_voters(v);
  if (pending) {
    auto* p = m.mutable_vote()->mutable_pending();
    p->set_version(pending->first);
    for (PeerId v : pending->second) p->add_voters(v);
  }
  return m;
}

std::vector<Entry> with_reconfig(uint32_t epoch, uint32_t upto, uint32_t at, std::string payload) {
  std::vector<Entry> h = history(epoch, upto);
  h[at - 1].payload = std::move(payload);
  return h;
}
}  // namespace

// Simulator seed 1795849959 (3 voters, reconfigs): leader 4 proposed adding 3 and 5 and was cut
// off with 5; 1 and 2 elected 2 in epoch 5 without the txn. 4 counted every quorum in the pending
// configuration too, where only 1 and 3 backed 2, and never joined.
TEST_CASE("a voter joins a leader of a later epoch that lacks its pending reconfig, on the voters in force") {
  const Zxid v0 = make_zxid(3, 0x23);
  const Zxid reconfig = make_zxid(4, 8);
  const Zxid theirs = make_zxid(4, 6);
  auto make = [&] {
    return std::make_unique<ConfigPeer>(4, std::vector<PeerId>{1, 2, 4}, v0, with_reconfig(4, 10, 8, "cfg:1345"),
                                        Epochs{4, 4}, make_zxid(4, 5));
  };
  auto c = make();
  ZabPeer& p = *c->peer;
  REQUIRE(p.pending_config());
  REQUIRE(p.pending_config()->first == reconfig);
  // Leading in the reconfig's own epoch (its epoch not chosen yet): the txn may still commit
  // through this server, so both configurations' quorums count and 2 lacks one.
  p.receive(1, config_vote(1, 3, 2, theirs, 0, pb::FOLLOWING, v0, {1, 2, 4}));
  p.receive(2, config_vote(2, 3, 2, theirs, 0, pb::LEADING, v0, {1, 2, 4}));
  CHECK(p.role() == Role::looking);
  // In epoch 5: elected by the voters in force without the txn, which therefore never committed.
  auto c2 = make();
  ZabPeer& q = *c2->peer;
  q.receive(1, config_vote(1, 3, 2, theirs, 5, pb::FOLLOWING, v0, {1, 2, 4}));
  q.receive(2, config_vote(2, 3, 2, theirs, 5, pb::LEADING, v0, {1, 2, 4}));
  CHECK(q.role() == Role::following);
  CHECK(q.leader() == 2);
  // A leader of epoch 5 that holds the reconfig as pending is not joined on the old quorum alone.
  auto c3 = make();
  ZabPeer& r = *c3->peer;
  r.receive(1, config_vote(1, 3, 2, theirs, 5, pb::FOLLOWING, v0, {1, 2, 4}));
  r.receive(2, config_vote(2, 3, 2, theirs, 5, pb::LEADING, v0, {1, 2, 4},
                           std::make_pair(reconfig, std::vector<PeerId>{1, 3, 4, 5})));
  CHECK(r.role() == Role::looking);
}

// Simulator seed 1795853993 (3 voters, reconfigs): 1 proposed a reconfig adding 5 in epoch 3 and
// was cut off while 3 led epoch 4 without it. Back, 1 offered it in its votes; 2 and 5 took it, 5
// was elected with it and then led voters that did not count 5 as one, and 3 never joined.
TEST_CASE("a reconfig that a later epoch's history lacks is void: dropped, and not taken from votes") {
  const Zxid v0 = make_zxid(1, 0);
  const Zxid reconfig = make_zxid(3, 0xc0);
  const std::pair<Zxid, std::vector<PeerId>> offered{reconfig, {1, 2, 3, 5}};
  SECTION("the server that holds it drops it once a member shows a txn of a later epoch") {
    ConfigPeer c(1, {1, 2, 3}, v0, with_reconfig(3, 0xc0, 0xc0, "cfg:1235"), Epochs{3, 3}, make_zxid(3, 0xba));
    ZabPeer& p = *c.peer;
    REQUIRE(p.pending_config());
    // A looking vote for another server relays that server's zxid, not the sender's: no proof.
    p.receive(2, config_vote(2, 1, 3, make_zxid(4, 0x4d), 4, pb::LOOKING, v0, {1, 2, 3}));
    CHECK(p.pending_config());
    // 2's own: an epoch-4 txn in a log without the reconfig.
    p.receive(2, config_vote(2, 1, 2, make_zxid(4, 0x4d), 4, pb::LOOKING, v0, {1, 2, 3}));
    CHECK_FALSE(p.pending_config());
    // Offered again by a member that still holds it, it is not taken.
    p.receive(3, config_vote(3, 9, 3, reconfig, 3, pb::LOOKING, v0, {1, 2, 3}, offered));
    CHECK_FALSE(p.pending_config());
    // A txn of the reconfig's own epoch proves nothing: a fresh server keeps it.
    ConfigPeer d(1, {1, 2, 3}, v0, with_reconfig(3, 0xc0, 0xc0, "cfg:1235"), Epochs{3, 3}, make_zxid(3, 0xba));
    d.peer->receive(2, config_vote(2, 1, 2, make_zxid(3, 0xc1), 3, pb::LOOKING, v0, {1, 2, 3}));
    CHECK(d.peer->pending_config());
  }
  SECTION("a server whose log went past the reconfig's epoch does not take it from a vote") {
    ConfigPeer c(2, {1, 2, 3}, v0, history(4, 0x4d), Epochs{4, 4}, make_zxid(4, 0x4b));
    c.peer->receive(1, config_vote(1, 9, 1, reconfig, 3, pb::LOOKING, v0, {1, 2, 3}, offered));
    CHECK_FALSE(c.peer->pending_config());
    // One of its own epoch may still commit: taken, so its quorums count the new voters too.
    ConfigPeer d(2, {1, 2, 3}, v0, history(3, 0xba), Epochs{3, 3}, make_zxid(3, 0xb4));
    d.peer->receive(1, config_vote(1, 9, 1, reconfig, 3, pb::LOOKING, v0, {1, 2, 3}, offered));
    REQUIRE(d.peer->pending_config());
    CHECK(d.peer->pending_config()->first == reconfig);
  }
}

// Simulator seed 1795858434 (5 voters, an observer, reconfigs): an observer being synced learnt
// from the leader's ping that the reconfig removing it had committed, went looking, and then
// answered the ping, to leader 0.
TEST_CASE("an observer that a ping's commit removes answers nobody") {
  const Zxid v0 = make_zxid(1, 0);
  ConfigPeer c(4, {1, 2, 3}, v0, {}, Epochs{1, 1}, 0, {4});
  ZabPeer& p = *c.peer;
  p.receive(1, config_vote(1, 1, 3, make_zxid(1, 1), 2, pb::FOLLOWING, v0, {1, 2, 3}));
  p.receive(2, config_vote(2, 1, 3, make_zxid(1, 1), 2, pb::FOLLOWING, v0, {1, 2, 3}));
  p.receive(3, config_vote(3, 1, 3, make_zxid(1, 1), 2, pb::LEADING, v0, {1, 2, 3}));
  REQUIRE(p.role() == Role::observing);
  uint64_t nonce = 0;
  for (const auto& [to, m] : p.ready().messages)
    if (to == 3 && m.has_follower_info()) nonce = m.follower_info().nonce();
  REQUIRE(nonce != 0);
  auto on_link = [](uint64_t seq) {
    pb::PeerMessage m;
    m.set_version(oldest_protocol);
    m.set_from(3);
    m.set_epoch(2);
    m.set_link(7);
    m.set_seq(seq);
    return m;
  };
  pb::PeerMessage info = on_link(1);
  info.mutable_leader_info()->set_new_epoch(2);
  info.mutable_leader_info()->set_nonce(nonce);
  p.receive(3, info);
  // The sync brings the reconfig removing 4, committed only up to the entry before it.
  pb::PeerMessage sync = on_link(2);
  auto* s = sync.mutable_sync();
  s->set_mode(pb::Sync::DIFF);
  s->set_trunc_after(0);
  s->set_new_epoch(2);
  s->set_committed(make_zxid(1, 1));
  s->set_sync_last(make_zxid(1, 2));
  for (auto& e : with_reconfig(1, 2, 2, "cfg:123")) {
    auto* pe = s->add_entries();
    pe->set_zxid(e.zxid);
    pe->set_payload(e.payload);
  }
  p.receive(3, sync);
  REQUIRE(p.pending_config());
  p.durable(make_zxid(1, 2));
  (void)p.ready();
  pb::PeerMessage ping = on_link(3);
  ping.mutable_ping()->set_zxid(make_zxid(1, 2));
  p.receive(3, ping);
  CHECK(p.role() == Role::looking);  // no longer a member
  for (const auto& [to, m] : p.ready().messages) CHECK(to != 0);
}

// Simulator seed 1795832945026535 (5 voters, an observer, reconfigs): 6, outside the configuration
// in force, heard from leader 8's votes of a reconfig making it a voter, stood, and was elected;
// leading, it voided the reconfig (its own log lacked it) and led voters that did not count it,
// so observer 7 never joined it.
TEST_CASE("a voter only of a reconfig it heard of votes for others, never for itself") {
  const Zxid v0 = make_zxid(8, 0x6d);
  ConfigPeer c(6, {1, 2, 3, 4, 8}, v0, history(8, 0x134), Epochs{8, 8}, make_zxid(8, 0x133), {7});
  ZabPeer& p = *c.peer;
  p.receive(8, config_vote(8, 13, 8, make_zxid(8, 0x139), 8, pb::LEADING, v0, {1, 2, 3, 4, 8},
                           std::make_pair(make_zxid(8, 0x137), std::vector<PeerId>{4, 6, 8})));
  REQUIRE(p.pending_config());
  auto named = [&] {
    std::set<int64_t> leaders;
    for (const auto& [to, m] : p.ready().messages)
      if (m.has_vote() && m.vote().state() == pb::LOOKING) leaders.insert(m.vote().leader());
    return leaders;
  };
  auto first = named();
  REQUIRE_FALSE(first.empty());
  CHECK(first.count(6) == 0);
  p.receive(4, config_vote(4, 100, 4, make_zxid(8, 0x134), 8, pb::LOOKING, v0, {1, 2, 3, 4, 8},
                           std::make_pair(make_zxid(8, 0x137), std::vector<PeerId>{4, 6, 8})));
  CHECK(named() == std::set<int64_t>{4});
}

TEST_CASE("a follower told to truncate below what it applied is synced from nothing instead") {
  // Issue 45, point 5. 1 and 2 hold epoch 1 then epoch 20 (more elections than a restore's
  // 16-epoch gap); 3 was restored: a snapshot labelled (17,5), its commit mark there, no log.
  // The leader's floor of (17,5) is (1,2): a TRUNC to it would cut below 3's applied tree. 3
  // asks again reporting no history (zxid 0, which the build before this one reads too).
  auto leaders_log = std::vector<Entry>{entry(1, 1), entry(1, 2), entry(20, 1), entry(20, 2)};
  std::map<PeerId, Epochs> epochs{{1, {20, 20}}, {2, {20, 20}}, {3, {17, 17}}};
  auto setup = [](std::optional<Zxid> leaders_base) {
    return [leaders_base](PeerId id, PeerConfig&, MemLog& log) {
      if (id != 3) {
        log.snap_zxid = make_zxid(20, 1);
        log.base_at = leaders_base;
        return;
      }
      log.snap_zxid = make_zxid(17, 5);
      log.snap = "restored tree";
    };
  };
  std::map<PeerId, Zxid> marks{{1, make_zxid(20, 2)}, {2, make_zxid(20, 2)}, {3, make_zxid(17, 5)}};
  {
    // The leaders' logs reach back to (1,2) only: 3 is sent their snapshot (SNAP).
    Net net(3, {{1, leaders_log}, {2, leaders_log}}, epochs, setup(make_zxid(1, 2)), marks);
    net.settle();
    REQUIRE(net.leader() != 0);
    REQUIRE(net.peers[3]->serving());
    CHECK(net.syncs[3].front() == pb::Sync::TRUNC);  // what the leader first chose
    CHECK(net.syncs[3].back() == pb::Sync::SNAP);
    REQUIRE(net.installed.count(3) == 1);
    CHECK(net.installed[3].first == make_zxid(20, 1));  // its tree replaced by the leader's
    CHECK(net.logs[3].last_zxid() == make_zxid(20, 2));
  }
  {
    // The leaders' logs reach back to the start: a DIFF from 0, before which 3 empties its log,
    // its snapshot and its tree.
    Net net(3, {{1, leaders_log}, {2, leaders_log}}, epochs, setup(0), marks);
    net.settle();
    REQUIRE(net.peers[3]->serving());
    CHECK(net.syncs[3].front() == pb::Sync::TRUNC);
    CHECK(net.syncs[3].back() == pb::Sync::DIFF);
    CHECK(net.resets[3] == 1);
    CHECK(net.resets_while_synced[3] == 0);  // unsynced first, then emptied
    CHECK(net.synced_marks[3] == std::vector<bool>{false, true});  // synced again by the NEWLEADER it acknowledged
    CHECK(net.peers[3]->store_synced());
    CHECK(net.logs[3].snap_zxid == 0);
    CHECK(net.logs[3].log.size() == leaders_log.size());
    CHECK(net.logs[3].last_zxid() == make_zxid(20, 2));
  }
  {
    // The same rule for any follower whose applied state is past the truncation point: 3
    // applied (17,1) and (17,2) of a history the others do not have.
    auto diverged = std::vector<Entry>{entry(1, 1), entry(1, 2), entry(17, 1), entry(17, 2)};
    Net net(3, {{1, leaders_log}, {2, leaders_log}, {3, diverged}}, epochs,
            [](PeerId id, PeerConfig&, MemLog& log) {
              if (id != 3) log.snap_zxid = make_zxid(20, 1), log.base_at = 0;
            },
            {{1, make_zxid(20, 2)}, {2, make_zxid(20, 2)}, {3, make_zxid(17, 2)}});
    net.settle();
    REQUIRE(net.peers[3]->serving());
    CHECK(net.resets[3] == 1);
    REQUIRE(net.logs[3].log.size() == leaders_log.size());
    for (size_t i = 0; i < leaders_log.size(); ++i) CHECK(net.logs[3].log[i].zxid == leaders_log[i].zxid);
  }
  {
    // A follower whose uncommitted tail is cut is still cut (TRUNC), as before.
    auto tail = std::vector<Entry>{entry(1, 1), entry(1, 2), entry(17, 1)};
    Net net(3, {{1, leaders_log}, {2, leaders_log}, {3, tail}}, epochs, nullptr,
            {{1, make_zxid(20, 2)}, {2, make_zxid(20, 2)}, {3, make_zxid(1, 2)}});
    net.settle();
    REQUIRE(net.peers[3]->serving());
    CHECK(net.syncs[3].back() == pb::Sync::TRUNC);
    CHECK(net.resets.count(3) == 0);
    CHECK(net.installed.count(3) == 0);
    CHECK(net.logs[3].last_zxid() == make_zxid(20, 2));
  }
}

namespace {
// A FollowerInfo as a server sends it to the leader it chose.
pb::PeerMessage follower_info(PeerId from, uint32_t accepted_epoch, uint64_t nonce = 1) {
  pb::PeerMessage m;
  m.set_version(oldest_protocol);
  m.set_from(from);
  m.mutable_follower_info()->set_accepted_epoch(accepted_epoch);
  m.mutable_follower_info()->set_nonce(nonce);
  return m;
}
}  // namespace

TEST_CASE("a server outside the configuration never deposes a leader nor raises its epoch") {
  // Issue 45, point 6: with reconfigEnabled an unknown id may connect (a joiner), and its
  // FollowerInfo's accepted epoch made the leader step down, or counted in discovery.
  Net net(3);
  PeerId l = net.settle();
  REQUIRE(l != 0);
  uint32_t epoch = net.peers[l]->epoch();
  for (uint32_t accepted : {epoch + 5, 0xfffffffeu}) {
    net.wire.push_back({l, {99, encode_peer_message(follower_info(99, accepted))}});
    net.deliver_all();
    net.ticks(5);
    CHECK(net.leader() == l);
    CHECK(net.peers[l]->epoch() == epoch);
  }
  // And when the leader is being chosen: a stranger's epoch is not counted.
  Net again(3, {}, {{1, {3, 3}}, {2, {3, 3}}, {3, {3, 3}}});
  for (PeerId p = 1; p <= 3; ++p)
    again.wire.push_back({p, {99, encode_peer_message(follower_info(99, 0xfffffffeu))}});
  PeerId l2 = again.settle();
  REQUIRE(l2 != 0);
  CHECK(again.peers[l2]->epoch() == 4);
}

TEST_CASE("a quorum at the last epoch that fits a zxid leads no further and says so, never wrapping") {
  // 0x7fffffff: the next epoch's zxids would be negative (the high half of an int64).
  Net net(3, {}, {{1, {0x7fffffff, 0x7fffffff}}, {2, {0x7fffffff, 0x7fffffff}}, {3, {0x7fffffff, 0x7fffffff}}});
  net.settle();
  CHECK(net.leader() == 0);
  size_t said = 0;
  for (PeerId p = 1; p <= 3; ++p) {
    CHECK(net.epochs[p].accepted == 0x7fffffff);  // nothing wrapped or persisted past it
    for (const auto& n : net.notes[p]) said += n.find("no later epoch fits a zxid") != std::string::npos;
  }
  CHECK(said == 1);  // the one that would lead says it, once
  // One epoch below it still works.
  Net below(3, {}, {{1, {0x7ffffffe, 0x7ffffffe}}, {2, {0x7ffffffe, 0x7ffffffe}}, {3, {0x7ffffffe, 0x7ffffffe}}});
  PeerId l = below.settle();
  REQUIRE(l != 0);
  CHECK(below.peers[l]->epoch() == 0x7fffffffu);
}

TEST_CASE("a wiped member and a lagging one elect nobody; the intact one leads and syncs the wiped one") {
  // Issue 46, case 2 (CTRL's Figure 2 with a wiped disk): 1 holds (1,1)..(1,4), acknowledged by
  // 1 and 3; 2 lagged at (1,1); 3 was wiped (its store empty, unsynced). Counting 3's vote,
  // 2 and 3 elect 2 and the three txns only 1 holds are cut when it returns.
  auto full = history(1, 4);
  std::map<PeerId, std::vector<Entry>> logs{{1, full}, {2, {entry(1, 1)}}, {3, {}}};
  std::map<PeerId, Epochs> e{{1, {1, 1}}, {2, {1, 1}}, {3, {0, 0}}};
  auto wiped = [](bool synced) {
    return [synced](PeerId id, PeerConfig& c, MemLog&) {
      if (id == 3) c.synced = synced;
    };
  };
  {
    // As a build before the synced mark counts it: 2 leads and (1,2)..(1,4) are gone.
    Net net(3, logs, e, wiped(true));
    net.cut.insert(1);
    net.settle();
    net.ticks(40);
    CHECK(net.leader() == 2);
  }
  Net net(3, logs, e, wiped(false));
  net.cut.insert(1);
  net.settle();
  net.ticks(40);
  CHECK(net.leader() == 0);  // unavailable, not unsafe
  CHECK_FALSE(net.peers[2]->serving());
  CHECK(net.logs[2].last_zxid() == make_zxid(1, 1));
  net.cut.erase(1);
  net.ticks(40);
  REQUIRE(net.leader() == 1);
  REQUIRE(net.peers[3]->serving());
  for (PeerId p : {2, 3}) {
    INFO("member " << p);
    CHECK(net.logs[p].last_zxid() == net.logs[1].last_zxid());
  }
  CHECK(net.peers[3]->store_synced());
  CHECK(net.synced_marks[3] == std::vector<bool>{true});  // persisted with the NEWLEADER it acknowledged
  CHECK(net.synced_marks.count(2) == 0);                   // it was synced throughout
}

TEST_CASE("a new ensemble of unsynced members elects; the leader and its followers become synced") {
  Net net(3, {}, {}, [](PeerId, PeerConfig& c, MemLog&) { c.synced = false; });
  PeerId l = net.settle();
  REQUIRE(l != 0);
  for (PeerId p = 1; p <= 3; ++p) {
    INFO("member " << p);
    CHECK(net.peers[p]->serving());
    CHECK(net.peers[p]->store_synced());
    CHECK(net.synced_marks[p] == std::vector<bool>{true});
  }
  // A member started empty later is not counted by them, and is synced when it joins.
  REQUIRE(net.peers[l]->propose("a"));
  net.deliver_all();
  PeerId other = l == 3 ? 2 : 3;
  net.cut.insert(other);
  net.ticks(5);
  net.logs[other] = MemLog{};
  PeerConfig c;
  c.id = other;
  c.ensemble.voters = {1, 2, 3};
  c.synced = false;
  net.peers[other] = std::make_unique<ZabPeer>(c, net.logs[other], Epochs{}, 0);
  net.synced_marks[other].clear();
  net.cut.erase(other);
  net.drain(other);
  net.ticks(20);
  REQUIRE(net.peers[other]->serving());
  CHECK(net.logs[other].last_zxid() == net.logs[l].last_zxid());
  CHECK(net.synced_marks[other] == std::vector<bool>{true});
}

TEST_CASE("a vote says whether its sender is synced; one without the field (an older build) counts") {
  OnePeer one(1, history(1, 3), {1, 1});
  for (int t = 0; t < 4; ++t) one.peer->tick(0);  // votes go out again
  auto out = one.peer->ready();
  bool saw = false;
  for (auto& [to, m] : out.messages) {
    if (!m.has_vote()) continue;
    saw = true;
    CHECK_FALSE(m.vote().unsynced());
  }
  CHECK(saw);
  // 1 and 2 back 2 (2's vote is plain, as f1c90d0 sends it) and 4, unsynced, does too: 1 counts
  // itself and 2, not 4, short of a quorum of five until 5's plain vote.
  uint64_t round = 1;
  for (auto& [to, m] : out.messages)
    if (m.has_vote()) round = m.vote().round();
  one.peer->receive(2, vote(2, round, 2, make_zxid(1, 9), 1, pb::LOOKING));
  auto unsynced = vote(4, round, 2, make_zxid(1, 9), 1, pb::LOOKING);
  unsynced.mutable_vote()->set_unsynced(true);
  one.peer->receive(4, unsynced);
  for (int t = 0; t < 5; ++t) one.peer->tick(0);
  CHECK(one.peer->role() == Role::looking);
  one.peer->receive(5, vote(5, round, 2, make_zxid(1, 9), 1, pb::LOOKING));
  for (int t = 0; t < 5; ++t) one.peer->tick(0);
  CHECK(one.peer->role() == Role::following);
  CHECK(one.peer->leader() == 2);
}

TEST_CASE("a leader's pings carry its tree's digest; a follower told to resync is synced from nothing") {
  Net net(3);
  PeerId l = net.settle();
  REQUIRE(l != 0);
  REQUIRE(net.peers[l]->propose("a"));
  REQUIRE(net.peers[l]->propose("b"));
  net.deliver_all();
  net.ticks(3);
  PeerId f = l == 1 ? 2 : 1;
  CHECK(net.leader_digests[f].empty());  // none noted: none sent
  Zxid last = net.logs[l].last_zxid();
  net.peers[l]->note_digest(last, 0xabc);
  net.ticks(3);
  REQUIRE_FALSE(net.leader_digests[f].empty());
  CHECK(net.leader_digests[f].back() == std::make_pair(last, uint64_t{0xabc}));
  // Its host found its own digest after `last` differs: it asks to be synced from nothing.
  net.peers[f]->resync();
  net.drain(f);
  net.ticks(20);
  REQUIRE(net.peers[f]->serving());
  CHECK(net.resets[f] == 1);
  CHECK(net.logs[f].last_zxid() == last);
  CHECK(net.logs[f].log.size() == net.logs[l].log.size());
  net.peers[l]->resync();  // a leader is never told so: nothing happens
  CHECK(net.peers[l]->role() == Role::leading);
}

TEST_CASE("commits and informs carry the leader's latest digest, without waiting for a ping") {
  // Issue 46, point 3: digests travel with commits (to observers, with informs), so a member
  // compares as it applies, not only at the next ping.
  auto shape = [](PeerId, PeerConfig& c, MemLog&) {
    c.ensemble.voters = {1, 2, 3};
    c.ensemble.observers = {4};
  };
  Net net(4, {}, {}, shape);
  PeerId l = net.settle();
  REQUIRE(l != 0);
  net.ticks(10);
  REQUIRE(net.peers[4]->serving());
  REQUIRE(net.peers[l]->propose("a"));
  net.drain(l);
  net.deliver_all();
  Zxid first = net.logs[l].last_zxid();
  net.peers[l]->note_digest(first, 0xabc);
  REQUIRE(net.peers[l]->propose("b"));
  net.drain(l);
  net.deliver_all();  // no tick: no ping went out
  for (PeerId p = 1; p <= 4; ++p) {
    if (p == l) continue;
    INFO("member " << p);
    REQUIRE_FALSE(net.leader_digests[p].empty());
    CHECK(net.leader_digests[p].back() == std::make_pair(first, uint64_t{0xabc}));
  }
}

TEST_CASE("an unsynced member that heard a synced voter never leads, even backed by votes for its old self") {
  // Simulator seed 1796193060004735: leader 3 was wiped and restarted at once; 1 and 2 still
  // followed its earlier incarnation and their settled votes named 3, which took them as backing,
  // led, and once established its empty history counted as synced.
  PeerConfig c;
  c.id = 3;
  c.ensemble.voters = {1, 2, 3};
  c.synced = false;
  MemoryLog log;
  ZabPeer p(c, log, Epochs{}, 0);
  (void)p.ready();
  for (PeerId from : {1, 2}) p.receive(from, vote(from, 1, 3, make_zxid(1, 9), 1, pb::FOLLOWING));
  for (int t = 0; t < 20; ++t) p.tick(0);
  CHECK(p.role() == Role::looking);
  auto out = p.ready();
  bool voted = false;
  for (auto& [to, m] : out.messages) {
    if (!m.has_vote()) continue;
    voted = true;
    CHECK(m.vote().leader() == 0);  // it stands for nothing
    CHECK(m.vote().unsynced());
  }
  CHECK(voted);
}

TEST_CASE("two wiped members beside an intact one elect nothing") {
  // Two faults (a majority of stores lost): unavailable, not an empty tree served.
  std::map<PeerId, std::vector<Entry>> logs{{1, history(1, 4)}, {2, {}}, {3, {}}};
  std::map<PeerId, Epochs> e{{1, {1, 1}}};
  Net net(3, logs, e, [](PeerId id, PeerConfig& c, MemLog&) { c.synced = id == 1; });
  net.settle();
  net.ticks(60);
  CHECK(net.leader() == 0);
  for (PeerId p = 1; p <= 3; ++p) CHECK(net.peers[p]->role() == Role::looking);
  CHECK(net.logs[1].last_zxid() == make_zxid(1, 4));
}

TEST_CASE("two wiped members wait for every voter before electing each other") {
  // The intact member has a store to load and starts last (it_storage_faults "majority lost",
  // CI run of 6e745bf): the two empty ones agreed within a few ticks and were established before
  // its vote came, and it would have followed their empty tree.
  std::map<PeerId, std::vector<Entry>> logs{{1, history(1, 4)}, {2, {}}, {3, {}}};
  std::map<PeerId, Epochs> e{{1, {1, 1}}};
  auto wiped = [](PeerId id, PeerConfig& c, MemLog&) { c.synced = id == 1; };
  {
    Net net(3, logs, e, wiped);
    net.cut.insert(1);  // still loading its store: nothing it said at its start went out
    std::erase_if(net.wire, [](const auto& w) { return w.second.first == 1; });
    net.deliver_all();
    net.ticks(6);  // initLimit is 10
    CHECK(net.leader() == 0);
    for (PeerId p : {2, 3}) CHECK(net.peers[p]->role() == Role::looking);
    net.cut.erase(1);
    net.ticks(60);
    CHECK(net.leader() == 0);  // two stores of three lost: unavailable, not an empty tree served
    CHECK(net.logs[1].last_zxid() == make_zxid(1, 4));
  }
  {
    // Never heard, however long, the intact member is still waited for: the two cannot tell it
    // from a new ensemble's member not started yet, and electing would serve an empty tree over
    // its writes (builds before 2026-12-02 elected after initLimit). Unavailable, not unsafe.
    Net net(3, logs, e, wiped);
    net.cut.insert(1);
    std::erase_if(net.wire, [](const auto& w) { return w.second.first == 1; });
    net.deliver_all();
    net.ticks(60);
    CHECK(net.leader() == 0);
    net.cut.erase(1);
    net.ticks(60);
    CHECK(net.leader() == 0);
    CHECK(net.logs[1].last_zxid() == make_zxid(1, 4));
  }
  // A new ensemble whose members all started hears every voter and elects well before initLimit.
  Net fresh(3, {}, {}, [](PeerId, PeerConfig& c, MemLog&) { c.synced = false; });
  fresh.deliver_all();
  fresh.ticks(6);
  CHECK(fresh.leader() != 0);
  // One started with a voter missing waits for it, and elects once it starts.
  Net partial(3, {}, {}, [](PeerId, PeerConfig& c, MemLog&) { c.synced = false; });
  partial.cut.insert(3);
  std::erase_if(partial.wire, [](const auto& w) { return w.second.first == 3; });
  partial.deliver_all();
  partial.ticks(60);
  CHECK(partial.leader() == 0);
  partial.cut.erase(3);
  partial.ticks(30);
  CHECK(partial.leader() != 0);
}

TEST_CASE("the ensemble runs at the newest protocol every member speaks; digests wait for it") {
  // Issue 48: member 3 runs the build before (it speaks 2 alone, and sends what that build
  // sends); the others speak 2 to 3. The ensemble runs at 2, and the leader sends no digest
  // until member 3 is upgraded (restarted speaking 2 to 3) and heard.
  auto old_three = [](PeerId id, PeerConfig& c, MemLog&) {
    if (id != 3) return;
    c.protocols = ProtocolRange{2, 2};
    c.synced = false;  // which the build before cannot say
  };
  Net net(3, {}, {}, old_three);
  // What member 3 sends is the build before's: no range, and no unsynced mark.
  int from_three = 0;
  for (const auto& [to, msg] : net.wire) {
    if (msg.first != 3) continue;
    auto d = decode_peer_message(msg.second);
    REQUIRE(d.message);
    ++from_three;
    CHECK(d.message->version() == 2);
    CHECK(d.message->speaks() == 0);
    REQUIRE(d.message->has_vote());
    CHECK_FALSE(d.message->vote().unsynced());
  }
  CHECK(from_three == 2);
  CHECK_FALSE(net.peers[3]->store_synced());
  PeerId l = net.settle();
  REQUIRE(l != 0);
  net.ticks(3);
  for (PeerId p = 1; p <= 3; ++p) {
    INFO("member " << p);
    CHECK(net.peers[p]->ensemble_version() == 2);
  }
  REQUIRE(net.peers[l]->propose("a"));
  net.drain(l);
  net.deliver_all();
  REQUIRE(net.logs[l].last_zxid() != 0);
  net.peers[l]->note_digest(net.logs[l].last_zxid(), 0xabc);
  net.ticks(3);
  for (PeerId p = 1; p <= 3; ++p) CHECK(net.leader_digests[p].empty());
  CHECK(net.ensemble_versions[l].empty());  // it started at 2 and stayed there

  // Upgrade member 3: stopped, then started again on the new build with its log and epochs.
  PeerConfig c;
  c.id = 3;
  c.ensemble.voters = {1, 2, 3};
  net.peers[3] = std::make_unique<ZabPeer>(c, net.logs[3], net.epochs[3], net.committed[3]);
  net.drain(3);
  net.ticks(20);
  REQUIRE(net.leader() != 0);
  l = net.leader();
  for (PeerId p = 1; p <= 3; ++p) {
    INFO("member " << p);
    CHECK(net.peers[p]->ensemble_version() == 3);
    REQUIRE_FALSE(net.ensemble_versions[p].empty());
    CHECK(net.ensemble_versions[p].back() == 3);
  }
  net.peers[l]->note_digest(net.logs[l].last_zxid(), 0xabc);
  net.ticks(3);
  for (PeerId p = 1; p <= 3; ++p)
    if (p != l) CHECK_FALSE(net.leader_digests[p].empty());

  // A member of a later build that no longer speaks 3 is not heard: its messages are refused.
  pb::PeerMessage v = vote(3, 99, 3, net.logs[3].last_zxid(), 9, pb::LOOKING);
  v.set_version(4);
  v.set_speaks(5);
  CHECK(decode_peer_message(encode_peer_message(v)).error == "it speaks peer protocol 4 to 5, this member 2 to 3");
  net.peers[l]->receive(3, v);  // were it heard, a looking voter's vote would be answered
  CHECK(net.peers[l]->role() == Role::leading);
  CHECK(net.peers[l]->ready().messages.empty());
  v.set_version(2);
  v.set_speaks(3);
  net.peers[l]->receive(3, v);  // heard: the leader answers with its own vote
  CHECK_FALSE(net.peers[l]->ready().messages.empty());
}

TEST_CASE("a leader counts a member it has not heard from as the oldest protocol it speaks") {
  Net net(3);
  net.cut.insert(3);
  net.wire.clear();  // member 3's first votes, lost
  net.ticks(40);
  PeerId l = net.leader();
  REQUIRE(l != 0);
  net.ticks(3);
  CHECK(net.peers[l]->ensemble_version() == 2);  // member 3 may run the build before
  net.cut.erase(3);
  net.ticks(20);
  CHECK(net.peers[l]->ensemble_version() == 3);
  // A member that speaks 2 alone joins again (an operator rolled it back): the version falls.
  PeerConfig c;
  c.id = 3;
  c.ensemble.voters = {1, 2, 3};
  c.protocols = ProtocolRange{2, 2};
  net.peers[3] = std::make_unique<ZabPeer>(c, net.logs[3], net.epochs[3], net.committed[3]);
  net.drain(3);
  net.ticks(20);
  REQUIRE(net.leader() != 0);
  CHECK(net.peers[net.leader()]->ensemble_version() == 2);
  REQUIRE_FALSE(net.ensemble_versions[l].empty());
  CHECK(net.ensemble_versions[l].back() == 2);
}

TEST_CASE("a leader drops the link of a follower that restarted: its NEWLEADER ack no longer counts") {
  // Simulator seed 1796000000002488: a follower acknowledged NEWLEADER, lost power and came
  // back (no connection broke), joined a later leadership that committed; the first leader then
  // took a late ack from another follower and was established on the lost one's, lacking that
  // commit. Here: five voters, 4 and 5 cut off, so leader 3 needs the acks of both 1 and 2.
  Net net(5, {}, {}, [](PeerId id, PeerConfig& c, MemLog&) { c.incarnation = 100 + id; });
  net.cut = {4, 5};
  net.wire.clear();
  // Delivers what is on the wire, holding everything 2 sends 3 from its NEWLEADER ack on.
  std::deque<std::pair<PeerId, pb::PeerMessage>> held;
  auto deliver = [&] {
    while (!net.wire.empty()) {
      auto [to, msg] = net.wire.front();
      net.wire.pop_front();
      if (net.cut.count(to)) continue;
      auto d = decode_peer_message(msg.second);
      REQUIRE(d.message);
      if (msg.first == 2 && to == 3 && (d.message->has_ack_new_leader() || !held.empty())) {
        held.emplace_back(msg.first, *d.message);
        continue;
      }
      net.peers[to]->receive(msg.first, *d.message);
      net.drain(to);
    }
  };
  auto synced_links = [&] {
    int n = 0;
    for (const auto& l : net.peers[3]->link_views()) n += l.synced ? 1 : 0;
    return n;
  };
  uint64_t now = 0;
  for (int t = 0; t < 40 && (held.empty() || synced_links() < 1); ++t) {
    for (PeerId p : {1, 2, 3}) {
      net.peers[p]->tick(now);
      net.drain(p);
    }
    ++now;
    deliver();
  }
  REQUIRE(net.peers[3]->role() == Role::leading);
  REQUIRE(synced_links() == 1);  // 1's ack counted
  REQUIRE_FALSE(held.empty());   // 2's held
  CHECK_FALSE(net.peers[3]->serving());

  // Member 1 restarts with its log and epochs; its first votes reach the leader.
  PeerConfig c;
  c.id = 1;
  c.ensemble.voters = {1, 2, 3, 4, 5};
  c.incarnation = 201;
  net.peers[1] = std::make_unique<ZabPeer>(c, net.logs[1], net.epochs[1], net.committed[1]);
  net.drain(1);
  for (auto it = net.wire.begin(); it != net.wire.end();) {
    if (it->first != 3) {
      ++it;
      continue;
    }
    auto d = decode_peer_message(it->second.second);
    REQUIRE(d.message);
    net.peers[3]->receive(it->second.first, *d.message);
    it = net.wire.erase(it);
  }
  net.drain(3);
  CHECK(synced_links() == 0);
  // Now 2's ack: with 1's gone, 3 and 2 are no quorum of five.
  for (auto& [from, m] : held) net.peers[3]->receive(from, m);
  held.clear();
  net.drain(3);
  CHECK_FALSE(net.peers[3]->serving());
  // The restarted member follows again on a new link, synced: then the leader is established.
  for (int t = 0; t < 40 && !net.peers[3]->serving(); ++t) {
    for (PeerId p : {1, 2, 3}) {
      net.peers[p]->tick(now);
      net.drain(p);
    }
    ++now;
    net.deliver_all();
  }
  CHECK(net.peers[3]->serving());
  CHECK(net.peers[1]->role() == Role::following);
  CHECK(synced_links() == 2);
}
