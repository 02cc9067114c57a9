// The AdminServer's commands (ZooKeeper 3.8's /commands/NAME), answered from the same state
// and the same numbers as the four-letter words (four_letter.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "server/admin/commands.hpp"
#include "server/zk_server.hpp"

namespace warden::server {

using admin::Json;

const std::vector<admin::CommandNames>& admin::commands() {
  // Primary name first, then ZooKeeper's short names. Only what Warden answers is listed: a
  // name not here gets ZooKeeper's "Unknown command" answer.
  static const std::vector<CommandNames> all{
      {"configuration", {"conf", "config"}},
      {"connection_stat_reset", {"crst"}},
      {"dirs", {}},
      {"environment", {"env", "envi"}},
      {"initial_configuration", {"icfg"}},
      {"is_read_only", {"isro"}},
      {"leader", {"lead"}},
      {"monitor", {"mntr"}},
      {"ruok", {}},
      {"stat_reset", {"srst"}},
      {"watch_summary", {"wchs"}},
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

std::vector<std::pair<std::string, Json>> ZkServer::monitor_values(const FourLetterEnv& env) const {
  size_t ephemerals = 0;
  for (const auto& [s, paths] : tree_.ephemerals()) ephemerals += paths.size();
  std::vector<std::pair<std::string, Json>> m{
      {"version", four_letter_version()},
      {"server_state", env.mode},
      {"ephemerals_count", static_cast<int64_t>(ephemerals)},
      {"num_alive_connections", static_cast<int64_t>(conns_.size())},
      {"avg_latency", latency_.avg()},
      {"outstanding_requests", static_cast<int64_t>(pending_.size())},
      {"znode_count", static_cast<int64_t>(tree_.size() + 1)},  // ZooKeeper counts the root twice
      {"global_sessions", static_cast<int64_t>(sessions_.size())},
      {"local_sessions", int64_t{0}},
      {"packets_sent", packets_sent_},
      {"packets_received", packets_received_},
      {"watch_count", static_cast<int64_t>(watches_.watch_count())},
      {"min_latency", std::max<int64_t>(latency_.min, 0)},
      {"max_latency", latency_.max},
      {"max_file_descriptor_count", env.max_fds},
      {"open_file_descriptor_count", env.open_fds},
      {"approximate_data_size", static_cast<int64_t>(tree_.approximate_data_size())},
      {"uptime", env.uptime_ms},
  };
  if (!env.peer_state.empty()) m.emplace_back("peer_state", env.peer_state);
  if (env.mode == "leader") {
    m.emplace_back("followers", env.followers);
    m.emplace_back("synced_followers", env.synced_followers);
    m.emplace_back("pending_syncs", env.pending_syncs);
  }
  return m;
}

Json ZkServer::admin_command(std::string_view name, const FourLetterEnv& env) {
  std::string primary = admin::primary_name(name);
  Json r = Json::object();
  auto done = [&](Json error = nullptr) {
    r.set("command", primary.empty() ? std::string(name) : primary);
    r.set("error", std::move(error));
    return r;
  };
  if (primary.empty()) return done("Unknown command: " + std::string(name));
  // As ZooKeeper: a command that needs a serving server says so when it does not serve.
  bool needs_server = primary != "environment" && primary != "ruok" && primary != "is_read_only" &&
                      primary != "configuration" && primary != "initial_configuration";
  if (needs_server && !env.serving) return done("This ZooKeeper instance is not currently serving requests");
  if (primary == "ruok" || primary == "connection_stat_reset" || primary == "stat_reset") {
    if (primary != "ruok") four_letter(primary == "stat_reset" ? "srst" : "crst", 0, env);  // one reset, two doors
  } else if (primary == "is_read_only") {
    r.set("read_only", false);
  } else if (primary == "dirs") {
    r.set("datadir_size", env.data_dir_bytes);
    r.set("logdir_size", env.log_dir_bytes);
  } else if (primary == "watch_summary") {
    std::set<ConnId> watching;
    int64_t total = 0;
    auto watches = watches_.data_watches();
    for (const auto& [p, ids] : watches) {
      watching.insert(ids.begin(), ids.end());
      total += static_cast<int64_t>(ids.size());
    }
    r.set("num_connections", static_cast<int64_t>(watching.size()));
    r.set("num_paths", static_cast<int64_t>(watches.size()));
    r.set("num_total_watches", total);
  } else if (primary == "environment") {
    for (const auto& [k, v] : env.environment) r.set(k, v);
  } else if (primary == "configuration") {
    for (const auto& [k, v] : env.admin_conf) r.set(k, v);
  } else if (primary == "initial_configuration") {
    r.set("initial_configuration", env.initial_configuration);
  } else if (primary == "monitor") {
    for (auto& [k, v] : monitor_values(env)) r.set(k, std::move(v));
  } else if (primary == "leader") {
    if (env.mode == "standalone") {  // ZooKeeper's answer for a server outside a quorum
      Json only = Json::object();
      only.set("error", "server is not initialized");
      only.set("command", primary);
      return only;
    }
    r.set("is_leader", env.mode == "leader");
    r.set("leader_id", env.leader_id);
    r.set("leader_ip", env.leader_ip);
  }
  return done();
}

}  // namespace warden::server
