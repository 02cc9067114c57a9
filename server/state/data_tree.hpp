// The znode tree: a plain in-memory structure that applies txns and answers reads. It knows
// nothing of connections, sessions' liveness, replication or watches; applying a txn returns
// the result and the watch triggers it caused, for the caller to deliver.
//
// Invariants: every node but the root is linked into its parent's child set, and nowhere else
// (see znode.hpp); `creates` counts the creates ever done under a node (ZooKeeper's stored
// cversion, which names sequential nodes); an ephemeral's owner session lists it in
// `ephemerals_`; an ACL table slot's `refs` counts the nodes that use it; `size_` and
// `approx_bytes_` are the node count and the sum of path and data lengths.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/state/node_pool.hpp"
#include "server/state/txn.hpp"
#include "server/state/znode.hpp"
#include "wire/codes.hpp"
#include "wire/records.hpp"

namespace warden::server {

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

// A node as a snapshot stores it: everything but its path (the key) and its children (rebuilt
// from the paths).
struct SnapshotNode {
  wire::Bytes data;
  wire::AclList acl;
  int64_t czxid = 0, mzxid = 0, pzxid = 0, ctime = 0, mtime = 0, ephemeralOwner = 0;
  int32_t version = 0, creates = 0, aversion = 0;
  WIRE_FIELDS(data, acl, czxid, mzxid, pzxid, ctime, mtime, ephemeralOwner, version, creates, aversion)
};

class DataTree {
 public:
  DataTree();
  ~DataTree();
  DataTree(const DataTree&) = delete;
  DataTree& operator=(const DataTree&) = delete;

  const Node* find(std::string_view path) const;
  size_t size() const { return size_; }
  // Memory kept for nodes this tree no longer holds, and giving back what whole blocks of it
  // are (NodePool::trim; the number of blocks).
  size_t spare_node_bytes() const { return pool_.free_bytes(); }
  size_t trim_spare_nodes() { return pool_.trim(); }
  // How many nodes were ever removed from this tree (a snapshot walk's check: see SnapshotWalk).
  uint64_t removed() const { return removed_; }
  Zxid last_applied() const { return last_applied_; }
  // The node's ACL list (shared: a watch event keeps it after the node is gone).
  const std::shared_ptr<const wire::AclList>& acl_of(const Node& n) const { return acls_[n.acl_].list; }

  // Applies a committed txn at `zxid`, appending the watch triggers it causes.
  ApplyResult apply(const Txn& txn, Zxid zxid, std::vector<WatchTrigger>& triggers);

  std::vector<std::string> ephemerals_of(SessionId s) const;
  // Ephemeral nodes of sessions, and path plus data bytes of every node (ZooKeeper's
  // approximate data size), for the four-letter words.
  const std::map<SessionId, std::set<std::string>>& ephemerals() const { return ephemerals_; }
  int64_t approximate_data_size() const { return approx_bytes_; }
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
  // Appends a node in snapshot form (a SnapshotNode), as a length-prefixed record.
  void append_snapshot_node(std::string& out, const Node& n) const;
  // Rebuilding from a snapshot: start_load() empties the tree, load_node() adds nodes in walk
  // order (a parent before its descendants, siblings in name order), finish_load() sets the
  // zxid the log replays from. A node whose parent is not in the snapshot (gone when the walk
  // reached it: the log replays its fate) is left out; load_node() is false only for a
  // damaged record.
  void start_load();
  bool load_node(std::string_view path, std::string_view record);
  // The same from a decoded node (a tool that reads another format).
  bool load_node(std::string_view path, const SnapshotNode& node);
  // A load's fix-up: gives the loaded node at `path` the ACL `acl` without counting a change
  // (aversion stays), for a node whose ACL its snapshot could not name (an imported fuzzy
  // ZooKeeper snapshot; the log's create names it). False when there is no such node.
  bool relabel_acl(std::string_view path, const wire::AclList& acl);
  // /zookeeper/config as ZooKeeper writes it outside the log (initConfigInZKDatabase): `data`,
  // mzxid the configuration's version, mtime `now_ms`, version -1. Under /zookeeper/, so no
  // digest counts it.
  void set_config_node(std::string_view data, Zxid version, int64_t now_ms);
  void finish_load(Zxid zxid) {
    last_applied_ = zxid;
    load_parent_ = load_last_ = nullptr;
    rebuild_quotas();  // the stats of a fuzzy snapshot may be stale: counted again, as ZooKeeper does
  }
  // A digest of every node's path, data, ACL and Stat, independent of insertion order: two
  // trees with the same digest hold the same nodes.
  uint64_t digest() const;
  // ZooKeeper's tree digest (its DigestCalculator, version 2), kept as txns apply: the sum of
  // each node's CRC-32 of its path ("" for the root), its data and its stored stat's czxid,
  // mzxid, pzxid, ctime, mtime, version, cversion (the count of creates, not the cversion a
  // client sees), aversion and ephemeralOwner; nodes under
  // /zookeeper/ count 0. What ZooKeeper's hash command logs, and members compare.
  uint64_t zk_digest() const { return zk_digest_; }
  // Off (digest.enabled=false): nothing is computed and zk_digest() stays 0.
  void enable_zk_digest(bool on) {
    zk_digest_on_ = on;
    recompute_zk_digest();
  }
  // The same, computed over the whole tree (tests check that the kept one never drifts).
  uint64_t zk_digest_full() const;
  // Whether every node's kept part of the digest is what its fields give now (tests).
  bool zk_digest_parts_agree() const;

 private:
  // Where a node hangs: the set that holds it (null for the root) and the node.
  struct Place {
    ChildSet* set = nullptr;
    Node* node = nullptr;
  };
  Place locate(std::string_view path) const;
  Node* find_mut(std::string_view path) const { return locate(path).node; }

  Node* make_node(std::string_view name, const wire::Bytes& data);
  void free_node(Node* n);
  void free_all();
  // Gives the node at `at` new data; returns the node, which moves when the length changes.
  Node* set_data(Place at, const wire::Bytes& data);
  void link_child(Node& parent, Node& kid);

  ApplyResult apply_one(int32_t type, const TxnBody& body, const Txn& t, Zxid zxid,
                        std::vector<WatchTrigger>& triggers);
  wire::Err create(const CreateTxn& c, const Txn& t, Zxid zxid, std::vector<WatchTrigger>& tr);
  wire::Err remove(std::string_view path, Zxid zxid, std::vector<WatchTrigger>& tr);
  ApplyResult apply_multi(const MultiTxn& m, const Txn& t, Zxid zxid, std::vector<WatchTrigger>& tr);

  // One shared copy of each distinct ACL list (ZooKeeper's ReferenceCountedACLCache): most
  // trees use a handful of lists for millions of nodes, and a node holds a 4-byte index.
  struct AclSlot {
    std::shared_ptr<const wire::AclList> list;
    uint64_t refs = 0;
  };
  uint32_t acquire_acl(const wire::AclList& acl);
  void release_acl(uint32_t slot);
  std::vector<AclSlot> acls_;
  std::vector<uint32_t> free_acl_slots_;
  std::map<wire::AclList, uint32_t> acl_index_;

  NodePool pool_;  // every node comes from here; ~DataTree frees them all first
  Node* root_ = nullptr;
  size_t size_ = 0;
  uint64_t removed_ = 0;
  int64_t approx_bytes_ = 0;
  std::map<SessionId, std::set<std::string>> ephemerals_;
  std::set<std::string> expirable_;
  // Paths with a zookeeper_limits node (ZooKeeper's pTrie), and the upkeep of their stats.
  std::set<std::string, std::less<>> quota_targets_;
  void quota_node_added(const std::string& path);
  void quota_node_removed(std::string_view path);
  void quota_change(std::string_view path, int64_t count_diff, int64_t bytes_diff);
  void recompute_quota(const std::string& target);
  void rebuild_quotas();
  // During a load only: the last node added and the last parent used (siblings come together).
  Node* load_parent_ = nullptr;
  std::string load_parent_path_;
  Node* load_last_ = nullptr;
  std::string load_last_path_;
  uint32_t load_last_acl_ = 0;
  Zxid last_applied_ = 0;
  uint64_t zk_digest_ = 0;
  bool zk_digest_on_ = true;
  uint64_t node_zk_digest(std::string_view path, const Node& n) const;
  // `n`'s part of the digest computed now, kept in the node, and returned (to be added).
  uint64_t refresh_zk_digest(std::string_view path, Node& n) const { return n.zk_digest_ = node_zk_digest(path, n); }
  // Every node's part computed again, and their sum kept.
  void recompute_zk_digest();
};

}  // namespace warden::server
