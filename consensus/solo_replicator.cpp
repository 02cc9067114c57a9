#include <stdexcept>

#include "consensus/replicator.hpp"

namespace warden::consensus {

SoloReplicator::SoloReplicator(storage::LogStore& log, uint32_t epoch)
    : log_(log), epoch_(epoch), last_committed_(log.last_zxid()) {
  // A new epoch restarts the counter; within the log's own epoch the counter continues.
  counter_ = zxid_epoch(last_committed_) == epoch_ ? zxid_counter(last_committed_) : 0;
}

Zxid SoloReplicator::propose(std::string payload) {
  if (counter_ == UINT32_MAX) throw std::runtime_error("zxid counter exhausted in this epoch");
  Zxid z = make_zxid(epoch_, ++counter_);
  std::vector<storage::LogEntry> batch;
  batch.push_back({z, payload});
  log_.append(std::move(batch));
  last_committed_ = z;
  if (on_commit_) on_commit_(z, payload);
  return z;
}

}  // namespace warden::consensus
