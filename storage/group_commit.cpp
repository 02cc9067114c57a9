#include "storage/group_commit.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>

#include "storage/rocksdb_log_store.hpp"

namespace warden::storage {

GroupCommitter::GroupCommitter(LogStore& store, Durable durable, int64_t warning_ms, WriteObserver observer)
    : store_(store),
      durable_(std::move(durable)),
      warning_ms_(warning_ms),
      observer_(std::move(observer)),
      thread_([this] { run(); }) {}

GroupCommitter::~GroupCommitter() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

size_t GroupCommitter::submit(LogEntry e) {
  size_t waiting;
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(e));
    queued_at_.push_back(std::chrono::steady_clock::now());
    waiting = queue_.size();
  }
  cv_.notify_one();
  return waiting;
}

void GroupCommitter::wait_idle() {
  std::unique_lock<std::mutex> l(mu_);
  idle_.wait(l, [&] { return (queue_.empty() || failed_) && !writing_; });
}

void GroupCommitter::reset() {
  std::lock_guard<std::mutex> l(mu_);
  queue_.clear();
  queued_at_.clear();
  failed_ = false;
}

void GroupCommitter::run() {
  for (;;) {
    std::vector<LogEntry> batch;
    Write w;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stopping_ || (!queue_.empty() && !failed_); });
      if (queue_.empty() || failed_) return;  // stopping, and nothing left that may be written
      writing_ = true;
      auto now = std::chrono::steady_clock::now();
      while (!queue_.empty() && batch.size() < max_batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
        w.waited_micros.push_back(
            std::chrono::duration_cast<std::chrono::microseconds>(now - queued_at_.front()).count());
        queued_at_.pop_front();
      }
    }
    Zxid last = batch.back().zxid;
    size_t count = batch.size();
    try {
      auto start = std::chrono::steady_clock::now();
      store_.append(std::move(batch));
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
      w.micros = us;
      if (observer_) observer_(w);
      if (us > warning_ms_ * 1000) {
        slow_writes_.fetch_add(1, std::memory_order_relaxed);
        spdlog::warn("writing {} txns to the log took {:.1f} ms, over fsync.warningthresholdms ({} ms): "
                     "requests wait for it", count, static_cast<double>(us) / 1000, warning_ms_);
      }
      durable_(last, std::nullopt);
    } catch (const DiskFullError& e) {
      fail(Failure{e.what(), true});
    } catch (const std::exception& e) {
      fail(Failure{e.what(), false});
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      writing_ = false;
    }
    idle_.notify_all();
  }
}

void GroupCommitter::fail(Failure f) {
  {
    // Nothing after a failed write may be written before the owner has taken it all back.
    std::lock_guard<std::mutex> l(mu_);
    failed_ = true;
    queue_.clear();
    queued_at_.clear();
  }
  durable_(store_.last_zxid(), std::move(f));
}

}  // namespace warden::storage
