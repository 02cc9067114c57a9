// Every record of ZooKeeper's client protocol (zookeeper.jute, modules `data` and `proto`), with
// its fields in wire order. Records with optional trailing fields (the connect handshake) and
// the multi envelope, which is not a plain record, have their own codecs at the end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "wire/codes.hpp"
#include "wire/jute.hpp"

namespace warden::wire {

using Zxid = int64_t;
using SessionId = int64_t;

// ---- data ----
struct Id {
  std::string scheme;
  std::string id;
  WIRE_FIELDS(scheme, id)
  auto operator<=>(const Id&) const = default;
};

struct Acl {
  int32_t perms = 0;
  Id id;
  WIRE_FIELDS(perms, id)
  auto operator<=>(const Acl&) const = default;
};
using AclList = std::vector<Acl>;

struct Stat {
  int64_t czxid = 0;
  int64_t mzxid = 0;
  int64_t ctime = 0;
  int64_t mtime = 0;
  int32_t version = 0;
  int32_t cversion = 0;
  int32_t aversion = 0;
  int64_t ephemeralOwner = 0;
  int32_t dataLength = 0;
  int32_t numChildren = 0;
  int64_t pzxid = 0;
  WIRE_FIELDS(czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner, dataLength,
              numChildren, pzxid)
  bool operator==(const Stat&) const = default;
};

// ---- handshake ----
// ConnectRequest/Response end with a readOnly byte that clients older than 3.4 do not send;
// `read_only` is empty when the byte is absent, and the server answers in the same form.
struct ConnectRequest {
  int32_t protocolVersion = 0;
  int64_t lastZxidSeen = 0;
  int32_t timeOut = 0;
  int64_t sessionId = 0;
  Bytes passwd;
  std::optional<bool> read_only;
};
struct ConnectResponse {
  int32_t protocolVersion = 0;
  int32_t timeOut = 0;
  int64_t sessionId = 0;
  Bytes passwd;
  std::optional<bool> read_only;
};
std::optional<ConnectRequest> decode_connect_request(std::string_view in);
std::string encode_connect_request(const ConnectRequest& r);
std::optional<ConnectResponse> decode_connect_response(std::string_view in);
std::string encode_connect_response(const ConnectResponse& r);

// ---- headers ----
struct RequestHeader {
  int32_t xid = 0;
  int32_t type = 0;
  WIRE_FIELDS(xid, type)
};
struct ReplyHeader {
  int32_t xid = 0;
  int64_t zxid = 0;
  int32_t err = 0;
  WIRE_FIELDS(xid, zxid, err)
};
struct MultiHeader {
  int32_t type = 0;
  bool done = false;
  int32_t err = 0;
  WIRE_FIELDS(type, done, err)
};

// ---- session-level requests ----
struct AuthPacket {
  int32_t type = 0;
  std::string scheme;
  Bytes auth;
  WIRE_FIELDS(type, scheme, auth)
};
struct SetWatches {
  int64_t relativeZxid = 0;
  std::vector<std::string> dataWatches;
  std::vector<std::string> existWatches;
  std::vector<std::string> childWatches;
  WIRE_FIELDS(relativeZxid, dataWatches, existWatches, childWatches)
};
struct SetWatches2 {
  int64_t relativeZxid = 0;
  std::vector<std::string> dataWatches;
  std::vector<std::string> existWatches;
  std::vector<std::string> childWatches;
  std::vector<std::string> persistentWatches;
  std::vector<std::string> persistentRecursiveWatches;
  WIRE_FIELDS(relativeZxid, dataWatches, existWatches, childWatches, persistentWatches,
              persistentRecursiveWatches)
};
struct WatcherEvent {
  int32_t type = 0;
  int32_t state = 0;
  std::string path;
  WIRE_FIELDS(type, state, path)
};
struct AddWatchRequest {
  std::string path;
  int32_t mode = 0;
  WIRE_FIELDS(path, mode)
};
struct CheckWatchesRequest {
  std::string path;
  int32_t type = 0;
  WIRE_FIELDS(path, type)
};
struct RemoveWatchesRequest {
  std::string path;
  int32_t type = 0;
  WIRE_FIELDS(path, type)
};
struct GetSaslRequest {
  Bytes token;
  WIRE_FIELDS(token)
};
struct SetSaslResponse {
  Bytes token;
  WIRE_FIELDS(token)
};
struct ClientInfo {
  std::string authScheme;
  std::string user;
  WIRE_FIELDS(authScheme, user)
};
struct WhoAmIResponse {
  std::vector<ClientInfo> clientInfo;
  WIRE_FIELDS(clientInfo)
};

// ---- node requests and responses ----
struct CreateRequest {
  std::string path;
  Bytes data;
  AclList acl;
  int32_t flags = 0;
  WIRE_FIELDS(path, data, acl, flags)
};
struct CreateTTLRequest {
  std::string path;
  Bytes data;
  AclList acl;
  int32_t flags = 0;
  int64_t ttl = 0;
  WIRE_FIELDS(path, data, acl, flags, ttl)
};
struct CreateResponse {
  std::string path;
  WIRE_FIELDS(path)
};
struct Create2Response {
  std::string path;
  Stat stat;
  WIRE_FIELDS(path, stat)
};
struct DeleteRequest {
  std::string path;
  int32_t version = -1;
  WIRE_FIELDS(path, version)
};
// Exists, GetData, GetChildren and GetChildren2 requests share one shape.
struct PathWatchRequest {
  std::string path;
  bool watch = false;
  WIRE_FIELDS(path, watch)
};
using ExistsRequest = PathWatchRequest;
using GetDataRequest = PathWatchRequest;
using GetChildrenRequest = PathWatchRequest;
using GetChildren2Request = PathWatchRequest;
struct StatResponse {
  Stat stat;
  WIRE_FIELDS(stat)
};
using ExistsResponse = StatResponse;
using SetDataResponse = StatResponse;
using SetACLResponse = StatResponse;
struct GetDataResponse {
  Bytes data;
  Stat stat;
  WIRE_FIELDS(data, stat)
};
struct SetDataRequest {
  std::string path;
  Bytes data;
  int32_t version = -1;
  WIRE_FIELDS(path, data, version)
};
// GetACL, Sync, GetAllChildrenNumber and GetEphemerals requests are a single path.
struct PathRequest {
  std::string path;
  WIRE_FIELDS(path)
};
using GetACLRequest = PathRequest;
using SyncRequest = PathRequest;
using SyncResponse = PathRequest;
using GetAllChildrenNumberRequest = PathRequest;
using GetEphemeralsRequest = PathRequest;
struct GetACLResponse {
  AclList acl;
  Stat stat;
  WIRE_FIELDS(acl, stat)
};
struct SetACLRequest {
  std::string path;
  AclList acl;
  int32_t version = -1;
  WIRE_FIELDS(path, acl, version)
};
struct GetChildrenResponse {
  std::vector<std::string> children;
  WIRE_FIELDS(children)
};
struct GetChildren2Response {
  std::vector<std::string> children;
  Stat stat;
  WIRE_FIELDS(children, stat)
};
struct CheckVersionRequest {
  std::string path;
  int32_t version = -1;
  WIRE_FIELDS(path, version)
};
struct GetAllChildrenNumberResponse {
  int32_t totalNumber = 0;
  WIRE_FIELDS(totalNumber)
};
struct GetEphemeralsResponse {
  std::vector<std::string> ephemerals;
  WIRE_FIELDS(ephemerals)
};
struct ErrorResponse {
  int32_t err = 0;
  WIRE_FIELDS(err)
};
struct ReconfigRequest {
  // Each may be null (ZooKeeper's clients send null for what they leave out): a non-null
  // newMembers asks for a non-incremental change.
  Bytes joiningServers;
  Bytes leavingServers;
  Bytes newMembers;
  int64_t curConfigId = 0;
  WIRE_FIELDS(joiningServers, leavingServers, newMembers, curConfigId)
};

// ---- multi ----
// A multi request is a run of (MultiHeader, op record) ended by a header with done=true.
using MultiOpRecord = std::variant<CreateRequest, CreateTTLRequest, DeleteRequest, SetDataRequest,
                                   CheckVersionRequest, PathWatchRequest>;
struct MultiOp {
  OpCode type;
  MultiOpRecord record;
};
// The most ops a multi may hold; a frame is already bounded by jute.maxbuffer, this bounds the
// vector built from it even when every op is a few bytes.
constexpr size_t max_multi_ops = 100000;

enum class MultiDecodeError { malformed, unsupportedOp };
struct MultiDecoded {
  std::vector<MultiOp> ops;
  std::optional<MultiDecodeError> error;
};
// `read_only` selects multiRead (getData/getChildren ops) over multi (write ops).
MultiDecoded decode_multi(std::string_view in, bool read_only);
std::string encode_multi_request(const std::vector<MultiOp>& ops);

using MultiResultRecord = std::variant<std::monostate, CreateResponse, Create2Response,
                                       StatResponse, GetDataResponse, GetChildrenResponse,
                                       ErrorResponse>;
struct MultiResult {
  int32_t type = 0;  // the op's opcode, or -1 for an error result
  int32_t err = 0;
  MultiResultRecord record;
};
void encode_multi_response(Writer& w, const std::vector<MultiResult>& results);
std::optional<std::vector<MultiResult>> decode_multi_response(std::string_view in);

}  // namespace warden::wire
