// Warden's backup: a server's state at one zxid as one file, the newest complete snapshot at or
// below it and the log after that snapshot up to it. GET /commands/snapshot writes and sends
// one; POST /commands/restore and `warden-server restore-backup` read one into a fresh store.
//
// The file: "WARDEN-BACKUP 1\n", then frames of a tag byte, a big-endian u32 length and that
// many bytes:
//   'h' (first, once)  snapshot zxid, last zxid (u64 each)
//   'n', 's'           a snapshot's node or session record: key length (u32), key, value
//   'l'                a txn after the snapshot: zxid (u64), payload, in ascending order
//   'e' (last, once)   node records, session records, txns (u64 each), then the CRC-32 (u32)
//                      of every byte before this frame
// A reader takes nothing from a file it has not checked whole: a wrong magic, an unknown tag, a
// frame past the end, txns out of order or outside (snapshot, last], counts or a checksum
// that differ are refused with the offset and the reason.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "storage/log_store.hpp"

namespace warden::server::backup {

using Zxid = storage::Zxid;

struct BackupInfo {
  Zxid snapshot = 0;  // 0: none (the log from its start)
  Zxid last = 0;      // the state it holds is the one after this txn
  uint64_t nodes = 0, sessions = 0, txns = 0;  // records of each kind
  uint64_t bytes = 0;                          // the file's size
  Zxid restored = 0;  // restore_backup: the zxid the restored state is labelled with
};

class BackupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes the state after `upto` held in `log` (its newest complete snapshot at or below `upto`
// and the txns after it up to `upto`) to `path`. Reads the store only: any thread may call it
// while the server serves, as long as no purge runs meanwhile.
BackupInfo write_backup(const storage::LogStore& log, Zxid upto, const std::string& path);

// Reads `path` whole and checks it.
BackupInfo check_backup(const std::string& path);

// Where a restore puts the state: the zxid it is labelled with. The state is the one after the
// backup's last txn, but a server restored to it serves on from a zxid above every zxid the
// ensemble or its clients may have seen (`above`: this server's last), in an epoch of its own:
// clients that saw later zxids reconnect (a server refuses a client that has seen more than it
// has), and a restored leader is elected over members of the old history and syncs them. The
// gap of epochs leaves room for elections held while it restarts. Deterministic: members
// restored from one backup with the same `above` hold the same zxid.
Zxid restored_zxid(Zxid backup_last, Zxid above);

// Checks `path` (reading it once for that), rebuilds the state it holds (its snapshot, then its
// txns replayed), and writes that state into the store directory `dir`, which must hold no store
// yet, as one complete snapshot at restored_zxid(last, above) with that zxid's epochs and commit
// mark, so that a server started on `dir` serves it. Nothing is written when the check fails.
BackupInfo restore_backup(const std::string& path, const std::string& dir, Zxid above);

}  // namespace warden::server::backup
