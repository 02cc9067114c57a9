// The state a data directory's store holds, rebuilt offline as a start rebuilds it: its newest
// complete snapshot and, when asked, the log after it replayed. The store is opened without its
// lock, so the tools that use this (check, snapshot-dump, export-zookeeper) work beside a
// running server: they see the store as it was when they opened it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "server/state/data_tree.hpp"
#include "server/state/session_table.hpp"
#include "storage/log_store.hpp"

namespace warden::server {

struct StoredState {
  DataTree tree;
  SessionTable sessions{1000};  // its deadlines mean nothing offline
  Zxid snapshot = 0;            // the snapshot loaded; 0: none
  size_t txns = 0;              // replayed after it
  storage::ReplicaState replica;
  std::string note;          // the store's recovery note: a torn tail, or damage, read up to
  bool wal_damaged = false;  // damage before the last batch: a start refuses this store
};

// Fills `s` from the store under `data_dir`; `progress` (when set) hears of every millionth txn.
// Throws storage::StorageError (or std::runtime_error) naming what is damaged.
void load_stored_state(const std::string& data_dir, StoredState& s, bool replay,
                       const std::function<void(size_t txns)>& progress = {});

}  // namespace warden::server
