// Prep, the first stage of the write path (ZooKeeper's PrepRequestProcessor): checks a write
// request against the tree plus the changes already prepared but not yet applied, and turns it
// into a txn. A failed check is a txn too (ErrorTxn), so the failure reaches its session in
// order. Within a multi, each op sees the ops before it; a failed multi leaves no trace.
//
// Invariant: `pending_` holds, for every path a prepared-but-unapplied txn touches, the node as
// it will be once those txns apply; retire() drops what the tree has caught up with.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/acl.hpp"
#include "server/data_tree.hpp"
#include "server/txn.hpp"

namespace warden::server {

struct PrepRequest {
  SessionId session = 0;
  int32_t cxid = 0;
  wire::OpCode type = wire::OpCode::error;
  std::string_view body;  // the request record, after the header
  const AuthIds* auth = nullptr;
  int64_t now_ms = 0;
};

class Prep {
 public:
  Prep(const DataTree& tree, bool extended_types, bool enforce_quota = false)
      : tree_(tree), extended_types_(extended_types), enforce_quota_(enforce_quota) {}

  // Any write opcode (create*, delete, setData, setACL, check, multi) into its txn.
  Txn prepare(const PrepRequest& r);
  Txn close_session(SessionId s, int32_t cxid, int64_t now_ms);
  // The txn removing an expired container or TTL node at `path`, if it still qualifies.
  std::optional<Txn> expire_node(const std::string& path, int64_t now_ms);

  // Every txn handed out so far has been applied: forget the overlay.
  void retire_all() { pending_.clear(); }

 private:
  struct View {
    bool exists = false;
    int32_t version = 0, creates = 0, aversion = 0, children = 0;
    int64_t ephemeralOwner = 0;
    std::shared_ptr<const wire::AclList> acl;
  };
  using Undo = std::vector<std::pair<std::string, std::optional<View>>>;

  std::optional<View> view(const std::string& path) const;
  void stage(const std::string& path, View v, Undo* undo);

  // Each returns the txn body, or the error code for an ErrorTxn.
  using Outcome = std::variant<SubTxnBody, SetAclTxn, wire::Err>;
  Outcome prep_create(wire::OpCode type, const wire::CreateTTLRequest& req, const AuthIds& auth, Undo* undo);
  Outcome prep_delete(const wire::DeleteRequest& req, const AuthIds& auth, Undo* undo);
  Outcome prep_set_data(const wire::SetDataRequest& req, const AuthIds& auth, Undo* undo);
  Outcome prep_set_acl(const wire::SetACLRequest& req, const AuthIds& auth, Undo* undo);
  Outcome prep_check(const wire::CheckVersionRequest& req, const AuthIds& auth);
  Outcome prep_op(wire::OpCode type, const wire::MultiOpRecord& rec, const AuthIds& auth, Undo* undo);
  TxnBody prep_multi(std::string_view body, const AuthIds& auth);

  const DataTree& tree_;
  bool extended_types_;
  bool enforce_quota_;
  int64_t quota_logged_ms_ = 0;  // soft-limit lines: at most one a second
  // ZooKeeper's checkQuota: a change of `count_diff` nodes and `bytes_diff` bytes under a quota.
  // Past a limit it logs; past a hard limit, with enforceQuota, the change is refused.
  wire::Err check_quota(const std::string& path, int64_t count_diff, int64_t bytes_diff);
  std::unordered_map<std::string, std::optional<View>> pending_;
};

}  // namespace warden::server
