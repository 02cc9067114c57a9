#include "consensus/ensemble_replicator.hpp"

#include <algorithm>
#include <random>

#include "consensus/host_loop.hpp"
#include "consensus/peer_codec.hpp"
#include "consensus/zab_peer.hpp"

namespace warden::consensus {

namespace {
// The core's view of the log: the store, then what was appended since and may not be written
// yet. Sync reads ranges (entries, floor) with bounded scans of the store.
struct TailView final : LogView {
  const storage::LogStore& store;
  const storage::SnapshotStore* snaps;
  const std::deque<storage::LogEntry>& recent;
  const std::function<std::pair<Zxid, uint64_t>()>& live;
  const std::set<Zxid>& unread;  // stored snapshots that failed to read when sent
  TailView(const storage::LogStore& s, const storage::SnapshotStore* sn, const std::deque<storage::LogEntry>& r,
           const std::function<std::pair<Zxid, uint64_t>()>& l, const std::set<Zxid>& u)
      : store(s), snaps(sn), recent(r), live(l), unread(u) {}

  // The snapshot a SNAP sends, and its size: the store's newest that has not failed to read,
  // unless the log after it would be larger than snapshotSizeFactor of it and the live tree can
  // be walked instead (as ZooKeeper's leader serialises its tree).
  std::pair<Zxid, uint64_t> offered() const {
    Zxid stored = 0;
    if (snaps) {
      auto all = snaps->complete_snapshots();
      for (auto it = all.rbegin(); it != all.rend() && !stored; ++it)
        if (!unread.count(*it)) stored = *it;
    }
    uint64_t stored_size = stored ? snaps->snapshot_bytes(stored) : 0;
    if (!live) return {stored, stored_size};
    auto [at, size] = live();
    bool fresh = stored && static_cast<double>(bytes(stored, last_zxid())) <=
                               default_snapshot_size_factor * static_cast<double>(stored_size);
    if (fresh || at <= stored) return {stored, stored_size};
    return {at, size};
  }

  Zxid last_zxid() const override {
    return recent.empty() ? store.last_zxid() : std::max(store.last_zxid(), recent.back().zxid);
  }
  Zxid snapshot_zxid() const override { return offered().first; }
  Zxid base() const override { return store.base(); }
  bool contains(Zxid z) const override { return z != 0 && floor(z) == z; }
  Zxid floor(Zxid z) const override {
    if (z <= 0) return 0;
    // `recent` is the log's newest part, without a gap: a zxid at or above its first is
    // answered there; below it, one seek in the store.
    if (!recent.empty() && z >= recent.front().zxid) {
      for (auto it = recent.rbegin(); it != recent.rend(); ++it)
        if (it->zxid <= z) return it->zxid;
    }
    return store.floor(z);
  }
  std::vector<Entry> entries(Zxid after, Zxid upto, size_t max, size_t max_bytes) const override {
    std::vector<Entry> out;
    size_t bytes = 0;
    auto fits = [&](const std::string& payload) {
      return out.size() < max && (out.empty() || bytes + payload.size() <= max_bytes);
    };
    bool full = false;
    store.for_each_in(after, upto, max, [&](const storage::LogEntry& e) {
      if (full || !fits(e.payload)) {
        full = true;
        return;
      }
      bytes += e.payload.size();
      out.push_back(Entry{e.zxid, e.payload});
    });
    for (const auto& e : recent) {
      if (full) break;
      if (e.zxid <= after || e.zxid > upto || (!out.empty() && e.zxid <= out.back().zxid)) continue;
      if (!fits(e.payload)) break;
      bytes += e.payload.size();
      out.push_back(Entry{e.zxid, e.payload});
    }
    return out;
  }
  uint64_t bytes(Zxid after, Zxid upto) const override {
    uint64_t n = store.approximate_bytes(after, std::min(upto, store.last_zxid()));
    for (const auto& e : recent)
      if (e.zxid > std::max(after, store.last_zxid()) && e.zxid <= upto) n += e.payload.size();
    return n;
  }
  uint64_t snapshot_bytes() const override { return offered().second; }
  std::string snapshot() const override { return {}; }  // streamed by the host
};
}  // namespace

struct EnsembleReplicator::Core {
  TailView view;
  std::unique_ptr<ZabPeer> peer;
};

EnsembleReplicator::EnsembleReplicator(storage::LogStore& store, Settings settings, Hooks hooks)
    : store_(store),
      settings_(std::move(settings)),
      hooks_(std::move(hooks)),
      core_(new Core{TailView(store_, store_.snapshots(), recent_, hooks_.live_snapshot, unread_snapshots_), nullptr}),
      steps_(std::make_unique<HostSteps>(host_steps())) {}

EnsembleReplicator::~EnsembleReplicator() = default;

void EnsembleReplicator::start(Zxid applied) {
  applied_ = applied;
  saved_mark_ = store_.replica_state().commit_mark;
  durable_ = store_.last_zxid();
  storage::ReplicaState s = store_.replica_state();
  uint32_t logged = zxid_epoch(store_.last_zxid());
  Epochs epochs{std::max(s.accepted_epoch, logged), std::max(s.current_epoch, logged)};
  PeerConfig cfg;
  cfg.id = settings_.id;
  cfg.ensemble.voters = settings_.voters;
  cfg.ensemble.observers = settings_.observers;
  cfg.ensemble.version = settings_.config_version;
  cfg.ensemble.members = settings_.config_members;
  if (settings_.config_of)
    cfg.config_of = [of = settings_.config_of](std::string_view payload) -> std::optional<Ensemble> {
      Ensemble e;
      if (!of(payload, e.voters, e.observers, e.members)) return std::nullopt;
      return e;
    };
  cfg.init_limit = settings_.init_limit * settings_.subticks;
  cfg.sync_limit = settings_.sync_limit * settings_.subticks;
  cfg.stream_sync = static_cast<bool>(hooks_.stream);
  // This run's mark (PeerConfig::incarnation): random, so a restart, whatever survived of the
  // store, never repeats one.
  std::random_device random;
  cfg.incarnation = ((static_cast<uint64_t>(random()) << 32) | random()) | 1;
  // A store that never said (a build before the mark) is synced unless it is empty; one created
  // empty here says so at once, so that a crash in its first sync leaves it unsynced.
  std::optional<bool> synced = store_.synced();
  bool empty = store_.last_zxid() == 0 && s.accepted_epoch == 0 && s.current_epoch == 0 &&
               (!store_.snapshots() || store_.snapshots()->complete_snapshots().empty());
  if (!synced && empty) store_.set_synced(false);
  cfg.synced = synced.value_or(!empty);
  if (!cfg.synced && hooks_.synced_changed) hooks_.synced_changed(false, true);
  // Votes go out again every 2 core ticks, a decision waits 1 for a better vote: as in the
  // simulation, whatever the length of a tick.
  core_->peer = std::make_unique<ZabPeer>(cfg, core_->view, epochs, applied_);
  core_->peer->durable(durable_);
  process();
}

void EnsembleReplicator::tick(uint64_t random) {
  core_->peer->tick(random);
  process();
  // How far txns are applied, for a restart's replay: kept at most a tick behind. It may lag;
  // the leader commits the rest again.
  if (applied_ != saved_mark_) save_state(false);
}

bool EnsembleReplicator::receive(PeerId from, std::string_view bytes, std::string* error) {
  auto d = decode_peer_message(bytes);
  if (!d.message) {
    if (error) *error = d.error;
    return false;
  }
  const pb::PeerMessage& m = *d.message;
  ZabPeer& peer = *core_->peer;
  // A stream's frames and Sync belong to the link with the leader this member follows now.
  bool from_link = (peer.role() == Role::following || peer.role() == Role::observing) && from == peer.leader() &&
                   m.link() != 0 && m.link() == peer.link() && m.epoch() == peer.link_epoch();
  if (m.has_snap_chunk() && from_link && hooks_.snapshot_chunk) {
    const auto& c = m.snap_chunk();
    SnapshotFrame f;
    f.at = c.zxid();
    f.link = m.link();
    f.part = static_cast<char>(c.part());
    for (const auto& r : c.records()) f.records.emplace_back(r.key(), r.value());
    f.end = c.end();
    f.node_records = c.node_records();
    f.session_records = c.session_records();
    if (c.end()) snapshot_digest_from_ = {c.zxid(), static_cast<Zxid>(c.digest_from())};
    hooks_.snapshot_chunk(std::move(f));
  }
  if (m.has_sync() && from_link && m.sync().streamed() && m.sync().mode() == pb::Sync::SNAP &&
      !(hooks_.snapshot_complete && hooks_.snapshot_complete(m.sync().snapshot_zxid(), m.link()))) {
    // The snapshot did not arrive whole: nothing is installed; this member looks again.
    peer.peer_lost(from);
    process();
    return true;
  }
  if (m.has_vote() && hooks_.stranger && m.vote().has_config() && !m.vote().config().members().empty() &&
      !peer.ensemble().is_member(from))
    hooks_.stranger(from, m.vote().config().members());
  peer.receive(from, m);
  process();
  measure_acks();
  return true;
}

void EnsembleReplicator::measure_acks() {
  ZabPeer& peer = *core_->peer;
  if (peer.role() != Role::leading) {
    proposed_at_.clear();
    measured_acks_.clear();
    measured_commit_ = 0;
    return;
  }
  if (proposed_at_.empty()) return;
  auto now = std::chrono::steady_clock::now();
  // The time of the newest proposal at or below `z`, if it is still kept.
  auto micros_for = [&](Zxid z) -> std::optional<int64_t> {
    auto it = std::upper_bound(proposed_at_.begin(), proposed_at_.end(), z,
                               [](Zxid v, const auto& p) { return v < p.first; });
    if (it == proposed_at_.begin()) return std::nullopt;
    --it;
    return std::chrono::duration_cast<std::chrono::microseconds>(now - it->second).count();
  };
  Zxid oldest_needed = peer.committed();
  for (const auto& l : peer.link_views()) {
    if (l.observer || !l.synced) continue;
    Zxid& seen = measured_acks_[l.id];
    if (l.acked > seen && l.acked >= proposed_at_.front().first) {
      if (auto us = micros_for(l.acked); us && hooks_.acked) hooks_.acked(l.id, *us);
    }
    seen = std::max(seen, l.acked);
    oldest_needed = std::min(oldest_needed, l.acked);
  }
  if (peer.committed() > measured_commit_ && peer.committed() >= proposed_at_.front().first) {
    if (auto us = micros_for(peer.committed()); us && hooks_.quorum_acked) hooks_.quorum_acked(*us);
  }
  measured_commit_ = std::max(measured_commit_, peer.committed());
  while (!proposed_at_.empty() && proposed_at_.front().first <= oldest_needed) proposed_at_.pop_front();
}

void EnsembleReplicator::durable(Zxid upto) {
  // A report of writes made before a truncation may arrive after it: never past what the store
  // holds now.
  Zxid z = std::min(upto, store_.last_zxid());
  if (z <= durable_) return;
  durable_ = z;
  core_->peer->durable(z);
  process();
  measure_acks();
}

void EnsembleReplicator::peer_lost(PeerId member) {
  core_->peer->peer_lost(member);
  process();
}

bool EnsembleReplicator::forward(std::string payload) {
  bool sent = core_->peer->forward(std::move(payload));
  process();
  return sent;
}

std::optional<Zxid> EnsembleReplicator::propose(std::string payload) {
  auto z = core_->peer->propose(std::move(payload));
  // Kept for ack latencies while a voter still owes its ack (bounded: a voter far behind
  // stops being measured rather than holding every proposal's time).
  if (z && (hooks_.acked || hooks_.quorum_acked)) {
    if (proposed_at_.size() >= 1000000) proposed_at_.pop_front();
    proposed_at_.emplace_back(*z, std::chrono::steady_clock::now());
  }
  process();
  return z;
}

const char* EnsembleReplicator::role_name() const {
  return consensus::role_name(core_->peer->role());
}
bool EnsembleReplicator::leading() const { return core_->peer->role() == Role::leading; }
bool EnsembleReplicator::serving() const { return core_->peer->serving(); }
EnsembleReplicator::PeerId EnsembleReplicator::leader() const { return core_->peer->leader(); }
uint32_t EnsembleReplicator::epoch() const { return core_->peer->epoch(); }
size_t EnsembleReplicator::followers() const { return core_->peer->linked(); }
size_t EnsembleReplicator::synced_followers() const { return core_->peer->synced(); }
ProtocolRange EnsembleReplicator::protocols() const { return core_->peer->protocols(); }
uint32_t EnsembleReplicator::ensemble_version() const { return core_->peer->ensemble_version(); }
std::vector<LinkView> EnsembleReplicator::link_views() const { return core_->peer->link_views(); }
Zxid EnsembleReplicator::last_proposed() const { return core_->peer->last_proposed(); }
EnsembleReplicator::LinkProgress EnsembleReplicator::link_progress() const {
  return {core_->peer->link(), core_->peer->link_sent(), core_->peer->link_acked()};
}

Zxid EnsembleReplicator::config_version() const { return core_->peer ? core_->peer->ensemble().version : 0; }

bool EnsembleReplicator::reconfig_pending() const { return core_->peer && core_->peer->pending_config(); }

bool EnsembleReplicator::quorum_synced(const std::vector<PeerId>& voters, const std::vector<PeerId>& observers) const {
  return core_->peer && core_->peer->quorum_synced(Ensemble{voters, observers, 0, {}});
}

void EnsembleReplicator::save_state(bool epochs_changed) {
  storage::ReplicaState s;
  s.accepted_epoch = core_->peer->epochs().accepted;
  s.current_epoch = core_->peer->epochs().current;
  // Never above what this log holds durably: a restart replays the log up to the mark.
  s.commit_mark = std::min(applied_, durable_);
  if (!epochs_changed && s.commit_mark == saved_mark_) return;
  store_.set_replica_state(s);
  saved_mark_ = s.commit_mark;
}

void EnsembleReplicator::note_applied_digest(Zxid z) {
  if (z < digests_from_) return;
  uint64_t d = hooks_.digest();
  if (d == 0) return;
  digests_.emplace_back(z, d);
  if (digests_.size() > 4096) digests_.pop_front();
  if (auto it = awaited_digests_.find(z); it != awaited_digests_.end()) {
    uint64_t leaders = it->second;
    awaited_digests_.erase(it);
    compare_digest(z, leaders);
  }
}

void EnsembleReplicator::compare_digest(Zxid z, uint64_t leaders) {
  if (z > applied_) {  // not applied here yet: compared when it is
    if (awaited_digests_.size() < 64) awaited_digests_[z] = leaders;
    return;
  }
  auto it = std::lower_bound(digests_.begin(), digests_.end(), z,
                             [](const std::pair<Zxid, uint64_t>& a, Zxid b) { return a.first < b; });
  if (it == digests_.end() || it->first != z || it->second == leaders) return;  // too old, or agrees
  if (hooks_.digest_mismatch) hooks_.digest_mismatch(z, it->second, leaders);
  forget_digests();
  resync_ = true;
}

void EnsembleReplicator::forget_digests() {
  digests_.clear();
  awaited_digests_.clear();
}

void EnsembleReplicator::apply_upto(Zxid committed) {
  apply_committed(store_, recent_, applied_, committed, [this](const storage::LogEntry& e) {
    if (on_commit_) on_commit_(e.zxid, e.payload);
    if (hooks_.digest) note_applied_digest(e.zxid);
  });
  if (hooks_.digest && !digests_.empty() && digests_.back().first == applied_)
    core_->peer->note_digest(applied_, digests_.back().second);
}

void EnsembleReplicator::process() {
  // The pipeline proposes from inside the commit and request hooks.
  loop_.run([this] {
    Ready r = core_->peer->ready();
    return carry_out(r, *steps_);
  });
}

HostSteps EnsembleReplicator::host_steps() {
  HostSteps h;
  h.notes = [this](const std::vector<std::string>& notes) {
    for (const auto& n : notes)
      if (hooks_.note) hooks_.note(n);
  };
  h.save_epochs = [this] { save_state(true); };
  h.synced = [this](bool synced) {
    store_.set_synced(synced);
    if (hooks_.synced_changed) hooks_.synced_changed(synced, false);
  };
  h.config = [this](const Ensemble& c) {
    if (hooks_.config_changed) hooks_.config_changed(c.version, c.voters, c.observers, c.members);
  };
  h.pending = [this](const Ensemble& p) {
    if (hooks_.pending_members) hooks_.pending_members(p.members);
  };
  h.reset = [this] {
    // Synced from nothing: what this member held (a restored state, a diverged history) goes.
    if (!hooks_.reset_tree) throw std::logic_error("an ensemble member cannot empty its tree");
    if (hooks_.finish_writes) hooks_.finish_writes();
    store_.truncate_after(0);
    recent_.clear();
    forget_digests();
    digests_from_ = 0;
    durable_ = applied_ = 0;
    hooks_.reset_tree();
    save_state(true);
  };
  h.truncate = [this](Zxid after) {
    if (hooks_.finish_writes) hooks_.finish_writes();
    store_.truncate_after(after);
    while (!recent_.empty() && recent_.back().zxid > after) recent_.pop_back();
    durable_ = std::min(durable_, after);
  };
  h.snapshot = [this](Zxid at, bool streamed) {
    // A SNAP: the snapshot came before the Sync (receive() checked it is whole); it replaces
    // the log and the tree. Writes in flight finish first: they belong to the old log.
    if (!streamed || !hooks_.install_snapshot)
      throw std::logic_error("an ensemble member got a snapshot it cannot install");
    if (hooks_.finish_writes) hooks_.finish_writes();
    recent_.clear();
    forget_digests();
    // Its tree is fuzzy until the replay passes where the leader's walk ended: no digest is
    // taken before (they would differ from the leader's, and the member be synced again, and
    // again while writes go on: it_sync "diff wiped" was synced 5 times).
    digests_from_ = snapshot_digest_from_.first == at ? snapshot_digest_from_.second : 0;
    hooks_.install_snapshot(at);
    applied_ = at;
    durable_ = at;
    save_state(true);
    // Durable now: the core may acknowledge the sync (a SNAP with no entries after it has
    // nothing else to report durability; without this the ack waited for the next write).
    core_->peer->durable(at);
  };
  h.append = [this](Entry e) {
    recent_.push_back(storage::LogEntry{e.zxid, e.payload});
    hooks_.persist(storage::LogEntry{e.zxid, std::move(e.payload)});
  };
  h.send = [this](PeerId to, pb::PeerMessage& m) {
    if (m.has_sync() && m.sync().streamed()) {
      const auto& sy = m.sync();
      SyncPlan plan{to, m.link(), m.epoch(), sy.mode() == pb::Sync::SNAP ? sy.snapshot_zxid() : 0, sy.trunc_after(),
                    sy.sync_last(), encode_peer_message(m)};
      hooks_.stream(std::move(plan));
      return;
    }
    hooks_.send(to, encode_peer_message(m), m.has_vote(), m.link());
  };
  h.apply = [this](Zxid committed) { apply_upto(committed); };
  h.ensemble_version = [this](uint32_t v) {
    if (hooks_.ensemble_version) hooks_.ensemble_version(logged_ensemble_version_, v);
    logged_ensemble_version_ = v;
  };
  h.leader_digest = [this](Zxid at, uint64_t digest) {
    if (hooks_.digest) compare_digest(at, digest);
  };
  h.after_commits = [this] {
    bool more = false;
    if (resync_) {
      resync_ = false;
      core_->peer->resync();
      more = true;
    }
    while (!recent_.empty() && recent_.front().zxid <= std::min(applied_, durable_)) recent_.pop_front();
    return more;
  };
  h.role_changed = [this] {
    if (hooks_.role_changed) hooks_.role_changed();
  };
  h.request = [this](PeerId from, std::string payload) {
    if (hooks_.request) hooks_.request(from, std::move(payload));
  };
  return h;
}

}  // namespace warden::consensus
