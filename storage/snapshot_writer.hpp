// Writes snapshots on a thread of its own, so the server thread never waits for RocksDB. The
// node records come from a producer called on this thread (the server's walk, which encodes
// them there: one batch in memory at a time, never the whole tree twice); jobs are done in the
// order given, and finish() writes the marker after every job before it.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "storage/rocksdb_log_store.hpp"

namespace warden::storage {

class SnapshotWriter {
 public:
  using Records = std::vector<std::pair<std::string, std::string>>;
  // Called on the writer's thread once a snapshot is complete, or failed (with the reason).
  using Done = std::function<void(Zxid at, std::string error)>;

  SnapshotWriter(RocksDbLogStore& store, Done done);
  ~SnapshotWriter();  // abandons what is queued: a snapshot without its marker is never used
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  void put(Zxid at, RocksDbLogStore::SnapshotPart part, Records records);
  // Records made on the writer's thread: `next` is called there until it returns nothing
  // (or the writer stops), and each batch it gives is written before the next call.
  using Producer = std::function<std::optional<Records>()>;
  void produce(Zxid at, RocksDbLogStore::SnapshotPart part, Producer next);
  void finish(Zxid at, std::string summary);

 private:
  struct Job {
    Zxid at;
    bool finish;
    RocksDbLogStore::SnapshotPart part;
    Records records;
    std::string summary;
    Producer producer;
  };
  bool stopping() const;
  void run();

  RocksDbLogStore& store_;
  Done done_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  Zxid failed_at_ = -1;  // the snapshot whose write failed: its later jobs are dropped
  std::thread thread_;
};

}  // namespace warden::storage
