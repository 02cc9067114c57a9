// The seam between the request pipeline and replication (design.md, "A write, from socket to
// reply", step 3). The pipeline hands over a txn payload; replication gives it the next zxid,
// makes it durable on a quorum and reports it committed, always in zxid order.
//
// SoloReplicator is the ensemble of one that a standalone server runs: the quorum is itself,
// so a proposal commits once its own log has made it durable. Like the rest of consensus/ it
// does no I/O: it hands each entry to a `persist` action and is told with durable() how far the
// log is durable. A synchronous store calls durable() from inside persist; a group-commit store
// calls it later, from the server's thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
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

class Replicator {
 public:
  // Called once per committed txn, in zxid order.
  using CommitHandler = std::function<void(Zxid, std::string_view payload)>;

  virtual ~Replicator() = default;
  virtual void set_commit_handler(CommitHandler h) = 0;
  // Queues a txn for replication; returns the zxid it was given. The commit handler may run
  // before this returns (a synchronous log) or later.
  virtual Zxid propose(std::string payload) = 0;
  virtual Zxid last_committed() const = 0;
};

class SoloReplicator final : public Replicator {
 public:
  using Persist = std::function<void(storage::LogEntry)>;

  // Continues the zxid counter after `last_logged` within `epoch`, or starts the epoch at 1.
  SoloReplicator(Zxid last_logged, uint32_t epoch, Persist persist);

  void set_commit_handler(CommitHandler h) override { on_commit_ = std::move(h); }
  Zxid propose(std::string payload) override;
  Zxid last_committed() const override { return last_committed_; }
  // The log is durable up to `upto`: commit every proposal at or below it, in order.
  void durable(Zxid upto);
  // The log could not make the proposals after last_committed() durable: forget them and give
  // their zxids out again. Returns how many were dropped.
  size_t abort();
  size_t in_flight() const { return unacked_.size(); }

 private:
  uint32_t epoch_;
  uint32_t counter_;
  Zxid last_committed_;
  Zxid durable_upto_;
  Persist persist_;
  CommitHandler on_commit_;
  std::deque<storage::LogEntry> unacked_;  // proposed, not yet durable; ascending zxids
  bool committing_ = false;
};

}  // namespace warden::consensus
