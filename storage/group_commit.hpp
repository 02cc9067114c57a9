// Group commit: a thread that makes log appends durable in groups. Everything submitted while
// one synced write runs goes into the next one, so one fsync covers many txns and the write
// rate is not bounded by the disk's sync latency.
//
// The durable callback runs on the committer's thread; the owner moves it to its own.
//
// After a failed write nothing more is written (a later group would leave a hole in the log)
// until the owner has taken back every entry it submitted and calls reset().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "storage/log_store.hpp"

namespace warden::storage {

class GroupCommitter {
 public:
  // A write that failed: why, and whether the log may be written again (a full disk) or not.
  struct Failure {
    std::string message;
    bool retryable = false;
  };
  // `durable(upto, failure)`: everything up to `upto` is durable; with a failure, nothing after
  // it is, and nothing more will be written until reset().
  using Durable = std::function<void(Zxid upto, std::optional<Failure> failure)>;

  // The most entries one synced write takes: bounds the batch and the latency of its head.
  static constexpr size_t max_batch = 10000;

  // Each synced write (on the committer's thread): how long it took, and how long each of its
  // txns had waited in the queue before it began (us; ZooKeeper's sync processor metrics).
  struct Write {
    int64_t micros = 0;
    std::vector<int64_t> waited_micros;  // one per txn, in zxid order
  };
  using WriteObserver = std::function<void(const Write&)>;

  // `warning_ms`: a synced write slower than this is logged and counted (ZooKeeper's
  // fsync.warningthresholdms).
  GroupCommitter(LogStore& store, Durable durable, int64_t warning_ms = 1000, WriteObserver observer = {});
  ~GroupCommitter();  // writes what was submitted, then stops
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // Returns how many entries wait for a write, this one included.
  size_t submit(LogEntry e);
  // Returns once everything submitted so far is written (or failed): before the owner changes
  // the log itself (a truncation).
  void wait_idle();
  // Forgets every entry not yet written and accepts new ones again after a failure.
  void reset();
  // Synced writes slower than the warning threshold so far (any thread).
  int64_t slow_writes() const { return slow_writes_.load(std::memory_order_relaxed); }

 private:
  void run();
  void fail(Failure f);

  LogStore& store_;
  Durable durable_;
  int64_t warning_ms_;
  WriteObserver observer_;
  std::atomic<int64_t> slow_writes_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<LogEntry> queue_;
  std::deque<std::chrono::steady_clock::time_point> queued_at_;  // one per queue_ entry
  bool stopping_ = false;
  bool failed_ = false;
  bool writing_ = false;
  std::condition_variable idle_;
  std::thread thread_;
};

}  // namespace warden::storage
