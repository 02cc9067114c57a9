// A fuzzy snapshot of the tree, taken in chunks between requests so that writes never wait for
// it. The walk starts at the last applied zxid `at()` with the sorted list of paths then in the
// tree (a parent before its descendants) and serialises each node as it is when its chunk is
// taken. Nodes may be newer than `at()`; replaying the log after `at()` over the snapshot
// brings every node to the same state, as ZooKeeper's fuzzy snapshots do.
//
// Invariant: a node is written only if its parent was written earlier in this walk, so a
// snapshot always loads parents first.
#pragma once

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "server/data_tree.hpp"

namespace warden::server {

class SnapshotWalk {
 public:
  explicit SnapshotWalk(const DataTree& tree) : tree_(tree), at_(tree.last_applied()), paths_(tree.sorted_paths()) {}

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
  std::unordered_set<std::string> skipped_;  // gone when reached: their descendants are skipped too
};

}  // namespace warden::server
