// Tools for a person, run as warden-server subcommands without starting a server (like
// ZooKeeper's TxnLogToolkit and SnapshotFormatter): print the log readably, and check a data
// directory by replaying it. Both read the log without taking its lock, so they work beside a
// running server.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace warden::server {

// One line per txn. Returns the process exit code: 0, or 1 with the reason on `err`.
int dump_log(const std::string& data_dir, std::ostream& out, std::ostream& err);
// Replays the whole log into a tree; prints counts and the tree digest. 0 when sound, 1 when
// the log is damaged or does not replay, with what and where on `err`.
int check_data_dir(const std::string& data_dir, std::ostream& out, std::ostream& err);
// Prints the newest complete snapshot: one node a line, with its Stat and data.
int dump_snapshot(const std::string& data_dir, std::ostream& out, std::ostream& err);

// accept-loss: cuts a write-ahead log damaged before its last batch at the damage, for an
// operator who accepts losing what it holds after it (a standalone server refuses to start on it);
// says what is lost. A whole log is left as it is. 0 on success, 1 on failure.
int accept_loss(const std::string& data_dir, std::ostream& out, std::ostream& err);

// restore-backup: writes the backup FILE (GET /commands/snapshot's) into the data directory
// DIR, which must hold no store yet; a server started on DIR then serves the backup's state.
// Refuses a damaged backup (naming the offset and the reason) and writes nothing then.
int restore_backup_into(const std::string& file, const std::string& data_dir, std::ostream& out, std::ostream& err);

// import-zookeeper --from ZK_DATADIR [--from-log ZK_DATALOGDIR] --data-dir DIR: see
// migrate/import_zookeeper.hpp. `args` are the words after the subcommand.
int import_zookeeper_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// export-zookeeper --data-dir DIR --to ZK_DATADIR: see migrate/export_zookeeper.hpp.
int export_zookeeper_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace warden::server
