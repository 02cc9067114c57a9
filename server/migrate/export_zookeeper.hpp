// export-zookeeper: writes a Warden data directory's state as the version-2 directory of an
// Apache ZooKeeper dataDir (one snapshot at Warden's last zxid, acceptedEpoch, currentEpoch),
// from which ZooKeeper 3.6+ starts and serves the same tree and sessions: the way back after a
// move to Warden.
//
// The state is the store's newest snapshot and the log after it, read without the store's lock,
// so a running Warden is exported as it stood when the export opened its store. The snapshot
// carries ZooKeeper's digest of the tree, which ZooKeeper checks when it loads it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "wire/records.hpp"

namespace warden::server::migrate {

struct ExportOptions {
  std::string data_dir;  // Warden's
  std::string to;        // ZooKeeper's dataDir: its version-2 must hold no snapshot or log yet
};

struct ExportReport {
  std::string snapshot;  // the file written
  wire::Zxid zxid = 0;
  uint64_t nodes = 0, sessions = 0, acls = 0;
  uint32_t accepted_epoch = 0, current_epoch = 0;
};

class ExportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

ExportReport export_zookeeper(const ExportOptions& options);

}  // namespace warden::server::migrate
