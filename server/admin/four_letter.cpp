#include "server/admin/four_letter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

#include "server/admin/commands.hpp"
#include "server/base/time_text.hpp"
#include "server/base/version.hpp"
#include "server/pipeline/request_pipeline.hpp"
#include "server/secrets/redaction.hpp"

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

// One word's text: the pipeline, the connection that asked, what the node adds.
using WordText = std::string (*)(RequestPipeline& p, ConnId self, const FourLetterEnv& env);

std::string latency_line(const RequestPipeline& p) {
  const auto& latency = p.latency();
  return fmt::format("Latency min/avg/max: {}/{}/{}\n", std::max<int64_t>(latency.min, 0),
                     metrics::java_double(latency.avg()), latency.max);
}

std::string server_lines(const RequestPipeline& p, const FourLetterEnv& env) {
  // ZooKeeper stores the root twice (under "" and "/") and counts both: so does this count.
  std::string out = fmt::format(
      "Received: {}\nSent: {}\nConnections: {}\nOutstanding: {}\nZxid: {}\nMode: {}\n"
      "Node count: {}\n",
      p.packets_received(), p.packets_sent(), p.connection_count(), p.proposals_in_flight(),
      hex(p.tree().last_applied()), env.mode, p.tree().size() + 1);
  // A member's peer protocols, after ZooKeeper's lines (as its leader adds proposal sizes
  // there, where parsers of the lines above do not look).
  if (env.ensemble_version)
    out += fmt::format("Peer protocols: {} to {}, ensemble version {}\n", env.peer_protocol_oldest,
                       env.peer_protocol_newest, env.ensemble_version);
  return out;
}

std::string connection_line(const RequestPipeline::ConnectionView& c, ConnId self, bool full) {
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
}

std::string srvr(RequestPipeline& p, ConnId, const FourLetterEnv& env) {
  return "Zookeeper version: " + four_letter_version() + "\n" + latency_line(p) + server_lines(p, env);
}

std::string stat(RequestPipeline& p, ConnId self, const FourLetterEnv& env) {
  std::string out = "Zookeeper version: " + four_letter_version() + "\nClients:\n";
  for (const auto& c : p.connections()) out += connection_line(c, self, false);
  return out + "\n" + latency_line(p) + server_lines(p, env);
}

std::string cons(RequestPipeline& p, ConnId self, const FourLetterEnv&) {
  std::string out;
  for (const auto& c : p.connections()) out += connection_line(c, self, true);
  return out + "\n";
}

std::string settings(const std::vector<std::pair<std::string, std::string>>& lines, std::string out = {}) {
  for (const auto& [k, v] : lines) out += fmt::format("{}={}\n", k, secrets::shown_value(k, v));
  return out;
}

std::string srst(RequestPipeline& p, ConnId, const FourLetterEnv& env) {
  p.reset_stats();
  for (auto& [name, summary] : env.summaries) summary->reset();
  return "Server stats reset.\n";
}

std::string wchs(RequestPipeline& p, ConnId, const FourLetterEnv&) {
  auto watches = p.watches().data_watches();
  std::set<ConnId> watching;
  size_t total = 0;
  for (const auto& [path, ids] : watches) {
    watching.insert(ids.begin(), ids.end());
    total += ids.size();
  }
  return fmt::format("{} connections watching {} paths\nTotal watches:{}\n", watching.size(), watches.size(), total);
}

std::string wchc(RequestPipeline& p, ConnId, const FourLetterEnv&) {
  std::map<SessionId, std::vector<std::string>> by_session;
  for (const auto& [path, ids] : p.watches().data_watches())
    for (ConnId id : ids) by_session[p.session_of(id)].push_back(path);
  std::string out;
  for (const auto& [s, paths] : by_session) {
    out += fmt::format("{}\n", hex(s));
    for (const auto& path : paths) out += fmt::format("\t{}\n", path);
  }
  return out + "\n";
}

std::string wchp(RequestPipeline& p, ConnId, const FourLetterEnv&) {
  std::string out;
  for (const auto& [path, ids] : p.watches().data_watches()) {
    out += path + "\n";
    for (ConnId id : ids) out += fmt::format("\t{}\n", hex(p.session_of(id)));
  }
  return out + "\n";
}

std::string dump(RequestPipeline& p, ConnId, const FourLetterEnv&) {
  const auto sets = p.sessions().expiry_sets();
  std::string out = fmt::format("SessionTracker dump:\nSession Sets ({})/({}):\n", sets.size(), p.sessions().size());
  for (const auto& [deadline, ids] : sets) {
    out += fmt::format("{} expire at {}:\n", ids.size(), java_date(deadline));
    for (SessionId s : ids) out += fmt::format("\t{}\n", hex(s));
  }
  const auto& eph = p.tree().ephemerals();
  out += fmt::format("ephemeral nodes dump:\nSessions with Ephemerals ({}):\n", eph.size());
  for (const auto& [s, paths] : eph) {
    out += fmt::format("{}:\n", hex(s));
    for (const auto& path : paths) out += fmt::format("\t{}\n", path);
  }
  // ZooKeeper groups connections by when it would drop them idle; Warden has no such expiry,
  // so all are listed as one set, as of now.
  auto conns = p.connections();
  out += fmt::format("Connections dump:\nConnections Sets (1)/({}):\n{} expire at {}:\n", conns.size(), conns.size(),
                     java_date(p.now()));
  for (const auto& c : conns) out += fmt::format("\tip: {} sessionId: {}\n", c.link->peer_endpoint(), hex(c.session));
  return out;
}

std::string mntr(RequestPipeline& p, ConnId, const FourLetterEnv& env) {
  std::string out;
  for (const auto& [k, v] : admin::monitor_keys(p, env)) out += fmt::format("zk_{}\t{}\n", k, v.text());
  return out;
}

const std::map<std::string_view, WordText>& word_texts() {
  static const std::map<std::string_view, WordText> all{
      {"ruok", [](RequestPipeline&, ConnId, const FourLetterEnv&) { return std::string("imok"); }},
      {"isro",
       [](RequestPipeline& p, ConnId, const FourLetterEnv&) { return std::string(p.read_only() ? "ro" : "rw"); }},
      {"srvr", srvr},
      {"stat", stat},
      {"cons", cons},
      {"conf", [](RequestPipeline&, ConnId, const FourLetterEnv& env) { return settings(env.conf); }},
      {"envi",
       [](RequestPipeline&, ConnId, const FourLetterEnv& env) { return settings(env.environment, "Environment:\n"); }},
      {"dirs",
       [](RequestPipeline&, ConnId, const FourLetterEnv& env) {
         return fmt::format("datadir_size: {}\nlogdir_size: {}\n", env.data_dir_bytes, env.log_dir_bytes);
       }},
      {"crst",
       [](RequestPipeline& p, ConnId, const FourLetterEnv&) {
         p.reset_connection_stats();
         return std::string("Connection stats reset.\n");
       }},
      {"srst", srst},
      {"wchs", wchs},
      {"wchc", wchc},
      {"wchp", wchp},
      {"dump", dump},
      {"mntr", mntr},
  };
  return all;
}
}  // namespace

std::string four_letter_text(RequestPipeline& p, std::string_view word, ConnId self, const FourLetterEnv& env) {
  if (!env.serving && word != "ruok" && word != "isro" && word != "conf" && word != "envi")
    return std::string(not_serving_text);
  auto it = word_texts().find(word);
  return it == word_texts().end() ? std::string() : it->second(p, self, env);
}

}  // namespace warden::server
