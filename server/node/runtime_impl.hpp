// ServerRuntime::Impl, the composition of a running server, shared by the node's files:
// runtime.cpp (building it, recovery, the client ports, the tick, shutdown), commit_loop.cpp
// (persist, durable, snapshots, purge, trimming), member_host.cpp (an ensemble member's
// replicator, transport, syncs and role changes), node_report.cpp (what the four-letter words,
// AdminServer and /metrics read outside the pipeline) and backup_restore.cpp (the AdminServer's
// snapshot and restore). Private to server/node/: it includes Asio.
#pragma once

#include <fcntl.h>
#include <malloc.h>
#include <pwd.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <utility>

#include "consensus/ensemble_replicator.hpp"
#include "consensus/peer_transport.hpp"
#include "consensus/replicator.hpp"
#include "consensus/sync_streamer.hpp"
#include "server/admin/admin_server.hpp"
#include "server/admin/commands.hpp"
#include "server/admin/four_letter.hpp"
#include "server/admin/metrics.hpp"
#include "server/admin/pause_monitor.hpp"
#include "server/auth/jaas.hpp"
#include "server/auth/quorum_sasl.hpp"
#include "server/auth/sasl_server.hpp"
#include "server/backup/backup.hpp"
#include "server/backup/restore_swap.hpp"
#include "server/base/version.hpp"
#include "server/network/accept_thread.hpp"
#include "server/network/client_connections.hpp"
#include "server/network/listeners.hpp"
#include "server/node/runtime.hpp"
#include "server/pipeline/request_pipeline.hpp"
#include "server/reconfig/config_txn.hpp"
#include "server/state/snapshot_walk.hpp"
#include "server/tls/tls_context.hpp"
#include "storage/damage/set_aside.hpp"
#include "storage/group_commit.hpp"
#include "storage/log_store.hpp"
#include "storage/rocksdb_log_store.hpp"
#include "storage/snapshot_writer.hpp"

namespace warden::server {

namespace asio = boost::asio;
using asio::ip::tcp;

// The command line this process was started with, for a restart in place after a restore.
inline std::vector<std::string>& restart_argv() {
  static std::vector<std::string> args;
  return args;
}

inline int64_t ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
}

inline int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The transport's view of the server.N entries: where each member's peer ports are.
inline std::vector<consensus::PeerTransport::Member> peer_members(const std::map<int64_t, PeerEntry>& servers) {
  std::vector<consensus::PeerTransport::Member> out;
  for (const auto& [id, e] : servers)
    out.push_back({id, e.host, static_cast<uint16_t>(e.quorum_port), static_cast<uint16_t>(e.election_port)});
  return out;
}

// Writes `path` whole or not at all: a file beside it, synced, renamed over it, and the folder
// synced. False with the reason in `error`.
inline bool write_file_atomically(const std::string& path, std::string_view text, std::string& error) {
  std::string temp = path + ".next";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return error = temp + ": " + std::strerror(errno), false;
  bool ok = true;
  for (size_t done = 0; ok && done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  if (!ok) error = temp + ": " + std::strerror(errno);
  ::close(fd);
  if (ok && ::rename(temp.c_str(), path.c_str()) != 0) ok = false, error = path + ": " + std::strerror(errno);
  if (!ok) {
    ::unlink(temp.c_str());
    return false;
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

// The pipeline's view of this member (request_pipeline.hpp's ReplicaRole), over the replicator.
struct EnsembleRole final : ReplicaRole {
  consensus::EnsembleReplicator* r = nullptr;
  bool leads() const override { return r->leading(); }
  bool serving() const override { return r->serving(); }
  bool looking() const override { return std::string_view(r->role_name()) == "looking"; }
  bool forward(std::string request) override { return r->forward(std::move(request)); }
  Progress progress() const override {
    auto p = r->link_progress();
    return {p.link, p.sent, p.acked};
  }
  bool reconfig_pending() const override { return r->reconfig_pending(); }
  Zxid config_version() const override { return r->config_version(); }
  bool quorum_synced(const reconfig::Members& m) const override { return r->quorum_synced(m.voters, m.observers); }
  std::string mode() const override {
    std::string role = r->role_name();
    if (role == "leading") return "leader";
    if (role == "following") return "follower";
    if (role == "observing") return "observer";
    return role;
  }
};

struct ServerRuntime::Impl {
  Config config;
  asio::io_context io{1};
  std::unique_ptr<storage::LogStore> log;
  std::unique_ptr<consensus::ZabReplicator> replicator;  // standalone
  // An ensemble member: the replicator, its transport, its tick and the pipeline's view of it.
  std::unique_ptr<consensus::EnsembleReplicator> ensemble;
  consensus::Replicator* replication = nullptr;  // whichever of the two this server runs
  std::unique_ptr<consensus::PeerTransport> transport;
  std::unique_ptr<consensus::SyncStreamer> streamer;  // leader: syncs of followers, off this thread
  // Follower: the snapshot its leader is streaming (SyncStreamer), written as it arrives.
  struct Receiving {
    Zxid at = -1;
    uint64_t link = 0;
    storage::SnapshotStore::RecordCounts got, sent;
    bool end = false;
    bool failed = false;
    bool held = false;  // a complete snapshot at `at` is here already: the stream is not written again
  } receiving;
  asio::steady_timer peer_ticker{io};
  EnsembleRole member_view;
  Zxid persisted_config = 0;  // the newest configuration written by config_in_force
  // The client connections (server/network/), made once the pipeline is; declared before it,
  // as the pipeline sends watch events through their fan-out.
  std::unique_ptr<ClientConnections> connections;
  std::unique_ptr<RequestPipeline> server;
  std::unique_ptr<storage::GroupCommitter> committer;  // with a durable log only
  tcp::acceptor acceptor{io};                          // clientPort (plaintext, or either with client.portUnification)
  tcp::acceptor secure_acceptor{io};                   // secureClientPort
  std::unique_ptr<AcceptThread> accepter;              // takes connections off both; started by run()
  std::unique_ptr<tls::ServerTlsContext> client_tls;   // ssl.*, when a port takes TLS
  // ssl.quorum.*: the contexts of member connections, accepted and made (sslQuorum, portUnification).
  std::unique_ptr<tls::ServerTlsContext> quorum_accept_tls, quorum_connect_tls;
  std::unique_ptr<auth::SaslServer> sasl;              // the JAAS Server section's, when there is one
  std::optional<auth::JaasFile> jaas;                  // the JAAS file, when one is named
  std::unique_ptr<admin::AdminServer> admin_server;    // admin.enableServer
  std::unique_ptr<admin::AdminServer> metrics_server;  // metricsProvider (Prometheus)
  TlsPolicy plain_policy, secure_policy;
  asio::steady_timer ticker{io};
  asio::signal_set signals{io};
  int64_t started_ms = wall_ms();
  // The snapshot this process last finished, and when (s): last_snapshot reports its time.
  std::pair<Zxid, int64_t> last_snapshot{-1, -1};
  // ZooKeeper's ServerMetrics that live outside the pipeline (ms, as ZooKeeper's), and
  // Warden's own for /metrics. The summaries may be fed from the committer's thread.
  struct Metrics {
    metrics::Summary fsynctime, sync_processor_batch_size, snapshottime, dbinittime, election_time, follower_sync_time,
        observer_sync_time, unavailable_time, leader_unavailable_time;
    metrics::Summary quorum_ack_latency{true};
    // The group committer as ZooKeeper's SyncRequestProcessor: txns waiting at each submit, each
    // txn's wait before its write began and to its write's end, each write's time.
    metrics::Summary sync_processor_queue_size{false, metrics::Access::one_thread};  // the server's thread only
    metrics::Summary sync_processor_queue_time{true}, sync_processor_flush_time{true},
        sync_processor_queue_and_flush_time{true};
    int64_t sync_processor_queued = 0;
    metrics::Summary startup_snap_load_time, startup_txns_load_time, startup_txns_loaded;
    metrics::Summary inflight_snap_count, inflight_diff_count;           // a leader's syncs running as one starts
    int64_t connection_rejected = 0;                                   // over maxClientCnxns
    int64_t learner_proposals = 0;                                     // learner_proposal_received_count
    metrics::Summary proposal_latency{true, metrics::Access::one_thread};  // fed and read on the server's thread
    // unavailable_time: from looking until this member serves again (as ZooKeeper, from its
    // LOOKING to its BROADCAST).
    std::optional<std::chrono::steady_clock::time_point> unavailable_since;
    metrics::Summary log_write_micros{true};  // Warden: each group-commit write (a histogram in /metrics)
    metrics::Summary jvm_pause_time{true};    // the pause monitor's overshoots (jvm.pause.monitor)
    std::map<int64_t, std::unique_ptr<metrics::Summary>> ack_micros;  // Warden: per voter, on the leader
    int64_t looking_count = 0, snap_count = 0, diff_count = 0, digest_mismatches = 0;
    std::optional<std::chrono::steady_clock::time_point> looking_since, syncing_since, leading_since;
    std::chrono::steady_clock::time_point snapshot_started;
  };
  mutable Metrics metrics;                             // read by the const four_letter_env, reset by srst
  std::unique_ptr<admin::PauseMonitor> pause_monitor;  // jvm.pause.monitor: feeds metrics.jvm_pause_time
  // A leader's counters per observer link, as ZooKeeper's LearnerHandler keeps them: when the
  // link was synced (seen at a peer tick), the link's message counts at the last
  // observer_connection_stat_reset, and the requests it forwarded since.
  struct LearnerStats {
    uint64_t link = 0;
    int64_t established_ms = 0;
    uint64_t sent_base = 0, received_base = 0;
    int64_t requests = 0;
  };
  std::map<int64_t, LearnerStats> learner_stats;

  void note_learner_links();

  metrics::Json observer_infos(int64_t& synced) const;
  bool throttling = false;
  FourLetterHandler four_letter = [this](std::string_view word, ConnId id) {
    if (!four_letter_allowed(config.four_letter_whitelist, word)) return four_letter_refusal(word);
    return four_letter_text(*server, word, id, four_letter_env(word));
  };
  bool stopping = false;
  bool failed = false;  // stopped because the log could not be written
  // Snapshots (durable log only): how many txns since the last one started, when to start the
  // next, and the walk in progress.
  int64_t txns_since_snapshot = 0;
  int64_t snapshot_after = 0;
  int64_t snapshots_skipped = 0;
  std::unique_ptr<SnapshotWalk> walk;
  uint64_t walk_attempt = 0;  // the snapshot writer's attempt that walks it
  // Bumped (under tree_mutex) when the walk is abandoned: its producer, on the writer's thread,
  // then stops without touching it.
  std::atomic<uint64_t> walk_generation{0};
  std::unique_ptr<storage::SnapshotWriter> snapshot_writer;
  std::mt19937_64 rng{std::random_device{}()};
  asio::steady_timer purge_timer{io};
  bool heap_to_trim = false;  // a snapshot was written, or node blocks freed, since the last trim
  int64_t packets_at_last_check = -1;
  size_t spare_at_last_node_trim = 0;  // the tree's spare node bytes after the last try
  int64_t closed_at_last_trim = 0;     // registry.closed when the heap was last trimmed
  // Snapshots are encoded on the snapshot writer's thread, which holds `tree_mutex` while it
  // reads the tree; the server thread holds it while it applies commits (the only changes
  // of the tree once recovery is over) and reads the tree without it, as the writer only
  // reads. A hold of the writer's is short, so commits wait for it a fraction of a millisecond
  // at most, and often enough released that a busy server's commits are not starved.
  std::mutex tree_mutex;
  // How many holds of tree_mutex the server thread is waiting for. A walker (the snapshot
  // writer, a follower's SNAP) takes the lock a batch at a time and, the mutex being unfair,
  // would often take it again before the waiting server thread woke: commits then waited for
  // several batches. A walker lets a waiting server thread in first (walker_turn()).
  std::atomic<int> tree_waiting{0};
  // The server thread's hold of tree_mutex.
  std::unique_lock<std::mutex> hold_tree();
  // A walker's wait before it takes tree_mutex for its next batch.
  void walker_turn() const;
  // The tree lock as a peer message's handling holds it: a follower that waits for the
  // snapshot writer there (a leader's snapshot arriving) lets go of it meanwhile, since the
  // writer's walk may be waiting for it (nothing changes the tree while this thread waits).
  std::unique_lock<std::mutex>* receiving_lock = nullptr;
  template <class F>
  void without_tree_lock(F f) {
    struct Relock {
      std::unique_lock<std::mutex>* l;
      ~Relock() {
        if (l) l->lock();
      }
    } relock{receiving_lock && receiving_lock->owns_lock() ? receiving_lock : nullptr};
    if (relock.l) relock.l->unlock();
    f();
  }
  static constexpr auto snapshot_hold = std::chrono::microseconds(500);
  static constexpr size_t snapshot_step_nodes = 200;  // a chunk: one RocksDB record

  static ServerOptions options_of(const Config& c);

  // What the four-letter words need from outside the pipeline; only what `word` shows is read.
  FourLetterEnv four_letter_env(std::string_view word) const;

  // A member's role, as srvr and mntr show it.
  void add_member_state(FourLetterEnv& env) const;

  // conf's key=value lines, in ZooKeeper's order.
  void add_conf_lines(FourLetterEnv& env, const std::string& data_dir, const std::string& log_dir) const;

  // ZooKeeper's reset empties every metric, counters too (the summaries are reset by the
  // pipeline through env.summaries).
  void reset_metrics() const;

  // mntr's summaries and counters that the runtime keeps (the pipeline adds its own).
  void add_monitor_values(FourLetterEnv& env) const;

  void add_member_metrics(FourLetterEnv& env) const;

  static void add_descriptor_counts(FourLetterEnv& env);

  static void add_environment(FourLetterEnv& env);

  void add_system_properties(FourLetterEnv& env) const;

  // The log's slow writes and the newest complete snapshot (dirs, srvr).
  void add_storage_facts(FourLetterEnv& env) const;

  // ZooKeeper 3.9's snapshot and restore admin commands. The backup file is written, or an
  // upload restored into a staging store, on backup_worker; the reply goes out from this thread.
  std::thread backup_worker;
  bool backup_running = false;
  bool restoring = false;     // a restored store is in place: the process is about to start again on it
  uint64_t backups_made = 0;  // names each backup's file, so that two in flight never share one
  int backups_sending = 0;    // backup files written and not yet sent whole (or failed)
  // Backups whose files may wait on disk at once for slow readers: each is a copy of the state.
  static constexpr int max_backups_sending = 4;
  std::map<std::string, std::chrono::steady_clock::time_point> backup_last;  // rate limit per command

  // A backup's file in dataDir while it is written and sent: "admin-snapshot-PID-N.tmp".
  static constexpr std::string_view backup_file_prefix = "admin-snapshot-";

  // Backup files and uploads that a process stopped mid-transfer left in dataDir: nothing reads
  // them again (their names carry the old PID).
  void remove_backup_leftovers() const;


  static admin::AdminReply json_reply(int status, const std::string& command, metrics::Json error,
                                      std::vector<std::pair<std::string, metrics::Json>> extra = {});

  // ZooKeeper 3.9's snapshot and restore commands: checked (on, serving, authorized, a store,
  // a leader for a restore, the rate limit), then run off the server's thread.
  void backup_command(const std::string& primary, admin::AdminRequest req, std::function<void(admin::AdminReply)> done);

  // The answer that refuses a backup command, or nothing when it may run.
  std::optional<admin::AdminReply> backup_refusal(const std::string& primary, const admin::AdminRequest& req,
                                                  std::chrono::steady_clock::time_point now);

  // The snapshot command: the backup file written on the worker, then sent (or dropped).
  void write_backup(const admin::AdminRequest& req, std::function<void(admin::AdminReply)> done);

  // The restore command: the upload read into a staging store on the worker, then swapped in.
  void restore_backup(const admin::AdminRequest& req, std::function<void(admin::AdminReply)> done);

  // The restored store takes the store's place ("" when it did, else why not). From here until
  // the process starts again no client request is read: a write taken now would go to the store
  // just replaced.
  std::string swap_in_restored(const backup::RestorePaths& paths);

  // The process starts again in place (the same PID, arguments and environment) on the restored
  // store that swap_in_restored put in place, so every part of the server opens it.
  [[noreturn]] void restart_on_restored(Zxid last) {
    restart_in_place(fmt::format("on the restored state at 0x{:x}", last));
  }

  // Set while a process started again on an empty store after setting a damaged one aside: the
  // empty one failing too is not set aside again (a disk that fails every read), it stops.
  static constexpr const char* set_aside_env = "WARDEN_STORE_SET_ASIDE";

  // An ensemble member's damaged store goes aside whole (storage/damage/set_aside.hpp).
  static void set_aside(const std::string& dir, const std::string& why);

  [[noreturn]] void restart_in_place(const std::string& what) {
    spdlog::warn("restarting {}", what);
    std::error_code ec;
    // Nothing of this process may outlive the exec: its sockets would hold the ports, its
    // store's lock the directory.
    for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
      int n = std::atoi(fd.path().filename().c_str());
      if (n > 2) fcntl(n, F_SETFD, FD_CLOEXEC);
    }
    spdlog::default_logger()->flush();
    auto& args = restart_argv();
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    spdlog::critical("cannot start again {} ({}): stopping", what, std::strerror(errno));
    spdlog::shutdown();
    std::_Exit(70);
  }

  void admin_request(admin::AdminRequest req, std::function<void(admin::AdminReply)> done);

  // Warden's own metrics, beyond ZooKeeper's names: each log write's time as a histogram, and on
  // a leader each learner's lag in txns and each voter's ack latency.
  std::string warden_metrics() const;

  // os.* and user.* as a JVM reports them (envi and system_properties).
  static std::vector<std::pair<std::string, std::string>> host_facts();

  // An AdminServer command's JSON, with what the matching four-letter word's environment has.
  std::string admin_command(std::string_view name, std::string_view query);

  std::string secure_port_text() const;

  static int64_t directory_bytes(const std::string& dir);

  // The pipeline's options: the config's, and SASL's exchanges when a JAAS Server section is found.
  ServerOptions server_options();

  // The JAAS file's SASL section (start fails on a file that is there but unusable, as ZooKeeper's).
  void load_sasl();

  explicit Impl(const Config& c);

  void recover(const storage::SnapshotStore& snapshots);

  void start_replication(Zxid applied);

  // A reconfig's configuration, applied to the tree: its new members are reached, and it is
  // written as ZooKeeper writes it, zoo.cfg.dynamic.<version> beside the configuration file,
  // which then names it in dynamicConfigFile (its server.N lines go), so that a restart starts
  // from it.
  void config_in_force(std::string_view text, Zxid version);

  // A configuration that gives this member another client address: it listens there from now
  // on, as ZooKeeper's member rebinds its client port; the connections made on the old one stay.
  // An address it cannot bind is logged, and the old one kept.
  void move_client_port(const std::string& address, int32_t port);

  // An ensemble member, from the server.N lines: its replicator with the hooks that carry out what the core decides,
  // its transport (TLS and SASL as configured) and, with a store, its sync streamer.
  void make_member();

  consensus::EnsembleReplicator::Settings member_settings() const;

  // Syncs stream from the store; a member without snapshots (in memory) syncs inline.
  void add_sync_hooks(consensus::EnsembleReplicator::Hooks& h);

  // The log, forwarded requests, roles and acknowledgements.
  void add_replication_hooks(consensus::EnsembleReplicator::Hooks& h);

  // Configurations: one in force, one pending, and servers outside it that reach this member.
  void add_membership_hooks(consensus::EnsembleReplicator::Hooks& h);

  // The peer transport, whose messages go to the replicator with the tree held.
  void make_transport(int64_t id);

  // TLS (sslQuorum, portUnification) and SASL (quorum.auth.*) between members, as configured.
  void secure_transport();

  // Leader: syncs of followers stream from the store on a thread of their own.
  void make_streamer(int64_t id);

  // Leader: the live tree walked for a follower's SNAP on its stream's thread, as the snapshot
  // writer walks it: the tree lock is tried, never waited for (the server's thread may hold it
  // while it cancels the stream), and held for about snapshot_hold per batch.
  struct LiveWalk final : consensus::LiveSnapshot {
    Impl& impl;
    SnapshotWalk walk;
    Records session_records;
    bool whole_ = false;
    explicit LiveWalk(Impl& i) : impl(i), walk(i.server->tree()), session_records(i.server->session_records()) {}
    std::optional<Records> next(const std::function<bool()>& cancelled) override {
      impl.walker_turn();
      std::unique_lock<std::mutex> hold(impl.tree_mutex, std::try_to_lock);
      while (!hold.owns_lock()) {
        if (cancelled()) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        hold.try_lock();
      }
      Records out = walk.next_chunks(snapshot_step_nodes, std::chrono::steady_clock::now() + snapshot_hold);
      if (out.empty()) whole_ = walk.done() && walk.met_every_survivor();  // where the tree cannot change
      return out;
    }
    Records sessions() override { return session_records; }
    bool whole() override { return whole_; }
  };

  bool complete_snapshot_at(Zxid at) const;

  // Follower: a frame of the snapshot the leader streams. The records go to the snapshot
  // writer as they come (it makes the caller wait when the disk falls behind, and so the
  // leader: TCP carries the wait back); a walk of this member's own is abandoned first.
  void snapshot_frame(consensus::EnsembleReplicator::SnapshotFrame f);

  // Follower, as the Sync of a streamed SNAP arrives: whether the snapshot `at` came whole on
  // `link` (every frame, the counts its last frame gives) and is written, complete and
  // durable. If not, nothing is installed: the member looks for its leader again.
  bool snapshot_received(Zxid at, uint64_t link);

  // Follower: the snapshot `at`, received and written, becomes the log's new start (everything
  // the log held goes: it is older, or not the leader's), and the tree and sessions are loaded
  // from it, as at a start.
  void install_snapshot(Zxid at);

  // Under tree_mutex: the walk in progress, if any, stops (its producer sees the generation).
  void abandon_walk();

  // The core ticks ten times a tickTime, but not more often than every 10 ms.
  int subticks() const { return std::max(1, std::min(10, config.tick_time / 10)); }

  void on_role_changed();

  void schedule_peer_tick();

  // ZooKeeper's rule: the next snapshot after snapCount/2 plus a random part of snapCount/2
  // txns, so that replicas of one ensemble do not all snapshot at once.
  void plan_next_snapshot();

  void count_for_snapshot();

  // A snapshot's chunks (and a recovery's reads) pass through the heap by the megabyte and
  // leave free pages among the tree's, which glibc keeps resident until asked to give them
  // back (about 25 MiB at 1M znodes). Asking takes ~15 ms at that size and holds the heap's
  // lock, so it is done at start and otherwise only once the server is idle (no request
  // since the last tick check), never in the middle of a busy period.
  //
  // Znodes deleted by the hundred thousand leave their pool blocks free; once requests are few
  // (a quiet check, as a client fleet's pings never stop) and at least `node_trim_step` more of
  // them are spare than at the last try, the blocks wholly free go back (NodePool::trim walks
  // the free nodes: ~0.1 s at a million) and the heap is trimmed after them.
  static void return_free_memory() { malloc_trim(0); }
  static constexpr int64_t quiet_packets = 200;  // per check (a quarter tick)
  static constexpr size_t node_trim_step = 16u << 20;
  // Connections ended since the last trim that make one due: their memory (about 50 KiB a TLS
  // connection at a storm's peak, all of it still resident after they close) goes back too.
  static constexpr int64_t connection_trim_step = 1000;
  void trim_when_idle();

  // Runs on the snapshot writer's thread, called until it returns nothing: the next chunks of
  // the walk, encoded while holding the tree's lock (which the server thread takes only to
  // apply commits), for about `snapshot_hold` at a time. Once the walk is done, the server
  // thread adds the sessions and the marker.
  //
  // A walk the server thread abandoned (a follower handed a leader's snapshot) is freed under
  // the lock: its generation is checked once the lock is held, before `w` is touched.
  std::optional<storage::SnapshotWriter::Records> snapshot_chunks(SnapshotWalk& w, uint64_t gen);

  void finish_snapshot(Zxid at);

  // As ZooKeeper's DatadirCleanupManager: once at start, then every purgeInterval hours.
  // In an ensemble a purge moves the log's base: a member behind it gets a snapshot (SNAP)
  // instead of a DIFF. It waits while syncs stream, so none loses the snapshot it sends.
  void schedule_purge(std::chrono::steady_clock::duration after);

  void persist(storage::LogEntry e);

  // Reading from clients stops while this many requests are in flight, as ZooKeeper's
  // globalOutstandingLimit; the first stop of each episode is logged.
  bool over_outstanding_limit();

  void resume_reading();

  void on_durable(Zxid upto, const std::optional<storage::GroupCommitter::Failure>& failure);

  // New connections come from the accept thread in batches; each gets its own Connection here.
  // A batch that never runs (the server stopped first) closes what it holds.
  struct AcceptedBatch {
    std::vector<AcceptThread::Accepted> fds;
    AcceptedBatch(std::vector<AcceptThread::Accepted> f) : fds(std::move(f)) {}
    AcceptedBatch(AcceptedBatch&& o) noexcept : fds(std::exchange(o.fds, {})) {}
    AcceptedBatch& operator=(AcceptedBatch&&) = delete;
    ~AcceptedBatch() {
      for (const auto& a : fds) ::close(a.fd);
    }
  };
  static constexpr int plain_port = 0, secure_port = 1;

  // Tells the accept thread which client ports to accept from now on: the open ones but
  // `leaving`, which the caller closes once this returns.
  void accept_on_client_ports(const tcp::acceptor* leaving = nullptr);

  void adopt(AcceptedBatch& batch);

  void schedule_tick();

  void shutdown();
};

}  // namespace warden::server
