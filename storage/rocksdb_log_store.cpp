#include "storage/rocksdb_log_store.hpp"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <filesystem>
#include <thread>

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/convenience.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <spdlog/spdlog.h>

#include "log_record.pb.h"
#include "storage/damage/durable_end.hpp"

namespace warden::storage {

namespace {
constexpr char log_prefix = 'L';
// Written once when the log is created: a directory without it is not a Warden log. Its key
// sorts before every log record ("L"), so no table file holding it and log records spans the
// snapshots' key range ("S"), which would stop RocksDB from ingesting snapshots at the bottom.
constexpr const char* format_key = "!warden.format";
constexpr const char* legacy_format_key = "warden.format";
// The log's base (LogStore::base()): sorts before the log records, as the format key does.
constexpr const char* base_key = "B";

std::string key_of(Zxid z) {
  std::string k(9, '\0');
  k[0] = log_prefix;
  auto u = static_cast<uint64_t>(z);
  for (int i = 0; i < 8; ++i) k[static_cast<size_t>(1 + i)] = static_cast<char>(u >> (56 - 8 * i));
  return k;
}

Zxid zxid_of(const rocksdb::Slice& k) {
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<unsigned char>(k[static_cast<size_t>(1 + i)]);
  return static_cast<Zxid>(u);
}

std::string building_dir(const std::string& dir) { return dir + "/building"; }
std::string marker_key(Zxid at);
std::string snapshot_range_start(Zxid at);

// Log and snapshots are read in order, never by random point lookups: large blocks cost
// nothing there, and RocksDB keeps each open table file's index in memory, one entry per
// block. With its default 4 KiB blocks, the index of a 1M-znode database took megabytes of
// the server's memory for no use; 64 KiB blocks make it a sixteenth of that.
void set_table_options(rocksdb::Options& opts) {
  rocksdb::BlockBasedTableOptions t;
  t.block_size = 64 << 10;
  opts.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
}

std::string hex_zxid(Zxid z) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(z));
  return b;
}

// An I/O error reading the store (EIO): the disk failed a read, unlike a permission or a missing
// file, whose errors RocksDB words otherwise.
bool disk_failed_read(const rocksdb::Status& st) {
  return st.IsIOError() && st.ToString().find(std::strerror(EIO)) != std::string::npos;
}

// A log that opened ending at `last`, below the `synced` end durable-end recorded.
std::string lost_tail(const std::string& dir, Zxid last, Zxid synced, const std::string& strict_failure) {
  return "the log in " + dir + " ends at zxid " + hex_zxid(last) + ", but it had synced up to zxid " + hex_zxid(synced) +
         " (" + DurableEnd::file_name + "): synced, acknowledged txns at its tail are lost, which a crash never does " +
         "(a damaged or truncated write-ahead log" +
         (strict_failure.empty() ? std::string() : ", which reads: " + strict_failure) + ")";
}
}  // namespace

RocksDbLogStore::RocksDbLogStore(const std::string& dir, bool sync) : dir_(dir), sync_(sync) {
  rocksdb::Options opts;
  opts.create_if_missing = true;
  set_table_options(opts);
  opts.write_buffer_size = write_buffer_bytes;
  // A snapshot writes the whole tree into this database: with RocksDB's default of two
  // memtables, its volume makes RocksDB stop every write, the log's included, while flushes
  // catch up. More memtables and later level-0 triggers let the flushes absorb it.
  opts.max_write_buffer_number = max_write_buffers;
  opts.level0_slowdown_writes_trigger = 40;
  opts.level0_stop_writes_trigger = 64;
  opts.max_background_jobs = 4;
  // Compaction was a quarter of an ensemble member's CPU under a write load (2026-11-25, set on a
  // 3-member ensemble: 230 of 910 ticks), and the tail of write latency went with it. Every flush
  // that holds a snapshot's marker ("M" keys, after all the log's "L" keys) spans the log's tail
  // and the markers, so it overlaps every other such flush and the level-1 file holding the
  // markers, and each compaction rewrites them. Two things make that rewrite small: no
  // compression (the log is written once, read at a start or a sync, and ZooKeeper's is not
  // compressed either; snapshots are not), and level-1 files the size of one flush, so the file
  // a flush overlaps is small. Measured: compaction 42-67 ticks, set throughput +20%, p99
  // 18-22 ms against 27-40 ms.
  opts.compression = rocksdb::kNoCompression;
  opts.target_file_size_base = write_buffer_bytes;
  // A torn tail of the write-ahead log (a crash mid-write) is cut back to the last whole batch;
  // damage before the tail fails the open, and so the start.
  opts.paranoid_checks = true;
  opts.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  rocksdb::DB* raw = nullptr;
  // RocksDB cuts a torn write-ahead-log tail silently. To say so, the first open demands a
  // whole log; when that fails on corruption, the second open cuts a last record that was cut
  // short (and nothing else), and the note records what was cut and where the log ends now.
  // Damage before that (a bad checksum mid-log: a damaged block, not a crash) fails the second
  // open too: cutting there would drop acknowledged txns after it, which a member's peers may
  // no longer hold (issue 46, case 1). A failed open changes nothing on disk.
  opts.wal_recovery_mode = rocksdb::WALRecoveryMode::kAbsoluteConsistency;
  // A read the disk failed (EIO) may pass: the open is tried again before the store counts as
  // damaged (an ensemble member then sets it aside and repairs itself from its peers).
  int attempts = 0;
  auto open = [&] {
    for (;;) {
      auto st = rocksdb::DB::Open(opts, dir, &raw);
      if (!disk_failed_read(st) || ++attempts == open_attempts) return st;
      spdlog::warn("the disk failed a read while opening the log in {} ({}); trying again", dir, st.ToString());
      std::this_thread::sleep_for(open_retry_pause);
    }
  };
  auto st = open();
  std::string strict_failure;
  if (st.IsCorruption()) {
    strict_failure = st.ToString();
    opts.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
    st = open();
    if (st.IsCorruption()) throw StorageDamage(damage_before_tail(dir, strict_failure));
  }
  if (disk_failed_read(st))
    throw StorageDamage("the disk failed a read of the log in " + dir + " " + std::to_string(attempts) +
                        " times (" + st.ToString() + ")");
  if (!st.ok()) {
    std::string why = st.ToString();
    if (why.find("lock") != std::string::npos || why.find("Lock") != std::string::npos)
      throw StorageError("the log in " + dir + " is in use by another running server (" + why + ")");
    throw StorageError("cannot open the log in " + dir + ": " + why);
  }
  db_.reset(raw);
  check_format_and_find_last(true);
  std::error_code ec;  // snapshot files a crash left unfinished: never ingested, never needed
  std::filesystem::remove_all(building_dir(dir), ec);
  // A tail that ends before what the log had synced was not torn by a crash: synced batches,
  // acknowledged, are gone (a damaged or truncated write-ahead log). Not cut, not used.
  durable_end_ = std::make_unique<DurableEnd>(dir);
  if (auto end = durable_end_->recorded(); end && *end > last_)
    throw StorageDamage(lost_tail(dir, last_, *end, strict_failure) + ", and the log is not used as it is");
  if (!strict_failure.empty())
    recovery_note_ = "the write-ahead log of " + dir + " ended in a torn batch (" + strict_failure +
                     "); it was cut at the last whole batch, and the log now ends at zxid " + hex_zxid(last_);
}

std::string RocksDbLogStore::damage_before_tail(const std::string& dir, const std::string& failure) {
  // What can be read before the damage: a read-only open stops its replay there, writing nothing.
  std::string readable;
  try {
    readable = "it reads whole up to zxid " + hex_zxid(open_read_only(dir)->last_zxid()) +
               ", and what it holds after the damage cannot be read";
  } catch (const StorageError& e) {
    readable = std::string("not even the part before the damage reads (") + e.what() + ")";
  }
  return "the write-ahead log of " + dir + " is damaged before its last batch (" + failure + "): " + readable +
         ". That is a damaged block, not a crash mid-write, and the log is not cut there (acknowledged txns "
         "after it would be lost)";
}

RocksDbLogStore::RocksDbLogStore(const std::string& dir, ReadOnly) : dir_(dir), sync_(false) {
  rocksdb::Options opts;
  opts.paranoid_checks = true;
  opts.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  rocksdb::DB* raw = nullptr;
  // A reader shows what reads: up to a torn tail, or up to damage before it (which a start
  // refuses), and its note says which (the tools print it).
  opts.wal_recovery_mode = rocksdb::WALRecoveryMode::kAbsoluteConsistency;
  auto st = rocksdb::DB::OpenForReadOnly(opts, dir, &raw);
  std::string strict_failure, kind;
  if (st.IsCorruption()) {
    strict_failure = st.ToString();
    kind = "ended in a torn batch";
    opts.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
    st = rocksdb::DB::OpenForReadOnly(opts, dir, &raw);
    if (st.IsCorruption()) {
      kind = "is damaged before its last batch (a start refuses it)";
      wal_damaged_ = true;
      opts.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
      st = rocksdb::DB::OpenForReadOnly(opts, dir, &raw);
    }
  }
  if (!st.ok()) throw StorageError("cannot open the log in " + dir + " for reading: " + st.ToString());
  db_.reset(raw);
  check_format_and_find_last(false);
  if (auto end = DurableEnd::read(dir); !wal_damaged_ && end && *end > last_) {  // damage before says more
    wal_damaged_ = true;
    recovery_note_ = lost_tail(dir, last_, *end, strict_failure) + " (a start refuses it); what follows reads it up to "
                     "zxid " + hex_zxid(last_);
    return;
  }
  if (!strict_failure.empty())
    recovery_note_ = "the write-ahead log of " + dir + " " + kind + " (" + strict_failure +
                     "); what follows reads it up to zxid " + hex_zxid(last_);
}

Zxid RocksDbLogStore::cut_at_damage(const std::string& dir) {
  {
    rocksdb::Options opts;
    set_table_options(opts);
    opts.paranoid_checks = true;
    opts.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
    opts.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
    rocksdb::DB* raw = nullptr;
    auto st = rocksdb::DB::Open(opts, dir, &raw);
    if (!st.ok()) throw StorageError("cannot open the log in " + dir + " even cutting it at the damage: " + st.ToString());
    std::unique_ptr<rocksdb::DB> db(raw);
    rocksdb::FlushOptions flush;
    flush.wait = true;
    st = db->Flush(flush);
    if (st.ok()) st = db->SyncWAL();
    if (!st.ok()) throw StorageError("cannot make the cut log in " + dir + " durable: " + st.ToString());
  }
  DurableEnd::forget(dir);  // the operator accepted the shorter log: its end is written afresh
  RocksDbLogStore store(dir, true);  // the strict open a start makes: it must find the log whole now
  store.durable_end_->advance(store.last_zxid());
  ReplicaState s = store.replica_state();
  if (s.commit_mark > store.last_zxid()) {
    s.commit_mark = store.last_zxid();
    store.set_replica_state(s);
  }
  store.set_synced(false);
  return store.last_zxid();
}

std::unique_ptr<RocksDbLogStore> RocksDbLogStore::open_read_only(const std::string& dir) {
  return std::unique_ptr<RocksDbLogStore>(new RocksDbLogStore(dir, ReadOnly{}));
}

void RocksDbLogStore::check_format_and_find_last(bool may_initialise) {
  const std::string& dir = dir_;
  std::string format;
  auto st = db_->Get(rocksdb::ReadOptions(), format_key, &format);
  if (st.IsNotFound()) {  // logs before warden-log-3 kept it under a key that sorts after "S"
    std::string legacy;
    if (db_->Get(rocksdb::ReadOptions(), legacy_format_key, &legacy).ok()) {
      format = legacy;
      st = rocksdb::Status::OK();
    }
  }
  const std::string format_value = data_format_name(data_format);
  bool readable = false;
  for (int f = oldest_data_format; f <= data_format; ++f) readable = readable || format == data_format_name(f);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  it->SeekToFirst();
  bool empty = !it->Valid();
  if (st.IsNotFound() && empty && may_initialise) {
    rocksdb::WriteOptions w;
    w.sync = true;
    st = db_->Put(w, format_key, format_value);
    if (!st.ok()) throw StorageError("cannot initialise the log in " + dir + ": " + st.ToString());
  } else if (st.ok() && !readable && format.starts_with("warden-log-")) {
    throw StorageError(dir + " holds a Warden log of format '" + format + "', which this server cannot read (it reads '" +
                       data_format_name(oldest_data_format) + "' to '" + format_value + "')");
  } else if (!st.ok() || !readable) {
    throw StorageError(dir + " holds a database that is not a Warden log (" +
                       (st.ok() ? "format '" + format + "'" : st.ToString()) + ")");
  } else if (format != format_value && may_initialise) {
    // A directory of an older build: marked with this build's format from now on, which the
    // older build refuses (rolling back a member: docs/operations.md, "Upgrades").
    rocksdb::WriteOptions w;
    w.sync = true;
    st = db_->Put(w, format_key, format_value);
    if (!st.ok()) throw StorageError("cannot mark the log in " + dir + " with format " + format_value + ": " + st.ToString());
    spdlog::info("the data directory {} was of format '{}' (an older build's): it is of format '{}' now, which builds "
                 "before this one do not start on (docs/operations.md, \"Upgrades\")",
                 dir, format, format_value);
  }
  it->SeekForPrev(key_of(INT64_MAX));
  if (it->Valid() && it->key().size() == 9 && it->key()[0] == log_prefix) last_ = zxid_of(it->key());
  if (!it->status().ok()) throw StorageError("cannot read the log in " + dir + ": " + it->status().ToString());
  std::string b;
  auto bst = db_->Get(rocksdb::ReadOptions(), base_key, &b);
  if (bst.ok() && b.size() == 8) {
    base_ = zxid_of(rocksdb::Slice("B" + b));
  } else if (bst.ok() || !bst.IsNotFound()) {
    throw StorageError("the log base in " + dir + " is damaged" + (bst.ok() ? "" : ": " + bst.ToString()));
  } else if (Zxid first = first_zxid(); first != 0 && has_marker(first)) {
    base_ = first;  // a purge before the base was kept: it left the record at the oldest snapshot
  }
  last_ = std::max(last_.load(), base_.load());
  // A snapshot newer than every log record was installed from a leader, and the log had not
  // been reset to it yet when the server stopped: finish that now.
  auto snaps = complete_snapshots();
  if (may_initialise && !snaps.empty() && snaps.back() > last_) reset_log_to(snaps.back());
}

bool RocksDbLogStore::has_marker(Zxid at) const {
  std::string v;
  return db_->Get(rocksdb::ReadOptions(), marker_key(at), &v).ok();
}

Zxid RocksDbLogStore::floor(Zxid z) const {
  Zxid b = base();
  if (z < b || z <= 0) return 0;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  it->SeekForPrev(key_of(z));
  Zxid found = 0;
  if (it->Valid() && it->key().size() == 9 && it->key()[0] == log_prefix) found = zxid_of(it->key());
  if (!it->status().ok()) throw StorageError("cannot read the log in " + dir_ + ": " + it->status().ToString());
  return std::max(found, b);
}

uint64_t RocksDbLogStore::approximate_bytes(Zxid after, Zxid upto) const {
  if (upto <= after) return 0;
  std::string from = key_of(after + 1), to = key_of(upto == INT64_MAX ? upto : upto + 1);
  return approximate_range(from, to);
}

uint64_t RocksDbLogStore::snapshot_bytes(Zxid at) const {
  return approximate_range(snapshot_range_start(at), snapshot_range_start(at + 1));
}

uint64_t RocksDbLogStore::approximate_range(const std::string& from, const std::string& to) const {
  rocksdb::Range r(from, to);
  rocksdb::SizeApproximationOptions o;
  o.include_memtables = true;
  o.include_files = true;
  uint64_t size = 0;
  auto st = db_->GetApproximateSizes(o, db_->DefaultColumnFamily(), &r, 1, &size);
  return st.ok() ? size : 0;
}

void RocksDbLogStore::install_snapshot(Zxid at) {
  if (!has_marker(at))
    throw StorageError("cannot install the snapshot at " + hex_zxid(at) + " in " + dir_ + ": it is not complete");
  reset_log_to(at);
}

void RocksDbLogStore::reset_log_to(Zxid at) {
  if (durable_end_) durable_end_->lower_to(at);
  rocksdb::WriteBatch batch;
  batch.DeleteRange(key_of(0), key_of(INT64_MAX));
  batch.Delete(key_of(INT64_MAX));
  batch.DeleteRange(snapshot_range_start(at + 1), snapshot_range_start(INT64_MAX));
  batch.DeleteRange(marker_key(at + 1), marker_key(INT64_MAX));
  batch.Put(base_key, key_of(at).substr(1));
  rocksdb::WriteOptions w;
  w.sync = true;
  auto st = db_->Write(w, &batch);
  if (!st.ok()) throw StorageError("cannot reset the log in " + dir_ + " to a snapshot: " + st.ToString());
  base_.store(at, std::memory_order_release);
  last_.store(at, std::memory_order_release);
  if (durable_end_) durable_end_->advance(at);
}

RocksDbLogStore::~RocksDbLogStore() {
  if (building_) abandon_building();
}

void RocksDbLogStore::append(std::vector<LogEntry> entries) {
  if (entries.empty()) return;
  rocksdb::WriteBatch batch;
  Zxid last = last_;
  pb::LogRecord rec;
  std::string value;
  for (const auto& e : entries) {
    if (e.zxid <= last) throw std::logic_error("log append out of zxid order");
    last = e.zxid;
    rec.set_zxid(e.zxid);
    rec.set_txn(e.payload);
    value.clear();
    rec.SerializeToString(&value);
    batch.Put(key_of(e.zxid), value);
  }
  // The write-ahead log holds the batch once more, with headers: twice its size is ample.
  check_room(2 * batch.GetDataSize(), std::to_string(entries.size()) + " txns");
  rocksdb::WriteOptions w;
  w.sync = sync_;
  auto st = db_->Write(w, &batch);
  if (!st.ok()) throw StorageError("cannot append to the log in " + dir_ + ": " + st.ToString());
  last_.store(last, std::memory_order_release);
  if (sync_ && durable_end_) durable_end_->advance(last);
}

void RocksDbLogStore::check_room(uint64_t bytes, const std::string& what) const {
  struct statvfs fs {};
  if (statvfs(dir_.c_str(), &fs) != 0) return;
  uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  uint64_t need = bytes + reserve_bytes;
  if (free_bytes < need)
    throw DiskFullError("disk full: " + std::to_string(free_bytes) + " bytes free in " + dir_ + ", " +
                        std::to_string(need) + " needed to write " + what + " and keep the reserve");
}

void RocksDbLogStore::for_each_in(Zxid after, Zxid upto, size_t max,
                                  const std::function<void(const LogEntry&)>& fn) const {
  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  Zxid prev = after;
  pb::LogRecord rec;
  for (it->Seek(key_of(after + 1)); it->Valid(); it->Next()) {
    auto k = it->key();
    if (k.size() != 9 || k[0] != log_prefix) break;
    Zxid z = zxid_of(k);
    if (z > upto || max-- == 0) break;
    if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) || rec.zxid() != z)
      throw StorageError("the log in " + dir_ + " is damaged: record " + hex_zxid(z) + " does not parse");
    // Within an epoch the counter has no holes: a hole is a lost record.
    bool same_epoch = (static_cast<uint64_t>(z) >> 32) == (static_cast<uint64_t>(prev) >> 32);
    if (prev != 0 && same_epoch && z != prev + 1)
      throw StorageError("the log in " + dir_ + " is damaged: records " + hex_zxid(prev + 1) + " to " +
                         hex_zxid(z - 1) + " are missing");
    fn(LogEntry{z, std::move(*rec.mutable_txn())});
    prev = z;
  }
  if (!it->status().ok())
    throw StorageError("the log in " + dir_ + " is damaged after record " + hex_zxid(prev) + ": " +
                       it->status().ToString());
}

namespace {
std::string marker_key(Zxid at) {
  std::string k = key_of(at);
  k[0] = 'M';
  return k;
}

// "S" + zxid + part + suffix: one snapshot is one contiguous key range, apart from every other
// snapshot's, so RocksDB ingests its file at the bottom of the tree and never compacts it.
std::string snapshot_key(Zxid at, char part, std::string_view suffix) {
  std::string k = key_of(at);
  k[0] = 'S';
  k.push_back(part);
  k.append(suffix);
  return k;
}
std::string snapshot_range_start(Zxid at) { return snapshot_key(at, '\0', "").substr(0, 9); }
}  // namespace

// A complete snapshot is never written again at its zxid: clearing it to make room would leave
// the log's base without a complete snapshot until the new one is in (issue 45, point 4).
void RocksDbLogStore::refuse_over_complete(Zxid at) const {
  if (has_marker(at))
    throw StorageError("a complete snapshot at " + hex_zxid(at) + " is in " + dir_ + " already: it is not written again");
}

void RocksDbLogStore::abandon_building() {
  building_.reset();
  if (!building_path_.empty()) std::filesystem::remove(building_path_);
  building_path_.clear();
  building_at_ = -1;
  building_counts_ = {};
  building_over_stale_ = false;
}

void RocksDbLogStore::put_snapshot_records(Zxid at, SnapshotPart part, Records recs) {
  if (building_ && building_at_ != at) abandon_building();
  if (!building_) {
    refuse_over_complete(at);
    std::error_code ec;
    std::filesystem::create_directories(building_dir(dir_), ec);
    if (ec) throw StorageError("cannot create " + building_dir(dir_) + ": " + ec.message());
    rocksdb::Options opts;
    // Written once and read once at a start: compression would cost more than it saves.
    opts.compression = rocksdb::kNoCompression;
    set_table_options(opts);
    building_ = std::make_unique<rocksdb::SstFileWriter>(rocksdb::EnvOptions(), opts);
    building_path_ = building_dir(dir_) + "/snapshot-" + hex_zxid(at) + ".sst";
    building_at_ = at;
    // Records already under this zxid are an earlier attempt's, ingested when its marker never
    // came (a crash between the two): finish_snapshot() clears them first, or chunks of two
    // walks could mix, and two walks' chunk boundaries differ.
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    it->Seek(snapshot_range_start(at));
    building_over_stale_ = it->Valid() && it->key().compare(snapshot_range_start(at + 1)) < 0;
    auto st = building_->Open(building_path_);
    if (!st.ok()) {
      abandon_building();
      throw StorageError("cannot write a snapshot in " + dir_ + ": " + st.ToString());
    }
  }
  if (part == SnapshotPart::session) std::sort(recs.begin(), recs.end());
  // A snapshot's table file shares the disk with the log: it must not eat the log's reserve.
  uint64_t bytes = 0;
  for (const auto& [k, v] : recs) bytes += k.size() + v.size() + 32;
  try {
    check_room(bytes, "a snapshot's " + std::to_string(recs.size()) + " records");
  } catch (const DiskFullError&) {
    abandon_building();
    throw;
  }
  for (const auto& [k, v] : recs) {
    auto st = building_->Put(snapshot_key(at, static_cast<char>(part), k), v);
    if (!st.ok()) {
      abandon_building();
      throw StorageError("cannot write a snapshot in " + dir_ + ": " + st.ToString());
    }
  }
  (part == SnapshotPart::node ? building_counts_.node : building_counts_.session) += recs.size();
}

void RocksDbLogStore::finish_snapshot(Zxid at, const std::string& summary) {
  if (building_ && building_at_ != at) abandon_building();
  if (!building_) refuse_over_complete(at);
  rocksdb::Status st;
  if (building_) {  // none: a snapshot without records, only its marker
    rocksdb::ExternalSstFileInfo info;
    st = building_->Finish(&info);
  }
  if (building_ && st.ok() && building_over_stale_) {
    rocksdb::WriteBatch clear;
    clear.DeleteRange(snapshot_range_start(at), snapshot_range_start(at + 1));
    clear.Delete(marker_key(at));
    rocksdb::WriteOptions w;
    w.sync = true;
    st = db_->Write(w, &clear);
  }
  if (building_ && st.ok()) {
    rocksdb::IngestExternalFileOptions ingest;
    ingest.move_files = true;
    st = db_->IngestExternalFile({building_path_}, ingest);
  }
  if (!st.ok()) {
    abandon_building();
    throw StorageError("cannot finish a snapshot in " + dir_ + ": " + st.ToString());
  }
  RecordCounts counts = building_ ? building_counts_ : RecordCounts{};
  building_.reset();
  building_path_.clear();
  building_at_ = -1;
  building_counts_ = {};
  building_over_stale_ = false;
  rocksdb::WriteOptions w;
  w.sync = true;
  st = db_->Put(w, marker_key(at), "records " + std::to_string(counts.node) + " " + std::to_string(counts.session) + "\n" + summary);
  if (!st.ok()) throw StorageError("cannot finish a snapshot in " + dir_ + ": " + st.ToString());
}

std::vector<Zxid> RocksDbLogStore::complete_snapshots() const {
  std::vector<Zxid> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(std::string(1, 'M')); it->Valid() && it->key().size() == 9 && it->key()[0] == 'M'; it->Next())
    out.push_back(zxid_of(it->key()));
  return out;
}

std::optional<SnapshotStore::RecordCounts> RocksDbLogStore::snapshot_record_counts(Zxid at) const {
  std::string v;
  auto st = db_->Get(rocksdb::ReadOptions(), marker_key(at), &v);
  if (!st.ok()) return std::nullopt;
  unsigned long long node = 0, session = 0;
  int used = 0;
  // A marker written before the counts holds the summary alone.
  if (std::sscanf(v.c_str(), "records %llu %llu\n%n", &node, &session, &used) != 2 || used == 0) return std::nullopt;
  return RecordCounts{node, session};
}

void RocksDbLogStore::for_each_snapshot_record(
    Zxid at, SnapshotPart part, const std::function<void(std::string_view, std::string_view)>& fn) const {
  std::string prefix = snapshot_key(at, static_cast<char>(part), "");
  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    auto k = it->key();
    fn(std::string_view(k.data() + prefix.size(), k.size() - prefix.size()), std::string_view(it->value().data(), it->value().size()));
  }
  if (!it->status().ok())  // a failed read (EIO) is not damage: a later read may pass
    throw StorageError("the snapshot at " + hex_zxid(at) + " in " + dir_ +
                       (disk_failed_read(it->status()) ? " could not be read: " : " is damaged: ") +
                       it->status().ToString());
}

size_t RocksDbLogStore::purge(size_t retain) {
  auto complete = complete_snapshots();
  if (complete.size() <= retain || retain == 0) return 0;
  Zxid oldest_kept = complete[complete.size() - retain];
  rocksdb::WriteBatch batch;
  // Every snapshot, finished or not, started below the oldest kept one goes.
  batch.DeleteRange(snapshot_range_start(0), snapshot_range_start(oldest_kept));
  batch.DeleteRange(marker_key(0), marker_key(oldest_kept));
  // The log from the oldest kept snapshot on stays; so does the record at it, and the last one.
  Zxid cut = std::min(oldest_kept, last_zxid());
  batch.DeleteRange(key_of(0), key_of(cut));
  // Every txn after the cut is still in the log: a member behind it gets a snapshot instead.
  Zxid new_base = std::max(base(), cut);
  batch.Put(base_key, key_of(new_base).substr(1));
  rocksdb::WriteOptions w;
  w.sync = true;
  auto st = db_->Write(w, &batch);
  if (!st.ok()) throw StorageError("cannot purge the log in " + dir_ + ": " + st.ToString());
  base_.store(new_base, std::memory_order_release);
  // Ingested snapshots sit in files of their own: give their space back now rather than at
  // some later compaction. Each range holds one part's purged keys only.
  std::string from = snapshot_range_start(0), to = snapshot_range_start(oldest_kept);
  rocksdb::Slice b(from), e(to);
  st = rocksdb::DeleteFilesInRange(db_.get(), db_->DefaultColumnFamily(), &b, &e);
  if (!st.ok()) throw StorageError("cannot purge the log in " + dir_ + ": " + st.ToString());
  return complete.size() - retain;
}

Zxid RocksDbLogStore::first_zxid() const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  it->Seek(key_of(0));
  if (it->Valid() && it->key().size() == 9 && it->key()[0] == log_prefix) return zxid_of(it->key());
  return 0;
}

void RocksDbLogStore::truncate_after(Zxid z) {
  if (z >= last_zxid()) return;
  if (durable_end_) durable_end_->lower_to(z);
  rocksdb::WriteBatch batch;
  batch.DeleteRange(key_of(z + 1), key_of(INT64_MAX));
  batch.Delete(key_of(INT64_MAX));
  // A snapshot above z holds txns that are cut: it must never be loaded.
  batch.DeleteRange(snapshot_range_start(z + 1), snapshot_range_start(INT64_MAX));
  batch.DeleteRange(marker_key(z + 1), marker_key(INT64_MAX));
  // Nothing is left above z: the log holds every txn after it (none), so it is the base at most.
  Zxid new_base = std::min(base(), z);
  batch.Put(base_key, key_of(new_base).substr(1));
  rocksdb::WriteOptions w;
  w.sync = true;
  auto st = db_->Write(w, &batch);
  if (!st.ok()) throw StorageError("cannot truncate the log in " + dir_ + ": " + st.ToString());
  base_.store(new_base, std::memory_order_release);
  last_.store(z, std::memory_order_release);
}

namespace {
constexpr const char* replica_state_key = "R";
// Its own key, one byte ('0' or '1'): "R" stays the 16 bytes that builds before it read. Beside
// "R", below the snapshots' "S" range, which no table file of log-side keys may span.
constexpr const char* synced_key = "Rs";
}  // namespace

std::optional<bool> RocksDbLogStore::synced() const {
  std::string v;
  auto st = db_->Get(rocksdb::ReadOptions(), synced_key, &v);
  if (st.IsNotFound()) return std::nullopt;
  if (!st.ok() || v.size() != 1 || (v[0] != '0' && v[0] != '1'))
    throw StorageError("the synced mark in " + dir_ + " is damaged" + (st.ok() ? "" : ": " + st.ToString()));
  return v[0] == '1';
}

void RocksDbLogStore::set_synced(bool synced) {
  rocksdb::WriteOptions w;
  w.sync = true;
  auto st = db_->Put(w, synced_key, synced ? "1" : "0");
  if (!st.ok()) throw StorageError("cannot write the synced mark in " + dir_ + ": " + st.ToString());
}

ReplicaState RocksDbLogStore::replica_state() const {
  std::string v;
  auto st = db_->Get(rocksdb::ReadOptions(), replica_state_key, &v);
  if (st.IsNotFound()) return with_epochs_copy({});
  if (!st.ok() || v.size() != 16)
    throw StorageError("the replica state in " + dir_ + " is damaged" + (st.ok() ? "" : ": " + st.ToString()));
  auto get = [&](size_t at, size_t n) {
    uint64_t x = 0;
    for (size_t i = 0; i < n; ++i) x = (x << 8) | static_cast<unsigned char>(v[at + i]);
    return x;
  };
  return with_epochs_copy(ReplicaState{static_cast<uint32_t>(get(0, 4)), static_cast<uint32_t>(get(4, 4)),
                                       static_cast<Zxid>(get(8, 8))});
}

ReplicaState RocksDbLogStore::with_epochs_copy(ReplicaState s) const {
  auto copy = durable_end_ ? durable_end_->recorded_epochs() : std::nullopt;
  if (!copy || (copy->accepted <= s.accepted_epoch && copy->current <= s.current_epoch)) return s;
  spdlog::warn("the replica state in {} holds epochs {}/{} (accepted/current), but their copy in {} holds {}/{}: "
               "the disk lost a synced write of the replica state; the later epochs are used",
               dir_, s.accepted_epoch, s.current_epoch, DurableEnd::file_name, copy->accepted, copy->current);
  s.accepted_epoch = std::max(s.accepted_epoch, copy->accepted);
  s.current_epoch = std::max(s.current_epoch, copy->current);
  return s;
}

void RocksDbLogStore::set_replica_state(const ReplicaState& s) {
  std::string v;
  auto put = [&](uint64_t x, size_t n) {
    for (size_t i = n; i-- > 0;) v.push_back(static_cast<char>((x >> (8 * i)) & 0xff));
  };
  put(s.accepted_epoch, 4);
  put(s.current_epoch, 4);
  put(static_cast<uint64_t>(s.commit_mark), 8);
  rocksdb::WriteOptions w;
  w.sync = true;
  auto st = db_->Put(w, replica_state_key, v);
  if (!st.ok()) throw StorageError("cannot write the replica state in " + dir_ + ": " + st.ToString());
  if (sync_ && durable_end_) durable_end_->keep_epochs({s.accepted_epoch, s.current_epoch});
}

std::vector<LogEntry> RocksDbLogStore::read_after(Zxid after) const {
  std::vector<LogEntry> out;
  for_each_after(after, [&](const LogEntry& e) { out.push_back(e); });
  return out;
}

}  // namespace warden::storage
