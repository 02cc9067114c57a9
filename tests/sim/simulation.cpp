#include "tests/sim/simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <vector>

#include "consensus/memory_log.hpp"
#include "consensus/peer_codec.hpp"
#include "server/pipeline/prep.hpp"
#include "server/reconfig/config_txn.hpp"
#include "server/state/data_tree.hpp"
#include "server/state/snapshot_walk.hpp"
#include "server/state/txn.hpp"
#include "wire/records.hpp"

namespace warden::sim {

using consensus::Entry;
using consensus::PeerId;
using consensus::Zxid;

namespace {

constexpr int64_t tick_ms = 100;                      // ZooKeeper's tickTime, shortened
constexpr int64_t slowest_disk_ms = 450;              // the slowest disk sync fault() sets
constexpr int64_t clock_base_ms = 1'700'000'000'000;  // txn times: simulated ms from here

uint64_t fnv(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex(Zxid z) { return fmt::format("0x{:x}", static_cast<uint64_t>(z)); }

// The state machine at a zxid as the storage snapshot format has it: the walk's chunks, each
// length-prefixed.
std::string encode_tree(const server::DataTree& tree) {
  server::SnapshotWalk walk(tree);
  std::string out;
  while (!walk.done()) {
    auto [key, chunk] = walk.next_chunk(64);
    if (chunk.empty() && walk.done()) break;
    uint32_t n = static_cast<uint32_t>(chunk.size());
    out.append(reinterpret_cast<const char*>(&n), 4);
    out += chunk;
  }
  return out;
}

bool load_tree(server::DataTree& tree, std::string_view bytes, Zxid at) {
  tree.start_load();
  while (!bytes.empty()) {
    if (bytes.size() < 4) return false;
    uint32_t n;
    std::memcpy(&n, bytes.data(), 4);
    bytes.remove_prefix(4);
    if (bytes.size() < n) return false;
    if (!server::for_each_in_chunk(bytes.substr(0, n),
                                   [&](std::string_view p, std::string_view r) { return tree.load_node(p, r); }))
      return false;
    bytes.remove_prefix(n);
  }
  tree.finish_load(at);
  return true;
}

// One server: its disk (epochs, log after a snapshot, commit mark), and while it is up its Zab
// core, its tree and, while it leads, its prep.
struct Replica final : consensus::MemoryLog {
  PeerId id = 0;
  bool up = true;
  uint64_t incarnation = 0;  // a crash voids the disk writes and timers of the one before
  uint64_t log_gen = 0;      // a cut or a snapshot install voids the disk writes in flight
  // On disk.
  consensus::Epochs epochs;
  consensus::Ensemble config;  // the configuration in force, as the core last reported it
  Zxid durable_zxid = 0;  // the log (MemoryLog's entries) is durable up to here
  Zxid commit_mark = 0;
  bool synced = false;  // the store's synced mark: new stores start unsynced, as a server's do
  bool upgraded = true;  // runs the new build (SimOptions::mixed_versions: the build before until a restart)
  bool wipe_at_restart = false;  // its store is lost at its restart: wiped, or damaged (below)
  bool damaged = false;
  consensus::Epochs epochs_before;  // before their newest write: what losing that write leaves
  // The highest epochs the disk acknowledged: Zab's promise (a member that acknowledged an epoch
  // never forgets it) holds while the store does; only losing the whole store resets it.
  consensus::Epochs promised;
  // The disk: one write at a time, taking disk_ms.
  bool writing = false;
  Zxid writing_upto = 0;   // the write in flight holds the log up to here
  // What the disk does to its next write (of the log, or of the epochs): fail it (the server
  // stops), lose power during it, or acknowledge an epochs write it then loses (seen at the next
  // crash, unless a later epochs write lands: one record holds them).
  enum WriteFault { none, eio, fsync, enospc, power_cut, lost } next_write_fails = none;
  bool epochs_write_lost = false;
  bool reads_fail_at_restart = false;  // a few times, then pass: a later start
  int64_t disk_ms = 3;
  // While up.
  std::unique_ptr<consensus::ZabPeer> peer;
  std::unique_ptr<server::DataTree> tree;
  std::unique_ptr<server::Prep> prep;
  Zxid applied = 0;
  std::map<Zxid, uint64_t> marks;  // own proposals: prep's mark
  std::set<Zxid> waiting;          // own proposals a client waits for
  uint64_t applies_since_snapshot = 0;
  uint64_t snapshot_every = 100;
  int64_t served_at = -1;  // the last tick at which it served (a leader established, or synced)
};

struct Event {
  enum Kind { tick, deliver, disk_done, client, fault, crash, restart, heal, quiet, calm_check } kind;
  explicit Event(Kind k, int64_t when = 0) : kind(k), at(when) {}
  int64_t at = 0;
  uint64_t seq = 0;
  int a = 0, b = 0;         // replicas (index), or a partition id
  uint64_t inc = 0, gen = 0;
  Zxid zxid = 0;
  std::string bytes;
  bool operator>(const Event& o) const { return std::tie(at, seq) > std::tie(o.at, o.seq); }
};

class World {
 public:
  explicit World(const SimOptions& o) : opt_(o), rng_(o.seed) {}
  SimResult run();

 private:
  // ---- plumbing
  void schedule(Event e) {
    e.seq = ++seq_;
    queue_.push(std::move(e));
  }
  uint64_t rand(uint64_t n) { return n ? rng_() % n : 0; }
  double chance() { return static_cast<double>(rng_() % 1000000) / 1000000.0; }
  void fail(const std::string& why) {
    if (!result_.ok) return;
    result_.ok = false;
    result_.failure = fmt::format("t={}ms step={}: {}", now_, result_.steps, why);
  }
  void trace(const std::string& line) {
    if (opt_.trace) opt_.trace(fmt::format("{:>7}ms {}", now_, line));
  }
  Replica& rep(PeerId id) { return reps_[static_cast<size_t>(id - 1)]; }
  bool blocked(PeerId from, PeerId to) const {
    for (const auto& [id, pairs] : partitions_)
      if (pairs.count({from, to})) return true;
    return false;
  }

  // ---- replicas
  consensus::PeerConfig config_of(const Replica& r) const;
  void start(Replica& r);
  void restart(Replica& r);  // a store lost at the restart first
  void upgrade(Replica& r);  // SimOptions::mixed_versions: to the new build, before a start
  void check_ensemble_version();
  void crash(Replica& r, bool torn = false);
  void write_fails(Replica& r, const char* what);
  void lose_a_write(Replica& r);
  void forget_epochs_write(Replica& r);  // the newest epochs write is gone
  void schedule_restart(Replica& r, int64_t after_ms);
  void wipe(Replica& r);  // its store only: its configuration (files beside it) stays
  void damage(Replica& r);  // found at the start: set aside (a wipe), or cut (the plant)
  bool may_wipe(const Replica& r) const;
  void process(Replica& r);
  void kick_disk(Replica& r);
  void apply_upto(Replica& r, Zxid c);
  void on_role(Replica& r);
  void check_new_leader(Replica& r);
  void maybe_snapshot(Replica& r);
  void send(Replica& from, PeerId to, const consensus::pb::PeerMessage& m);

  // ---- load and faults
  void client_op();
  void reconfigure(Replica& leader);
  std::optional<server::Txn> make_txn(Replica& leader);
  void fault();
  void begin_calm(int64_t until);
  int64_t settle_bound_ms() const;
  void check_everyone_rejoined();

  SimOptions opt_;
  std::mt19937_64 rng_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  uint64_t seq_ = 0;
  int64_t now_ = 0;
  std::vector<Replica> reps_;
  SimResult result_;
  // Network.
  std::map<int, std::set<std::pair<PeerId, PeerId>>> partitions_;
  int next_partition_ = 0;
  double drop_ = 0, dup_ = 0;
  int64_t max_delay_ = 5;
  std::map<std::pair<PeerId, PeerId>, int64_t> last_delivery_;
  bool faults_on_ = true;
  // What the checks remember.
  std::map<Zxid, uint64_t> committed_;    // zxid -> hash of the txn any replica applied there
  std::map<Zxid, uint64_t> digests_;      // zxid -> tree digest after applying it (sampled)
  std::map<uint32_t, PeerId> leaders_;    // epoch -> the leader established in it
  std::map<Zxid, uint64_t> acked_;        // zxid -> hash of an acknowledged client write
  std::map<Zxid, consensus::Ensemble> configs_;  // version -> the configuration any server put in force
  // Liveness: while every server is up, the network whole and the disks quick (a calm
  // stretch), a client write must commit within settle_bound_ms() of the stretch's start.
  int64_t calm_since_ = -1;   // the current calm stretch's start; -1: not calm
  int64_t calm_until_ = -1;   // faults resume then (the last stretch runs to the end)
  uint64_t calm_id_ = 0;
  bool calm_committed_ = false;
  // Load.
  uint64_t next_session_ = 1;
  std::vector<int64_t> sessions_;  // sessions whose creation was acknowledged
  uint32_t max_counter_ = UINT32_MAX - 1;
};

consensus::PeerConfig World::config_of(const Replica& r) const {
  consensus::PeerConfig c;
  c.id = r.id;
  c.ensemble = r.config;
  c.config_of = [](std::string_view payload) -> std::optional<consensus::Ensemble> {
    auto m = server::reconfig::members_in_txn(payload);
    if (!m) return std::nullopt;
    return consensus::Ensemble{m->voters, m->observers, 0, m->text};
  };
  c.init_limit = 10;
  c.sync_limit = 5;
  c.max_counter = max_counter_;
  c.max_entries_per_message = 64;
  c.plants = opt_.plants;
  c.synced = r.synced;
  c.incarnation = r.incarnation + 1;
  if (!r.upgraded) {  // the build before: peer protocol 2 alone, and no synced mark (synced)
    c.protocols = consensus::ProtocolRange{consensus::oldest_protocol, consensus::oldest_protocol};
    c.synced = true;
  }
  return c;
}

void World::send(Replica& from, PeerId to, const consensus::pb::PeerMessage& m) {
  if (to < 1 || to > static_cast<PeerId>(reps_.size())) return fail("a message to an unknown server");
  if (blocked(from.id, to) || chance() < drop_) return;
  std::string bytes = consensus::encode_peer_message(m);
  int copies = chance() < dup_ ? 2 : 1;
  for (int i = 0; i < copies; ++i) {
    Event e{Event::deliver};
    // Delays vary, but one server's messages to another arrive in the order sent, as on one
    // TCP connection: reordering happens only between different pairs.
    int64_t& last = last_delivery_[{from.id, to}];
    e.at = std::max(now_ + 1 + static_cast<int64_t>(rand(static_cast<uint64_t>(max_delay_))), last);
    last = e.at;
    e.a = static_cast<int>(from.id);
    e.b = static_cast<int>(to);
    e.bytes = bytes;
    schedule(std::move(e));
  }
}

void World::start(Replica& r) {
  r.up = true;
  r.tree = std::make_unique<server::DataTree>();
  r.prep.reset();
  r.marks.clear();
  r.waiting.clear();
  r.applied = 0;
  if (r.snap_zxid) {
    if (!load_tree(*r.tree, r.snap, r.snap_zxid)) return fail(fmt::format("server {}: its snapshot does not load", r.id));
    r.applied = r.snap_zxid;
  }
  // Replays what it knows to be committed; the rest waits for the leader.
  apply_upto(r, r.commit_mark);
  // As the server's host does (EnsembleReplicator): the log's newest zxid names an epoch the
  // member held, whatever its epochs record says (a store of an older build, a lost write).
  uint32_t logged = consensus::zxid_epoch(r.last_zxid());
  r.epochs = {std::max(r.epochs.accepted, logged), std::max(r.epochs.current, logged)};
  bool accepted_back = r.epochs.accepted < r.promised.accepted;
  if (accepted_back || r.epochs.current < r.promised.current)
    return fail(fmt::format("server {} starts with its {} epoch at {}, below the {} its disk acknowledged", r.id,
                            accepted_back ? "accepted" : "current",
                            accepted_back ? r.epochs.accepted : r.epochs.current,
                            accepted_back ? r.promised.accepted : r.promised.current));
  r.peer = std::make_unique<consensus::ZabPeer>(config_of(r), r, r.epochs, r.commit_mark);
  Event t{Event::tick};
  t.at = now_ + 1 + static_cast<int64_t>(rand(tick_ms));
  t.a = static_cast<int>(r.id);
  t.inc = r.incarnation;
  schedule(t);
  process(r);
}

void World::restart(Replica& r) {
  // The store is lost now, so the rule must hold now: a reconfig proposed while the server was
  // down (its link not yet timed out) can have made it a voter the rule needs (simulator seed
  // 1796310000023443 with --reconfig: a pending configuration of two voters, one of them this
  // store, which no synced quorum could then complete). Lost beyond the rule, that is the
  // second class's case; here the store survives.
  if (r.wipe_at_restart && !may_wipe(r)) {
    r.wipe_at_restart = false;
    trace(fmt::format("server {}'s store survives after all: losing it now would break the rule", r.id));
  }
  if (r.wipe_at_restart) r.damaged ? damage(r) : wipe(r);
  r.reads_fail_at_restart = false;
  if (!r.upgraded && faults_on_ && chance() < 0.5) upgrade(r);
  trace(fmt::format("server {} restarts{}", r.id, r.upgraded ? "" : " (on the build before)"));
  start(r);
}

bool World::may_wipe(const Replica& r) const {
  if (opt_.beyond_rule) {  // any number, while one voter keeps a synced store
    auto kept = [&](PeerId id) {
      const Replica& o = reps_[static_cast<size_t>(id - 1)];
      return id != r.id && o.synced && !o.wipe_at_restart;
    };
    const auto& voters = reps_.front().config.voters;
    return std::any_of(voters.begin(), voters.end(), kept);
  }
  // One lost store at a time: every other store synced, none about to be wiped; and the voters
  // of each configuration any server holds in force or pending keep a synced quorum without it
  // (a reconfig down to one voter leaves that voter's store the only copy).
  auto intact = [&](PeerId id) {
    const Replica& o = reps_[static_cast<size_t>(id - 1)];
    return id != r.id && o.synced && !o.wipe_at_restart;
  };
  for (const auto& o : reps_) {
    if (o.id != r.id && (!o.synced || o.wipe_at_restart)) return false;
    std::vector<const consensus::Ensemble*> configs{&o.config};
    if (o.peer && o.peer->pending_config()) configs.push_back(&o.peer->pending_config()->second);
    for (const auto* e : configs)
      if (consensus::count_of(e->voters, intact) < e->quorum()) return false;
  }
  return true;
}

void World::wipe(Replica& r) {
  trace(fmt::format("server {}'s disk is wiped (it held up to {})", r.id, hex(r.last_zxid())));
  ++result_.wipes;
  r.wipe_at_restart = false;
  ++r.log_gen;
  r.log.clear();
  r.snap_zxid = 0;
  r.snap.clear();
  r.epochs = {};
  r.epochs_before = {};
  r.promised = {};
  r.durable_zxid = 0;
  r.commit_mark = 0;
  r.synced = false;
}

void World::damage(Replica& r) {
  ++result_.damaged;
  r.damaged = false;
  if (!opt_.truncate_on_damage || r.log.empty()) {
    trace(fmt::format("server {}'s store is damaged: it is set aside, the server starts on an empty one", r.id));
    --result_.wipes;  // counted as damaged, not wiped
    wipe(r);
    return;
  }
  // The plant: the log cut before a damaged record, everything else kept as if whole.
  size_t at = static_cast<size_t>(rand(r.log.size()));
  Zxid keep = at == 0 ? r.snap_zxid : r.log[at - 1].zxid;
  trace(fmt::format("server {}'s log is damaged at {}: cut after {} (planted)", r.id, hex(r.log[at].zxid), hex(keep)));
  r.wipe_at_restart = false;
  ++r.log_gen;
  r.truncate_after(keep);
  r.durable_zxid = std::min(r.durable_zxid, r.last_zxid());
  r.commit_mark = std::min(r.commit_mark, r.last_zxid());
}

void World::crash(Replica& r, bool torn) {
  trace(fmt::format("server {} crashes (durable up to {}, log to {})", r.id, hex(r.durable_zxid), hex(r.last_zxid())));
  r.up = false;
  ++r.incarnation;
  // What was not durable is gone; a torn write leaves a prefix of its records (never
  // acknowledged: the server acknowledges only once the whole write synced).
  if (torn && r.writing && r.writing_upto > r.durable_zxid) {
    std::vector<Zxid> in_flight;
    for (auto it = r.above(r.durable_zxid); it != r.log.end() && it->zxid <= r.writing_upto; ++it)
      in_flight.push_back(it->zxid);
    if (!in_flight.empty()) {
      Zxid kept = in_flight[rand(in_flight.size())];
      trace(fmt::format("server {}'s write in flight is torn: its records up to {} of {} survive", r.id, hex(kept),
                        hex(r.writing_upto)));
      ++result_.torn_writes;
      r.durable_zxid = kept;
    }
  }
  r.truncate_after(r.durable_zxid);
  r.writing = false;
  r.next_write_fails = Replica::none;
  if (r.epochs_write_lost) {
    ++result_.lost_writes;
    forget_epochs_write(r);
  }
  r.peer.reset();
  r.tree.reset();
  r.prep.reset();
  r.marks.clear();
  r.waiting.clear();
}

// The disk fails the write of `what` (the log, or the epochs): the server stops, as the server
// does (after a failed fsync the kernel may have dropped what the file took since its last good
// one, so it never writes that store again), and starts again once the disk is sound (ENOSPC:
// later, once an operator made room). Nothing the failed write carried was acknowledged.
void World::write_fails(Replica& r, const char* what) {
  static const char* const names[] = {"", "EIO", "a failed fsync", "ENOSPC", "", ""};
  bool full = r.next_write_fails == Replica::enospc;
  trace(fmt::format("server {}'s disk fails a write of its {} ({}): it stops", r.id, what, names[r.next_write_fails]));
  ++result_.failed_writes;
  crash(r);
  schedule_restart(r, full ? 1000 + static_cast<int64_t>(rand(4000)) : 50 + static_cast<int64_t>(rand(3000)));
}

// At a crash, the disk loses one write it had acknowledged as synced (a lost write): the newest
// of the epochs' (of one of their two copies: the server's store reads the higher of the replica
// state's and durable-end's, so nothing goes back; with the plant one_epoch_copy they go back,
// the log's later writes kept), the commit mark's (it goes back: a member then waits for its
// leader to tell it what committed), or the log's synced tail (the store's durable-end says
// more than the log holds: damage, set aside at the start; only within the rule).
void World::lose_a_write(Replica& r) {
  ++result_.lost_writes;
  uint64_t which = rand(3);
  if (which == 2 && r.last_zxid() > r.snap_zxid && may_wipe(r)) {
    trace(fmt::format("server {}'s disk lost the synced tail of its log: damage, found at the start", r.id));
    r.wipe_at_restart = true;
    r.damaged = true;
    return;
  }
  if (which == 1 && r.commit_mark > r.snap_zxid) {
    Zxid before = r.snap_zxid;
    for (auto it = r.above(r.snap_zxid); it != r.log.end() && it->zxid < r.commit_mark; ++it)
      if (rand(2)) before = it->zxid;
    trace(fmt::format("server {}'s disk lost a write of its commit mark: {} instead of {}", r.id, hex(before),
                      hex(r.commit_mark)));
    r.commit_mark = before;
    return;
  }
  forget_epochs_write(r);
}

void World::forget_epochs_write(Replica& r) {
  r.epochs_write_lost = false;
  if (!opt_.one_epoch_copy) {
    trace(fmt::format("server {}'s disk lost the newest write of one of its epochs' two copies: the other holds {}/{}",
                      r.id, r.epochs.accepted, r.epochs.current));
    return;
  }
  trace(fmt::format("server {}'s disk lost the newest write of its epochs (one copy, planted): {}/{} instead of {}/{}",
                    r.id, r.epochs_before.accepted, r.epochs_before.current, r.epochs.accepted, r.epochs.current));
  r.epochs = r.epochs_before;
}

void World::schedule_restart(Replica& r, int64_t after_ms) {
  Event back{Event::restart};
  back.at = now_ + after_ms;
  back.a = static_cast<int>(r.id);
  schedule(back);
}

void World::kick_disk(Replica& r) {
  if (!r.up || r.writing || r.last_zxid() <= r.durable_zxid) return;
  r.writing = true;
  r.writing_upto = r.last_zxid();
  Event e{Event::disk_done};
  e.at = now_ + r.disk_ms;
  e.a = static_cast<int>(r.id);
  e.inc = r.incarnation;
  e.gen = r.log_gen;
  e.zxid = r.last_zxid();
  schedule(e);
}

void World::process(Replica& r) {
  if (!r.up || !result_.ok) return;
  consensus::Ready rd = r.peer->ready();
  if (rd.epochs) {
    if (rd.epochs->accepted < r.epochs.accepted || rd.epochs->current < r.epochs.current)
      return fail(fmt::format("server {}: an epoch went back", r.id));
    // Written and synced before anything else of this Ready happens (nothing is sent before).
    if (r.next_write_fails == Replica::power_cut) {
      crash(r);
      ++result_.crashes;
      return schedule_restart(r, 50 + static_cast<int64_t>(rand(3000)));
    }
    bool lose = r.next_write_fails == Replica::lost;
    if (lose) {
      // Lost where it matters most: a member that acknowledged an epoch and then forgets it.
      r.next_write_fails = Replica::none;
      Event down{Event::crash};
      down.at = now_ + static_cast<int64_t>(rand(400));
      down.a = static_cast<int>(r.id);
      down.inc = r.incarnation;
      schedule(down);
      trace(fmt::format("server {}'s disk acknowledges this epochs write and loses it", r.id));
    } else if (r.next_write_fails != Replica::none) {
      return write_fails(r, "epochs");
    }
    r.epochs_before = r.epochs;  // what losing this write leaves
    r.epochs_write_lost = lose;  // a later write that lands replaces the whole record
    r.epochs = *rd.epochs;
    r.promised = {std::max(r.promised.accepted, r.epochs.accepted), std::max(r.promised.current, r.epochs.current)};
  }
  if (rd.synced && r.upgraded) r.synced = *rd.synced;  // the build before keeps no mark
  if (rd.config) {
    if (rd.config->version < r.config.version) return fail(fmt::format("server {}: its configuration went back", r.id));
    auto [seen, fresh] = configs_.emplace(rd.config->version, *rd.config);
    if (!fresh && !(seen->second == *rd.config))
      return fail(fmt::format("two configurations of version {} came into force", hex(rd.config->version)));
    r.config = *rd.config;
    trace(fmt::format("server {} puts configuration {} in force: voters {}, observers {}", r.id,
                      hex(r.config.version), fmt::join(r.config.voters, ","), fmt::join(r.config.observers, ",")));
  }
  // A member empties itself only when its applied history is not the leader's (a restored or
  // damaged one): with every disk whole, as here, that is a divergence.
  if (rd.reset) return fail(fmt::format("server {}: synced from nothing: what it applied is not the leader's", r.id));
  if (rd.truncate_after) {
    Zxid t = *rd.truncate_after;
    if (t < r.applied && t < r.last_zxid())
      return fail(fmt::format("server {}: told to cut the log after {}, below what it applied ({})", r.id, hex(t),
                              hex(r.applied)));
    r.truncate_after(t);
    if (t < r.last_zxid()) return fail(fmt::format("server {}: a cut reaches into its snapshot", r.id));
    r.durable_zxid = std::min(r.durable_zxid, t);
    ++r.log_gen;
    r.writing = false;
  }
  if (rd.snapshot) {
    auto& [z, bytes] = *rd.snapshot;
    trace(fmt::format("server {} installs a snapshot at {}", r.id, hex(z)));
    r.snap = bytes;
    r.snap_zxid = z;
    r.log.clear();
    r.durable_zxid = z;
    ++r.log_gen;
    r.writing = false;
    if (z >= r.applied) {  // a server already past it keeps its tree: the leader's log continues it
      r.tree = std::make_unique<server::DataTree>();
      if (!load_tree(*r.tree, bytes, z)) return fail(fmt::format("server {}: a received snapshot does not load", r.id));
      r.applied = z;
    }
    r.commit_mark = std::min(r.applied, z);
  }
  for (auto& e : rd.append) {
    if (e.zxid <= r.last_zxid())
      return fail(fmt::format("server {}: told to append {} after {}", r.id, hex(e.zxid), hex(r.last_zxid())));
    r.log.push_back(std::move(e));
  }
  kick_disk(r);
  for (const auto& [to, m] : rd.messages) send(r, to, m);
  apply_upto(r, rd.committed);
  if (rd.role_changed) on_role(r);
}

void World::apply_upto(Replica& r, Zxid c) {
  while (result_.ok && r.applied < c) {
    auto it = r.above(r.applied);
    if (it == r.log.end() || it->zxid > c) break;
    const Entry& e = *it;
    if (e.zxid <= r.applied) return fail(fmt::format("server {}: applies {} after {}", r.id, hex(e.zxid), hex(r.applied)));
    uint64_t h = fnv(e.payload);
    auto [seen, fresh] = committed_.emplace(e.zxid, h);
    if (!fresh && seen->second != h)
      return fail(fmt::format("two servers hold different txns at the committed zxid {} (server {})", hex(e.zxid), r.id));
    auto txn = server::decode_txn(e.payload);
    if (!txn) return fail(fmt::format("server {}: the txn at {} does not decode", r.id, hex(e.zxid)));
    if (fresh && txn->type == static_cast<int32_t>(wire::OpCode::reconfig)) ++result_.reconfigs_committed;
    std::vector<server::WatchTrigger> ignored;
    r.tree->apply(*txn, e.zxid, ignored);
    r.applied = e.zxid;
    // Sampled zxids, the same on every replica: a digest walks the whole tree.
    if (fnv(hex(e.zxid)) % 8 == 0) {
      uint64_t d = r.tree->digest();
      auto [dit, dfresh] = digests_.emplace(e.zxid, d);
      if (!dfresh && dit->second != d)
        return fail(fmt::format("server {}: its tree after {} differs from another replica's", r.id, hex(e.zxid)));
    }
    if (auto m = r.marks.find(e.zxid); m != r.marks.end()) {
      if (r.prep) r.prep->retire(m->second);
      r.marks.erase(m);
    }
    if (r.waiting.erase(e.zxid)) {
      acked_[e.zxid] = h;
      ++result_.acked;
      if (calm_since_ >= 0 && !calm_committed_) {
        calm_committed_ = true;
        result_.max_settle_ms = std::max(result_.max_settle_ms, now_ - calm_since_);
      }
      if (auto* cs = std::get_if<server::CreateSessionTxn>(&txn->body); cs && sessions_.size() < 32)
        sessions_.push_back(txn->session);
      if (std::holds_alternative<server::CloseSessionTxn>(txn->body))
        std::erase(sessions_, txn->session);
    }
    ++r.applies_since_snapshot;
  }
  r.commit_mark = std::max(r.commit_mark, std::min(r.applied, r.durable_zxid));
  maybe_snapshot(r);
}

void World::maybe_snapshot(Replica& r) {
  // Now and then a server snapshots its tree and drops the log below it, so that a follower far
  // behind needs a SNAP.
  if (r.applies_since_snapshot < r.snapshot_every || r.applied > r.durable_zxid || r.applied <= r.snap_zxid) return;
  r.applies_since_snapshot = 0;
  r.snap = encode_tree(*r.tree);
  r.snap_zxid = r.applied;
  r.log.erase(r.log.begin(), r.above(r.applied));
  trace(fmt::format("server {} snapshots at {}", r.id, hex(r.snap_zxid)));
}

void World::on_role(Replica& r) {
  const auto& p = *r.peer;
  trace(fmt::format("server {} is {}{} (epoch {}, leader {}, committed {})", r.id, consensus::role_name(p.role()),
                    p.serving() ? ", serving" : "", p.epoch(), p.leader(), hex(p.committed())));
  bool leads = p.role() == consensus::Role::leading && p.serving();
  if (!leads) {
    // Clients waiting on this server see a lost connection; what was proposed may still commit.
    r.prep.reset();
    r.marks.clear();
    r.waiting.clear();
    return;
  }
  if (!r.prep) {
    check_new_leader(r);
    r.prep = std::make_unique<server::Prep>(*r.tree, true);
    ++result_.elections;
  }
}

void World::check_new_leader(Replica& r) {
  uint32_t e = r.peer->epoch();
  auto [it, fresh] = leaders_.emplace(e, r.id);
  if (!fresh && it->second != r.id)
    return fail(fmt::format("two leaders established in epoch {}: servers {} and {}", e, it->second, r.id));
  for (const auto& [z, h] : committed_) {
    if (z <= r.snap_zxid) continue;
    const Entry* have = r.entry(z);
    if (!have || fnv(have->payload) != h)
      return fail(fmt::format("the committed txn {} is not in the log of server {}, leader of epoch {}", hex(z), r.id, e));
  }
}

std::optional<server::Txn> World::make_txn(Replica& leader) {
  int64_t now = clock_base_ms + now_;
  auto pick_session = [&]() -> int64_t { return sessions_.empty() ? 0 : sessions_[rand(sessions_.size())]; };
  uint64_t kind = rand(100);
  if (kind < 8 || sessions_.empty()) {
    server::Txn t;
    t.session = static_cast<int64_t>(next_session_++);
    t.time = now;
    t.type = static_cast<int32_t>(wire::OpCode::createSession);
    t.body = server::CreateSessionTxn{10000, std::string(16, 'p')};
    return t;
  }
  if (kind < 12) return leader.prep->close_session(pick_session(), 0, now);
  static const server::AuthIds auth{wire::Id{"ip", "127.0.0.1"}};
  wire::AclList open{wire::Acl{wire::perms::all, wire::Id{"world", "anyone"}}};
  std::string path = fmt::format("/n{}", rand(6));
  if (rand(2)) path += fmt::format("/c{}", rand(6));
  server::PrepRequest req;
  req.auth = &auth;
  req.now_ms = now;
  req.cxid = static_cast<int32_t>(rand(1000));
  std::string body;
  if (kind < 55) {
    int32_t flags = static_cast<int32_t>(rand(4));  // persistent, ephemeral, sequential, both
    req.type = wire::OpCode::create;
    req.session = (flags & 1) ? pick_session() : static_cast<int64_t>(1 + rand(3));
    body = wire::encode(wire::CreateRequest{path, std::string(rand(8), 'd'), open, flags});
  } else if (kind < 80) {
    req.type = wire::OpCode::setData;
    req.session = pick_session();
    body = wire::encode(wire::SetDataRequest{path, std::string(rand(8), 's'), rand(3) ? -1 : 0});
  } else {
    req.type = wire::OpCode::remove;
    req.session = pick_session();
    body = wire::encode(wire::DeleteRequest{path, -1});
  }
  req.body = body;
  return leader.prep->prepare(req);
}

void World::client_op() {
  Event next{Event::client};
  next.at = now_ + 2 + static_cast<int64_t>(rand(25));
  schedule(next);
  // A client talks to a random server; a follower forwards writes to its leader.
  Replica& via = reps_[rand(reps_.size())];
  if (!via.up || !via.peer->serving()) return;
  PeerId lid = via.peer->leader();
  if (lid < 1 || lid > static_cast<PeerId>(reps_.size())) return;
  Replica& leader = rep(lid);
  if (!leader.up || !leader.prep || (lid != via.id && (blocked(via.id, lid) || blocked(lid, via.id)))) return;
  auto txn = make_txn(leader);
  if (!txn) return;
  auto z = leader.peer->propose(server::encode_txn(*txn));
  if (z) {
    leader.marks[*z] = leader.prep->mark();
    leader.waiting.insert(*z);
  }
  process(leader);
}

// A random new configuration of all the servers, proposed by the leader when it could be (no
// other reconfig pending, a quorum of the new configuration synchronised with it, as
// ZooKeeper's NewConfigNoQuorum demands).
void World::reconfigure(Replica& leader) {
  if (!leader.up || !leader.prep || !leader.peer->can_propose() || leader.peer->pending_config()) return;
  std::vector<PeerId> ids;
  for (const auto& r : reps_) ids.push_back(r.id);
  std::shuffle(ids.begin(), ids.end(), rng_);
  size_t voters = rand(4) == 0 ? 1 + rand(ids.size()) : std::min(ids.size(), static_cast<size_t>(3 + rand(3)));
  consensus::Ensemble e;
  e.voters.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(voters));
  for (size_t i = voters; i < ids.size(); ++i)
    if (rand(3) == 0) e.observers.push_back(ids[i]);
  std::sort(e.voters.begin(), e.voters.end());
  std::sort(e.observers.begin(), e.observers.end());
  if (!leader.peer->quorum_synced(e)) return;
  std::string text;
  for (const auto& r : reps_)
    if (e.is_member(r.id))
      text += fmt::format("server.{}=127.0.0.{}:2888:3888:{}\n", r.id, r.id, e.is_voter(r.id) ? "participant" : "observer");
  auto z = leader.peer->propose(server::encode_txn(server::reconfig::config_txn(text, 0, 0, clock_base_ms + now_)));
  if (!z) return;
  ++result_.reconfigs;
  leader.waiting.insert(*z);
  trace(fmt::format("server {} proposes a reconfig at {}: voters {}, observers {}", leader.id, hex(*z),
                    fmt::join(e.voters, ","), fmt::join(e.observers, ",")));
  process(leader);
}

void World::fault() {
  if (!faults_on_) return;
  Event next{Event::fault};
  next.at = now_ + 100 + static_cast<int64_t>(rand(1500));
  schedule(next);
  if (now_ < calm_until_) return;
  if (calm_since_ >= 0) {
    calm_since_ = -1;
    trace("the calm stretch ends: faults resume");
  }
  if (rand(100) < 8) {
    // A calm stretch inside the faults: liveness is checked there too, from whatever state the
    // faults left, not only once at the end.
    begin_calm(now_ + settle_bound_ms() + static_cast<int64_t>(rand(1500)));
    return;
  }
  PeerId leader = 0;
  for (const auto& r : reps_)
    if (r.up && r.peer->role() == consensus::Role::leading) leader = r.id;
  uint64_t what = rand(100);
  auto n = static_cast<PeerId>(reps_.size());
  if (what < 22) {
    Replica& r = (leader && rand(2)) ? rep(leader) : reps_[rand(reps_.size())];
    if (!r.up) return;
    uint64_t disk = opt_.disk_faults ? rand(6) : 6;  // 1: a lost write, 2: failing reads
    crash(r);
    ++result_.crashes;
    if (disk == 1) lose_a_write(r);
    if (disk == 2) r.reads_fail_at_restart = true;
    if ((opt_.wipes || opt_.disk_faults) && !r.wipe_at_restart && rand(3) == 0 && may_wipe(r)) {
      r.wipe_at_restart = true;
      r.damaged = rand(2) == 0;
    }
    schedule_restart(r, 50 + static_cast<int64_t>(rand(3000)));
  } else if (what < 50) {
    std::set<std::pair<PeerId, PeerId>> pairs;
    uint64_t shape = rand(4);
    PeerId victim = leader && rand(3) ? leader : static_cast<PeerId>(1 + rand(static_cast<uint64_t>(n)));
    std::string what_text;
    if (shape == 0) {  // two sides
      std::vector<bool> side(static_cast<size_t>(n) + 1);
      for (PeerId i = 1; i <= n; ++i) side[static_cast<size_t>(i)] = rand(2);
      for (PeerId i = 1; i <= n; ++i)
        for (PeerId j = 1; j <= n; ++j)
          if (side[static_cast<size_t>(i)] != side[static_cast<size_t>(j)]) pairs.insert({i, j});
      what_text = "splits the network";
    } else if (shape == 1) {  // one server cut off both ways
      for (PeerId j = 1; j <= n; ++j)
        if (j != victim) pairs.insert({victim, j}), pairs.insert({j, victim});
      what_text = fmt::format("cuts server {} off", victim);
    } else if (shape == 2) {  // one server hears but is not heard
      for (PeerId j = 1; j <= n; ++j)
        if (j != victim) pairs.insert({victim, j});
      what_text = fmt::format("silences server {}", victim);
    } else {  // one server is heard but hears nothing
      for (PeerId j = 1; j <= n; ++j)
        if (j != victim) pairs.insert({j, victim});
      what_text = fmt::format("deafens server {}", victim);
    }
    int id = ++next_partition_;
    ++result_.partitions;
    partitions_[id] = std::move(pairs);
    trace(fmt::format("partition {} {}", id, what_text));
    Event heal{Event::heal};
    heal.at = now_ + 200 + static_cast<int64_t>(rand(4000));
    heal.a = id;
    schedule(heal);
  } else if (what < 70) {
    drop_ = rand(3) ? 0.0 : static_cast<double>(rand(80)) / 1000.0;
    dup_ = rand(3) ? 0.0 : static_cast<double>(rand(50)) / 1000.0;
    max_delay_ = 2 + static_cast<int64_t>(rand(60));
    ++result_.network_changes;
    trace(fmt::format("network: drop {:.3f}, duplicate {:.3f}, delay up to {} ms", drop_, dup_, max_delay_));
  } else if (what >= 85 && opt_.reconfig) {
    if (leader) reconfigure(rep(leader));
  } else if (what < 85 && opt_.disk_faults && rand(3) == 0) {
    Replica& r = reps_[rand(reps_.size())];
    if (!r.up) return;
    r.next_write_fails = static_cast<Replica::WriteFault>(1 + rand(5));
    static const char* const what_next[] = {"", "disk will fail its next write", "disk will fail its next fsync",
                                            "disk will run out of space", "power fails during its next write",
                                            "disk will lose its next epochs write"};
    trace(fmt::format("server {}'s {}", r.id, what_next[r.next_write_fails]));
  } else if (what < 85) {
    Replica& r = reps_[rand(reps_.size())];
    r.disk_ms = rand(3) ? 1 + static_cast<int64_t>(rand(10)) : 50 + static_cast<int64_t>(rand(slowest_disk_ms - 50));
    ++result_.disk_changes;
    trace(fmt::format("server {}'s disk syncs in {} ms", r.id, r.disk_ms));
  }
}

// The bound a calm stretch is held to, from the cores' configuration (all the same): a leader
// left without a quorum gives up after initLimit; a vote round and the wait for a better vote
// follow (twice: a round may start just before a vote from a higher one arrives); discovery and
// sync take a few message delays and a disk write, and a write queued on a slow disk before the
// calm may still be in flight. Compare ZooKeeper: its leader waits initLimit ticks for a quorum
// of followers at each of three steps, and its election decides finalizeWait (200 ms) after the
// last better vote.
int64_t World::settle_bound_ms() const {
  consensus::PeerConfig c = config_of(reps_.front());
  int64_t ticks = c.init_limit + 2 * (c.vote_interval + 1 + c.finalize_ticks);
  return ticks * tick_ms + slowest_disk_ms + 2 * tick_ms;
}

void World::upgrade(Replica& r) {
  // The new build reads the build before's store: without a synced mark, it is synced unless it
  // is empty (EnsembleReplicator's rule).
  r.upgraded = true;
  r.synced = r.last_zxid() != 0 || r.snap_zxid != 0 || r.epochs.current != 0;
  ++result_.upgrades;
  trace(fmt::format("server {} is upgraded: it speaks peer protocols 2 to 3 now", r.id));
}

void World::check_ensemble_version() {
  for (const auto& r : reps_) {
    if (!r.up || !r.peer->serving()) continue;
    if (r.peer->ensemble_version() != consensus::newest_protocol)
      return fail(fmt::format("server {} runs at ensemble version {} at the end, with every server upgraded",
                              r.id, r.peer->ensemble_version()));
  }
}

void World::begin_calm(int64_t until) {
  partitions_.clear();
  drop_ = dup_ = 0;
  max_delay_ = 5;
  for (auto& r : reps_) {
    r.disk_ms = 3;
    r.next_write_fails = Replica::none;
    if (!r.up) restart(r);
  }
  calm_since_ = now_;
  calm_until_ = until;
  calm_committed_ = false;
  ++result_.calm_stretches;
  Event check{Event::calm_check};
  check.at = now_ + settle_bound_ms();
  check.inc = ++calm_id_;
  schedule(check);
  trace(fmt::format("a calm stretch begins: every server up, the network whole, disks quick (until {} ms)", until));
}

// At the end of the last calm stretch (every server up, the network whole, seconds past the
// settle bound, no reconfig proposed): every member of the newest configuration served within
// the last settle bound (a leader may be changing at the very end: an epoch whose zxids ran
// out). A server that never rejoins, while the others commit without it, fails here and
// nowhere else.
void World::check_everyone_rejoined() {
  const consensus::Ensemble& e = configs_.empty() ? reps_.front().config : configs_.rbegin()->second;
  int64_t since = now_ - settle_bound_ms();
  for (const auto& r : reps_) {
    if (!e.is_member(r.id) || r.served_at >= since) continue;
    return fail(fmt::format("server {} ({} of the newest configuration) has not served since {} ms, at the end "
                            "of the last calm stretch ({} ms); it is {}, following server {}",
                            r.id, e.is_voter(r.id) ? "a voter" : "an observer", r.served_at, since,
                            r.up ? consensus::role_name(r.peer->role()) : "down", r.up ? r.peer->leader() : 0));
  }
}

SimResult World::run() {
  int n = opt_.voters + opt_.observers + opt_.spares;
  reps_.resize(static_cast<size_t>(n));
  if (rand(4) == 0) max_counter_ = 20 + static_cast<uint32_t>(rand(60));  // epochs that run out
  consensus::Ensemble first;
  for (int i = 0; i < opt_.voters + opt_.observers; ++i) (i < opt_.voters ? first.voters : first.observers).push_back(i + 1);
  for (int i = 0; i < n; ++i) {
    reps_[static_cast<size_t>(i)].id = i + 1;
    reps_[static_cast<size_t>(i)].config = first;
    reps_[static_cast<size_t>(i)].snapshot_every = 20 + rand(200);
  }
  for (auto& r : reps_) {
    r.upgraded = !opt_.mixed_versions;
    start(r);
  }
  schedule(Event{Event::client, 50});
  schedule(Event{Event::fault, 300});
  schedule(Event{Event::quiet, opt_.fault_ms});
  int64_t end = opt_.fault_ms + opt_.quiet_ms;
  while (!queue_.empty() && result_.ok) {
    Event e = queue_.top();
    queue_.pop();
    if (e.at > end) break;
    now_ = e.at;
    ++result_.steps;
    switch (e.kind) {
      case Event::tick: {
        Replica& r = rep(e.a);
        if (!r.up || r.incarnation != e.inc) break;
        r.peer->tick(rng_());
        process(r);
        if (r.up && r.peer->serving()) r.served_at = now_;
        Event t{Event::tick};
        t.at = now_ + tick_ms;
        t.a = e.a;
        t.inc = e.inc;
        schedule(t);
        break;
      }
      case Event::deliver: {
        Replica& to = rep(e.b);
        if (!to.up || blocked(e.a, e.b)) break;
        if (opt_.capture) opt_.capture(e.a, e.bytes);
        auto decoded = consensus::decode_peer_message(e.bytes);
        if (!decoded.message) {
          fail("a peer message does not decode: " + decoded.error);
          break;
        }
        if (opt_.trace) {
          const auto& m = *decoded.message;
          const auto* field = m.GetDescriptor()->FindFieldByNumber(static_cast<int>(m.body_case()));
          std::string vote;
          if (m.has_vote())
            vote = fmt::format(" [{} round {}: leader {}, epoch {}, zxid {}]", consensus::pb::PeerState_Name(m.vote().state()),
                               m.vote().round(), m.vote().leader(), m.vote().epoch(), hex(m.vote().zxid()));
          trace(fmt::format("{} -> {}: {} (epoch {}, link {}, seq {}){}", e.a, e.b, field ? field->name() : "?",
                            m.epoch(), m.link(), m.seq(), vote));
        }
        to.peer->receive(e.a, *decoded.message);
        process(to);
        break;
      }
      case Event::disk_done: {
        Replica& r = rep(e.a);
        if (!r.up || r.incarnation != e.inc || r.log_gen != e.gen) break;
        if (r.next_write_fails == Replica::power_cut) {
          crash(r, true);
          ++result_.crashes;
          schedule_restart(r, 50 + static_cast<int64_t>(rand(3000)));
          break;
        }
        if (r.next_write_fails != Replica::none && r.next_write_fails != Replica::lost) {
          write_fails(r, "log");
          break;
        }
        r.writing = false;
        r.durable_zxid = std::max(r.durable_zxid, std::min(e.zxid, r.last_zxid()));
        r.peer->durable(r.durable_zxid);
        process(r);
        kick_disk(r);
        break;
      }
      case Event::client: client_op(); break;
      case Event::crash: {  // planned by a fault (a lost write shows at the crash after it)
        Replica& r = rep(e.a);
        if (!r.up || r.incarnation != e.inc || !faults_on_ || calm_since_ >= 0) break;
        crash(r);
        ++result_.crashes;
        schedule_restart(r, 50 + static_cast<int64_t>(rand(3000)));
        break;
      }
      case Event::fault: fault(); break;
      case Event::restart: {
        Replica& r = rep(e.a);
        if (!r.up && faults_on_) {
          if (r.reads_fail_at_restart) {
            // The open is tried again half a second later, up to three times; failing every
            // time would be damage (wipe_at_restart, within the rule).
            r.reads_fail_at_restart = false;
            ++result_.failed_reads;
            trace(fmt::format("server {}'s disk fails reads as its store opens: it tries again", r.id));
            schedule_restart(r, 500 * (1 + static_cast<int64_t>(rand(2))));
            break;
          }
          restart(r);
        }
        break;
      }
      case Event::heal:
        partitions_.erase(e.a);
        trace(fmt::format("partition {} heals", e.a));
        break;
      case Event::quiet:
        faults_on_ = false;
        for (auto& r : reps_) {  // the rest of the rolling upgrade: a clean stop and a start each
          if (r.upgraded) continue;
          upgrade(r);
          if (!r.up) continue;  // the calm restarts it
          crash(r);
          start(r);
        }
        begin_calm(end);
        break;
      case Event::calm_check:
        if (e.inc == calm_id_ && calm_since_ >= 0 && !calm_committed_ && opt_.beyond_rule) {
          ++result_.calm_unavailable;  // allowed beyond the rule: counted
          trace("the calm stretch committed nothing: unavailable (beyond the rule)");
        } else if (e.inc == calm_id_ && calm_since_ >= 0 && !calm_committed_)
          fail(fmt::format("no client write committed in the {} ms since a calm stretch began at {} ms (every server "
                           "up, the network whole)",
                           settle_bound_ms(), calm_since_));
        break;
    }
  }
  if (result_.ok && !opt_.beyond_rule) check_everyone_rejoined();
  if (result_.ok && opt_.mixed_versions) check_ensemble_version();
  if (result_.ok) {
    for (const auto& [z, h] : acked_) {
      auto it = committed_.find(z);
      if (it == committed_.end() || it->second != h) {
        fail(fmt::format("the acknowledged write {} is lost", hex(z)));
        break;
      }
    }
  }
  result_.committed = committed_.size();
  return result_;
}

}  // namespace

SimResult run_simulation(const SimOptions& options) { return World(options).run(); }

}  // namespace warden::sim
