#include "server/config/config.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/config/keys.hpp"
#include "server/secrets/redaction.hpp"

namespace warden::server {

using config_text::is_ip_address;
using config_text::number;
using config_text::trim;

namespace {
// The checks between keys, once every line is read, as ZooKeeper's QuorumPeerConfig makes them.
std::optional<std::string> check_quorum_sasl(const Config::QuorumSasl& q, const std::string& f) {
  if (!q.enable_sasl && q.server_require_sasl)
    return f + ": quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.serverRequireSasl";
  if (!q.enable_sasl && q.learner_require_sasl)
    return f + ": quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.learnerRequireSasl";
  if (!q.learner_require_sasl && q.server_require_sasl)
    return f + ": quorum.auth.learnerRequireSasl is disabled, so cannot enable quorum.auth.serverRequireSasl";
  return std::nullopt;
}

// sessionRequireClientSASLAuth turns enforcement on with sasl among the schemes, as ZooKeeper's.
std::optional<std::string> check_enforced_auth(Config& c, const std::string& f) {
  if (c.session_require_sasl) {
    c.enforce_auth = true;
    if (std::find(c.enforce_auth_schemes.begin(), c.enforce_auth_schemes.end(), "sasl") == c.enforce_auth_schemes.end())
      c.enforce_auth_schemes.push_back("sasl");
  }
  if (!c.enforce_auth) return std::nullopt;
  if (c.enforce_auth_schemes.empty())
    return f + ": enforce.auth.enabled is true: enforce.auth.schemes must name the schemes a session needs";
  for (const auto& scheme : c.enforce_auth_schemes)
    if (scheme != "digest" && scheme != "ip" && scheme != "x509" && scheme != "sasl")
      return f + ": enforce.auth.schemes: authentication scheme '" + shown(scheme) + "' is not available" +
             " (Warden's schemes: digest, ip, x509, sasl)";
  return std::nullopt;
}

std::optional<std::string> check_across_keys(Config& c, std::string_view file_name) {
  std::string f(file_name);
  if (!c.dynamic_config_file.empty())
    if (auto why = read_dynamic_config(c, c.dynamic_config_origin)) return why;
  if ((c.ssl_quorum || c.quorum_port_unification) && !c.quorum_tls.has_key_store())
    return f + ": " + (c.ssl_quorum ? "sslQuorum=true" : "portUnification=true") +
           " needs TLS between members: set ssl.quorum.keyStore.location (and ssl.quorum.trustStore.location)";
  if (auto why = check_quorum_sasl(c.quorum_sasl, f)) return why;
  if (auto why = check_enforced_auth(c, f)) return why;
  if (c.ensemble() || (c.servers.size() == 1 && c.servers.begin()->second.client_port >= 0)) {
    // The client port may come from this member's server line instead; check_ensemble sees to it.
    Config probe = c;
    if (probe.client_port < 0) probe.client_port = 0;
    return validate_config(probe, file_name);
  }
  return validate_config(c, file_name);
}
}  // namespace

ConfigResult parse_config(std::string_view text, std::string_view file_name,
                          const std::vector<std::pair<std::string, std::string>>& properties) {
  Config c;
  std::istringstream in{std::string(text)};
  std::string raw;
  int line_no = 0;
  size_t next_property = 0;
  std::string origin;  // a property's origin; empty: the file's line
  for (;;) {
    if (next_property < properties.size()) {
      origin = properties[next_property].first;
      raw = properties[next_property++].second;
    } else {
      origin.clear();
      if (!std::getline(in, raw)) break;
      ++line_no;
    }
    config_keys::Line l;
    l.file_line = std::string(file_name) + ":" + std::to_string(line_no);
    l.where = origin.empty() ? l.file_line + ": " : origin + ": ";
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == '!') continue;
    auto eq = line.find('=');
    if (eq == std::string_view::npos)
      return l.where + "expected key=value, got '" +
             (secrets::secret_key(line) ? std::string(secrets::mask) : shown(line)) + "'";
    std::string key(config_key_of(line));
    l.key = key;
    l.value = trim(line.substr(eq + 1));
    if (key.empty()) return l.where + "the key before '=' is empty";
    if (!config_keys::quorum_peer_config_key(key)) c.properties.emplace_back("zookeeper." + key, std::string(l.value));
    if (auto err = config_keys::read_key(c, l)) return *err;
  }
  if (auto why = check_across_keys(c, file_name)) return *why;
  return c;
}

std::optional<std::string> validate_config(const Config& c, std::string_view origin) {
  std::string o(origin);
  if (c.data_dir.empty()) return o + ": dataDir is not set";
  if (c.client_port < 0 && c.secure_client_port < 0) return o + ": clientPort is not set";
  if (c.tls_needed() && !c.client_tls.has_key_store())
    return o + ": " + (c.secure_client_port >= 0 ? "secureClientPort" : "client.portUnification=true") +
           " needs TLS: set ssl.keyStore.location (and ssl.trustStore.location) to this server's stores";
  if (c.client_port == c.secure_client_port && c.client_port > 0 &&
      c.client_port_address == c.secure_client_port_address)
    return o + ": clientPort and secureClientPort are both " + std::to_string(c.client_port) +
           ": use client.portUnification=true to take TLS and plaintext on one port";
  if (!is_ip_address(c.client_port_address))
    return o + ": clientPortAddress '" + c.client_port_address + "' is not an IP address";
  if (c.effective_min_session_timeout() > c.effective_max_session_timeout())
    return o + ": minSessionTimeout (" + std::to_string(c.effective_min_session_timeout()) +
           ") is larger than maxSessionTimeout (" + std::to_string(c.effective_max_session_timeout()) + ")";
  return std::nullopt;
}

std::optional<std::string> read_my_id(Config& c) {
  if (c.data_dir.empty()) return std::nullopt;
  std::string path = c.data_dir + "/myid";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream f(path);
  std::string first;
  if (!f || !std::getline(f, first)) return path + ":1: cannot be read, or is empty (it must hold this server's id)";
  // ZooKeeper reads the first line, trimmed, as a number.
  auto id = number<int32_t>(trim(first));
  if (!id || *id < 0 || *id > 255)
    return path + ":1: '" + shown(trim(first)) + "' is not a server id (a whole number from 0 to 255)";
  if (c.extended_types && *id == 255)
    return path + ":1: server id 255 cannot be used with extendedTypesEnabled=true: a session id's top byte 0xff "
                  "marks a TTL node (ids up to 254, as in ZooKeeper)";
  c.my_id = *id;
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> jvm_flag_properties(const std::vector<JvmProperty>& properties) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : properties) {
    // A setting Warden reads: in a minimal file it is no unknown key (a bad value is an
    // error, which the real reading then reports with the flag's origin).
    auto known = [&](const std::string& key) {
      auto r = parse_config("dataDir=/probe\nclientPort=0\n" + key + "=" + p.value + "\n", "probe");
      const auto* c = std::get_if<Config>(&r);
      return !c || std::none_of(c->warnings.begin(), c->warnings.end(), [](const std::string& w) {
               return w.find("unknown key") != std::string::npos;
             });
    };
    std::string key = p.name;
    if (!known(key)) {
      if (p.name.rfind("zookeeper.", 0) != 0 || !known(p.name.substr(10))) continue;
      key = p.name.substr(10);
    }
    out.emplace_back(p.origin + " -D" + p.name, key + "=" + p.value);
  }
  return out;
}

ConfigResult load_config(const std::string& file_name) {
  std::string text;
  if (!config_text::read_file(file_name, text)) return file_name + ": cannot be read";
  std::string dir = std::filesystem::path(file_name).parent_path().string();
  auto flags = launcher_properties(std::getenv("SERVER_JVMFLAGS"), std::getenv("JVMFLAGS"), dir.empty() ? "." : dir);
  auto parsed = parse_config(text, file_name, jvm_flag_properties(flags));
  if (auto* c = std::get_if<Config>(&parsed)) {
    c->config_text = text;
    c->config_file = file_name;
    if (auto why = read_my_id(*c)) return *why;
    if (auto why = check_ensemble(*c)) return *why;
  }
  return parsed;
}

std::string log_dir_of(const std::string& data_dir) { return (std::filesystem::path(data_dir) / "log").string(); }

}  // namespace warden::server
