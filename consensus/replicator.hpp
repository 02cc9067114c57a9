// The seam between the request pipeline and replication (design.md, "A write, from socket to
// reply", step 3). The pipeline hands over a txn payload; replication gives it the next zxid,
// makes it durable on a quorum and reports it committed, always in zxid order.
//
// ZabReplicator is what a standalone server runs: the Zab core (zab_peer.hpp) as an ensemble of
// one voter, hosted over the server's LogStore. The quorum is itself, so a proposal commits once
// its own log holds it durably. It does no I/O of its own: each entry goes to a `persist`
// action, and durable() says how far the log is durable. A synchronous store calls durable()
// from inside persist; a group-commit store calls it later, from the server's thread. Every
// start (and every take-back after a failed write) elects it again, in a new epoch, so a zxid
// is never handed out twice.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "storage/log_store.hpp"

namespace warden::consensus {

using Zxid = int64_t;

constexpr Zxid make_zxid(uint32_t epoch, uint32_t counter) {
  return static_cast<Zxid>((static_cast<uint64_t>(epoch) << 32) | counter);
}
constexpr uint32_t zxid_epoch(Zxid z) { return static_cast<uint32_t>(static_cast<uint64_t>(z) >> 32); }
constexpr uint32_t zxid_counter(Zxid z) { return static_cast<uint32_t>(z & 0xffffffff); }

// Runs a step again and again until it finds nothing to do, from the outermost call only: a
// call made from inside a step (a hook that proposes again, a log that reports durability from
// inside persist) only marks that more may be waiting. So the hosts' work happens in order,
// never nested.
class OutermostLoop {
 public:
  template <class Step>  // bool step(): whether it found work
  void run(Step step) {
    if (running_) {
      again_ = true;
      return;
    }
    running_ = true;
    struct Reset {
      bool& r;
      ~Reset() { r = false; }
    } reset{running_};
    for (;;) {
      again_ = false;
      if (!step() && !again_) break;
    }
  }

 private:
  bool running_ = false, again_ = false;
};

class Replicator {
 public:
  // Called once per committed txn, in zxid order.
  using CommitHandler = std::function<void(Zxid, std::string_view payload)>;

  virtual ~Replicator() = default;
  virtual void set_commit_handler(CommitHandler h) = 0;
  // Queues a txn for replication; returns the zxid it was given, or nothing when this server
  // cannot propose (it does not lead). The commit handler may run before this returns (a
  // synchronous log) or later.
  virtual std::optional<Zxid> propose(std::string payload) = 0;
  virtual Zxid last_committed() const = 0;
  // Begins, once the server has applied what it knows committed (`applied`): a lone voter leads,
  // a member of an ensemble looks for its leader.
  virtual void start(Zxid applied) = 0;
  // The log holds everything handed to the host's persist up to `upto` durably.
  virtual void durable(Zxid upto) = 0;
};

struct HostSteps;  // host_loop.hpp

class ZabReplicator final : public Replicator {
 public:
  using Persist = std::function<void(storage::LogEntry)>;

  // `max_counter`: the most zxids one epoch hands out (0: the core's default, as ZooKeeper's
  // 32-bit counter); tests set it low to roll epochs over.
  ZabReplicator(storage::LogStore& store, Persist persist, uint32_t max_counter = 0);
  ~ZabReplicator() override;
  // Leads, once the server has applied what it knows committed (`applied`: the snapshot and the
  // log up to the store's commit mark). The epochs come from the store's replica state, or from
  // its last zxid for a log written before it had one. A lone voter's log is its history: the
  // txns after `applied` are committed as it is established, through the commit handler.
  void start(Zxid applied) override;

  void set_commit_handler(CommitHandler h) override { on_commit_ = std::move(h); }
  // Refused (nullopt) while an epoch that ran out of zxids still has proposals in flight: a
  // new epoch could not tell those from durable ones. The first proposal after they are
  // committed leads again in a new epoch.
  std::optional<Zxid> propose(std::string payload) override;
  Zxid last_committed() const override { return last_committed_; }
  // The log is durable up to `upto`: commit every proposal at or below it, in order.
  void durable(Zxid upto) override;
  // The log could not make the proposals after last_committed() durable: forget them, and lead
  // again in a new epoch. Returns how many were dropped.
  size_t abort();
  size_t in_flight() const { return unacked_.size(); }
  uint32_t epoch() const;

 private:
  // The core and its view of the log, defined in zab_replicator.cpp (this header stays free of
  // protobuf, and of the simulator's planted copy of the core).
  struct Core;
  void elect();
  void process();  // carries out the core's Ready (host_loop.hpp), until it holds none
  HostSteps host_steps();
  void save_state();

  storage::LogStore& store_;
  Persist persist_;
  CommitHandler on_commit_;
  std::unique_ptr<Core> core_;
  std::deque<storage::LogEntry> unacked_;  // proposed, not yet committed; ascending zxids
  Zxid last_committed_ = 0;
  uint32_t max_counter_;
  std::unique_ptr<HostSteps> steps_;  // what this host does with each part of a Ready
  OutermostLoop loop_;
};

}  // namespace warden::consensus
