// Readers of ZooKeeper's files (storage/zookeeper_format): files built here byte by byte as
// ZooKeeper lays them out, read back; every cut and many flipped bytes are refused with a
// FormatError, never a crash; and the import's handling of what only crafted files show.
// (Files ZooKeeper itself wrote: it_migrate_zookeeper.)
#include <fmt/format.h>
#include <snappy.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "server/migrate/import_zookeeper.hpp"
#include "server/state/data_tree.hpp"
#include "server/state/stored_state.hpp"
#include "storage/zookeeper_format/zookeeper_files.hpp"
#include "wire/jute.hpp"

namespace zkf = warden::storage::zookeeper_format;
namespace fs = std::filesystem;

namespace {
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("warden-zkf-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  static inline int counter = 0;
};

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

uint32_t adler(std::string_view s) {
  return static_cast<uint32_t>(
      adler32(adler32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}

void seal(std::string& out) {
  warden::wire::Writer w(out);
  w.put_long(adler(out));
  w.put_string("/");
}

// A snapshot of a root, /a (digest ACL) and /a/e (an ephemeral of session 0x77), with two
// sessions and ZooKeeper 3.6's trailing digest.
std::string snapshot_bytes() {
  std::string out;
  warden::wire::Writer w(out);
  w.put_int(zkf::snapshot_magic);
  w.put_int(2);
  w.put_long(-1);
  w.put_int(2);  // sessions
  w.put_long(0x77);
  w.put_int(30000);
  w.put_long(0x78);
  w.put_int(4000);
  w.put_int(1);  // the ACL map
  w.put_long(1);
  w.put_int(1);
  w.put_int(31);
  w.put_string("digest");
  w.put_string("u:hash");
  auto node = [&](std::string_view path, std::string_view data, int64_t acl, int64_t czxid, int64_t owner) {
    w.put_string(path);
    w.put_string(data);
    w.put_long(acl);
    w.put_long(czxid);      // czxid
    w.put_long(czxid + 1);  // mzxid
    w.put_long(1000);       // ctime
    w.put_long(2000);       // mtime
    w.put_int(3);           // version
    w.put_int(4);           // cversion
    w.put_int(5);           // aversion
    w.put_long(owner);
    w.put_long(czxid + 2);  // pzxid
  };
  node("", "", -1, 0, 0);
  node("/a", "data of a", 1, 5, 0);
  node("/a/e", "", -1, 6, 0x77);
  w.put_string("/");
  seal(out);
  w.put_long(9);  // the digest: zxid, version, value
  w.put_int(2);
  w.put_long(0x1234);
  seal(out);
  return out;
}

std::string gzip(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(compressBound(static_cast<uLong>(in.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// snappy-java's stream: magic, version 1, compatible 1, then length-prefixed blocks (small
// ones here, so that records straddle blocks).
std::string snappy_java(const std::string& in) {
  std::string out("\x82SNAPPY\0", 8);
  warden::wire::Writer w(out);
  w.put_int(1);
  w.put_int(1);
  for (size_t at = 0; at < in.size(); at += 50) {
    std::string block;
    snappy::Compress(in.data() + at, std::min<size_t>(50, in.size() - at), &block);
    w.put_string(block);
  }
  return out;
}

zkf::SnapshotSummary read(const fs::path& p, zkf::Compression c, std::vector<zkf::SnapshotNode>* nodes = nullptr,
                          std::vector<std::pair<int64_t, int32_t>>* sessions = nullptr) {
  zkf::SnapshotVisitor v;
  v.node = [&](zkf::SnapshotNode n) {
    if (nodes) nodes->push_back(std::move(n));
  };
  v.session = [&](int64_t id, int32_t t) {
    if (sessions) sessions->emplace_back(id, t);
  };
  return zkf::read_snapshot({p.string(), 0, c}, v);
}

std::string txn_record(int64_t zxid, int32_t type, const std::function<void(warden::wire::Writer&)>& body,
                       std::optional<int64_t> digest = 0xabcdef) {
  std::string out;
  warden::wire::Writer w(out);
  w.put_long(0x77);  // session
  w.put_int(3);      // cxid
  w.put_long(zxid);
  w.put_long(1700000000000);
  w.put_int(type);
  body(w);
  if (digest) {
    w.put_int(2);
    w.put_long(*digest);
  }
  return out;
}

std::string log_bytes(const std::vector<std::string>& records, size_t zero_tail) {
  std::string out;
  warden::wire::Writer w(out);
  w.put_int(zkf::log_magic);
  w.put_int(2);
  w.put_long(0);
  for (const auto& r : records) {
    w.put_long(adler(r));
    w.put_string(r);
    out += 'B';
  }
  out.append(zero_tail, '\0');
  return out;
}

std::string create_record(int64_t zxid, const std::string& path) {
  return txn_record(zxid, 1, [&](warden::wire::Writer& w) {
    w.put_string(path);
    w.put_string("x");
    w.put_int(1);
    w.put_int(31);
    w.put_string("world");
    w.put_string("anyone");
    w.put_bool(true);
    w.put_int(7);
  });
}
}  // namespace

TEST_CASE("a session's password is the one ZooKeeper's generatePasswd gives", "[zookeeper_format]") {
  // From java.util.Random(id ^ 0xB3415C00L).nextBytes(new byte[16]) on OpenJDK 17.
  auto hex = [](const std::string& s) {
    std::string h;
    for (unsigned char c : s) h += fmt::format("{:02x}", c);
    return h;
  };
  CHECK(hex(zkf::session_password(0x1000001f2a30000LL)) == "3f573e3460f1961db5d1a1a2a930cd7f");
  CHECK(hex(zkf::session_password(1)) == "054cc74a37327db215e702e20c73f005");
  CHECK(hex(zkf::session_password(-5)) == "d47144b5e45e45c49c3b7fdcd66257ba");
}

TEST_CASE("a snapshot reads the same plain, gzip'd and snappy'd", "[zookeeper_format]") {
  TempDir d;
  std::string plain = snapshot_bytes();
  write_file(d.path / "snapshot.9", plain);
  write_file(d.path / "snapshot.9.gz", gzip(plain));
  write_file(d.path / "snapshot.12.snappy", snappy_java(plain));
  write_file(d.path / "snapshot.zz", "not one");
  auto files = zkf::list_snapshots(d.path.string());
  REQUIRE(files.size() == 3);
  CHECK(files[0].zxid == 0x12);
  CHECK(files[0].compression == zkf::Compression::snappy);
  CHECK(files[1].compression == zkf::Compression::none);
  CHECK(files[2].compression == zkf::Compression::gzip);
  for (const auto& f : files) {
    std::vector<zkf::SnapshotNode> nodes;
    std::vector<std::pair<int64_t, int32_t>> sessions;
    zkf::SnapshotVisitor v;
    v.node = [&](zkf::SnapshotNode n) { nodes.push_back(std::move(n)); };
    v.session = [&](int64_t id, int32_t t) { sessions.emplace_back(id, t); };
    auto sum = zkf::read_snapshot(f, v);
    CHECK(sum.nodes == 3);
    CHECK(sum.acls == 1);
    REQUIRE(sum.digest);
    CHECK(sum.digest->zxid == 9);
    CHECK(sum.digest->digest == 0x1234);
    REQUIRE(nodes.size() == 3);
    CHECK(nodes[0].path == "/");
    CHECK(nodes[1].path == "/a");
    CHECK(nodes[1].data == "data of a");
    CHECK(nodes[1].acl == 1);
    CHECK(nodes[1].stat.cversion == 4);
    CHECK(nodes[1].stat.pzxid == 7);
    CHECK(nodes[2].stat.ephemeralOwner == 0x77);
    CHECK(sessions == std::vector<std::pair<int64_t, int32_t>>{{0x77, 30000}, {0x78, 4000}});
  }
}

TEST_CASE("a snapshot before ZooKeeper 3.6 ends at its checksum", "[zookeeper_format]") {
  TempDir d;
  std::string s = snapshot_bytes();
  s.resize(s.size() - (8 + 4 + 8) - (8 + 4 + 1));  // no digest, no second seal
  write_file(d.path / "snapshot.9", s);
  auto sum = read(d.path / "snapshot.9", zkf::Compression::none);
  CHECK(sum.nodes == 3);
  CHECK_FALSE(sum.digest);
}

TEST_CASE("a snapshot cut anywhere or with a flipped byte is refused, naming the offset", "[zookeeper_format]") {
  TempDir d;
  std::string s = snapshot_bytes();
  auto p = d.path / "snapshot.9";
  for (size_t cut = 0; cut < s.size(); ++cut) {
    if (cut == s.size() - 33) continue;  // exactly a 3.5 snapshot: no digest, whole
    write_file(p, s.substr(0, cut));
    CHECK_THROWS_AS(read(p, zkf::Compression::none), zkf::FormatError);
  }
  size_t caught = 0;
  for (size_t at = 0; at < s.size(); ++at) {
    std::string bad = s;
    bad[at] = static_cast<char>(bad[at] ^ 0x41);
    write_file(p, bad);
    try {
      read(p, zkf::Compression::none);
    } catch (const zkf::FormatError& e) {
      ++caught;
      CHECK(std::string(e.what()).find(p.string() + ": offset ") == 0);
    }
  }
  // Every flip but those in the trailing digest's value (which the second seal covers too) is
  // caught: the checksum covers every byte.
  CHECK(caught == s.size());
  write_file(p, gzip(s).substr(0, 40));
  CHECK_THROWS_AS(read(p, zkf::Compression::gzip), zkf::FormatError);
  write_file(p, snappy_java(s).substr(0, 60));
  CHECK_THROWS_AS(read(p, zkf::Compression::snappy), zkf::FormatError);
  write_file(p, "\x82SNAPPZ\0" + s);
  CHECK_THROWS_WITH(read(p, zkf::Compression::snappy), Catch::Contains("not a snappy-java stream"));
}

TEST_CASE("a log's txns decode, its zero tail ends it, a torn last record is left out", "[zookeeper_format]") {
  TempDir d;
  std::vector<std::string> recs = {
      create_record(0x100000001, "/a"),
      txn_record(0x100000002, -10, [](auto& w) { w.put_int(30000); }),
      txn_record(0x100000003, -11, [](auto& w) { w.put_int(1), w.put_string("/a"); }),
      txn_record(0x100000004, -11, [](auto&) {}, std::nullopt),
      txn_record(0x100000005, 14,
                 [](auto& w) {
                   w.put_int(2);
                   w.put_int(13);
                   std::string check;
                   warden::wire::Writer(check).put_string("/a");
                   warden::wire::Writer(check).put_int(4);
                   w.put_string(check);
                   w.put_int(-1);
                   std::string err;
                   warden::wire::Writer(err).put_int(-101);
                   w.put_string(err);
                 }),
  };
  auto p = d.path / "log.100000001";
  write_file(p, log_bytes(recs, 4096));
  std::vector<zkf::Txn> got;
  auto sum = zkf::read_log({p.string(), 0x100000001}, [&](zkf::Txn t, uint64_t) { got.push_back(std::move(t)); });
  REQUIRE(got.size() == 5);
  CHECK(sum.torn_tail.empty());
  const auto& c = std::get<zkf::CreateTxn>(got[0].body);
  CHECK(c.path == "/a");
  CHECK(c.ephemeral);
  CHECK(c.parentCVersion == 7);
  CHECK(got[0].digest == 0xabcdef);
  CHECK(std::get<zkf::CreateSessionTxn>(got[1].body).timeout == 30000);
  CHECK(std::get<zkf::CloseSessionTxn>(got[2].body).paths == std::vector<std::string>{"/a"});
  CHECK_FALSE(std::get<zkf::CloseSessionTxn>(got[3].body).paths);
  const auto& m = std::get<zkf::MultiTxn>(got[4].body);
  REQUIRE(m.ops.size() == 2);
  CHECK(std::get<zkf::CheckVersionTxn>(m.ops[0].body).path == "/a");
  CHECK(std::get<zkf::ErrorTxn>(m.ops[1].body).err == -101);

  // The last record cut short (its length written, part of its bytes, zeros after).
  std::string torn = log_bytes(recs, 0);
  std::string last = create_record(0x100000006, "/b");
  warden::wire::Writer(torn).put_long(adler(last));
  warden::wire::Writer(torn).put_int(static_cast<int32_t>(last.size()));
  torn += last.substr(0, 10);
  torn.append(4096, '\0');
  write_file(p, torn);
  got.clear();
  sum = zkf::read_log({p.string(), 0x100000001}, [&](zkf::Txn t, uint64_t) { got.push_back(std::move(t)); });
  CHECK(got.size() == 5);
  CHECK_THAT(sum.torn_tail, Catch::Contains("end marker"));

  // The same damage with data after it is refused.
  std::string middle = log_bytes(recs, 64);
  middle[16 + 20] = static_cast<char>(middle[16 + 20] ^ 1);
  write_file(p, middle);
  CHECK_THROWS_WITH(zkf::read_log({p.string(), 0}, [](zkf::Txn, uint64_t) {}),
                    Catch::Contains("offset 16: a record whose checksum differs") && Catch::Contains("damaged"));
  // A log ZooKeeper has created and not yet written (a running server's newest) holds nothing.
  write_file(p, "ZKL");
  sum = zkf::read_log({p.string(), 0}, [](zkf::Txn, uint64_t) { FAIL("no txn expected"); });
  CHECK(sum.txns == 0);
  CHECK_THAT(sum.torn_tail, Catch::Contains("no whole header yet"));
  // Txns out of order are refused.
  write_file(p, log_bytes({recs[1], recs[0]}, 16));
  CHECK_THROWS_WITH(zkf::read_log({p.string(), 0}, [](zkf::Txn, uint64_t) {}), Catch::Contains("out of order"));
}

TEST_CASE("garbage in a txn record or a log is refused, never a crash", "[zookeeper_format]") {
  std::mt19937 rng(7);
  std::string good = create_record(1, "/a");
  size_t refused = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string bytes = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    if (rng() % 3 == 0) bytes.resize(rng() % bytes.size());
    try {
      zkf::decode_txn(bytes);
    } catch (const zkf::FormatError&) {
      ++refused;
    }
  }
  CHECK(refused > 0);
  TempDir d;
  auto p = d.path / "log.1";
  std::string log = log_bytes({good, create_record(2, "/b")}, 100);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes = log;
    bytes[rng() % bytes.size()] = static_cast<char>(rng());
    write_file(p, bytes);
    try {
      zkf::read_log({p.string(), 1}, [](zkf::Txn, uint64_t) {});
    } catch (const zkf::FormatError& e) {
      CHECK(std::string(e.what()).find(p.string()) == 0);
    }
  }
}

TEST_CASE("epoch files hold a decimal number", "[zookeeper_format]") {
  TempDir d;
  CHECK_FALSE(zkf::read_epoch_file((d.path / "acceptedEpoch").string()));
  write_file(d.path / "acceptedEpoch", "12\n");
  CHECK(zkf::read_epoch_file((d.path / "acceptedEpoch").string()) == 12u);
  write_file(d.path / "currentEpoch", "-1");
  CHECK_THROWS_WITH(zkf::read_epoch_file((d.path / "currentEpoch").string()), Catch::Contains("currentEpoch: offset 0"));
}

namespace {
// A ZooKeeper directory whose snapshot (at 0x5) names ACL 7 for /b, which its map lacks (a
// list first used while the fuzzy snapshot was written), and whose log holds txn 0x6 creating
// `created` with an ip ACL.
void fuzzy_acl_directory(const fs::path& dir, const std::string& created) {
  fs::create_directories(dir / "version-2");
  {
    zkf::SnapshotFileWriter w((dir / "version-2" / "snapshot.5").string());
    w.sessions({});
    warden::wire::AclList digest{warden::wire::Acl{31, warden::wire::Id{"digest", "u:x"}}};
    w.acls({{1, digest}});
    auto node = [&](const std::string& path, int64_t acl, int64_t czxid, int32_t creates) {
      zkf::SnapshotNode n;
      n.path = path;
      n.data = std::string();
      n.acl = acl;
      n.stat = {czxid, czxid, 1000, 1000, 0, creates, 0, 0, czxid};
      w.node(n);
    };
    node("/", -1, 0, 2);
    node("/zookeeper", -1, 0, 0);
    node("/zookeeper/quota", -1, 0, 0);
    node("/a", 1, 5, 0);
    node("/b", 7, 6, 0);
    w.finish(std::nullopt);
  }
  std::string rec = txn_record(6, 1, [&](warden::wire::Writer& w) {
    w.put_string(created);
    w.put_string("");
    w.put_int(1);
    w.put_int(31);
    w.put_string("ip");
    w.put_string("127.0.0.1");
    w.put_bool(false);
    w.put_int(2);
  }, std::nullopt);
  write_file(dir / "version-2" / "log.6", log_bytes({rec}, 512));
}
}  // namespace

TEST_CASE("an ACL a fuzzy snapshot's map lacks is taken from the log's create, or refused by name",
          "[zookeeper_format]") {
  TempDir d;
  fuzzy_acl_directory(d.path / "zk", "/b");
  warden::server::migrate::ImportOptions o{(d.path / "zk").string(), "", (d.path / "warden").string()};
  auto r = warden::server::migrate::import_zookeeper(o);
  CHECK(r.last == 6);
  warden::server::StoredState s;
  warden::server::load_stored_state(o.data_dir, s, true);
  const auto* b = s.tree.find("/b");
  REQUIRE(b);
  CHECK(*s.tree.acl_of(*b) == warden::wire::AclList{warden::wire::Acl{31, warden::wire::Id{"ip", "127.0.0.1"}}});
  CHECK(s.tree.acl_of(*s.tree.find("/a"))->at(0).id.scheme == "digest");

  TempDir e;
  fuzzy_acl_directory(e.path / "zk", "/c");
  o = {(e.path / "zk").string(), "", (e.path / "warden").string()};
  CHECK_THROWS_WITH(warden::server::migrate::import_zookeeper(o),
                    Catch::Contains("node /b names ACL 7") && Catch::Contains("nothing was written"));
  CHECK_FALSE(fs::exists(e.path / "warden" / "log"));
}

namespace {
// Node `path` as txn `zxid` creates it (test_create's fields), for a snapshot and for a tree.
zkf::SnapshotNode made_by(const std::string& path, int64_t zxid, int32_t creates = 0) {
  zkf::SnapshotNode n;
  n.path = path;
  n.data = std::string(path == "/" ? "" : "x");
  n.acl = -1;
  int64_t t = path == "/" ? 0 : 1700000000000;
  n.stat = {zxid, zxid, t, t, 0, creates, 0, 0, zxid};
  return n;
}

// Txn `zxid` creating /tN under the root (whose create counter becomes `creates`), with
// ZooKeeper's digest of the tree after it.
std::string test_create(int64_t zxid, int32_t creates, int64_t digest) {
  return txn_record(zxid, 1, [&](warden::wire::Writer& w) {
    w.put_string(fmt::format("/t{}", zxid));
    w.put_string("x");
    w.put_int(1);
    w.put_int(31);
    w.put_string("world");
    w.put_string("anyone");
    w.put_bool(false);
    w.put_int(creates);
  }, digest);
}

// ZooKeeper's digest of the root and /t6../tN, as txns 6..N leave them (the product's digest,
// which it_migrate_zookeeper checks against ZooKeeper's own).
int64_t digest_after(int64_t last) {
  warden::server::DataTree tree;
  tree.start_load();
  auto load = [&](const zkf::SnapshotNode& z) {
    warden::server::SnapshotNode n;
    n.data = z.data;
    n.acl = {warden::wire::Acl{31, warden::wire::Id{"world", "anyone"}}};
    n.czxid = z.stat.czxid, n.mzxid = z.stat.mzxid, n.pzxid = z.stat.pzxid;
    n.ctime = z.stat.ctime, n.mtime = z.stat.mtime, n.creates = z.stat.cversion;
    REQUIRE(tree.load_node(z.path, n));
  };
  auto root = made_by("/", 0, static_cast<int32_t>(last - 5));
  root.stat.pzxid = last > 5 ? last : 0;
  load(root);
  for (int64_t z = 6; z <= last; ++z) load(made_by(fmt::format("/t{}", z), z));
  tree.finish_load(last);
  tree.enable_zk_digest(true);
  return static_cast<int64_t>(tree.zk_digest());
}

// A ZooKeeper directory: snapshot.5 (the root alone, or also /t7 when `fuzzy`: txn 7's node
// written while the walk ran) whose digest names txn `digest_of`, and a log creating /t6../t8,
// whose txn digests are the true ones but for the txns in `wrong`.
void digest_directory(const fs::path& dir, bool fuzzy, int64_t digest_of, const std::set<int64_t>& wrong) {
  fs::create_directories(dir / "version-2");
  zkf::SnapshotFileWriter w((dir / "version-2" / "snapshot.5").string());
  w.sessions({});
  w.acls({});
  w.node(made_by("/", 0, 0));
  if (fuzzy) w.node(made_by("/t7", 7));
  w.finish(zkf::ZxidDigest{digest_of, 2, digest_after(digest_of)});
  std::vector<std::string> recs;
  for (int64_t z = 6; z <= 8; ++z)
    recs.push_back(test_create(z, static_cast<int32_t>(z - 5), digest_after(z) + static_cast<int64_t>(wrong.count(z))));
  write_file(dir / "version-2" / "log.6", log_bytes(recs, 512));
}
}  // namespace

TEST_CASE("a difference from ZooKeeper's digest refuses the import only when it lasts", "[zookeeper_format]") {
  namespace mig = warden::server::migrate;
  auto import = [](bool fuzzy, int64_t digest_of, const std::set<int64_t>& wrong) {
    TempDir d;
    digest_directory(d.path / "zk", fuzzy, digest_of, wrong);
    mig::ImportOptions o{(d.path / "zk").string(), "", (d.path / "warden").string()};
    try {
      auto r = mig::import_zookeeper(o);
      CHECK(fs::exists(d.path / "warden" / "log"));
      return std::make_pair(r, std::string());
    } catch (const mig::ImportError& e) {
      CHECK_FALSE(fs::exists(d.path / "warden" / "log"));
      return std::make_pair(mig::ImportReport{}, std::string(e.what()));
    }
  };
  SECTION("every digest agrees: nothing told") {
    auto [r, err] = import(false, 5, {});
    CHECK(err.empty());
    CHECK(r.digest_checked);
    CHECK(r.last == 8);
    CHECK(r.notes.empty());
  }
  SECTION("the snapshot's digest read while txn 7 applied: told, and the next txn's agrees") {
    auto [r, err] = import(true, 6, {});
    INFO(err);
    CHECK(err.empty());
    CHECK(r.digest_checked);
    REQUIRE(r.notes.size() == 1);
    CHECK_THAT(r.notes[0], Catch::Contains("the tree after txn 0x6 is not ZooKeeper's") &&
                               Catch::Contains("agrees again after txn 0x7"));
  }
  SECTION("a txn's digest wrong and the next right: told") {
    auto [r, err] = import(false, 5, {7});
    CHECK(err.empty());
    REQUIRE(r.notes.size() == 1);
    CHECK_THAT(r.notes[0], Catch::Contains("after txn 0x7") && Catch::Contains("agrees again after txn 0x8"));
  }
  SECTION("the last digest differs: refused, nothing written") {
    auto [r, err] = import(false, 5, {8});
    CHECK_THAT(err, Catch::Contains("log.6: offset") && Catch::Contains("the tree after txn 0x8 is not ZooKeeper's") &&
                        Catch::Contains("no later digest agrees"));
  }
  SECTION("a difference that lasts: refused, naming where it began") {
    auto [r, err] = import(true, 6, {7, 8});
    CHECK_THAT(err, Catch::Contains("the tree after txn 0x6 is not ZooKeeper's") &&
                        Catch::Contains("no later digest agrees"));
  }
}

TEST_CASE("a txn a ZooKeeper log holds twice is read once; any other txn below the last is refused",
          "[zookeeper_format]") {
  TempDir d;
  auto rec = [](int64_t z) { return test_create(z, static_cast<int32_t>(z - 5), digest_after(z)); };
  auto p = d.path / "log.6";
  auto read_zxids = [&](const std::vector<std::string>& recs) {
    write_file(p, log_bytes(recs, 512));
    std::vector<int64_t> got;
    auto sum = zkf::read_log({p.string(), 6}, [&](zkf::Txn t, uint64_t) { got.push_back(t.zxid); });
    return std::make_pair(got, sum);
  };
  // The second record the first again, as a ZooKeeper 3.8 member's log was seen to hold.
  auto [got, sum] = read_zxids({rec(6), rec(6), rec(7)});
  CHECK(got == std::vector<int64_t>{6, 7});
  CHECK(sum.repeated == 1);
  CHECK(sum.last == 7);
  CHECK_THAT(sum.first_repeat, Catch::Contains("txn 0x6 again (first at offset 16)"));
  // A run of txns logged again, then new ones.
  std::tie(got, sum) = read_zxids({rec(6), rec(7), rec(8), rec(7), rec(8), rec(9)});
  CHECK(got == std::vector<int64_t>{6, 7, 8, 9});
  CHECK(sum.repeated == 2);
  // The same zxid with other content is two histories: refused, naming both offsets.
  std::string other = test_create(7, 2, digest_after(7) + 1);
  write_file(p, log_bytes({rec(6), rec(7), other}, 512));
  CHECK_THROWS_WITH(zkf::read_log({p.string(), 6}, [](zkf::Txn, uint64_t) {}),
                    Catch::Contains("txn 0x7 is logged again with other content than at offset"));
  // A lower zxid never read in this file is out of order, as before.
  write_file(p, log_bytes({rec(6), rec(8), rec(7)}, 512));
  CHECK_THROWS_WITH(zkf::read_log({p.string(), 6}, [](zkf::Txn, uint64_t) {}), Catch::Contains("out of order"));

  // The import reads the repeated txn once and says so.
  namespace mig = warden::server::migrate;
  fs::create_directories(d.path / "zk" / "version-2");
  {
    zkf::SnapshotFileWriter w((d.path / "zk" / "version-2" / "snapshot.5").string());
    w.sessions({});
    w.acls({});
    w.node(made_by("/", 0, 0));
    w.finish(zkf::ZxidDigest{5, 2, digest_after(5)});
  }
  write_file(d.path / "zk" / "version-2" / "log.6", log_bytes({rec(6), rec(6), rec(7), rec(8)}, 512));
  mig::ImportOptions o{(d.path / "zk").string(), "", (d.path / "warden").string()};
  auto r = mig::import_zookeeper(o);
  CHECK(r.last == 8);
  CHECK(r.txns == 3);
  CHECK(r.digest_checked);
  REQUIRE(r.notes.size() == 1);
  CHECK_THAT(r.notes[0], Catch::Contains("1 txn(s) logged twice by ZooKeeper, read once") &&
                             Catch::Contains("log.6: offset"));
}
