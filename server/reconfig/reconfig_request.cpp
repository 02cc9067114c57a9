#include "server/reconfig/reconfig_request.hpp"

#include <spdlog/spdlog.h>

#include <charconv>
#include <set>

#include "server/config/config.hpp"

namespace warden::server::reconfig {

namespace {
using wire::Err;

std::vector<std::string_view> split(std::string_view s, std::string_view separators) {
  std::vector<std::string_view> out;
  size_t from = 0;
  while (from <= s.size()) {
    size_t at = s.find_first_of(separators, from);
    std::string_view part = s.substr(from, at == std::string_view::npos ? std::string_view::npos : at - from);
    while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) part.remove_prefix(1);
    while (!part.empty() && (part.back() == ' ' || part.back() == '\t' || part.back() == '\r')) part.remove_suffix(1);
    if (!part.empty()) out.push_back(part);
    if (at == std::string_view::npos) break;
    from = at + 1;
  }
  return out;
}

Err refuse(Err code, const std::string& why) {
  spdlog::warn("reconfig refused: {}", why);
  return code;
}
}  // namespace

std::variant<Plan, Err> plan(const wire::ReconfigRequest& req, std::string_view current, const Gate& gate) {
  if (!gate.enabled()) return refuse(Err::reconfigDisabled, "reconfigEnabled is false");
  if (!gate.ensemble()) return refuse(Err::unimplemented, "a standalone server cannot be reconfigured");
  if (gate.in_progress()) return refuse(Err::reconfigInProgress, "another reconfig is in progress");
  if (req.curConfigId != -1 && req.curConfigId != gate.version())
    return refuse(Err::badVersion, fmt::format("from version {:x}, but the version in force is {:x}",
                                               static_cast<uint64_t>(req.curConfigId),
                                               static_cast<uint64_t>(gate.version())));
  Config next;
  if (req.newMembers) {
    // Commas or newlines between the lines, as ZooKeeper takes them.
    std::string lines;
    for (auto line : split(*req.newMembers, ",\n")) lines.append(line).push_back('\n');
    if (auto why = parse_members(next, lines, "newMembers", false, true)) return refuse(Err::badArguments, *why);
  } else {
    if (auto why = parse_members(next, current, "/zookeeper/config", true, true))
      return refuse(Err::badArguments, "the configuration in force does not parse: " + *why);
    if (req.leavingServers)
      for (auto id : split(*req.leavingServers, ",")) {
        int64_t sid = 0;
        auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), sid);
        if (ec != std::errc() || p != id.data() + id.size())
          return refuse(Err::badArguments, "leaving server '" + shown(id) + "' is not a server id");
        next.servers.erase(sid);
      }
    if (req.joiningServers)
      for (auto joiner : split(*req.joiningServers, ",")) {
        Config one;
        if (auto why = parse_members(one, joiner, "joiningServers", false, true))
          return refuse(Err::badArguments, *why);
        for (auto& [id, e] : one.servers) {
          if (e.client_port < 0)
            return refuse(Err::badArguments, "joining server " + std::to_string(id) +
                                                 " has no client address (server.N=host:port:port;[host:]port)");
          next.servers[id] = e;
        }
      }
  }
  std::set<std::pair<std::string, int32_t>> addresses;
  Plan out;
  for (const auto& [id, e] : next.servers) {
    if (!addresses.insert({e.host, e.quorum_port}).second || !addresses.insert({e.host, e.election_port}).second)
      return refuse(Err::badArguments, "server " + std::to_string(id) + " shares an address with another member");
    (e.observer() ? out.members.observers : out.members.voters).push_back(id);
  }
  size_t least = gate.standalone_enabled() ? 2 : 1;
  if (out.members.voters.size() < least)
    return refuse(Err::badArguments, "the new configuration must include at least " + std::to_string(least) +
                                         (least == 1 ? " voter" : " voters"));
  if (!gate.quorum_synced(out.members))
    return refuse(Err::newConfigNoQuorum, "no quorum of the new configuration is connected and synchronised");
  out.text = members_text(next.servers);
  return out;
}

}  // namespace warden::server::reconfig
