// ZabPeer's election, as ZooKeeper's FastLeaderElection: its votes, which one is better, when a
// member may decide, and joining the leader a quorum settled on (consensus/README.md).
#include <algorithm>
#include <iterator>
#include <tuple>
#include <utility>

#include "consensus/peer_codec.hpp"
#include "consensus/zab_peer.hpp"
#include "consensus/zab_peer_parts.hpp"

namespace warden::consensus {
WARDEN_ZAB_BEGIN
using namespace zab_parts;

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
  m.set_version(cfg_.protocols.oldest);
  if (speaks_newer(range_protocol)) m.set_speaks(cfg_.protocols.newest);
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
  if (speaks_newer(unsynced_votes_protocol)) v->set_unsynced(!synced_);
  if (speaks_newer(incarnations_protocol)) v->set_incarnation(cfg_.incarnation);
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
  if (!learn_configurations(from, v)) return;
  if (role_ != Role::looking) return answer_while_settled(from, m);
  if (!counts(from, v)) return;
  if (v.state() != pb::LOOKING) return take_settled_vote(from, v);
  settled_.erase(from);  // it looks again: what it said while settled is past
  // Observers and servers outside the configuration join the leader the voters name; they do not
  // vote.
  if (!votes(cfg_.id)) return;
  take_looking_vote(from, v);
}

bool ZabPeer::learn_configurations(PeerId from, const pb::Vote& v) {
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
    if (from == leader_) return false;
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
  return true;
}

void ZabPeer::answer_while_settled(PeerId from, const pb::PeerMessage& m) {
  const pb::Vote& v = m.vote();
  if (auto it = links_.find(from); role_ == Role::leading && it != links_.end() && v.incarnation() != 0 &&
                                   v.incarnation() != it->second.incarnation) {
    // The member restarted since it linked to us (no broken connection told us: a power loss
    // breaks none), so what it acknowledged on the link may be gone, and it may have joined a
    // later leadership since. Counted, its NEWLEADER ack established this leader after that
    // one committed (simulator seed 1796000000002488). A link without a run (0) is of a build
    // before the mark: a vote that has one comes from a later run, on an upgraded build. It
    // links again if it follows us.
    links_.erase(it);
  }
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
}

bool ZabPeer::counts(PeerId from, const pb::Vote& v) {
  if (!votes(from)) return false;  // only voters' votes count
  // A synced member does not count an unsynced one's votes, looking or settled: its store may
  // lack txns it acknowledged (PeerConfig::synced). Answered above when this member is settled,
  // it learns who leads and joins to be synced. An unsynced member that hears a synced voter
  // knows the ensemble exists and counts as the synced do: two wiped members must not elect
  // each other beside an intact one. It looks afresh, its round's unsynced votes uncounted.
  const bool unsynced = v.unsynced() && speaks_newer(unsynced_votes_protocol);
  if (!synced_ && !unsynced && !ensemble_seen_) {
    ensemble_seen_ = true;
    if (role_ == Role::looking) become_looking();
  }
  if ((synced_ || ensemble_seen_) && unsynced && !PLANT(count_unsynced)) return false;
  if (!synced_ && !ensemble_seen_) unsynced_heard_.insert(from);
  return true;
}

void ZabPeer::take_settled_vote(PeerId from, const pb::Vote& v) {
  settled_[from] = v;
  // Its looking vote is no longer its word if it settled on another leader: a candidate
  // must not decide on it.
  if (auto r = received_.find(from); r != received_.end() && r->second.leader != v.leader()) {
    received_.erase(r);
    if (decide_at_ && !quorum_agrees(received_, vote_)) decide_at_.reset();
  }
  try_join(v.leader());
}

void ZabPeer::take_looking_vote(PeerId from, const pb::Vote& v) {
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

WARDEN_ZAB_END
}  // namespace warden::consensus
