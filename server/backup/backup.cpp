#include "server/backup/backup.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "consensus/replicator.hpp"
#include "server/pipeline/request_pipeline.hpp"
#include "server/state/snapshot_walk.hpp"
#include "storage/rocksdb_log_store.hpp"

namespace warden::server::backup {

namespace {
constexpr std::string_view magic = "WARDEN-BACKUP 1\n";
constexpr size_t max_frame = 256u << 20;  // a record or txn past this is not one Warden writes

void put_u32(std::string& out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get_be(std::string_view s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<size_t>(i)]);
  return v;
}

class Writer {
 public:
  explicit Writer(const std::string& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
    if (!out_) throw BackupError("cannot write " + path);
    write(std::string(magic));
  }
  void frame(char tag, const std::string& body) {
    std::string head(1, tag);
    put_u32(head, static_cast<uint32_t>(body.size()));
    write(head);
    write(body);
  }
  void end(std::string body) {
    std::string head(1, 'e');
    put_u32(head, static_cast<uint32_t>(body.size() + 4));
    write(head);
    write(body);
    std::string crc;
    put_u32(crc, static_cast<uint32_t>(crc_));
    out_.write(crc.data(), static_cast<std::streamsize>(crc.size()));
    bytes_ += crc.size();
    out_.flush();
    if (!out_) throw BackupError("cannot write " + path_ + " (is the disk full?)");
  }
  uint64_t bytes() const { return bytes_; }

 private:
  void write(const std::string& s) {
    crc_ = crc32(crc_, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size()));
    out_.write(s.data(), static_cast<std::streamsize>(s.size()));
    bytes_ += s.size();
    if (!out_) throw BackupError("cannot write " + path_ + " (is the disk full?)");
  }
  std::string path_;
  std::ofstream out_;
  uLong crc_ = crc32(0L, Z_NULL, 0);
  uint64_t bytes_ = 0;
};

std::string record_body(std::string_view key, std::string_view value) {
  std::string b;
  put_u32(b, static_cast<uint32_t>(key.size()));
  b += key;
  b += value;
  return b;
}

// Reads a backup frame by frame, checking as it goes; `take` sees each record or txn.
struct Reader {
  using Take = std::function<void(char tag, std::string_view key, std::string_view value, Zxid zxid)>;

  static BackupInfo read(const std::string& path, const Take& take) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw BackupError("cannot read " + path);
    BackupInfo info;
    uint64_t offset = 0;
    uLong crc = crc32(0L, Z_NULL, 0);
    auto fail = [&](const std::string& why) -> BackupError {
      return BackupError(fmt::format("{}: offset {}: {}", path, offset, why));
    };
    auto read_exact = [&](std::string& buf, size_t n) {
      buf.resize(n);
      in.read(buf.data(), static_cast<std::streamsize>(n));
      return static_cast<size_t>(in.gcount()) == n;
    };
    std::string buf;
    if (!read_exact(buf, magic.size()) || buf != magic) throw fail("not a Warden backup (its first line is not \"WARDEN-BACKUP 1\")");
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buf.data()), static_cast<uInt>(buf.size()));
    offset = magic.size();
    bool header = false, ended = false;
    Zxid prev_txn = 0;
    std::string head, body;
    while (!ended) {
      if (!read_exact(head, 5)) throw fail("the file ends before its end frame (cut short?)");
      char tag = head[0];
      auto len = static_cast<size_t>(get_be(head, 1, 4));
      if (len > max_frame) throw fail(fmt::format("a frame of {} bytes", len));
      if (!read_exact(body, len)) throw fail("a frame runs past the end of the file (cut short?)");
      if (tag != 'e') {
        crc = crc32(crc, reinterpret_cast<const Bytef*>(head.data()), 5);
        crc = crc32(crc, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));
      }
      if (!header && tag != 'h') throw fail("no header frame first");
      switch (tag) {
        case 'h':
          if (header || len != 16) throw fail("a second or malformed header");
          header = true;
          info.snapshot = static_cast<Zxid>(get_be(body, 0, 8));
          info.last = static_cast<Zxid>(get_be(body, 8, 8));
          if (info.snapshot < 0 || info.last < info.snapshot) throw fail("the header's zxids are out of order");
          prev_txn = info.snapshot;
          break;
        case 'n':
        case 's': {
          if (len < 4 || get_be(body, 0, 4) > len - 4) throw fail("a record whose key runs past it");
          if (info.snapshot == 0) throw fail("a snapshot record in a backup without a snapshot");
          auto klen = static_cast<size_t>(get_be(body, 0, 4));
          std::string_view all(body);
          ++(tag == 'n' ? info.nodes : info.sessions);
          if (take) take(tag, all.substr(4, klen), all.substr(4 + klen), 0);
          break;
        }
        case 'l': {
          if (len < 8) throw fail("a txn frame without its zxid");
          auto z = static_cast<Zxid>(get_be(body, 0, 8));
          if (z <= prev_txn || z > info.last) throw fail(fmt::format("txn 0x{:x} out of order or outside the backup", z));
          prev_txn = z;
          ++info.txns;
          if (take) take('l', {}, std::string_view(body).substr(8), z);
          break;
        }
        case 'e': {
          if (len != 28) throw fail("a malformed end frame");
          crc = crc32(crc, reinterpret_cast<const Bytef*>(head.data()), 5);
          crc = crc32(crc, reinterpret_cast<const Bytef*>(body.data()), 24);
          if (get_be(body, 0, 8) != info.nodes || get_be(body, 8, 8) != info.sessions || get_be(body, 16, 8) != info.txns)
            throw fail("the end frame's counts differ from the records read (records lost?)");
          if (info.txns > 0 ? prev_txn != info.last : info.last != info.snapshot)
            throw fail("the txns do not reach the last zxid the header names");
          // The checksum covers every byte before it, the end frame's counts included.
          if (get_be(body, 24, 4) != static_cast<uint32_t>(crc)) throw fail("the checksum differs");
          ended = true;
          break;
        }
        default:
          throw fail(fmt::format("an unknown frame tag 0x{:02x}", static_cast<unsigned char>(tag)));
      }
      offset += 5 + len;
    }
    char extra;
    if (in.read(&extra, 1)) throw fail("bytes after the end frame");
    info.bytes = offset;
    return info;
  }
};
}  // namespace

BackupInfo write_backup(const storage::LogStore& log, Zxid upto, const std::string& path) {
  const storage::SnapshotStore* snaps = const_cast<storage::LogStore&>(log).snapshots();
  Zxid snapshot = 0;
  if (snaps)
    for (Zxid z : snaps->complete_snapshots())
      if (z <= upto) snapshot = z;
  if (snapshot < log.base())
    throw BackupError(fmt::format("no snapshot at or below 0x{:x} and the log starts after 0x{:x}", upto, log.base()));
  BackupInfo info;
  info.snapshot = snapshot;
  info.last = upto;
  Writer w(path);
  std::string h;
  put_u64(h, static_cast<uint64_t>(snapshot));
  put_u64(h, static_cast<uint64_t>(upto));
  w.frame('h', h);
  using Part = storage::SnapshotStore::SnapshotPart;
  if (snapshot) {
    snaps->for_each_snapshot_record(snapshot, Part::node, [&](std::string_view k, std::string_view v) {
      w.frame('n', record_body(k, v));
      ++info.nodes;
    });
    snaps->for_each_snapshot_record(snapshot, Part::session, [&](std::string_view k, std::string_view v) {
      w.frame('s', record_body(k, v));
      ++info.sessions;
    });
    // The end frame counts what was read: a snapshot that lost records after it was finished
    // would give a backup that checks out and restores short. Its marker's counts decide.
    if (auto want = snaps->snapshot_record_counts(snapshot);
        want && (want->node != info.nodes || want->session != info.sessions))
      throw BackupError(fmt::format("the snapshot at 0x{:x} holds {} chunk and {} session records where its marker "
                                    "says {} and {}: no backup is made from it",
                                    snapshot, info.nodes, info.sessions, want->node, want->session));
  }
  Zxid reached = snapshot;
  log.for_each_in(snapshot, upto, SIZE_MAX, [&](const storage::LogEntry& e) {
    std::string b;
    put_u64(b, static_cast<uint64_t>(e.zxid));
    b += e.payload;
    w.frame('l', b);
    ++info.txns;
    reached = e.zxid;
  });
  if (reached != upto)
    throw BackupError(fmt::format("the log holds txns up to 0x{:x} only, not 0x{:x}", reached, upto));
  std::string end;
  put_u64(end, info.nodes);
  put_u64(end, info.sessions);
  put_u64(end, info.txns);
  w.end(end);
  info.bytes = w.bytes();
  return info;
}

BackupInfo check_backup(const std::string& path) { return Reader::read(path, {}); }

Zxid restored_zxid(Zxid backup_last, Zxid above) {
  constexpr uint64_t epoch_gap = 16;
  uint64_t epoch = std::max(static_cast<uint64_t>(backup_last), static_cast<uint64_t>(above)) >> 32;
  return static_cast<Zxid>((epoch + epoch_gap) << 32);
}

BackupInfo restore_backup(const std::string& path, const std::string& dir, Zxid above) {
  BackupInfo info = check_backup(path);
  Zxid at = info.restored = restored_zxid(info.last, above);
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec))
    throw BackupError(dir + " is not empty: a backup is restored into a fresh store only");

  // The state: the backup's snapshot loaded as a start loads one, its txns replayed after it.
  storage::MemoryLogStore scratch;
  consensus::ZabReplicator replicator(scratch, [](storage::LogEntry) {});
  RequestPipeline server(ServerOptions{}, replicator, [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  });
  if (info.snapshot) server.start_snapshot_load();
  bool loaded = false;
  std::string damage;
  Reader::read(path, [&](char tag, std::string_view key, std::string_view value, Zxid z) {
    if (!damage.empty()) return;
    if (tag == 'n') {
      if (!for_each_in_chunk(value, [&](std::string_view p, std::string_view r) { return server.load_snapshot_node(p, r); }))
        damage = "a node record does not load (a damaged snapshot chunk)";
    } else if (tag == 's') {
      if (!server.load_snapshot_session(key, value)) damage = "a session record does not load";
    } else {
      if (info.snapshot && !loaded) server.finish_snapshot_load(info.snapshot);
      loaded = true;
      try {
        server.replay(z, value);
      } catch (const std::exception& e) {
        damage = fmt::format("txn 0x{:x} does not replay: {}", z, e.what());
      }
    }
  });
  if (info.snapshot && !loaded) server.finish_snapshot_load(info.snapshot);
  if (!damage.empty()) throw BackupError(path + ": " + damage);

  // The same state as one snapshot at `at`, written as a start reads one.
  std::filesystem::create_directories(dir, ec);
  if (ec) throw BackupError("cannot create " + dir + ": " + ec.message());
  storage::RocksDbLogStore store(dir, true);
  write_whole_snapshot(server.tree(), server.session_records(), store, at,
                       fmt::format("{} nodes (restored from a backup of 0x{:x})", server.tree().size(), info.last));
  auto epoch = static_cast<uint32_t>(static_cast<uint64_t>(at) >> 32);
  store.set_replica_state(storage::ReplicaState{epoch, epoch, at});
  return info;
}

}  // namespace warden::server::backup
