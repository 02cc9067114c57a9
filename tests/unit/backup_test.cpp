// Backups (server/backup): a store's snapshot and the log after it as one file, checked whole
// before anything is restored from it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "harness.hpp"
#include "server/backup/backup.hpp"
#include "server/state/snapshot_walk.hpp"
#include "storage/rocksdb_log_store.hpp"

using namespace test;
namespace backup = warden::server::backup;
using Part = warden::storage::SnapshotStore::SnapshotPart;
using warden::server::load_newest_snapshot;
using warden::server::SnapshotSink;
using warden::server::SnapshotWalk;
using Zxid = warden::storage::Zxid;

namespace {
// A store holding a real server's state: a snapshot taken after some writes, and the log of
// every txn (the snapshot's and the later ones). Returns the server, for its tree.
void fill(const std::string& dir, Harness& h) {
  Client a(h), b(h);
  a.connect(40000);
  b.connect(40000);
  a.create("/app");
  for (int i = 0; i < 30; ++i) {
    std::string n = std::to_string(i);  // appended, not "v" + n: GCC 12's -O3 -Wrestrict misfires on that
    a.create(std::string("/app/n").append(n), std::string("v").append(n));
  }
  b.create("/app/eph", "e", 1);
  warden::storage::RocksDbLogStore log(dir, true);
  log.append(h.log.read_after(0));
  SnapshotWalk walk(h.server.tree());
  while (!walk.done()) log.put_snapshot_records(walk.at(), Part::node, {walk.next_chunk(7)});
  log.put_snapshot_records(walk.at(), Part::session, h.server.session_records());
  log.finish_snapshot(walk.at(), "snapshot");
  Zxid snap = walk.at();
  a.create("/later", "after the snapshot");
  a.create("/app/seq-", "", 2);
  a.call(OpCode::setData, wire::SetDataRequest{"/app/n3", std::string("changed"), -1});
  log.append(h.log.read_after(snap));
}

// The tree a store's newest snapshot and the log after it hold, loaded as a start loads them.
uint64_t digest_of(const std::string& dir) {
  warden::storage::RocksDbLogStore log(dir, true);
  Harness into;
  SnapshotSink sink{[&] { into.server.start_snapshot_load(); },
                    [&](std::string_view p, std::string_view r) { return into.server.load_snapshot_node(p, r); },
                    [&](std::string_view k, std::string_view r) { return into.server.load_snapshot_session(k, r); }};
  Zxid from = load_newest_snapshot(log, sink);
  if (from) into.server.finish_snapshot_load(from);
  log.for_each_after(from, [&](const warden::storage::LogEntry& e) { into.server.replay(e.zxid, e.payload); });
  return into.server.tree().digest();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }
}  // namespace

TEST_CASE("a backup holds the state at a zxid and restores it, labelled above every zxid seen") {
  TempDir d;
  std::string src = d.str() + "/src", file = d.str() + "/backup", dst = d.str() + "/dst";
  Harness h;
  fill(src, h);
  Zxid last = h.server.tree().last_applied();
  backup::BackupInfo info;
  {
    warden::storage::RocksDbLogStore log(src, true);
    info = backup::write_backup(log, last, file);
    CHECK_THROWS_AS(backup::write_backup(log, last + 5, d.str() + "/too-far"), backup::BackupError);
  }
  CHECK(info.snapshot > 0);
  CHECK(info.last == last);
  CHECK(info.txns == 3);
  CHECK(info.sessions == 2);  // a and b
  CHECK(backup::check_backup(file).bytes == std::filesystem::file_size(file));
  Zxid seen = (Zxid{7} << 32) | 99;  // a zxid some client saw, above the backup's
  Zxid at = backup::restored_zxid(last, seen);
  CHECK(at == (Zxid{7 + 16} << 32));
  CHECK(backup::restored_zxid(last, 0) == backup::restored_zxid(last, 0));  // members agree
  CHECK(backup::restore_backup(file, dst, seen).restored == at);
  CHECK(digest_of(dst) == h.server.tree().digest());
  warden::storage::RocksDbLogStore out(dst, true);
  CHECK(out.complete_snapshots() == std::vector<Zxid>{at});
  CHECK(out.base() == at);
  CHECK(out.last_zxid() == at);
  CHECK(out.replica_state() == warden::storage::ReplicaState{7 + 16, 7 + 16, at});
  CHECK_THROWS_AS(backup::restore_backup(file, dst, seen), backup::BackupError);  // not a fresh store
}

TEST_CASE("a backup of a server without a snapshot is its log from the start") {
  TempDir d;
  std::string src = d.str() + "/src", file = d.str() + "/backup", dst = d.str() + "/dst";
  Harness h;
  Client a(h);
  a.connect();
  a.create("/only", "logged");
  {
    warden::storage::RocksDbLogStore log(src, true);
    log.append(h.log.read_after(0));
    auto info = backup::write_backup(log, h.server.tree().last_applied(), file);
    CHECK((info.snapshot == 0 && info.txns == 2 && info.nodes == 0));
  }
  backup::restore_backup(file, dst, 0);
  CHECK(digest_of(dst) == h.server.tree().digest());
}

TEST_CASE("a damaged backup is refused with the offset and nothing is restored") {
  TempDir d;
  std::string src = d.str() + "/src", file = d.str() + "/backup";
  Harness h;
  fill(src, h);
  {
    warden::storage::RocksDbLogStore log(src, true);
    backup::write_backup(log, h.server.tree().last_applied(), file);
  }
  std::string good = slurp(file);
  auto refused = [&](const std::string& bytes, const std::string& why) {
    spit(file, bytes);
    std::string dst = d.str() + "/dst-" + std::to_string(bytes.size());
    try {
      backup::restore_backup(file, dst, Zxid{1} << 40);
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
