// The request pipeline of one server, free of sockets and clocks so that tests drive it
// directly. The network layer hands it frames per connection and gives it a ClientLink to
// answer on; time comes from the injected clock.
//
// A write goes prep -> replicator.propose -> (commit) apply to the tree -> watch events ->
// reply. A read is answered from the tree at once, unless the session has writes in flight:
// then, when they are all this connection's, it is answered at its exact point in the apply
// order (right after the write before it applies, before the next one does: `after_writes`),
// and the frames after it go on; otherwise it, and every frame after it, waits in `held` until
// they are applied. Either way a session's replies leave in request order and its reads see its
// own writes and none of its later ones. Writes need not wait: prep sees the changes in flight.
// Every call into RequestPipeline comes from one thread, the server's (the io_context that owns
// the tree), and a watch event always leaves before the reply whose result announced it. One
// other thread reads the tree: the snapshot writer's walk, which the runtime lets in only between
// commits (node/runtime.cpp's tree lock); nothing else is shared.
//
// Invariants: `owner_` maps each attached session to its one live connection; `pending_` holds
// one entry per txn this server proposed and has not applied, in zxid order. Commits are matched
// to it by zxid: a commit of a txn this server did not prepare (a follower's case) is applied
// and answers nobody; a proposal of ours that a commit passed by was lost.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>

#include "consensus/replicator.hpp"
#include "server/metrics/pipeline_metrics.hpp"
#include "server/auth/sasl_exchange.hpp"
#include "server/pipeline/forward.hpp"
#include "server/pipeline/prep.hpp"
#include "server/pipeline/server_stats.hpp"
#include "server/state/acl.hpp"
#include "server/state/data_tree.hpp"
#include "server/state/session_table.hpp"
#include "server/state/watch_manager.hpp"

namespace warden::server {

// One client connection as the pipeline sees it; implemented by the network layer.
class ClientLink {
 public:
  virtual ~ClientLink() = default;
  // Queues one frame (length prefix included) for sending.
  virtual void send(std::string frame) = 0;
  // Closes once what was queued has been sent. Must not call back into RequestPipeline synchronously.
  virtual void close() = 0;
  // The peer's address without port, for ip ACLs and log lines.
  virtual const std::string& peer_address() const = 0;
  // The peer as the four-letter words show it: "/address:port".
  virtual std::string peer_endpoint() const { return "/" + peer_address() + ":0"; }
  // Frames queued and not yet written to the socket.
  virtual size_t queued() const { return 0; }
  // Ids the connection itself proves (x509: its TLS client certificate), added at open().
  virtual std::vector<wire::Id> transport_ids() const { return {}; }
  // Whether the connection speaks TLS (the AdminServer's secure_connections).
  virtual bool secure() const { return false; }
};

// Sends one frame to many links at once: a watch event's watchers. The network layer may
// spread the writes over several threads; it returns with every frame sent or queued, in the
// order of each link's own frames. Without one, each link's send() takes a copy.
class FanOut {
 public:
  virtual ~FanOut() = default;
  virtual void send_to_all(const std::vector<ClientLink*>& links, std::string_view frame) = 0;
};

// This server as a member of an ensemble, as the pipeline needs it (the runtime implements it
// over consensus::EnsembleReplicator). A standalone server has none: it always leads.
class ReplicaRole {
 public:
  virtual ~ReplicaRole() = default;
  virtual bool leads() const = 0;
  // Leads with a quorum, or follows (observes) a leader it is synchronised with.
  virtual bool serving() const = 0;
  // Looking for a leader (no quorum): the one state in which read-only mode serves.
  virtual bool looking() const { return false; }
  // Follower or observer: an encoded Forwarded (forward.hpp) to the leader, in order; false
  // when no leader can be reached (it is lost, as on a broken connection).
  virtual bool forward(std::string request) = 0;
  // srvr's Mode: "leader", "follower" or "observer".
  virtual std::string mode() const = 0;
  // Follower or observer: which of its forwards the leader has received (link, the seq of the
  // last forward sent, the last seq the leader acknowledged). {0, 0, 0}: no link.
  struct Progress {
    uint64_t link = 0, sent = 0, acked = 0;
  };
  virtual Progress progress() const { return {}; }
  // Reconfiguration (reconfig::Gate): a reconfig pending, the version in force, and (leader)
  // whether a quorum of `m`'s voters is synchronised with this leader.
  virtual bool reconfig_pending() const { return false; }
  virtual Zxid config_version() const { return 0; }
  virtual bool quorum_synced(const reconfig::Members& m) const {
    (void)m;
    return false;
  }
};

struct ServerOptions {
  int32_t tick_ms = 2000;
  // ZooKeeper's tree digest (zookeeper.digest.enabled, on by default as in ZooKeeper 3.6+): kept
  // as txns apply and logged for the hash command; off, hash lists none.
  bool digest_enabled = true;
  // /zookeeper/config's data for an ensemble (config_node_text) and the configuration's
  // version, which ZooKeeper gives the node as its mzxid; empty: the node stays empty.
  std::string config_node;
  Zxid config_version = 0;
  int32_t min_session_timeout_ms = 4000;
  int32_t max_session_timeout_ms = 40000;
  bool extended_types = false;
  // The top byte of the session ids this server creates (Config::session_id_byte()).
  uint8_t server_id = 1;
  // How often containers and TTL nodes are checked (ZooKeeper's znode.container.checkIntervalMs).
  int32_t container_check_interval_ms = 60000;
  // Config::sessionless_timeout_ms: checked at each tick.
  int32_t sessionless_timeout_ms = 10000;
  // See Config::super_digest; empty: no super user.
  std::string super_digest;
  // ZooKeeper's skipACL: no permission is checked (Config::skip_acl).
  bool skip_acl = false;
  // Refuse changes past a hard quota (ZooKeeper's zookeeper.enforceQuota).
  bool enforce_quota = false;
  // Config::linearizable_reads: each read waits for a no-op txn of its own (a barrier).
  bool linearizable_reads = false;
  // Config::read_only_mode (members of an ensemble only).
  bool read_only_mode = false;
  // reconfigEnabled (ZooKeeper's default: false) and standaloneEnabled (default: true; a
  // reconfig must then leave at least two voters).
  bool reconfig_enabled = false;
  bool standalone_enabled = true;
  // Config::enforce_auth_schemes when enforce.auth.enabled; empty: no enforcement.
  std::vector<std::string> enforce_auth_schemes;
  // SASL (opcode 102): a new exchange per connection; empty: no SASL offered (answered as a
  // ZooKeeper without SASL answers). sasl_super_user: zookeeper.superUser. A failed exchange
  // closes the connection (AuthFailed, or SessionClosedRequireAuth when sasl is required)
  // unless sasl_failed_clients_stay (zookeeper.allowSaslFailedClients).
  auth::SaslExchangeFactory sasl;
  std::string sasl_super_user;
  bool sasl_failed_clients_stay = false;
  // ACLs may name sasl ids (authProvider.N=...SASLAuthenticationProvider, as ZooKeeper needs).
  bool sasl_acls = false;
  // Seeds the source of session passwords; none: the system's entropy. A simulation or a test
  // sets it so that a run replays exactly.
  std::optional<uint64_t> random_seed;
};

class RequestPipeline {
 public:
  using Clock = std::function<int64_t()>;  // ms since the Unix epoch

  // `elapsed`: a monotonic clock (ms from any origin), read once a tick check; none: `clock`.
  RequestPipeline(ServerOptions opts, consensus::Replicator& replicator, Clock clock, Clock elapsed = nullptr);

  // Makes this server a member of an ensemble (before any connection).
  void set_ensemble(ReplicaRole* e) { ensemble_ = e; }
  // How a watch event reaches many watchers (before any connection).
  void set_fan_out(FanOut* f) { fan_out_ = f; }
  // Called with /zookeeper/config's text and version each time a reconfig is applied (from the
  // log, or a snapshot that brought a newer one): the host reaches new members and persists it.
  void set_on_config(std::function<void(std::string_view text, Zxid version)> f) { on_config_ = std::move(f); }
  // A configuration in force without a txn of its own: the files' one, which a leader's first
  // epoch gives a version (the epoch's first zxid, as ZooKeeper's). /zookeeper/config shows it
  // unless it holds a newer one.
  void configuration_versioned(std::string_view text, Zxid version) {
    const Node* n = tree_.find(reconfig::config_node);
    if (n && n->mzxid < version) tree_.set_config_node(text, version, clock_());
  }
  // Leader: a request a follower or observer forwarded (forward.hpp); garbage is logged and
  // dropped.
  // `from`: the member (its server id) it came from.
  void receive_forwarded(int64_t from, std::string_view bytes);
  // The member's role or its serving changed. Not serving: every client connection closes
  // (as ZooKeeper's do when their server loses its leader) and new ones are refused until it
  // serves again; leading anew: every session gets a full timeout from now.
  void role_changed();
  // A member that does not serve answers no client.
  bool serving() const { return !ensemble_ || ensemble_->serving(); }
  // Read-only mode, as ZooKeeper's ReadOnlyZooKeeperServer: a member looking for a quorum (not
  // while it syncs: its tree is then being replaced) accepts clients whose ConnectRequest
  // allows read-only, answers their reads from its own tree and their writes with NotReadOnly.
  // Their sessions are this member's own (a new one is not a txn, and is forgotten once the
  // member serves again: ZooKeeper's clients start afresh on a read-write server); a client
  // with a session the tree knows may bring it, unchanged. Every such connection closes when
  // the member's role changes.
  bool read_only() const { return opts_.read_only_mode && ensemble_ && !ensemble_->serving() && ensemble_->looking(); }

  ConnId open(ClientLink* link);
  // A client's TLS handshake failed (or did not finish in time): counted as ZooKeeper counts
  // it (auth_failed_count, unsuccessful_handshake, tls_handshake_exceeded).
  void handshake_failed(bool timed_out);
  // One frame's payload (without its length prefix) from a connection.
  void receive(ConnId c, std::string_view payload);
  // The connection is gone; its watches go with it, its session lives on until it expires.
  void closed(ConnId c);
  // Called about every tick: expires sessions, removes due containers and TTL nodes.
  void tick();
  // Closes connections that sent no ConnectRequest within sessionless_timeout_ms (each tick).
  void close_sessionless(int64_t now);
  // Re-applies a txn from the log at start, before any connection: the tree and the session
  // table move on, nobody is answered. Restored sessions get their full timeout from now.
  // Throws std::runtime_error when the payload is not a txn.
  void replay(Zxid zxid, std::string_view payload);
  void replay(Zxid zxid, const Txn& txn);  // the same, decoded already (a tool's import)
  // Snapshots: the session records to store, and loading one before replaying the log after it.
  std::vector<std::pair<std::string, std::string>> session_records() const { return sessions_.records(); }
  void start_snapshot_load() {
    tree_.start_load();
    sessions_.forget_all();
  }
  // False when a record is damaged (or a node's parent is missing).
  bool load_snapshot_node(std::string_view path, std::string_view record) { return tree_.load_node(path, record); }
  bool load_snapshot_node(std::string_view path, const SnapshotNode& node) { return tree_.load_node(path, node); }
  bool load_snapshot_session(std::string_view key, std::string_view record) {
    return sessions_.load(key, record, session_time(clock_()));
  }
  void finish_snapshot_load(Zxid at) {
    tree_.finish_load(at);
    write_config_node();  // each member's own, as ZooKeeper writes it after every load
    config_applied();
  }
  bool relabel_loaded_acl(std::string_view path, const wire::AclList& acl) { return tree_.relabel_acl(path, acl); }

  // The log failed to make the txns in flight durable (and the replicator forgot them): answer
  // each waiting client with `err`, undo what prep assumed, and serve what waits behind them.
  void abort_in_flight(wire::Err err);
  // This server stopped leading: its proposals in flight may or may not commit. Their clients'
  // connections close; prep's overlay and closing sessions are forgotten.
  void leadership_lost();

  const DataTree& tree() const { return tree_; }
  // After a mass delete: gives back the node memory whole blocks of freed nodes hold (the
  // runtime calls it when requests are few, with the tree's lock held).
  size_t trim_spare_nodes() { return tree_.trim_spare_nodes(); }
  int64_t packets_received() const { return packets_received_; }
  size_t session_count() const { return sessions_.size(); }
  size_t connection_count() const { return conns_.size(); }
  // A connection as log lines name it: "session 0x... from ADDR:PORT", or "connection from
  // ADDR:PORT" before it has a session.
  std::string describe(ConnId id) const;
  size_t watch_count() const { return watches_.watch_count(); }
  // Requests in flight: txns proposed and not yet applied, and frames waiting behind them.
  size_t outstanding() const { return pending_.size() + held_total_; }
  // Follower or observer: the leader may have acknowledged forwards (its pings say which); the
  // clients' pings waiting for their touch to reach the leader are answered.
  void peer_progress();
  // Paths prep holds for txns in flight (bounded by them: see Prep).
  size_t prep_overlay_size() const { return prep_.overlay_size(); }

  // ---- What operators read: server/admin/ makes the four-letter words, the AdminServer's
  // commands, mntr, monitor and /metrics of these (and of what the node adds, FourLetterEnv) ----
  // Request latencies in ms, as the four-letter words report them.
  struct Latency {
    int64_t min = -1, max = 0, total = 0, count = 0;
    void add(int64_t ms) {
      min = min < 0 ? ms : std::min(min, ms);
      max = std::max(max, ms);
      total += ms;
      ++count;
    }
    double avg() const { return count ? static_cast<double>(total) / static_cast<double>(count) : 0.0; }
  };
  struct ConnStats {
    int64_t received = 0, sent = 0;
    int64_t established_ms = 0, last_response_ms = 0, last_latency = 0;
    int32_t last_cxid = -1;
    Zxid last_zxid = -1;
    const char* last_op = "NA";
    Latency latency;
  };
  // One client connection as operators see it: valid until the pipeline next runs.
  struct ConnectionView {
    ConnId id = 0;
    const ConnStats* stats = nullptr;
    const ClientLink* link = nullptr;
    SessionId session = 0;
    bool attached = false;
    int32_t negotiated_timeout = 0;
    size_t held = 0;  // frames waiting behind this connection's writes
  };
  std::vector<ConnectionView> connections() const;  // by id
  // The session a connection is attached to; 0 for none (or a connection gone).
  SessionId session_of(ConnId id) const;
  const SessionTable& sessions() const { return sessions_; }
  const WatchManager& watches() const { return watches_; }
  const Latency& latency() const { return latency_; }
  int64_t packets_sent() const { return packets_sent_; }
  size_t proposals_in_flight() const { return pending_.size(); }
  const ServerCounters& counters() const { return counters_; }
  const metrics::PipelineMetrics& metrics() const { return metrics_; }
  // Every summary the pipeline keeps (request latencies), fed or not; and its summary sets.
  metrics::NamedSummaries summaries() { return metrics_.summaries_with_unfed(); }
  metrics::NamedSummarySets summary_sets() { return metrics_.summary_sets(); }
  // The tree's digest every 128 zxids (the newest 1024), for the AdminServer's hash command.
  const std::deque<std::pair<Zxid, uint64_t>>& digests() const { return digest_log_; }
  int64_t now() const { return clock_(); }  // ms since the Unix epoch, by the injected clock
  int64_t trace_mask() const { return trace_mask_; }
  void set_trace_mask(int64_t mask) { trace_mask_ = mask; }
  // crst: every connection's statistics start again (each keeps when it was established).
  void reset_connection_stats();
  // srst: packets, latencies, response sizes and the pipeline's metrics start again.
  void reset_stats();
  // The AdminServer's check of a command that requires it (ZooKeeper 3.9's AuthRequest): the
  // Authorization header ("digest user:password", or "ip" for the client's address) gives the
  // ids, which need `perms` on `path`'s ACL. 200: allowed; 401 with the reason when the header
  // is missing or authenticates nobody; 403 when the ids lack the permission.
  std::pair<int, std::string> admin_authorized(std::string_view authorization, const std::string& peer,
                                               const std::string& path, int32_t perms) const;

 private:
  // Puts opts_.config_node into /zookeeper/config, outside the log (ZooKeeper's
  // initConfigInZKDatabase): mzxid the configuration's version, mtime now, version -1.
  void write_config_node();
  struct Conn {
    ConnStats stats;
    ClientLink* link = nullptr;
    SessionId session = 0;
    bool attached = false;
    bool old_client = false;  // sent no readOnly byte, so gets none back
    bool closing = false;
    bool read_only = false;  // attached in read-only mode
    bool sasl_answered = false;  // this connection was told once that the server has no SASL
    int32_t negotiated_timeout = 0;
    AuthIds auth;
    std::shared_ptr<auth::SaslExchange> sasl;  // this connection's exchange, once it sent SASL
    int in_flight = 0;              // this connection's txns proposed and not yet applied
    struct Held {
      std::string payload;
      int64_t arrived_ms = 0;  // prep_processor_queue_time_ms runs from here
    };
    std::deque<Held> held;          // frames waiting behind them, in arrival order
    // Reads that came while this connection's writes were in flight (and no other connection's
    // of the session), each answered when the write before it (`after`, its seq) is done.
    struct Attached {
      uint64_t after = 0;
      Held frame;
    };
    std::deque<Attached> after_writes;
    int writes = 0;           // this connection's writes in flight that hold reads back
    uint64_t last_write = 0;  // the seq of the newest of them
    bool barrier_passed = false;    // the read at the front of `held` had its barrier applied
  };
  // Frames one connection may have waiting behind its in-flight writes; past it the client is
  // not reading its replies or is flooding, and the connection is closed.
  static constexpr size_t max_held_frames = 100000;
  // connect: a session being created for a connection; request: a client's write; internal: a
  // txn of this server's own (an expiry), or on a leader a member's forwarded request.
  enum class Kind { connect, request, internal };
  struct Pending {
    Pending(Kind k, ConnId c = 0, int32_t x = 0, int64_t started = 0) : kind(k), conn(c), xid(x), started_ms(started) {}
    Kind kind;
    ConnId conn = 0;
    int32_t xid = 0;
    int64_t started_ms = 0;  // when the request arrived: its latency runs to the reply
    int64_t proposed_ms = 0;  // handed to the replicator: write_commitproc_time_ms runs from here
    uint64_t prep_mark = 0;  // prep's mark once this txn was prepared: retired when it applies
    uint64_t seq = 0;        // submission order, to find it again after propose()
    Zxid zxid = 0;           // what propose() gave it; 0 until then
    // Forwarded to the leader (a follower's): matched to its commit by session and cxid.
    bool forwarded = false;
    SessionId session = 0;
    std::string sync_path;   // a forwarded sync: the path its reply names
    bool reattach = false;   // a connect for a session the leader must confirm
    bool barrier = false;    // a linearizable read's no-op: answers nobody
    // A client's write: its session's reads wait for it (session_writes_), on whichever
    // connection they come, until it applies or is lost.
    SessionId holds_reads = 0;
  };

  // Where a frame goes while it may not be answered at once: a read waits for the session's
  // writes, those of its earlier connections included (ZooKeeper orders a session's requests,
  // not a connection's), so a client that re-attaches reads what it wrote before the break.
  // now: processed at once (a write, or nothing in flight); after_write: a plain read answered
  // right after the connection's newest write in flight; hold: it and all after it wait.
  enum class Route { now, after_write, hold };
  Route route(const Conn& c, std::string_view payload) const;
  // A read answered from the tree alone (what a linearizable read's barrier and a read's place
  // after its session's write apply to).
  static bool reads_tree(wire::OpCode op);
  // read_commitproc_time_ms: a read's wait from its arrival to its answer (0 when answered at
  // once), as ZooKeeper times a read's stay in its CommitProcessor.
  void note_read_wait(std::string_view payload, int64_t waited);
  // Counts `p` as a write of `s` in flight (Pending::holds_reads).
  void hold_reads(Pending& p, SessionId s);
  // `p` left the queue (applied, lost or aborted), its reply sent: the reads that waited for
  // it are answered now, and it no longer holds back its session's reads.
  void release_reads(const Pending& p);
  // linearizable_reads: sends the read's barrier and holds the read behind it; false when the
  // read may be answered now (its barrier was applied).
  bool hold_for_barrier(ConnId id, Conn& c, wire::OpCode op, int32_t xid, std::string_view payload);
  void process(ConnId id, Conn& c, std::string_view payload);
  void drain(ConnId id);
  void handle_connect(ConnId id, Conn& c, std::string_view payload);
  // One request after its header, as handle_request passes it through its stages.
  struct Request {
    int32_t xid = 0, type = 0;
    wire::OpCode op{};
    std::string_view payload, body;  // the whole frame, and what follows the header
    int64_t now = 0;  // one reading of the clock for the whole request
    Zxid last = 0;    // the tree's last applied zxid when it came
  };
  void handle_request(ConnId id, Conn& c, std::string_view payload);
  // The stages of a request, each false (or true for routed) once it answered or closed:
  // admitted: enforced auth, read-only mode, the session's touch; routed: sent to the leader
  // (a follower's writes and syncs) or held for a leader's sync; dispatch: answered here.
  bool admitted(ConnId id, Conn& c, const Request& q);
  bool routed(ConnId id, Conn& c, const Request& q);
  void dispatch(ConnId id, Conn& c, const Request& q);
  void submit_write(ConnId id, Conn& c, const Request& q);
  void count_writes(const Txn& txn);
  void handle_read(ConnId id, Conn& c, wire::OpCode op, int32_t xid, std::string_view body);
  void handle_auth(ConnId id, Conn& c, int32_t xid, std::string_view body);
  void handle_sasl(ConnId id, Conn& c, int32_t xid, std::string_view body);
  // enforce.auth.schemes: true when off, or when one of the connection's ids is of such a scheme.
  bool enforced_auth_met(const Conn& c) const;
  void handle_set_watches(ConnId id, Conn& c, int32_t xid, std::string_view body, bool v2 = false);
  void handle_multi_read(ConnId id, Conn& c, int32_t xid, std::string_view body);
  // getEphemerals, getAllChildrenNumber, whoAmI, the watch ops, sasl and reconfig.
  void handle_other(ConnId id, Conn& c, wire::OpCode op, int32_t xid, std::string_view body);
  // NoNode, NoAuth without READ, or ok.
  wire::Err readable(const Node* n, const Conn& c) const;
  static std::vector<std::string> children_of(const Node& n);
  void submit(Txn txn, Pending p);
  // Follower: sends a request to the leader and waits for its commit in `pending_`.
  void forward(Forwarded f, Pending p);
  bool leads() const { return !ensemble_ || ensemble_->leads(); }
  // Whether the commit of `txn` is the one `p` waits for.
  static bool matches(const Pending& p, const Txn& txn, Zxid zxid);
  void on_commit(Zxid zxid, std::string_view payload);
  // Drops the front proposal, whose outcome its client cannot be told: closes its connection.
  void lose(Pending p);
  ApplyResult apply(const Txn& txn, Zxid zxid, std::vector<WatchTrigger>& triggers);
  void reply_write(const Pending& p, const Txn& txn, const ApplyResult& r, Zxid zxid);
  // A non-leader's client back with session `s`: forwarded to the leader, answered in order.
  void reattach_through_leader(ConnId id, Conn& c, SessionId s, const std::string& passwd);
  void attach(ConnId id, Conn& c, SessionId s);
  void send_connect_response(Conn& c, int32_t timeout, SessionId s, const std::string& passwd);
  void send_reply(ConnId id, int32_t xid, Zxid zxid, wire::Err err);
  template <class R>
  void send_reply(ConnId id, int32_t xid, Zxid zxid, const R& body);
  void close_conn(ConnId id);
  // How a log line names a connection: its session (once it has one) and its peer's address
  // and port, so an operator can follow one client through the log.
  static std::string who(const Conn& c);
  // Every frame to a client goes out here or through send_events, both counting it.
  // `event`: a watch event (watch_bytes), not a reply (response_bytes).
  void send_frame(Conn& c, std::string frame, bool event = false);
  void count_sent(Conn& c, size_t frame_bytes, bool event);
  // A committed change's watch events: one frame per distinct event, sent to all its watchers
  // at once (those that may read the node).
  void send_events(const WatchTrigger& t, const std::vector<ConnId>& conns);
  // A request of `op` from `c` answered now at `zxid`, having arrived at `started`.
  // `now` < 0: read the clock.
  void note_reply(Conn& c, wire::OpCode op, int32_t xid, Zxid zxid, int64_t started, int64_t now = -1);
  void expire_nodes(int64_t now);
  Conn* conn(ConnId id);

  ServerOptions opts_;
  consensus::Replicator& replicator_;
  ReplicaRole* ensemble_ = nullptr;
  FanOut* fan_out_ = nullptr;
  std::vector<ClientLink*> fan_links_;  // send_events' list, kept for its capacity
  std::function<void(std::string_view, Zxid)> on_config_;
  // Hands /zookeeper/config to on_config_ when a reconfig put it there.
  void config_applied();
  std::vector<SessionId> touched_;  // follower: sessions its clients kept alive since the last tick
  // Leader: the member whose client connection holds each session (0: this server), as
  // ZooKeeper's session owner. A request from a member that is not the owner fails with
  // SessionMoved. A new leader knows no owners: the first member to speak for a session is it.
  std::unordered_map<SessionId, int64_t> session_owner_;
  // Runs one of prep's calls: counts the paths it staged (outstanding_changes_queued) and, with
  // `timer`, the time it took from `started` (the request's time; the clock is read as little
  // as may be: on a busy server its readings were a measurable share of a write's cost).
  template <class F>
  auto staged(F&& prepare, metrics::Summary* timer = nullptr, int64_t started = 0) {
    size_t before = prep_.overlay_size();
    if (timer && started == 0) started = clock_();
    auto txn = prepare();
    if (timer) {
      prepared_at_ = clock_();
      timer->add(std::max<int64_t>(0, prepared_at_ - started));
    }
    metrics_.outstanding_changes_queued += static_cast<int64_t>(prep_.overlay_size() - std::min(before, prep_.overlay_size()));
    return txn;
  }
  // When the last timed prep ended, for the next submit's proposal_process_time; 0: none.
  int64_t prepared_at_ = 0;
  // Drops what prep staged up to `mark` (none: all of it), counting outstanding_changes_removed.
  void retire_staged(std::optional<uint64_t> mark = std::nullopt);
  // Leader: true when `member` may speak for session `s` (and it is then its owner).
  bool owns(SessionId s, int64_t member);
  Clock clock_;
  // Session deadlines, the container checks' schedule and sessionless connections' ages run on
  // "session time": the wall clock less the steps it took, as tick() measures them against
  // `elapsed_`, so that a wall clock stepped by NTP, by hand or by a virtual machine's restore
  // neither expires every session at once nor keeps them for the length of the step
  // (ZooKeeper runs these on System.nanoTime). Requests read the wall clock once, as before:
  // after a step and before the next tick check, touches are off by the step (a session lives
  // longer, or keeps its later deadline), never expired early, since only tick() expires.
  Clock elapsed_;
  int64_t session_skew_ = 0;  // the wall clock's steps so far
  // Smaller differences between two checks are reading jitter or a slew, not a step.
  static constexpr int64_t clock_step_ms = 100;
  int64_t last_check_wall_ = -1, last_check_elapsed_ = -1;
  int64_t session_time(int64_t wall) const { return wall - session_skew_; }
  DataTree tree_;
  // What prep checks a reconfig against: these options and the ensemble.
  struct ReconfigGate final : reconfig::Gate {
    const RequestPipeline& s;
    explicit ReconfigGate(const RequestPipeline& server) : s(server) {}
    bool enabled() const override { return s.opts_.reconfig_enabled; }
    bool ensemble() const override { return s.ensemble_ != nullptr; }
    bool standalone_enabled() const override { return s.opts_.standalone_enabled; }
    bool in_progress() const override { return s.ensemble_ && s.ensemble_->reconfig_pending(); }
    int64_t version() const override { return s.ensemble_ ? s.ensemble_->config_version() : 0; }
    bool quorum_synced(const reconfig::Members& m) const override { return s.ensemble_ && s.ensemble_->quorum_synced(m); }
  } reconfig_gate_{*this};
  AclCheck allows_;
  Prep prep_;
  SessionTable sessions_;
  WatchManager watches_;
  std::unordered_map<ConnId, Conn> conns_;
  // Every connection opened, with when, in that order, until its sessionlessCnxnTimeout has
  // passed: a tick looks at the ones past it only, not at every connection.
  std::deque<std::pair<int64_t, ConnId>> sessionless_;
  std::unordered_map<SessionId, ConnId> owner_;
  std::deque<Pending> pending_;
  // Per session, its client writes in flight here (Pending::holds_reads). A connection's
  // `in_flight` alone would let a client that re-attached after a break read past the writes
  // its old connection left in flight (a lock's create it would then make again).
  std::unordered_map<SessionId, int> session_writes_;
  // Follower or observer: clients' pings not yet answered. A ping is answered only once the touch
  // report carrying its session reached the leader (the leader's ack of that forward's seq on
  // the same link): so a client's pings stop being answered as soon as this member loses the
  // leader, and the client's own loss deadline (confirmed + timeout) never passes the moment the
  // leader may expire the session. A member cut off from its leader used to answer them for up
  // to syncLimit, while the leader counted from the last touch it heard (issue 27, 3).
  struct PingWaiter {
    ConnId conn = 0;
    int32_t xid = 0;
    uint64_t link = 0, seq = 0;  // the report that carries its touch; seq 0: not sent yet
  };
  std::deque<PingWaiter> ping_waiters_;
  // Pings that may wait at once: one per connection and timeout third in practice; past it a
  // client floods pings, and its connection is closed.
  static constexpr size_t max_ping_waiters = 100000;
  uint64_t submitted_ = 0;
  ConnId next_conn_ = 1;
  int64_t packets_received_ = 0, packets_sent_ = 0;
  size_t held_total_ = 0;  // frames in every connection's `held` and `after_writes`
  Latency latency_;
  ServerCounters counters_;
  int64_t trace_mask_ = trace_mask::initial;
  // ZooKeeper's metrics this pipeline feeds (readlatency and updatelatency among them).
  metrics::PipelineMetrics metrics_;
  // ZooKeeper's digest log (DataTree.digestLog): (zxid, tree digest) for live commits whose zxid
  // is a multiple of the interval; not for a start's replay (a fuzzy snapshot's digest is not
  // the tree's until the replay passes it), as ZooKeeper logs none while fuzzy.
  static constexpr Zxid digest_log_interval = 128;
  static constexpr size_t digest_log_limit = 1024;
  std::deque<std::pair<Zxid, uint64_t>> digest_log_;
  int64_t next_container_check_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace warden::server
