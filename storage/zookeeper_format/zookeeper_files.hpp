// Readers of Apache ZooKeeper's on-disk files, as versions 3.4 to 3.9 write them in a
// `version-2` directory: snapshots (`snapshot.<zxid>`, plain, `.gz` or `.snappy`), transaction
// logs (`log.<zxid>`) and the `acceptedEpoch` / `currentEpoch` files beside them. They decode
// and check; they know nothing of Warden's tree (server/migrate/ maps what they read onto it).
//
// Every refusal is a FormatError whose text names the file, the offset (in the uncompressed
// content, for a compressed snapshot) and the reason. Readers stream: a snapshot's nodes and a
// log's txns are handed over one at a time, so a file is never held whole in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "wire/jute.hpp"
#include "wire/records.hpp"

namespace warden::storage::zookeeper_format {

using Zxid = int64_t;

class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- the files of a directory ----
enum class Compression { none, gzip, snappy };
struct SnapshotFile {
  std::string path;
  Zxid zxid = 0;  // from the name: the last txn applied when the snapshot started
  Compression compression = Compression::none;
};
struct LogFile {
  std::string path;
  Zxid first = 0;  // from the name: the first txn it holds
};
// ZooKeeper's snapshots in `dir`, newest first (ties: the plainer kind first); other files are
// ignored, as ZooKeeper ignores them.
std::vector<SnapshotFile> list_snapshots(const std::string& dir);
// Its logs, oldest first.
std::vector<LogFile> list_logs(const std::string& dir);
// `acceptedEpoch` or `currentEpoch`: nothing when the file is absent (a standalone ZooKeeper
// writes neither); refused when it holds anything but a decimal epoch.
std::optional<uint32_t> read_epoch_file(const std::string& path);

// ---- snapshots ----
// A node's StatPersisted: what ZooKeeper stores of its Stat (cversion is the stored one, the
// count of creates; a client sees cversion*2 - children).
struct StatPersisted {
  int64_t czxid = 0, mzxid = 0, ctime = 0, mtime = 0;
  int32_t version = 0, cversion = 0, aversion = 0;
  int64_t ephemeralOwner = 0, pzxid = 0;
};
struct SnapshotNode {
  std::string path;  // "/" for the root (stored as "")
  wire::Bytes data;
  int64_t acl = 0;   // a key of the snapshot's ACL map; -1 is world:anyone with every permission
  StatPersisted stat;
};
// The tree digest ZooKeeper 3.6+ appends: the digest of the tree after txn `zxid`.
struct ZxidDigest {
  Zxid zxid = 0;
  int32_t version = 0;
  int64_t digest = 0;
};
struct SnapshotVisitor {
  std::function<void(int64_t session, int32_t timeout_ms)> session;
  std::function<void(int64_t key, wire::AclList acl)> acl;  // all of them before any node
  std::function<void(SnapshotNode node)> node;              // parents before children
};
struct SnapshotSummary {
  uint64_t sessions = 0, acls = 0, nodes = 0;
  std::optional<ZxidDigest> digest;  // absent in snapshots before 3.6, or with digests off
};
// ACL key -1 in a snapshot: ZooKeeper's OPEN_ACL_UNSAFE, kept out of the map.
constexpr int64_t open_acl_key = -1;
// Reads the snapshot through `visit`, checking its magic, version, checksums and structure.
SnapshotSummary read_snapshot(const SnapshotFile& file, const SnapshotVisitor& visit);

// Writes a snapshot as ZooKeeper 3.6+ writes one, uncompressed: header, sessions, the ACL map,
// the nodes (the root first, each parent before its children), the seal, the digest and its
// seal. Written to PATH.tmp and renamed into place by finish(), synced: a snapshot named in the
// directory is whole. Throws FormatError (naming the file) when the disk refuses.
class SnapshotFileWriter {
 public:
  explicit SnapshotFileWriter(std::string path);
  ~SnapshotFileWriter();  // without finish(): the partial file goes
  SnapshotFileWriter(const SnapshotFileWriter&) = delete;
  SnapshotFileWriter& operator=(const SnapshotFileWriter&) = delete;
  void sessions(const std::vector<std::pair<int64_t, int32_t>>& id_timeout);
  void acls(const std::vector<std::pair<int64_t, wire::AclList>>& map);  // open_acl_key stays out of it
  void node(const SnapshotNode& n);
  void finish(const std::optional<ZxidDigest>& digest);

 private:
  void put(std::string_view bytes);
  void flush();
  std::string path_, tmp_;
  int fd_ = -1;
  std::string buf_;
  uint32_t adler_;
  bool finished_ = false;
};
// Writes an epoch file (acceptedEpoch, currentEpoch) as ZooKeeper does: the number in decimal.
void write_epoch_file(const std::string& path, uint32_t epoch);

// ---- transaction logs ----
struct CreateTxn {
  std::string path;
  wire::Bytes data;
  wire::AclList acl;
  bool ephemeral = false;
  int32_t parentCVersion = -1;  // -1: a create of ZooKeeper 3.2's format, which has none
  std::optional<int64_t> ttl;   // createTTL
  bool container = false;       // createContainer
};
struct DeleteTxn {
  std::string path;
};
struct SetDataTxn {
  std::string path;
  wire::Bytes data;
  int32_t version = 0;
};
struct CheckVersionTxn {
  std::string path;
  int32_t version = 0;
};
struct SetAclTxn {
  std::string path;
  wire::AclList acl;
  int32_t version = 0;
};
struct CreateSessionTxn {
  int32_t timeout = 0;
};
struct CloseSessionTxn {
  std::optional<std::vector<std::string>> paths;  // 3.6+ lists the ephemerals it deletes
};
struct ErrorTxn {
  int32_t err = 0;
};
using SubTxnBody = std::variant<CreateTxn, DeleteTxn, SetDataTxn, CheckVersionTxn, ErrorTxn>;
struct SubTxn {
  int32_t type = 0;
  SubTxnBody body;
};
struct MultiTxn {
  std::vector<SubTxn> ops;
};
using TxnBody = std::variant<CreateTxn, DeleteTxn, SetDataTxn, SetAclTxn, CreateSessionTxn, CloseSessionTxn, ErrorTxn,
                             MultiTxn>;
struct Txn {
  int64_t session = 0;
  int32_t cxid = 0;
  Zxid zxid = 0;
  int64_t time = 0;
  int32_t type = 0;  // the opcode (reconfig: a SetDataTxn of /zookeeper/config)
  TxnBody body;
  std::optional<int64_t> digest;  // 3.6+: the tree digest after it (TxnDigest version 2)
};
// One txn record's bytes (TxnHeader, txn, optional TxnDigest); throws FormatError(reason).
Txn decode_txn(std::string_view bytes);

struct LogSummary {
  uint64_t txns = 0;
  Zxid last = 0;
  // Where the log ends short of its zero-filled tail: a record cut off by a crash (never
  // acknowledged: ZooKeeper acknowledges after the fsync that would have completed it).
  std::string torn_tail;
  // Records that repeat an earlier one of the file (its zxid, length and checksum; a ZooKeeper
  // 3.8 ensemble member's log was seen holding a txn twice): read once, counted, the first told.
  uint64_t repeated = 0;
  std::string first_repeat;
};
// Reads the log's txns in order through `txn` (with the offset of each record). Ends at the
// zero length ZooKeeper's preallocation leaves, or the file's end; a last record cut short is
// left out and told in torn_tail. Refuses a bad magic or version, a checksum that differs or
// an end marker missing before the tail (a record with data after it), a record that does
// not decode, a txn below one read before that is not a copy of an earlier record.
LogSummary read_log(const LogFile& file, const std::function<void(Txn txn, uint64_t offset)>& txn);

// The password ZooKeeper gives session `id` (its generatePasswd: java.util.Random seeded with
// the id XOR a constant, 16 bytes): what a client holds and presents when it reconnects.
std::string session_password(int64_t id);

// ZooKeeper's magic numbers ("ZKSN", "ZKLG") and the one file version 3.4 to 3.9 write.
constexpr int32_t snapshot_magic = 0x5a4b534e;
constexpr int32_t log_magic = 0x5a4b4c47;
constexpr int32_t file_version = 2;

}  // namespace warden::storage::zookeeper_format
