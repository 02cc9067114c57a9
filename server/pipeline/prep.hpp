// Prep, the first stage of the write path (ZooKeeper's PrepRequestProcessor): checks a write
// request against the tree plus the changes already prepared but not yet applied, and turns it
// into a txn. A failed check is a txn too (ErrorTxn), so the failure reaches its session in
// order. Within a multi, each op sees the ops before it; a failed multi leaves no trace.
//
// Invariant: `pending_` holds, for every path a prepared-but-unapplied txn touches, the node as
// it will be once those txns apply, and nothing else: each entry carries the mark of the last
// txn that staged it, and retire(mark) drops what the tree has caught up with once that txn is
// applied. So the overlay holds only what is in flight, however long writes keep coming.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/reconfig/reconfig_request.hpp"
#include "server/state/acl.hpp"
#include "server/state/data_tree.hpp"
#include "server/state/txn.hpp"

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
  Prep(const DataTree& tree, bool extended_types, bool enforce_quota = false, bool sasl_acls = false,
       AclCheck allows = {})
      : tree_(tree),
        extended_types_(extended_types),
        enforce_quota_(enforce_quota),
        sasl_acls_(sasl_acls),
        allows_(allows) {}

  // Any write opcode (create*, delete, setData, setACL, check, multi) into its txn.
  Txn prepare(const PrepRequest& r);
  Txn close_session(SessionId s, int32_t cxid, int64_t now_ms);
  // The txn removing an expired container or TTL node at `path`, if it still qualifies.
  std::optional<Txn> expire_node(const std::string& path, int64_t now_ms);

  // Each prepare(), close_session() and expire_node() call gets the next mark; mark() is the
  // last one given. Txns are applied in the order they were prepared.
  uint64_t mark() const { return mark_; }
  // The txns up to `mark` have been applied to the tree: forget what only they staged.
  void retire(uint64_t mark);
  // Every txn handed out so far has been applied, or was taken back: forget the overlay.
  void retire_all() {
    pending_.clear();
    staged_order_.clear();
  }
  // What a reconfig is checked against (the ensemble's replicator); none: ReconfigDisabled.
  void set_reconfig(const reconfig::Gate* gate) { reconfig_ = gate; }
  // Paths in the overlay: bounded by what is in flight.
  size_t overlay_size() const { return pending_.size(); }

 private:
  struct View {
    bool exists = false;
    int32_t version = 0, creates = 0, aversion = 0, children = 0;
    int64_t ephemeralOwner = 0;
    std::shared_ptr<const wire::AclList> acl;
  };
  // A path's state once the txns in flight apply (nothing: deleted), and the mark of the last
  // txn that staged it.
  struct Staged {
    std::optional<View> view;
    uint64_t mark = 0;
  };
  using Undo = std::vector<std::pair<std::string, std::optional<Staged>>>;

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
  Outcome prep_reconfig(const wire::ReconfigRequest& req, const AuthIds& auth);

  const DataTree& tree_;
  bool extended_types_;
  bool enforce_quota_;
  bool sasl_acls_ = false;  // ACLs may name sasl ids (ZooKeeper's SASL provider is configured)
  AclCheck allows_;
  const reconfig::Gate* reconfig_ = nullptr;
  int64_t quota_logged_ms_ = 0;  // soft-limit lines: at most one a second
  // ZooKeeper's checkQuota: a change of `count_diff` nodes and `bytes_diff` bytes under a quota.
  // Past a limit it logs; past a hard limit, with enforceQuota, the change is refused.
  wire::Err check_quota(const std::string& path, int64_t count_diff, int64_t bytes_diff);
  std::unordered_map<std::string, Staged> pending_;
  // (mark, path) in staging order, for retire(); an entry whose path was staged again later
  // is skipped there.
  std::deque<std::pair<uint64_t, std::string>> staged_order_;
  uint64_t mark_ = 0;
  // Ephemerals the session will own once the txns in flight apply: the tree's, those being
  // created, less those being deleted.
  std::vector<std::string> ephemerals_of(SessionId s) const;
};

}  // namespace warden::server
