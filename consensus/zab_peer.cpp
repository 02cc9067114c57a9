#include "consensus/zab_peer.hpp"

#include <algorithm>
#include <iterator>
#include <tuple>
#include <utility>

#include "consensus/peer_codec.hpp"

namespace warden::consensus {
#ifdef WARDEN_PLANTS
inline namespace planted {
#endif

#ifdef WARDEN_PLANTS
#define PLANT(name) (cfg_.plants.name)
#else
#define PLANT(name) false
#endif

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

namespace {
void to_pb(const Entry& e, pb::Entry* out) {
  out->set_zxid(e.zxid);
  out->set_payload(e.payload);
}
Entry from_pb(const pb::Entry& e) { return Entry{e.zxid(), e.payload()}; }
void to_pb(const Ensemble& e, pb::Config* out) {
  out->set_version(e.version);
  for (PeerId p : e.voters) out->add_voters(p);
  for (PeerId p : e.observers) out->add_observers(p);
  out->set_members(e.members);
}
Ensemble from_pb(const pb::Config& c) {
  Ensemble e;
  e.version = c.version();
  e.voters.assign(c.voters().begin(), c.voters().end());
  e.observers.assign(c.observers().begin(), c.observers().end());
  e.members = c.members();
  return e;
}
}  // namespace

ZabPeer::ZabPeer(PeerConfig config, const LogView& log, Epochs epochs, Zxid committed)
    : cfg_(std::move(config)), log_(log), epochs_(epochs) {
  synced_ = cfg_.synced;
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

template <class F>
bool ZabPeer::quorum_of(F counted, bool with_pending) const {
  auto enough = [&](const Ensemble& e) {
    size_t n = 0;
    for (PeerId p : e.voters) n += counted(p) ? 1 : 0;
#ifdef WARDEN_PLANTS
    if (PLANT(count_removed_member))
      for (PeerId p : removed_) n += !e.is_member(p) && counted(p) ? 1 : 0;
#endif
    return n >= e.quorum();
  };
  return enough(cfg_.ensemble) &&
         (!pending_ || !with_pending || PLANT(commit_old_quorum_only) || enough(pending_->second));
}

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
  size_t n = 0;
  for (PeerId p : e.voters) n += p == cfg_.id || linked_voter(p, Link::Phase::synced);
  return n >= e.quorum();
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
  if (acks.size() < q) return 0;
  std::nth_element(acks.begin(), acks.begin() + static_cast<std::ptrdiff_t>(q - 1), acks.end(), std::greater<>());
  return acks[q - 1];
}

Zxid ZabPeer::last_durable() const { return std::min(durable_, log_.last_zxid()); }

void ZabPeer::note_digest(Zxid applied, uint64_t digest) {
  if (role_ != Role::leading) return;
  digest_zxid_ = applied;
  digest_ = digest;
}

void ZabPeer::take_digest(Zxid applied, uint64_t digest) {
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

// ---------------------------------------------------------------- election

ZabPeer::Vote ZabPeer::self_vote() const {
  // A voter only of a reconfig it heard of (it lacks the txn) does not stand: leading, it would
  // void the reconfig (its own history lacks it) and lead voters that do not count it as one
  // (simulator seed 1795832945026535). It votes for the best candidate it hears of, as ZooKeeper's
  // election never names a server outside the configuration in force.
  if (pending_heard_ && !cfg_.ensemble.is_voter(cfg_.id)) return Vote{0, 0, 0};
  // An unsynced member of an ensemble that exists does not stand either: its empty history could
  // win only through votes for an earlier incarnation of itself (a follower still following it).
  if (!may_lead()) return Vote{0, 0, 0};
  return Vote{cfg_.id, last_durable(), epochs_.current};
}

bool ZabPeer::better(const Vote& a, const Vote& b) const {
  if (PLANT(stale_vote)) return a.leader > b.leader;
  // ZooKeeper's totalOrderPredicate: the newer epoch, then the longer log, then the larger id.
  return std::tie(a.epoch, a.zxid, a.leader) > std::tie(b.epoch, b.zxid, b.leader);
}

void ZabPeer::send(PeerId to, pb::PeerMessage m) {
  m.set_version(protocol_version);
  m.set_from(cfg_.id);
  ready_.messages.emplace_back(to, std::move(m));
}

void ZabPeer::send_vote(PeerId to) {
  pb::PeerMessage m;
  auto* v = m.mutable_vote();
  v->set_round(round_);
  if (role_ == Role::looking) {
    v->set_leader(vote_.leader);
    v->set_zxid(vote_.zxid);
    v->set_epoch(vote_.epoch);
    v->set_state(pb::LOOKING);
  } else {
    // Settled: who leads, and the epoch of that leadership (0 while it is being chosen).
    v->set_leader(leader_);
    v->set_zxid(last_durable());
    v->set_epoch(role_ == Role::leading ? new_epoch_ : link_epoch_);
    v->set_state(role_ == Role::leading ? pb::LEADING : role_ == Role::following ? pb::FOLLOWING : pb::OBSERVING);
  }
  to_pb(cfg_.ensemble, v->mutable_config());
  if (pending_) to_pb(pending_->second, v->mutable_pending());
  v->set_unsynced(!synced_);
  send(to, std::move(m));
}

void ZabPeer::broadcast_vote() {
  for (PeerId p : cfg_.ensemble.voters)
    if (p != cfg_.id) send_vote(p);
  if (pending_)
    for (PeerId p : pending_->second.voters)
      if (p != cfg_.id && !cfg_.ensemble.is_voter(p)) send_vote(p);
}

bool ZabPeer::may_decide() const {
  // No waiting out initLimit: a voter not heard may be the one intact store beside wiped ones
  // (two of three disks replaced while the third member was down), and deciding without it
  // would serve an empty tree over the writes it holds.
  if (synced_ || ensemble_seen_) return true;
  if (PLANT(decide_unheard) && now_ >= static_cast<uint64_t>(cfg_.init_limit)) return true;
  for (PeerId p : cfg_.ensemble.voters)
    if (p != cfg_.id && !unsynced_heard_.count(p)) return false;
  return true;
}

bool ZabPeer::quorum_agrees(const std::map<PeerId, Vote>& votes, const Vote& v) const {
  return quorum_of([&](PeerId p) {
    auto it = votes.find(p);
    return it != votes.end() && it->second.leader == v.leader && it->second.zxid == v.zxid &&
           it->second.epoch == v.epoch;
  });
}

void ZabPeer::try_join(PeerId leader) {
  // ZooKeeper's checkLeader and termPredicate over the votes of this round and of settled
  // voters together: join `leader` once it says itself that it leads and a quorum of voters
  // back it, each by its latest word: a settled vote naming it, or a looking vote of this round
  // for it (this server's own included). Counting settled votes alone stranded a voter whose own
  // round had elected the leader but that had missed the leader's looking vote (it was still
  // following the last leader when that vote came): the leader was short of the voter it was
  // elected with, and gave up after initLimit (simulator seed 431533584).
  // Unsynced with only unsynced votes heard: not before every voter spoke (a new ensemble).
  if (!may_decide()) return;
  if (leader == cfg_.id) {
    // ZooKeeper's checkLeader for itself: voters that already follow this server, having decided
    // in this round, and this round's looking votes for it make a quorum: it leads. A voter
    // that has not heard of a pending reconfig sends its looking votes to the old configuration's
    // voters only, so a candidate named in the new one may never get them, only the settled
    // vote that answers its own.
    if (role_ != Role::looking || !votes(cfg_.id) || !may_lead()) return;
    bool backed = quorum_of([&](PeerId p) {
      if (auto s = settled_.find(p); s != settled_.end())
        return s->second.leader() == leader && s->second.round() == round_;
      auto r = received_.find(p);
      return r != received_.end() && r->second.leader == leader;
    });
    if (backed && vote_.leader == cfg_.id) become_leader();
    return;
  }
  auto it = settled_.find(leader);
  if (it == settled_.end() || it->second.state() != pb::LEADING) return;
  auto backs = [&](PeerId p) {
    if (auto s = settled_.find(p); s != settled_.end()) return s->second.leader() == leader;
    auto r = received_.find(p);
    return r != received_.end() && r->second.leader == leader;
  };
  // A reconfig pending here that the leader's history lacks is void: the voters of the
  // configuration in force alone decide. Asking the new configuration's too stranded a voter
  // whose leader proposed a reconfig and was cut off with the server it added: the others
  // elected a leader without the txn, and this voter waited for servers that would never back
  // it (simulator seed 1795849959 with reconfigs).
  bool backed = quorum_of(backs) || (leads_past_pending(it->second) && quorum_of(backs, false));
  if (backed) become_follower(leader);
}

void ZabPeer::on_vote(PeerId from, const pb::PeerMessage& m) {
  const pb::Vote& v = m.vote();
  bool newer = v.has_config() && v.config().version() > cfg_.ensemble.version && !v.config().voters().empty();
  if (newer && link_ != 0 && (role_ == Role::following || role_ == Role::observing) && fphase_ == FPhase::broadcast) {
    // A configuration came into force while this follower's link is up: its reconfig committed,
    // and the Proposal and Commit saying so are on their way on the link (votes travel on the
    // election port and may pass them). Commit it here when this follower holds it, else wait
    // for the link: either way the txn is applied and its clients answered before the
    // configuration may send this follower looking (a reconfig that removed the leader lost the
    // reply on followers otherwise). Its log holds the leader's history, so an entry it holds
    // at that zxid is the committed reconfig, and everything before it is committed too. From
    // the leader itself, the link's Commit is awaited: it also names the voter the leader hands
    // over to, which this vote, overtaking it on the election port, would otherwise pre-empt.
    if (from == leader_) return;
    if (v.config().version() <= received_upto_) set_committed(v.config().version());
  } else if (newer && cfg_.ensemble.is_member(from)) {
    // A member that missed a reconfig (it was down, or cut off) learns the configuration in
    // force from any member's vote: every configuration in force was committed. A stranger's
    // (a server about to join, started from its own file) is not taken.
    adopt(from_pb(v.config()));
  }
  if (role_ == Role::looking && cfg_.ensemble.is_member(from) && voids_pending(from, v)) {
    // This server's pending reconfig, from its own log or heard of, can never come into force:
    // counting its voters stranded every election of the voters in force (simulator seed
    // 1795853993 with reconfigs: a member cut off through the epoch that voided it). Its log
    // keeps the txn until a leader's sync cuts it.
    voided_ = std::max(voided_, pending_->first);  // members that still hold it offer it again
    pending_.reset();
    pending_heard_ = false;
    become_looking();
  }
  // A looking server learns of a reconfig pending in a member's log: as a voter it names, it
  // votes (it may have only observed, or not yet joined, and so lack the txn), and every quorum
  // it counts needs the new configuration's too, as the members that hold the txn count them.
  // Not one from an epoch before this server's latest txn: void, as voids_pending says of a
  // sender's. A member cut off through that epoch still offers it; taken, it made a server it
  // adds the leader of voters that do not count it as one (simulator seed 1795853993).
  if (role_ == Role::looking && v.has_pending() && cfg_.ensemble.is_member(from) &&
      v.pending().version() > std::max(cfg_.ensemble.version, voided_) &&
      (!pending_ || v.pending().version() > pending_->first) &&
      (v.pending().version() >> 32) >= (last_durable() >> 32)) {
    pending_ = std::make_pair(v.pending().version(), from_pb(v.pending()));
    pending_heard_ = true;
    ready_.pending = pending_->second;
    become_looking();
  }
  if (role_ != Role::looking) {
    if (v.state() == pb::LOOKING && from == leader_ && role_ != Role::leading && v.round() > round_) {
      // The leader we follow looks again, in a round after the one we decided in (its ahead
      // check stepped it down, or it lost its quorum): it will not lead us. Look now, not after
      // initLimit in discovery or syncLimit in broadcast (simulator seed 600013218 waited out
      // initLimit twice so). A looking vote of our own round or earlier is from before it led.
      become_looking();
      on_vote(from, m);
      return;
    }
    if (v.state() == pb::LEADING && from == leader_ && role_ != Role::leading && link_ != 0 &&
        v.epoch() != link_epoch_) {
      // Our leader leads again, in a leadership other than the one our link belongs to (it
      // looked and was elected again while we missed it): that link is dead. Join the new one
      // now, not after initLimit (simulator seed 7101796 with reconfigs, where a pending
      // configuration needed this follower for every quorum, waited it out at each attempt).
      become_looking();
      on_vote(from, m);
      return;
    }
    if (v.state() == pb::LOOKING) {
      send_vote(from);  // tell it who leads
    } else if (v.state() == pb::LEADING && from == leader_ && role_ != Role::leading &&
               fphase_ == FPhase::discovery && link_ == 0) {
      // Our FollowerInfo may have reached it while it was still looking (each decides on its
      // own tick): it leads now, so ask again at once rather than at the next retry.
      send_follower_info();
    }
    return;
  }
  if (!votes(from)) return;  // only voters' votes count
  // A synced member does not count an unsynced one's votes, looking or settled: its store may
  // lack txns it acknowledged (PeerConfig::synced). Answered above when this member is settled,
  // it learns who leads and joins to be synced. An unsynced member that hears a synced voter
  // knows the ensemble exists and counts as the synced do: two wiped members must not elect
  // each other beside an intact one. It looks afresh, its round's unsynced votes uncounted.
  if (!synced_ && !v.unsynced() && !ensemble_seen_) {
    ensemble_seen_ = true;
    if (role_ == Role::looking) become_looking();
  }
  if ((synced_ || ensemble_seen_) && v.unsynced() && !PLANT(count_unsynced)) return;
  if (!synced_ && !ensemble_seen_) unsynced_heard_.insert(from);
  if (v.state() != pb::LOOKING) {
    settled_[from] = v;
    // Its looking vote is no longer its word if it settled on another leader: a candidate
    // must not decide on it.
    if (auto r = received_.find(from); r != received_.end() && r->second.leader != v.leader()) {
      received_.erase(r);
      if (decide_at_ && !quorum_agrees(received_, vote_)) decide_at_.reset();
    }
    try_join(v.leader());
    return;
  }
  settled_.erase(from);  // it looks again: what it said while settled is past
  // Observers and servers outside the configuration join the leader the voters name; they do not
  // vote.
  if (!votes(cfg_.id)) return;
  Vote theirs{v.leader(), v.zxid(), v.epoch()};
  if (v.round() > round_) {
    round_ = v.round();
    received_.clear();
    Vote mine = self_vote();
    vote_ = better(theirs, mine) ? theirs : mine;
    decide_at_.reset();
    broadcast_vote();
  } else if (v.round() < round_) {
    send_vote(from);  // it is behind: our round brings it along
    return;
  } else if (better(theirs, vote_)) {
    vote_ = theirs;
    decide_at_.reset();
    broadcast_vote();
  } else if (better(vote_, theirs)) {
    // Ours is better: tell it. It may have missed our vote of this round (ours went out while
    // it still followed someone, and a settled voter answers instead of counting), and without
    // this it could elect a worse candidate with others who missed it too (seed 500028206).
    send_vote(from);
  }
  received_[from] = theirs;
  received_[cfg_.id] = vote_;
  if (quorum_agrees(received_, vote_)) {
    if (!decide_at_) decide_at_ = now_ + static_cast<uint64_t>(cfg_.finalize_ticks);
  } else {
    decide_at_.reset();
  }
  // A leader this round's votes name may already have said that it leads.
  if (auto s = settled_.find(vote_.leader); s != settled_.end()) try_join(vote_.leader);
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
  if (m.version() != protocol_version || from == cfg_.id) return;
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

// ---------------------------------------------------------------- leading

void ZabPeer::send_on_link(PeerId to, Link& l, pb::PeerMessage m) {
  m.set_epoch(new_epoch_);
  m.set_link(l.id);
  m.set_seq(++l.sent);
  send(to, std::move(m));
}

void ZabPeer::maybe_choose_epoch() {
  if (new_epoch_ != 0) return;
  // Members' accepted epochs only: a server outside the configuration counts nowhere.
  uint32_t highest = epochs_.accepted;
  for (const auto& [id, l] : links_)
    if (cfg_.ensemble.is_member(id) || votes(id)) highest = std::max(highest, l.accepted_epoch);
  if (!quorum_of([&](PeerId p) { return p == cfg_.id || linked_voter(p, Link::Phase::info); })) return;
  if (highest >= max_epoch) {
    // The next epoch would not fit a zxid's high half as a positive number: refused, never
    // wrapped (a wrapped epoch is one every follower refuses, and the ensemble stays down).
    if (!epochs_exhausted_)
      ready_.notes.push_back("a quorum has accepted epoch " + std::to_string(highest) +
                             ": no later epoch fits a zxid, so no leader can be established; the members' "
                             "epoch files (acceptedEpoch, currentEpoch) must be reset by hand");
    epochs_exhausted_ = true;
    return;
  }
  // Above every epoch a quorum has accepted: no two leaders ever share an epoch.
  new_epoch_ = highest + 1;
  epochs_.accepted = new_epoch_;
  ready_.epochs = epochs_;
  for (auto& [id, l] : links_) {
    pb::PeerMessage m;
    m.mutable_leader_info()->set_new_epoch(new_epoch_);
    m.mutable_leader_info()->set_nonce(l.nonce);
    send_on_link(id, l, std::move(m));
  }
  maybe_start_sync();  // a lone voter has its quorum already
}

void ZabPeer::maybe_start_sync() {
  if (new_epoch_ == 0) return;
  if (!syncing_started_) {
    if (!quorum_of([&](PeerId p) { return p == cfg_.id || linked_voter(p, Link::Phase::epoch_acked); })) return;
    syncing_started_ = true;
    // This server's history becomes the new epoch's: current, persisted before any NEWLEADER.
    epochs_.current = new_epoch_;
    ready_.epochs = epochs_;
    // A configuration from the files alone (version 0) gets the new epoch's first zxid as its
    // version, as ZooKeeper's first leader gives it (ZOOKEEPER-1783), unless a reconfig waits in
    // the history (its own version must stay the newer). The same members: no quorum changes.
    // The followers take it with their Sync; a server about to join, started with itself in its
    // file, takes it from a vote as newer than its own and follows outside it, as ZooKeeper's
    // joiner does. No txn has that zxid (an epoch's counter starts at 1), and every txn below
    // it is of the history taken over, committed when this leader establishes.
    if (cfg_.config_of && cfg_.ensemble.version == 0 && !pending_) {
      cfg_.ensemble.version = static_cast<Zxid>(new_epoch_) << 32;
      ready_.config = cfg_.ensemble;
    }
  }
  for (auto& [id, l] : links_)
    if (l.phase == Link::Phase::epoch_acked && (!l.observer || established_)) start_sync(id, l);
  maybe_establish();
}

std::vector<Entry> ZabPeer::read(Zxid after, Zxid upto) const {
  return log_.entries(after, upto, cfg_.max_entries_per_message, cfg_.max_message_bytes);
}

void ZabPeer::start_sync(PeerId to, Link& l) {
  Zxid f = l.last_zxid;
  Zxid base = log_.base();
  Zxid snap = log_.snapshot_zxid();
  // Observers hear only what is committed; followers the whole log, uncommitted tail included.
  Zxid upto = l.observer ? std::min(committed_, log_.last_zxid()) : log_.last_zxid();
  pb::PeerMessage m;
  auto* s = m.mutable_sync();
  Zxid from;
  Zxid held = f >= base ? log_.floor(f) : 0;
  if (f >= base && held == f) {
    // DIFF: the follower holds a prefix of this history (anything it holds above f is not
    // durable there and is cut).
    s->set_mode(pb::Sync::DIFF);
    from = f;
  } else if (f > base && held >= base) {
    // TRUNC: it holds txns this history does not; cut back to the last one both hold.
    s->set_mode(pb::Sync::TRUNC);
    from = held;
  } else {
    // SNAP: this log no longer reaches back to where the follower is.
    s->set_mode(pb::Sync::SNAP);
    from = snap;
  }
  // ZooKeeper's rule (snapshotSizeFactor): a DIFF larger than a share of the snapshot goes as
  // the snapshot, when the snapshot is ahead of where the DIFF would start.
  uint64_t snap_size = snap > from ? log_.snapshot_bytes() : 0;  // 0: unknown, no rule
  if (s->mode() != pb::Sync::SNAP && snap_size > 0 &&
      static_cast<double>(log_.bytes(from, upto)) > cfg_.snapshot_size_factor * static_cast<double>(snap_size)) {
    s->set_mode(pb::Sync::SNAP);
    from = snap;
  }
  if (s->mode() == pb::Sync::SNAP) s->set_snapshot_zxid(snap);
  from = std::min(from, upto);
  s->set_trunc_after(from);
  s->set_new_epoch(new_epoch_);
  s->set_committed(committed_);
  s->set_sync_last(upto);
  to_pb(cfg_.ensemble, s->mutable_config());
  l.phase = Link::Phase::syncing;
  l.informed = upto;
  if (cfg_.stream_sync) {
    // The host sends the snapshot before this message and the entries after it, reading them
    // off this thread, as fast as the follower takes them.
    s->set_streamed(true);
    send_on_link(to, l, std::move(m));
    return;
  }
  if (s->mode() == pb::Sync::SNAP) s->set_snapshot(log_.snapshot());
  auto entries = read(from, upto);
  for (const auto& e : entries) to_pb(e, s->add_entries());
  send_on_link(to, l, std::move(m));
  // The rest, if the log is longer than one message.
  Zxid sent = entries.empty() ? from : entries.back().zxid;
  while (sent < upto) {
    auto more = read(sent, upto);
    if (more.empty()) break;
    pb::PeerMessage p;
    for (const auto& e : more) to_pb(e, p.mutable_proposal()->add_entries());
    sent = more.back().zxid;
    send_on_link(to, l, std::move(p));
  }
}

void ZabPeer::maybe_establish() {
  if (established_ || !syncing_started_) return;
  if (!quorum_of([&](PeerId p) {
        return p == cfg_.id ? durable_ >= history_end_ : linked_voter(p, Link::Phase::synced);
      }))
    return;
  established_ = true;
  // A quorum holds its history: elected while unsynced (a new ensemble, where no member is synced
  // yet), it is synced now.
  set_synced(true);
  serving_ = true;
  ready_.role_changed = true;
  committed_ = std::max(committed_, history_end_);
  // A synced follower had nothing to say while it waited for the others (no pings come before
  // establishment): its silence counts from now, else the first tick took a follower that acked
  // NEWLEADER more than syncLimit ago for dead, and with it the quorum (sim seed 7400921, with
  // reconfigs: 4 voters, establishment waiting ~1 s for the third).
  for (auto& [id, l] : links_) l.heard = std::max(l.heard, now_);
  // Observers sync once the history is committed: they only ever hold committed txns.
  for (auto& [id, l] : links_)
    if (l.observer && l.phase == Link::Phase::epoch_acked) start_sync(id, l);
  for (auto& [id, l] : links_) {
    if (l.phase != Link::Phase::synced) continue;
    pb::PeerMessage m;
    m.mutable_up_to_date()->set_committed(committed_);
    send_on_link(id, l, std::move(m));
  }
  inform_observers();
  maybe_activate();  // a reconfig in the history it took over commits with it
}

void ZabPeer::advance_commit() {
  if (!established_) return;
  Zxid c = commit_point(cfg_.ensemble);
  if (pending_ && c >= pending_->first && !PLANT(commit_old_quorum_only)) {
    // A reconfig and what follows it commit on a quorum of the old and of the new configuration
    // (ZooKeeper's, after Shraer et al.); what precedes it on the old alone.
    Zxid n = commit_point(pending_->second);
    c = n >= pending_->first ? std::min(c, n) : log_.floor(pending_->first - 1);
  }
  c = std::min(c, std::min(last_proposed_, log_.last_zxid()));
  if (c <= committed_) return;
  committed_ = c;
  PeerId designated = pending_ && c >= pending_->first && !pending_->second.is_voter(cfg_.id) ? designate(c) : 0;
  for (auto& [id, l] : links_) {
    if (l.observer || (l.phase != Link::Phase::syncing && l.phase != Link::Phase::synced)) continue;
    pb::PeerMessage m;
    m.mutable_commit()->set_zxid(c);
    m.mutable_commit()->set_designated(designated);
    attach_digest(*m.mutable_commit());
    send_on_link(id, l, std::move(m));
  }
  inform_observers();
  if (pending_ && committed_ >= pending_->first) {
    maybe_activate();
    advance_commit();  // what follows it needs the new configuration's quorum alone
  }
}

PeerId ZabPeer::designate(Zxid c) const {
  // ZooKeeper's getDesignatedLeader: a voter of the new configuration that acknowledged the
  // reconfig, as up to date as possible. Here: synced, holding at least everything committed
  // now (so whatever it leads keeps every committed txn), the highest acknowledgement first,
  // then the highest id, as an election would order them.
  PeerId best = 0;
  Zxid best_acked = 0;
  for (const auto& [id, l] : links_) {
    if (l.observer || !pending_->second.is_voter(id)) continue;
    if (l.phase != Link::Phase::synced || l.acked < c) continue;
    if (best == 0 || l.acked > best_acked || (l.acked == best_acked && id > best)) best = id, best_acked = l.acked;
  }
  return best;
}

void ZabPeer::inform_observers() {
  for (auto it = links_.begin(); it != links_.end();) {
    auto& [id, l] = *it;
    // An observer not yet synced has been informed of nothing: its sync (a SNAP if need be)
    // starts from the log as it is then, so the log's base says nothing about it yet.
    bool syncing = l.phase == Link::Phase::syncing || l.phase == Link::Phase::synced;
    if (l.observer && syncing && l.informed < log_.base()) {
      it = links_.erase(it);  // the log no longer reaches back to it: it comes back for a SNAP
      continue;
    }
    ++it;
    if (!l.observer || !syncing) continue;
    while (l.informed < committed_) {
      auto entries = read(l.informed, committed_);
      if (entries.empty()) break;
      pb::PeerMessage m;
      for (const auto& e : entries) to_pb(e, m.mutable_inform()->add_entries());
      m.mutable_inform()->set_committed(committed_);
      attach_digest(*m.mutable_inform());
      l.informed = entries.back().zxid;
      send_on_link(id, l, std::move(m));
    }
  }
}

void ZabPeer::lead_receive(PeerId from, const pb::PeerMessage& m) {
  if (m.has_follower_info()) {
    const auto& info = m.follower_info();
    // A member is what the configuration says it is: a voter posing as an observer (or the
    // reverse) is not taken.
    // A server outside it (one about to join) follows or observes as it says, counted nowhere.
    if (cfg_.ensemble.is_member(from) && info.observer() != cfg_.ensemble.is_observer(from)) return;
    // A server outside the configuration never deposes a leader (issue 45, point 6: anyone who
    // reaches the quorum port could, with reconfigEnabled, which lets unknown ids connect).
    bool member = cfg_.ensemble.is_member(from) || votes(from);
    if (member && new_epoch_ != 0 && info.accepted_epoch() > new_epoch_) {
      // The member accepted a later epoch than ours (a newer leadership attempt, or a restored
      // history labelled above every other): it can never follow us (our LeaderInfo is below
      // what it accepted), and with us leading it would ask again and again. Look again: the
      // next election counts its accepted epoch, or elects it when its history is the newest.
      become_looking();
      return;
    }
    Link l;
    l.id = ++next_link_;
    l.observer = info.observer();
    l.nonce = info.nonce();
    l.accepted_epoch = info.accepted_epoch();
    l.heard = now_;
    auto& slot = links_[from] = l;
    if (new_epoch_ != 0) {
      pb::PeerMessage r;
      r.mutable_leader_info()->set_new_epoch(new_epoch_);
      r.mutable_leader_info()->set_nonce(slot.nonce);
      send_on_link(from, slot, std::move(r));
    } else {
      maybe_choose_epoch();
    }
    return;
  }
  auto it = links_.find(from);
  if (it == links_.end()) return;
  Link& l = it->second;
  if (m.link() != l.id || m.epoch() != new_epoch_ || new_epoch_ == 0) return;  // another link's
  if (m.seq() <= l.received) return;                                            // a duplicate
  if (m.seq() != l.received + 1) {
    links_.erase(it);  // a message was lost: the link is broken; the follower will come back
    return;
  }
  l.received = m.seq();
  l.heard = now_;
  if (m.has_ack_epoch()) {
    if (l.phase != Link::Phase::info) return;
    const auto& a = m.ack_epoch();
    l.current_epoch = a.current_epoch();
    l.last_zxid = a.last_zxid();
    l.phase = Link::Phase::epoch_acked;
    // ZooKeeper's waitForEpochAck: a follower whose history is newer than ours means we should
    // not lead. Give up and look again.
    if (!PLANT(stale_vote) && std::tie(l.current_epoch, l.last_zxid) > std::tie(epochs_.current, history_end_) &&
        !syncing_started_) {
      become_looking();
      return;
    }
    if (syncing_started_ && !PLANT(stale_vote) &&
        std::tie(l.current_epoch, l.last_zxid) > std::tie(new_epoch_, last_proposed_)) {
      links_.erase(it);
      return;
    }
    maybe_start_sync();
  } else if (m.has_ack_new_leader()) {
    if (l.phase != Link::Phase::syncing) return;
    l.phase = Link::Phase::synced;
    l.acked = std::max(l.acked, m.ack_new_leader().last_zxid());
    if (established_) {
      pb::PeerMessage r;
      r.mutable_up_to_date()->set_committed(committed_);
      send_on_link(from, l, std::move(r));
      inform_observers();
      advance_commit();
    } else {
      maybe_establish();
    }
  } else if (m.has_ack()) {
    if (l.phase != Link::Phase::synced) return;
    l.acked = std::max(l.acked, m.ack().zxid());
    advance_commit();
  } else if (m.has_request()) {
    if (l.phase == Link::Phase::synced && established_) ready_.requests.emplace_back(from, m.request().payload());
  } else if (m.has_ping()) {
    if (l.phase == Link::Phase::synced && !l.observer) {
      l.acked = std::max(l.acked, m.ping().zxid());
      advance_commit();
    }
  }
}

void ZabPeer::lead_tick() {
  if (!established_) {
    if (now_ - lead_since_ > static_cast<uint64_t>(cfg_.init_limit)) become_looking();
    return;
  }
  // ZooKeeper's leader checks each tick that a quorum of synced voters has been heard within
  // syncLimit; without one it stops leading (and stops taking writes).
  for (auto it = links_.begin(); it != links_.end();) {
    Link& l = it->second;
    uint64_t silent = now_ - l.heard;
    uint64_t limit = static_cast<uint64_t>(l.phase == Link::Phase::synced ? cfg_.sync_limit : cfg_.init_limit);
    if (silent > limit) {
      it = links_.erase(it);
      continue;
    }
    if (l.phase != Link::Phase::info) {
      pb::PeerMessage m;
      m.mutable_ping()->set_zxid(committed_);
      m.mutable_ping()->set_received(l.received);
      attach_digest(*m.mutable_ping());
      send_on_link(it->first, l, std::move(m));
    }
    ++it;
  }
  if (!quorum_of([&](PeerId p) { return p == cfg_.id || linked_voter(p, Link::Phase::synced); })) become_looking();
}

// ---------------------------------------------------------------- following

void ZabPeer::send_to_leader(pb::PeerMessage m) {
  // A message that put a configuration in force may have sent this server looking just before
  // its answer: there is no leader, nor link, to answer on (simulator seed 1795858434).
  if (leader_ == 0) return;
  m.set_epoch(link_epoch_);
  m.set_link(link_);
  m.set_seq(++sent_);
  send(leader_, std::move(m));
}

bool ZabPeer::linked_voter(PeerId p, Link::Phase at_least) const {
  auto it = links_.find(p);
  return it != links_.end() && !it->second.observer && it->second.phase >= at_least;
}

size_t ZabPeer::synced() const {
  if (role_ != Role::leading) return 0;
  size_t n = 0;
  for (const auto& [id, l] : links_) n += l.phase == Link::Phase::synced ? 1 : 0;
  return n;
}

std::vector<LinkView> ZabPeer::link_views() const {
  std::vector<LinkView> out;
  if (role_ != Role::leading) return out;
  for (const auto& [id, l] : links_)
    out.push_back(
        LinkView{id, l.id, l.observer, l.phase == Link::Phase::synced, l.acked, l.informed, l.sent, l.received});
  return out;
}

bool ZabPeer::forward(std::string payload) {
  if ((role_ != Role::following && role_ != Role::observing) || !serving_) return false;
  pb::PeerMessage m;
  m.mutable_request()->set_payload(std::move(payload));
  send_to_leader(std::move(m));
  return true;
}

void ZabPeer::set_committed(Zxid z) {
  if (fphase_ == FPhase::discovery) return;
  committed_ = std::max(committed_, std::min(z, received_upto_));
  maybe_activate();
}

void ZabPeer::maybe_ack_new_leader() {
  if (fphase_ != FPhase::syncing || !sync_end_ || received_upto_ < *sync_end_ || last_durable() < *sync_end_)
    return;
  // The history is durable: it is now this server's current epoch's, persisted before the ack.
  epochs_.current = link_epoch_;
  ready_.epochs = epochs_;
  set_synced(true);  // synced whole: it holds the leader's history
  pb::PeerMessage m;
  m.mutable_ack_new_leader()->set_last_zxid(last_durable());
  send_to_leader(std::move(m));
  fphase_ = FPhase::broadcast;
  sync_end_.reset();
}

void ZabPeer::follow_receive(PeerId from, const pb::PeerMessage& m) {
  (void)from;
  if (m.has_leader_info()) {
    if (fphase_ != FPhase::discovery || link_ != 0 || m.leader_info().nonce() != nonce_) return;
    uint32_t e = m.leader_info().new_epoch();
    if (e < epochs_.accepted || e != m.epoch() || e > max_epoch) {
      become_looking();  // a leader of an epoch we already left behind
      return;
    }
    link_ = m.link();
    link_epoch_ = e;
    received_seq_ = m.seq();
    heard_ = now_;
    if (e > epochs_.accepted) {
      epochs_.accepted = e;
      ready_.epochs = epochs_;  // persisted before the AckEpoch below leaves
    }
    pb::PeerMessage r;
    r.mutable_ack_epoch()->set_current_epoch(epochs_.current);
    // Committed txns count as held even before the disk has them: they are in every later
    // leader's history, so the sync starts above them instead of cutting what was applied.
    r.mutable_ack_epoch()->set_last_zxid(want_snapshot_ ? 0
                                                        : std::max(last_durable(), std::min(committed_, log_.last_zxid())));
    send_to_leader(std::move(r));
    return;
  }
  if (link_ == 0 || m.link() != link_ || m.epoch() != link_epoch_) return;
  if (m.has_sync_data() || m.has_snap_chunk()) return stream_received(m);
  if (m.seq() <= received_seq_) return;  // a duplicate
  if (m.seq() != received_seq_ + 1) {
    become_looking();  // a lost message: the link is broken
    return;
  }
  received_seq_ = m.seq();
  heard_ = now_;
  if (fphase_ == FPhase::syncing && streamed_ && sync_end_ && received_upto_ < *sync_end_) {
    // The host sends the link's later messages only after a stream's last frame: one of them
    // first means a frame went missing.
    become_looking();
    return;
  }
  if (m.has_sync()) {
    if (fphase_ != FPhase::discovery) return;
    const auto& s = m.sync();
    if (s.has_config() && s.config().version() > cfg_.ensemble.version && !s.config().voters().empty()) {
      adopt(from_pb(s.config()));  // committed; it may change this server's role
      if (role_ == Role::looking) return;
    }
    Zxid from_zxid = s.trunc_after();
    if (s.mode() == pb::Sync::TRUNC && from_zxid < std::max(committed_, log_.base())) {
      // A restored member back after more elections than its label's gap, or a history that
      // diverged: cutting would leave the applied tree ahead of the log (issue 45, point 5).
      // As ZooKeeper's follower clears its database and reloads: a SNAP instead.
      want_snapshot_ = true;
      become_looking();
      return;
    }
    if (want_snapshot_ && s.mode() != pb::Sync::SNAP) {
      if (from_zxid != 0) {  // not from nothing: ask again
        become_looking();
        return;
      }
      want_snapshot_ = false;
      ready_.reset = true;
      set_synced(false);  // persisted before the store empties: a crash mid-sync leaves it unsynced
      durable_ = committed_ = 0;
    }
    streamed_ = s.streamed();
    if (pending_ && (pending_heard_ || s.mode() == pb::Sync::SNAP || (pending_->first > from_zxid && !PLANT(skip_trunc))))
      pending_.reset();  // cut, replaced by the snapshot (whose configuration is the leader's), or only heard of
    if (s.mode() == pb::Sync::SNAP) {
      want_snapshot_ = false;
      ready_.snapshot = std::make_pair(s.snapshot_zxid(), s.snapshot());
      ready_.snapshot_streamed = s.streamed();
      durable_ = s.snapshot_zxid();  // the host installs it synchronously
      committed_ = std::max(committed_, s.snapshot_zxid());
      received_upto_ = s.snapshot_zxid();
    } else if (PLANT(skip_trunc) && s.mode() == pb::Sync::TRUNC) {
      received_upto_ = last_durable();  // keeps what it was told to cut
    } else {
      ready_.truncate_after = from_zxid;
      durable_ = std::min(durable_, from_zxid);
      received_upto_ = from_zxid;
    }
    take_entries(s.entries());
    sync_end_ = s.sync_last();
    fphase_ = FPhase::syncing;
    set_committed(s.committed());
    maybe_ack_new_leader();
  } else if (m.has_proposal() || m.has_inform()) {
    if (fphase_ == FPhase::discovery) return;
    take_entries(m.has_proposal() ? m.proposal().entries() : m.inform().entries());
    if (m.has_inform()) {
      take_digest(m.inform().digest_zxid(), m.inform().digest());
      set_committed(m.inform().committed());
    }
    maybe_ack_new_leader();
  } else if (m.has_commit()) {
    take_digest(m.commit().digest_zxid(), m.commit().digest());
    designated_ = m.commit().designated();
    set_committed(m.commit().zxid());
    designated_ = 0;  // it served the reconfig this commit put in force, or nothing
  } else if (m.has_up_to_date()) {
    if (fphase_ != FPhase::broadcast || serving_) return;
    serving_ = true;
    ready_.role_changed = true;
    set_committed(m.up_to_date().committed());
  } else if (m.has_ping()) {
    take_digest(m.ping().digest_zxid(), m.ping().digest());
    set_committed(m.ping().zxid());
    leader_received_ = std::max(leader_received_, m.ping().received());
    pb::PeerMessage r;
    r.mutable_ping()->set_zxid(last_durable());
    send_to_leader(std::move(r));
  }
}

void ZabPeer::take_entries(const google::protobuf::RepeatedPtrField<pb::Entry>& entries) {
  for (const auto& e : entries) {
    if (e.zxid() <= received_upto_) continue;
    ready_.append.push_back(from_pb(e));
    note_config_entry(ready_.append.back());
    received_upto_ = e.zxid();
  }
}

void ZabPeer::stream_received(const pb::PeerMessage& m) {
  heard_ = now_;
  if (m.has_sync_data()) {
    if (fphase_ != FPhase::syncing || !streamed_) return;
    if (m.sync_data().after() != received_upto_) {
      become_looking();  // a frame of the stream went missing: the link is broken
      return;
    }
    take_entries(m.sync_data().entries());
    maybe_ack_new_leader();
  } else if (fphase_ != FPhase::discovery) {
    return;  // a snapshot's records come before the Sync; the host keeps them
  }
  // A stream may take longer than initLimit: the leader hears that this follower is alive.
  pb::PeerMessage r;
  r.mutable_ping()->set_zxid(last_durable());
  send_to_leader(std::move(r));
}

void ZabPeer::follower_tick() {
  // The leader may not have been leading yet when our FollowerInfo reached it (it decides on
  // its own tick): ask again, as ZooKeeper's follower retries its connection.
  if (fphase_ == FPhase::discovery && link_ == 0 && now_ - info_sent_ >= static_cast<uint64_t>(cfg_.vote_interval))
    send_follower_info();
  bool synced = fphase_ == FPhase::broadcast && serving_;
  uint64_t limit = static_cast<uint64_t>(synced ? cfg_.sync_limit : cfg_.init_limit);
  if (now_ - heard_ > limit) become_looking();
}

#ifdef WARDEN_PLANTS
}  // namespace planted
#endif
}  // namespace warden::consensus
