// ZabPeer as a leader: the new epoch, syncing each follower (DIFF, TRUNC, SNAP), establishing,
// proposals and the commit point, observers (consensus/README.md).
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
    announce_ensemble_version(*m.mutable_up_to_date());
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
    l.incarnation = info.incarnation();
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
      announce_ensemble_version(*r.mutable_up_to_date());
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
  update_ensemble_version();
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
      announce_ensemble_version(*m.mutable_ping());
      send_on_link(it->first, l, std::move(m));
    }
    ++it;
  }
  if (!quorum_of([&](PeerId p) { return p == cfg_.id || linked_voter(p, Link::Phase::synced); })) become_looking();
}

WARDEN_ZAB_END
}  // namespace warden::consensus
