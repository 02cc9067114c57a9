// ZabPeer: one member of an ensemble as a pure state machine (consensus/README.md is the long
// version). It owns no socket, clock, thread, disk or random source: the host feeds it events
// (a peer message, a tick with a random number, the log durable up to a zxid, a proposal) and
// then takes a Ready: epochs to persist, log changes to make, messages to send, how far txns are
// committed, and whether the role changed. The host does the I/O in the order Ready lists it,
// and reports durability later with durable(). The same core runs under the seeded simulator
// (tests/sim) and, next, behind the peer transport.
//
// Phases, as in ZooKeeper: fast leader election (votes ordered by current epoch, last zxid,
// server id), discovery (the leader picks an epoch above every accepted one a quorum reports),
// synchronisation (DIFF, TRUNC or SNAP, then NEWLEADER; the leader is established once a quorum
// acknowledged it), broadcast (pipelined proposals, ACKs once durable, COMMIT on a quorum).
//
// Invariants kept here: a follower acknowledges only what its log holds durably; the leader
// commits only what a quorum of voters (itself included) holds durably; commits never go back;
// an epoch is persisted as accepted before the follower says so, and as current before it
// acknowledges NEWLEADER; a leader never proposes past `max_counter` in one epoch.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "consensus/link_view.hpp"
#include "consensus/peer.pb.h"
#include "consensus/protocol.hpp"
#include "consensus/quorum.hpp"
#include "consensus/replicator.hpp"

namespace warden::consensus {
// The simulator's copy of the core, with plants, lives in a namespace of its own, so that it
// can never be mixed up with the server's at link time.
#ifdef WARDEN_PLANTS
inline namespace planted {
#endif

using PeerId = int64_t;

struct Entry {
  Zxid zxid = 0;
  std::string payload;
};

// Test-only bugs the simulator switches in to prove that its checks catch them. Compiled only
// into the simulator's copy of the core (WARDEN_PLANTS), never into the server.
struct Plants {
  bool commit_minority = false;  // commit on the leader's own durable write alone
  bool skip_trunc = false;       // a follower keeps txns the leader told it to cut
  bool stale_vote = false;       // votes ignore epoch and zxid (and the leader's ahead check)
  bool commit_old_quorum_only = false;  // a reconfig (and what follows it) commits on the old quorum
  bool count_removed_member = false;    // a voter a reconfig removed still counts in every quorum
  bool count_unsynced = false;          // a synced member counts the votes of unsynced ones
  bool decide_unheard = false;  // unsynced members elect each other once initLimit passed unheard
};

// A configuration: who votes, who observes, and its version (the zxid of the reconfig txn that
// made it; the version of the file it came from at first). Versions only grow.
struct Ensemble {
  std::vector<PeerId> voters;
  std::vector<PeerId> observers;
  Zxid version = 0;
  // The host's description of the members (the server's: their server.N lines, with the
  // addresses a member that missed the reconfig needs to reach them); opaque to the core.
  std::string members;
  size_t quorum() const { return majority_of(voters.size()); }
  bool is_voter(PeerId p) const;
  bool is_observer(PeerId p) const;
  bool is_member(PeerId p) const { return is_voter(p) || is_observer(p); }
  bool operator==(const Ensemble&) const = default;
};

// ZooKeeper's zookeeper.snapshotSizeFactor.
constexpr double default_snapshot_size_factor = 0.33;

struct PeerConfig {
  PeerId id = 0;
  Ensemble ensemble;
  // ZooKeeper's limits, in ticks: how long discovery and synchronisation may take, and how long
  // a member may stay silent once synchronised.
  int init_limit = 10;
  int sync_limit = 5;
  // While looking, votes go out again every this many ticks (plus a random 0..1).
  int vote_interval = 2;
  // Once a quorum agrees, wait this many ticks for a better vote before deciding.
  int finalize_ticks = 1;
  // The leader gives up its epoch before its counter passes this (a new epoch restarts it).
  uint32_t max_counter = UINT32_MAX - 1;
  // The most entries, and about the most bytes, one Proposal, Sync or Inform message carries
  // (one entry larger than that goes alone).
  size_t max_entries_per_message = 1000;
  size_t max_message_bytes = 4u << 20;
  // The host streams syncs (peer.proto's Sync.streamed): a Sync carries no entries and no
  // snapshot, the host sends them. Else (the simulator) they go in the link's messages.
  bool stream_sync = false;
  // ZooKeeper's zookeeper.snapshotSizeFactor: a follower whose DIFF would be larger than this
  // share of the snapshot gets the snapshot (when it is newer than the follower's log).
  double snapshot_size_factor = default_snapshot_size_factor;
  // The configuration a txn installs when it commits (a reconfig), or nothing for any other
  // txn. Called on every entry the log takes: a cheap test first. Unset: no reconfig.
  std::function<std::optional<Ensemble>(std::string_view payload)> config_of;
  // Whether this member's store holds everything it ever acknowledged (storage::LogStore::
  // synced). Unsynced (new, wiped, or a damaged store set aside) it may have acknowledged txns
  // it no longer holds, so synced members do not count its votes (pb::Vote::unsynced): a quorum
  // it made up with a lagging member could elect a leader without them (CTRL's case, issue 46).
  // It joins the leader its peers elect, and a whole sync (NEWLEADER) makes it synced; being
  // established as leader does too. While no member is synced (a new ensemble) every vote counts;
  // an unsynced member that hears a synced voter counts as synced members do.
  bool synced = true;
  // The peer protocol versions this member speaks (consensus/protocol.hpp). The simulator gives
  // a member of the build before {2, 2}: it sends what that build sends (no range, no unsynced
  // votes) and leaves what it would not read (digests, unsynced votes, the ensemble version).
  ProtocolRange protocols;
  // This run of the member: new at each start (the host draws it at random), never 0. Votes and
  // FollowerInfo carry it, so that a leader notices a follower that restarted after it
  // acknowledged NEWLEADER (a power loss breaks no connection): counted, its acknowledgement
  // established a leader after a later one had committed (simulator seed 1796000000002488).
  uint64_t incarnation = 0;
#ifdef WARDEN_PLANTS
  Plants plants;
#endif
};

// What the core reads of the host's log (etcd-raft's Storage): the entries appended so far,
// durable or not, after an optional snapshot.
class LogView {
 public:
  virtual ~LogView() = default;
  virtual Zxid last_zxid() const = 0;      // the snapshot's zxid when no entry follows it; 0: empty
  virtual Zxid snapshot_zxid() const = 0;  // entries at or below it are only in the snapshot
  virtual bool contains(Zxid z) const = 0;  // an entry with this zxid follows the snapshot
  // The largest zxid at or below `z` that the log holds (an entry, or the snapshot's zxid).
  virtual Zxid floor(Zxid z) const = 0;
  // Entries in (after, upto], at most `max` and, past the first, about `max_bytes` of payload,
  // in order; `after` must be held (floor(after) == after).
  virtual std::vector<Entry> entries(Zxid after, Zxid upto, size_t max, size_t max_bytes) const = 0;
  virtual std::string snapshot() const = 0;  // the state machine at snapshot_zxid()
  // The log holds every entry after base() (a purge may keep older snapshots than the newest,
  // and the log after the oldest kept one): below it, only a snapshot brings a follower along.
  virtual Zxid base() const { return snapshot_zxid(); }
  // About how many bytes the entries in (after, upto], and the snapshot, take (0: unknown).
  virtual uint64_t bytes(Zxid after, Zxid upto) const {
    (void)after;
    (void)upto;
    return 0;
  }
  virtual uint64_t snapshot_bytes() const { return 0; }
};

struct Epochs {
  uint32_t accepted = 0;  // the newest epoch this server agreed to follow (ZooKeeper's acceptedEpoch)
  uint32_t current = 0;   // the epoch whose history this server holds (currentEpoch)
  bool operator==(const Epochs&) const = default;
};

enum class Role { looking, following, leading, observing };
const char* role_name(Role r);

// What the host does after each event, in this order: persist `epochs` (synced); cut the log
// after `truncate_after`; install `snapshot` (synced: the log then starts after it); append
// `append` (durable later, reported with durable()); send `messages`; apply up to `committed`.
struct Ready {
  std::optional<Epochs> epochs;
  std::optional<Zxid> truncate_after;
  // Before anything else of this Ready: the log, its snapshots and the tree are emptied (a
  // follower synced from nothing after a TRUNC it could not carry out).
  bool reset = false;
  std::optional<std::pair<Zxid, std::string>> snapshot;
  // The snapshot's records came before, as SnapChunk frames the host kept (a streamed SNAP):
  // `snapshot`'s string is empty, the host installs what it received.
  bool snapshot_streamed = false;
  std::vector<Entry> append;
  std::vector<std::pair<PeerId, pb::PeerMessage>> messages;
  Zxid committed = 0;
  bool role_changed = false;  // role(), epoch(), leader() or serving() changed
  // A configuration came into force (a reconfig committed, or a newer one learnt from a peer):
  // the host persists it (zoo.cfg.dynamic.<version>) and reaches its members.
  std::optional<Ensemble> config;
  // A reconfig became pending (in the log, or heard of in a vote): the host reaches its members,
  // whose votes every quorum now needs too; a restarted member finds one in its log whose new
  // servers its files do not name.
  std::optional<Ensemble> pending;
  // Leader: requests its synchronised followers and observers forwarded, in each link's order.
  std::vector<std::pair<PeerId, std::string>> requests;
  // What an operator must hear of (the host logs each as an error): the core has no logging.
  std::vector<std::string> notes;
  // The store's synced mark changed (PeerConfig::synced): persisted with `epochs`, before
  // `reset` empties the store and before `messages` go.
  std::optional<bool> synced;
  // Follower: the leader's tree digest after the txn at this zxid (its ping's, commit's or
  // inform's), for the host to compare with its own after the same txn (ZabPeer::resync on a
  // mismatch).
  std::optional<std::pair<Zxid, uint64_t>> leader_digest;
  // The ensemble version changed (ZabPeer::ensemble_version): the host logs it.
  std::optional<uint32_t> ensemble_version;
  bool empty() const {
    return !epochs && !truncate_after && !reset && !snapshot && append.empty() && messages.empty() && !role_changed &&
           requests.empty() && !config && !pending && notes.empty() && !synced && !leader_digest && !ensemble_version;
  }
};

class ZabPeer {
 public:
  // `epochs`, `committed` and the log as they were persisted. The peer starts looking.
  ZabPeer(PeerConfig config, const LogView& log, Epochs epochs, Zxid committed);

  void tick(uint64_t random);
  void receive(PeerId from, const pb::PeerMessage& m);
  // The log holds everything up to `upto` durably.
  void durable(Zxid upto);
  // The host's connection to `p` broke (its process died, or the network said so): a follower
  // of `p` looks for a leader at once instead of waiting out syncLimit, and a leader drops its
  // link to `p` (it comes back with a new FollowerInfo). A hung peer breaks nothing: the
  // limits catch it.
  void peer_lost(PeerId p);
  // A txn to replicate: its zxid, or nothing when this peer is not an established leader (or
  // the txn is a reconfig and another is pending).
  std::optional<Zxid> propose(std::string payload);
  // Follower or observer that serves: sends `payload` to the leader on the link, where it comes
  // out of the leader's ready() in order. False when there is no such link (a lost link loses
  // what it carried, as a broken connection would: the host must not wait for it).
  bool forward(std::string payload);
  // Leader: its tree's digest after it applied the txn at `applied` (0: digests off); its
  // pings, commits and informs carry the latest (pb::Ping::digest).
  void note_digest(Zxid applied, uint64_t digest);
  // Follower or observer whose tree is not the leader's (a digest mismatch): it looks again and
  // asks to be synced from nothing (a SNAP, or a DIFF from zero after emptying its store).
  void resync();
  Ready ready();

  Role role() const { return role_; }
  PeerId leader() const { return leader_; }
  uint32_t epoch() const { return epochs_.current; }
  const Epochs& epochs() const { return epochs_; }
  bool store_synced() const { return synced_; }  // PeerConfig::synced, as it is now
  // An established leader, or a follower or observer that got UPTODATE: it may serve clients.
  bool serving() const { return serving_; }
  // An established leader whose epoch has zxids left: propose() would take a payload.
  bool can_propose() const { return role_ == Role::leading && established_ && counter_ < cfg_.max_counter; }
  Zxid committed() const { return committed_; }
  // The configuration in force, and a reconfig in the log not yet committed (its zxid and what
  // it installs). While one is pending, every quorum needs a quorum of both.
  const Ensemble& ensemble() const { return cfg_.ensemble; }
  const std::optional<std::pair<Zxid, Ensemble>>& pending_config() const { return pending_; }
  // Leader: a quorum of `e`'s voters (itself included) is synchronised with it now, as a
  // reconfig to `e` needs (ZooKeeper's NewConfigNoQuorum when not).
  bool quorum_synced(const Ensemble& e) const;
  Zxid durable_upto() const { return durable_; }
  PeerId id() const { return cfg_.id; }
  // Leader: members with a link to it, and those of them synchronised (mntr's zk_followers and
  // zk_synced_followers).
  size_t linked() const { return role_ == Role::leading ? links_.size() : 0; }
  size_t synced() const;
  // Leader: each linked member as the leader sees it.
  std::vector<LinkView> link_views() const;
  // Leader: the last zxid it proposed (or took over at establishment).
  Zxid last_proposed() const { return role_ == Role::leading ? last_proposed_ : 0; }
  // Follower or observer: its link to the leader (0: none), the seq of the last message it sent
  // on it, and the seq of the last one the leader says it received (from the leader's pings).
  // A message with seq <= link_acked() on this link is known to have reached the leader.
  uint64_t link() const { return link_; }
  uint32_t link_epoch() const { return link_epoch_; }
  uint64_t link_sent() const { return sent_; }
  uint64_t link_acked() const { return leader_received_; }
  // The newest peer protocol every member of the configuration speaks, as the leader works it
  // out (this member's own while it leads; its leader's word while it follows; the last it knew
  // while it looks). A member not heard from counts as the oldest this member speaks.
  uint32_t ensemble_version() const { return ensemble_version_; }
  const ProtocolRange& protocols() const { return cfg_.protocols; }

 private:
  struct Vote {
    PeerId leader = 0;
    Zxid zxid = 0;
    uint32_t epoch = 0;
  };
  // A leader's view of one follower or observer.
  struct Link {
    uint64_t id = 0;
    bool observer = false;
    uint64_t sent = 0, received = 0;  // seq of the last message each way
    enum class Phase { info, epoch_acked, syncing, synced } phase = Phase::info;
    uint64_t nonce = 0;
    uint64_t incarnation = 0;  // the follower's run (0: a build that does not say)
    uint32_t accepted_epoch = 0, current_epoch = 0;
    Zxid last_zxid = 0;  // reported in AckEpoch
    Zxid acked = 0;      // durable up to here (synced voters count towards commits)
    Zxid informed = 0;   // observers: committed entries sent up to here
    uint64_t heard = 0;  // tick of its last message
  };

  // Whether the peers `counted` names make a quorum of the configuration in force and, while a
  // reconfig is pending (and `with_pending`), of the one it installs too.
  template <class F>
  bool quorum_of(F counted, bool with_pending = true) const;
  // Whether a vote's sender holds neither this server's pending reconfig nor a configuration
  // from it on; whether it leads in a later epoch than the reconfig's without it (then this
  // server may join it on the quorum of the configuration in force); whether its own latest txn
  // is of a later epoch (then the reconfig never commits).
  bool lacks_pending(const pb::Vote& v) const;
  bool leads_past_pending(const pb::Vote& v) const;
  bool voids_pending(PeerId from, const pb::Vote& v) const;
  bool votes(PeerId p) const;  // a voter of the configuration in force or of the pending one
  void note_config_entry(const Entry& e);
  void adopt(Ensemble e);  // a configuration comes into force
  // Leading, about to commit up to `c` and with it a reconfig that removes this leader: the new
  // voter to hand leadership to (a synced one that acknowledged at least `c`, the most up to date
  // first), or 0.
  PeerId designate(Zxid c) const;
  void maybe_activate();   // the pending reconfig, once committed
  Zxid commit_point(const Ensemble& e) const;

  bool better(const Vote& a, const Vote& b) const;
  Vote self_vote() const;
  Zxid last_durable() const;
  void send(PeerId to, pb::PeerMessage m);
  void send_vote(PeerId to);
  void broadcast_vote();
  void on_vote(PeerId from, const pb::PeerMessage& m);
  // The stages of a vote (election.cpp): the configurations it tells of (false: wait for the
  // link, the vote is done with); the answer of a member that is not looking; whether it counts
  // (a voter's, and not an unsynced member's where those do not count); then a settled voter's
  // word, or a looking voter's vote in its round.
  bool learn_configurations(PeerId from, const pb::Vote& v);
  void answer_while_settled(PeerId from, const pb::PeerMessage& m);
  bool counts(PeerId from, const pb::Vote& v);
  void take_settled_vote(PeerId from, const pb::Vote& v);
  void take_looking_vote(PeerId from, const pb::Vote& v);
  bool quorum_agrees(const std::map<PeerId, Vote>& votes, const Vote& v) const;
  void try_join(PeerId leader);

  void become_looking();
  void become_follower(PeerId leader);
  void become_leader();
  void set_role(Role r, PeerId leader);

  // Leader.
  void lead_receive(PeerId from, const pb::PeerMessage& m);
  void send_on_link(PeerId to, Link& l, pb::PeerMessage m);
  void maybe_choose_epoch();
  void maybe_start_sync();
  void start_sync(PeerId to, Link& l);
  void maybe_establish();
  void advance_commit();
  void inform_observers();
  void lead_tick();
  // Leader: `p` is linked as a follower (not an observer) and has come at least this far.
  bool linked_voter(PeerId p, Link::Phase at_least) const;

  // Follower and observer.
  void follow_receive(PeerId from, const pb::PeerMessage& m);
  void follow_leader_info(const pb::PeerMessage& m);
  void follow_sync(const pb::Sync& s);
  void send_to_leader(pb::PeerMessage m);
  void send_follower_info();
  void follower_tick();
  void maybe_ack_new_leader();
  void take_entries(const google::protobuf::RepeatedPtrField<pb::Entry>& entries);
  void stream_received(const pb::PeerMessage& m);
  std::vector<Entry> read(Zxid after, Zxid upto) const;
  void set_committed(Zxid z);

  PeerConfig cfg_;
  const LogView& log_;
  Epochs epochs_;
  Zxid committed_ = 0;
  // Follower: a TRUNC came below what this member applied or below its log's base, which it
  // cannot carry out on its tree: its next AckEpoch reports no history (last zxid 0), so that
  // any leader, of this build or the one before, syncs it from nothing: a SNAP (whose install
  // replaces the tree) or, from a leader whose log reaches back to the start, a DIFF from 0,
  // before which it empties its log and tree (Ready::reset).
  bool want_snapshot_ = false;
  bool synced_ = true;  // PeerConfig::synced, as it changes
  bool ensemble_seen_ = false;  // unsynced: a synced voter's vote was heard (it counts as synced do)
  // Whether it may stand and lead: synced, or unsynced in an ensemble that has no synced member
  // it knows of (a new one).
  bool may_lead() const { return synced_ || !ensemble_seen_; }
  // Unsynced and no synced voter heard: the voters whose (unsynced) votes it heard. It decides on
  // such votes only once it heard every voter, or after initLimit ticks: a synced member slower to
  // start (a larger store to load) must be heard before two wiped members elect each other.
  std::set<PeerId> unsynced_heard_;
  bool may_decide() const;
  // Version negotiation (consensus/protocol.hpp): the newest version each peer said it speaks
  // (its messages' range), and the ensemble version.
  std::map<PeerId, uint32_t> newest_heard_;
  uint32_t ensemble_version_ = 0;
  void set_ensemble_version(uint32_t v);
  void update_ensemble_version();  // leader: from what it heard of each member
  // Follower: its leader's word (`announced`; 0 from a leader that speaks its version alone).
  void take_ensemble_version(const pb::PeerMessage& m, uint32_t announced);
  bool speaks_newer(uint32_t version) const { return cfg_.protocols.newest >= version; }
  Zxid digest_zxid_ = 0;  // leader: note_digest's latest
  uint64_t digest_ = 0;
  // Leader: the latest digest into a ping, commit or inform (none while digests are off, or
  // while a member of the ensemble does not speak them).
  template <class Message>
  void attach_digest(Message& m) const {
    if (digest_zxid_ == 0 || digest_ == 0 || ensemble_version_ < digests_protocol) return;
    m.set_digest_zxid(digest_zxid_);
    m.set_digest(digest_);
  }
  // Leader: the ensemble version into a ping or UPTODATE.
  template <class Message>
  void announce_ensemble_version(Message& m) const {
    if (speaks_newer(range_protocol)) m.set_ensemble_version(ensemble_version_);
  }
  // Follower or observer: a digest its leader sent, for the host to compare.
  void take_digest(Zxid applied, uint64_t digest);
  void set_synced(bool s);
  // The highest epoch a leader may choose: its zxids (epoch in the high half) stay positive.
  static constexpr uint32_t max_epoch = 0x7fffffff;
  bool epochs_exhausted_ = false;  // said once in Ready::notes
  Zxid durable_ = 0;
  uint64_t now_ = 0;  // ticks since start
  Role role_ = Role::looking;
  PeerId leader_ = 0;
  bool serving_ = false;
  Ready ready_;
  // Following: the voter our leader handed leadership to with the commit of a reconfig that
  // removes it (ZooKeeper's designated leader); 0: none.
  PeerId designated_ = 0;

  // Looking.
  uint64_t round_ = 0;
  Vote vote_;
  std::map<PeerId, Vote> received_;        // this round's votes of looking voters
  std::map<PeerId, pb::Vote> settled_;     // votes of voters that follow or lead
  uint64_t next_vote_at_ = 0;
  std::optional<uint64_t> decide_at_;

  // Following / observing.
  enum class FPhase { discovery, syncing, broadcast } fphase_ = FPhase::discovery;
  uint64_t nonce_ = 0;
  uint64_t info_sent_ = 0;  // tick of the last FollowerInfo
  uint64_t link_ = 0, sent_ = 0, received_seq_ = 0;
  uint64_t leader_received_ = 0;  // the leader's word: the last seq of ours it received
  uint32_t link_epoch_ = 0;
  uint64_t heard_ = 0;
  Zxid received_upto_ = 0;    // the last zxid the leader gave this follower
  std::optional<Zxid> sync_end_;  // awaiting durability up to here before NEWLEADER's ack
  bool streamed_ = false;         // this sync's entries come as SyncData frames

  // Leading.
  std::map<PeerId, Link> links_;
  uint64_t next_link_ = 0;
  uint32_t new_epoch_ = 0;     // 0 until a quorum reported its accepted epochs
  bool syncing_started_ = false;
  bool established_ = false;
  uint64_t lead_since_ = 0;
  Zxid history_end_ = 0;       // the leader's log when it started leading: committed at establishment
  uint32_t counter_ = 0;
  Zxid last_proposed_ = 0;
  std::vector<Entry> unsent_;  // proposals to forward at the next ready()

  // Reconfiguration: the last reconfig in the log above the configuration in force.
  std::optional<std::pair<Zxid, Ensemble>> pending_;
  bool pending_heard_ = false;  // learnt from a vote, not in this server's log
  Zxid voided_ = 0;             // reconfigs up to here are known never to commit
#ifdef WARDEN_PLANTS
  std::vector<PeerId> removed_;  // voters reconfigs removed (the count_removed_member plant counts them)
#endif
};

#ifdef WARDEN_PLANTS
}  // namespace planted
#endif
}  // namespace warden::consensus
