#include <algorithm>
#include <stdexcept>

#include "consensus/host_loop.hpp"
#include "consensus/replicator.hpp"
#include "consensus/zab_peer.hpp"

namespace warden::consensus {

// The core's view of the log: the store, then the proposals not yet committed. A lone voter
// never synchronises anyone, so the reads that sync needs (entries, floor) are simple scans.
struct LogStoreView final : LogView {
  const storage::LogStore& store;
  const std::deque<storage::LogEntry>& unacked;
  LogStoreView(const storage::LogStore& s, const std::deque<storage::LogEntry>& u) : store(s), unacked(u) {}

  Zxid last_zxid() const override { return unacked.empty() ? store.last_zxid() : unacked.back().zxid; }
  Zxid snapshot_zxid() const override { return 0; }
  bool contains(Zxid z) const override { return floor(z) == z && z != 0; }
  Zxid floor(Zxid z) const override {
    Zxid out = 0;
    for (const auto& e : entries(0, z, SIZE_MAX, SIZE_MAX)) out = e.zxid;
    return out;
  }
  std::vector<Entry> entries(Zxid after, Zxid upto, size_t max, size_t max_bytes) const override {
    (void)max_bytes;  // a lone voter sends nothing
    std::vector<Entry> out;
    for (auto& e : store.read_after(after))
      if (e.zxid <= upto && out.size() < max) out.push_back(Entry{e.zxid, std::move(e.payload)});
    for (const auto& e : unacked)
      if (e.zxid > after && e.zxid <= upto && out.size() < max && (out.empty() || e.zxid > out.back().zxid))
        out.push_back(Entry{e.zxid, e.payload});
    return out;
  }
  std::string snapshot() const override { return {}; }
};

struct ZabReplicator::Core {
  LogStoreView view;
  std::unique_ptr<ZabPeer> peer;
};

ZabReplicator::ZabReplicator(storage::LogStore& store, Persist persist, uint32_t max_counter)
    : store_(store),
      persist_(std::move(persist)),
      core_(new Core{LogStoreView(store_, unacked_), nullptr}),
      max_counter_(max_counter),
      steps_(std::make_unique<HostSteps>(host_steps())) {}

void ZabReplicator::start(Zxid applied) {
  last_committed_ = applied;
  elect();
}

void ZabReplicator::save_state() {
  storage::ReplicaState s;
  s.accepted_epoch = core_->peer->epochs().accepted;
  s.current_epoch = core_->peer->epochs().current;
  // How far txns are applied: a restart replays the log up to here and leaves the rest to the
  // core. It may lag (a lone voter commits the rest of its log as it leads again).
  s.commit_mark = last_committed_;
  store_.set_replica_state(s);
}

ZabReplicator::~ZabReplicator() = default;

uint32_t ZabReplicator::epoch() const { return core_->peer->epoch(); }

void ZabReplicator::elect() {
  storage::ReplicaState s = store_.replica_state();
  // A log written before the state was kept: its last zxid's epoch is the one it holds.
  uint32_t logged = zxid_epoch(store_.last_zxid());
  Epochs epochs{std::max(s.accepted_epoch, logged), std::max(s.current_epoch, logged)};
  PeerConfig cfg;
  cfg.id = 1;
  cfg.ensemble.voters = {1};
  if (max_counter_) cfg.max_counter = max_counter_;
  core_->peer = std::make_unique<ZabPeer>(cfg, core_->view, epochs, last_committed_);
  // A lone voter agrees with itself at the first tick and is established at once: its log is
  // durable and its quorum is itself.
  for (int i = 0; i < 3 && !core_->peer->serving(); ++i) {
    core_->peer->tick(0);
    process();
  }
  if (!core_->peer->serving()) throw std::logic_error("a lone voter did not become leader");
  save_state();
}

std::optional<Zxid> ZabReplicator::propose(std::string payload) {
  if (!core_->peer->can_propose()) {
    // The epoch's counter ran out. A new core takes the whole log it sees as durable, so it may
    // only start once nothing is in flight: until then the old one (still leading) commits
    // what becomes durable, and new proposals are refused, as a leader change refuses them.
    if (!unacked_.empty()) return std::nullopt;
    elect();  // everything durable is committed already: nothing is applied here
    if (!core_->peer->can_propose()) return std::nullopt;
  }
  auto z = core_->peer->propose(std::move(payload));
  process();
  return z;
}

void ZabReplicator::durable(Zxid upto) {
  core_->peer->durable(upto);
  process();
}

size_t ZabReplicator::abort() {
  size_t n = unacked_.size();
  unacked_.clear();
  elect();
  return n;
}

void ZabReplicator::process() {
  loop_.run([this] {
    Ready r = core_->peer->ready();
    return carry_out(r, *steps_);
  });
}

HostSteps ZabReplicator::host_steps() {
  HostSteps h;
  // A lone voter whose epochs ran out cannot lead: it stops, saying why, instead of hanging.
  h.notes = [](const std::vector<std::string>& notes) { throw std::runtime_error(notes.front()); };
  h.save_epochs = [this] { save_state(); };  // before anything that follows from them
  // Its configuration is its own and it is always synced: nothing to persist or to reach.
  h.synced = [](bool) {};
  h.config = [](const Ensemble&) {};
  h.pending = [](const Ensemble&) {};
  h.append = [this](Entry e) {
    unacked_.push_back(storage::LogEntry{e.zxid, e.payload});
    persist_(storage::LogEntry{e.zxid, std::move(e.payload)});
  };
  // The history this server led with is committed at establishment, from the store; then its
  // own proposals, once durable.
  h.apply = [this](Zxid committed) {
    apply_committed(store_, unacked_, last_committed_, committed, [this](const storage::LogEntry& e) {
      if (on_commit_) on_commit_(e.zxid, e.payload);
    });
    while (!unacked_.empty() && unacked_.front().zxid <= last_committed_) unacked_.pop_front();
  };
  return h;
}

}  // namespace warden::consensus
