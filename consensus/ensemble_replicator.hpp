// EnsembleReplicator: the Zab core (zab_peer.hpp) as one member of an ensemble of several,
// hosted over the server's LogStore. It does no I/O of its own and reads no clock: the host
// (server/runtime.cpp) gives it ticks, peer messages and durability reports, and it calls the
// host's hooks to send messages, append to the log and hand forwarded requests to the
// pipeline. Committed txns reach the commit handler in zxid order on every role; a follower
// applies a txn once the leader says it is committed, also before its own disk has it (a
// quorum holds it).
//
// What the host does with Ready, in order (consensus/README.md): epochs persisted (synced) in
// the replica state, a truncation (after the log writes in flight are done), appends (durable
// later, reported with durable()), messages, then commits. A snapshot install (SNAP) never
// happens here: a leader's view of its log has no snapshot, so it synchronises every follower
// by DIFF or TRUNC; that needs the log from the start (no autopurge in an ensemble yet).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  };
  struct Hooks {
    // An encoded peer message; `vote`: an election message (the transport's election port).
    std::function<void(PeerId to, std::string message, bool vote)> send;
    std::function<void(storage::LogEntry)> persist;            // append; durable() reports it later
    std::function<void()> finish_writes;                       // returns once every persist is written
    std::function<void(PeerId from, std::string payload)> request;  // leader: a forwarded request
    std::function<void()> role_changed;
  };

  EnsembleReplicator(storage::LogStore& store, Settings settings, Hooks hooks);
  ~EnsembleReplicator() override;

  // Starts looking, once the server has applied what it knows committed (`applied`).
  void start(Zxid applied);
  void tick(uint64_t random);
  // An encoded peer message from `from`; false (and why, in `error`) when it does not decode:
  // the caller closes the connection it came on.
  bool receive(PeerId from, std::string_view bytes, std::string* error);
  // The log holds everything submitted up to `upto` durably.
  void durable(Zxid upto);
  // The connection to `member` broke (ZabPeer::peer_lost).
  void peer_lost(PeerId member);
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
  // Follower or observer: its link to the leader (0: none), the seq of the last message sent on
  // it (a forward() is one message), and the last seq the leader said it received.
  struct LinkProgress {
    uint64_t link = 0, sent = 0, acked = 0;
  };
  LinkProgress link_progress() const;

 private:
  struct Core;
  void process();
  void save_state(bool epochs_changed);
  void apply_upto(Zxid committed);

  storage::LogStore& store_;
  Settings settings_;
  Hooks hooks_;
  CommitHandler on_commit_;
  std::unique_ptr<Core> core_;
  // Appended through this replicator and not yet both applied and durable: the log's tail as
  // the core sees it, and where commits are applied from.
  std::deque<storage::LogEntry> recent_;
  Zxid applied_ = 0;
  Zxid durable_ = 0;
  Zxid saved_mark_ = 0;
  OutermostLoop loop_;
};

}  // namespace warden::consensus
