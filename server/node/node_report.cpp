// What the four-letter words, the AdminServer's commands and /metrics read outside the
// pipeline: the member's state, the process, the store, the runtime's own metrics.

#include "server/node/runtime_impl.hpp"

namespace warden::server {

metrics::Json ServerRuntime::Impl::observer_infos(int64_t& synced) const {
  metrics::Json all = metrics::Json::array();
  synced = 0;
  if (!ensemble || !ensemble->leading()) return all;
  for (const auto& l : ensemble->link_views()) {
    if (!l.observer || !l.synced) continue;
    ++synced;
    auto st = learner_stats.count(l.id) ? learner_stats.at(l.id) : LearnerStats{};
    metrics::Json info = metrics::Json::object();
    auto it = config.servers.find(l.id);
    // The observer's configured quorum address (ZooKeeper shows its socket's remote end).
    info.set("remote_socket_address", it == config.servers.end()
                                          ? std::string()
                                          : fmt::format("{}:{}", it->second.host, it->second.quorum_port));
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

FourLetterEnv ServerRuntime::Impl::four_letter_env(std::string_view word) const {
  FourLetterEnv env;
  env.uptime_ms = wall_ms() - started_ms;
  if (ensemble) add_member_state(env);
  std::string data_dir = config.in_memory ? std::string() : config.data_dir;
  std::string log_dir = config.in_memory
                            ? std::string()
                            : config.store_dir();
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

void ServerRuntime::Impl::add_member_state(FourLetterEnv& env) const {
  env.mode = member_view.mode();
  env.serving = ensemble->serving();
  env.peer_state = std::string(ensemble->role_name()) + " - " +
                   (ensemble->serving()  ? "broadcast"
                    : ensemble->leader() ? "synchronization"
                                         : "election");
  env.followers = static_cast<int64_t>(ensemble->followers());
  env.synced_followers = static_cast<int64_t>(ensemble->synced_followers());
  env.peer_protocol_oldest = ensemble->protocols().oldest;
  env.peer_protocol_newest = ensemble->protocols().newest;
  env.ensemble_version = ensemble->ensemble_version();
  if (server->read_only()) {
    // As ZooKeeper's ReadOnlyZooKeeperServer: it serves, in mode "read-only".
    env.mode = "read-only";
    env.serving = true;
  }
}

void ServerRuntime::Impl::add_conf_lines(FourLetterEnv& env, const std::string& data_dir,
                                         const std::string& log_dir) const {
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

void ServerRuntime::Impl::reset_metrics() const {
  metrics.sync_processor_queued = metrics.connection_rejected = metrics.learner_proposals = 0;
  metrics.looking_count = metrics.snap_count = metrics.diff_count = metrics.digest_mismatches = 0;
}

void ServerRuntime::Impl::add_monitor_values(FourLetterEnv& env) const {
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

void ServerRuntime::Impl::add_member_metrics(FourLetterEnv& env) const {
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

void ServerRuntime::Impl::add_descriptor_counts(FourLetterEnv& env) {
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++env.open_fds;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) env.max_fds = static_cast<int64_t>(lim.rlim_cur);
}

void ServerRuntime::Impl::add_environment(FourLetterEnv& env) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  env.environment = {{"zookeeper.version", four_letter_version()}, {"host.name", host}};
  for (auto& kv : host_facts()) env.environment.push_back(std::move(kv));
  env.environment.emplace_back("process.id", std::to_string(getpid()));
}

void ServerRuntime::Impl::add_system_properties(FourLetterEnv& env) const {
  env.system_properties = {{"file.separator", "/"}, {"line.separator", "\n"}, {"path.separator", ":"}};
  for (auto& kv : host_facts()) env.system_properties.push_back(std::move(kv));
  std::sort(env.system_properties.begin(), env.system_properties.end());
  for (const auto& kv : config.properties) env.system_properties.push_back(kv);
}

void ServerRuntime::Impl::add_storage_facts(FourLetterEnv& env) const {
  env.fsync_threshold_exceeded = committer ? committer->slow_writes() : 0;
  const storage::SnapshotStore* snaps = log ? log->snapshots() : nullptr;
  auto all = snaps ? snaps->complete_snapshots() : std::vector<Zxid>{};
  if (!all.empty()) {
    env.last_snapshot_zxid = all.back();
    if (all.back() == last_snapshot.first) env.last_snapshot_seconds = last_snapshot.second;
  }
}

std::string ServerRuntime::Impl::warden_metrics() const {
  std::string out = admin::prometheus_histogram(
      "warden_log_write_seconds", "Time of each group-commit write to the log (write and fsync), in seconds.",
      metrics.log_write_micros, 1e-6,
      {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5});
  // ZooKeeper's ack_latency: a voter's acknowledgement time in ms, keyed by its id, on the
  // leader (a family with no series elsewhere, as ZooKeeper registers it on every member).
  std::vector<std::pair<std::string, metrics::Summary*>> by_sid;
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
                                  "sent committed (observers).",
                                  lag);
  std::vector<std::pair<std::string, metrics::Summary*>> acks;
  for (const auto& [id, s] : metrics.ack_micros) acks.emplace_back(fmt::format("server_id=\"{}\"", id), s.get());
  out +=
      admin::prometheus_summaries("warden_learner_ack_latency_seconds",
                                  "Time from a proposal to a voter's acknowledgement of it, in seconds.", acks, 1e-6);
  return out;
}

std::vector<std::pair<std::string, std::string>> ServerRuntime::Impl::host_facts() {
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

std::string ServerRuntime::Impl::admin_command(std::string_view name, std::string_view query) {
  std::string primary = admin::primary_name(name);
  static const std::map<std::string, std::string, std::less<>> word_of{
      {"configuration", "conf"}, {"dirs", "dirs"},     {"monitor", "mntr"},
      {"environment", "envi"},   {"zabstate", "mntr"}, {"system_properties", "sysp"},
      {"server_stats", "dirs"},  {"stats", "dirs"},    {"last_snapshot", "srvr"},
      {"stat_reset", "srst"}};
  auto w = word_of.find(primary);
  FourLetterEnv env = four_letter_env(w == word_of.end() ? std::string_view() : std::string_view(w->second));
  if (primary == "configuration")
    for (const auto& [k, v] : env.conf) {
      // ZooKeeper's names for conf's keys, with their types (numbers as numbers).
      std::string key;
      for (char ch : k) {
        if (ch >= 'A' && ch <= 'Z')
          key += '_', key += static_cast<char>(ch - 'A' + 'a');
        else
          key += ch;
      }
      if (key == "data_dir_size" || key == "data_log_size" || key == "secure_client_port") continue;
      bool number = !v.empty() && v.find_first_not_of("-0123456789") == std::string::npos;
      env.admin_conf.emplace_back(key, number ? metrics::Json(static_cast<int64_t>(std::stoll(v))) : metrics::Json(v));
    }
  env.initial_configuration = config.config_text;
  for (const auto& [id, e] : config.servers) {  // ZooKeeper's QuorumServer, as its voting_view shows it
    FourLetterEnv::Member m{id, e.host, e.quorum_port, e.election_port, "", e.role};
    if (e.client_port >= 0)  // given on the server line
      m.client_address =
          (e.client_host.empty() ? std::string("0.0.0.0") : e.client_host) + ":" + std::to_string(e.client_port);
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
  return admin::command_answer(*server, name, env, query).dump();
}

std::string ServerRuntime::Impl::secure_port_text() const {
  boost::system::error_code ec;
  auto bound = secure_acceptor.local_endpoint(ec);
  return std::to_string(ec ? config.secure_client_port : bound.port());
}

int64_t ServerRuntime::Impl::directory_bytes(const std::string& dir) {
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

}  // namespace warden::server
