#include "server/admin/four_letter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

#include "server/base/version.hpp"
#include "server/admin/commands.hpp"
#include "server/pipeline/request_pipeline.hpp"
#include "server/secrets/redaction.hpp"
#include "server/base/time_text.hpp"

namespace warden::server {

bool four_letter_allowed(const std::vector<std::string>& whitelist, std::string_view word) {
  return std::any_of(whitelist.begin(), whitelist.end(), [&](const std::string& w) { return w == "*" || w == word; });
}

std::string four_letter_refusal(std::string_view word) {
  return std::string(word) + " is not executed because it is not in the whitelist.\n";
}

}  // namespace warden::server

// ---- the words' texts, from the pipeline's state ----

namespace warden::server {

namespace {
// A time as Java's Date.toString prints it, in UTC: "Mon Nov 23 11:03:27 UTC 2026".
std::string java_date(int64_t ms) { return utc_text(ms, "%a %b %d %H:%M:%S UTC %Y"); }

std::string hex(int64_t v) { return fmt::format("0x{:x}", static_cast<uint64_t>(v)); }
}  // namespace

std::string four_letter_text(RequestPipeline& p, std::string_view word, ConnId self, const FourLetterEnv& env) {
  const DataTree& tree = p.tree();
  const auto& latency = p.latency();
  // ZooKeeper stores the root twice (under "" and "/") and counts both: so does this count.
  size_t node_count = tree.size() + 1;
  auto latency_line = [&] {
    return fmt::format("Latency min/avg/max: {}/{}/{}\n", std::max<int64_t>(latency.min, 0),
                       metrics::java_double(latency.avg()), latency.max);
  };
  auto server_lines = [&] {
    return fmt::format("Received: {}\nSent: {}\nConnections: {}\nOutstanding: {}\nZxid: {}\nMode: {}\n"
                       "Node count: {}\n",
                       p.packets_received(), p.packets_sent(), p.connection_count(), p.proposals_in_flight(),
                       hex(tree.last_applied()), env.mode, node_count);
  };
  auto connection_line = [&](const RequestPipeline::ConnectionView& c, bool full) {
    const auto& st = *c.stats;
    std::string s = fmt::format(" {}[{}](queued={},recved={},sent={}", c.link->peer_endpoint(), c.id == self ? 0 : 1,
                                c.link->queued(), st.received, st.sent);
    if (full && c.attached) {
      s += fmt::format(",sid={},lop={},est={},to={},lcxid={},lzxid={},lresp={},llat={},minlat={},avglat={},maxlat={}",
                       hex(c.session), st.last_op, st.established_ms, c.negotiated_timeout, hex(st.last_cxid),
                       hex(st.last_zxid), st.last_response_ms, st.last_latency, std::max<int64_t>(st.latency.min, 0),
                       static_cast<int64_t>(st.latency.avg()), st.latency.max);
    }
    return s + ")\n";
  };

  std::string out;
  if (!env.serving && word != "ruok" && word != "isro" && word != "conf" && word != "envi")
    return std::string(not_serving_text);
  if (word == "ruok") return "imok";
  if (word == "isro") return p.read_only() ? "ro" : "rw";
  if (word == "srvr") return "Zookeeper version: " + four_letter_version() + "\n" + latency_line() + server_lines();
  if (word == "stat") {
    out = "Zookeeper version: " + four_letter_version() + "\nClients:\n";
    for (const auto& c : p.connections()) out += connection_line(c, false);
    return out + "\n" + latency_line() + server_lines();
  }
  if (word == "cons") {
    for (const auto& c : p.connections()) out += connection_line(c, true);
    return out + "\n";
  }
  if (word == "conf") {
    for (const auto& [k, v] : env.conf) out += fmt::format("{}={}\n", k, secrets::shown_value(k, v));
    return out;
  }
  if (word == "envi") {
    out = "Environment:\n";
    for (const auto& [k, v] : env.environment) out += fmt::format("{}={}\n", k, secrets::shown_value(k, v));
    return out;
  }
  if (word == "dirs")
    return fmt::format("datadir_size: {}\nlogdir_size: {}\n", env.data_dir_bytes, env.log_dir_bytes);
  if (word == "crst") {
    p.reset_connection_stats();
    return "Connection stats reset.\n";
  }
  if (word == "srst") {
    p.reset_stats();
    for (auto& [name, summary] : env.summaries) summary->reset();
    return "Server stats reset.\n";
  }
  auto watches = p.watches().data_watches();
  if (word == "wchs") {
    std::set<ConnId> watching;
    size_t total = 0;
    for (const auto& [path, ids] : watches) {
      watching.insert(ids.begin(), ids.end());
      total += ids.size();
    }
    return fmt::format("{} connections watching {} paths\nTotal watches:{}\n", watching.size(), watches.size(), total);
  }
  if (word == "wchc") {
    std::map<SessionId, std::vector<std::string>> by_session;
    for (const auto& [path, ids] : watches)
      for (ConnId id : ids) by_session[p.session_of(id)].push_back(path);
    for (const auto& [s, paths] : by_session) {
      out += fmt::format("{}\n", hex(s));
      for (const auto& path : paths) out += fmt::format("\t{}\n", path);
    }
    return out + "\n";
  }
  if (word == "wchp") {
    for (const auto& [path, ids] : watches) {
      out += path + "\n";
      for (ConnId id : ids) out += fmt::format("\t{}\n", hex(p.session_of(id)));
    }
    return out + "\n";
  }
  if (word == "dump") {
    const auto sets = p.sessions().expiry_sets();
    out = fmt::format("SessionTracker dump:\nSession Sets ({})/({}):\n", sets.size(), p.sessions().size());
    for (const auto& [deadline, ids] : sets) {
      out += fmt::format("{} expire at {}:\n", ids.size(), java_date(deadline));
      for (SessionId s : ids) out += fmt::format("\t{}\n", hex(s));
    }
    const auto& eph = tree.ephemerals();
    out += fmt::format("ephemeral nodes dump:\nSessions with Ephemerals ({}):\n", eph.size());
    for (const auto& [s, paths] : eph) {
      out += fmt::format("{}:\n", hex(s));
      for (const auto& path : paths) out += fmt::format("\t{}\n", path);
    }
    // ZooKeeper groups connections by when it would drop them idle; Warden has no such
    // expiry, so all are listed as one set, as of now.
    auto conns = p.connections();
    out += fmt::format("Connections dump:\nConnections Sets (1)/({}):\n{} expire at {}:\n", conns.size(),
                       conns.size(), java_date(p.now()));
    for (const auto& c : conns)
      out += fmt::format("\tip: {} sessionId: {}\n", c.link->peer_endpoint(), hex(c.session));
    return out;
  }
  if (word == "mntr") {
    for (const auto& [k, v] : admin::monitor_keys(p, env)) out += fmt::format("zk_{}\t{}\n", k, v.text());
    return out;
  }
  return out;
}

}  // namespace warden::server
