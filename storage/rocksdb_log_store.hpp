// The transaction log in RocksDB. Records are keyed "L" + big-endian zxid, so they iterate in
// zxid order; each value is a LogRecord (protobuf) carrying its zxid and the txn bytes. One
// append is one WriteBatch, written with sync unless forceSync=no: RocksDB's write-ahead log
// makes the batch atomic, so a crash leaves whole batches or nothing of the last one.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "storage/log_store.hpp"

namespace rocksdb {
class DB;
class SstFileWriter;
}

namespace warden::storage {

class DurableEnd;

// A storage failure with a message for an operator: what, where, and why.
class StorageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Too little free space to write safely: nothing was written, and a later write may succeed.
class DiskFullError : public StorageError {
 public:
  using StorageError::StorageError;
};

// The store is damaged, not torn by a crash: the message says where and what still reads.
class StorageDamage : public StorageError {
 public:
  using StorageError::StorageError;
};

class RocksDbLogStore final : public LogStore, public SnapshotStore {
 public:
  // The data directory's format, the one source of the number (--version, srvr and the
  // CHANGELOG name it as "warden-log-N"):
  // 3: the log, snapshots, replica state and commit mark in RocksDB (f1c90d0, warden-server 0.1.0).
  // 4: the same, with durable-end (the synced end and a copy of the epochs) and the synced mark,
  //    which a format-3 build would leave stale; so a format-3 build refuses it (it reads only
  //    'warden-log-3'), and a start of this build on a format-3 directory marks it 4.
  static constexpr int data_format = 4;
  static constexpr int oldest_data_format = 3;  // the oldest this build reads (and upgrades)
  static std::string data_format_name(int format) { return "warden-log-" + std::to_string(format); }

  // RocksDB's memtable size, and the free space every append leaves behind it: room for the
  // memtable flushes and the write-ahead log switch that follow. RocksDB must never meet a full
  // disk itself: Debian's build aborts on the write after a failed write-ahead-log append.
  static constexpr uint64_t write_buffer_bytes = 8ull << 20;
  static constexpr int max_write_buffers = 6;
  static constexpr uint64_t reserve_bytes = (max_write_buffers + 1) * write_buffer_bytes;

  // How often an open the disk fails with EIO is tried, and the pause between tries.
  static constexpr int open_attempts = 3;
  static constexpr std::chrono::milliseconds open_retry_pause{500};

  // Opens or creates the log in `dir`. Throws StorageError when the directory cannot be used,
  // holds something that is not a Warden log, or is locked by another running server.
  RocksDbLogStore(const std::string& dir, bool sync);
  // Opens an existing log for reading only, without its lock: tools may read the log of a
  // running server. append() then fails.
  static std::unique_ptr<RocksDbLogStore> open_read_only(const std::string& dir);
  // What `warden-server accept-loss` does, for an operator who accepts losing what a damaged
  // write-ahead log holds after its damage: opens the store in `dir` cutting the log at its first
  // damaged record (RocksDB's point-in-time recovery), makes that durable, marks the store
  // unsynced (it lost what it acknowledged) and its commit mark no higher than its end. Returns
  // the zxid the log ends at now. Throws StorageError when the store does not open even so.
  static Zxid cut_at_damage(const std::string& dir);
  ~RocksDbLogStore() override;
  // Empty, or a line for the operator saying that opening cut a torn tail off the log (read
  // only: that the log is read up to a torn tail, or up to damage before it).
  const std::string& recovery_note() const { return recovery_note_; }
  // Why the log in `dir` does not open when its write-ahead log is damaged before the last batch:
  // the RocksDB failure, and how far the log reads whole.
  static std::string damage_before_tail(const std::string& dir, const std::string& failure);
  // Read only: the write-ahead log is damaged before its last batch (read up to the damage), or
  // lost synced batches at its tail (damage/durable_end.hpp).
  bool wal_damaged() const { return wal_damaged_; }

  // Throws DiskFullError, having written nothing, when the batch would eat into the reserve;
  // StorageError when RocksDB fails the write (the log must not be written again then).
  void append(std::vector<LogEntry> entries) override;
  // Safe from any thread: the group committer's thread appends while the server's reads.
  Zxid last_zxid() const override { return last_.load(std::memory_order_acquire); }
  std::vector<LogEntry> read_after(Zxid after) const override;
  Zxid first_zxid() const override;
  // Kept under the key "B" (8 bytes, big-endian) once a purge or an install moved it.
  Zxid base() const override { return base_.load(std::memory_order_acquire); }
  // One seek back from `z`, not a scan.
  Zxid floor(Zxid z) const override;
  // RocksDB's estimate of the key range's size, memtables included.
  uint64_t approximate_bytes(Zxid after, Zxid upto) const override;
  // Also drops the snapshots taken above `z`: they hold what was cut. Synced.
  void truncate_after(Zxid z) override;
  // Under the key "R" (16 bytes, big-endian: accepted epoch, current epoch, commit mark). The
  // epochs have a second copy in durable-end (damage/durable_end.hpp), written after "R": a read
  // takes the higher of each, so that one lost write does not roll them back.
  ReplicaState replica_state() const override;
  void set_replica_state(const ReplicaState& s) override;
  std::optional<bool> synced() const override;
  void set_synced(bool synced) override;
  // ---- snapshots, kept in the same database ----
  // A snapshot taken from zxid `at` on: node records ("S" + zxid + 'n' + key), session records
  // ("S" + zxid + 's' + key) and, once all are in, a marker ("M" + zxid). Only a snapshot with its
  // marker is used; recovery replays the log after `at` over it.
  //
  // The records do not go through RocksDB's write path (memtables, flushes, compactions: a
  // snapshot's volume would tax the log's writes). put_snapshot_records() writes them into a
  // table file of their own under building/, keys ascending: node keys ascending first, then
  // session records (sorted here). finish_snapshot() has RocksDB ingest that file, which lands
  // at the bottom of the tree without a rewrite, and then writes the marker, synced. A file
  // left by a crash is removed at the next open. One snapshot is built at a time: records for
  // another zxid abandon the one being built.
  void put_snapshot_records(Zxid at, SnapshotPart part, Records recs) override;
  void finish_snapshot(Zxid at, const std::string& summary) override;  // synced: the snapshot is complete
  void abandon_snapshot() override { abandon_building(); }
  std::vector<Zxid> complete_snapshots() const override;                 // ascending
  // The marker's value is "records <node> <session>\n" and then the summary.
  std::optional<RecordCounts> snapshot_record_counts(Zxid at) const override;
  void for_each_snapshot_record(Zxid at, SnapshotPart part,
                                const std::function<void(std::string_view key, std::string_view value)>& fn)
      const override;
  SnapshotStore* snapshots() override { return this; }
  // Keeps the newest `retain` complete snapshots; drops older and unfinished ones, and the log
  // records below the oldest kept snapshot (never the last record: zxids must continue).
  // Returns how many snapshots it dropped.
  size_t purge(size_t retain) override;
  void install_snapshot(Zxid at) override;
  uint64_t snapshot_bytes(Zxid at) const override;

  // Calls `fn` for every record after `after` in zxid order. Throws StorageError naming the
  // first damaged record: a record that does not parse, sits under the wrong key, or leaves
  // a gap in the zxid counter of its epoch.
  void for_each_in(Zxid after, Zxid upto, size_t max, const std::function<void(const LogEntry&)>& fn) const override;

 private:
  std::string dir_;
  bool sync_;
  ReplicaState with_epochs_copy(ReplicaState s) const;
  bool wal_damaged_ = false;
  std::string recovery_note_;
  struct ReadOnly {};
  RocksDbLogStore(const std::string& dir, ReadOnly);
  void check_format_and_find_last(bool may_initialise);

  // Throws DiskFullError when writing `bytes` more would leave less than reserve_bytes free.
  void check_room(uint64_t bytes, const std::string& what) const;

  std::unique_ptr<rocksdb::DB> db_;
  // How far the log had synced, kept beside it (damage/durable_end.hpp); none when read only.
  std::unique_ptr<DurableEnd> durable_end_;
  // Written by append() on the group committer's thread, read by purge() and last_zxid() on
  // the server's: atomic.
  std::atomic<Zxid> last_{0};
  std::atomic<Zxid> base_{0};
  // Deletes every log record and every snapshot above `at`, and makes `at` the base, in one
  // synced batch.
  void reset_log_to(Zxid at);
  bool has_marker(Zxid at) const;  // a marker exists at `at`
  uint64_t approximate_range(const std::string& from, const std::string& to) const;
  // The snapshot being built (see put_snapshot_records), on the snapshot writer's thread only.
  std::unique_ptr<rocksdb::SstFileWriter> building_;
  Zxid building_at_ = -1;
  std::string building_path_;
  RecordCounts building_counts_;  // what the file being built holds
  bool building_over_stale_ = false;  // records of an earlier attempt at its zxid exist
  void abandon_building();
  void refuse_over_complete(Zxid at) const;  // throws when a complete snapshot is at `at`

};

}  // namespace warden::storage
