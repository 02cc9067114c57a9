// ZabPeer's construction, its configurations, roles and events; the election, leading and
// following phases are in election.cpp, leading.cpp and following.cpp.
#include "consensus/zab_peer.hpp"

#include <algorithm>
#include <iterator>
#include <tuple>
#include <utility>

#include "consensus/peer_codec.hpp"
#include "consensus/zab_peer_parts.hpp"

namespace warden::consensus {
WARDEN_ZAB_BEGIN
using namespace zab_parts;

bool Ensemble::is_voter(PeerId p) const { return std::find(voters.begin(), voters.end(), p) != voters.end(); }
bool Ensemble::is_observer(PeerId p) const {
  return std::find(observers.begin(), observers.end(), p) != observers.end();
}

const char* role_name(Role r) {
  switch (r) {
    case Role::looking: return "looking";
    case Role::following: return "following";
    case Role::leading: return "leading";
    case Role::observing: return "observing";
  }
  return "?";
}

ZabPeer::ZabPeer(PeerConfig config, const LogView& log, Epochs epochs, Zxid committed)
    : cfg_(std::move(config)), log_(log), epochs_(epochs) {
  synced_ = cfg_.synced;
  ensemble_version_ = cfg_.protocols.oldest;  // until the leader says more
  durable_ = log_.last_zxid();  // what a restart finds on disk is durable
  committed_ = std::min(committed, durable_);
  // A reconfig in the log above what is known committed is pending: the host persisted every
  // configuration that came into force before its commit mark passed it.
  if (cfg_.config_of) {
    Zxid after = log_.floor(std::max({cfg_.ensemble.version, committed_, log_.snapshot_zxid()}));
    while (after < log_.last_zxid()) {
      auto entries = log_.entries(after, log_.last_zxid(), cfg_.max_entries_per_message, cfg_.max_message_bytes);
      if (entries.empty()) break;
      for (const auto& e : entries) note_config_entry(e);
      after = entries.back().zxid;
    }
  }
  become_looking();
}

// ---------------------------------------------------------------- configurations

bool ZabPeer::lacks_pending(const pb::Vote& v) const {
  return pending_ && v.has_config() && v.config().version() < pending_->first &&
         !(v.has_pending() && v.pending().version() >= pending_->first);
}

bool ZabPeer::leads_past_pending(const pb::Vote& v) const {
  // A leader of a later epoch than the reconfig's whose history lacks it was elected by the
  // voters in force alone; had the reconfig committed, a quorum of them would hold it and none of
  // those would have elected a leader without it. So it did not commit, and joining that leader
  // cuts it from this server's log.
  return v.state() == pb::LEADING && lacks_pending(v) && v.epoch() > (pending_->first >> 32);
}

bool ZabPeer::voids_pending(PeerId from, const pb::Vote& v) const {
  // The sender holds a txn of a later epoch than the reconfig's (its own zxid: a settled vote, or
  // a looking vote for itself), so a leader of that epoch was established, and its history is in
  // the sender's log; the reconfig is not, so it was not in that history: it never commits.
  bool own_zxid = v.state() != pb::LOOKING || v.leader() == static_cast<int64_t>(from);
  return own_zxid && lacks_pending(v) && (v.zxid() >> 32) > (pending_->first >> 32);
}

bool ZabPeer::votes(PeerId p) const {
  return cfg_.ensemble.is_voter(p) || (pending_ && pending_->second.is_voter(p));
}

void ZabPeer::note_config_entry(const Entry& e) {
  if (!cfg_.config_of || e.zxid <= cfg_.ensemble.version) return;
  auto c = cfg_.config_of(e.payload);
  if (!c) return;
  c->version = e.zxid;
  pending_ = std::make_pair(e.zxid, std::move(*c));
  pending_heard_ = false;
  ready_.pending = pending_->second;
}

void ZabPeer::maybe_activate() {
  if (pending_ && committed_ >= pending_->first) adopt(pending_->second);
}

void ZabPeer::adopt(Ensemble e) {
  if (pending_ && pending_->first <= e.version) pending_.reset();
#ifdef WARDEN_PLANTS
  if (PLANT(count_removed_member))
    for (PeerId p : cfg_.ensemble.voters)
      if (!e.is_voter(p)) removed_.push_back(p);
#endif
  cfg_.ensemble = std::move(e);
  ready_.config = cfg_.ensemble;
  const Ensemble& now = cfg_.ensemble;
  switch (role_) {
    case Role::looking:
      become_looking();  // a new round, among the new configuration's voters
      return;
    case Role::leading:
      if (!now.is_voter(cfg_.id)) {
        // Removed, or made an observer: it stops leading, and the new configuration's voters
        // elect a leader among themselves (its followers look as they activate it too).
        become_looking();
        return;
      }
      // A member whose role changed comes back in its new one; others stay linked.
      for (auto it = links_.begin(); it != links_.end();)
        it = now.is_member(it->first) && it->second.observer != now.is_observer(it->first) ? links_.erase(it)
                                                                                             : std::next(it);
      return;
    case Role::following:
    case Role::observing: {
      PeerId designated = std::exchange(designated_, 0);
      if ((now.is_observer(cfg_.id) ? Role::observing : Role::following) == role_ && now.is_voter(leader_)) return;
      // Our leader left and handed leadership over (ZooKeeper's designated leader): no election.
      // The designated voter leads (its epoch still needs a quorum, as any leader's), the others
      // follow it; one that never leads sends them looking after initLimit, as a lost leader does.
      if (designated != 0 && designated != leader_ && now.is_voter(designated) && !pending_) {
        if (designated == cfg_.id && role_ == Role::following) return become_leader();
        if (designated != cfg_.id && now.is_member(cfg_.id)) return become_follower(designated);
      }
      become_looking();
      return;
    }
  }
}

bool ZabPeer::quorum_synced(const Ensemble& e) const {
  if (role_ != Role::leading || !established_) return false;
  auto synced = [&](PeerId p) { return p == cfg_.id || linked_voter(p, Link::Phase::synced); };
  return count_of(e.voters, synced) >= e.quorum();
}

Zxid ZabPeer::commit_point(const Ensemble& e) const {
  std::vector<Zxid> acks;
  auto add = [&](PeerId p) {
    if (p == cfg_.id)
      acks.push_back(durable_);
    else if (linked_voter(p, Link::Phase::synced))
      acks.push_back(links_.at(p).acked);
  };
  for (PeerId p : e.voters) add(p);
#ifdef WARDEN_PLANTS
  if (PLANT(count_removed_member))
    for (PeerId p : removed_)
      if (!e.is_member(p)) add(p);
#endif
  size_t q = PLANT(commit_minority) ? 1 : e.quorum();
  return reached_by_quorum(std::move(acks), q);
}

Zxid ZabPeer::last_durable() const { return std::min(durable_, log_.last_zxid()); }

void ZabPeer::note_digest(Zxid applied, uint64_t digest) {
  if (role_ != Role::leading) return;
  digest_zxid_ = applied;
  digest_ = digest;
}

void ZabPeer::set_ensemble_version(uint32_t v) {
  if (v == ensemble_version_) return;
  ensemble_version_ = v;
  ready_.ensemble_version = v;
}

void ZabPeer::update_ensemble_version() {
  // The newest version every member speaks: a member not heard from may run the oldest build
  // this one replaces, so it counts as the oldest this member speaks.
  uint32_t v = cfg_.protocols.newest;
  auto count = [&](PeerId p) {
    auto it = newest_heard_.find(p);
    if (p != cfg_.id) v = std::min(v, it == newest_heard_.end() ? cfg_.protocols.oldest : it->second);
  };
  for (PeerId p : cfg_.ensemble.voters) count(p);
  for (PeerId p : cfg_.ensemble.observers) count(p);
  if (pending_) {
    for (PeerId p : pending_->second.voters) count(p);
    for (PeerId p : pending_->second.observers) count(p);
  }
  set_ensemble_version(v);
}

void ZabPeer::take_ensemble_version(const pb::PeerMessage& m, uint32_t announced) {
  if (!speaks_newer(range_protocol)) return;
  set_ensemble_version(std::min(announced ? announced : sender_range(m).newest, cfg_.protocols.newest));
}

void ZabPeer::take_digest(Zxid applied, uint64_t digest) {
  if (!speaks_newer(digests_protocol)) return;  // a member of the build before reads none
  if (applied > 0 && fphase_ == FPhase::broadcast) ready_.leader_digest = std::make_pair(applied, digest);
}

void ZabPeer::resync() {
  if (role_ != Role::following && role_ != Role::observing) return;
  want_snapshot_ = true;
  become_looking();
}

void ZabPeer::set_synced(bool s) {
  if (synced_ == s) return;
  synced_ = s;
  ready_.synced = s;
}

// ---------------------------------------------------------------- roles

void ZabPeer::set_role(Role r, PeerId leader) {
  role_ = r;
  leader_ = leader;
  serving_ = false;
  ready_.role_changed = true;
}

void ZabPeer::peer_lost(PeerId p) {
  if ((role_ == Role::following || role_ == Role::observing) && p == leader_) {
    become_looking();
  } else if (role_ == Role::leading) {
    links_.erase(p);  // lead_tick counts the quorum without it
  }
}

void ZabPeer::become_looking() {
  set_role(Role::looking, 0);
  links_.clear();
  new_epoch_ = 0;
  syncing_started_ = false;
  established_ = false;
  unsent_.clear();
  link_ = 0;
  link_epoch_ = 0;
  sync_end_.reset();
  ++round_;
  vote_ = self_vote();
  received_.clear();
  if (votes(cfg_.id) && vote_.leader != 0) received_[cfg_.id] = vote_;
  settled_.clear();
  decide_at_.reset();
  // A lone voter agrees with itself at once.
  if (quorum_agrees(received_, vote_)) decide_at_ = now_ + static_cast<uint64_t>(cfg_.finalize_ticks);
  broadcast_vote();
  next_vote_at_ = now_ + static_cast<uint64_t>(cfg_.vote_interval);
}

void ZabPeer::become_follower(PeerId leader) {
  set_role(cfg_.ensemble.is_observer(cfg_.id) ? Role::observing : Role::following, leader);
  fphase_ = FPhase::discovery;
  link_ = 0;
  link_epoch_ = 0;
  sent_ = received_seq_ = 0;
  leader_received_ = 0;
  heard_ = now_;
  sync_end_.reset();
  send_follower_info();
}

void ZabPeer::send_follower_info() {
  // A fresh nonce per attempt, so a LeaderInfo meant for an earlier attempt is not taken.
  nonce_ = (nonce_ + 1) | (static_cast<uint64_t>(round_) << 32);
  info_sent_ = now_;
  pb::PeerMessage m;
  auto* info = m.mutable_follower_info();
  info->set_accepted_epoch(epochs_.accepted);
  info->set_observer(role_ == Role::observing);
  info->set_nonce(nonce_);
  if (speaks_newer(incarnations_protocol)) info->set_incarnation(cfg_.incarnation);
  send(leader_, std::move(m));
}

void ZabPeer::become_leader() {
  // A reconfig only heard of is not in this leader's history, so it was never committed: it is
  // void, and the leader's own log says what is pending.
  if (pending_heard_) pending_.reset(), pending_heard_ = false;
  set_role(Role::leading, cfg_.id);
  digest_zxid_ = 0;  // the host notes its tree's as it applies
  links_.clear();
  new_epoch_ = 0;
  syncing_started_ = false;
  established_ = false;
  lead_since_ = now_;
  history_end_ = log_.last_zxid();
  counter_ = 0;
  update_ensemble_version();
  last_proposed_ = history_end_;
  unsent_.clear();
  maybe_choose_epoch();
  // Say so: a voter that decided to follow before this one decided to lead asks again at once
  // (its first FollowerInfo found it looking), and a looking one learns who leads.
  broadcast_vote();
}

// ---------------------------------------------------------------- events

void ZabPeer::tick(uint64_t random) {
  ++now_;
  switch (role_) {
    case Role::looking:
      if (decide_at_ && now_ >= *decide_at_ && may_decide()) {
        decide_at_.reset();
        // A candidate that has since said it follows another leader will not lead: following it
        // would only wait out initLimit (seed 500028206). Its leader may be joined instead, once
        // backed (try_join); else the election goes on.
        auto s = settled_.find(vote_.leader);
        bool gone = vote_.leader != cfg_.id && s != settled_.end() && s->second.state() != pb::LEADING;
        if (!gone && vote_.leader != 0 && quorum_agrees(received_, vote_) &&
            (vote_.leader != cfg_.id || may_lead())) {
          if (vote_.leader == cfg_.id)
            become_leader();
          else
            become_follower(vote_.leader);
          return;
        }
      }
      if (now_ >= next_vote_at_) {
        broadcast_vote();
        next_vote_at_ = now_ + static_cast<uint64_t>(cfg_.vote_interval) + random % 2;
      }
      return;
    case Role::leading: lead_tick(); return;
    case Role::following:
    case Role::observing: follower_tick(); return;
  }
}

void ZabPeer::receive(PeerId from, const pb::PeerMessage& m) {
  // Servers outside the configuration are heard too: a looking one learns who leads, and one
  // about to join links to the leader as a follower that does not count until a reconfig names
  // it (the host's transport decides who may connect at all).
  if (from == cfg_.id || !protocol_refusal(sender_range(m), cfg_.protocols).empty()) return;
  newest_heard_[from] = std::min(sender_range(m).newest, cfg_.protocols.newest);
  if (m.has_vote()) return on_vote(from, m);
  if (role_ == Role::leading) return lead_receive(from, m);
  if ((role_ == Role::following || role_ == Role::observing) && from == leader_) return follow_receive(from, m);
}

void ZabPeer::durable(Zxid upto) {
  durable_ = std::max(durable_, std::min(upto, log_.last_zxid()));
  if (role_ == Role::leading) {
    if (!established_) maybe_establish();
    else advance_commit();
  } else if (role_ == Role::following || role_ == Role::observing) {
    if (fphase_ == FPhase::syncing) maybe_ack_new_leader();
    if (fphase_ == FPhase::broadcast && role_ == Role::following && sync_end_ == std::nullopt) {
      pb::PeerMessage m;
      m.mutable_ack()->set_zxid(last_durable());
      send_to_leader(std::move(m));
    }
  }
}

std::optional<Zxid> ZabPeer::propose(std::string payload) {
  if (role_ != Role::leading || !established_) return std::nullopt;
  if (counter_ >= cfg_.max_counter) {
    // ZooKeeper forces an election before the counter's low 32 bits roll over.
    become_looking();
    return std::nullopt;
  }
  std::optional<Ensemble> config = cfg_.config_of ? cfg_.config_of(payload) : std::nullopt;
  if (config && pending_) return std::nullopt;  // one reconfig at a time (ReconfigInProgress)
  Zxid z = make_zxid(new_epoch_, ++counter_);
  if (config) {
    config->version = z;
    pending_ = std::make_pair(z, std::move(*config));
  }
  Entry e{z, std::move(payload)};
  unsent_.push_back(e);
  ready_.append.push_back(std::move(e));
  last_proposed_ = z;
  return z;
}

Ready ZabPeer::ready() {
  if (!unsent_.empty()) {
    for (auto& [id, l] : links_) {
      if (l.observer || (l.phase != Link::Phase::syncing && l.phase != Link::Phase::synced)) continue;
      for (size_t i = 0; i < unsent_.size();) {
        pb::PeerMessage m;
        auto* p = m.mutable_proposal();
        size_t bytes = 0;
        for (; i < unsent_.size() && static_cast<size_t>(p->entries_size()) < cfg_.max_entries_per_message &&
               (p->entries_size() == 0 || bytes + unsent_[i].payload.size() <= cfg_.max_message_bytes);
             ++i) {
          bytes += unsent_[i].payload.size();
          to_pb(unsent_[i], p->add_entries());
        }
        send_on_link(id, l, std::move(m));
      }
    }
    unsent_.clear();
  }
  ready_.committed = committed_;
  Ready out = std::move(ready_);
  ready_ = Ready{};
  return out;
}

WARDEN_ZAB_END
}  // namespace warden::consensus
