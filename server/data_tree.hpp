// The znode tree: a plain in-memory structure that applies txns and answers reads. It knows
// nothing of connections, sessions' liveness, replication or watches; applying a txn returns
// the result and the watch triggers it caused, for the caller to deliver.
//
// Invariants: every node but the root has its parent in the tree and its name in the parent's
// children, which point at it; `creates` counts the creates ever done under a node (ZooKeeper's stored cversion,
// which names sequential nodes); an ephemeral's owner session lists it in `ephemerals_`.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/txn.hpp"
#include "wire/codes.hpp"
#include "wire/records.hpp"

namespace warden::server {

struct Node {
  wire::Bytes data;
  std::shared_ptr<const wire::AclList> acl;
  Zxid czxid = 0, mzxid = 0, pzxid = 0;
  int64_t ctime = 0, mtime = 0;
  int32_t version = 0, creates = 0, aversion = 0;
  int64_t ephemeralOwner = 0;
  // Name to node: a node's address is stable while it lives (the tree's hash map keeps it).
  std::map<std::string, Node*, std::less<>> children;
};

// What a client is told of a node (ZooKeeper's DataNode.copyStat): cversion counts creates and
// deletes, derived from the create counter and the live children; containers and TTL nodes
// show no owner.
wire::Stat client_stat(const Node& n);

struct WatchTrigger {
  wire::EventType type;
  std::string path;
  // The ACL of the node the event is about (the parent's for a child-list change, the deleted
  // node's for a delete): only connections that may READ it hear the event (ZooKeeper's fix
  // for CVE-2024-23944); the watch fires either way.
  std::shared_ptr<const wire::AclList> acl;
};

struct ApplyResult {
  wire::Err err = wire::Err::ok;
  std::string path;  // a create's path
  wire::Stat stat;   // the stat a create2/setData/setACL reply carries
  std::vector<wire::MultiResult> multi;
};

class DataTree {
 public:
  DataTree();
  // Children point at nodes of this tree: a copy would point into the original.
  DataTree(const DataTree&) = delete;
  DataTree& operator=(const DataTree&) = delete;

  const Node* find(std::string_view path) const;
  size_t size() const { return nodes_.size(); }
  Zxid last_applied() const { return last_applied_; }

  // Applies a committed txn at `zxid`, appending the watch triggers it causes.
  ApplyResult apply(const Txn& txn, Zxid zxid, std::vector<WatchTrigger>& triggers);

  std::vector<std::string> ephemerals_of(SessionId s) const;
  // Ephemeral nodes of sessions, and path plus data bytes of every node (ZooKeeper's
  // approximate data size), for the four-letter words.
  const std::map<SessionId, std::set<std::string>>& ephemerals() const { return ephemerals_; }
  int64_t approximate_data_size() const;
  // The path with a quota that covers `path` (itself or its nearest ancestor with one; never
  // "/", as in ZooKeeper), or empty. See quota.hpp.
  std::string quota_target_of(std::string_view path) const;
  // Every node below `n` (getAllChildrenNumber), without `n` itself.
  static size_t count_descendants(const Node& n);
  // Containers and TTL nodes: the candidates of the periodic cleanup.
  const std::set<std::string>& expirable() const { return expirable_; }

  static bool is_special(std::string_view path);

  // ---- snapshots ----
  // Every path in the tree, sorted: a parent before its descendants (for tools).
  std::vector<std::string> sorted_paths() const;
  // Appends a node in snapshot form, as a length-prefixed record: everything but its path
  // and its children.
  static void append_snapshot_node(std::string& out, const Node& n);
  // Rebuilding from a snapshot: start_load() empties the tree (and makes room for the nodes
  // expected), load_node() adds nodes in path
  // order (so a parent before its descendants), finish_load() sets the zxid the log replays from.
  // A node whose parent is not in the snapshot (gone when the walk reached it: the log replays
  // its fate) is left out; load_node() is false only for a damaged record.
  void start_load(size_t expected_nodes = 0);
  bool load_node(std::string_view path, std::string_view record);
  void finish_load(Zxid zxid) {
    last_applied_ = zxid;
    last_loaded_acl_.reset();
    rebuild_quotas();  // the stats of a fuzzy snapshot may be stale: counted again, as ZooKeeper does
  }
  // A digest of every node's path, data, ACL and Stat, independent of insertion order: two
  // trees with the same digest hold the same nodes.
  uint64_t digest() const;

 private:
  ApplyResult apply_one(int32_t type, const TxnBody& body, const Txn& t, Zxid zxid,
                        std::vector<WatchTrigger>& triggers);
  wire::Err create(const CreateTxn& c, const Txn& t, Zxid zxid, std::vector<WatchTrigger>& tr);
  wire::Err remove(std::string_view path, Zxid zxid, std::vector<WatchTrigger>& tr);
  ApplyResult apply_multi(const MultiTxn& m, const Txn& t, Zxid zxid, std::vector<WatchTrigger>& tr);
  Node* find_mut(std::string_view path);
  // One shared copy of each distinct ACL list (ZooKeeper's ReferenceCountedACLCache): most
  // trees use a handful of lists for millions of nodes.
  std::shared_ptr<const wire::AclList> intern(const wire::AclList& acl);

  std::unordered_map<std::string, Node> nodes_;
  std::map<SessionId, std::set<std::string>> ephemerals_;
  std::set<std::string> expirable_;
  // Paths with a zookeeper_limits node (ZooKeeper's pTrie), and the upkeep of their stats.
  std::set<std::string, std::less<>> quota_targets_;
  void quota_node_added(const std::string& path);
  void quota_node_removed(std::string_view path);
  void quota_change(std::string_view path, int64_t count_diff, int64_t bytes_diff);
  void recompute_quota(const std::string& target);
  void rebuild_quotas();
  std::map<wire::AclList, std::weak_ptr<const wire::AclList>> acls_;
  std::shared_ptr<const wire::AclList> last_loaded_acl_;  // during a load only
  Zxid last_applied_ = 0;
};

}  // namespace warden::server
