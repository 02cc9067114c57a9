// One znode as the tree stores it, laid out for a tree of millions: a single allocation holds
// the Stat fields, the node's name and its data; its parent's ChildIndex holds a pointer to
// it. The node has no path: paths are the names on the way down from the root, which is how
// the tree finds a node. Its ACL is an index into the tree's table of distinct ACL lists.
//
// Only DataTree makes, changes and frees nodes; everyone else reads them. A node's address is
// stable until its data changes length or it is deleted (DataTree then makes a new one and
// puts it in the old one's place), so nothing may keep a Node* across a change of the tree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "server/state/child_index.hpp"
#include "server/state/txn.hpp"

namespace warden::server {

class Node {
 public:
  Zxid czxid = 0, mzxid = 0, pzxid = 0;
  int64_t ctime = 0, mtime = 0;
  int64_t ephemeralOwner = 0;
  int32_t version = 0;
  int32_t creates = 0;  // creates ever done under this node: ZooKeeper's stored cversion
  int32_t aversion = 0;

  std::string_view name() const { return {bytes(), name_len_}; }
  bool has_data() const { return data_len_ >= 0; }
  // The data; empty for a node created with null data.
  std::string_view data() const { return {bytes() + name_len_, has_data() ? static_cast<size_t>(data_len_) : 0}; }
  int32_t data_size() const { return has_data() ? data_len_ : 0; }
  // A copy, in the form a reply carries (null stays null).
  wire::Bytes data_bytes() const { return has_data() ? wire::Bytes(std::string(data())) : std::nullopt; }

  size_t child_count() const;
  const Node* child(std::string_view name) const;
  // The children in name order (as strings compare), for range-for.
  class ChildRange;
  ChildRange children() const;

  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

 private:
  friend class DataTree;
  Node() = default;
  ~Node() = default;
  const char* bytes() const { return reinterpret_cast<const char*>(this + 1); }
  char* bytes() { return reinterpret_cast<char*>(this + 1); }

  uint32_t acl_ = 0;             // the tree's ACL table index
  struct Children* kids_ = nullptr;  // null while the node has no children
  int32_t data_len_ = -1;        // -1: null data
  uint32_t name_len_ = 0;
  // This node's part of ZooKeeper's tree digest as the tree last added it (DataTree keeps it
  // equal to its fields': what it takes out when the node changes, without computing it again,
  // as ZooKeeper's DataNode caches its own).
  uint64_t zk_digest_ = 0;
  // name_len_ bytes of name, then the data, follow the node in the same allocation
};

using ChildSet = ChildIndex<Node>;

// A node's children; allocated with the first child and freed with the last.
struct Children {
  ChildSet set;
};

class Node::ChildRange {
 public:
  explicit ChildRange(const ChildSet& s) : set_(&s) {}
  ChildSet::const_iterator begin() const { return set_->begin(); }
  ChildSet::const_iterator end() const { return set_->end(); }
  // The first child whose name sorts after `name`.
  ChildSet::const_iterator after(std::string_view name) const { return set_->after(name); }
  size_t size() const { return set_->size(); }

 private:
  const ChildSet* set_;
};

inline size_t Node::child_count() const { return kids_ ? kids_->set.size() : 0; }

inline const Node* Node::child(std::string_view name) const { return kids_ ? kids_->set.find(name) : nullptr; }

inline Node::ChildRange Node::children() const {
  static const ChildSet none;
  return ChildRange(kids_ ? kids_->set : none);
}

}  // namespace warden::server
