// The members of an ensemble: server.N lines (zoo.cfg's, a dynamic configuration file's, a
// reconfig's), the text ZooKeeper keeps in /zookeeper/config, and the checks of an ensemble
// against its myid.
#include <charconv>

#include "server/config/config.hpp"

namespace warden::server {

using config_text::is_any_address;
using config_text::is_ip_address;
using config_text::number;
using config_text::trim;

namespace {
std::optional<std::string> parse_peer(std::string_view value, PeerEntry& e) {
  std::string_view addr = value, client;
  if (auto semi = value.find(';'); semi != std::string_view::npos) {
    addr = value.substr(0, semi);
    client = value.substr(semi + 1);
  }
  std::string_view rest;
  if (!addr.empty() && addr.front() == '[') {
    auto close = addr.find(']');
    if (close == std::string_view::npos) return "unclosed '[' in the host";
    e.host = std::string(addr.substr(1, close - 1));
    rest = addr.substr(close + 1);
    if (rest.empty() || rest.front() != ':') return "expected ':' after the host";
    rest.remove_prefix(1);
  } else {
    auto colon = addr.find(':');
    if (colon == std::string_view::npos) return "expected host:quorumPort:electionPort";
    e.host = std::string(addr.substr(0, colon));
    rest = addr.substr(colon + 1);
  }
  std::vector<std::string_view> parts;
  while (true) {
    auto colon = rest.find(':');
    parts.push_back(rest.substr(0, colon));
    if (colon == std::string_view::npos) break;
    rest = rest.substr(colon + 1);
  }
  if (e.host.empty()) return "the host is empty";
  if (parts.size() < 2 || parts.size() > 3) return "expected host:quorumPort:electionPort[:role]";
  auto q = number<int32_t>(parts[0]);
  auto el = number<int32_t>(parts[1]);
  if (!q || *q < 1 || *q > 65535) return "the quorum port is not a port number";
  if (!el || *el < 1 || *el > 65535) return "the election port is not a port number";
  e.quorum_port = *q;
  e.election_port = *el;
  if (parts.size() == 3) {
    if (parts[2] != "participant" && parts[2] != "observer") return "the role must be participant or observer";
    e.role = std::string(parts[2]);
  }
  e.client_address = std::string(trim(client));
  if (!e.client_address.empty()) {
    std::string_view ca = e.client_address, port = ca;
    if (auto colon = ca.rfind(':'); colon != std::string_view::npos) {
      std::string_view host = ca.substr(0, colon);
      if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
      e.client_host = std::string(host);
      port = ca.substr(colon + 1);
      if (!is_ip_address(e.client_host)) return "the client address '" + shown(e.client_host) + "' is not an IP address";
    }
    auto cp = number<int32_t>(port);
    if (!cp || *cp < 0 || *cp > 65535) return "the client port after ';' is not a port number";
    e.client_port = *cp;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> add_server(Config& c, const std::string& key, std::string_view value,
                                      const std::string& origin, bool any_id) {
  auto id = number<int64_t>(std::string_view(key).substr(7));
  if (any_id) {
    if (!id || *id < 0 || *id > INT32_MAX) return "the server id must be a number from 0 to 2147483647";
  } else if (!id || *id < 0 || *id > 254) {
    return "the server id must be a number from 0 to 254";
  }
  PeerEntry e;
  e.id = *id;
  e.origin = origin;
  if (auto why = parse_peer(value, e)) return *why;
  if (c.servers.count(*id)) return "server id " + std::to_string(*id) + " is given twice";
  c.servers[*id] = e;
  return std::nullopt;
}

// ZooKeeper 3.5+'s dynamic configuration file (zoo.cfg.dynamic.<version>): the members, as
// server.N lines; the configuration's version is the name's hex suffix. Nothing else belongs.
std::optional<std::string> read_dynamic_config(Config& c, const std::string& set_at) {
  const std::string& path = c.dynamic_config_file;
  if (!c.servers.empty())
    return set_at + "dynamicConfigFile=" + path + ": the server.N lines belong in " + path +
           " alone, and this file has them too (" + c.servers.begin()->second.origin + ")";
  std::string text;
  if (!config_text::read_file(path, text)) return set_at + "dynamicConfigFile=" + path + ": cannot be read";
  // The version is the name's last part, in hex (zoo.cfg.dynamic.100000000); 0 without one.
  std::string_view name(path);
  std::string_view suffix = name.substr(name.rfind('.') == std::string_view::npos ? name.size() : name.rfind('.') + 1);
  uint64_t version = 0;
  auto [vp, vec] = std::from_chars(suffix.data(), suffix.data() + suffix.size(), version, 16);
  c.config_version = vec == std::errc() && vp == suffix.data() + suffix.size() ? version : 0;
  return parse_members(c, text, path, false);
}
std::optional<std::string> parse_members(Config& c, std::string_view text, const std::string& name,
                                         bool version_inside, bool any_id) {
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    size_t end = text.find('\n');
    std::string_view line = trim(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    std::string where = name + ":" + std::to_string(line_no) + ": ";
    if (line.empty() || line.front() == '#' || line.front() == '!') continue;
    auto eq = line.find('=');
    if (eq == std::string_view::npos) return where + "expected key=value, got '" + shown(line) + "'";
    std::string key(config_key_of(line));
    std::string_view value = trim(line.substr(eq + 1));
    if (key.rfind("server.", 0) == 0) {
      if (auto why = add_server(c, key, value, name + ":" + std::to_string(line_no), any_id))
        return where + key + "=" + shown(value) + ": " + *why;
    } else if (key == "version" && version_inside) {
      uint64_t version = 0;
      auto [vp, vec] = std::from_chars(value.data(), value.data() + value.size(), version, 16);
      if (vec != std::errc() || vp != value.data() + value.size())
        return where + "version=" + shown(value) + ": not a hexadecimal number";
      c.config_version = version;
    } else if (key == "version") {
      return where + "version=" + shown(value) + ": the version belongs in the file's name (zoo.cfg.dynamic." +
             shown(value) + "), not inside it, as ZooKeeper requires";
    } else if (key.rfind("group.", 0) == 0 || key.rfind("weight.", 0) == 0) {
      return where + key + ": hierarchical quorums (group.N, weight.N) are not supported";
    } else {
      return where + "'" + shown(key) + "' does not belong in a dynamic configuration (server.N lines only; "
                     "the rest goes in zoo.cfg)";
    }
  }
  if (c.servers.empty()) return name + ": names no server.N (the members belong here)";
  return std::nullopt;
}

std::string config_node_text(const Config& c) {
  if (!c.ensemble()) return {};
  char version[24];
  std::snprintf(version, sizeof version, "%llx", static_cast<unsigned long long>(c.config_version));
  return members_text(c.servers) + "version=" + version;
}

std::string members_text(const std::map<int64_t, PeerEntry>& servers) {
  // Appended piece by piece: GCC 12 at -O3 takes "[" + h + "]" for an overlapping copy.
  std::string out;
  auto host = [&out](const std::string& h) {
    bool v6 = h.find(':') != std::string::npos;
    if (v6) out += '[';
    out += h;
    if (v6) out += ']';
  };
  for (const auto& [id, e] : servers) {
    out += "server.";
    out += std::to_string(id);
    out += '=';
    host(e.host);
    out += ':';
    out += std::to_string(e.quorum_port);
    out += ':';
    out += std::to_string(e.election_port);
    out += ':';
    out += e.role;
    // A client address given on the line is part of it (0.0.0.0 when only a port is given);
    // one from clientPort is not, as in ZooKeeper.
    if (e.client_port >= 0) {
      out += ';';
      host(e.client_host.empty() ? std::string("0.0.0.0") : e.client_host);
      out += ':';
      out += std::to_string(e.client_port);
    }
    out += '\n';
  }
  return out;
}

namespace {
// ZooKeeper's setupClientPort: the client address on this server's own server.N line
// (";[address:]port") is where it serves clients, in an ensemble and in a standalone server
// started from one such line alike; clientPort and clientPortAddress may repeat it but not
// contradict it (a wildcard clientPortAddress agrees with any address).
std::optional<std::string> take_line_client_address(Config& c, const PeerEntry& self) {
  if (self.client_port < 0) return std::nullopt;
  if (c.client_port >= 0) {
    bool port_differs = c.client_port != self.client_port;
    bool host_differs = !self.client_host.empty() && !is_any_address(c.client_port_address) &&
                        !is_any_address(self.client_host) && c.client_port_address != self.client_host;
    if (port_differs || host_differs)
      return c.client_port_origin + ": clientPort " + std::to_string(c.client_port) +
             (c.client_port_address == "0.0.0.0" ? "" : " on " + c.client_port_address) + " is not server." +
             std::to_string(self.id) + "'s client address " + self.client_address + " (" + self.origin +
             "): give one, or the same in both";
  }
  if (!self.client_host.empty()) c.client_port_address = self.client_host;
  c.client_port = self.client_port;
  c.client_port_origin = self.origin;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_ensemble(Config& c) {
  if (!c.ensemble()) {
    // A standalone server from one server.N line: the line's client address serves, as in
    // ZooKeeper, when myid names that line.
    if (c.servers.size() != 1) return std::nullopt;
    if (const PeerEntry* self = c.self()) return take_line_client_address(c, *self);
    if (c.client_port >= 0 || c.secure_client_port >= 0) return std::nullopt;
    const PeerEntry& line = c.servers.begin()->second;
    return line.origin + ": clientPort is not set, and server." + std::to_string(line.id) + "'s client address " +
           "serves only a server whose " + c.data_dir + "/myid holds " + std::to_string(line.id);
  }
  std::string ids;
  for (const auto& [id, e] : c.servers) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  std::string myid_file = c.data_dir + "/myid";
  if (!c.my_id)
    return c.data_dir_origin + ": " + myid_file + " is missing: each member of an ensemble needs it, holding its own "
           "server id (one of " + ids + ")";
  const PeerEntry* self = c.self();
  if (!self)
    return myid_file + ":1: server id " + std::to_string(*c.my_id) + " has no server." + std::to_string(*c.my_id) +
           " line in the configuration (its servers are " + ids + ")";
  // Every address a member listens on, once: two members (or two ports of one) on one address
  // and port could never both start.
  struct Use {
    const PeerEntry* e;
    const char* what;
  };
  std::map<std::pair<std::string, int32_t>, Use> used;
  size_t voters = 0;
  for (const auto& [id, e] : c.servers) {
    if (!e.observer()) ++voters;
    std::vector<std::pair<int32_t, const char*>> ports{{e.quorum_port, "quorum port"},
                                                       {e.election_port, "election port"}};
    if (e.client_port > 0) ports.emplace_back(e.client_port, "client port");
    for (auto [port, what] : ports) {
      auto host = std::string(what) == "client port" && !e.client_host.empty() ? e.client_host : e.host;
      auto [it, fresh] = used.emplace(std::make_pair(host, port), Use{&e, what});
      if (!fresh)
        return e.origin + ": server." + std::to_string(id) + ": its " + what + " " + host + ":" + std::to_string(port) +
               " is already server." + std::to_string(it->second.e->id) + "'s " + it->second.what + " (" +
               it->second.e->origin + ")";
    }
  }
  if (voters == 0) return c.data_dir_origin + ": every server.N line is an observer: an ensemble needs voters";
  if (auto why = take_line_client_address(c, *self)) return why;
  if (c.client_port < 0 && c.secure_client_port < 0)
    return self->origin + ": server." + std::to_string(*c.my_id) + " has no client port: set clientPort, or add "
           "';clientPort' to this line";
  if (c.peer_type != self->role)
    c.warnings.push_back("peerType=" + c.peer_type + " does not match " + self->origin + " (" + self->role +
                         "): the server line wins, as in ZooKeeper");
  if (voters <= 2)
    c.warnings.push_back("an ensemble of " + std::to_string(voters) + " voters tolerates no failure: you need at least 3");
  else if (voters % 2 == 0)
    c.warnings.push_back(std::to_string(voters) + " voters tolerate no more failures than " + std::to_string(voters - 1) +
                         ": consider an odd number of servers");
  return std::nullopt;
}

}  // namespace warden::server
