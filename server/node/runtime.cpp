#include "server/node/runtime.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <malloc.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <boost/asio.hpp>
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
#include "server/network/accept_thread.hpp"
#include "server/network/client_connections.hpp"
#include "server/network/listeners.hpp"
#include "server/pipeline/request_pipeline.hpp"
#include "server/reconfig/config_txn.hpp"
#include "server/state/snapshot_walk.hpp"
#include "server/tls/tls_context.hpp"
#include "server/tools.hpp"
#include "storage/damage/set_aside.hpp"
#include "storage/group_commit.hpp"
#include "storage/log_store.hpp"
#include "storage/rocksdb_log_store.hpp"
#include "storage/snapshot_writer.hpp"

namespace warden::server {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
// The command line this process was started with, for a restart in place after a restore.
std::vector<std::string>& restart_argv() {
  static std::vector<std::string> args;
  return args;
}

int64_t ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The transport's view of the server.N entries: where each member's peer ports are.
std::vector<consensus::PeerTransport::Member> peer_members(const std::map<int64_t, PeerEntry>& servers) {
  std::vector<consensus::PeerTransport::Member> out;
  for (const auto& [id, e] : servers)
    out.push_back({id, e.host, static_cast<uint16_t>(e.quorum_port), static_cast<uint16_t>(e.election_port)});
  return out;
}

// Writes `path` whole or not at all: a file beside it, synced, renamed over it, and the folder
// synced. False with the reason in `error`.
bool write_file_atomically(const std::string& path, std::string_view text, std::string& error) {
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

}  // namespace


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
  tcp::acceptor acceptor{io};         // clientPort (plaintext, or either with client.portUnification)
  tcp::acceptor secure_acceptor{io};  // secureClientPort
  std::unique_ptr<AcceptThread> accepter;  // takes connections off both; started by run()
  std::unique_ptr<tls::ServerTlsContext> client_tls;  // ssl.*, when a port takes TLS
  // ssl.quorum.*: the contexts of member connections, accepted and made (sslQuorum, portUnification).
  std::unique_ptr<tls::ServerTlsContext> quorum_accept_tls, quorum_connect_tls;
  std::unique_ptr<auth::SaslServer> sasl;            // the JAAS Server section's, when there is one
  std::optional<auth::JaasFile> jaas;                // the JAAS file, when one is named
  std::unique_ptr<admin::AdminServer> admin_server;  // admin.enableServer
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
    admin::Summary fsynctime, sync_processor_batch_size, snapshottime, dbinittime, election_time,
        follower_sync_time, observer_sync_time, unavailable_time, leader_unavailable_time;
    admin::Summary quorum_ack_latency{true};
    // The group committer as ZooKeeper's SyncRequestProcessor: txns waiting at each submit, each
    // txn's wait before its write began and to its write's end, each write's time.
    admin::Summary sync_processor_queue_size{false, admin::Access::one_thread};  // the server's thread only
    admin::Summary sync_processor_queue_time{true}, sync_processor_flush_time{true},
        sync_processor_queue_and_flush_time{true};
    int64_t sync_processor_queued = 0;
    admin::Summary startup_snap_load_time, startup_txns_load_time, startup_txns_loaded;
    admin::Summary inflight_snap_count, inflight_diff_count;  // a leader's syncs running as one starts
    int64_t connection_rejected = 0;       // over maxClientCnxns
    int64_t learner_proposals = 0;         // learner_proposal_received_count
    admin::Summary proposal_latency{true, admin::Access::one_thread};  // fed and read on the server's thread
    // unavailable_time: from looking until this member serves again (as ZooKeeper, from its
    // LOOKING to its BROADCAST).
    std::optional<std::chrono::steady_clock::time_point> unavailable_since;
    admin::Summary log_write_micros{true};  // Warden: each group-commit write (a histogram in /metrics)
    admin::Summary jvm_pause_time{true};    // the pause monitor's overshoots (jvm.pause.monitor)
    std::map<int64_t, std::unique_ptr<admin::Summary>> ack_micros;  // Warden: per voter, on the leader
    int64_t looking_count = 0, snap_count = 0, diff_count = 0, digest_mismatches = 0;
    std::optional<std::chrono::steady_clock::time_point> looking_since, syncing_since, leading_since;
    std::chrono::steady_clock::time_point snapshot_started;
  };
  mutable Metrics metrics;  // read by the const four_letter_env, reset by srst
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

  void note_learner_links() {
    if (!ensemble->leading()) return learner_stats.clear();
    for (const auto& l : ensemble->link_views()) {
      auto& st = learner_stats[l.id];
      if (st.link != l.link && l.synced) st = LearnerStats{l.link, wall_ms(), 0, 0, 0};
    }
  }

  admin::Json observer_infos(int64_t& synced) const {
    admin::Json all = admin::Json::array();
    synced = 0;
    if (!ensemble || !ensemble->leading()) return all;
    for (const auto& l : ensemble->link_views()) {
      if (!l.observer || !l.synced) continue;
      ++synced;
      auto st = learner_stats.count(l.id) ? learner_stats.at(l.id) : LearnerStats{};
      admin::Json info = admin::Json::object();
      auto it = config.servers.find(l.id);
      // The observer's configured quorum address (ZooKeeper shows its socket's remote end).
      info.set("remote_socket_address",
               it == config.servers.end() ? std::string() : fmt::format("{}:{}", it->second.host, it->second.quorum_port));
      info.set("sid", l.id);
      info.set("established", st.established_ms);
      info.set("queued_packets", static_cast<int64_t>(transport->queued_frames(l.id)));
      info.set("queued_packets_size", static_cast<int64_t>(transport->queued(l.id)));
      info.set("packets_received", static_cast<int64_t>(l.received - std::min(l.received, st.received_base)));
      info.set("packets_sent", static_cast<int64_t>(l.sent - std::min(l.sent, st.sent_base)));
      info.set("requests", st.requests);
      info.set("last_zxid", l.informed);
      all.push(std::move(info));
    }
    return all;
  }
  bool throttling = false;
  FourLetterHandler four_letter = [this](std::string_view word, ConnId id) {
    if (!four_letter_allowed(config.four_letter_whitelist, word)) return four_letter_refusal(word);
    return server->four_letter(word, id, four_letter_env(word));
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
  bool heap_to_trim = false;         // a snapshot was written, or node blocks freed, since the last trim
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
  std::unique_lock<std::mutex> hold_tree() {
    tree_waiting.fetch_add(1, std::memory_order_acq_rel);
    std::unique_lock<std::mutex> hold(tree_mutex);
    tree_waiting.fetch_sub(1, std::memory_order_acq_rel);
    return hold;
  }
  // A walker's wait before it takes tree_mutex for its next batch.
  void walker_turn() const {
    while (tree_waiting.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  }
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

  static ServerOptions options_of(const Config& c) {
    ServerOptions o;
    o.tick_ms = c.tick_time;
    o.min_session_timeout_ms = c.effective_min_session_timeout();
    o.max_session_timeout_ms = c.effective_max_session_timeout();
    o.extended_types = c.extended_types;
    o.digest_enabled = c.digest_enabled;
    o.container_check_interval_ms = c.container_check_interval_ms;
    o.sessionless_timeout_ms = c.sessionless_timeout_ms;
    o.read_only_mode = c.read_only_mode && c.ensemble();
    o.reconfig_enabled = c.reconfig_enabled;
    o.standalone_enabled = c.standalone_enabled;
    o.super_digest = c.super_digest;
    o.enforce_quota = c.enforce_quota;
    o.skip_acl = c.skip_acl;
    o.linearizable_reads = c.linearizable_reads;
    o.sasl_acls = c.sasl_provider;
    if (c.enforce_auth) o.enforce_auth_schemes = c.enforce_auth_schemes;
    o.server_id = static_cast<uint8_t>(c.session_id_byte());
    o.config_node = config_node_text(c);
    o.config_version = static_cast<Zxid>(c.config_version);
    return o;
  }

  // What the four-letter words need from outside the pipeline; only what `word` shows is read.
  FourLetterEnv four_letter_env(std::string_view word) const {
    FourLetterEnv env;
    env.uptime_ms = wall_ms() - started_ms;
    if (ensemble) add_member_state(env);
    std::string data_dir = config.in_memory ? std::string() : config.data_dir;
    std::string log_dir = config.in_memory ? std::string()
                                           : log_dir_of(config.data_log_dir.empty() ? config.data_dir : config.data_log_dir);
    if (word == "dirs" || word == "conf") {
      env.data_dir_bytes = directory_bytes(data_dir);
      env.log_dir_bytes = directory_bytes(log_dir);
    }
    if (word == "conf") add_conf_lines(env, data_dir, log_dir);
    if (word == "srst") reset_metrics();
    if (word == "mntr" || word == "srst") add_monitor_values(env);
    if (word == "mntr") add_descriptor_counts(env);
    if (word == "envi") add_environment(env);
    if (word == "sysp") add_system_properties(env);
    if (word == "dirs" || word == "srvr") add_storage_facts(env);
    return env;
  }

  // A member's role, as srvr and mntr show it.
  void add_member_state(FourLetterEnv& env) const {
    env.mode = member_view.mode();
    env.serving = ensemble->serving();
    env.peer_state = std::string(ensemble->role_name()) + " - " +
                     (ensemble->serving() ? "broadcast" : ensemble->leader() ? "synchronization" : "election");
    env.followers = static_cast<int64_t>(ensemble->followers());
    env.synced_followers = static_cast<int64_t>(ensemble->synced_followers());
    if (server->read_only()) {
      // As ZooKeeper's ReadOnlyZooKeeperServer: it serves, in mode "read-only".
      env.mode = "read-only";
      env.serving = true;
    }
  }

  // conf's key=value lines, in ZooKeeper's order.
  void add_conf_lines(FourLetterEnv& env, const std::string& data_dir, const std::string& log_dir) const {
    boost::system::error_code ec;
    auto bound = acceptor.local_endpoint(ec);
    env.conf = {{"clientPort", std::to_string(ec ? config.client_port : bound.port())},
                {"secureClientPort", secure_port_text()},
                {"dataDir", data_dir},
                {"dataDirSize", std::to_string(env.data_dir_bytes)},
                {"dataLogDir", log_dir},
                {"dataLogSize", std::to_string(env.log_dir_bytes)},
                {"tickTime", std::to_string(config.tick_time)},
                {"maxClientCnxns", std::to_string(config.max_client_cnxns)},
                {"minSessionTimeout", std::to_string(config.effective_min_session_timeout())},
                {"maxSessionTimeout", std::to_string(config.effective_max_session_timeout())},
                {"clientPortListenBacklog", "-1"},
                {"serverId", std::to_string(config.my_id.value_or(0))}};  // ZooKeeper's standalone says 0
    if (const PeerEntry* self = config.ensemble() ? config.self() : nullptr) {
      // What ZooKeeper's conf adds for a member of an ensemble (electionAlg 3: fast election).
      env.conf.insert(env.conf.end(), {{"initLimit", std::to_string(config.init_limit)},
                                       {"syncLimit", std::to_string(config.sync_limit)},
                                       {"electionAlg", "3"},
                                       {"electionPort", std::to_string(self->election_port)},
                                       {"quorumPort", std::to_string(self->quorum_port)},
                                       {"peerType", self->observer() ? "1" : "0"}});
    }
  }

  // ZooKeeper's reset empties every metric, counters too (the summaries are reset by the
  // pipeline through env.summaries).
  void reset_metrics() const {
    metrics.sync_processor_queued = metrics.connection_rejected = metrics.learner_proposals = 0;
    metrics.looking_count = metrics.snap_count = metrics.diff_count = metrics.digest_mismatches = 0;
  }

  // mntr's summaries and counters that the runtime keeps (the pipeline adds its own).
  void add_monitor_values(FourLetterEnv& env) const {
    env.summaries = {{"fsynctime", &metrics.fsynctime},
                     {"sync_processor_batch_size", &metrics.sync_processor_batch_size},
                     {"snapshottime", &metrics.snapshottime},
                     {"dbinittime", &metrics.dbinittime},
                     {"election_time", &metrics.election_time},
                     {"follower_sync_time", &metrics.follower_sync_time},
                     {"observer_sync_time", &metrics.observer_sync_time},
                     {"unavailable_time", &metrics.unavailable_time},
                     {"leader_unavailable_time", &metrics.leader_unavailable_time},
                     {"sync_processor_queue_size", &metrics.sync_processor_queue_size},
                     {"sync_processor_queue_time_ms", &metrics.sync_processor_queue_time},
                     {"sync_processor_queue_flush_time_ms", &metrics.sync_processor_flush_time},
                     {"sync_processor_queue_and_flush_time_ms", &metrics.sync_processor_queue_and_flush_time},
                     {"startup_snap_load_time", &metrics.startup_snap_load_time},
                     {"startup_txns_load_time", &metrics.startup_txns_load_time},
                     {"startup_txns_loaded", &metrics.startup_txns_loaded},
                     {"inflight_snap_count", &metrics.inflight_snap_count},
                     {"inflight_diff_count", &metrics.inflight_diff_count},
                     {"proposal_latency", &metrics.proposal_latency},
                     {"quorum_ack_latency", &metrics.quorum_ack_latency},
                     {"jvm_pause_time_ms", &metrics.jvm_pause_time}};
    env.metrics = {{"looking_count", metrics.looking_count},
                   {"snap_count", metrics.snap_count},
                   {"diff_count", metrics.diff_count},
                   {"digest_mismatches_count", metrics.digest_mismatches},
                   {"sync_processor_request_queued", metrics.sync_processor_queued},
                   {"connection_rejected", metrics.connection_rejected},
                   {"learner_proposal_received_count", metrics.learner_proposals},
                   {"outstanding_tls_handshake", connections->handshakes()}};
    if (ensemble) add_member_metrics(env);
  }

  void add_member_metrics(FourLetterEnv& env) const {
    int64_t voters = 0;
    for (const auto& [id, e] : config.servers) voters += e.observer() ? 0 : 1;
    env.metrics.emplace_back("quorum_size", voters);
    if (ensemble->leading()) {
      int64_t observers = 0;
      for (const auto& l : ensemble->link_views()) observers += l.observer && l.synced ? 1 : 0;
      env.metrics.emplace_back("learners", static_cast<int64_t>(ensemble->followers()));
      env.metrics.emplace_back("leader_uptime", metrics.leading_since ? ms_since(*metrics.leading_since) : 0);
      env.metrics.emplace_back("synced_observers", observers);
      env.metrics.emplace_back("synced_non_voting_followers", int64_t{0});
    } else {
      // ZooKeeper's followers serve it too (observer masters); Warden's observers follow the
      // leader, so a follower has none.
      env.metrics.emplace_back("synced_observers", int64_t{0});
    }
  }

  static void add_descriptor_counts(FourLetterEnv& env) {
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
      ++env.open_fds;
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0) env.max_fds = static_cast<int64_t>(lim.rlim_cur);
  }

  static void add_environment(FourLetterEnv& env) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    env.environment = {{"zookeeper.version", four_letter_version()}, {"host.name", host}};
    for (auto& kv : host_facts()) env.environment.push_back(std::move(kv));
    env.environment.emplace_back("process.id", std::to_string(getpid()));
  }

  void add_system_properties(FourLetterEnv& env) const {
    env.system_properties = {{"file.separator", "/"}, {"line.separator", "\n"}, {"path.separator", ":"}};
    for (auto& kv : host_facts()) env.system_properties.push_back(std::move(kv));
    std::sort(env.system_properties.begin(), env.system_properties.end());
    for (const auto& kv : config.properties) env.system_properties.push_back(kv);
  }

  // The log's slow writes and the newest complete snapshot (dirs, srvr).
  void add_storage_facts(FourLetterEnv& env) const {
    env.fsync_threshold_exceeded = committer ? committer->slow_writes() : 0;
    const storage::SnapshotStore* snaps = log ? log->snapshots() : nullptr;
    auto all = snaps ? snaps->complete_snapshots() : std::vector<Zxid>{};
    if (!all.empty()) {
      env.last_snapshot_zxid = all.back();
      if (all.back() == last_snapshot.first) env.last_snapshot_seconds = last_snapshot.second;
    }
  }

  // ZooKeeper 3.9's snapshot and restore admin commands. The backup file is written, or an
  // upload restored into a staging store, on backup_worker; the reply goes out from this thread.
  std::thread backup_worker;
  bool backup_running = false;
  bool restoring = false;  // a restored store is in place: the process is about to start again on it
  uint64_t backups_made = 0;  // names each backup's file, so that two in flight never share one
  int backups_sending = 0;    // backup files written and not yet sent whole (or failed)
  // Backups whose files may wait on disk at once for slow readers: each is a copy of the state.
  static constexpr int max_backups_sending = 4;
  std::map<std::string, std::chrono::steady_clock::time_point> backup_last;  // rate limit per command

  // A backup's file in dataDir while it is written and sent: "admin-snapshot-PID-N.tmp".
  static constexpr std::string_view backup_file_prefix = "admin-snapshot-";

  // Backup files and uploads that a process stopped mid-transfer left in dataDir: nothing reads
  // them again (their names carry the old PID).
  void remove_backup_leftovers() const {
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(config.data_dir, ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      std::string name = it->path().filename().string();
      bool backup = name.rfind(backup_file_prefix, 0) == 0 && name.size() > 4 && name.substr(name.size() - 4) == ".tmp";
      if (backup || name.rfind("admin-upload-", 0) == 0) {
        std::error_code rm;
        std::filesystem::remove(it->path(), rm);
        spdlog::info("removed {} (a backup or upload a stopped process left)", it->path().string());
      }
    }
  }

  std::string store_dir() const {
    return log_dir_of(config.data_log_dir.empty() ? config.data_dir : config.data_log_dir);
  }

  static admin::AdminReply json_reply(int status, const std::string& command, admin::Json error,
                                      std::vector<std::pair<std::string, admin::Json>> extra = {}) {
    admin::Json j = admin::Json::object();
    for (auto& [k, v] : extra) j.set(k, std::move(v));
    j.set("command", command);
    j.set("error", std::move(error));
    admin::AdminReply r;
    r.status = status;
    r.body = j.dump();
    return r;
  }

  // ZooKeeper 3.9's snapshot and restore commands: checked (on, serving, authorized, a store,
  // a leader for a restore, the rate limit), then run off the server's thread.
  void backup_command(const std::string& primary, admin::AdminRequest req,
                      std::function<void(admin::AdminReply)> done) {
    auto now = std::chrono::steady_clock::now();
    if (auto refused = backup_refusal(primary, req, now)) {
      std::error_code ec;
      if (!req.body_file.empty()) std::filesystem::remove(req.body_file, ec);
      return done(std::move(*refused));
    }
    backup_last[primary] = now;
    backup_running = true;
    if (backup_worker.joinable()) backup_worker.join();
    if (primary == "snapshot") return write_backup(req, std::move(done));
    restore_backup(req, std::move(done));
  }

  // The answer that refuses a backup command, or nothing when it may run.
  std::optional<admin::AdminReply> backup_refusal(const std::string& primary, const admin::AdminRequest& req,
                                                  std::chrono::steady_clock::time_point now) {
    bool snapshot = primary == "snapshot";
    if (!(snapshot ? config.admin_snapshot_enabled : config.admin_restore_enabled)) {
      spdlog::warn("AdminServer: the {} command is off (admin.{}.enabled)", primary, primary);
      return json_reply(503, primary, nullptr);
    }
    if (!server->serving()) return json_reply(200, primary, "This ZooKeeper instance is not currently serving requests");
    auto [status, why] = server->admin_authorized(req.authorization, req.peer, "/", 31);  // ALL on /
    if (status != 200) {
      spdlog::warn("AdminServer: {} from {} refused: {}", primary, req.peer, why);
      return json_reply(status, primary, why);
    }
    if (!snapshot && req.body_file.empty()) return json_reply(400, primary, "the request has no body");
    if (config.in_memory || !log->snapshots()) return json_reply(500, primary, "this server keeps no durable store");
    if (!snapshot && ((ensemble && !ensemble->leading()) || restart_argv().empty()))
      return json_reply(500, primary,
                        restart_argv().empty() ? std::string("restore needs the warden-server process")
                                               : fmt::format("restore on the leader (server {}): it restarts on "
                                                             "the restored state and syncs every member",
                                                             ensemble->leader()));
    auto last = backup_last.find(primary);
    if (backup_running || (snapshot && backups_sending >= max_backups_sending) ||
        (last != backup_last.end() && now - last->second < std::chrono::milliseconds(config.admin_rate_limit_ms))) {
      spdlog::warn("AdminServer: {} request rate limited (admin.rateLimiterIntervalInMS={})", primary,
                   config.admin_rate_limit_ms);
      return json_reply(429, primary, nullptr);
    }
    return std::nullopt;
  }

  // The snapshot command: the backup file written on the worker, then sent (or dropped).
  void write_backup(const admin::AdminRequest& req, std::function<void(admin::AdminReply)> done) {
    // Everything applied here, which this server's clients may have read: a follower applies a
    // txn the quorum committed while its own log may still be writing it, so the worker waits
    // (bounded) for the log to hold it; past the bound, the state both hold.
    Zxid upto = server->tree().last_applied();
    bool streaming = req.query.find("streaming=false") == std::string::npos;
    std::string file = fmt::format("{}/{}{}-{}.tmp", config.data_dir, backup_file_prefix, getpid(), ++backups_made);
    spdlog::info("AdminServer: writing a backup of the state at 0x{:x} for {}", upto, req.peer);
    backup_worker = std::thread([this, upto, file, streaming, done = std::move(done)]() mutable {
      std::string error;
      backup::BackupInfo info;
      try {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (log->last_zxid() < upto && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        upto = std::min(upto, log->last_zxid());
        info = backup::write_backup(*log, upto, file);
      } catch (const std::exception& e) {
        error = e.what();
      }
      asio::post(io, [this, info, error, file, streaming, done = std::move(done)] {
        backup_running = false;
        std::error_code ec;
        if (!error.empty()) {
          spdlog::error("AdminServer: the backup failed: {}", error);
          std::filesystem::remove(file, ec);
          return done(json_reply(500, "snapshot", error));
        }
        spdlog::info("AdminServer: backup of 0x{:x} written: {} bytes (the snapshot at 0x{:x} and {} txns)",
                     info.last, info.bytes, info.snapshot, info.txns);
        admin::AdminReply r = json_reply(200, "snapshot", nullptr);
        r.headers = {{"last_zxid", fmt::format("0x{:x}", info.last)}, {"snapshot_size", std::to_string(info.bytes)}};
        if (streaming) {
          // The file is this backup's alone; the AdminServer removes it once it is sent (or the
          // transfer fails), then calls `after`.
          r.file = file;
          r.content_type = "application/octet-stream";
          ++backups_sending;
          r.after = [this] { --backups_sending; };
        } else {
          std::filesystem::remove(file, ec);
        }
        done(std::move(r));
      });
    });
  }

  // The restore command: the upload read into a staging store on the worker, then swapped in.
  void restore_backup(const admin::AdminRequest& req, std::function<void(admin::AdminReply)> done) {
    auto paths = backup::restore_paths(store_dir());
    std::error_code size_ec;
    spdlog::warn("AdminServer: restoring a backup from {} ({} bytes)", req.peer,
                 std::filesystem::file_size(req.body_file, size_ec));
    // Above every zxid this server (and so its clients, and on a leader the ensemble) has.
    Zxid above = std::max(log->last_zxid(), server->tree().last_applied());
    backup_worker = std::thread([this, paths, above, upload = req.body_file, done = std::move(done)]() mutable {
      std::string error;
      backup::BackupInfo info;
      std::error_code ec;
      try {
        backup::clear_staging(paths);
        info = backup::restore_backup(upload, paths.staging, above);
        backup::mark_staging_complete(paths);
      } catch (const std::exception& e) {
        error = e.what();
        std::filesystem::remove_all(paths.staging, ec);
      }
      std::filesystem::remove(upload, ec);
      asio::post(io, [this, info, error, paths, done = std::move(done)]() mutable {
        backup_running = false;
        if (error.empty()) error = swap_in_restored(paths);
        if (!error.empty()) {
          spdlog::error("AdminServer: the restore was refused: {}", error);
          return done(json_reply(500, "restore", error));
        }
        // The restored store is in place: the 200 goes out, then the process starts again on it.
        admin::AdminReply r = json_reply(200, "restore", nullptr, {{"last_zxid", static_cast<int64_t>(info.last)}});
        r.after = [this, last = info.last] { restart_on_restored(last); };
        if (ensemble)  // the others lose their leader now, and it is elected again, ahead of them
          spdlog::warn("restoring the ensemble: this leader restarts on the backup and syncs every member");
        done(std::move(r));
      });
    });
  }

  // The restored store takes the store's place ("" when it did, else why not). From here until
  // the process starts again no client request is read: a write taken now would go to the store
  // just replaced.
  std::string swap_in_restored(const backup::RestorePaths& paths) {
    restoring = true;
    if (committer) committer->wait_idle();
    try {
      backup::swap_in_restored(paths);
    } catch (const std::exception& e) {
      std::string why = e.what();
      if (std::filesystem::exists(paths.store)) {  // the store is back: serve on from it
        restoring = false;
        resume_reading();  // connections paused by the swap read again
        return why;
      }
      spdlog::critical("cannot put the restored store in place ({}): stopping; the next start settles it", why);
      spdlog::shutdown();
      std::_Exit(70);
    }
    return {};
  }

  // The process starts again in place (the same PID, arguments and environment) on the restored
  // store that swap_in_restored put in place, so every part of the server opens it.
  [[noreturn]] void restart_on_restored(Zxid last) {
    restart_in_place(fmt::format("on the restored state at 0x{:x}", last));
  }

  // Set while a process started again on an empty store after setting a damaged one aside: the
  // empty one failing too is not set aside again (a disk that fails every read), it stops.
  static constexpr const char* set_aside_env = "WARDEN_STORE_SET_ASIDE";

  // An ensemble member's damaged store goes aside whole (storage/damage/set_aside.hpp).
  static void set_aside(const std::string& dir, const std::string& why) {
    std::string to = storage::set_aside_damaged(dir);
    spdlog::error("{}. The store is set aside whole as {} (kept for inspection: remove it once this member serves "
                  "again); this member starts on an empty store, unsynced: members that are synced do not count its "
                  "votes, and it takes part again once the leader they elect has synced it whole (docs/operations.md, "
                  "Storage faults)",
                  why, to);
  }

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

  void admin_request(admin::AdminRequest req, std::function<void(admin::AdminReply)> done) {
    std::string primary = admin::primary_name(req.name);
    if (primary == "snapshot" || primary == "restore") return backup_command(primary, std::move(req), std::move(done));
    if (!req.body_file.empty()) {
      std::error_code ec;
      std::filesystem::remove(req.body_file, ec);
    }
    admin::AdminReply r;
    r.body = admin_command(req.name, req.query);
    done(std::move(r));
  }

  // Warden's own metrics, beyond ZooKeeper's names: each log write's time as a histogram, and on
  // a leader each learner's lag in txns and each voter's ack latency.
  std::string warden_metrics() const {
    std::string out = admin::prometheus_histogram(
        "warden_log_write_seconds", "Time of each group-commit write to the log (write and fsync), in seconds.",
        metrics.log_write_micros, 1e-6, {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                         0.5, 1, 2.5, 5});
    // ZooKeeper's ack_latency: a voter's acknowledgement time in ms, keyed by its id, on the
    // leader (a family with no series elsewhere, as ZooKeeper registers it on every member).
    std::vector<std::pair<std::string, admin::Summary*>> by_sid;
    if (ensemble && ensemble->leading())
      for (const auto& [id, s] : metrics.ack_micros) by_sid.emplace_back(fmt::format("key=\"{}\"", id), s.get());
    out += admin::prometheus_summaries("ack_latency", "ack_latency", by_sid, 1e-3);
    if (!ensemble || !ensemble->leading()) return out;
    Zxid last = ensemble->last_proposed();
    std::vector<std::pair<std::string, double>> lag;
    for (const auto& l : ensemble->link_views()) {
      Zxid at = l.observer ? l.informed : l.acked;
      // Txns between: within one epoch the counters' difference; from an older epoch, the
      // whole of this epoch so far.
      int64_t behind = (at >> 32) == (last >> 32) ? (last & 0xffffffff) - (at & 0xffffffff) : (last & 0xffffffff);
      lag.emplace_back(fmt::format("server_id=\"{}\"", l.id), static_cast<double>(std::max<int64_t>(behind, 0)));
    }
    out += admin::prometheus_gauges("warden_learner_lag_txns",
                                    "Txns the leader proposed that a learner has not acknowledged (voters) or been "
                                    "sent committed (observers).", lag);
    std::vector<std::pair<std::string, admin::Summary*>> acks;
    for (const auto& [id, s] : metrics.ack_micros) acks.emplace_back(fmt::format("server_id=\"{}\"", id), s.get());
    out += admin::prometheus_summaries("warden_learner_ack_latency_seconds",
                                       "Time from a proposal to a voter's acknowledgement of it, in seconds.", acks,
                                       1e-6);
    return out;
  }

  // os.* and user.* as a JVM reports them (envi and system_properties).
  static std::vector<std::pair<std::string, std::string>> host_facts() {
    utsname u{};
    uname(&u);
    const passwd* pw = getpwuid(geteuid());
    std::error_code ec;
    return {{"os.name", u.sysname},
            {"os.arch", u.machine},
            {"os.version", u.release},
            {"user.name", pw ? pw->pw_name : ""},
            {"user.home", pw ? pw->pw_dir : ""},
            {"user.dir", std::filesystem::current_path(ec).string()}};
  }

  // An AdminServer command's JSON, with what the matching four-letter word's environment has.
  std::string admin_command(std::string_view name, std::string_view query) {
    std::string primary = admin::primary_name(name);
    static const std::map<std::string, std::string, std::less<>> word_of{
        {"configuration", "conf"}, {"dirs", "dirs"},         {"monitor", "mntr"},
        {"environment", "envi"},   {"zabstate", "mntr"},     {"system_properties", "sysp"},
        {"server_stats", "dirs"},  {"stats", "dirs"},        {"last_snapshot", "srvr"},
        {"stat_reset", "srst"}};
    auto w = word_of.find(primary);
    FourLetterEnv env = four_letter_env(w == word_of.end() ? std::string_view() : std::string_view(w->second));
    if (primary == "configuration")
      for (const auto& [k, v] : env.conf) {
        // ZooKeeper's names for conf's keys, with their types (numbers as numbers).
        std::string key;
        for (char ch : k) {
          if (ch >= 'A' && ch <= 'Z') key += '_', key += static_cast<char>(ch - 'A' + 'a');
          else key += ch;
        }
        if (key == "data_dir_size" || key == "data_log_size" || key == "secure_client_port") continue;
        bool number = !v.empty() && v.find_first_not_of("-0123456789") == std::string::npos;
        env.admin_conf.emplace_back(key, number ? admin::Json(static_cast<int64_t>(std::stoll(v))) : admin::Json(v));
      }
    env.initial_configuration = config.config_text;
    for (const auto& [id, e] : config.servers) {  // ZooKeeper's QuorumServer, as its voting_view shows it
      FourLetterEnv::Member m{id, e.host, e.quorum_port, e.election_port, "", e.role};
      if (e.client_port >= 0)  // given on the server line
        m.client_address = (e.client_host.empty() ? std::string("0.0.0.0") : e.client_host) + ":" +
                           std::to_string(e.client_port);
      else if (config.my_id && id == *config.my_id)  // its own: where it listens
        m.client_address = address_of(acceptor);
      if (config.my_id && id == *config.my_id) env.self = m;
      if (!e.observer()) env.voting_view.push_back(std::move(m));
    }
    env.last_zxid = server->tree().last_applied();
    if (primary == "observers") env.observers = observer_infos(env.synced_observers);
    if (primary == "observer_connection_stat_reset" && ensemble && ensemble->leading())
      for (const auto& l : ensemble->link_views()) {
        auto& st = learner_stats[l.id];
        st.sent_base = l.sent;
        st.received_base = l.received;
        st.requests = 0;
      }
    if (ensemble) {
      env.leader_id = ensemble->leader();
      if (auto it = config.servers.find(env.leader_id); it != config.servers.end()) env.leader_ip = it->second.host;
    }
    return server->admin_command(name, env, query).dump();
  }

  std::string secure_port_text() const {
    boost::system::error_code ec;
    auto bound = secure_acceptor.local_endpoint(ec);
    return std::to_string(ec ? config.secure_client_port : bound.port());
  }

  static int64_t directory_bytes(const std::string& dir) {
    int64_t total = 0;
    std::error_code ec;
    if (dir.empty()) return 0;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code size_ec;
      if (it->is_regular_file(size_ec)) total += static_cast<int64_t>(it->file_size(size_ec));
    }
    return total;
  }

  // The pipeline's options: the config's, and SASL's exchanges when a JAAS Server section is found.
  ServerOptions server_options() {
    ServerOptions o = options_of(config);
    if (sasl) {
      o.sasl = [s = sasl.get()] { return s->start(); };
      o.sasl_super_user = config.sasl_super_user;
      o.sasl_failed_clients_stay = config.allow_sasl_failed_clients;
    }
    return o;
  }

  // The JAAS file's SASL section (start fails on a file that is there but unusable, as ZooKeeper's).
  void load_sasl() {
    bool required = std::find(config.enforce_auth_schemes.begin(), config.enforce_auth_schemes.end(), "sasl") !=
                    config.enforce_auth_schemes.end();
    if (!config.jaas_file.empty()) {
      auto jaas = auth::load_jaas(config.jaas_file);
      if (auto* why = std::get_if<std::string>(&jaas))
        throw std::runtime_error(*why + (config.jaas_origin.empty() ? "" : " (named by " + config.jaas_origin + ")"));
      const auto& file = this->jaas.emplace(std::get<auth::JaasFile>(jaas));
      if (file.section(config.sasl_section)) {
        sasl = std::make_unique<auth::SaslServer>(
            file, config.sasl_section, auth::SaslServer::Principals{config.kerberos_remove_host, config.kerberos_remove_realm});
        spdlog::info("SASL for clients: {} ({}'s {} section)", sasl->mechanism(), config.jaas_file,
                     config.sasl_section);
      } else if (!required) {
        spdlog::warn("{} has no {} section: no SASL for clients", config.jaas_file, config.sasl_section);
      }
    }
    if (required && !sasl)
      throw std::runtime_error("enforce.auth.schemes (or sessionRequireClientSASLAuth) asks for sasl, but no JAAS " +
                               config.sasl_section + " section offers it (set jaasConfigFile, or "
                               "-Djava.security.auth.login.config in SERVER_JVMFLAGS)");
  }

  explicit Impl(const Config& c) : config(c) {
    load_sasl();
    if (config.tls_needed()) {
      client_tls = std::make_unique<tls::ServerTlsContext>(config.client_tls);  // throws, naming key and file
      for (TlsPolicy* p : {&plain_policy, &secure_policy}) {
        p->context = client_tls.get();
        p->x509_super_user = config.x509_super_user;
      }
      secure_policy.mode = TlsPolicy::Mode::tls;
      if (config.client_port_unification) plain_policy.mode = TlsPolicy::Mode::either;
    }
    if (config.in_memory) {
      log = std::make_unique<storage::MemoryLogStore>();
    } else {
      auto dir = std::filesystem::path(log_dir_of(config.data_log_dir.empty() ? config.data_dir : config.data_log_dir));
      std::error_code ec;
      // A restore (POST /commands/restore) put its store in place and started this process
      // again, or was cut short by a crash: settled before the store opens (restore_swap.hpp).
      if (auto note = backup::settle_interrupted_restore(backup::restore_paths(dir.string())); !note.empty())
        spdlog::warn("{}", note);
      remove_backup_leftovers();
      std::filesystem::create_directories(dir, ec);
      if (ec) throw storage::StorageError("cannot create the log directory " + dir.string() + ": " + ec.message());
      std::unique_ptr<storage::RocksDbLogStore> durable;
      try {
        durable = std::make_unique<storage::RocksDbLogStore>(dir.string(), config.force_sync);
      } catch (const storage::StorageDamage& e) {
        if (!config.ensemble())
          throw storage::StorageDamage(std::string(e.what()) +
                                       ": a standalone server does not start on it (docs/operations.md, Storage "
                                       "faults, says what to do)");
        set_aside(dir.string(), e.what());
        durable = std::make_unique<storage::RocksDbLogStore>(dir.string(), config.force_sync);
      }
      if (!durable->recovery_note().empty()) spdlog::warn("{}", durable->recovery_note());
      log = std::move(durable);
      if (!config.force_sync) spdlog::warn("forceSync=no: a machine crash may lose acknowledged writes");
    }
    if (config.ensemble()) {
      make_member();
      replication = ensemble.get();
      server = std::make_unique<RequestPipeline>(server_options(), *ensemble, wall_ms, steady_ms);
      member_view.r = ensemble.get();
      server->set_ensemble(&member_view);
      server->set_on_config([this](std::string_view text, Zxid version) { config_in_force(text, version); });
    } else {
      replicator = std::make_unique<consensus::ZabReplicator>(*log,
                                                              [this](storage::LogEntry e) { persist(std::move(e)); });
      replication = replicator.get();
      server = std::make_unique<RequestPipeline>(server_options(), *replicator, wall_ms, steady_ms);
    }
    connections = std::make_unique<ClientConnections>(
        io, *server, ClientConnections::Limits{config.jute_max_buffer, config.max_client_cnxns}, four_letter);
    connections->pause_while([this] { return over_outstanding_limit(); });
    server->set_fan_out(&connections->fan_out());
    auto* snapshots = log->snapshots();
    if (!snapshots) start_replication(0);  // an in-memory log starts empty
    if (snapshots) {
      try {
        recover(*snapshots);
      } catch (const storage::StorageError& e) {
        // Damage that only reading finds (a table file's block, the replica state): an ensemble
        // member sets its store aside as at the open, and starts again in place on an empty one.
        if (!config.ensemble() || dynamic_cast<const storage::DiskFullError*>(&e) || std::getenv(set_aside_env) ||
            restart_argv().empty())
          throw;
        set_aside(store_dir(), e.what());
        setenv(set_aside_env, "1", 1);
        restart_in_place("on an empty store");
      }
      unsetenv(set_aside_env);
      return_free_memory();  // what loading the snapshot and replaying the log left behind
      plan_next_snapshot();
      snapshot_writer = std::make_unique<storage::SnapshotWriter>(*snapshots, [this](Zxid at, uint64_t attempt,
                                                                                  std::string error) {
        asio::post(io, [this, at, attempt, error] {
          heap_to_trim = true;
          if (error.empty()) {
            spdlog::info("snapshot at 0x{:x} written: durable", at);
          } else {  // a snapshot is an optimisation: without it the log still holds everything
            spdlog::error("snapshot at 0x{:x} abandoned: {}", at, error);
            // Its producer stopped with the failure. Matched by attempt, not zxid: a later
            // attempt at the same zxid may be walking already (its failure came after the walk).
            if (walk && walk_attempt == attempt) walk.reset();
          }
        });
      });
      committer = std::make_unique<storage::GroupCommitter>(
          *log, [this](Zxid upto, std::optional<storage::GroupCommitter::Failure> failure) {
            asio::post(io, [this, upto, failure] { on_durable(upto, failure); });
          },
          config.fsync_warning_ms, [this](const storage::GroupCommitter::Write& w) {
            metrics.fsynctime.add(w.micros / 1000);
            metrics.log_write_micros.add(w.micros);
            metrics.sync_processor_batch_size.add(static_cast<int64_t>(w.waited_micros.size()));
            metrics.sync_processor_flush_time.add(w.micros / 1000);
            metrics.sync_processor_queue_time.add_each(w.waited_micros, 0, 1000);
            metrics.sync_processor_queue_and_flush_time.add_each(w.waited_micros, w.micros, 1000);
          });
    }
  }

  void recover(const storage::SnapshotStore& snapshots) {
    auto started = std::chrono::steady_clock::now();
    struct Timed {  // dbinittime: the snapshot's load and the replay after it
      Metrics& m;
      std::chrono::steady_clock::time_point t;
      ~Timed() { m.dbinittime.add(ms_since(t)); }
    } timed{metrics, started};
    const storage::LogStore& durable = *log;
    SnapshotSink sink{[this] { server->start_snapshot_load(); },
                      [this](std::string_view p, std::string_view r) { return server->load_snapshot_node(p, r); },
                      [this](std::string_view k, std::string_view r) { return server->load_snapshot_session(k, r); }};
    Zxid from = load_newest_snapshot(
        snapshots, sink,
        [](Zxid at, size_t nodes) { spdlog::info("loading the snapshot at 0x{:x}: {} nodes so far", at, nodes); },
        1000000, [](const std::string& why) { spdlog::error("{}", why); });
    metrics.startup_snap_load_time.add(ms_since(started));
    // The log holds only what follows its base; what is at or below it lives in snapshots. With
    // no complete snapshot at or above the base, the state up to it is in no file: refused, as
    // ZooKeeper refuses "No snapshot found, but there are log entries", never started on a tree
    // that lacks it.
    if (durable.base() > from)
      throw storage::StorageError(fmt::format(
          "{}: the log starts after 0x{:x}, but {}: the txns up to 0x{:x} are in no file; refusing to start "
          "(restore a backup, or move the directory aside to have this member synced from its peers)",
          store_dir(), static_cast<uint64_t>(durable.base()),
          from ? fmt::format("the newest snapshot that loads is at 0x{:x}", static_cast<uint64_t>(from))
               : std::string("no complete snapshot loads"),
          static_cast<uint64_t>(durable.base())));
    auto replay_started = std::chrono::steady_clock::now();
    if (from) {
      server->finish_snapshot_load(from);
      spdlog::info("loaded the snapshot at 0x{:x}: {} nodes, {} sessions", from, server->tree().size(),
                   server->session_count());
    }
    // Only what is known committed replays here; the rest of the log is the replicator's to
    // commit (a lone voter commits all of it as it leads again; a follower what its leader says).
    Zxid mark = durable.replica_state().commit_mark;
    size_t n = 0;
    durable.for_each_after(from, [&](const storage::LogEntry& e) {
      if (e.zxid > mark) return;
      server->replay(e.zxid, e.payload);
      if (++n % 1000000 == 0) spdlog::info("replaying the log: {} txns so far", n);
    });
    metrics.startup_txns_load_time.add(ms_since(replay_started));
    metrics.startup_txns_loaded.add(static_cast<int64_t>(n));
    Zxid replayed = server->tree().last_applied();
    start_replication(replayed);
    if (n > 0 || from > 0 || durable.last_zxid() > 0)
      spdlog::info("recovered up to zxid 0x{:x} ({} txns replayed after the snapshot up to the commit mark 0x{:x}, "
                   "the rest committed as this server leads); {} nodes, {} sessions",
                   server->tree().last_applied(), n, replayed, server->tree().size(), server->session_count());
  }

  void start_replication(Zxid applied) {
    if (ensemble) {
      ++metrics.looking_count;
      metrics.looking_since = metrics.unavailable_since = std::chrono::steady_clock::now();
    }
    replication->start(applied);
  }

  // A reconfig's configuration, applied to the tree: its new members are reached, and it is
  // written as ZooKeeper writes it, zoo.cfg.dynamic.<version> beside the configuration file,
  // which then names it in dynamicConfigFile (its server.N lines go), so that a restart starts
  // from it.
  void config_in_force(std::string_view text, Zxid version) {
    if (version <= persisted_config) return;
    persisted_config = version;
    Config next;
    if (auto why = parse_members(next, text, "/zookeeper/config", true, true)) {
      spdlog::error("the configuration 0x{:x} does not parse: {}", static_cast<uint64_t>(version), *why);
      return;
    }
    if (transport) transport->add_members(peer_members(next.servers));
    auto self = next.servers.find(config.my_id.value_or(-1));
    bool line_has_client = self != next.servers.end() && self->second.client_port >= 0;
    if (line_has_client)
      move_client_port(self->second.client_host.empty() ? config.client_port_address : self->second.client_host,
                       self->second.client_port);
    if (config.config_file.empty()) return;
    std::string dynamic = fmt::format("{}.dynamic.{:x}", config.config_file, static_cast<uint64_t>(version));
    // As ZooKeeper's editStaticConfig: when this member's line names its client port, the static
    // clientPort goes too (and clientPortAddress, when the line names an address), so that a
    // restart does not find them contradicting the line.
    std::string static_text;
    {
      std::ifstream in(config.config_file);
      std::string line;
      while (std::getline(in, line)) {
        std::string_view key = config_key_of(line);
        if (key.rfind("server.", 0) == 0 || key == "dynamicConfigFile") continue;
        if (line_has_client && key == "clientPort") continue;
        if (line_has_client && key == "clientPortAddress" && !self->second.client_host.empty()) continue;
        static_text += line + "\n";
      }
    }
    static_text += "dynamicConfigFile=" + dynamic + "\n";
    std::string error;
    if (!write_file_atomically(dynamic, members_text(next.servers), error) ||
        !write_file_atomically(config.config_file, static_text, error))
      spdlog::error("cannot write the configuration 0x{:x}: {}", static_cast<uint64_t>(version), error);
    else
      spdlog::info("configuration 0x{:x} written to {}", static_cast<uint64_t>(version), dynamic);
  }

  // A configuration that gives this member another client address: it listens there from now
  // on, as ZooKeeper's member rebinds its client port; the connections made on the old one stay.
  // An address it cannot bind is logged, and the old one kept.
  void move_client_port(const std::string& address, int32_t port) {
    boost::system::error_code ec;
    auto bound = acceptor.local_endpoint(ec);
    if (ec || stopping) return;  // no plaintext client port
    auto wanted = asio::ip::make_address(address, ec);
    if (ec || (bound.address() == wanted && bound.port() == port)) return;
    std::string before = address_of(acceptor);
    tcp::acceptor next{io};
    auto bind = [&](tcp::acceptor& a, const std::string& host, int32_t p) {
      try {
        listen(a, host, p, "clientPort");
        return std::string();
      } catch (const std::exception& e) {
        boost::system::error_code ignored;
        a.close(ignored);
        return std::string(e.what());
      }
    };
    std::string why = bind(next, address, port);
    if (!why.empty()) {
      // The same port on another address may clash with the old socket: free it, then try.
      accept_on_client_ports(&acceptor);
      acceptor.close(ec);
      why = bind(next, address, port);
      if (!why.empty()) {
        spdlog::error("the configuration moves this member's client port to {}:{}, which cannot be bound ({}); it "
                      "stays at {}", address, port, why, before);
        bind(acceptor, bound.address().to_string(), bound.port());
        accept_on_client_ports();
        return;
      }
    }
    accept_on_client_ports(&acceptor);
    acceptor.close(ec);
    acceptor = std::move(next);
    config.client_port_address = address;
    config.client_port = port;
    accept_on_client_ports();
    spdlog::info("client port moved from {} to {} by the configuration", before, address_of(acceptor));
  }

  // An ensemble member, from the server.N lines: its replicator with the hooks that carry out what the core decides,
  // its transport (TLS and SASL as configured) and, with a store, its sync streamer.
  void make_member() {
    persisted_config = static_cast<Zxid>(config.config_version);
    consensus::EnsembleReplicator::Settings s = member_settings();
    consensus::EnsembleReplicator::Hooks h;
    h.send = [this](int64_t to, std::string m, bool vote, uint64_t link) {
      if (!vote && streamer && streamer->hold(to, link, m)) return;
      transport->send(to, std::move(m), vote);
    };
    if (log->snapshots()) add_sync_hooks(h);
    add_replication_hooks(h);
    add_membership_hooks(h);
    ensemble = std::make_unique<consensus::EnsembleReplicator>(*log, s, h);
    make_transport(s.id);
    secure_transport();
    transport->set_accept_strangers(config.reconfig_enabled);
    transport->set_on_lost([this](int64_t member) {
      if (streamer) streamer->cancel(member);
      auto hold = hold_tree();
      ensemble->peer_lost(member);
    });
    if (log->snapshots()) make_streamer(s.id);
  }

  consensus::EnsembleReplicator::Settings member_settings() const {
    consensus::EnsembleReplicator::Settings s;
    s.id = *config.my_id;
    for (const auto& [id, e] : config.servers) (e.observer() ? s.observers : s.voters).push_back(id);
    s.init_limit = config.init_limit;
    s.sync_limit = config.sync_limit;
    s.subticks = subticks();
    s.config_version = static_cast<Zxid>(config.config_version);
    s.config_members = members_text(config.servers);
    if (config.reconfig_enabled)
      s.config_of = [](std::string_view payload, std::vector<int64_t>& voters, std::vector<int64_t>& observers,
                       std::string& members) {
        auto m = reconfig::members_in_txn(payload);
        if (!m) return false;
        voters = std::move(m->voters);
        observers = std::move(m->observers);
        members = std::move(m->text);
        return true;
      };
    return s;
  }

  // Syncs stream from the store; a member without snapshots (in memory) syncs inline.
  void add_sync_hooks(consensus::EnsembleReplicator::Hooks& h) {
    h.stream = [this](consensus::EnsembleReplicator::SyncPlan p) {
      ++(p.snapshot ? metrics.snap_count : metrics.diff_count);
      bool snapshot = p.snapshot;
      streamer->start(std::move(p));
      (snapshot ? metrics.inflight_snap_count : metrics.inflight_diff_count)
          .add(static_cast<int64_t>(streamer->running(snapshot)));
    };
    h.snapshot_chunk = [this](consensus::EnsembleReplicator::SnapshotFrame f) { snapshot_frame(std::move(f)); };
    h.snapshot_complete = [this](Zxid at, uint64_t link) { return snapshot_received(at, link); };
    h.install_snapshot = [this](Zxid at) { install_snapshot(at); };
    h.digest = [this] { return server->tree().zk_digest(); };
    h.digest_mismatch = [this](Zxid z, uint64_t mine, uint64_t leaders) {
      ++metrics.digest_mismatches;
      spdlog::error("this member's tree differs from the leader's after txn 0x{:x} (digest {:016x}, the leader's "
                    "{:016x}): it is synced from nothing (digest_mismatches_count)",
                    static_cast<uint64_t>(z), mine, leaders);
    };
    h.synced_changed = [](bool synced, bool at_start) {
      if (synced)
        spdlog::info("this member's store is synced: the leader synced it whole, or it leads; its votes count again");
      else if (at_start)
        spdlog::info("this member's store is unsynced (new, wiped, or a damaged one set aside): members that are "
                     "synced do not count its votes until the leader they elect syncs it whole");
      else
        spdlog::warn("this member's store is unsynced until the leader's sync from nothing completes");
    };
    h.reset_tree = [this] {
      abandon_walk();
      server->start_snapshot_load();
      server->finish_snapshot_load(0);
      txns_since_snapshot = 0;
      spdlog::warn("the leader's history lacks what this member applied: its tree is dropped and synced "
                   "from the start");
    };
    h.live_snapshot = [this]() -> std::pair<Zxid, uint64_t> {
      const DataTree& t = server->tree();
      // A snapshot record holds a node's path, data, ACL reference and Stat: its data and
      // path (approximate_data_size) and about 64 bytes more.
      return {t.last_applied(), static_cast<uint64_t>(t.approximate_data_size()) + 64 * t.size()};
    };
  }

  // The log, forwarded requests, roles and acknowledgements.
  void add_replication_hooks(consensus::EnsembleReplicator::Hooks& h) {
    h.persist = [this](storage::LogEntry e) { persist(std::move(e)); };
    h.finish_writes = [this] {
      if (committer) committer->wait_idle();
    };
    h.request = [this](int64_t from, std::string payload) {
      ++learner_stats[from].requests;
      server->receive_forwarded(from, payload);
    };
    h.role_changed = [this] { on_role_changed(); };
    h.note = [](const std::string& n) { spdlog::error("{}", n); };
    h.acked = [this](int64_t voter, int64_t micros) {
      auto& s = metrics.ack_micros[voter];
      if (!s) s = std::make_unique<admin::Summary>(true);
      s->add(micros);
    };
    h.quorum_acked = [this](int64_t micros) { metrics.quorum_ack_latency.add(micros / 1000); };
  }

  // Configurations: one in force, one pending, and servers outside it that reach this member.
  void add_membership_hooks(consensus::EnsembleReplicator::Hooks& h) {
    h.config_changed = [this](Zxid version, const std::vector<int64_t>& voters, const std::vector<int64_t>& observers,
                              const std::string& members) {
      spdlog::info("configuration 0x{:x} in force: voters {}, observers {}", static_cast<uint64_t>(version),
                   fmt::join(voters, ","), fmt::join(observers, ","));
      // A configuration learnt from a member's vote (this one missed the reconfig) names servers
      // this member may not know: reach them now, before it syncs the txn that says where.
      Config next;
      if (!transport || members.empty() || parse_members(next, members, "a peer's configuration", true, true)) return;
      transport->add_members(peer_members(next.servers));
      if ((version & 0xffffffff) == 0 && version > persisted_config) {
        // The files' configuration, versioned by a leader's first epoch (no txn has that zxid):
        // shown and written as a reconfig's would be, as ZooKeeper writes zoo.cfg.dynamic.<epoch>00000000.
        // (The hooks run, as the commit handler does, with the tree held.)
        std::string text = members + fmt::format("version={:x}", static_cast<uint64_t>(version));
        server->configuration_versioned(text, version);
        config_in_force(text, version);
      }
    };
    // A pending reconfig's servers are reached at once: every quorum needs its voters' votes too,
    // and a member restarted with one in its log (its files name only the configuration in force)
    // would otherwise wait for votes that never come.
    h.pending_members = [this](const std::string& members) {
      Config next;
      if (!transport || members.empty() || parse_members(next, members, "a pending configuration", true, true)) return;
      transport->add_members(peer_members(next.servers));
    };
    // A server outside the configuration (one about to be added: reconfigEnabled) reaches this
    // member; its own line in the configuration it sends says where to answer it.
    h.stranger = [this](int64_t from, const std::string& members) {
      Config theirs;
      if (!transport || parse_members(theirs, members, "a joining server's configuration", true, true)) return;
      auto own = theirs.servers.find(from);
      if (own == theirs.servers.end()) return;
      auto them = peer_members({*own});
      if (!them.empty() && transport->add_stranger(them.front()))
        spdlog::info("server {}, outside the configuration, reached this member: it is answered at {}:{}:{}", from,
                     own->second.host, own->second.quorum_port, own->second.election_port);
    };
  }

  // The peer transport, whose messages go to the replicator with the tree held.
  void make_transport(int64_t id) {
    transport = std::make_unique<consensus::PeerTransport>(io, id, peer_members(config.servers), [this](int64_t from, std::string_view b) {
      std::string error;
      bool ok;
      {
        // A peer message may commit txns: never while the snapshot writer reads the tree.
        std::unique_lock<std::mutex> hold = hold_tree();
        receiving_lock = &hold;
        struct Forget {
          std::unique_lock<std::mutex>*& p;
          ~Forget() { p = nullptr; }
        } forget{receiving_lock};
        ok = ensemble->receive(from, b, &error);
        if (ok) server->peer_progress();  // a leader's ping may confirm clients' pings
      }
      if (!ok) spdlog::warn("closing the connection from server {}: {}", from, error);
      resume_reading();
      return ok;
    });
  }

  // TLS (sslQuorum, portUnification) and SASL (quorum.auth.*) between members, as configured.
  void secure_transport() {
    if (config.ssl_quorum || config.quorum_port_unification) {
      quorum_accept_tls = std::make_unique<tls::ServerTlsContext>(config.quorum_tls, true);  // throws, naming the key
      quorum_connect_tls = std::make_unique<tls::ServerTlsContext>(config.quorum_tls, false);
      consensus::PeerTransport::Tls t;
      using Accept = consensus::PeerTransport::Tls::Accept;
      t.accept = config.quorum_port_unification ? Accept::either : Accept::tls;
      t.connect = config.ssl_quorum;
      t.verify_host = config.quorum_tls.hostname_verification;
      t.server = [this] { return quorum_accept_tls->current(); };
      t.client = [this] { return quorum_connect_tls->current(); };
      transport->set_tls(std::move(t));
      spdlog::info("members: {} connections out, {} taken in", config.ssl_quorum ? "TLS" : "plaintext",
                   config.quorum_port_unification ? "TLS and plaintext" : "TLS only");
    }
    if (const auto& q = config.quorum_sasl; q.enable_sasl) {
      if (!jaas)
        throw std::runtime_error("quorum.auth.enableSasl=true needs a JAAS file with " + q.learner_section + " and " +
                                 q.server_section + " sections (set jaasConfigFile, or "
                                 "-Djava.security.auth.login.config in SERVER_JVMFLAGS)");
      std::vector<std::string> hosts;
      for (const auto& [id, e] : config.servers) hosts.push_back(e.host);
      transport->set_auth(auth::quorum_auth(config, *jaas, hosts));  // throws, naming the file and section
      spdlog::info("members: SASL ({}'s {} and {} sections){}{}", jaas->path, q.learner_section, q.server_section,
                   q.learner_require_sasl ? ", required to join others" : "",
                   q.server_require_sasl ? ", required of those who join" : "");
    }
  }

  // Leader: syncs of followers stream from the store on a thread of their own.
  void make_streamer(int64_t id) {
    consensus::SyncStreamer::Io sio;
    sio.post = [this](std::function<void()> f) { asio::post(io, std::move(f)); };
    sio.send = [this](int64_t to, std::string bytes) { transport->send(to, std::move(bytes), false); };
    sio.queued = [this](int64_t to) { return transport->queued(to); };
    sio.live = [this]() -> std::unique_ptr<consensus::LiveSnapshot> { return std::make_unique<LiveWalk>(*this); };
    sio.snapshot_unread = [this](Zxid at) {
      spdlog::warn("the snapshot at 0x{:x} could not be read: followers get an older snapshot or the live tree "
                   "until this server restarts", at);
      ensemble->snapshot_unread(at);
    };
    sio.failed = [this](int64_t to, const std::string&) {
      // Not from inside the replicator's own call (hold() runs in its send hook).
      asio::post(io, [this, to] {
        auto hold = hold_tree();
        ensemble->peer_lost(to);
      });
    };
    streamer = std::make_unique<consensus::SyncStreamer>(id, *log, log->snapshots(), std::move(sio));
    transport->set_on_written([this](int64_t member) { streamer->pump(member); });
  }

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

  bool complete_snapshot_at(Zxid at) const {
    auto all = log->snapshots() ? log->snapshots()->complete_snapshots() : std::vector<Zxid>{};
    return std::find(all.begin(), all.end(), at) != all.end();
  }

  // Follower: a frame of the snapshot the leader streams. The records go to the snapshot
  // writer as they come (it makes the caller wait when the disk falls behind, and so the
  // leader: TCP carries the wait back); a walk of this member's own is abandoned first.
  void snapshot_frame(consensus::EnsembleReplicator::SnapshotFrame f) {
    using Part = storage::SnapshotStore::SnapshotPart;
    if (f.at != receiving.at || f.link != receiving.link) {
      abandon_walk();
      receiving = Receiving{};
      receiving.at = f.at;
      receiving.link = f.link;
      snapshot_writer->start();  // a new attempt: what an earlier stream left is dropped
      spdlog::info("receiving the snapshot at 0x{:x} from server {}", f.at, ensemble->leader());
      // The same zxid is the same state: a complete snapshot there stays as it is, rather than
      // being cleared before the stream's copy is in (which would leave none for a while).
      if (complete_snapshot_at(f.at)) {
        receiving.held = true;
        spdlog::info("a complete snapshot at 0x{:x} is here already: it is kept, the stream only counted", f.at);
      }
    }
    if (receiving.end || receiving.failed) return;
    if (f.end) {
      receiving.end = true;
      receiving.sent = {f.node_records, f.session_records};
      return;
    }
    if (f.part != static_cast<char>(Part::node) && f.part != static_cast<char>(Part::session)) {
      receiving.failed = true;
      spdlog::warn("the snapshot from server {} has records of an unknown part {}", ensemble->leader(),
                   static_cast<int>(f.part));
      return;
    }
    (f.part == static_cast<char>(Part::node) ? receiving.got.node : receiving.got.session) += f.records.size();
    if (receiving.held) return;
    without_tree_lock([&] { snapshot_writer->put(f.at, static_cast<Part>(f.part), std::move(f.records)); });
  }

  // Follower, as the Sync of a streamed SNAP arrives: whether the snapshot `at` came whole on
  // `link` (every frame, the counts its last frame gives) and is written, complete and
  // durable. If not, nothing is installed: the member looks for its leader again.
  bool snapshot_received(Zxid at, uint64_t link) {
    Receiving r = receiving;
    receiving = Receiving{};
    if (r.at != at || r.link != link || !r.end || r.failed || !(r.got == r.sent)) {
      spdlog::warn("the snapshot at 0x{:x} from server {} did not arrive whole ({} and {} records of {} and {}); "
                   "syncing again", at, ensemble->leader(), r.got.node, r.got.session, r.sent.node, r.sent.session);
      return false;
    }
    if (r.held && complete_snapshot_at(at)) return true;
    snapshot_writer->finish(at, fmt::format("received from server {}", ensemble->leader()));
    without_tree_lock([&] { snapshot_writer->wait_idle(); });
    auto counts = log->snapshots()->snapshot_record_counts(at);
    if (!counts || !(*counts == r.got)) {
      spdlog::warn("the snapshot at 0x{:x} from server {} could not be written (see above); syncing again", at,
                   ensemble->leader());
      return false;
    }
    return true;
  }

  // Follower: the snapshot `at`, received and written, becomes the log's new start (everything
  // the log held goes: it is older, or not the leader's), and the tree and sessions are loaded
  // from it, as at a start.
  void install_snapshot(Zxid at) {
    auto* snapshots = log->snapshots();
    snapshots->install_snapshot(at);
    SnapshotSink sink{[this] { server->start_snapshot_load(); },
                      [this](std::string_view p, std::string_view r) { return server->load_snapshot_node(p, r); },
                      [this](std::string_view k, std::string_view r) { return server->load_snapshot_session(k, r); }};
    Zxid loaded = load_newest_snapshot(*snapshots, sink, nullptr, SIZE_MAX, nullptr);
    if (loaded != at)
      throw storage::StorageError(fmt::format("the snapshot at 0x{:x} received from server {} did not load", at,
                                              ensemble->leader()));
    server->finish_snapshot_load(at);
    txns_since_snapshot = 0;
    spdlog::info("installed the snapshot at 0x{:x} from server {}: {} nodes, {} sessions", at, ensemble->leader(),
                 server->tree().size(), server->session_count());
  }

  // Under tree_mutex: the walk in progress, if any, stops (its producer sees the generation).
  void abandon_walk() {
    if (!walk) return;
    ++walk_generation;
    walk.reset();
    spdlog::info("snapshot abandoned: a snapshot from the leader replaces it");
  }

  // The core ticks ten times a tickTime, but not more often than every 10 ms.
  int subticks() const { return std::max(1, std::min(10, config.tick_time / 10)); }

  void on_role_changed() {
    if (streamer && !ensemble->leading()) streamer->cancel_all();
    // election_time: from looking to a role; follower_sync_time: from following to serving.
    auto now = std::chrono::steady_clock::now();
    std::string_view role = ensemble->role_name();
    // leader_uptime: from this member's start of leading (ZooKeeper's Leader.getUptime).
    if (!ensemble->leading()) metrics.leading_since.reset();
    else if (!metrics.leading_since) metrics.leading_since = now;
    if (role == "looking") {
      if (!metrics.looking_since) ++metrics.looking_count, metrics.looking_since = now;
      if (!metrics.unavailable_since) metrics.unavailable_since = now;
      metrics.syncing_since.reset();
    } else {
      if (metrics.looking_since) {
        metrics.election_time.add(ms_since(*metrics.looking_since));
        metrics.looking_since.reset();
        if (!ensemble->leading()) metrics.syncing_since = now;
      }
      if (metrics.syncing_since && ensemble->serving()) {
        (role == "observing" ? metrics.observer_sync_time : metrics.follower_sync_time)
            .add(ms_since(*metrics.syncing_since));
        metrics.syncing_since.reset();
      }
      if (metrics.unavailable_since && ensemble->serving()) {
        int64_t ms = ms_since(*metrics.unavailable_since);
        metrics.unavailable_time.add(ms);
        if (ensemble->leading()) metrics.leader_unavailable_time.add(ms);
        metrics.unavailable_since.reset();
      }
    }
    if (ensemble->serving())
      spdlog::info("serving as {} in epoch {}{}", member_view.mode(), ensemble->epoch(),
                   ensemble->leading() ? std::string() : fmt::format(" (leader: server {})", ensemble->leader()));
    else
      spdlog::info("not serving clients: {} (no quorum yet)", ensemble->role_name());
    server->role_changed();
  }

  void schedule_peer_tick() {
    peer_ticker.expires_after(std::chrono::milliseconds(config.tick_time / subticks()));
    peer_ticker.async_wait([this](boost::system::error_code ec) {
      if (ec || stopping) return;
      {
        auto hold = hold_tree();
        ensemble->tick(rng());
      }
      note_learner_links();
      resume_reading();
      schedule_peer_tick();
    });
  }

  // ZooKeeper's rule: the next snapshot after snapCount/2 plus a random part of snapCount/2
  // txns, so that replicas of one ensemble do not all snapshot at once.
  void plan_next_snapshot() {
    int64_t half = std::max<int64_t>(1, config.snap_count / 2);
    snapshot_after = half + static_cast<int64_t>(rng() % static_cast<uint64_t>(half));
  }

  void count_for_snapshot() {
    if (++txns_since_snapshot < snapshot_after) return;
    if (!snapshot_due(txns_since_snapshot, server->tree().size(), config.snap_tree_percent)) return;
    if (receiving.at >= 0) return;  // a snapshot from the leader is arriving
    txns_since_snapshot = 0;
    plan_next_snapshot();
    if (walk) {
      // As ZooKeeper's SyncRequestProcessor ("Too busy to snap, skipping"): the count starts
      // again, so snapshots never run back to back however fast the writes come.
      ++snapshots_skipped;
      if (snapshots_skipped == 1 || snapshots_skipped % 100 == 0)
        spdlog::info("too busy to snapshot: one is still being written ({} skipped so far)", snapshots_skipped);
      return;
    }
    // A complete snapshot at this zxid is never written again: a second walk there would clear
    // the first's records before its own were in, leaving no snapshot at the log's base for a
    // while (issue 45, point 4). Nothing was applied since that snapshot: nothing to take.
    if (complete_snapshot_at(server->tree().last_applied())) return;
    walk = std::make_unique<SnapshotWalk>(server->tree());
    metrics.snapshot_started = std::chrono::steady_clock::now();
    spdlog::info("snapshot at 0x{:x} started: {} nodes", walk->at(), server->tree().size());
    walk_attempt = snapshot_writer->produce(
        walk->at(), storage::SnapshotStore::SnapshotPart::node,
        [this, w = walk.get(), gen = walk_generation.load()] { return snapshot_chunks(*w, gen); });
  }

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
  void trim_when_idle() {
    int64_t seen = server->packets_received();
    bool quiet = packets_at_last_check >= 0 && seen - packets_at_last_check < quiet_packets;
    size_t spare = server->tree().spare_node_bytes();
    spare_at_last_node_trim = std::min(spare_at_last_node_trim, spare);
    if (quiet && spare >= spare_at_last_node_trim + node_trim_step) {
      size_t blocks = 0;
      auto started = std::chrono::steady_clock::now();
      {
        auto hold = hold_tree();
        blocks = server->trim_spare_nodes();
      }
      spare_at_last_node_trim = server->tree().spare_node_bytes();
      if (blocks > 0) {
        heap_to_trim = true;
        spdlog::info("gave back {} MiB of deleted znodes' memory in {} ms", blocks * NodePool::block_bytes >> 20,
                     std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started)
                         .count());
      }
    }
    int64_t gone = connections->closed() - closed_at_last_trim;
    if (gone >= connection_trim_step) heap_to_trim = true;
    if (heap_to_trim && quiet) {
      return_free_memory();
      heap_to_trim = false;
      closed_at_last_trim = connections->closed();
      if (gone >= connection_trim_step)
        spdlog::info("gave back free memory after {} connections ended", gone);
    }
    packets_at_last_check = seen;
  }

  // Runs on the snapshot writer's thread, called until it returns nothing: the next chunks of
  // the walk, encoded while holding the tree's lock (which the server thread takes only to
  // apply commits), for about `snapshot_hold` at a time. Once the walk is done, the server
  // thread adds the sessions and the marker.
  //
  // A walk the server thread abandoned (a follower handed a leader's snapshot) is freed under
  // the lock: its generation is checked once the lock is held, before `w` is touched.
  std::optional<storage::SnapshotWriter::Records> snapshot_chunks(SnapshotWalk& w, uint64_t gen) {
    storage::SnapshotWriter::Records out;
    Zxid at = 0;  // read under the lock: once it is released, an abandoned walk may be gone
    {
      walker_turn();
      std::lock_guard<std::mutex> hold(tree_mutex);
      if (walk_generation.load() != gen) return std::nullopt;
      out = w.next_chunks(snapshot_step_nodes, std::chrono::steady_clock::now() + snapshot_hold);
      at = w.at();
    }
    if (!out.empty()) return out;
    asio::post(io, [this, at] { finish_snapshot(at); });
    return std::nullopt;
  }

  void finish_snapshot(Zxid at) {
    if (!walk || walk->at() != at) return;
    if (!walk->done() || !walk->met_every_survivor()) {
      // Never: a marker on a walk cut short would lose the rest of the tree at the next start.
      spdlog::error("snapshot at 0x{:x} abandoned: its walk stopped after {} nodes, before the end", at,
                    walk->written());
      walk.reset();
      return;
    }
    using Part = storage::SnapshotStore::SnapshotPart;
    snapshot_writer->put(at, Part::session, server->session_records());
    snapshot_writer->finish(at, fmt::format("{} nodes", walk->written()));
    last_snapshot = {at, wall_ms() / 1000};  // last_snapshot's time (zxid from the store, once done)
    metrics.snapshottime.add(ms_since(metrics.snapshot_started));
    walk.reset();
  }

  // As ZooKeeper's DatadirCleanupManager: once at start, then every purgeInterval hours.
  // In an ensemble a purge moves the log's base: a member behind it gets a snapshot (SNAP)
  // instead of a DIFF. It waits while syncs stream, so none loses the snapshot it sends.
  void schedule_purge(std::chrono::steady_clock::duration after) {
    if (config.purge_interval_hours <= 0 || !log->snapshots()) return;
    purge_timer.expires_after(after);
    purge_timer.async_wait([this](boost::system::error_code ec) {
      if (ec || stopping) return;
      if ((streamer && streamer->active()) || backup_running) return schedule_purge(std::chrono::seconds(10));
      try {
        size_t dropped = log->snapshots()->purge(static_cast<size_t>(config.snap_retain_count));
        if (dropped) spdlog::info("purged {} old snapshots and the log before the oldest kept one", dropped);
      } catch (const std::exception& e) {
        spdlog::error("purge failed: {}", e.what());
      }
      schedule_purge(std::chrono::hours(config.purge_interval_hours));
    });
  }

  void persist(storage::LogEntry e) {
    // A follower's or observer's entries once it serves are the leader's proposals (ZooKeeper
    // counts its PROPOSAL packets; the entries of a sync come before it serves).
    if (ensemble && !ensemble->leading() && ensemble->serving()) {
      ++metrics.learner_proposals;
      // proposal_latency: the txn's time on the leader's clock to its arrival here (clocks
      // may disagree across hosts, as ZooKeeper notes; a negative one is not counted).
      int64_t now = wall_ms();
      if (auto t = txn_time(e.payload); t && now >= *t) metrics.proposal_latency.add(now - *t);
    }
    ++metrics.sync_processor_queued;
    if (committer) {
      metrics.sync_processor_queue_size.add(static_cast<int64_t>(committer->submit(std::move(e))));
      count_for_snapshot();
      return;
    }
    Zxid z = e.zxid;
    log->append({std::move(e)});
    replication->durable(z);
    resume_reading();
  }

  // Reading from clients stops while this many requests are in flight, as ZooKeeper's
  // globalOutstandingLimit; the first stop of each episode is logged.
  bool over_outstanding_limit() {
    if (restoring) return true;  // swap_in_restored: no request is read until the restart
    bool over = server->outstanding() >= static_cast<size_t>(config.global_outstanding_limit);
    if (over && !throttling)
      spdlog::info("throttling: {} requests in flight (globalOutstandingLimit={}); reading paused",
                   server->outstanding(), config.global_outstanding_limit);
    throttling = over;
    return over;
  }

  void resume_reading() {
    connections->resume_paused();
  }

  void on_durable(Zxid upto, const std::optional<storage::GroupCommitter::Failure>& failure) {
    {
      // Commits change the tree: never while the snapshot writer's thread reads it.
      auto hold = hold_tree();
      replication->durable(upto);
    }
    resume_reading();
    if (!failure) return;
    if (ensemble && failure->retryable) {
      // A member whose disk is full cannot acknowledge anything: it stops, and the others go
      // on without it (it recovers what was durable when it is started again).
      spdlog::critical("{}; this member stops (restart it once there is room)", failure->message);
      failed = true;
      shutdown();
      return;
    }
    if (!failure->retryable) {
      // RocksDB failed a write: the log must not be written again by this process. Stop; a
      // restart recovers everything that was durable, and nothing after it was acknowledged.
      spdlog::critical("{}; stopping the server", failure->message);
      failed = true;
      shutdown();
      return;
    }
    // A full disk: nothing was written. Everything in flight is taken back and its clients get
    // an error; reads go on, and the next write tries the disk again.
    size_t n;
    {
      // Leading again in a new epoch commits the log's history: a change of the tree, never
      // while the snapshot writer's thread reads it.
      auto hold = hold_tree();
      n = replicator->abort();
    }
    committer->reset();
    spdlog::error("{}; {} writes in flight failed, reads go on", failure->message, n);
    server->abort_in_flight(wire::Err::systemError);
    resume_reading();
  }

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
  void accept_on_client_ports(const tcp::acceptor* leaving = nullptr) {
    if (!accepter)
      accepter = std::make_unique<AcceptThread>([this](std::vector<AcceptThread::Accepted> got) {
        asio::post(io, [this, batch = AcceptedBatch(std::move(got))]() mutable { adopt(batch); });
      });
    std::vector<AcceptThread::Listener> ports;
    if (acceptor.is_open() && &acceptor != leaving) ports.push_back({acceptor.native_handle(), plain_port});
    if (secure_acceptor.is_open() && &secure_acceptor != leaving)
      ports.push_back({secure_acceptor.native_handle(), secure_port});
    accepter->listen_on(std::move(ports));
  }

  void adopt(AcceptedBatch& batch) {
    auto fds = std::exchange(batch.fds, {});
    for (size_t i = 0; i < fds.size(); ++i) {
      if (stopping) {
        for (size_t j = i; j < fds.size(); ++j) ::close(fds[j].fd);
        return;
      }
      if (!connections->adopt(fds[i].fd, fds[i].tag == secure_port ? secure_policy : plain_policy))
        ++metrics.connection_rejected;
    }
  }

  void schedule_tick() {
    // A few checks per tick keep expiry within a fraction of a tick of ZooKeeper's.
    auto period = std::chrono::milliseconds(std::max(10, config.tick_time / 4));
    ticker.expires_after(period);
    ticker.async_wait([this](boost::system::error_code ec) {
      if (ec || stopping) return;
      server->tick();
      trim_when_idle();
      schedule_tick();
    });
  }

  void shutdown() {
    if (stopping) return;
    stopping = true;
    boost::system::error_code ec;
    if (accepter) accepter->stop();  // before the listening sockets it polls are closed
    acceptor.close(ec);
    secure_acceptor.close(ec);
    ticker.cancel();
    peer_ticker.cancel();
    if (streamer) streamer->cancel_all();
    if (transport) transport->stop();
    if (admin_server) admin_server->stop();
    if (metrics_server) metrics_server->stop();
    purge_timer.cancel();
    signals.cancel();
    if (connections) connections->close_all();
    spdlog::info("warden-server stopped");
  }
};

ServerRuntime::ServerRuntime(const Config& config) : impl_(std::make_unique<Impl>(config)) {}
ServerRuntime::~ServerRuntime() {
  if (impl_ && impl_->backup_worker.joinable()) impl_->backup_worker.join();
}

void remember_command_line(int argc, char** argv) {
  restart_argv().assign(argv, argv + argc);
}


void ServerRuntime::bind() {
  const Config& c = impl_->config;
  if (c.client_port >= 0) listen(impl_->acceptor, c.client_port_address, c.client_port, "clientPort");
  if (c.secure_client_port >= 0)
    listen(impl_->secure_acceptor, c.secure_client_port_address, c.secure_client_port, "secureClientPort");
  if (impl_->transport) impl_->transport->start();
  if (c.admin.enabled) {
    auto* i = impl_.get();
    admin::AdminSettings settings = c.admin;
    if (!c.in_memory) {
      settings.uploads = {"restore", "rest"};
      settings.upload_dir = c.data_dir;
      // Nothing is stored for a client that may not restore: it is told so (the body bounded).
      settings.upload_allowed = [i](std::string_view, std::string_view authorization, const std::string& peer) {
        return i->config.admin_restore_enabled && i->server->serving() &&
               i->server->admin_authorized(authorization, peer, "/", 31).first == 200;
      };
    }
    impl_->admin_server = std::make_unique<admin::AdminServer>(
        impl_->io, settings, [i](admin::AdminRequest r, std::function<void(admin::AdminReply)> done) {
          i->admin_request(std::move(r), std::move(done));
        });
    impl_->admin_server->start();  // a port it cannot bind is logged; clients are served all the same
  }
  if (c.metrics.enabled) {
    auto* i = impl_.get();
    impl_->metrics_server = std::make_unique<admin::AdminServer>(
        impl_->io, c.metrics, [i](admin::AdminRequest, std::function<void(admin::AdminReply)> done) {
          auto env = i->four_letter_env("mntr");
          admin::AdminReply r;
          r.body = admin::prometheus_text(i->server->monitor_values(env), i->server->summaries(env),
                                          i->server->summary_sets(), i->warden_metrics());
          done(std::move(r));
        });
    impl_->metrics_server->start();
  }
  if (c.pause.enabled)
    impl_->pause_monitor = std::make_unique<admin::PauseMonitor>(c.pause, impl_->metrics.jvm_pause_time);
}

uint16_t ServerRuntime::admin_port() const { return impl_->admin_server ? impl_->admin_server->port() : 0; }

uint16_t ServerRuntime::port() const {
  boost::system::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

std::string ServerRuntime::address() const { return address_of(impl_->acceptor); }
std::string ServerRuntime::secure_address() const { return address_of(impl_->secure_acceptor); }

bool ServerRuntime::run(bool handle_signals) {
  if (handle_signals) {
    impl_->signals.add(SIGTERM);
    impl_->signals.add(SIGINT);
    impl_->signals.async_wait([this](boost::system::error_code ec, int sig) {
      if (ec) return;
      spdlog::info("signal {} received, stopping", sig);
      impl_->shutdown();
    });
  }
  impl_->accept_on_client_ports();
  impl_->schedule_tick();
  if (impl_->ensemble) impl_->schedule_peer_tick();
  impl_->schedule_purge(std::chrono::hours(0));
  impl_->io.run();
  impl_->snapshot_writer.reset();  // an unfinished snapshot has no marker and is never used
  impl_->committer.reset();        // writes what is queued, then stops its thread
  return !impl_->failed;
}

void ServerRuntime::stop() {
  asio::post(impl_->io, [this] { impl_->shutdown(); });
}

}  // namespace warden::server
