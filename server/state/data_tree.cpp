#include "server/state/data_tree.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <cassert>

#include <algorithm>
#include <cstring>

#include "server/state/path.hpp"
#include "server/state/quota.hpp"

namespace warden::server {

using wire::Err;
using wire::EventType;

// 80 bytes of stat, links and lengths, and 8 of the kept digest part (a write computes one CRC
// instead of two: 12% of the server thread's time on a setData load).
static_assert(sizeof(void*) != 8 || sizeof(Node) == 88, "a znode's fixed part is meant to stay small");

wire::Stat client_stat(const Node& n) {
  wire::Stat s;
  s.czxid = n.czxid;
  s.mzxid = n.mzxid;
  s.ctime = n.ctime;
  s.mtime = n.mtime;
  s.version = n.version;
  auto kids = static_cast<int32_t>(n.child_count());
  s.cversion = n.creates * 2 - kids;
  s.aversion = n.aversion;
  s.ephemeralOwner = ephemeral::is_session(n.ephemeralOwner) ? n.ephemeralOwner : 0;
  s.dataLength = n.data_size();
  s.numChildren = kids;
  s.pzxid = n.pzxid;
  return s;
}

namespace {
// Calls `fn` for `root` and every node below it, without recursion (a deep tree must not
// exhaust the stack).
template <class Fn>
void visit_subtree(const Node& root, Fn&& fn) {
  std::vector<const Node*> stack{&root};
  while (!stack.empty()) {
    const Node* at = stack.back();
    stack.pop_back();
    fn(*at);
    for (const Node& kid : at->children()) stack.push_back(&kid);
  }
}

// Calls `fn(path, node)` for every node of the tree below `root`, parents first.
template <class Fn>
void visit_with_paths(const Node* root, Fn&& fn) {
  if (!root) return;
  std::vector<std::pair<std::string, const Node*>> stack{{"/", root}};
  while (!stack.empty()) {
    auto [path, n] = std::move(stack.back());
    stack.pop_back();
    fn(std::string_view(path), *n);
    for (const Node& kid : n->children()) {
      std::string p = path == "/" ? std::string() : path;
      p += '/';
      p.append(kid.name());
      stack.emplace_back(std::move(p), &kid);
    }
  }
}
}  // namespace

DataTree::DataTree() {
  // The nodes every ZooKeeper server starts with, with the stats ZooKeeper 3.8 shows for them.
  wire::AclList open{wire::Acl{wire::perms::all, wire::Id{"world", "anyone"}}};
  root_ = make_node("", std::string());  // ZooKeeper's root and /zookeeper hold empty data, not null
  root_->acl_ = acquire_acl(open);
  Node* zk = make_node("zookeeper", std::string());
  zk->acl_ = acquire_acl(open);
  link_child(*root_, *zk);
  Node* quota = make_node("quota", std::string());
  quota->acl_ = acquire_acl(open);
  link_child(*zk, *quota);
  Node* config = make_node("config", std::string());
  config->acl_ = acquire_acl(wire::AclList{wire::Acl{wire::perms::read, wire::Id{"world", "anyone"}}});
  config->aversion = -1;
  link_child(*zk, *config);
  size_ = 4;
  approx_bytes_ = static_cast<int64_t>(std::string_view("/").size() + std::string_view("/zookeeper").size() +
                                       std::string_view("/zookeeper/quota").size() +
                                       std::string_view("/zookeeper/config").size());
  recompute_zk_digest();
}

DataTree::~DataTree() { free_all(); }

Node* DataTree::make_node(std::string_view name, const wire::Bytes& data) {
  size_t data_len = data ? data->size() : 0;
  void* mem = pool_.allocate(sizeof(Node) + name.size() + data_len);
  Node* n = new (mem) Node();
  n->name_len_ = static_cast<uint32_t>(name.size());
  n->data_len_ = data ? static_cast<int32_t>(data_len) : -1;
  if (!name.empty()) std::memcpy(n->bytes(), name.data(), name.size());
  if (data_len) std::memcpy(n->bytes() + name.size(), data->data(), data_len);
  return n;
}

void DataTree::free_node(Node* n) {
  assert(!n->kids_);  // and already out of its parent's index
  size_t bytes = sizeof(Node) + n->name_len_ + static_cast<size_t>(n->data_size());
  n->~Node();
  pool_.release(n, bytes);
}

void DataTree::free_all() {
  // Every node goes; each index is drained and dropped without removing its children one by one.
  std::vector<Node*> stack;
  if (root_) stack.push_back(root_);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (n->kids_) {
      n->kids_->set.drain([&](Node* kid) { stack.push_back(kid); });
      delete n->kids_;
      n->kids_ = nullptr;
    }
    free_node(n);
  }
  root_ = nullptr;
  size_ = 0;
  approx_bytes_ = 0;
  acls_.clear();
  free_acl_slots_.clear();
  acl_index_.clear();
}

void DataTree::link_child(Node& parent, Node& kid) {
  if (!parent.kids_) parent.kids_ = new Children();
  // Loads come in name order (snapshot walks): the end is the usual place, which the index
  // takes without a search.
  parent.kids_->set.insert(&kid);
}

Node* DataTree::set_data(Place at, const wire::Bytes& data) {
  Node* n = at.node;
  size_t len = data ? data->size() : 0;
  approx_bytes_ += static_cast<int64_t>(len) - n->data_size();
  if (data.has_value() == n->has_data() && len == static_cast<size_t>(n->data_size())) {
    if (len) std::memcpy(n->bytes() + n->name_len_, data->data(), len);
    return n;
  }
  Node* fresh = make_node(n->name(), data);
  fresh->czxid = n->czxid;
  fresh->mzxid = n->mzxid;
  fresh->pzxid = n->pzxid;
  fresh->ctime = n->ctime;
  fresh->mtime = n->mtime;
  fresh->ephemeralOwner = n->ephemeralOwner;
  fresh->version = n->version;
  fresh->creates = n->creates;
  fresh->aversion = n->aversion;
  fresh->acl_ = n->acl_;
  fresh->kids_ = n->kids_;
  n->kids_ = nullptr;
  if (at.set)
    at.set->replace(n, fresh);
  else
    root_ = fresh;
  free_node(n);
  return fresh;
}

uint32_t DataTree::acquire_acl(const wire::AclList& acl) {
  auto it = acl_index_.find(acl);
  if (it == acl_index_.end()) {
    uint32_t slot;
    if (!free_acl_slots_.empty()) {
      slot = free_acl_slots_.back();
      free_acl_slots_.pop_back();
    } else {
      slot = static_cast<uint32_t>(acls_.size());
      acls_.emplace_back();
    }
    acls_[slot].list = std::make_shared<const wire::AclList>(acl);
    it = acl_index_.emplace(acl, slot).first;
  }
  ++acls_[it->second].refs;
  return it->second;
}

void DataTree::release_acl(uint32_t slot) {
  AclSlot& s = acls_[slot];
  assert(s.refs > 0);
  if (--s.refs > 0) return;
  acl_index_.erase(*s.list);
  s.list.reset();  // watch events may still hold the list itself
  free_acl_slots_.push_back(slot);
}

uint64_t DataTree::digest() const {
  // FNV-1a per node, combined by addition so that the order of the walk does not matter.
  uint64_t total = 0;
  visit_with_paths(root_, [&](std::string_view path, const Node& n) {
    uint64_t h = 1469598103934665603ULL;
    auto mix = [&](std::string_view bytes) {
      for (unsigned char ch : bytes) h = (h ^ ch) * 1099511628211ULL;
      h = (h ^ 0xff) * 1099511628211ULL;  // a separator, so "ab"+"c" differs from "a"+"bc"
    };
    mix(path);
    mix(n.has_data() ? n.data() : std::string_view("\0null", 5));
    mix(wire::encode(wire::StatResponse{client_stat(n)}));
    for (const auto& a : *acl_of(n)) mix(wire::encode(a));
    total += h;
  });
  return total;
}

uint64_t DataTree::node_zk_digest(std::string_view path, const Node& n) const {
  if (!zk_digest_on_ || path.substr(0, 11) == "/zookeeper/") return 0;
  if (path == "/") path = "";
  unsigned char b[60];
  size_t at = 0;
  auto put = [&](uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) b[at++] = static_cast<unsigned char>((v >> (8 * i)) & 0xff);
  };
  put(static_cast<uint64_t>(n.czxid), 8);
  put(static_cast<uint64_t>(n.mzxid), 8);
  put(static_cast<uint64_t>(n.pzxid), 8);
  put(static_cast<uint64_t>(n.ctime), 8);
  put(static_cast<uint64_t>(n.mtime), 8);
  put(static_cast<uint32_t>(n.version), 4);
  put(static_cast<uint32_t>(n.creates), 4);  // the stored cversion (creates), not the client's
  put(static_cast<uint32_t>(n.aversion), 4);
  put(static_cast<uint64_t>(n.ephemeralOwner), 8);  // as stored: TTL and container marks included
  std::string_view d = n.has_data() ? n.data() : std::string_view();
  uLong crc = crc32(0L, Z_NULL, 0);
  if (path.size() + d.size() <= 512) {  // most nodes: one pass over one buffer
    unsigned char all[512 + sizeof b];
    std::memcpy(all, path.data(), path.size());
    if (!d.empty()) std::memcpy(all + path.size(), d.data(), d.size());
    std::memcpy(all + path.size() + d.size(), b, sizeof b);
    return crc32(crc, all, static_cast<uInt>(path.size() + d.size() + sizeof b));
  }
  crc = crc32(crc, reinterpret_cast<const Bytef*>(path.data()), static_cast<uInt>(path.size()));
  crc = crc32(crc, reinterpret_cast<const Bytef*>(d.data()), static_cast<uInt>(d.size()));
  return crc32(crc, b, sizeof b);
}

uint64_t DataTree::zk_digest_full() const {
  uint64_t total = 0;
  visit_with_paths(root_, [&](std::string_view path, const Node& n) { total += node_zk_digest(path, n); });
  return total;
}

bool DataTree::zk_digest_parts_agree() const {
  bool agree = true;
  visit_with_paths(root_, [&](std::string_view path, const Node& n) { agree &= n.zk_digest_ == node_zk_digest(path, n); });
  return agree;
}

void DataTree::recompute_zk_digest() {
  uint64_t total = 0;
  // The walk hands out const nodes; every node is this tree's own to change.
  visit_with_paths(root_, [&](std::string_view path, const Node& n) { total += refresh_zk_digest(path, const_cast<Node&>(n)); });
  zk_digest_ = total;
}

bool DataTree::is_special(std::string_view path) {
  return path == "/" || path == "/zookeeper" || path == "/zookeeper/quota" ||
         path == "/zookeeper/config";
}

DataTree::Place DataTree::locate(std::string_view path) const {
  if (path.empty() || path[0] != '/' || !root_) return {};
  Place at{nullptr, root_};
  size_t from = 1;
  if (path.size() == 1) return at;
  while (true) {
    size_t slash = path.find('/', from);
    std::string_view name = path.substr(from, slash == std::string_view::npos ? std::string_view::npos : slash - from);
    if (!at.node->kids_) return {};
    ChildSet& set = at.node->kids_->set;
    Node* kid = set.find(name);
    if (!kid) return {};
    at = Place{&set, kid};
    if (slash == std::string_view::npos) return at;
    from = slash + 1;
  }
}

const Node* DataTree::find(std::string_view path) const { return locate(path).node; }

std::vector<std::string> DataTree::ephemerals_of(SessionId s) const {
  auto it = ephemerals_.find(s);
  if (it == ephemerals_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::string DataTree::quota_target_of(std::string_view path) const {
  if (quota_targets_.empty() || path.empty() || path[0] != '/') return {};
  for (std::string_view p = path; p != "/"; p = parent_path(p))
    if (quota_targets_.count(p)) return std::string(p);
  return {};
}

void DataTree::quota_node_added(const std::string& path) {
  if (!path.starts_with(quota_root)) return;
  if (auto t = quota_target(path, quota_limits_node); !t.empty()) quota_targets_.insert(t);
  if (auto t = quota_target(path, quota_stats_node); !t.empty()) recompute_quota(t);
}

void DataTree::quota_node_removed(std::string_view path) {
  if (!path.starts_with(quota_root)) return;
  if (auto t = quota_target(path, quota_limits_node); !t.empty()) quota_targets_.erase(t);
}

void DataTree::quota_change(std::string_view path, int64_t count_diff, int64_t bytes_diff) {
  auto target = quota_target_of(path);
  if (target.empty()) return;
  Place stats = locate(quota_stats_path(target));
  if (!stats.node) return;  // a limits node without its stats node: nothing to keep up
  auto t = StatsTrack::parse(stats.node->data());
  t.set("count", t.get("count") + count_diff);
  t.set("bytes", t.get("bytes") + bytes_diff);
  set_data(stats, t.text());  // not a change of the stats node's own Stat, as in ZooKeeper
}

void DataTree::recompute_quota(const std::string& target) {
  Place stats = locate(quota_stats_path(target));
  if (!stats.node) return;
  int64_t count = 0, bytes = 0;
  if (const Node* root = find(target)) {
    visit_subtree(*root, [&](const Node& n) {
      ++count;
      bytes += n.data_size();
    });
  }
  StatsTrack t;
  t.set("count", count);
  t.set("bytes", bytes);
  set_data(stats, t.text());
}

void DataTree::rebuild_quotas() {
  quota_targets_.clear();
  const Node* root = find(std::string(quota_root));
  if (!root) return;
  visit_with_paths(root, [&](std::string_view rel, const Node&) {
    // `rel` is the path below the quota root ("/" for the root itself)
    if (rel == "/") return;
    std::string p = std::string(quota_root) + std::string(rel);
    if (auto t = quota_target(p, quota_limits_node); !t.empty()) quota_targets_.insert(t);
  });
  for (const auto& t : quota_targets_) recompute_quota(t);
}

size_t DataTree::count_descendants(const Node& n) {
  size_t count = 0;
  visit_subtree(n, [&](const Node&) { ++count; });
  return count - 1;
}

std::vector<std::string> DataTree::sorted_paths() const {
  std::vector<std::string> out;
  out.reserve(size_);
  visit_with_paths(root_, [&](std::string_view p, const Node&) { out.emplace_back(p); });
  std::sort(out.begin(), out.end());
  return out;
}

void DataTree::append_snapshot_node(std::string& out, const Node& n) const {
  // SnapshotNode's fields, written straight from the node: no copy of its data or ACL.
  size_t at = out.size();
  wire::Writer w(out);
  w.put_int(0);  // the length, set below
  if (n.has_data())
    w.put_string(n.data());
  else
    w.put_int(-1);
  w(*acl_of(n), n.czxid, n.mzxid, n.pzxid, n.ctime, n.mtime, n.ephemeralOwner, n.version, n.creates, n.aversion);
  auto len = static_cast<uint32_t>(out.size() - at - 4);
  for (int i = 0; i < 4; ++i) out[at + static_cast<size_t>(i)] = static_cast<char>(len >> (24 - 8 * i));
}

void DataTree::start_load() {
  free_all();
  ephemerals_.clear();
  expirable_.clear();
  quota_targets_.clear();
  load_parent_ = load_last_ = nullptr;
  last_applied_ = 0;
  zk_digest_ = 0;
}

bool DataTree::load_node(std::string_view path, std::string_view record) {
  auto r = wire::decode<SnapshotNode>(record);
  return r && load_node(path, *r);
}

bool DataTree::load_node(std::string_view path, const SnapshotNode& node) {
  if (!valid_path(path)) return false;
  const SnapshotNode* r = &node;
  // Nodes come in walk order: a node's parent is mostly the last parent or the last node.
  Node* parent = nullptr;
  if (path != "/") {
    std::string_view parent_name = parent_path(path);
    if (load_parent_ && parent_name == load_parent_path_) {
      parent = load_parent_;
    } else if (load_last_ && parent_name == load_last_path_) {
      parent = load_last_;
    } else {
      parent = find_mut(parent_name);
      if (!parent) return true;  // gone from the snapshot's view: see the header
    }
    if (parent != load_parent_) {
      load_parent_ = parent;
      load_parent_path_.assign(parent_name);
    }
  }
  Node* n = nullptr;
  if (const Node* had = path == "/" ? root_ : parent->child(node_name(path))) {
    // There already (a damaged walk's repeat): the newer record wins, the children stay.
    zk_digest_ -= had->zk_digest_;
    Place at = path == "/" ? Place{nullptr, root_} : Place{&parent->kids_->set, const_cast<Node*>(had)};
    n = set_data(at, r->data);
    release_acl(n->acl_);
    load_parent_ = load_last_ = nullptr;  // either may have been the node, which moved
  } else {
    n = make_node(path == "/" ? std::string_view() : node_name(path), r->data);
    if (parent)
      link_child(*parent, *n);
    else
      root_ = n;
    ++size_;
    approx_bytes_ += static_cast<int64_t>(path.size()) + n->data_size();
  }
  // Neighbours mostly share their ACL: skip the table's lookup then.
  if (load_last_ && load_last_acl_ < acls_.size() && acls_[load_last_acl_].list &&
      *acls_[load_last_acl_].list == r->acl) {
    n->acl_ = load_last_acl_;
    ++acls_[n->acl_].refs;
  } else {
    n->acl_ = acquire_acl(r->acl);
  }
  n->czxid = r->czxid;
  n->mzxid = r->mzxid;
  n->pzxid = r->pzxid;
  n->ctime = r->ctime;
  n->mtime = r->mtime;
  n->ephemeralOwner = r->ephemeralOwner;
  n->version = r->version;
  n->creates = r->creates;
  n->aversion = r->aversion;
  if (ephemeral::is_session(n->ephemeralOwner)) ephemerals_[n->ephemeralOwner].emplace(path);
  if (n->ephemeralOwner != 0 && !ephemeral::is_session(n->ephemeralOwner)) expirable_.emplace(path);
  load_last_ = n;
  load_last_path_.assign(path);
  load_last_acl_ = n->acl_;
  // ZooKeeper's digest, kept as nodes arrive: a node's part is its own fields only, and a pass
  // over the loaded tree afterwards would cost a start a second walk of every node.
  zk_digest_ += refresh_zk_digest(path, *n);
  return true;
}

void DataTree::set_config_node(std::string_view data, Zxid version, int64_t now_ms) {
  Place at = locate("/zookeeper/config");
  if (!at.node) return;  // a tree loaded without it: nothing to write into
  Node* n = set_data(at, std::string(data));
  n->mzxid = version;
  n->mtime = now_ms;
  n->version = -1;
}

bool DataTree::relabel_acl(std::string_view path, const wire::AclList& acl) {
  Node* n = find_mut(path);
  if (!n) return false;
  uint32_t old = n->acl_;
  n->acl_ = acquire_acl(acl);  // before the release: the same list keeps its slot
  release_acl(old);
  return true;
}

Err DataTree::create(const CreateTxn& c, const Txn& t, Zxid zxid, std::vector<WatchTrigger>& tr) {
  if (c.path.size() < 2) return Err::nodeExists;
  auto parent_name = parent_path(c.path);
  Node* parent = find_mut(parent_name);
  if (!parent) return Err::noNode;
  auto name = node_name(c.path);
  if (!parent->kids_) parent->kids_ = new Children();
  bool taken;
  auto where = parent->kids_->set.search(name, taken);  // one lookup both checks and places
  if (taken) {
    // Only a replay meets this (prepare refuses a create of an existing name): a fuzzy
    // snapshot took the node after this txn made it, and the parent before. The parent's
    // counters still move to where this txn left them, as ZooKeeper's replay does, or the
    // next sequential name under it would repeat one that is taken.
    if (c.parentCreates > parent->creates) {
      zk_digest_ -= parent->zk_digest_;
      parent->creates = c.parentCreates;
      parent->pzxid = zxid;
      zk_digest_ += refresh_zk_digest(parent_name, *parent);
    }
    return Err::nodeExists;
  }
  // ZooKeeper's digest follows every node a txn changes: out before, in after.
  zk_digest_ -= parent->zk_digest_;
  Node* n = make_node(name, c.data);
  n->acl_ = acquire_acl(c.acl);
  n->czxid = n->mzxid = n->pzxid = zxid;
  n->ctime = n->mtime = t.time;
  n->ephemeralOwner = c.ephemeralOwner;
  parent->kids_->set.insert_at(where, n);
  parent->creates = c.parentCreates;
  parent->pzxid = zxid;
  zk_digest_ += refresh_zk_digest(parent_name, *parent) + refresh_zk_digest(c.path, *n);
  ++size_;
  approx_bytes_ += static_cast<int64_t>(c.path.size()) + n->data_size();
  if (ephemeral::is_session(c.ephemeralOwner)) ephemerals_[c.ephemeralOwner].insert(c.path);
  if (c.ephemeralOwner != 0 && !ephemeral::is_session(c.ephemeralOwner)) expirable_.insert(c.path);
  auto acl = acl_of(*n);
  auto parent_acl = acl_of(*parent);
  quota_node_added(c.path);
  quota_change(c.path, 1, c.data ? static_cast<int64_t>(c.data->size()) : 0);
  tr.push_back({EventType::nodeCreated, c.path, std::move(acl)});
  tr.push_back({EventType::nodeChildrenChanged, std::string(parent_name), std::move(parent_acl)});
  return Err::ok;
}

Err DataTree::remove(std::string_view path, Zxid zxid, std::vector<WatchTrigger>& tr) {
  Place at = locate(path);
  if (!at.node || is_special(path)) {
    // Only a replay over a fuzzy snapshot meets a node already gone; its parent may have been
    // written before the delete, so it must still learn of it (ZooKeeper does the same).
    if (!is_special(path))
      if (Node* parent = find_mut(parent_path(path)); parent && zxid > parent->pzxid) {
        zk_digest_ -= parent->zk_digest_;
        parent->pzxid = zxid;
        zk_digest_ += refresh_zk_digest(parent_path(path), *parent);
      }
    return Err::noNode;
  }
  Node* n = at.node;
  if (n->kids_) return Err::notEmpty;
  auto parent_name = parent_path(path);
  Node* parent = find_mut(parent_name);
  if (!parent) return Err::noNode;  // cannot happen in a consistent tree
  zk_digest_ -= parent->zk_digest_ + n->zk_digest_;
  // A later create may already have moved pzxid on (replay after a fuzzy snapshot): never back.
  if (zxid > parent->pzxid) parent->pzxid = zxid;
  int64_t owner = n->ephemeralOwner;
  if (ephemeral::is_session(owner)) {
    auto e = ephemerals_.find(owner);
    if (e != ephemerals_.end()) {
      e->second.erase(std::string(path));
      if (e->second.empty()) ephemerals_.erase(e);
    }
  } else if (owner != 0) {
    expirable_.erase(std::string(path));
  }
  int64_t bytes = n->data_size();
  auto removed_acl = acl_of(*n);
  auto parent_acl = acl_of(*parent);
  at.set->erase(n->name());
  if (at.set->empty()) {
    delete parent->kids_;
    parent->kids_ = nullptr;
  }
  zk_digest_ += refresh_zk_digest(parent_name, *parent);
  release_acl(n->acl_);
  free_node(n);
  --size_;
  ++removed_;
  approx_bytes_ -= static_cast<int64_t>(path.size()) + bytes;
  quota_node_removed(path);
  quota_change(path, -1, -bytes);
  tr.push_back({EventType::nodeDeleted, std::string(path), std::move(removed_acl)});
  tr.push_back({EventType::nodeChildrenChanged, std::string(parent_name), std::move(parent_acl)});
  return Err::ok;
}

ApplyResult DataTree::apply_one(int32_t type, const TxnBody& body, const Txn& t, Zxid zxid,
                                std::vector<WatchTrigger>& tr) {
  ApplyResult r;
  std::visit(
      [&](const auto& b) {
        using B = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<B, CreateTxn>) {
          r.err = create(b, t, zxid, tr);
          r.path = b.path;
          if (r.err == Err::ok) r.stat = client_stat(*find(b.path));
        } else if constexpr (std::is_same_v<B, DeleteTxn>) {
          r.err = remove(b.path, zxid, tr);
        } else if constexpr (std::is_same_v<B, SetDataTxn>) {
          Place at = locate(b.path);
          if (!at.node) {
            r.err = Err::noNode;
            return;
          }
          // A reconfig's text gets its version, the txn's zxid, as ZooKeeper's configuration
          // text ends: the zxid is not known when prep makes the txn.
          wire::Bytes reconfigured;
          if (type == static_cast<int32_t>(wire::OpCode::reconfig))
            reconfigured = b.data.value_or("") + fmt::format("version={:x}", static_cast<uint64_t>(zxid));
          const wire::Bytes& data = reconfigured ? reconfigured : b.data;
          int64_t diff = (data ? static_cast<int64_t>(data->size()) : 0) - at.node->data_size();
          zk_digest_ -= at.node->zk_digest_;
          Node* n = set_data(at, data);
          n->version = b.version;
          n->mzxid = zxid;
          n->mtime = t.time;
          zk_digest_ += refresh_zk_digest(b.path, *n);
          r.stat = client_stat(*n);
          tr.push_back({EventType::nodeDataChanged, b.path, acl_of(*n)});
          quota_change(b.path, 0, diff);  // after: it may move nodes, this one among them
        } else if constexpr (std::is_same_v<B, SetAclTxn>) {
          Node* n = find_mut(b.path);
          if (!n) {
            r.err = Err::noNode;
            return;
          }
          uint32_t old = n->acl_;
          n->acl_ = acquire_acl(b.acl);  // before the release: the same list keeps its slot
          release_acl(old);
          zk_digest_ -= n->zk_digest_;
          n->aversion = b.version;
          zk_digest_ += refresh_zk_digest(b.path, *n);
          r.stat = client_stat(*n);
        } else if constexpr (std::is_same_v<B, CheckTxn>) {
          if (!find(b.path)) r.err = Err::noNode;
        } else if constexpr (std::is_same_v<B, ErrorTxn>) {
          r.err = static_cast<Err>(b.err);
        } else if constexpr (std::is_same_v<B, CreateSessionTxn>) {
          // Sessions live in the session table; the tree has nothing to do.
        } else if constexpr (std::is_same_v<B, CloseSessionTxn>) {
          for (const auto& p : b.ephemerals) {
            const Node* n = find(p);
            // Only the session's own ephemerals: a path reused since prep is left alone. One
            // already gone (a replay over a fuzzy snapshot) still moves its parent's pzxid.
            if (!n || n->ephemeralOwner == t.session) remove(p, zxid, tr);
          }
          // Nothing the session owns outlives it, listed or not (prep lists what is in flight
          // too; this holds whatever the list missed). Every replica holds the same tree here,
          // so every replica removes the same nodes.
          for (const auto& p : ephemerals_of(t.session)) remove(p, zxid, tr);
        } else if constexpr (std::is_same_v<B, MultiTxn>) {
          r = apply_multi(b, t, zxid, tr);
        }
      },
      body);
  (void)type;
  return r;
}

ApplyResult DataTree::apply_multi(const MultiTxn& m, const Txn& t, Zxid zxid,
                                  std::vector<WatchTrigger>& tr) {
  ApplyResult r;
  bool failed = false;
  for (const auto& op : m.ops)
    if (std::holds_alternative<ErrorTxn>(op.body)) failed = true;
  for (const auto& op : m.ops) {
    wire::MultiResult res;
    if (failed) {
      // Prep already gave every op of a failed multi its error result; nothing is applied.
      res.type = static_cast<int32_t>(wire::OpCode::error);
      res.err = std::holds_alternative<ErrorTxn>(op.body) ? std::get<ErrorTxn>(op.body).err : 0;
      res.record = wire::ErrorResponse{res.err};
      r.multi.push_back(std::move(res));
      continue;
    }
    ApplyResult one = apply_one(op.type, TxnBody(std::visit([](const auto& b) -> TxnBody { return b; }, op.body)),
                                t, zxid, tr);
    // Prep validated every op, so live ops succeed; replaying the log over a fuzzy snapshot may
    // meet an op whose effect the snapshot already holds, and goes on, as ZooKeeper does.
    res.type = op.type;
    switch (static_cast<wire::OpCode>(op.type)) {
      case wire::OpCode::create: res.record = wire::CreateResponse{one.path}; break;
      case wire::OpCode::create2:
      case wire::OpCode::createContainer:
      case wire::OpCode::createTTL:
        // ZooKeeper's CreateResult with a stat says create2, whatever made the node.
        res.type = static_cast<int32_t>(wire::OpCode::create2);
        res.record = wire::Create2Response{one.path, one.stat};
        break;
      case wire::OpCode::setData: res.record = wire::StatResponse{one.stat}; break;
      default: break;
    }
    r.multi.push_back(std::move(res));
  }
  return r;
}

ApplyResult DataTree::apply(const Txn& txn, Zxid zxid, std::vector<WatchTrigger>& triggers) {
  ApplyResult r = apply_one(txn.type, txn.body, txn, zxid, triggers);
  last_applied_ = zxid;
  return r;
}

}  // namespace warden::server
