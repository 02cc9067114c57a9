// What an ensemble member does with a store that is damaged (issue 46; docs/operations.md,
// "Storage faults"): it is renamed aside, whole, for an operator to inspect, and the member starts
// on a new empty store that is unsynced (storage::LogStore::synced) until a leader its synced
// peers elect syncs it whole. Nothing is cut, nothing deleted.
#pragma once

#include <string>

namespace warden::storage {

// Makes a rename or a new file in `path`'s directory durable: syncs that directory. Throws
// StorageError naming it.
void sync_directory_of(const std::string& path);

// Renames the store directory `dir` to `dir` + ".damaged-<UTC time>" (a number appended if that
// exists) and syncs the parent; returns the new name. Throws StorageError when it cannot, having
// changed nothing.
std::string set_aside_damaged(const std::string& dir);

}  // namespace warden::storage
