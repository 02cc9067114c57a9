#include <algorithm>
#include <stdexcept>

#include "consensus/replicator.hpp"

namespace warden::consensus {

SoloReplicator::SoloReplicator(Zxid last_logged, uint32_t epoch, Persist persist)
    : epoch_(epoch), last_committed_(last_logged), durable_upto_(last_logged), persist_(std::move(persist)) {
  if (zxid_epoch(last_logged) > epoch_) throw std::logic_error("the log is from a later epoch");
  counter_ = zxid_epoch(last_logged) == epoch_ ? zxid_counter(last_logged) : 0;
}

Zxid SoloReplicator::propose(std::string payload) {
  if (counter_ == UINT32_MAX) throw std::runtime_error("zxid counter exhausted in this epoch");
  Zxid z = make_zxid(epoch_, ++counter_);
  unacked_.push_back({z, payload});
  persist_(storage::LogEntry{z, std::move(payload)});
  return z;
}

size_t SoloReplicator::abort() {
  size_t n = unacked_.size();
  unacked_.clear();
  counter_ = zxid_epoch(last_committed_) == epoch_ ? zxid_counter(last_committed_) : 0;
  durable_upto_ = last_committed_;
  return n;
}

void SoloReplicator::durable(Zxid upto) {
  durable_upto_ = std::max(durable_upto_, upto);
  // A commit handler may propose again, and a synchronous log then reports durability from
  // inside this loop: the outermost call commits everything, in zxid order, never nested.
  if (committing_) return;
  committing_ = true;
  while (!unacked_.empty() && unacked_.front().zxid <= durable_upto_) {
    storage::LogEntry e = std::move(unacked_.front());
    unacked_.pop_front();
    last_committed_ = e.zxid;
    if (on_commit_) on_commit_(e.zxid, e.payload);
  }
  committing_ = false;
}

}  // namespace warden::consensus
