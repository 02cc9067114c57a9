// What a follower or observer sends its leader through the consensus link (the core carries it
// as an opaque Request): a client's write, close or sync to prepare and propose; a session
// this member created, to propose as a txn; the sessions its clients kept alive since the last
// tick. Encoded with the jute primitives; a member never trusts it further than its decoder.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wire/jute.hpp"
#include "wire/records.hpp"

namespace warden::server {

// The txn type of a re-attach the leader checked: not a client opcode (ZooKeeper has no such
// txn; it answers a revalidation on the side). Logged so that the member that asked learns the
// answer in order with everything else, and every member closes an older connection of it.
constexpr int32_t reattach_txn_type = -100;

struct Forwarded {
  // reattach: a client asks this member for a session it had elsewhere (password included):
  // the leader checks the session lives and makes this member its owner.
  enum Kind : int32_t { request = 1, create_session = 2, touch = 3, reattach = 4 };
  int32_t kind = 0;
  int64_t session = 0;
  int32_t cxid = 0;
  int32_t type = 0;               // request: the client's opcode
  std::string body;               // request: the record after the request header
  std::vector<wire::Id> auth;     // request: the connection's auth ids, for prep's ACL checks
  int32_t timeout = 0;            // create_session
  std::string passwd;             // create_session, reattach
  std::vector<int64_t> sessions;  // touch
  WIRE_FIELDS(kind, session, cxid, type, body, auth, timeout, passwd, sessions)
};

inline std::string encode_forwarded(const Forwarded& f) { return wire::encode(f); }
inline std::optional<Forwarded> decode_forwarded(std::string_view bytes) { return wire::decode<Forwarded>(bytes); }

}  // namespace warden::server
