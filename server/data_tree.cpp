#include "server/data_tree.hpp"

#include <cassert>

#include <algorithm>

#include "server/path.hpp"
#include "server/quota.hpp"

namespace warden::server {

using wire::Err;
using wire::EventType;

namespace {
std::shared_ptr<const wire::AclList> open_acl() {
  static const auto acl = std::make_shared<const wire::AclList>(
      wire::AclList{wire::Acl{wire::perms::all, wire::Id{"world", "anyone"}}});
  return acl;
}
}  // namespace

wire::Stat client_stat(const Node& n) {
  wire::Stat s;
  s.czxid = n.czxid;
  s.mzxid = n.mzxid;
  s.ctime = n.ctime;
  s.mtime = n.mtime;
  s.version = n.version;
  auto kids = static_cast<int32_t>(n.children.size());
  s.cversion = n.creates * 2 - kids;
  s.aversion = n.aversion;
  s.ephemeralOwner = ephemeral::is_session(n.ephemeralOwner) ? n.ephemeralOwner : 0;
  s.dataLength = n.data ? static_cast<int32_t>(n.data->size()) : 0;
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
    for (const auto& [name, kid] : at->children) stack.push_back(kid);
  }
}
}  // namespace

DataTree::DataTree() {
  // The nodes every ZooKeeper server starts with, with the stats ZooKeeper 3.8 shows for them.
  Node& root = nodes_["/"];
  root.acl = open_acl();
  Node& zk = nodes_["/zookeeper"];
  zk.acl = open_acl();
  root.children.emplace("zookeeper", &zk);
  Node& quota = nodes_["/zookeeper/quota"];
  quota.acl = open_acl();
  quota.data = std::string();
  zk.children.emplace("quota", &quota);
  Node config;
  config.acl = std::make_shared<const wire::AclList>(
      wire::AclList{wire::Acl{wire::perms::read, wire::Id{"world", "anyone"}}});
  config.data = std::string();
  config.aversion = -1;
  zk.children.emplace("config", &nodes_.emplace("/zookeeper/config", std::move(config)).first->second);
}

uint64_t DataTree::digest() const {
  // FNV-1a per node, combined by addition so that hash-map order does not matter.
  uint64_t total = 0;
  for (const auto& [path, n] : nodes_) {
    uint64_t h = 1469598103934665603ULL;
    auto mix = [&](std::string_view bytes) {
      for (unsigned char ch : bytes) h = (h ^ ch) * 1099511628211ULL;
      h = (h ^ 0xff) * 1099511628211ULL;  // a separator, so "ab"+"c" differs from "a"+"bc"
    };
    mix(path);
    mix(n.data ? *n.data : std::string_view("\0null", 5));
    mix(wire::encode(wire::StatResponse{client_stat(n)}));
    for (const auto& a : *n.acl) mix(wire::encode(a));
    total += h;
  }
  return total;
}

bool DataTree::is_special(std::string_view path) {
  return path == "/" || path == "/zookeeper" || path == "/zookeeper/quota" ||
         path == "/zookeeper/config";
}

const Node* DataTree::find(std::string_view path) const {
  auto it = nodes_.find(std::string(path));
  return it == nodes_.end() ? nullptr : &it->second;
}

Node* DataTree::find_mut(std::string_view path) {
  auto it = nodes_.find(std::string(path));
  return it == nodes_.end() ? nullptr : &it->second;
}

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
  Node* stats = find_mut(quota_stats_path(target));
  if (!stats) return;  // a limits node without its stats node: nothing to keep up
  auto t = StatsTrack::parse(stats->data.value_or(""));
  t.set("count", t.get("count") + count_diff);
  t.set("bytes", t.get("bytes") + bytes_diff);
  stats->data = t.text();  // not a change of the stats node's own Stat, as in ZooKeeper
}

void DataTree::recompute_quota(const std::string& target) {
  Node* stats = find_mut(quota_stats_path(target));
  if (!stats) return;
  int64_t count = 0, bytes = 0;
  if (const Node* root = find(target)) {
    visit_subtree(*root, [&](const Node& n) {
      ++count;
      bytes += n.data ? static_cast<int64_t>(n.data->size()) : 0;
    });
  }
  StatsTrack t;
  t.set("count", count);
  t.set("bytes", bytes);
  stats->data = t.text();
}

void DataTree::rebuild_quotas() {
  quota_targets_.clear();
  const Node* root = find(std::string(quota_root));
  if (!root) return;
  std::vector<std::pair<std::string, const Node*>> stack{{std::string(quota_root), root}};
  while (!stack.empty()) {
    auto [path, n] = stack.back();
    stack.pop_back();
    for (const auto& [name, kid] : n->children) {
      std::string p = path + "/" + name;
      if (auto t = quota_target(p, quota_limits_node); !t.empty()) quota_targets_.insert(t);
      stack.emplace_back(std::move(p), kid);
    }
  }
  for (const auto& t : quota_targets_) recompute_quota(t);
}

int64_t DataTree::approximate_data_size() const {
  int64_t bytes = 0;
  for (const auto& [path, n] : nodes_) bytes += static_cast<int64_t>(path.size() + (n.data ? n.data->size() : 0));
  return bytes;
}


size_t DataTree::count_descendants(const Node& n) {
  size_t count = 0;
  visit_subtree(n, [&](const Node&) { ++count; });
  return count - 1;
}

std::shared_ptr<const wire::AclList> DataTree::intern(const wire::AclList& acl) {
  auto it = acls_.find(acl);
  if (it != acls_.end()) {
    if (auto shared = it->second.lock()) return shared;
  }
  auto shared = std::make_shared<const wire::AclList>(acl);
  acls_[acl] = shared;
  // Forget lists no node uses any more, now and then, so the cache stays as small as the tree's.
  if (acls_.size() > 64 && acls_.size() % 64 == 0)
    std::erase_if(acls_, [](const auto& e) { return e.second.expired(); });
  return shared;
}

namespace {
// A node as a snapshot stores it: everything but its path (the key) and its children (rebuilt
// from the paths).
struct SnapshotNode {
  wire::Bytes data;
  wire::AclList acl;
  int64_t czxid = 0, mzxid = 0, pzxid = 0, ctime = 0, mtime = 0, ephemeralOwner = 0;
  int32_t version = 0, creates = 0, aversion = 0;
  WIRE_FIELDS(data, acl, czxid, mzxid, pzxid, ctime, mtime, ephemeralOwner, version, creates, aversion)
};
}  // namespace

std::vector<std::string> DataTree::sorted_paths() const {
  std::vector<std::string> out;
  out.reserve(nodes_.size());
  for (const auto& [p, n] : nodes_) out.push_back(p);
  std::sort(out.begin(), out.end());
  return out;
}

void DataTree::append_snapshot_node(std::string& out, const Node& n) {
  // SnapshotNode's fields, written straight from the node: no copy of its data or ACL.
  size_t at = out.size();
  wire::Writer w(out);
  w.put_int(0);  // the length, set below
  w(n.data, *n.acl, n.czxid, n.mzxid, n.pzxid, n.ctime, n.mtime, n.ephemeralOwner, n.version, n.creates, n.aversion);
  auto len = static_cast<uint32_t>(out.size() - at - 4);
  for (int i = 0; i < 4; ++i) out[at + static_cast<size_t>(i)] = static_cast<char>(len >> (24 - 8 * i));
}

void DataTree::start_load(size_t expected_nodes) {
  last_loaded_acl_.reset();
  nodes_.clear();
  ephemerals_.clear();
  expirable_.clear();
  quota_targets_.clear();
  last_applied_ = 0;
  nodes_.reserve(expected_nodes);  // no rehash of a large tree while it loads
}

bool DataTree::load_node(std::string_view path, std::string_view record) {
  auto r = wire::decode<SnapshotNode>(record);
  if (!r || !valid_path(path)) return false;
  Node n;
  n.data = std::move(r->data);
  // Nodes come in walk order, and neighbours mostly share their ACL: skip the cache's lookup.
  n.acl = last_loaded_acl_ && *last_loaded_acl_ == r->acl ? last_loaded_acl_ : intern(r->acl);
  last_loaded_acl_ = n.acl;
  n.czxid = r->czxid;
  n.mzxid = r->mzxid;
  n.pzxid = r->pzxid;
  n.ctime = r->ctime;
  n.mtime = r->mtime;
  n.ephemeralOwner = r->ephemeralOwner;
  n.version = r->version;
  n.creates = r->creates;
  n.aversion = r->aversion;
  Node* parent = nullptr;
  if (path != "/") {
    parent = find_mut(parent_path(path));
    if (!parent) return true;  // gone from the snapshot's view: see the header
  }
  if (ephemeral::is_session(n.ephemeralOwner)) ephemerals_[n.ephemeralOwner].emplace(path);
  if (n.ephemeralOwner != 0 && !ephemeral::is_session(n.ephemeralOwner)) expirable_.emplace(path);
  // The node keeps its children when it was there already (the root, made by the constructor).
  Node& slot = nodes_[std::string(path)];
  n.children = std::move(slot.children);
  slot = std::move(n);
  if (parent) parent->children.insert_or_assign(std::string(node_name(path)), &slot);
  return true;
}

Err DataTree::create(const CreateTxn& c, const Txn& t, Zxid zxid, std::vector<WatchTrigger>& tr) {
  if (c.path.size() < 2) return Err::nodeExists;
  auto parent_name = parent_path(c.path);
  Node* parent = find_mut(parent_name);
  if (!parent) return Err::noNode;
  auto [slot, added] = nodes_.try_emplace(c.path);  // one lookup both checks and inserts
  if (!added) return Err::nodeExists;
  Node& n = slot->second;
  n.data = c.data;
  n.acl = intern(c.acl);
  n.czxid = n.mzxid = n.pzxid = zxid;
  n.ctime = n.mtime = t.time;
  n.ephemeralOwner = c.ephemeralOwner;
  parent->creates = c.parentCreates;
  parent->pzxid = zxid;
  if (ephemeral::is_session(c.ephemeralOwner)) ephemerals_[c.ephemeralOwner].insert(c.path);
  if (c.ephemeralOwner != 0 && !ephemeral::is_session(c.ephemeralOwner)) expirable_.insert(c.path);
  parent->children.emplace(node_name(c.path), &n);
  quota_node_added(c.path);
  quota_change(c.path, 1, n.data ? static_cast<int64_t>(n.data->size()) : 0);
  tr.push_back({EventType::nodeCreated, c.path, n.acl});
  tr.push_back({EventType::nodeChildrenChanged, std::string(parent_name), parent->acl});
  return Err::ok;
}

Err DataTree::remove(std::string_view path, Zxid zxid, std::vector<WatchTrigger>& tr) {
  auto it = nodes_.find(std::string(path));
  if (it == nodes_.end() || is_special(path)) {
    // Only a replay over a fuzzy snapshot meets a node already gone; its parent may have been
    // written before the delete, so it must still learn of it (ZooKeeper does the same).
    if (!is_special(path))
      if (Node* parent = find_mut(parent_path(path)); parent && zxid > parent->pzxid) parent->pzxid = zxid;
    return Err::noNode;
  }
  if (!it->second.children.empty()) return Err::notEmpty;
  auto parent_name = parent_path(path);
  Node* parent = find_mut(parent_name);
  if (!parent) return Err::noNode;  // cannot happen in a consistent tree
  if (auto kid = parent->children.find(node_name(path)); kid != parent->children.end()) parent->children.erase(kid);
  // A later create may already have moved pzxid on (replay after a fuzzy snapshot): never back.
  if (zxid > parent->pzxid) parent->pzxid = zxid;
  int64_t owner = it->second.ephemeralOwner;
  if (ephemeral::is_session(owner)) {
    auto e = ephemerals_.find(owner);
    if (e != ephemerals_.end()) {
      e->second.erase(std::string(path));
      if (e->second.empty()) ephemerals_.erase(e);
    }
  } else if (owner != 0) {
    expirable_.erase(std::string(path));
  }
  quota_node_removed(path);
  quota_change(path, -1, it->second.data ? -static_cast<int64_t>(it->second.data->size()) : 0);
  std::string removed(path);
  auto removed_acl = it->second.acl;
  nodes_.erase(it);
  tr.push_back({EventType::nodeDeleted, removed, std::move(removed_acl)});
  tr.push_back({EventType::nodeChildrenChanged, std::string(parent_name), parent->acl});
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
          Node* n = find_mut(b.path);
          if (!n) {
            r.err = Err::noNode;
            return;
          }
          auto size = [](const wire::Bytes& d) { return d ? static_cast<int64_t>(d->size()) : 0; };
          quota_change(b.path, 0, size(b.data) - size(n->data));
          n->data = b.data;
          n->version = b.version;
          n->mzxid = zxid;
          n->mtime = t.time;
          r.stat = client_stat(*n);
          tr.push_back({EventType::nodeDataChanged, b.path, n->acl});
        } else if constexpr (std::is_same_v<B, SetAclTxn>) {
          Node* n = find_mut(b.path);
          if (!n) {
            r.err = Err::noNode;
            return;
          }
          n->acl = intern(b.acl);
          n->aversion = b.version;
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
