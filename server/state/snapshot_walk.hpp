// A fuzzy snapshot of the tree, taken in chunks between requests so that writes never wait for
// it. The walk starts at the last applied zxid `at()` and goes depth first through the live
// tree, children in name order, keeping only a cursor (the path of the node it is in and the
// last child it took there) between chunks: nothing is copied when it starts, so no turn holds
// the server for long. Each node is serialised as it is when its chunk is taken. Every node
// that lives through the whole walk is met (its ancestors live too, and a cursor resumes after
// a name, so inserts and deletes elsewhere cannot hide it); nodes created or deleted meanwhile
// may be in or out, and may be newer than `at()`. Replaying the log after `at()` over the
// snapshot brings every node to the same state, as ZooKeeper's fuzzy snapshots do. The store
// keeps records sorted by path, so a load meets parents first, and DataTree::load_node leaves
// out a node whose parent was left out.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/state/data_tree.hpp"
#include "storage/rocksdb_log_store.hpp"

namespace warden::server {

class SnapshotWalk {
 public:
  explicit SnapshotWalk(const DataTree& tree)
      : tree_(tree), at_(tree.last_applied()), size_at_start_(tree.size()), removed_at_start_(tree.removed()) {}

  Zxid at() const { return at_; }
  bool done() const { return started_ && stack_.empty(); }
  size_t written() const { return written_; }
  // The walk's invariant, checked before a snapshot is completed: every node of the tree at the
  // start either lived through the walk (and was met) or was removed meanwhile, so what was
  // written plus what was removed covers the tree's size at the start. False for a walk cut
  // short. Call it where the tree cannot change.
  bool met_every_survivor() const { return written_ + (tree_.removed() - removed_at_start_) >= size_at_start_; }
  // A chunk ends at max_chunk_bytes too (one larger node goes alone), and a batch of
  // next_chunks at max_batch_bytes: a tree of large nodes never makes a record, a frame of a
  // streamed snapshot, or a batch in memory larger than a few megabytes.
  static constexpr size_t max_chunk_bytes = 1u << 20;
  static constexpr size_t max_batch_bytes = 4u << 20;
  // The next chunk of at most `max_nodes` nodes, as (key, bytes): the key is the chunk's
  // number (8 bytes, big-endian, so chunks sort in walk order: parents before children), the
  // bytes are the nodes' (path, record) pairs, read back with for_each_in_chunk.
  std::pair<std::string, std::string> next_chunk(size_t max_nodes);
  // Chunks of `max_nodes` until `deadline` has passed (or max_batch_bytes), and at least one while the walk is not
  // done: empty only when it is. (A call that could come back empty before the end, its
  // thread preempted past the deadline before the first chunk, once finished snapshots short:
  // the rest of the tree was lost at the next start.)
  std::vector<std::pair<std::string, std::string>> next_chunks(size_t max_nodes,
                                                               std::chrono::steady_clock::time_point deadline);

 private:
  struct Frame {
    std::string path;        // a node whose children are being walked
    std::string last_child;  // the last child's name taken from it; empty before the first
    // Valid during one next_chunk call only: the node, and the next child to take.
    const Node* node;
    ChildSet::const_iterator next;
    bool positioned;
    const Node* taken;  // the last child taken in this call, if any
  };
  const DataTree& tree_;
  Zxid at_;
  size_t size_at_start_;
  uint64_t removed_at_start_;
  bool started_ = false;
  std::vector<Frame> stack_;  // the cursor: one frame per level, the root at the bottom
  size_t written_ = 0;
  uint64_t chunks_ = 0;
};

// Calls `fn` with each (path, record) in a chunk, in walk order. False when the chunk is
// damaged (or `fn` says so).
bool for_each_in_chunk(std::string_view chunk,
                       const std::function<bool(std::string_view path, std::string_view record)>& fn);

// Where a snapshot's records go when it is loaded: the server's tree and session table, or a
// tool's. Each returns false for a record it cannot take (damage).
struct SnapshotSink {
  // A snapshot exists and is about to be loaded.
  std::function<void()> begin;
  std::function<bool(std::string_view path, std::string_view record)> node;
  std::function<bool(std::string_view key, std::string_view record)> session;
};

// Loads the newest complete snapshot in `log` through `sink`, calling `progress` (when set)
// after every `progress_every` nodes. Returns its zxid, or 0 when there is none. Throws
// storage::StorageError naming the snapshot and the damaged record. A snapshot that holds
// more or fewer records than its marker counts is told to `unusable` and the next older one
// loaded instead (sink.begin() starts again); without `unusable`, or when none is left, that
// throws too.
Zxid load_newest_snapshot(const storage::SnapshotStore& log, const SnapshotSink& sink,
                          const std::function<void(Zxid at, size_t nodes)>& progress = {},
                          size_t progress_every = 1000000,
                          const std::function<void(const std::string& why)>& unusable = {});

// Writes `tree` and the session records `sessions` into the fresh store `store` as its one
// complete snapshot at `at`, and makes that snapshot the store's start (the log continues after
// `at`): how the tools that make a data directory (restore-backup, import-zookeeper) end.
// Returns how many nodes it wrote.
size_t write_whole_snapshot(const DataTree& tree, storage::SnapshotStore::Records sessions,
                            storage::SnapshotStore& store, Zxid at, const std::string& summary);

// Whether a snapshot that snapCount's count has made due may start: the txns since the last one
// must also number `tree_percent` percent of the tree's znodes (snapTreePercent; 0: always).
inline bool snapshot_due(int64_t txns_since, size_t tree_nodes, int32_t tree_percent) {
  return tree_percent <= 0 || txns_since * 100 >= static_cast<int64_t>(tree_nodes) * tree_percent;
}

}  // namespace warden::server
