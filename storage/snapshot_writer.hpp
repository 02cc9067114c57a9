// Writes snapshot chunks on a thread of its own, so the server thread only encodes nodes and
// never waits for RocksDB. Chunks are written in the order given; finish() writes the marker
// after every chunk before it. A bounded queue: when the writer falls behind, the walk waits
// (ready() is false) instead of holding the whole tree in memory twice.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
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

  // Jobs queued at most: each holds ~2 ms of encoding (about 1 MiB of records at 100-byte
  // znodes). Four keep the writer busy; more only raised the heap's high-water mark.
  static constexpr size_t max_queued = 4;

  SnapshotWriter(RocksDbLogStore& store, Done done);
  ~SnapshotWriter();  // abandons what is queued: a snapshot without its marker is never used
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  bool ready() const;
  void put(Zxid at, RocksDbLogStore::SnapshotPart part, Records records);
  void finish(Zxid at, std::string summary);

 private:
  struct Job {
    Zxid at;
    bool finish;
    RocksDbLogStore::SnapshotPart part;
    Records records;
    std::string summary;
  };
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
