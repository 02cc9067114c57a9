// ZabPeer as a follower or observer: what it sends its leader, the sync it takes, proposals,
// commits and informs, and the silence after which it looks again (consensus/README.md).
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
  if (m.has_leader_info()) return follow_leader_info(m);
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
    follow_sync(m.sync());
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
    take_ensemble_version(m, m.up_to_date().ensemble_version());
    set_committed(m.up_to_date().committed());
  } else if (m.has_ping()) {
    take_digest(m.ping().digest_zxid(), m.ping().digest());
    take_ensemble_version(m, m.ping().ensemble_version());
    set_committed(m.ping().zxid());
    leader_received_ = std::max(leader_received_, m.ping().received());
    pb::PeerMessage r;
    r.mutable_ping()->set_zxid(last_durable());
    send_to_leader(std::move(r));
  }
}

// LEADERINFO: the leader's new epoch. Accepted (persisted before the AckEpoch leaves) unless
// this member already left it behind; the AckEpoch says how far this member's history goes.
void ZabPeer::follow_leader_info(const pb::PeerMessage& m) {
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
}

// SYNC: how the leader brings this member's history to its own (DIFF, TRUNC or SNAP, with the
// configuration in force); entries may follow, streamed.
void ZabPeer::follow_sync(const pb::Sync& s) {
  if (fphase_ != FPhase::discovery) return;
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

WARDEN_ZAB_END
}  // namespace warden::consensus
