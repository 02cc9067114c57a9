#include "server/pipeline/prep.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "server/state/path.hpp"
#include "server/state/quota.hpp"

namespace warden::server {

using wire::Err;
using wire::OpCode;

namespace {
// ZooKeeper's checkAndIncVersion: -1 matches any version.
std::optional<int32_t> next_version(int32_t current, int32_t expected) {
  if (expected != -1 && expected != current) return std::nullopt;
  return current + 1;
}
}  // namespace

Err Prep::check_quota(const std::string& path, int64_t count_diff, int64_t bytes_diff) {
  std::string target = tree_.quota_target_of(path);
  if (target.empty()) return Err::ok;
  const Node* limits_node = tree_.find(quota_limits_path(target));
  const Node* stats_node = tree_.find(quota_stats_path(target));
  if (!limits_node || !stats_node) return Err::ok;
  auto limits = StatsTrack::parse(limits_node->data());
  auto stats = StatsTrack::parse(stats_node->data());
  Err out = Err::ok;
  auto check = [&](const char* what, const char* soft_key, const char* hard_key, int64_t diff) {
    int64_t soft = limits.get(soft_key), hard = limits.get(hard_key);
    if (diff == 0 || (soft < 0 && hard < 0)) return;
    int64_t now = stats.get(what) + diff;
    bool is_hard = hard > -1;
    int64_t limit = is_hard ? hard : soft;
    if (now <= limit) return;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now().time_since_epoch()).count();
    if (ms - quota_logged_ms_ >= 1000) {
      quota_logged_ms_ = ms;
      spdlog::warn("Quota exceeded: {} [current {}={}, {}{}Limit={}]", target, what, now, is_hard ? "hard" : "soft",
                   what == std::string("count") ? "Count" : "Byte", limit);
    }
    if (is_hard && enforce_quota_) out = Err::quotaExceeded;
  };
  check("count", "count", "countHardLimit", count_diff);
  check("bytes", "bytes", "byteHardLimit", bytes_diff);
  return out;
}

std::optional<Prep::View> Prep::view(const std::string& path) const {
  if (auto it = pending_.find(path); it != pending_.end()) return it->second.view;
  const Node* n = tree_.find(path);
  if (!n) return std::nullopt;
  View v;
  v.exists = true;
  v.version = n->version;
  v.creates = n->creates;
  v.aversion = n->aversion;
  v.children = static_cast<int32_t>(n->child_count());
  v.ephemeralOwner = n->ephemeralOwner;
  v.acl = tree_.acl_of(*n);
  return v;
}

void Prep::stage(const std::string& path, View v, Undo* undo) {
  auto it = pending_.find(path);
  if (undo) undo->emplace_back(path, it == pending_.end() ? std::nullopt : std::optional<Staged>(it->second));
  Staged s;
  if (v.exists) s.view = std::move(v);
  s.mark = mark_;
  pending_[path] = std::move(s);
  staged_order_.emplace_back(mark_, path);
}

void Prep::retire(uint64_t mark) {
  while (!staged_order_.empty() && staged_order_.front().first <= mark) {
    auto it = pending_.find(staged_order_.front().second);
    // Staged again by a later txn (or rolled back to an older entry, retired by its own mark):
    // only the txn that staged an entry last may retire it.
    if (it != pending_.end() && it->second.mark == staged_order_.front().first) pending_.erase(it);
    staged_order_.pop_front();
  }
}

Prep::Outcome Prep::prep_create(OpCode type, const wire::CreateTTLRequest& req, const AuthIds& auth, Undo* undo) {
  auto mode = wire::create_mode_from_flags(req.flags);
  if (!mode) return Err::badArguments;
  int64_t ttl = type == OpCode::createTTL ? req.ttl : -1;
  if (wire::is_ttl(*mode) && !extended_types_) return Err::unimplemented;
  if (wire::is_ttl(*mode) ? (ttl <= 0 || ttl > ephemeral::max_ttl) : ttl >= 0) return Err::badArguments;
  if (type == OpCode::createTTL && !wire::is_ttl(*mode)) return Err::badArguments;

  std::string path = req.path;
  auto slash = path.rfind('/');
  if (slash == std::string::npos || path.find('\0') != std::string::npos) return Err::badArguments;
  auto acl = fixup_acl(req.acl, auth, sasl_acls_);
  if (acl.empty()) return Err::invalidACL;
  std::string parent_name(slash == 0 ? std::string_view("/") : std::string_view(path).substr(0, slash));
  auto parent = view(parent_name);
  if (!parent) return Err::noNode;
  if (!allows_(*parent->acl, wire::perms::create, auth)) return Err::noAuth;
  if (wire::is_sequential(*mode)) {
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "%010d", parent->creates);
    path += suffix;
  }
  if (!valid_path(path)) return Err::badArguments;
  if (auto existing = view(path); existing) return Err::nodeExists;
  if (ephemeral::is_session(parent->ephemeralOwner)) return Err::noChildrenForEphemerals;
  if (Err q = check_quota(path, 1, req.data ? static_cast<int64_t>(req.data->size()) : 0); q != Err::ok) return q;

  // The opcode, not the flags, makes a container (ZooKeeper's create txn has no container form).
  int64_t owner = 0;
  if (type == OpCode::createContainer) {
    owner = ephemeral::container;
  } else if (wire::is_ttl(*mode)) {
    owner = ephemeral::ttl_owner(ttl);
  } else if (wire::is_ephemeral(*mode)) {
    owner = -1;  // replaced by the session below, by the caller's context
  }
  View p = *parent;
  p.creates += 1;
  p.children += 1;
  stage(parent_name, p, undo);
  View n;
  n.exists = true;
  n.ephemeralOwner = owner;
  n.acl = std::make_shared<const wire::AclList>(acl);
  stage(path, n, undo);
  return CreateTxn{path, req.data, std::move(acl), owner, p.creates};
}

Prep::Outcome Prep::prep_delete(const wire::DeleteRequest& req, const AuthIds& auth, Undo* undo) {
  const std::string& path = req.path;
  auto slash = path.rfind('/');
  if (slash == std::string::npos || path.find('\0') != std::string::npos || DataTree::is_special(path))
    return Err::badArguments;
  std::string parent_name(slash == 0 ? std::string_view("/") : std::string_view(path).substr(0, slash));
  auto parent = view(parent_name);
  if (!parent) return Err::noNode;
  if (!allows_(*parent->acl, wire::perms::remove, auth)) return Err::noAuth;
  auto node = view(path);
  if (!node) return Err::noNode;
  if (!next_version(node->version, req.version)) return Err::badVersion;
  if (node->children > 0) return Err::notEmpty;
  View p = *parent;
  p.children -= 1;
  stage(parent_name, p, undo);
  stage(path, View{}, undo);
  return DeleteTxn{path};
}

Prep::Outcome Prep::prep_set_data(const wire::SetDataRequest& req, const AuthIds& auth, Undo* undo) {
  if (!valid_path(req.path)) return Err::badArguments;
  auto node = view(req.path);
  if (!node) return Err::noNode;
  if (!allows_(*node->acl, wire::perms::write, auth)) return Err::noAuth;
  if (const Node* now = tree_.find(req.path)) {
    auto size = [](const wire::Bytes& d) { return d ? static_cast<int64_t>(d->size()) : 0; };
    if (Err q = check_quota(req.path, 0, size(req.data) - now->data_size()); q != Err::ok) return q;
  }
  auto v = next_version(node->version, req.version);
  if (!v) return Err::badVersion;
  node->version = *v;
  stage(req.path, *node, undo);
  return SetDataTxn{req.path, req.data, *v};
}

Prep::Outcome Prep::prep_reconfig(const wire::ReconfigRequest& req, const AuthIds& auth) {
  // Without a gate (a tree no ensemble serves) there is nothing to reconfigure; ZooKeeper's
  // reconfigEnabled defaults to false.
  if (!reconfig_) return Err::reconfigDisabled;
  const Node* node = tree_.find(reconfig::config_node);
  if (!node) return Err::noNode;
  auto planned = reconfig::plan(req, node->data(), *reconfig_);
  if (auto* e = std::get_if<Err>(&planned)) return *e;
  // Last, as ZooKeeper checks it: the super user, or write permission on /zookeeper/config.
  auto config = view(std::string(reconfig::config_node));
  if (!config || !allows_(*config->acl, wire::perms::write, auth)) return Err::noAuth;
  return SetDataTxn{std::string(reconfig::config_node), std::get<reconfig::Plan>(std::move(planned)).text, -1};
}

Prep::Outcome Prep::prep_set_acl(const wire::SetACLRequest& req, const AuthIds& auth, Undo* undo) {
  if (!valid_path(req.path)) return Err::badArguments;
  auto acl = fixup_acl(req.acl, auth, sasl_acls_);
  if (acl.empty()) return Err::invalidACL;
  auto node = view(req.path);
  if (!node) return Err::noNode;
  if (!allows_(*node->acl, wire::perms::admin, auth)) return Err::noAuth;
  auto v = next_version(node->aversion, req.version);
  if (!v) return Err::badVersion;
  node->aversion = *v;
  node->acl = std::make_shared<const wire::AclList>(acl);
  stage(req.path, *node, undo);
  return SetAclTxn{req.path, std::move(acl), *v};
}

Prep::Outcome Prep::prep_check(const wire::CheckVersionRequest& req, const AuthIds& auth) {
  if (!valid_path(req.path)) return Err::badArguments;
  auto node = view(req.path);
  if (!node) return Err::noNode;
  if (!allows_(*node->acl, wire::perms::read, auth)) return Err::noAuth;
  if (!next_version(node->version, req.version)) return Err::badVersion;
  return CheckTxn{req.path};
}

Prep::Outcome Prep::prep_op(OpCode type, const wire::MultiOpRecord& rec, const AuthIds& auth, Undo* undo) {
  return std::visit(
      [&](const auto& r) -> Outcome {
        using R = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<R, wire::CreateRequest>) {
          return prep_create(type, wire::CreateTTLRequest{r.path, r.data, r.acl, r.flags, -1}, auth, undo);
        } else if constexpr (std::is_same_v<R, wire::CreateTTLRequest>) {
          return prep_create(type, r, auth, undo);
        } else if constexpr (std::is_same_v<R, wire::DeleteRequest>) {
          return prep_delete(r, auth, undo);
        } else if constexpr (std::is_same_v<R, wire::SetDataRequest>) {
          return prep_set_data(r, auth, undo);
        } else if constexpr (std::is_same_v<R, wire::CheckVersionRequest>) {
          return prep_check(r, auth);
        } else {
          return Err::badArguments;
        }
      },
      rec);
}

namespace {
// Inside a multi ZooKeeper rebuilds each create from its flags (MultiOperationRecord turns it
// into Op.create(flags)): flags, not the opcode, make a container or a TTL node, create2 becomes
// a create, and flags it does not know mean persistent. Standalone creates go by their opcode.
std::pair<OpCode, wire::MultiOpRecord> multi_create_kind(OpCode type, const wire::MultiOpRecord& rec) {
  auto kind = [](int32_t& flags) {
    auto mode = wire::create_mode_from_flags(flags);
    if (!mode) {
      flags = 0;
      return OpCode::create;
    }
    if (*mode == wire::CreateMode::container) return OpCode::createContainer;
    return wire::is_ttl(*mode) ? OpCode::createTTL : OpCode::create;
  };
  wire::MultiOpRecord out = rec;
  if (auto* c = std::get_if<wire::CreateRequest>(&out)) {
    OpCode k = kind(c->flags);
    // A TTL mode in a record without a ttl: ZooKeeper cannot build that op either.
    return {k == OpCode::createTTL ? type : k, std::move(out)};
  }
  if (auto* c = std::get_if<wire::CreateTTLRequest>(&out)) return {kind(c->flags), std::move(out)};
  return {type, std::move(out)};
}
}  // namespace

TxnBody Prep::prep_multi(std::string_view body, const AuthIds& auth) {
  auto decoded = wire::decode_multi(body, false);
  if (decoded.error) return ErrorTxn{static_cast<int32_t>(Err::marshallingError)};
  MultiTxn m;
  Undo undo;
  bool failed = false;
  for (const auto& op : decoded.ops) {
    if (failed) {
      m.ops.push_back({-1, ErrorTxn{static_cast<int32_t>(Err::runtimeInconsistency)}});
      continue;
    }
    auto [type, record] = multi_create_kind(op.type, op.record);
    Outcome o = prep_op(type, record, auth, &undo);
    if (auto* e = std::get_if<Err>(&o)) {
      failed = true;
      // ZooKeeper reports the ops before the failure as error results with code 0.
      for (auto& done : m.ops) done = SubTxn{-1, ErrorTxn{0}};
      m.ops.push_back({-1, ErrorTxn{static_cast<int32_t>(*e)}});
    } else {
      m.ops.push_back({static_cast<int32_t>(type), std::get<SubTxnBody>(std::move(o))});
    }
  }
  if (failed) {
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
      if (!it->second)
        pending_.erase(it->first);
      else
        pending_[it->first] = *it->second;
    }
  }
  return m;
}

Txn Prep::prepare(const PrepRequest& r) {
  ++mark_;
  Txn t;
  t.session = r.session;
  t.cxid = r.cxid;
  t.time = r.now_ms;
  t.type = static_cast<int32_t>(r.type);
  const AuthIds& auth = *r.auth;
  auto finish = [&](Outcome o) {
    if (auto* e = std::get_if<Err>(&o)) {
      t.body = ErrorTxn{static_cast<int32_t>(*e)};
    } else if (auto* a = std::get_if<SetAclTxn>(&o)) {
      t.body = std::move(*a);
    } else {
      t.body = std::visit([](auto&& b) -> TxnBody { return std::move(b); }, std::get<SubTxnBody>(std::move(o)));
    }
  };
  // Decodes the request record R and prepares it with `fn`; a record that does not decode is
  // a MarshallingError, as in ZooKeeper.
  auto with = [&]<class R>(auto&& fn) {
    auto req = wire::decode<R>(r.body);
    if (!req)
      t.body = ErrorTxn{static_cast<int32_t>(Err::marshallingError)};
    else
      finish(fn(*req));
  };
  switch (r.type) {
    case OpCode::create:
    case OpCode::create2:
    case OpCode::createContainer:
      with.operator()<wire::CreateRequest>([&](const wire::CreateRequest& q) {
        return prep_create(r.type, wire::CreateTTLRequest{q.path, q.data, q.acl, q.flags, -1}, auth, nullptr);
      });
      break;
    case OpCode::createTTL:
      with.operator()<wire::CreateTTLRequest>([&](const auto& q) { return prep_create(r.type, q, auth, nullptr); });
      break;
    case OpCode::remove:
      with.operator()<wire::DeleteRequest>([&](const auto& q) { return prep_delete(q, auth, nullptr); });
      break;
    case OpCode::setData:
      with.operator()<wire::SetDataRequest>([&](const auto& q) { return prep_set_data(q, auth, nullptr); });
      break;
    case OpCode::setACL:
      with.operator()<wire::SetACLRequest>([&](const auto& q) { return prep_set_acl(q, auth, nullptr); });
      break;
    case OpCode::check:
      with.operator()<wire::CheckVersionRequest>([&](const auto& q) { return prep_check(q, auth); });
      break;
    case OpCode::multi:
      t.body = prep_multi(r.body, auth);
      break;
    case OpCode::reconfig:
      with.operator()<wire::ReconfigRequest>([&](const auto& q) { return prep_reconfig(q, auth); });
      break;
    default:
      t.body = ErrorTxn{static_cast<int32_t>(Err::unimplemented)};
      break;
  }
  // An ephemeral belongs to the session that created it.
  auto own = [&](CreateTxn& c) {
    if (c.ephemeralOwner == -1) {
      c.ephemeralOwner = r.session;
      if (auto it = pending_.find(c.path); it != pending_.end() && it->second.view)
        it->second.view->ephemeralOwner = r.session;
    }
  };
  if (auto* c = std::get_if<CreateTxn>(&t.body)) own(*c);
  if (auto* m = std::get_if<MultiTxn>(&t.body))
    for (auto& op : m->ops)
      if (auto* c = std::get_if<CreateTxn>(&op.body)) own(*c);
  return t;
}

std::vector<std::string> Prep::ephemerals_of(SessionId s) const {
  std::vector<std::string> out;
  for (auto& p : tree_.ephemerals_of(s))
    if (!pending_.count(p)) out.push_back(std::move(p));
  // In the overlay: created (or kept) by txns in flight, and not deleted by them.
  for (const auto& [path, staged] : pending_)
    if (staged.view && staged.view->ephemeralOwner == s) out.push_back(path);
  // Children before parents cannot matter (an ephemeral has no children); a fixed order keeps
  // the txn the same on every replica that would prepare it.
  std::sort(out.begin(), out.end());
  return out;
}

// ZooKeeper's closeSession counts the session's outstanding changes too: an ephemeral whose
// create is still in flight commits before this close and must go with it.
Txn Prep::close_session(SessionId s, int32_t cxid, int64_t now_ms) {
  ++mark_;
  Txn t;
  t.session = s;
  t.cxid = cxid;
  t.time = now_ms;
  t.type = static_cast<int32_t>(OpCode::closeSession);
  CloseSessionTxn c;
  c.ephemerals = ephemerals_of(s);
  for (const auto& p : c.ephemerals) {
    std::string parent_name(parent_path(p));
    if (auto parent = view(parent_name)) {
      parent->children -= 1;
      stage(parent_name, *parent, nullptr);
    }
    stage(p, View{}, nullptr);
  }
  t.body = std::move(c);
  return t;
}

std::optional<Txn> Prep::expire_node(const std::string& path, int64_t now_ms) {
  ++mark_;
  const Node* n = tree_.find(path);
  if (!n || n->child_count() > 0 || pending_.count(path)) return std::nullopt;
  bool due = false;
  if (ephemeral::is_container(n->ephemeralOwner)) {
    due = n->creates > 0;  // a container that never had a child is left alone
  } else if (ephemeral::is_ttl(n->ephemeralOwner)) {
    due = now_ms - n->mtime > ephemeral::ttl_of(n->ephemeralOwner);
  }
  if (!due) return std::nullopt;
  std::string parent_name(parent_path(path));
  auto parent = view(parent_name);
  if (!parent) return std::nullopt;
  parent->children -= 1;
  stage(parent_name, *parent, nullptr);
  stage(path, View{}, nullptr);
  Txn t;
  t.time = now_ms;
  t.type = static_cast<int32_t>(OpCode::deleteContainer);
  t.body = DeleteTxn{path};
  return t;
}

}  // namespace warden::server
