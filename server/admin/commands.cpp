// The AdminServer's commands (ZooKeeper 3.8's /commands/NAME), answered from the same state
// and the same numbers as the four-letter words (four_letter.cpp).
#include "server/admin/commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "consensus/protocol.hpp"
#include "server/base/version.hpp"
#include "server/pipeline/request_pipeline.hpp"
#include "server/secrets/redaction.hpp"

namespace warden::server {

namespace {
// An address as ZooKeeper 3.8's AdminServer serialises a MultipleAddresses (one address here).
metrics::Json multiple_addresses(const std::string& host, int32_t port) {
  using metrics::Json;
  std::string one = host + ":" + std::to_string(port);
  metrics::Json a = metrics::Json::object();
  a.set("empty", false);
  a.set("all_addresses", metrics::Json::array({one}));
  a.set("all_reachable_addresses", metrics::Json::array({one}));
  a.set("one", one);
  a.set("reachable_address", one);
  a.set("wildcard_addresses", metrics::Json::array({"0.0.0.0:" + std::to_string(port)}));
  a.set("all_ports", metrics::Json::array({static_cast<int64_t>(port)}));
  a.set("all_host_strings", metrics::Json::array({host}));
  a.set("all_reachable_addresses_or_all", metrics::Json::array({one}));
  a.set("reachable_or_one", one);
  return a;
}
}  // namespace

using metrics::Json;

const std::vector<admin::CommandNames>& admin::commands() {
  // Primary name first, then ZooKeeper's short names. Only what Warden answers is listed: a
  // name not here gets ZooKeeper's "Unknown command" answer.
  static const std::vector<CommandNames> all{
      {"configuration", {"conf", "config"}},
      {"connection_stat_reset", {"crst"}},
      {"connections", {"cons"}},
      {"dirs", {}},
      {"dump", {}},
      {"environment", {"env", "envi"}},
      {"get_trace_mask", {"gtmk"}},
      {"hash", {}},
      {"initial_configuration", {"icfg"}},
      {"is_read_only", {"isro"}},
      {"last_snapshot", {"lsnp"}},
      {"leader", {"lead"}},
      {"monitor", {"mntr"}},
      {"observer_connection_stat_reset", {"orst"}},
      {"observers", {"obsr"}},
      {"restore", {"rest"}},
      {"ruok", {}},
      {"server_stats", {"srvr"}},
      {"set_trace_mask", {"stmk"}},
      {"snapshot", {"snap"}},
      {"stat_reset", {"srst"}},
      {"stats", {"stat"}},
      {"system_properties", {"sysp"}},
      {"voting_view", {}},
      {"watch_summary", {"wchs"}},
      {"watches", {"wchc"}},
      {"watches_by_path", {"wchp"}},
      {"versions", {}},  // Warden's own
      {"zabstate", {}},
  };
  return all;
}

std::string admin::primary_name(std::string_view name) {
  for (const auto& c : commands()) {
    if (c.primary == name) return c.primary;
    for (const auto& s : c.short_names)
      if (s == name) return c.primary;
  }
  return {};
}

std::vector<std::pair<std::string, metrics::Json>> admin::monitor_values(const RequestPipeline& p,
                                                                         const FourLetterEnv& env) {
  const DataTree& tree = p.tree();
  const auto& latency = p.latency();
  const auto& counters = p.counters();
  size_t ephemerals = 0;
  for (const auto& [s, paths] : tree.ephemerals()) ephemerals += paths.size();
  std::vector<std::pair<std::string, metrics::Json>> m{
      {"version", four_letter_version()},
      {"server_state", env.mode},
      {"ephemerals_count", static_cast<int64_t>(ephemerals)},
      {"num_alive_connections", static_cast<int64_t>(p.connection_count())},
      {"avg_latency", latency.avg()},
      {"outstanding_requests", static_cast<int64_t>(p.proposals_in_flight())},
      {"znode_count", static_cast<int64_t>(tree.size() + 1)},  // ZooKeeper counts the root twice
      {"global_sessions", static_cast<int64_t>(p.session_count())},
      {"local_sessions", int64_t{0}},
      {"packets_sent", p.packets_sent()},
      {"packets_received", p.packets_received()},
      {"watch_count", static_cast<int64_t>(p.watch_count())},
      {"min_latency", std::max<int64_t>(latency.min, 0)},
      {"max_latency", latency.max},
      {"max_file_descriptor_count", env.max_fds},
      {"open_file_descriptor_count", env.open_fds},
      {"approximate_data_size", static_cast<int64_t>(tree.approximate_data_size())},
      {"uptime", env.uptime_ms},
      {"auth_failed_count", counters.auth_failed},
      {"non_mtls_local_conn_count", counters.non_mtls_local},
      {"non_mtls_remote_conn_count", counters.non_mtls_remote},
      {"unsuccessful_handshake", counters.unsuccessful_handshake},
      {"tls_handshake_exceeded", counters.tls_handshake_exceeded},
      {"last_client_response_size", counters.client_response.last},
      {"min_client_response_size", counters.client_response.min},
      {"max_client_response_size", counters.client_response.max},
  };
  if (!env.peer_state.empty()) m.emplace_back("peer_state", env.peer_state);
  if (env.ensemble_version) {  // Warden's own keys: a member's peer protocols (docs/operations.md)
    m.emplace_back("peer_protocol_oldest", env.peer_protocol_oldest);
    m.emplace_back("peer_protocol_newest", env.peer_protocol_newest);
    m.emplace_back("ensemble_version", env.ensemble_version);
  }
  if (env.mode == "leader") {
    m.emplace_back("followers", env.followers);
    m.emplace_back("synced_followers", env.synced_followers);
    m.emplace_back("pending_syncs", env.pending_syncs);
    m.emplace_back("last_proposal_size", counters.proposals.last);
    m.emplace_back("min_proposal_size", counters.proposals.min);
    m.emplace_back("max_proposal_size", counters.proposals.max);
  }
  m.emplace_back("proposal_count", counters.proposals.count);
  p.metrics().list(m);
  for (const auto& kv : env.metrics) m.push_back(kv);
  return m;
}

std::vector<std::pair<std::string, metrics::Json>> admin::monitor_keys(RequestPipeline& p, const FourLetterEnv& env) {
  auto values = monitor_values(p, env);
  metrics::add_monitor_keys(values, summaries(p, env));
  metrics::add_monitor_keys(values, metrics::set_entries(p.summary_sets()));
  return values;
}

metrics::NamedSummaries admin::summaries(RequestPipeline& p, const FourLetterEnv& env) {
  metrics::NamedSummaries all = p.summaries();
  all.insert(all.end(), env.summaries.begin(), env.summaries.end());
  return all;
}

namespace {
metrics::Json buffer_stats(const BufferStats& b) {
  metrics::Json j = metrics::Json::object();
  j.set("last_buffer_size", b.last);
  j.set("min_buffer_size", b.min);
  j.set("max_buffer_size", b.max);
  return j;
}

// A query string's value for `key` ("traceMask=7&x=y"); nullopt when absent.
std::optional<std::string> query_value(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = pair.find('=');
    if (pair.substr(0, eq) == key) return std::string(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
  }
  return std::nullopt;
}

// Java's Long.parseLong: an optional sign and decimal digits, within 64 bits.
std::optional<int64_t> java_long(const std::string& s) {
  size_t digits = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (s.size() == digits || s.find_first_not_of("0123456789", digits) != std::string::npos) return std::nullopt;
  try {
    size_t used = 0;
    int64_t v = std::stoll(s, &used);
    return used == s.size() ? std::optional<int64_t>(v) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}
// ZooKeeper's connection info (ServerCnxn.getConnectionInfo), plaintext and TLS apart; brief
// (stats) stops before the session's part.
std::pair<metrics::Json, metrics::Json> connection_infos(const RequestPipeline& p, bool brief) {
  metrics::Json plain = metrics::Json::array(), secure = metrics::Json::array();
  for (const auto& c : p.connections()) {
    const auto& st = *c.stats;
    metrics::Json info = metrics::Json::object();
    std::string endpoint = c.link->peer_endpoint();
    info.set("remote_socket_address", endpoint.empty() || endpoint[0] != '/' ? endpoint : endpoint.substr(1));
    info.set("interest_ops", int64_t{1});  // reading, as a ZooKeeper connection not throttled
    info.set("outstanding_requests", static_cast<int64_t>(c.held));
    info.set("packets_received", st.received);
    info.set("packets_sent", st.sent);
    if (c.attached && !brief) {
      info.set("session_id", static_cast<int64_t>(c.session));
      info.set("last_operation", st.last_op);
      info.set("established", st.established_ms);  // Jackson writes a Date as its milliseconds
      info.set("session_timeout", static_cast<int64_t>(c.negotiated_timeout));
      info.set("last_cxid", static_cast<int64_t>(st.last_cxid));
      info.set("last_zxid", static_cast<int64_t>(st.last_zxid));
      info.set("last_response_time", st.last_response_ms);
      info.set("last_latency", st.last_latency);
      info.set("min_latency", std::max<int64_t>(st.latency.min, 0));
      info.set("avg_latency", static_cast<int64_t>(st.latency.avg()));
      info.set("max_latency", st.latency.max);
    }
    (c.link->secure() ? secure : plain).push(std::move(info));
  }
  return {std::move(plain), std::move(secure)};
}

// ZooKeeper's ServerStats as Jackson writes it (its getters, in its order).
metrics::Json server_stats_json(const RequestPipeline& p, const FourLetterEnv& env) {
  const auto& latency = p.latency();
  metrics::Json s = metrics::Json::object();
  s.set("packets_sent", p.packets_sent());
  s.set("packets_received", p.packets_received());
  s.set("fsync_threshold_exceed_count", env.fsync_threshold_exceeded);
  s.set("client_response_stats", buffer_stats(p.counters().client_response));
  s.set("provider_null", false);
  s.set("data_dir_size", env.data_dir_bytes);
  s.set("log_dir_size", env.log_dir_bytes);
  s.set("server_state", env.mode);
  s.set("last_processed_zxid", static_cast<int64_t>(p.tree().last_applied()));
  s.set("outstanding_requests", static_cast<int64_t>(p.proposals_in_flight()));
  s.set("avg_latency", latency.avg());
  s.set("max_latency", latency.max);
  s.set("min_latency", std::max<int64_t>(latency.min, 0));
  s.set("num_alive_client_connections", static_cast<int64_t>(p.connection_count()));
  s.set("uptime", env.uptime_ms);
  s.set("auth_failed_count", p.counters().auth_failed);
  s.set("non_mtlsremote_conn_count", p.counters().non_mtls_remote);
  s.set("non_mtlslocal_conn_count", p.counters().non_mtls_local);
  return s;
}

}  // namespace

namespace {
// One command's answer: it fills `r` (the common "command" and "error" keys are added after),
// or returns a whole answer of its own (ZooKeeper's few answers without "error": null).
struct Ask {
  RequestPipeline& p;
  const FourLetterEnv& env;
  std::string_view query;
  const std::string& primary;
  Json& r;
};
using Answer = std::optional<Json> (*)(Ask& a);

std::optional<Json> answer_observers(Ask& a) {
  // A leader's observers (a follower serves no observers here: Warden has no observer masters).
  a.r.set("synced_observers", a.env.synced_observers);
  a.r.set("observers", a.env.observers);
  return std::nullopt;
}

std::optional<Json> answer_observer_connection_stat_reset(Ask&) {
  // The host reset its per-observer counters before asking (Runtime's admin_command).
  return std::nullopt;
}

std::optional<Json> answer_ruok_or_reset(Ask& a) {
  if (a.primary != "ruok")
    four_letter_text(a.p, a.primary == "stat_reset" ? "srst" : "crst", 0, a.env);  // one reset, two doors
  return std::nullopt;
}

std::optional<Json> answer_is_read_only(Ask& a) {
  a.r.set("read_only", a.p.read_only());
  return std::nullopt;
}

// Warden's own command (ZooKeeper has none like it): the build, the peer protocols it speaks,
// the ensemble version (a member's) and the data format, for an operator rolling an upgrade.
std::optional<Json> answer_versions(Ask& a) {
  a.r.set("version", warden_version());
  Json protocols = Json::object();
  protocols.set("oldest", static_cast<int64_t>(consensus::oldest_protocol));
  protocols.set("newest", static_cast<int64_t>(consensus::newest_protocol));
  a.r.set("peer_protocols", std::move(protocols));
  if (a.env.ensemble_version) a.r.set("ensemble_version", a.env.ensemble_version);
  a.r.set("data_format", data_format());
  a.r.set("data_formats_read", data_formats_read());
  return std::nullopt;
}

std::optional<Json> answer_stats(Ask& a) {
  a.r.set("version", four_letter_version());
  a.r.set("read_only", a.p.read_only());
  a.r.set("server_stats", server_stats_json(a.p, a.env));
  a.r.set("client_response", buffer_stats(a.p.counters().client_response));
  if (a.env.mode == "leader") a.r.set("proposal_stats", buffer_stats(a.p.counters().proposals));
  a.r.set("node_count", static_cast<int64_t>(a.p.tree().size() + 1));  // the root twice, as ZooKeeper
  if (a.primary == "stats") {
    auto [plain, secure] = connection_infos(a.p, true);
    a.r.set("connections", std::move(plain));
    a.r.set("secure_connections", std::move(secure));
  }
  return std::nullopt;
}

std::optional<Json> answer_hash(Ask& a) {
  metrics::Json digests = metrics::Json::array();
  for (const auto& [zxid, digest] : a.p.digests()) {
    metrics::Json d = metrics::Json::object();
    d.set("zxid", static_cast<int64_t>(zxid));
    d.set("digest_version", int64_t{2});  // ZooKeeper's DigestCalculator version
    d.set("digest", static_cast<int64_t>(digest));
    digests.push(std::move(d));
  }
  a.r.set("digests", std::move(digests));
  return std::nullopt;
}

std::optional<Json> answer_get_trace_mask(Ask& a) {
  a.r.set("tracemask", a.p.trace_mask());
  return std::nullopt;
}

std::optional<Json> answer_set_trace_mask(Ask& a) {
  auto text = query_value(a.query, "traceMask");
  auto mask = text ? java_long(*text) : std::nullopt;
  if (!mask) {  // ZooKeeper's answer: no "error": null after it, the error first
    metrics::Json e = metrics::Json::object();
    e.set("error", "setTraceMask requires long traceMask argument" + (text ? ", got " + *text : std::string()));
    e.set("command", a.primary);
    return e;
  }
  a.p.set_trace_mask(*mask);
  a.r.set("tracemask", a.p.trace_mask());
  return std::nullopt;
}

std::optional<Json> answer_last_snapshot(Ask& a) {
  a.r.set("zxid", fmt::format("{:x}", static_cast<uint64_t>(a.env.last_snapshot_zxid)));
  a.r.set("timestamp", a.env.last_snapshot_seconds);
  return std::nullopt;
}

std::optional<Json> answer_system_properties(Ask& a) {
  for (const auto& [k, v] : a.env.system_properties) a.r.set(k, secrets::shown_value(k, v));
  return std::nullopt;
}

std::optional<Json> answer_dirs(Ask& a) {
  a.r.set("datadir_size", a.env.data_dir_bytes);
  a.r.set("logdir_size", a.env.log_dir_bytes);
  return std::nullopt;
}

std::optional<Json> answer_watch_summary(Ask& a) {
  std::set<ConnId> watching;
  int64_t total = 0;
  auto watches = a.p.watches().data_watches();
  for (const auto& [p, ids] : watches) {
    watching.insert(ids.begin(), ids.end());
    total += static_cast<int64_t>(ids.size());
  }
  a.r.set("num_connections", static_cast<int64_t>(watching.size()));
  a.r.set("num_paths", static_cast<int64_t>(watches.size()));
  a.r.set("num_total_watches", total);
  return std::nullopt;
}

std::optional<Json> answer_environment(Ask& a) {
  for (const auto& [k, v] : a.env.environment) a.r.set(k, secrets::shown_value(k, v));
  return std::nullopt;
}

std::optional<Json> answer_configuration(Ask& a) {
  for (const auto& [k, v] : a.env.admin_conf)
    a.r.set(k, secrets::secret_key(k) ? metrics::Json(std::string(secrets::mask)) : v);
  return std::nullopt;
}

std::optional<Json> answer_initial_configuration(Ask& a) {
  a.r.set("initial_configuration", secrets::redacted_text(a.env.initial_configuration));
  return std::nullopt;
}

std::optional<Json> answer_monitor(Ask& a) {
  for (auto& [k, v] : admin::monitor_keys(a.p, a.env)) a.r.set(k, std::move(v));
  return std::nullopt;
}

std::optional<Json> answer_watches(Ask& a) {
  // ZooKeeper's maps: session id (its decimal text) -> watched paths, and path -> session ids.
  std::map<SessionId, std::vector<std::string>> by_session;
  metrics::Json by_path = metrics::Json::object();
  for (const auto& [path, ids] : a.p.watches().data_watches()) {
    metrics::Json sessions = metrics::Json::array();
    for (ConnId id : ids) {
      by_session[a.p.session_of(id)].push_back(path);
      sessions.push(static_cast<int64_t>(a.p.session_of(id)));
    }
    by_path.set(path, std::move(sessions));
  }
  if (a.primary == "watches") {
    metrics::Json m = metrics::Json::object();
    for (const auto& [sid, paths] : by_session) {
      metrics::Json list = metrics::Json::array();
      for (const auto& p : paths) list.push(p);
      m.set(std::to_string(sid), std::move(list));
    }
    a.r.set("session_id_to_watched_paths", std::move(m));
  } else {
    a.r.set("path_to_session_ids", std::move(by_path));
  }
  return std::nullopt;
}

std::optional<Json> answer_dump(Ask& a) {
  metrics::Json expiry = metrics::Json::object();
  for (const auto& [deadline, ids] : a.p.sessions().expiry_sets()) {
    metrics::Json list = metrics::Json::array();
    for (SessionId id : ids) list.push(static_cast<int64_t>(id));
    expiry.set(std::to_string(deadline), std::move(list));
  }
  metrics::Json eph = metrics::Json::object();
  for (const auto& [sid, paths] : a.p.tree().ephemerals()) {
    metrics::Json list = metrics::Json::array();
    for (const auto& p : paths) list.push(p);
    eph.set(std::to_string(sid), std::move(list));
  }
  a.r.set("expiry_time_to_session_ids", std::move(expiry));
  a.r.set("session_id_to_ephemeral_paths", std::move(eph));
  return std::nullopt;
}

std::optional<Json> answer_connections(Ask& a) {
  auto [plain, secure] = connection_infos(a.p, false);
  a.r.set("connections", std::move(plain));
  a.r.set("secure_connections", std::move(secure));
  return std::nullopt;
}

std::optional<Json> answer_zabstate(Ask& a) {
  // ZooKeeper 3.8's answer: on a member, who it is, its addresses (as Java's MultipleAddresses
  // serialises), its last zxid and its ZabState in lower case (election, discovery,
  // synchronization, broadcast); a standalone server does not vote and has none.
  std::string zab;
  if (a.env.mode != "standalone") {
    auto dash = a.env.peer_state.rfind(" - ");
    zab = dash == std::string::npos ? std::string() : a.env.peer_state.substr(dash + 3);
  }
  if (a.env.self) {
    a.r.set("myid", a.env.self->id);
    a.r.set("is_leader", a.env.mode == "leader");
    a.r.set("quorum_address", multiple_addresses(a.env.self->host, a.env.self->quorum_port));
    a.r.set("election_address", multiple_addresses(a.env.self->host, a.env.self->election_port));
    a.r.set("client_address", a.env.self->client_address);
  }
  a.r.set("voting", a.env.mode != "standalone" && a.env.mode != "observer");
  if (a.env.self) {
    a.r.set("last_zxid", fmt::format("0x{:x}", static_cast<uint64_t>(a.env.last_zxid)));
    a.r.set("zab_epoch", static_cast<int64_t>(static_cast<uint64_t>(a.env.last_zxid) >> 32));
    a.r.set("zab_counter", static_cast<int64_t>(a.env.last_zxid & 0xffffffff));
  }
  a.r.set("zabstate", zab);
  return std::nullopt;
}

std::optional<Json> answer_voting_view(Ask& a) {
  metrics::Json view = metrics::Json::object();
  for (const auto& m : a.env.voting_view) {
    metrics::Json entry = metrics::Json::object();
    entry.set("server_addresses", metrics::Json::array({m.host + ":" + std::to_string(m.quorum_port)}));
    entry.set("election_addresses", metrics::Json::array({m.host + ":" + std::to_string(m.election_port)}));
    entry.set("client_address", m.client_address);
    entry.set("learner_type", m.learner_type);
    view.set(std::to_string(m.id), std::move(entry));
  }
  a.r.set("current_config", std::move(view));
  return std::nullopt;
}

std::optional<Json> answer_leader(Ask& a) {
  if (a.env.mode == "standalone") {  // ZooKeeper's answer for a server outside a quorum
    metrics::Json only = metrics::Json::object();
    only.set("error", "server is not initialized");
    only.set("command", a.primary);
    return only;
  }
  a.r.set("is_leader", a.env.mode == "leader");
  a.r.set("leader_id", a.env.leader_id);
  a.r.set("leader_ip", a.env.leader_ip);
  return std::nullopt;
}

const std::map<std::string, Answer>& answers() {
  static const std::map<std::string, Answer> all{
      {"observers", answer_observers},
      {"observer_connection_stat_reset", answer_observer_connection_stat_reset},
      {"ruok", answer_ruok_or_reset},
      {"connection_stat_reset", answer_ruok_or_reset},
      {"stat_reset", answer_ruok_or_reset},
      {"is_read_only", answer_is_read_only},
      {"stats", answer_stats},
      {"server_stats", answer_stats},
      {"versions", answer_versions},
      {"hash", answer_hash},
      {"get_trace_mask", answer_get_trace_mask},
      {"set_trace_mask", answer_set_trace_mask},
      {"last_snapshot", answer_last_snapshot},
      {"system_properties", answer_system_properties},
      {"dirs", answer_dirs},
      {"watch_summary", answer_watch_summary},
      {"environment", answer_environment},
      {"configuration", answer_configuration},
      {"initial_configuration", answer_initial_configuration},
      {"monitor", answer_monitor},
      {"watches", answer_watches},
      {"watches_by_path", answer_watches},
      {"dump", answer_dump},
      {"connections", answer_connections},
      {"zabstate", answer_zabstate},
      {"voting_view", answer_voting_view},
      {"leader", answer_leader},
  };
  return all;
}
}  // namespace

metrics::Json admin::command_answer(RequestPipeline& p, std::string_view name, const FourLetterEnv& env,
                                    std::string_view query) {
  std::string primary = admin::primary_name(name);
  metrics::Json r = metrics::Json::object();
  auto done = [&](metrics::Json error = nullptr) {
    r.set("command", primary.empty() ? std::string(name) : primary);
    r.set("error", std::move(error));
    return r;
  };
  if (primary.empty()) return done("Unknown command: " + std::string(name));
  // As ZooKeeper: a command that needs a serving server says so when it does not serve.
  bool needs_server = primary != "environment" && primary != "ruok" && primary != "is_read_only" &&
                      primary != "configuration" && primary != "initial_configuration" && primary != "get_trace_mask" &&
                      primary != "system_properties";
  if (needs_server && !env.serving) return done("This ZooKeeper instance is not currently serving requests");
  Ask ask{p, env, query, primary, r};
  if (auto it = answers().find(primary); it != answers().end())
    if (auto whole = it->second(ask)) return *whole;
  return done();
}

}  // namespace warden::server
