// Backups (server/backup): a store's snapshot and the log after it as one file, checked whole
// before anything is restored from it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "harness.hpp"
#include "server/backup/backup.hpp"
#include "storage/rocksdb_log_store.hpp"

using namespace test;
namespace backup = warden::server::backup;
using Part = warden::storage::SnapshotStore::SnapshotPart;

namespace {
// A store with a snapshot at 10 (two chunks of nodes, a session) and txns 1..20.
void fill(const std::string& dir) {
  warden::storage::RocksDbLogStore log(dir, true);
  std::vector<warden::storage::LogEntry> txns;
  for (int z = 1; z <= 20; ++z) txns.push_back({z, "txn-" + std::to_string(z)});
  log.append(txns);
  log.put_snapshot_records(10, Part::node, {{"chunk-a", std::string("nodes\0a", 7)}, {"chunk-b", "nodes b"}});
  log.put_snapshot_records(10, Part::session, {{"s1", "session one"}});
  log.finish_snapshot(10, "2 nodes");
}

std::vector<std::pair<std::string, std::string>> records(const warden::storage::RocksDbLogStore& log, Part part) {
  std::vector<std::pair<std::string, std::string>> out;
  log.for_each_snapshot_record(10, part, [&](std::string_view k, std::string_view v) {
    out.emplace_back(std::string(k), std::string(v));
  });
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }
}  // namespace

TEST_CASE("a backup holds the snapshot and the log after it, and restores into a fresh store") {
  TempDir d;
  std::string src = d.str() + "/src", file = d.str() + "/backup", dst = d.str() + "/dst";
  fill(src);
  backup::BackupInfo info;
  {
    warden::storage::RocksDbLogStore log(src, true);
    info = backup::write_backup(log, 15, file);
    CHECK_THROWS_AS(backup::write_backup(log, 25, d.str() + "/too-far"), backup::BackupError);
  }
  CHECK(info.snapshot == 10);
  CHECK(info.last == 15);
  CHECK(info.nodes == 2);
  CHECK(info.sessions == 1);
  CHECK(info.txns == 5);
  CHECK(backup::check_backup(file).bytes == std::filesystem::file_size(file));
  backup::restore_backup(file, dst);
  warden::storage::RocksDbLogStore src_log(src, true), dst_log(dst, true);
  CHECK(dst_log.complete_snapshots() == std::vector<warden::storage::Zxid>{10});
  CHECK(records(dst_log, Part::node) == records(src_log, Part::node));
  CHECK(records(dst_log, Part::session) == records(src_log, Part::session));
  CHECK(dst_log.base() == 10);
  CHECK(dst_log.last_zxid() == 15);
  auto after = dst_log.read_after(10);
  REQUIRE(after.size() == 5);
  CHECK(after.front().payload == "txn-11");
  CHECK(after.back().payload == "txn-15");
  CHECK(dst_log.replica_state().commit_mark == 15);
  CHECK_THROWS_AS(backup::restore_backup(file, dst), backup::BackupError);  // not a fresh store
}

TEST_CASE("a backup of a server without a snapshot is its log from the start") {
  TempDir d;
  std::string src = d.str() + "/src", file = d.str() + "/backup", dst = d.str() + "/dst";
  {
    warden::storage::RocksDbLogStore log(src, true);
    log.append({{1, "one"}, {2, "two"}, {3, "three"}});
    auto info = backup::write_backup(log, 3, file);
    CHECK((info.snapshot == 0 && info.txns == 3 && info.nodes == 0));
  }
  backup::restore_backup(file, dst);
  warden::storage::RocksDbLogStore dst_log(dst, true);
  CHECK(dst_log.complete_snapshots().empty());
  CHECK(dst_log.read_after(0).size() == 3);
}

TEST_CASE("a damaged backup is refused with the offset and nothing is restored") {
  TempDir d;
  std::string src = d.str() + "/src", file = d.str() + "/backup";
  fill(src);
  {
    warden::storage::RocksDbLogStore log(src, true);
    backup::write_backup(log, 20, file);
  }
  std::string good = slurp(file);
  auto refused = [&](const std::string& bytes, const std::string& why) {
    spit(file, bytes);
    std::string dst = d.str() + "/dst-" + std::to_string(bytes.size());
    try {
      backup::restore_backup(file, dst);
      FAIL("restored: " << why);
    } catch (const backup::BackupError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find("offset") != std::string::npos);
      CHECK(std::string(e.what()).find(why) != std::string::npos);
    }
    CHECK_FALSE(std::filesystem::exists(dst));
  };
  refused("GARBAGE", "not a Warden backup");
  refused(good.substr(0, good.size() - 10), "cut short");
  std::string flipped = good;
  size_t last_payload_byte = good.size() - 33 - 1;  // before the end frame (5 + 28 bytes)
  flipped[last_payload_byte] = static_cast<char>(flipped[last_payload_byte] ^ 0x40);
  refused(flipped, "checksum");
  std::string tagged = good;
  tagged[16] = 'x';  // the header frame's tag
  refused(tagged, "header");
  refused(good + "more", "after the end frame");
  std::string huge = good.substr(0, 16) + "h\xff\xff\xff\xff";
  refused(huge, "a frame of");
}
