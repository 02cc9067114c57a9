// The transaction log, as replication sees it: opaque payloads keyed by zxid, appended in zxid
// order. Storage knows nothing of what a payload means.
//
// MemoryLogStore is the embedded-mode and test implementation: it keeps a bounded tail of the
// log in memory, so a long-running server does not grow without end; the durable RocksDB store
// replaces it for production.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warden::storage {

using Zxid = int64_t;

struct LogEntry {
  Zxid zxid = 0;
  std::string payload;
};

// What replication keeps beside the log, synced when written: the epochs a member has accepted
// and holds (ZooKeeper's acceptedEpoch and currentEpoch) and how far it knows txns committed.
// Storage does not interpret them.
struct ReplicaState {
  uint32_t accepted_epoch = 0;
  uint32_t current_epoch = 0;
  Zxid commit_mark = 0;
  bool operator==(const ReplicaState&) const = default;
};

// Snapshots kept beside the log: a store that has them (the durable one) offers them through
// LogStore::snapshots(); the in-memory one has none.
class SnapshotStore {
 public:
  using Records = std::vector<std::pair<std::string, std::string>>;
  enum class SnapshotPart : char { node = 'n', session = 's' };
  virtual ~SnapshotStore() = default;
  // A snapshot taken from zxid `at` on, written part by part and completed by its marker.
  virtual void put_snapshot_records(Zxid at, SnapshotPart part, Records recs) = 0;
  virtual void finish_snapshot(Zxid at, const std::string& summary) = 0;  // synced
  // Drops the records of the snapshot being built, if any (a new attempt starts from nothing).
  virtual void abandon_snapshot() = 0;
  virtual std::vector<Zxid> complete_snapshots() const = 0;                // ascending
  // How many records of each part a complete snapshot was finished with, as its marker keeps
  // them, so that a load can tell a whole snapshot from one that lost records; none for a
  // snapshot whose marker predates the counts.
  struct RecordCounts {
    uint64_t node = 0;
    uint64_t session = 0;
    bool operator==(const RecordCounts&) const = default;
  };
  virtual std::optional<RecordCounts> snapshot_record_counts(Zxid at) const = 0;
  virtual void for_each_snapshot_record(
      Zxid at, SnapshotPart part, const std::function<void(std::string_view key, std::string_view value)>& fn) const = 0;
  // Keeps the newest `retain` complete snapshots, drops the rest and the log below the oldest
  // kept one; returns how many snapshots it dropped.
  virtual size_t purge(size_t retain) = 0;
  // The complete snapshot `at` (received from a leader) replaces the log: every log record and
  // every snapshot above `at` goes, and the log continues after `at` (LogStore::base() and
  // last_zxid() become `at`). Synced.
  virtual void install_snapshot(Zxid at) = 0;
  // About how many bytes the snapshot `at` takes on disk (0 when unknown).
  virtual uint64_t snapshot_bytes(Zxid at) const = 0;
};

class LogStore {
 public:
  virtual ~LogStore() = default;
  // Appends entries whose zxids are above last_zxid(), in ascending order; durable on return.
  virtual void append(std::vector<LogEntry> entries) = 0;
  virtual Zxid last_zxid() const = 0;
  // Entries with zxid > `after` that the store still holds, in zxid order.
  virtual std::vector<LogEntry> read_after(Zxid after) const = 0;
  // The same, one at a time, without holding them all.
  void for_each_after(Zxid after, const std::function<void(const LogEntry&)>& fn) const {
    for_each_in(after, INT64_MAX, SIZE_MAX, fn);
  }
  // Entries in (after, upto], at most `max`, in order: what a sync sends reads only that.
  virtual void for_each_in(Zxid after, Zxid upto, size_t max, const std::function<void(const LogEntry&)>& fn) const {
    for (const auto& e : read_after(after)) {
      if (e.zxid > upto || max-- == 0) return;
      fn(e);
    }
  }
  // The oldest entry the store still holds (0: none).
  virtual Zxid first_zxid() const = 0;
  // The log holds every txn after base() up to last_zxid(); what is at or below it is only in
  // snapshots (a purge, or a snapshot installed from a leader, moved it). 0 for a whole log.
  virtual Zxid base() const = 0;
  // The largest zxid at or below `z` the store holds (base() counts as held), or 0.
  virtual Zxid floor(Zxid z) const = 0;
  // About how many bytes the entries in (after, upto] take (what a DIFF would send).
  virtual uint64_t approximate_bytes(Zxid after, Zxid upto) const = 0;
  // Removes every entry above `z` (a TRUNC), durably; `z` is 0 or an entry the store holds.
  virtual void truncate_after(Zxid z) = 0;
  virtual ReplicaState replica_state() const = 0;
  virtual void set_replica_state(const ReplicaState& s) = 0;  // durable on return
  // Whether this store holds everything its member ever acknowledged (docs/operations.md,
  // "Storage faults"): an ensemble member's store is synced once a leader synced it whole, or
  // once its member was established as leader; one created empty (new, wiped, or replacing a
  // damaged one set aside) is not until then, and a member emptied by its leader is not again.
  // Nothing stored (a store of a build before this mark): nullopt.
  virtual std::optional<bool> synced() const = 0;
  virtual void set_synced(bool synced) = 0;  // durable on return
  // Its snapshots, if it keeps any.
  virtual SnapshotStore* snapshots() { return nullptr; }
};

class MemoryLogStore final : public LogStore {
 public:
  // How many of the newest entries stay in memory: enough for a follower that is a little
  // behind to catch up by DIFF once the ensemble exists, small enough to bound memory.
  static constexpr size_t default_retained = 10000;

  explicit MemoryLogStore(size_t retained = default_retained) : retained_(retained) {}

  void append(std::vector<LogEntry> entries) override;
  Zxid last_zxid() const override { return last_; }
  std::vector<LogEntry> read_after(Zxid after) const override;
  Zxid first_zxid() const override { return entries_.empty() ? 0 : entries_.front().zxid; }
  Zxid base() const override { return base_; }
  Zxid floor(Zxid z) const override;
  uint64_t approximate_bytes(Zxid after, Zxid upto) const override;
  void truncate_after(Zxid z) override;
  ReplicaState replica_state() const override { return state_; }
  void set_replica_state(const ReplicaState& s) override { state_ = s; }
  std::optional<bool> synced() const override { return synced_; }
  void set_synced(bool synced) override { synced_ = synced; }

 private:
  ReplicaState state_;
  std::optional<bool> synced_;
  size_t retained_;
  std::deque<LogEntry> entries_;
  Zxid last_ = 0;
  Zxid base_ = 0;  // the newest entry dropped from the front
};

}  // namespace warden::storage
