// import-zookeeper: turns an Apache ZooKeeper data directory into a Warden one that serves the
// same tree and sessions from the same zxid on.
//
// The state is ZooKeeper's own start, done offline: the newest snapshot that reads whole (a
// newer one that does not, as a snapshot still being written, is passed over and told, as
// ZooKeeper passes it over), the logs after it replayed over it (fuzzy: txns the snapshot
// already holds are met again, as ZooKeeper meets them), the ephemerals of sessions that did
// not survive removed. It is checked against what ZooKeeper recorded (the snapshot's digest
// and each txn's, from 3.6 on: the tree must agree with the last one, and a difference a later
// digest clears is told; txns contiguous within an epoch; every ACL resolved) and only then
// written, as one Warden snapshot at the last zxid, with the epochs ZooKeeper held.
// Sessions keep their ids, timeouts and the passwords ZooKeeper gave them, so that clients
// reconnect to them.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "wire/records.hpp"

namespace warden::server::migrate {

using wire::Zxid;

struct ImportOptions {
  std::string from;      // ZooKeeper's dataDir, or its version-2 directory
  std::string from_log;  // its dataLogDir (or version-2), when the logs live apart; empty: `from`
  std::string data_dir;  // Warden's data directory: must not hold a store yet
};

struct ImportReport {
  std::string snapshot;  // the snapshot file loaded; empty: none (the logs from the first txn)
  Zxid snapshot_zxid = 0;
  Zxid last = 0;  // the state imported is the one after this txn; Warden continues after it
  uint64_t nodes = 0, sessions = 0, txns = 0;
  uint32_t accepted_epoch = 0, current_epoch = 0;
  bool digest_checked = false;  // the tree agreed with the last digest ZooKeeper recorded
  double load_s = 0, replay_s = 0, write_s = 0;  // where the time went
  std::vector<std::string> notes;  // files passed over, tails left out, ephemerals removed
};

class ImportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads, checks and writes; nothing is written when it throws.
ImportReport import_zookeeper(const ImportOptions& options);

}  // namespace warden::server::migrate
