// A fuzzy snapshot of the tree, taken in chunks between requests so that writes never wait for
// it. The walk starts at the last applied zxid `at()` with the list of paths then in the tree
// (unsorted: sorting a large tree would stall the server) and serialises each node as it is
// when its chunk is taken; nodes gone by then are left out. Nodes may be newer than `at()`;
// replaying the log after `at()` over the snapshot brings every node to the same state, as
// ZooKeeper's fuzzy snapshots do. The store keeps records sorted by path, so a load meets
// parents first, and DataTree::load_node leaves out a node whose parent was left out.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/data_tree.hpp"
#include "storage/rocksdb_log_store.hpp"

namespace warden::server {

class SnapshotWalk {
 public:
  explicit SnapshotWalk(const DataTree& tree) : tree_(tree), at_(tree.last_applied()), paths_(tree.paths()) {}

  Zxid at() const { return at_; }
  bool done() const { return next_ >= paths_.size(); }
  size_t written() const { return written_; }
  // The next (path, record) pairs, from at most `max_paths` paths.
  std::vector<std::pair<std::string, std::string>> next_chunk(size_t max_paths);

 private:
  const DataTree& tree_;
  Zxid at_;
  std::vector<std::string> paths_;
  size_t next_ = 0;
  size_t written_ = 0;
};

// Where a snapshot's records go when it is loaded: the server's tree and session table, or a
// tool's. Each returns false for a record it cannot take (damage).
struct SnapshotSink {
  std::function<void()> begin;  // a snapshot exists and is about to be loaded
  std::function<bool(const std::string& path, std::string_view record)> node;
  std::function<bool(std::string_view key, std::string_view record)> session;
};

// Loads the newest complete snapshot in `log` through `sink`, logging progress every 1M nodes
// when `progress` is set. Returns its zxid, or 0 when there is none. Throws
// storage::StorageError naming the snapshot and the damaged record.
Zxid load_newest_snapshot(const storage::RocksDbLogStore& log, const SnapshotSink& sink,
                          const std::function<void(Zxid at, size_t nodes)>& progress = {});

}  // namespace warden::server
