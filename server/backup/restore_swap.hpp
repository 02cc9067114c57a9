// How a restored store takes the place of a server's store, and what a start does with a swap
// that a crash cut short. The swap is two renames (store -> store.before-restore, then
// store.restoring -> store) with the parent directory synced after each, so that a crash leaves
// one of a few layouts; the staging copy is marked complete (store.restoring.complete, written
// and synced once the restored store is whole) before the first rename. A start then settles:
//
//   store present                       the swap finished, or never began: serve it; drop the rest
//   store missing, before-restore there  cut between the renames: the restored copy if it is
//                                        marked complete, else the old store put back
//   store missing, no before-restore     no swap began: drop any staging copy
//
// Neither copy is deleted until the other is in place, so a start never serves an empty tree
// where a whole store was (issue 45, point 3).
#pragma once

#include <string>

namespace warden::server::backup {

struct RestorePaths {
  std::string store;     // the store directory a server opens
  std::string staging;   // where a restore writes the restored store
  std::string before;    // where the replaced store waits until the restored one is in place
  std::string complete;  // present: the staging copy is whole
};

RestorePaths restore_paths(const std::string& store);

// Clears what an earlier restore left beside the store, for a new one to write its staging copy.
void clear_staging(const RestorePaths& p);

// Marks the staging copy whole: called once the restore wrote it (and RocksDB synced it).
void mark_staging_complete(const RestorePaths& p);

// Puts the (complete) staging copy in the store's place. Throws BackupError when it cannot; the
// store is then back where it was, or the layout left is one settle_interrupted_restore resolves.
void swap_in_restored(const RestorePaths& p);

// At a start, before the store is opened: resolves a swap cut short (the table above). Returns
// what it did, for the log ("" when nothing was left); throws BackupError when a rename fails,
// leaving both copies as they are.
std::string settle_interrupted_restore(const RestorePaths& p);

}  // namespace warden::server::backup
