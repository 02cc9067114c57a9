#include "server/admin/four_letter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

#include "server/pipeline/request_pipeline.hpp"
#include "server/secrets/redaction.hpp"
#include "server/time_text.hpp"

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
using admin::java_double;
// A time as Java's Date.toString prints it, in UTC: "Mon Nov 23 11:03:27 UTC 2026".
std::string java_date(int64_t ms) { return utc_text(ms, "%a %b %d %H:%M:%S UTC %Y"); }

std::string hex(int64_t v) { return fmt::format("0x{:x}", static_cast<uint64_t>(v)); }
}  // namespace

std::string RequestPipeline::four_letter(std::string_view word, ConnId self, const FourLetterEnv& env) {
  // ZooKeeper stores the root twice (under "" and "/") and counts both: so does this count.
  size_t node_count = tree_.size() + 1;
  auto latency_line = [&] {
    return fmt::format("Latency min/avg/max: {}/{}/{}\n", std::max<int64_t>(latency_.min, 0),
                       java_double(latency_.avg()), latency_.max);
  };
  auto server_lines = [&] {
    return fmt::format("Received: {}\nSent: {}\nConnections: {}\nOutstanding: {}\nZxid: {}\nMode: {}\n"
                       "Node count: {}\n",
                       packets_received_, packets_sent_, conns_.size(), pending_.size(), hex(tree_.last_applied()),
                       env.mode, node_count);
  };
  auto connection_line = [&](ConnId id, const Conn& c, bool full) {
    std::string s = fmt::format(" {}[{}](queued={},recved={},sent={}", c.link->peer_endpoint(), id == self ? 0 : 1,
                                c.link->queued(), c.stats.received, c.stats.sent);
    if (full && c.attached) {
      const auto& st = c.stats;
      s += fmt::format(",sid={},lop={},est={},to={},lcxid={},lzxid={},lresp={},llat={},minlat={},avglat={},maxlat={}",
                       hex(c.session), st.last_op, st.established_ms, c.negotiated_timeout, hex(st.last_cxid),
                       hex(st.last_zxid), st.last_response_ms, st.last_latency, std::max<int64_t>(st.latency.min, 0),
                       static_cast<int64_t>(st.latency.avg()), st.latency.max);
    }
    return s + ")\n";
  };
  auto sorted_conns = [&] {
    std::vector<ConnId> ids;
    for (const auto& [id, c] : conns_) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  auto session_of = [&](ConnId id) {
    auto it = conns_.find(id);
    return it == conns_.end() ? SessionId{0} : it->second.session;
  };

  std::string out;
  if (!env.serving && word != "ruok" && word != "isro" && word != "conf" && word != "envi")
    return std::string(not_serving_text);
  if (word == "ruok") return "imok";
  if (word == "isro") return read_only() ? "ro" : "rw";
  if (word == "srvr") return "Zookeeper version: " + four_letter_version() + "\n" + latency_line() + server_lines();
  if (word == "stat") {
    out = "Zookeeper version: " + four_letter_version() + "\nClients:\n";
    for (ConnId id : sorted_conns()) out += connection_line(id, conns_.at(id), false);
    return out + "\n" + latency_line() + server_lines();
  }
  if (word == "cons") {
    for (ConnId id : sorted_conns()) out += connection_line(id, conns_.at(id), true);
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
    for (auto& [id, c] : conns_) c.stats = ConnStats{0, 0, c.stats.established_ms, 0, 0, -1, -1, "NA", {}};
    return "Connection stats reset.\n";
  }
  if (word == "srst") {
    packets_received_ = packets_sent_ = 0;
    latency_ = Latency{};
    counters_.client_response = BufferStats{};
    // ZooKeeper resets its metrics too (ServerMetrics.resetAll).
    metrics_.reset();
    for (auto& [name, summary] : env.summaries) summary->reset();
    return "Server stats reset.\n";
  }
  auto watches = watches_.data_watches();
  if (word == "wchs") {
    std::set<ConnId> watching;
    size_t total = 0;
    for (const auto& [p, ids] : watches) {
      watching.insert(ids.begin(), ids.end());
      total += ids.size();
    }
    return fmt::format("{} connections watching {} paths\nTotal watches:{}\n", watching.size(), watches.size(), total);
  }
  if (word == "wchc") {
    std::map<SessionId, std::vector<std::string>> by_session;
    for (const auto& [p, ids] : watches)
      for (ConnId id : ids) by_session[session_of(id)].push_back(p);
    for (const auto& [s, paths] : by_session) {
      out += fmt::format("{}\n", hex(s));
      for (const auto& p : paths) out += fmt::format("\t{}\n", p);
    }
    return out + "\n";
  }
  if (word == "wchp") {
    for (const auto& [p, ids] : watches) {
      out += p + "\n";
      for (ConnId id : ids) out += fmt::format("\t{}\n", hex(session_of(id)));
    }
    return out + "\n";
  }
  if (word == "dump") {
    const auto sets = sessions_.expiry_sets();
    out = fmt::format("SessionTracker dump:\nSession Sets ({})/({}):\n", sets.size(), sessions_.size());
    for (const auto& [deadline, ids] : sets) {
      out += fmt::format("{} expire at {}:\n", ids.size(), java_date(deadline));
      for (SessionId s : ids) out += fmt::format("\t{}\n", hex(s));
    }
    const auto& eph = tree_.ephemerals();
    out += fmt::format("ephemeral nodes dump:\nSessions with Ephemerals ({}):\n", eph.size());
    for (const auto& [s, paths] : eph) {
      out += fmt::format("{}:\n", hex(s));
      for (const auto& p : paths) out += fmt::format("\t{}\n", p);
    }
    // ZooKeeper groups connections by when it would drop them idle; Warden has no such
    // expiry, so all are listed as one set, as of now.
    out += fmt::format("Connections dump:\nConnections Sets (1)/({}):\n{} expire at {}:\n", conns_.size(),
                       conns_.size(), java_date(clock_()));
    for (ConnId id : sorted_conns())
      out += fmt::format("\tip: {} sessionId: {}\n", conns_.at(id).link->peer_endpoint(), hex(conns_.at(id).session));
    return out;
  }
  if (word == "mntr") {
    for (const auto& [k, v] : monitor_keys(env)) out += fmt::format("zk_{}\t{}\n", k, v.text());
    return out;
  }
  return out;
}

}  // namespace warden::server
