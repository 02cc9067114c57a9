// Writes snapshots on a thread of its own, so the server thread never waits for RocksDB. The
// node records come from a producer called on this thread (the server's walk, which encodes
// them there: one batch in memory at a time, never the whole tree twice); jobs are done in the
// order given, and finish() writes the marker after every job before it.
//
// Each produce() starts an attempt; put() and finish() belong to the latest one. When a job
// fails, the rest of its attempt is dropped, and only that attempt: a later snapshot at the
// same zxid (nothing committed since the failure) is a new attempt and is written.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "storage/log_store.hpp"

namespace warden::storage {

class SnapshotWriter {
 public:
  using Records = std::vector<std::pair<std::string, std::string>>;
  // Called on the writer's thread once a snapshot is complete, or failed (with the reason).
  using Done = std::function<void(Zxid at, uint64_t attempt, std::string error)>;

  SnapshotWriter(SnapshotStore& store, Done done);
  ~SnapshotWriter();  // abandons what is queued: a snapshot without its marker is never used
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  // Queues records of the latest attempt. Waits while more than max_pending_bytes of records
  // are queued, so a fast source (a leader streaming its snapshot) cannot outrun the disk.
  void put(Zxid at, SnapshotStore::SnapshotPart part, Records records);
  static constexpr size_t max_pending_bytes = 32u << 20;
  // Starts an attempt whose records all come by put(), from nothing: what an earlier attempt
  // left unfinished in the store is dropped first. Returns its number.
  uint64_t start();
  // Returns once every job queued so far is done (or the writer stops).
  void wait_idle();
  // Records made on the writer's thread: `next` is called there until it returns nothing
  // (or the writer stops), and each batch it gives is written before the next call.
  using Producer = std::function<std::optional<Records>()>;
  // Starts an attempt, and returns its number (Done names it).
  uint64_t produce(Zxid at, SnapshotStore::SnapshotPart part, Producer next);
  void finish(Zxid at, std::string summary);

 private:
  struct Job {
    uint64_t attempt;
    Zxid at;
    bool finish;
    SnapshotStore::SnapshotPart part;
    Records records;
    std::string summary;
    Producer producer;
    bool abandon = false;  // start(): drop what is being built
  };
  bool stopping() const;
  void run();

  SnapshotStore& store_;
  Done done_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  uint64_t attempt_ = 0;         // the latest produce()'s or start()'s
  size_t pending_bytes_ = 0;     // records queued by put() and not yet written
  bool busy_ = false;            // a job is being done
  std::condition_variable idle_cv_;
  // The attempt whose write failed (none yet: the largest value): its later jobs are dropped.
  uint64_t failed_attempt_ = UINT64_MAX;
  std::thread thread_;
};

}  // namespace warden::storage
