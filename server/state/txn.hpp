// A txn: the deterministic description of one change to the tree, made by prep and applied
// by every replica in zxid order. It carries everything apply needs (its time, its session,
// resolved sequential names, ephemeral owners, the parent's create counter), so applying the
// same txns in the same order gives the same tree everywhere, also when replayed from a log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "wire/jute.hpp"
#include "wire/records.hpp"

namespace warden::server {

using wire::Zxid;
using wire::SessionId;

struct CreateTxn {
  std::string path;
  wire::Bytes data;
  wire::AclList acl;
  int64_t ephemeralOwner = 0;  // session, container marker or TTL encoding (see ephemeral.hpp)
  int32_t parentCreates = 0;   // the parent's create counter after this create
  WIRE_FIELDS(path, data, acl, ephemeralOwner, parentCreates)
};
struct DeleteTxn {
  std::string path;
  WIRE_FIELDS(path)
};
struct SetDataTxn {
  std::string path;
  wire::Bytes data;
  int32_t version = 0;  // the new version
  WIRE_FIELDS(path, data, version)
};
struct SetAclTxn {
  std::string path;
  wire::AclList acl;
  int32_t version = 0;  // the new aversion
  WIRE_FIELDS(path, acl, version)
};
struct CheckTxn {
  std::string path;
  WIRE_FIELDS(path)
};
struct ErrorTxn {
  int32_t err = 0;
  WIRE_FIELDS(err)
};
struct CreateSessionTxn {
  int32_t timeout = 0;
  std::string passwd;
  WIRE_FIELDS(timeout, passwd)
};
struct CloseSessionTxn {
  std::vector<std::string> ephemerals;  // deleted with the session, in this order
  WIRE_FIELDS(ephemerals)
};

// One op of a multi. `type` is the client's opcode (it selects the reply record) or -1.
using SubTxnBody = std::variant<CreateTxn, DeleteTxn, SetDataTxn, CheckTxn, ErrorTxn>;
struct SubTxn {
  int32_t type = 0;
  SubTxnBody body;
};
struct MultiTxn {
  std::vector<SubTxn> ops;
};

using TxnBody = std::variant<CreateTxn, DeleteTxn, SetDataTxn, SetAclTxn, CheckTxn, ErrorTxn,
                             CreateSessionTxn, CloseSessionTxn, MultiTxn>;

struct Txn {
  SessionId session = 0;
  int32_t cxid = 0;
  int64_t time = 0;  // ms since the epoch, the leader's clock when prep made it
  int32_t type = 0;  // the request's opcode
  TxnBody body;
};

std::string encode_txn(const Txn& t);
std::optional<Txn> decode_txn(std::string_view bytes);
// A txn's time alone (the leader's clock when prep made it), without decoding the rest.
std::optional<int64_t> txn_time(std::string_view bytes);

// ephemeralOwner encodings shared with ZooKeeper (its EphemeralType): a container is the lone
// high bit; a TTL node is 0xff in the high byte and the TTL in the low 40 bits.
namespace ephemeral {
constexpr int64_t container = INT64_MIN;
constexpr uint64_t extended_mask = 0xff00000000000000ULL;
constexpr int64_t max_ttl = 0xffffffffffLL;
constexpr int64_t ttl_owner(int64_t ttl) { return static_cast<int64_t>(extended_mask | uint64_t(ttl)); }
constexpr bool is_container(int64_t owner) { return owner == container; }
constexpr bool is_ttl(int64_t owner) {
  return (uint64_t(owner) & extended_mask) == extended_mask && owner != container;
}
constexpr int64_t ttl_of(int64_t owner) { return owner & max_ttl; }
// A real session owns the node: the only kind that forbids children and dies with a session.
constexpr bool is_session(int64_t owner) { return owner != 0 && !is_container(owner) && !is_ttl(owner); }
}  // namespace ephemeral

}  // namespace warden::server
