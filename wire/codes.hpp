// The numbers of the ZooKeeper client protocol: opcodes, error codes, watch event types and
// session states, the special xids, create modes and permission bits. Values are ZooKeeper's
// (ZooDefs.OpCode, KeeperException.Code, Watcher.Event); nothing here may be renumbered.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace warden::wire {

enum class OpCode : int32_t {
  notification = 0,
  create = 1,
  remove = 2,  // "delete" in ZooKeeper; a C++ keyword
  exists = 3,
  getData = 4,
  setData = 5,
  getACL = 6,
  setACL = 7,
  getChildren = 8,
  sync = 9,
  ping = 11,
  getChildren2 = 12,
  check = 13,
  multi = 14,
  create2 = 15,
  reconfig = 16,
  checkWatches = 17,
  removeWatches = 18,
  createContainer = 19,
  deleteContainer = 20,
  createTTL = 21,
  multiRead = 22,
  auth = 100,
  setWatches = 101,
  sasl = 102,
  getEphemerals = 103,
  getAllChildrenNumber = 104,
  setWatches2 = 105,
  addWatch = 106,
  whoAmI = 107,
  createSession = -10,
  closeSession = -11,
  error = -1,
};

enum class Err : int32_t {
  ok = 0,
  systemError = -1,
  runtimeInconsistency = -2,
  dataInconsistency = -3,
  connectionLoss = -4,
  marshallingError = -5,
  unimplemented = -6,
  operationTimeout = -7,
  badArguments = -8,
  unknownSession = -12,
  newConfigNoQuorum = -13,
  reconfigInProgress = -14,
  apiError = -100,
  noNode = -101,
  noAuth = -102,
  badVersion = -103,
  noChildrenForEphemerals = -108,
  nodeExists = -110,
  notEmpty = -111,
  sessionExpired = -112,
  invalidCallback = -113,
  invalidACL = -114,
  authFailed = -115,
  sessionMoved = -118,
  notReadOnly = -119,
  ephemeralOnLocalSession = -120,
  noWatcher = -121,
  requestTimeout = -122,
  reconfigDisabled = -123,
  sessionClosedRequireSasl = -124,
  quotaExceeded = -125,
  throttledOp = -127,
};

enum class EventType : int32_t {
  none = -1,
  nodeCreated = 1,
  nodeDeleted = 2,
  nodeDataChanged = 3,
  nodeChildrenChanged = 4,
  dataWatchRemoved = 5,
  childWatchRemoved = 6,
  persistentWatchRemoved = 7,
};

enum class KeeperState : int32_t {
  disconnected = 0,
  syncConnected = 3,
  authFailed = 4,
  connectedReadOnly = 5,
  saslAuthenticated = 6,
  closed = 7,
  expired = -112,
};

// Xids with a fixed meaning in request and reply headers.
namespace xid {
constexpr int32_t notification = -1;
constexpr int32_t ping = -2;
constexpr int32_t auth = -4;
constexpr int32_t setWatches = -8;
}  // namespace xid

namespace perms {
constexpr int32_t read = 1;
constexpr int32_t write = 2;
constexpr int32_t create = 4;
constexpr int32_t remove = 8;
constexpr int32_t admin = 16;
constexpr int32_t all = 31;
}  // namespace perms

// The `flags` of a create request (ZooKeeper's CreateMode).
enum class CreateMode : int32_t {
  persistent = 0,
  ephemeral = 1,
  persistentSequential = 2,
  ephemeralSequential = 3,
  container = 4,
  persistentWithTtl = 5,
  persistentSequentialWithTtl = 6,
};

inline std::optional<CreateMode> create_mode_from_flags(int32_t flags) {
  if (flags < 0 || flags > 6) return std::nullopt;
  return static_cast<CreateMode>(flags);
}
inline bool is_sequential(CreateMode m) {
  return m == CreateMode::persistentSequential || m == CreateMode::ephemeralSequential ||
         m == CreateMode::persistentSequentialWithTtl;
}
inline bool is_ephemeral(CreateMode m) {
  return m == CreateMode::ephemeral || m == CreateMode::ephemeralSequential;
}
inline bool is_ttl(CreateMode m) {
  return m == CreateMode::persistentWithTtl || m == CreateMode::persistentSequentialWithTtl;
}

// The requests that change the tree (ZooKeeper's write requests).
inline bool is_write(OpCode op) {
  switch (op) {
    case OpCode::create:
    case OpCode::create2:
    case OpCode::createContainer:
    case OpCode::createTTL:
    case OpCode::remove:
    case OpCode::setData:
    case OpCode::setACL:
    case OpCode::check:
    case OpCode::multi:
    case OpCode::reconfig:  // it sets /zookeeper/config, through the leader
      return true;
    default:
      return false;
  }
}
// What a follower forwards to its leader, so that the leader answers it: the writes, sync and
// closeSession. A reply to one shows that the leader heard the session then.
inline bool goes_to_leader(OpCode op) { return is_write(op) || op == OpCode::sync || op == OpCode::closeSession; }

// The default jute.maxbuffer: the largest frame either side accepts.
constexpr int32_t default_max_buffer = 0xfffff;

std::string_view err_name(Err e);

}  // namespace warden::wire
