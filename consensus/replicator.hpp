// The seam between the request pipeline and replication (design.md, "A write, from socket to
// reply", step 3). The pipeline hands over a txn payload; replication gives it the next zxid,
// makes it durable on a quorum and reports it committed, always in zxid order.
//
// SoloReplicator is the ensemble of one that a standalone server runs: the quorum is itself,
// so a proposal commits as soon as its log append returns. The standalone server and the
// ensemble go through this same interface: one code path.
#pragma once

#include <cstdint>
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
  // before this returns (the ensemble of one) or later (a quorum).
  virtual Zxid propose(std::string payload) = 0;
  virtual Zxid last_committed() const = 0;
};

class SoloReplicator final : public Replicator {
 public:
  SoloReplicator(storage::LogStore& log, uint32_t epoch);

  void set_commit_handler(CommitHandler h) override { on_commit_ = std::move(h); }
  Zxid propose(std::string payload) override;
  Zxid last_committed() const override { return last_committed_; }

 private:
  storage::LogStore& log_;
  uint32_t epoch_;
  uint32_t counter_;
  Zxid last_committed_;
  CommitHandler on_commit_;
};

}  // namespace warden::consensus
