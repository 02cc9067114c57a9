// Group commit: a thread that makes log appends durable in groups. Everything submitted while
// one synced write runs goes into the next one, so one fsync covers many txns and the write
// rate is not bounded by the disk's sync latency.
//
// The durable callback runs on the committer's thread; the owner moves it to its own.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "storage/log_store.hpp"

namespace warden::storage {

class GroupCommitter {
 public:
  // `durable(upto, error)`: everything up to `upto` is durable, or, with an error, the write
  // failed and nothing after the last durable zxid is.
  using Durable = std::function<void(Zxid upto, std::optional<std::string> error)>;

  // The most entries one synced write takes: bounds the batch and the latency of its head.
  static constexpr size_t max_batch = 10000;

  GroupCommitter(LogStore& store, Durable durable);
  ~GroupCommitter();  // writes what was submitted, then stops
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  void submit(LogEntry e);

 private:
  void run();

  LogStore& store_;
  Durable durable_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<LogEntry> queue_;
  bool stopping_ = false;
  bool failed_ = false;
  std::thread thread_;
};

}  // namespace warden::storage
