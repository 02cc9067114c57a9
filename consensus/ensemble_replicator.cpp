#include "consensus/ensemble_replicator.hpp"

#include <algorithm>

#include "consensus/peer_codec.hpp"
#include "consensus/zab_peer.hpp"

namespace warden::consensus {

namespace {
// The core's view of the log: the store, then what was appended since and may not be written
// yet. Sync reads ranges (entries, floor) with bounded scans of the store.
struct TailView final : LogView {
  const storage::LogStore& store;
  const std::deque<storage::LogEntry>& recent;
  TailView(const storage::LogStore& s, const std::deque<storage::LogEntry>& r) : store(s), recent(r) {}

  Zxid last_zxid() const override {
    return recent.empty() ? store.last_zxid() : std::max(store.last_zxid(), recent.back().zxid);
  }
  Zxid snapshot_zxid() const override { return 0; }
  bool contains(Zxid z) const override { return z != 0 && floor(z) == z; }
  Zxid floor(Zxid z) const override {
    if (z <= 0) return 0;
    for (auto it = recent.rbegin(); it != recent.rend(); ++it)
      if (it->zxid <= z) return it->zxid;
    Zxid out = 0;
    store.for_each_in(z - 1, z, 1, [&](const storage::LogEntry& e) { out = e.zxid; });
    if (out == z) return z;
    // Not held: the largest one below it (a TRUNC's point, which is rare), by a scan.
    out = 0;
    store.for_each_in(0, z, SIZE_MAX, [&](const storage::LogEntry& e) { out = e.zxid; });
    return out;
  }
  std::vector<Entry> entries(Zxid after, Zxid upto, size_t max) const override {
    std::vector<Entry> out;
    store.for_each_in(after, upto, max, [&](const storage::LogEntry& e) { out.push_back(Entry{e.zxid, e.payload}); });
    for (const auto& e : recent)
      if (e.zxid > after && e.zxid <= upto && out.size() < max && (out.empty() || e.zxid > out.back().zxid))
        out.push_back(Entry{e.zxid, e.payload});
    return out;
  }
  std::string snapshot() const override { return {}; }
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
      core_(new Core{TailView(store_, recent_), nullptr}) {}

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
  cfg.init_limit = settings_.init_limit * settings_.subticks;
  cfg.sync_limit = settings_.sync_limit * settings_.subticks;
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
  core_->peer->receive(from, *d.message);
  process();
  return true;
}

void EnsembleReplicator::durable(Zxid upto) {
  // A report of writes made before a truncation may arrive after it: never past what the store
  // holds now.
  Zxid z = std::min(upto, store_.last_zxid());
  if (z <= durable_) return;
  durable_ = z;
  core_->peer->durable(z);
  process();
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
EnsembleReplicator::LinkProgress EnsembleReplicator::link_progress() const {
  return {core_->peer->link(), core_->peer->link_sent(), core_->peer->link_acked()};
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

void EnsembleReplicator::apply_upto(Zxid committed) {
  if (committed <= applied_) return;
  // What the store held before this replicator appended anything (a restart's tail), then what
  // it appended since.
  Zxid store_upto = recent_.empty() ? committed : std::min(committed, recent_.front().zxid - 1);
  if (store_upto > applied_)
    store_.for_each_in(applied_, store_upto, SIZE_MAX, [&](const storage::LogEntry& e) {
      applied_ = e.zxid;
      if (on_commit_) on_commit_(e.zxid, e.payload);
    });
  for (const auto& e : recent_) {
    if (e.zxid > committed) break;
    if (e.zxid <= applied_) continue;
    applied_ = e.zxid;
    if (on_commit_) on_commit_(e.zxid, e.payload);
  }
}

void EnsembleReplicator::process() {
  // The pipeline proposes from inside the commit and request hooks.
  loop_.run([this] {
    Ready r = core_->peer->ready();
    bool work = !r.empty();
    if (r.epochs) save_state(true);
    if (r.truncate_after) {
      if (hooks_.finish_writes) hooks_.finish_writes();
      store_.truncate_after(*r.truncate_after);
      while (!recent_.empty() && recent_.back().zxid > *r.truncate_after) recent_.pop_back();
      durable_ = std::min(durable_, *r.truncate_after);
    }
    for (auto& e : r.append) {
      recent_.push_back(storage::LogEntry{e.zxid, e.payload});
      hooks_.persist(storage::LogEntry{e.zxid, std::move(e.payload)});
    }
    for (auto& [to, m] : r.messages) hooks_.send(to, encode_peer_message(m), m.has_vote());
    apply_upto(r.committed);
    while (!recent_.empty() && recent_.front().zxid <= std::min(applied_, durable_)) recent_.pop_front();
    if (r.role_changed && hooks_.role_changed) hooks_.role_changed();
    for (auto& [from, payload] : r.requests)
      if (hooks_.request) hooks_.request(from, std::move(payload));
    return work;
  });
}

}  // namespace warden::consensus
