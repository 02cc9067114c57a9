// EnsembleReplicator: the Zab core (zab_peer.hpp) as one member of an ensemble of several,
// hosted over the server's LogStore. It does no I/O of its own and reads no clock: the host
// (server/node/runtime.cpp) gives it ticks, peer messages and durability reports, and it calls the
// host's hooks to send messages, append to the log and hand forwarded requests to the
// pipeline. Committed txns reach the commit handler in zxid order on every role; a follower
// applies a txn once the leader says it is committed, also before its own disk has it (a
// quorum holds it).
//
// What the host does with Ready, in order (consensus/README.md): epochs persisted (synced) in
// the replica state, a truncation (after the log writes in flight are done), appends (durable
// later, reported with durable()), messages, then commits. A leader offers its newest complete
// snapshot and the log after the store's base (a purge moves it): a follower the log no longer
// reaches, or whose DIFF would be larger than a third of the snapshot (ZooKeeper's
// snapshotSizeFactor), gets a SNAP. Syncs are streamed by the host (the `stream` hook) when it
// sets one: the core then never reads a sync's entries or snapshot on the server's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "consensus/link_view.hpp"
#include "consensus/protocol.hpp"
#include "consensus/replicator.hpp"
#include "storage/log_store.hpp"

namespace warden::consensus {

class EnsembleReplicator final : public Replicator {
 public:
  using PeerId = int64_t;
  struct Settings {
    PeerId id = 0;
    std::vector<PeerId> voters, observers;
    int init_limit = 10;  // ticks, as in zoo.cfg
    int sync_limit = 5;
    // Core ticks per zoo.cfg tick: the core decides elections and sends heartbeats at its own
    // ticks, so a finer one makes fail-over a fraction of a tickTime (ZooKeeper's election is
    // not bound to ticks either); the limits stay tickTime multiples.
    int subticks = 1;
    // The configuration's version (its file's), and, with reconfigEnabled, how to tell a
    // reconfig txn: true with the members it installs (server/reconfig/config_txn.hpp).
    Zxid config_version = 0;
    std::string config_members;  // the host's description of the members (Ensemble::members)
    std::function<bool(std::string_view payload, std::vector<PeerId>& voters, std::vector<PeerId>& observers,
                       std::string& members)>
        config_of;
  };
  // Leader: a streamed sync to send (consensus/sync_streamer.hpp): the snapshot `snapshot`
  // (0: none) first, then `header` (the encoded Sync), then the entries in (after, upto], and
  // only then the link's later messages.
  struct SyncPlan {
    PeerId to = 0;
    uint64_t link = 0;
    uint32_t epoch = 0;
    Zxid snapshot = 0;
    Zxid after = 0, upto = 0;
    std::string header;
  };
  // Follower: records of a snapshot its leader streams, as they arrive.
  struct SnapshotFrame {
    Zxid at = 0;
    uint64_t link = 0;
    char part = 'n';
    std::vector<std::pair<std::string, std::string>> records;
    bool end = false;  // the last frame: how many records of each part were sent
    uint64_t node_records = 0, session_records = 0;
  };
  struct Hooks {
    // An encoded peer message; `vote`: an election message (the transport's election port);
    // `link`: the link it belongs to (0 for votes).
    std::function<void(PeerId to, std::string message, bool vote, uint64_t link)> send;
    // Leader: streams a sync; none set: syncs go inline in the link's messages.
    std::function<void(SyncPlan)> stream;
    // Follower: a snapshot's frame from the leader it follows, on its current link.
    std::function<void(SnapshotFrame)> snapshot_chunk;
    // Follower: whether the snapshot `at` arrived whole on `link` (all its frames, counts right).
    std::function<bool(Zxid at, uint64_t link)> snapshot_complete;
    // Follower: makes the received snapshot `at` durable, the log's new start, and the tree.
    // Throws when it cannot (a storage failure).
    std::function<void(Zxid at)> install_snapshot;
    // Follower: the tree and sessions are emptied (the store was emptied just before): it is
    // synced from nothing next.
    std::function<void()> reset_tree;
    // What the core says an operator must hear of (an error line each).
    std::function<void(const std::string&)> note;
    // Leader: the live tree as a snapshot a SNAP may send (its last applied zxid and about how
    // many bytes it takes), when the store's newest snapshot is not recent enough; none: only
    // stored snapshots are sent.
    std::function<std::pair<Zxid, uint64_t>()> live_snapshot;
    std::function<void(storage::LogEntry)> persist;            // append; durable() reports it later
    std::function<void()> finish_writes;                       // returns once every persist is written
    std::function<void(PeerId from, std::string payload)> request;  // leader: a forwarded request
    std::function<void()> role_changed;
    // The store's synced mark changed (ZabPeer's PeerConfig::synced), or, `at_start`, the member
    // starts unsynced.
    std::function<void(bool synced, bool at_start)> synced_changed;
    // A configuration came into force (a reconfig committed, or one learnt from a member).
    std::function<void(Zxid version, const std::vector<PeerId>& voters, const std::vector<PeerId>& observers,
                       const std::string& members)>
        config_changed;
    // A vote from a server outside the configuration, with the members of its own (the host's
    // text: its line says where it listens). Once per vote; the host decides what to do.
    std::function<void(PeerId from, const std::string& members)> stranger;
    // A reconfig became pending: the members of the configuration it would install (the host's
    // text), to be reached now (their votes count in every quorum until it is decided).
    std::function<void(const std::string& members)> pending_members;
    // Leader: a voter acknowledged a proposal `micros` after it was made (the newest one its
    // ack covers); a proposal got its quorum `micros` after it was made.
    std::function<void(PeerId voter, int64_t micros)> acked;
    // The tree's digest now, after the last txn applied (ZooKeeper's; 0: digests off). Unset:
    // members compare none (issue 46, point 3).
    std::function<uint64_t()> digest;
    // Follower: its tree's digest after txn `zxid` is not the leader's: it is synced from nothing.
    std::function<void(Zxid zxid, uint64_t mine, uint64_t leaders)> digest_mismatch;
    std::function<void(int64_t micros)> quorum_acked;
    // The ensemble version changed (ZabPeer::ensemble_version), from `was` to `now`.
    std::function<void(uint32_t was, uint32_t now)> ensemble_version;
  };

  EnsembleReplicator(storage::LogStore& store, Settings settings, Hooks hooks);
  ~EnsembleReplicator() override;

  // Starts looking, once the server has applied what it knows committed (`applied`).
  void start(Zxid applied) override;
  void tick(uint64_t random);
  // An encoded peer message from `from`; false (and why, in `error`) when it does not decode:
  // the caller closes the connection it came on.
  bool receive(PeerId from, std::string_view bytes, std::string* error);
  // The log holds everything submitted up to `upto` durably.
  void durable(Zxid upto) override;
  // The connection to `member` broke (ZabPeer::peer_lost).
  void peer_lost(PeerId member);
  // Leader: the stored snapshot `at` failed to read while it was sent; later SNAPs offer an
  // older stored snapshot or the live tree, until this process restarts.
  void snapshot_unread(Zxid at) { unread_snapshots_.insert(at); }
  // Follower or observer that serves: hands `payload` to the leader's request hook, in order.
  bool forward(std::string payload);

  void set_commit_handler(CommitHandler h) override { on_commit_ = std::move(h); }
  std::optional<Zxid> propose(std::string payload) override;
  Zxid last_committed() const override { return applied_; }

  // "leading", "following", "observing" or "looking".
  const char* role_name() const;
  bool leading() const;
  bool serving() const;
  PeerId leader() const;
  uint32_t epoch() const;
  // Leader: voters and observers linked to it, and those of them synchronised.
  size_t followers() const;
  size_t synced_followers() const;
  // The peer protocol versions this member speaks, and the ensemble version (ZabPeer's).
  ProtocolRange protocols() const;
  uint32_t ensemble_version() const;
  std::vector<LinkView> link_views() const;  // leader: its links
  Zxid last_proposed() const;                          // leader: its last proposal
  // Reconfiguration: the version in force, whether a reconfig is pending, and (leader) whether
  // a quorum of these voters is synchronised with it.
  Zxid config_version() const;
  bool reconfig_pending() const;
  bool quorum_synced(const std::vector<PeerId>& voters, const std::vector<PeerId>& observers) const;
  // Follower or observer: its link to the leader (0: none), the seq of the last message sent on
  // it (a forward() is one message), and the last seq the leader said it received.
  struct LinkProgress {
    uint64_t link = 0, sent = 0, acked = 0;
  };
  LinkProgress link_progress() const;

 private:
  struct Core;
  void process();  // carries out the core's Ready (host_loop.hpp), until it holds none
  HostSteps host_steps();
  void save_state(bool epochs_changed);
  void apply_upto(Zxid committed);
  // Leader: turns acks and commits that moved since the last call into ack latencies.
  void measure_acks();
  // The tree's digest after each txn applied lately, and leader digests for txns not applied
  // yet; compare() checks one of the leader's against this member's.
  void note_applied_digest(Zxid z);
  void compare_digest(Zxid z, uint64_t leaders);
  void forget_digests();
  std::deque<std::pair<Zxid, uint64_t>> digests_;
  std::map<Zxid, uint64_t> awaited_digests_;
  // After a SNAP: digests are taken from this zxid on (the snapshot's end frame says; see
  // peer.proto's SnapChunk.digest_from), and what the last end frame said, for its snapshot.
  Zxid digests_from_ = 0;
  std::pair<Zxid, Zxid> snapshot_digest_from_{0, 0};
  bool resync_ = false;

  storage::LogStore& store_;
  Settings settings_;
  Hooks hooks_;
  CommitHandler on_commit_;
  std::set<Zxid> unread_snapshots_;  // before core_: its view holds a reference
  std::unique_ptr<Core> core_;
  // Appended through this replicator and not yet both applied and durable: the log's tail as
  // the core sees it, and where commits are applied from.
  std::deque<storage::LogEntry> recent_;
  Zxid applied_ = 0;
  uint32_t logged_ensemble_version_ = oldest_protocol;  // the ensemble version last reported
  Zxid durable_ = 0;
  Zxid saved_mark_ = 0;
  // Leader: when each proposal not yet acknowledged by every synced voter was made, and what
  // was acknowledged and committed when last measured.
  std::deque<std::pair<Zxid, std::chrono::steady_clock::time_point>> proposed_at_;
  std::map<PeerId, Zxid> measured_acks_;
  Zxid measured_commit_ = 0;
  std::unique_ptr<HostSteps> steps_;  // what this host does with each part of a Ready
  OutermostLoop loop_;
};

}  // namespace warden::consensus
