// warden::client::Client: a ZooKeeper client in C++ that talks to any ZooKeeper-compatible
// server (Warden, standalone or an ensemble, and Apache ZooKeeper), on Asio, reusing wire/.
//
// A connect string "host:port,host:port[/chroot]" lists the servers (tried in random order);
// the client opens a session and keeps it: after a lost connection it re-attaches to the next
// server with the session's id and password and its lastZxidSeen (a server behind it refuses
// it, and the client tries another), replays its auth and re-registers its watches
// (setWatches2, relative to the last zxid it saw). Connection states reach the user: connected,
// suspended (the connection is lost; the session may live), reconnected, lost (suspended, and a
// session timeout has passed since the latest request the server answered was sent: the server
// may have expired the session by now, never earlier), expired (the server said so),
// auth_failed, closed. Requests made while suspended wait for the next connection, until the
// session is reported lost: then they fail with ConnectionLoss, as do new ones until a
// connection is back; requests in flight when a connection breaks fail with ConnectionLoss
// (their outcome is unknown), as in ZooKeeper's clients. After a reconnect, the watches are set
// again in setWatches2 frames of at most 128 KiB of paths each, as ZooKeeper's client splits them.
//
// Every operation is asynchronous (a callback, run on the client's own thread) with a blocking
// form that throws Error (ZooKeeper's code) on failure; the blocking forms must not be called
// from a callback (they would wait for the thread they block), and throw std::logic_error if
// they are. Watches: one-shot (exists/getData/getChildren with a watcher) and persistent
// (add_watch), delivered on the client's thread, paths relative to the chroot. Callbacks and
// listeners may run until the Client is destroyed (its close reports State::closed): what they
// touch must outlive it. A Client must not be destroyed from one of its own callbacks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "recipes/sasl_client.hpp"
#include "wire/codes.hpp"
#include "wire/records.hpp"

namespace warden::client {

using wire::AclList;
using wire::CreateMode;
using wire::Err;
using wire::EventType;
using wire::Stat;
using wire::Zxid;

enum class State { connecting, connected, suspended, reconnected, lost, expired, auth_failed, closed };
const char* state_name(State s);

// A ZooKeeper error code, with the operation and path for the message.
class Error : public std::runtime_error {
 public:
  Error(Err code, const std::string& what);
  Err code() const { return code_; }

 private:
  Err code_;
};

// A watch event: the type and the path (relative to the chroot).
struct WatchEvent {
  EventType type = EventType::none;
  std::string path;
};
using Watcher = std::function<void(const WatchEvent&)>;

// world:anyone with every permission: ZooKeeper's OPEN_ACL_UNSAFE.
AclList open_acl();

struct Options {
  std::string connect_string = "127.0.0.1:2181";
  int32_t session_timeout_ms = 30000;
  // How long start() waits for the first session before it gives up (ConnectionLoss).
  int32_t connect_timeout_ms = 15000;
  // (scheme, credentials), e.g. {"digest", "user:password"}: sent at every connection.
  std::vector<std::pair<std::string, std::string>> auth;
  // Re-attaches the session with this id and password (another Client's session_id() and
  // session_password(), as ZooKeeper's constructor with sessionId and passwd) instead of
  // opening a new one; start() throws Error(SessionExpired) if it no longer exists.
  int64_t session_id = 0;
  std::string session_password;
  // Seeds the host order; none: random.
  std::optional<uint64_t> seed;
  // How long a blocking call waits for its reply at most; past it, Error(RequestTimeout) and the
  // outcome is unknown (ZooKeeper's zookeeper.request.timeout). 0: no limit of its own, but a
  // call still ends: with its reply, ConnectionLoss when its connection breaks, or when the
  // session is reported lost (requests waiting for a connection fail then, and new ones fail at
  // once until a connection is back; at most 100,000 may wait).
  int32_t request_timeout_ms = 0;
  // TLS to the servers' secureClientPort (ZooKeeper's zookeeper.client.secure with the
  // zookeeper.ssl.* client keys), PEM files only. A certificate the CA does not vouch for, or
  // one that does not name the host connected to (when verify_hostname), fails the connection
  // as a refused one does: the client tries the next server, and start() fails with
  // ConnectionLoss; last_connection_error() says why.
  struct Tls {
    bool enabled = false;
    std::string ca_file;    // the servers' CA certificates; empty: the system's
    std::string cert_file;  // this client's certificate chain (for ssl.clientAuth=need, and x509 ids)
    std::string key_file;   // its private key
    std::string key_password;
    bool verify_hostname = true;  // as zookeeper.ssl.hostnameVerification
  } tls;
  // Follow the ensemble's member list, as Curator's EnsembleTracker does: the client watches
  // /zookeeper/config and, when a reconfig changes the members, connects from then on to the
  // client addresses the configuration names (a wildcard address: the member's quorum host),
  // moving off a server that left with its session. It follows only when the first
  // configuration it reads names the server it reached, by the address it used: through a
  // proxy, a NAT or a TLS port the configuration's addresses are not this client's, and the
  // connect string's list stays. A standalone server's empty configuration changes nothing.
  bool follow_config = true;
  // SASL on every connection before any request (ZooKeeper's JAAS Client section): DIGEST-MD5
  // with a user and password, or GSSAPI with the Kerberos credentials the environment names. A
  // failed exchange ends the client with State::auth_failed, as the Java client's AuthFailed.
  SaslSettings sasl;
};

// The parts of a connect string; throws std::invalid_argument naming what is wrong.
struct ConnectString {
  std::vector<std::pair<std::string, uint16_t>> hosts;
  std::string chroot;  // "" or "/a/b"
  static ConnectString parse(std::string_view s);
};

// The client addresses of a configuration's "server.N=host:quorum:election[:role][;[address:]port]"
// lines, in order: a wildcard (0.0.0.0, ::) or missing address is the member's quorum host.
// Lines without a client address, and lines that do not parse, are left out.
std::vector<std::pair<std::string, uint16_t>> config_client_hosts(std::string_view config);

struct MultiOp {
  enum class Kind { create, remove, set, check } kind = Kind::create;
  std::string path;
  std::string data;
  int32_t version = -1;
  CreateMode mode = CreateMode::persistent;
  AclList acl = open_acl();
  static MultiOp create(std::string path, std::string data, CreateMode mode = CreateMode::persistent);
  static MultiOp remove(std::string path, int32_t version = -1);
  static MultiOp set(std::string path, std::string data, int32_t version = -1);
  static MultiOp check(std::string path, int32_t version);
};
struct MultiResult {
  Err err = Err::ok;
  std::string path;  // create: the name made
  Stat stat;         // set
};

// While one lives on a thread, the blocking calls of every Client that thread makes give up at
// its deadline with Error(RequestTimeout) (the request's outcome is then unknown, as with
// Options::request_timeout_ms, whichever comes first). A nested one replaces it until it ends;
// none (nullopt) lifts the bound. Mutex::try_acquire bounds its requests so.
class CallDeadline {
 public:
  explicit CallDeadline(std::optional<std::chrono::steady_clock::time_point> deadline);
  ~CallDeadline();
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;

 private:
  std::optional<std::chrono::steady_clock::time_point> previous_;
};

class Client {
 public:
  template <class... T>
  using Callback = std::function<void(Err, T...)>;

  explicit Client(Options options);
  ~Client();  // closes the session (as close()) and stops the client's thread
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Connects; returns once a session is open, or throws Error(ConnectionLoss) after
  // connect_timeout_ms (Error(SessionExpired) / Error(AuthFailed) for those).
  void start();
  // Closes the session (its ephemerals go) and the connection; pending calls fail.
  void close();
  // Every state change, on the client's thread, in order; the id removes it again.
  uint64_t on_state(std::function<void(State)> listener);
  // Once this returns, the listener is not called again (unless called from a callback).
  void remove_state_listener(uint64_t id);
  State state() const;
  int64_t session_id() const;
  std::string session_password() const;
  int32_t negotiated_timeout_ms() const;
  // The server the client is connected to ("host:port"), or "" between connections.
  std::string server() const;
  // Why the latest connection attempt failed ("" once connected): a refused connection, a TLS
  // handshake's reason ("certificate verify failed", ...), a timeout.
  std::string last_connection_error() const;
  // Drops the current connection, as a network fault would (tests, and moving to another
  // server): the client reconnects with its session.
  void drop_connection();

  // ---- asynchronous operations (callbacks on the client's thread) ----
  void create_async(std::string path, std::string data, CreateMode mode, AclList acl, int64_t ttl_ms,
                    Callback<std::string, Stat> cb);
  void remove_async(std::string path, int32_t version, Callback<> cb);
  void exists_async(std::string path, Watcher watcher, Callback<std::optional<Stat>> cb);
  void get_async(std::string path, Watcher watcher, Callback<std::string, Stat> cb);
  void set_async(std::string path, std::string data, int32_t version, Callback<Stat> cb);
  void children_async(std::string path, Watcher watcher, Callback<std::vector<std::string>, Stat> cb);
  void get_acl_async(std::string path, Callback<AclList, Stat> cb);
  void set_acl_async(std::string path, AclList acl, int32_t version, Callback<Stat> cb);
  void sync_async(std::string path, Callback<> cb);
  void multi_async(std::vector<MultiOp> ops, Callback<std::vector<MultiResult>> cb);
  void add_auth_async(std::string scheme, std::string credentials, Callback<> cb);
  // A persistent watch on `path` (and, `recursive`, everything below it) until removed.
  void add_watch_async(std::string path, bool recursive, Watcher watcher, Callback<> cb);
  void remove_watches_async(std::string path, Callback<> cb);
  void ephemerals_async(std::string prefix, Callback<std::vector<std::string>> cb);
  void all_children_number_async(std::string path, Callback<int32_t> cb);
  // Dynamic reconfiguration (ZooKeeperAdmin.reconfigure): servers joining ("server.N=..."
  // lines) and leaving (ids), comma-separated, or the whole new member list; `from_config` is
  // the version the change applies to (-1: any). The new configuration and its node's Stat.
  void reconfig_async(std::optional<std::string> joining, std::optional<std::string> leaving,
                      std::optional<std::string> members, int64_t from_config, Callback<std::string, Stat> cb);
  // The configuration in force (ZooKeeper's getConfig: /zookeeper/config, whatever the chroot).
  void config_async(Watcher watcher, Callback<std::string, Stat> cb);

  // ---- the same, blocking; failures throw Error ----
  std::string create(const std::string& path, const std::string& data = {}, CreateMode mode = CreateMode::persistent,
                     AclList acl = open_acl(), int64_t ttl_ms = 0);
  // With the new node's Stat (its czxid is the zxid that created it).
  std::pair<std::string, Stat> create2(const std::string& path, const std::string& data = {},
                                       CreateMode mode = CreateMode::persistent, AclList acl = open_acl(),
                                       int64_t ttl_ms = 0);
  void remove(const std::string& path, int32_t version = -1);
  std::optional<Stat> exists(const std::string& path, Watcher watcher = nullptr);
  std::pair<std::string, Stat> get(const std::string& path, Watcher watcher = nullptr);
  Stat set(const std::string& path, const std::string& data, int32_t version = -1);
  std::vector<std::string> children(const std::string& path, Watcher watcher = nullptr);
  std::pair<std::vector<std::string>, Stat> children2(const std::string& path, Watcher watcher = nullptr);
  std::pair<AclList, Stat> get_acl(const std::string& path);
  Stat set_acl(const std::string& path, AclList acl, int32_t version = -1);
  void sync(const std::string& path);
  std::vector<MultiResult> multi(std::vector<MultiOp> ops);  // throws on a failed multi too
  void add_auth(const std::string& scheme, const std::string& credentials);
  void add_watch(const std::string& path, bool recursive, Watcher watcher);
  void remove_watches(const std::string& path);
  std::vector<std::string> ephemerals(const std::string& prefix = "/");
  int32_t all_children_number(const std::string& path);
  std::pair<std::string, Stat> reconfig(std::optional<std::string> joining, std::optional<std::string> leaving,
                                        std::optional<std::string> members = std::nullopt, int64_t from_config = -1);
  std::pair<std::string, Stat> config(Watcher watcher = nullptr);
  // Creates `path`'s missing ancestors (persistent, or containers) and, unless it exists,
  // `path` itself; NodeExists along the way is fine.
  void ensure_path(const std::string& path, bool containers = false);

 private:
  struct Impl;
  // getData of `server_path` (the chroot applied or not), its watch kept under `path`.
  void get_data(std::string server_path, std::string path, Watcher watcher, Callback<std::string, Stat> cb);
  std::shared_ptr<Impl> impl_;
};

}  // namespace warden::client
