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
  idle_cv_.notify_all();
  thread_.join();
}

namespace {
size_t bytes_of(const SnapshotWriter::Records& r) {
  size_t n = 0;
  for (const auto& [k, v] : r) n += k.size() + v.size();
  return n;
}
}  // namespace

void SnapshotWriter::put(Zxid at, SnapshotStore::SnapshotPart part, Records records) {
  {
    std::unique_lock<std::mutex> l(mu_);
    idle_cv_.wait(l, [&] { return stopping_ || pending_bytes_ <= max_pending_bytes; });
    pending_bytes_ += bytes_of(records);
    jobs_.push_back(Job{attempt_, at, false, part, std::move(records), {}, {}});
  }
  cv_.notify_one();
}

uint64_t SnapshotWriter::start() {
  uint64_t attempt;
  {
    std::lock_guard<std::mutex> l(mu_);
    attempt = ++attempt_;
    jobs_.push_back(Job{attempt, 0, false, SnapshotStore::SnapshotPart::node, {}, {}, {}, true});
  }
  cv_.notify_one();
  return attempt;
}

void SnapshotWriter::wait_idle() {
  std::unique_lock<std::mutex> l(mu_);
  idle_cv_.wait(l, [&] { return stopping_ || (jobs_.empty() && !busy_); });
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
      if (!job.finish && !job.producer && !job.abandon) pending_bytes_ -= std::min(pending_bytes_, bytes_of(job.records));
      busy_ = job.attempt != failed_attempt_;
      if (!busy_) {
        idle_cv_.notify_all();
        continue;
      }
    }
    struct Idle {
      SnapshotWriter& w;
      ~Idle() {
        {
          std::lock_guard<std::mutex> l(w.mu_);
          w.busy_ = false;
        }
        w.idle_cv_.notify_all();
      }
    } idle{*this};
    try {
      if (job.abandon) {
        store_.abandon_snapshot();
      } else if (job.finish) {
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
