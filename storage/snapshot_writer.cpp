#include "storage/snapshot_writer.hpp"

namespace warden::storage {

SnapshotWriter::SnapshotWriter(SnapshotStore& store, Done done)
    : store_(store), done_(std::move(done)), thread_([this] { run(); }) {}

SnapshotWriter::~SnapshotWriter() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    jobs_.clear();
  }
  cv_.notify_one();
  thread_.join();
}

void SnapshotWriter::put(Zxid at, SnapshotStore::SnapshotPart part, Records records) {
  {
    std::lock_guard<std::mutex> l(mu_);
    jobs_.push_back(Job{attempt_, at, false, part, std::move(records), {}, {}});
  }
  cv_.notify_one();
}

uint64_t SnapshotWriter::produce(Zxid at, SnapshotStore::SnapshotPart part, Producer next) {
  uint64_t attempt;
  {
    std::lock_guard<std::mutex> l(mu_);
    attempt = ++attempt_;
    jobs_.push_back(Job{attempt, at, false, part, {}, {}, std::move(next)});
  }
  cv_.notify_one();
  return attempt;
}

bool SnapshotWriter::stopping() const {
  std::lock_guard<std::mutex> l(mu_);
  return stopping_;
}

void SnapshotWriter::finish(Zxid at, std::string summary) {
  {
    std::lock_guard<std::mutex> l(mu_);
    jobs_.push_back(Job{attempt_, at, true, SnapshotStore::SnapshotPart::node, {}, std::move(summary), {}});
  }
  cv_.notify_one();
}

void SnapshotWriter::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      if (job.attempt == failed_attempt_) continue;
    }
    try {
      if (job.finish) {
        store_.finish_snapshot(job.at, job.summary);
        done_(job.at, job.attempt, {});
      } else if (job.producer) {
        while (!stopping())
          if (auto batch = job.producer(); batch && !batch->empty())
            store_.put_snapshot_records(job.at, job.part, std::move(*batch));
          else if (!batch)
            break;
      } else {
        store_.put_snapshot_records(job.at, job.part, job.records);
      }
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> l(mu_);
        failed_attempt_ = job.attempt;
      }
      done_(job.at, job.attempt, e.what());
    }
  }
}

}  // namespace warden::storage
