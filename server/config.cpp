#include "server/config.hpp"

#include "server/four_letter.hpp"
#include "server/secrets/redaction.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace warden::server {

namespace {
// Warden listens on addresses, not names: a name would need a resolver at start.
bool is_ip_address(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

// 0.0.0.0 or :: (any spelling): every address of the machine.
bool is_any_address(const std::string& s) {
  unsigned char buf[16] = {};
  static const unsigned char zero[16] = {};
  if (inet_pton(AF_INET, s.c_str(), buf) == 1) return std::memcmp(buf, zero, 4) == 0;
  return inet_pton(AF_INET6, s.c_str(), buf) == 1 && std::memcmp(buf, zero, 16) == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view config_key_of(std::string_view line) { return trim(line.substr(0, line.find('='))); }

namespace {
template <class T>
std::optional<T> parse_number(std::string_view v) {
  T out{};
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty()) return std::nullopt;
  return out;
}

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
  auto q = parse_number<int32_t>(parts[0]);
  auto el = parse_number<int32_t>(parts[1]);
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
    auto cp = parse_number<int32_t>(port);
    if (!cp || *cp < 0 || *cp > 65535) return "the client port after ';' is not a port number";
    e.client_port = *cp;
  }
  return std::nullopt;
}

bool parse_bool(std::string_view v, bool& out) {
  if (v == "true" || v == "yes") {
    out = true;
    return true;
  }
  if (v == "false" || v == "no") {
    out = false;
    return true;
  }
  return false;
}

// The keys ZooKeeper's QuorumPeerConfig reads itself; it makes a system property of any other.
bool quorum_peer_config_key(std::string_view key) {
  static const std::set<std::string, std::less<>> own{
      "autopurge.purgeInterval", "autopurge.snapRetainCount", "clientPort", "clientPortAddress",
      "clientPortListenBacklog", "connectToLearnerMasterLimit", "dataDir", "dataLogDir", "dynamicConfigFile",
      "electionAlg", "initLimit", "localSessionsEnabled", "localSessionsUpgradingEnabled", "maxClientCnxns",
      "maxSessionTimeout", "minSessionTimeout", "multiAddress.enabled", "multiAddress.reachabilityCheckEnabled",
      "multiAddress.reachabilityCheckTimeoutMs", "observerMasterPort", "oraclePath", "peerType", "portUnification",
      "quorum.cnxn.threads.size", "quorumListenOnAllIPs", "reconfigEnabled", "secureClientPort",
      "secureClientPortAddress", "sslQuorum", "sslQuorumReloadCertFiles", "standaloneEnabled", "syncEnabled",
      "syncLimit", "tickTime", "quorum.auth.enableSasl", "quorum.auth.serverRequireSasl",
      "quorum.auth.learnerRequireSasl", "quorum.auth.learner.saslLoginContext", "quorum.auth.server.saslLoginContext",
      "quorum.auth.kerberos.servicePrincipal", "jvm.pause.monitor", "jvm.pause.sleep.time.ms",
      "jvm.pause.info-threshold.ms", "jvm.pause.warn-threshold.ms"};
  auto starts = [&](std::string_view p) { return key.substr(0, p.size()) == p; };
  return own.count(key) || starts("server.") || starts("group") || starts("weight") || starts("metricsProvider.");
}

// Keys ZooKeeper knows that Warden accepts and does not use yet, so they draw no warning.
bool known_unused(std::string_view key) {
  return key == "preAllocSize" || key == "metricsProvider.exportJvmInfo" ||
         key == "electionAlg" || key == "quorumListenOnAllIPs";
}
}  // namespace

// Text from a file as a message may show it: at most 40 bytes, each byte outside printable
// ASCII as \xNN, so a NUL or a terminal escape cannot cut or garble the line.
std::string shown(std::string_view s) {
  std::string out;
  for (unsigned char ch : s.substr(0, 40)) {
    if (ch >= 0x20 && ch < 0x7f) {
      out += static_cast<char>(ch);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    }
  }
  return s.size() > 40 ? out + "..." : out;
}

namespace {
// A server.N line, from zoo.cfg or the dynamic file; the reason when it is refused.
std::optional<std::string> add_server(Config& c, const std::string& key, std::string_view value,
                                      const std::string& origin, bool any_id = false) {
  auto id = parse_number<int64_t>(std::string_view(key).substr(7));
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
  std::ifstream f(path);
  if (!f) return set_at + "dynamicConfigFile=" + path + ": cannot be read";
  // The version is the name's last part, in hex (zoo.cfg.dynamic.100000000); 0 without one.
  std::string_view name(path);
  std::string_view suffix = name.substr(name.rfind('.') == std::string_view::npos ? name.size() : name.rfind('.') + 1);
  uint64_t version = 0;
  auto [vp, vec] = std::from_chars(suffix.data(), suffix.data() + suffix.size(), version, 16);
  c.config_version = vec == std::errc() && vp == suffix.data() + suffix.size() ? version : 0;
  std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  return parse_members(c, text, path, false);
}
}  // namespace

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

ConfigResult parse_config(std::string_view text, std::string_view file_name,
                          const std::vector<std::pair<std::string, std::string>>& properties) {
  Config c;
  std::istringstream in{std::string(text)};
  std::string raw;
  int line_no = 0;
  size_t next_property = 0;
  std::string origin;  // a property's origin; empty: the file's line
  std::string dynamic_origin;  // where dynamicConfigFile was set
  auto where = [&] {
    return origin.empty() ? std::string(file_name) + ":" + std::to_string(line_no) + ": " : origin + ": ";
  };
  for (;;) {
    if (next_property < properties.size()) {
      origin = properties[next_property].first;
      raw = properties[next_property++].second;
    } else {
      origin.clear();
      if (!std::getline(in, raw)) break;
      ++line_no;
    }
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == '!') continue;
    auto eq = line.find('=');
    if (eq == std::string_view::npos)
      return where() + "expected key=value, got '" + (secrets::secret_key(line) ? std::string(secrets::mask) : shown(line)) +
             "'";
    std::string key(config_key_of(line));
    std::string_view value = trim(line.substr(eq + 1));
    if (key.empty()) return where() + "the key before '=' is empty";
    if (!quorum_peer_config_key(key)) c.properties.emplace_back("zookeeper." + key, std::string(value));
    auto bad = [&](std::string_view why) {
      return where() + key + "=" + secrets::shown_value(key, value) + ": " + std::string(why);
    };
    auto set_int = [&](int32_t& field, int32_t min, int32_t max) -> std::optional<std::string> {
      auto v = parse_number<int32_t>(value);
      if (!v) return bad("not a whole number");
      if (*v < min || *v > max)
        return bad("must be between " + std::to_string(min) + " and " + std::to_string(max));
      field = *v;
      return std::nullopt;
    };
    std::optional<std::string> err;
    if (key == "tickTime") {
      err = set_int(c.tick_time, 1, 1 << 30);
    } else if (key == "initLimit") {
      err = set_int(c.init_limit, 1, 1 << 30);
    } else if (key == "syncLimit") {
      err = set_int(c.sync_limit, 1, 1 << 30);
    } else if (key == "dataDir") {
      c.data_dir = std::string(value);
      c.data_dir_origin = std::string(file_name) + ":" + std::to_string(line_no);
    } else if (key == "peerType") {
      if (value != "participant" && value != "observer") err = bad("must be participant or observer");
      c.peer_type = std::string(value);
    } else if (key == "dataLogDir") {
      c.data_log_dir = std::string(value);
    } else if (key == "clientPort") {
      err = set_int(c.client_port, 0, 65535);
      c.client_port_origin = std::string(file_name) + ":" + std::to_string(line_no);
    } else if (key == "clientPortAddress") {
      c.client_port_address = std::string(value);
      if (!is_ip_address(c.client_port_address)) err = bad("is not an IP address");
    } else if (key == "DigestAuthenticationProvider.superDigest" ||
               key == "zookeeper.DigestAuthenticationProvider.superDigest") {
      c.super_digest = std::string(value);
      auto colon = c.super_digest.find(':');
      if (colon == 0 || colon == std::string::npos || colon + 1 == c.super_digest.size())
        err = bad("expected user:base64-digest (as zkCli's or DigestAuthenticationProvider's output)");
    } else if (key == "globalOutstandingLimit") {
      err = set_int(c.global_outstanding_limit, 1, 1 << 30);
    } else if (key == "maxClientCnxns") {
      err = set_int(c.max_client_cnxns, 0, 1 << 30);
    } else if (key == "minSessionTimeout") {
      err = set_int(c.min_session_timeout, -1, 1 << 30);
    } else if (key == "maxSessionTimeout") {
      err = set_int(c.max_session_timeout, -1, 1 << 30);
    } else if (key == "jute.maxbuffer") {
      err = set_int(c.jute_max_buffer, 1024, 1 << 30);
    } else if (key == "extendedTypesEnabled") {
      if (!parse_bool(value, c.extended_types)) err = bad("must be true or false");
    } else if (key == "readonlymode.enabled" || key == "zookeeper.readonlymode.enabled") {
      if (!parse_bool(value, c.read_only_mode)) err = bad("must be true or false");
    } else if (key == "reconfigEnabled") {
      if (!parse_bool(value, c.reconfig_enabled)) err = bad("must be true or false");
    } else if (key == "standaloneEnabled") {
      if (!parse_bool(value, c.standalone_enabled)) err = bad("must be true or false");
    } else if (key == "linearizableReads") {
      if (!parse_bool(value, c.linearizable_reads)) err = bad("must be true or false");
    } else if (key == "skipACL" || key == "zookeeper.skipACL") {
      // ZooKeeper compares the value with "yes" and reads anything else as "no": a "true" that
      // would silently leave every ACL checked is refused here instead.
      if (value != "yes" && value != "no") err = bad("must be yes or no (ZooKeeper reads any other value as no)");
      c.skip_acl = value == "yes";
    } else if (key == "enforceQuota" || key == "zookeeper.enforceQuota") {
      if (!parse_bool(value, c.enforce_quota)) err = bad("must be true or false");
    } else if (key == "4lw.commands.whitelist") {
      // Comma-separated words, or "*". An unknown word is ignored with a warning, as
      // ZooKeeper ignores it.
      c.four_letter_whitelist.clear();
      size_t from = 0;
      while (from <= value.size()) {
        size_t comma = std::min(value.find(',', from), value.size());
        std::string word(trim(value.substr(from, comma - from)));
        from = comma + 1;
        if (word.empty()) continue;
        if (word == "*" || is_four_letter_word(word))
          c.four_letter_whitelist.push_back(word);
        else
          c.warnings.push_back(where() + "4lw.commands.whitelist: unknown four-letter word '" + word + "' ignored");
      }
    } else if (key == "snapCount") {
      err = set_int(c.snap_count, 2, 1 << 30);
    } else if (key == "snapTreePercent") {
      err = set_int(c.snap_tree_percent, 0, 1000000);
    } else if (key == "autopurge.snapRetainCount") {
      err = set_int(c.snap_retain_count, 3, 1 << 20);
    } else if (key == "autopurge.purgeInterval") {
      err = set_int(c.purge_interval_hours, 0, 1 << 20);
    } else if (key == "digest.enabled" || key == "zookeeper.digest.enabled") {
      if (!parse_bool(value, c.digest_enabled)) err = bad("must be true or false");
    } else if (key == "fsync.warningthresholdms" || key == "zookeeper.fsync.warningthresholdms") {
      err = set_int(c.fsync_warning_ms, 0, 1 << 30);
    } else if (key == "forceSync") {
      if (!parse_bool(value, c.force_sync)) err = bad("must be yes or no");
    } else if (key == "nio.sessionlessCnxnTimeout" || key == "zookeeper.nio.sessionlessCnxnTimeout") {
      err = set_int(c.sessionless_timeout_ms, 1, 1 << 30);
    } else if (key == "znode.container.checkIntervalMs") {
      err = set_int(c.container_check_interval_ms, 10, 1 << 30);
    } else if (key == "secureClientPort") {
      err = set_int(c.secure_client_port, 0, 65535);
      c.secure_client_port_origin = std::string(file_name) + ":" + std::to_string(line_no);
    } else if (key == "secureClientPortAddress") {
      c.secure_client_port_address = std::string(value);
      if (!is_ip_address(c.secure_client_port_address)) err = bad("is not an IP address");
    } else if (key == "client.portUnification" || key == "zookeeper.client.portUnification") {
      if (!parse_bool(value, c.client_port_unification)) err = bad("must be true or false");
    } else if (key == "serverCnxnFactory" || key == "zookeeper.serverCnxnFactory") {
      // ZooKeeper needs Netty's factory for TLS; Warden has one connection layer for both.
      if (value != "org.apache.zookeeper.server.NettyServerCnxnFactory" &&
          value != "org.apache.zookeeper.server.NIOServerCnxnFactory")
        err = bad("unknown connection factory (ZooKeeper's are org.apache.zookeeper.server.NettyServerCnxnFactory "
                  "and NIOServerCnxnFactory)");
    } else if (key == "sslQuorum") {
      if (!parse_bool(value, c.ssl_quorum)) err = bad("must be true or false");
    } else if (key == "portUnification") {
      if (!parse_bool(value, c.quorum_port_unification)) err = bad("must be true or false");
    } else if (key.rfind("authProvider.", 0) == 0 || key.rfind("zookeeper.authProvider.", 0) == 0) {
      if (value == "org.apache.zookeeper.server.auth.SASLAuthenticationProvider") c.sasl_provider = true;
      if (value == "org.apache.zookeeper.server.auth.X509AuthenticationProvider" ||
          value == "org.apache.zookeeper.server.auth.DigestAuthenticationProvider" ||
          value == "org.apache.zookeeper.server.auth.IPAuthenticationProvider" ||
          value == "org.apache.zookeeper.server.auth.SASLAuthenticationProvider")
        ;  // always on (x509 for TLS clients, sasl where a JAAS Server section is found)
      else
        c.warnings.push_back(where() + key + ": authentication provider '" + shown(value) +
                             "' is not supported by Warden: ignored");
    } else if (key == "enforce.auth.enabled" || key == "zookeeper.enforce.auth.enabled") {
      if (!parse_bool(value, c.enforce_auth)) err = bad("must be true or false");
    } else if (key == "enforce.auth.schemes" || key == "zookeeper.enforce.auth.schemes") {
      c.enforce_auth_schemes.clear();
      size_t from = 0;
      while (from <= value.size()) {  // ZooKeeper splits on ',' and trims each
        size_t comma = std::min(value.find(',', from), value.size());
        std::string scheme(trim(value.substr(from, comma - from)));
        from = comma + 1;
        if (!scheme.empty()) c.enforce_auth_schemes.push_back(scheme);
      }
    } else if (key == "sessionRequireClientSASLAuth" || key == "zookeeper.sessionRequireClientSASLAuth") {
      if (!parse_bool(value, c.session_require_sasl)) err = bad("must be true or false");
    } else if (key == "jaasConfigFile") {
      c.jaas_file = std::string(value);
      c.jaas_origin = std::string(file_name) + ":" + std::to_string(line_no);
      if (c.jaas_file.empty()) err = bad("names no file");
    } else if (key == "sasl.serverconfig" || key == "zookeeper.sasl.serverconfig") {
      c.sasl_section = std::string(value);
      if (c.sasl_section.empty()) err = bad("names no JAAS section");
    } else if (key == "superUser" || key == "zookeeper.superUser") {
      c.sasl_super_user = std::string(value);
    } else if (key == "allowSaslFailedClients" || key == "zookeeper.allowSaslFailedClients") {
      if (!parse_bool(value, c.allow_sasl_failed_clients)) err = bad("must be true or false");
    } else if (key == "kerberos.removeHostFromPrincipal" || key == "kerberos.removeRealmFromPrincipal" ||
               key == "zookeeper.kerberos.removeHostFromPrincipal" ||
               key == "zookeeper.kerberos.removeRealmFromPrincipal") {
      bool& flag = key.find("Host") != std::string::npos ? c.kerberos_remove_host : c.kerberos_remove_realm;
      if (!parse_bool(value, flag)) err = bad("must be true or false");
    } else if (key == "quorum.auth.enableSasl" || key == "quorum.auth.learnerRequireSasl" ||
               key == "quorum.auth.serverRequireSasl") {
      auto& q = c.quorum_sasl;
      bool& flag = key == "quorum.auth.enableSasl"          ? q.enable_sasl
                   : key == "quorum.auth.learnerRequireSasl" ? q.learner_require_sasl
                                                             : q.server_require_sasl;
      if (!parse_bool(value, flag)) err = bad("must be true or false");
    } else if (key == "quorum.auth.learner.saslLoginContext" || key == "quorum.auth.server.saslLoginContext") {
      (key.find("learner") != std::string::npos ? c.quorum_sasl.learner_section : c.quorum_sasl.server_section) =
          std::string(value);
      if (value.empty()) err = bad("names no JAAS section");
    } else if (key == "quorum.auth.kerberos.servicePrincipal") {
      // service/host[@REALM]: Kerberos finds the realm of the host itself (krb5.conf's domain_realm).
      std::string_view p = value.substr(0, value.find('@'));
      auto slash = p.find('/');
      if (slash == std::string_view::npos || slash == 0 || slash + 1 >= p.size() ||
          p.find('/', slash + 1) != std::string_view::npos)
        err = bad("must be service/host[@REALM] (e.g. zkquorum/_HOST)");
      c.quorum_sasl.service_principal = std::string(p);
    } else if (key == "admin.enableServer" || key == "zookeeper.admin.enableServer") {
      if (!parse_bool(value, c.admin.enabled)) err = bad("must be true or false");
    } else if (key == "admin.serverAddress" || key == "zookeeper.admin.serverAddress") {
      c.admin.address = std::string(value);
      if (!is_ip_address(c.admin.address)) err = bad("is not an IP address");
    } else if (key == "admin.serverPort" || key == "zookeeper.admin.serverPort") {
      err = set_int(c.admin.port, 0, 65535);
    } else if (key == "admin.commandURL" || key == "zookeeper.admin.commandURL") {
      std::string url(value);
      while (url.size() > 1 && url.back() == '/') url.pop_back();
      if (url.empty() || url[0] != '/' || url.find_first_of(" ?#\t") != std::string::npos)
        err = bad("must be a path that starts with /");
      c.admin.command_url = url;
    } else if (key == "admin.idleTimeout" || key == "zookeeper.admin.idleTimeout") {
      err = set_int(c.admin.idle_timeout_ms, 1, 1 << 30);
    } else if (key == "admin.snapshot.enabled" || key == "zookeeper.admin.snapshot.enabled") {
      if (!parse_bool(value, c.admin_snapshot_enabled)) err = bad("must be true or false");
    } else if (key == "admin.restore.enabled" || key == "zookeeper.admin.restore.enabled") {
      if (!parse_bool(value, c.admin_restore_enabled)) err = bad("must be true or false");
    } else if (key == "admin.rateLimiterIntervalInMS" || key == "zookeeper.admin.rateLimiterIntervalInMS") {
      err = set_int(c.admin_rate_limit_ms, 0, 1 << 30);
    } else if (key == "jvm.pause.monitor") {
      if (!parse_bool(value, c.pause.enabled)) err = bad("must be true or false");
    } else if (key == "jvm.pause.sleep.time.ms") {
      err = set_int(c.pause.sleep_ms, 1, 1 << 30);
    } else if (key == "jvm.pause.info-threshold.ms") {
      err = set_int(c.pause.info_threshold_ms, 0, 1 << 30);
    } else if (key == "jvm.pause.warn-threshold.ms") {
      err = set_int(c.pause.warn_threshold_ms, 0, 1 << 30);
    } else if (key == "metricsProvider.className") {
      c.metrics.enabled = value == "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider";
      if (!c.metrics.enabled && value != "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider")
        c.warnings.push_back(where() + key + ": metrics provider '" + shown(value) +
                             "' is not supported by Warden (PrometheusMetricsProvider is): ignored");
    } else if (key == "metricsProvider.httpHost") {
      c.metrics.address = std::string(value);
      if (!is_ip_address(c.metrics.address)) err = bad("is not an IP address");
    } else if (key == "metricsProvider.httpPort") {
      err = set_int(c.metrics.port, 0, 65535);
    } else if (key.rfind("warden.log.", 0) == 0) {
      bool known = true;
      auto why = read_log_key(std::string_view(key).substr(11), value, c.log, &known);
      if (!known)
        c.warnings.push_back(where() + "unknown key '" + key + "' ignored (warden.log.* are level, file, "
                             "maxFileSize, maxFiles, format)");
      else if (why)
        err = bad(*why);
    } else if (key == "X509AuthenticationProvider.superUser" ||
               key == "zookeeper.X509AuthenticationProvider.superUser") {
      c.x509_super_user = std::string(value);
    } else if (std::optional<std::string> tls_error;
               tls::read_tls_key(key, value, std::string(file_name) + ":" + std::to_string(line_no), c.client_tls,
                                 c.quorum_tls, tls_error)) {
      if (tls_error) err = where() + *tls_error;
    } else if (key.rfind("server.", 0) == 0) {
      if (auto why = add_server(c, key, value, std::string(file_name) + ":" + std::to_string(line_no)))
        return bad(*why);
    } else if (key == "dynamicConfigFile") {
      c.dynamic_config_file = std::string(value);
      dynamic_origin = where();
    } else if (!known_unused(key)) {
      c.warnings.push_back(where() + "unknown key '" + key + "' ignored");
    }
    if (err) return *err;
  }
  if (!c.dynamic_config_file.empty())
    if (auto why = read_dynamic_config(c, dynamic_origin)) return *why;
  if ((c.ssl_quorum || c.quorum_port_unification) && !c.quorum_tls.has_key_store())
    return std::string(file_name) + ": " + (c.ssl_quorum ? "sslQuorum=true" : "portUnification=true") +
           " needs TLS between members: set ssl.quorum.keyStore.location (and ssl.quorum.trustStore.location)";
  {  // as ZooKeeper's QuorumPeerConfig checks them
    const auto& q = c.quorum_sasl;
    std::string f(file_name);
    if (!q.enable_sasl && q.server_require_sasl)
      return f + ": quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.serverRequireSasl";
    if (!q.enable_sasl && q.learner_require_sasl)
      return f + ": quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.learnerRequireSasl";
    if (!q.learner_require_sasl && q.server_require_sasl)
      return f + ": quorum.auth.learnerRequireSasl is disabled, so cannot enable quorum.auth.serverRequireSasl";
  }
  if (c.session_require_sasl) {  // as ZooKeeper: it turns enforcement on, with sasl among the schemes
    c.enforce_auth = true;
    if (std::find(c.enforce_auth_schemes.begin(), c.enforce_auth_schemes.end(), "sasl") == c.enforce_auth_schemes.end())
      c.enforce_auth_schemes.push_back("sasl");
  }
  if (c.enforce_auth) {
    std::string f(file_name);
    if (c.enforce_auth_schemes.empty())
      return f + ": enforce.auth.enabled is true: enforce.auth.schemes must name the schemes a session needs";
    for (const auto& scheme : c.enforce_auth_schemes)
      if (scheme != "digest" && scheme != "ip" && scheme != "x509" && scheme != "sasl")
        return f + ": enforce.auth.schemes: authentication scheme '" + shown(scheme) + "' is not available" +
               " (Warden's schemes: digest, ip, x509, sasl)";
  }
  if (c.ensemble() || (c.servers.size() == 1 && c.servers.begin()->second.client_port >= 0)) {
    // The client port may come from this member's server line instead; check_ensemble sees to it.
    Config probe = c;
    if (probe.client_port < 0) probe.client_port = 0;
    if (auto why = validate_config(probe, file_name)) return *why;
  } else if (auto why = validate_config(c, file_name)) {
    return *why;
  }
  return c;
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
  auto id = parse_number<int32_t>(trim(first));
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
  std::ifstream f(file_name);
  if (!f) return file_name + ": cannot be read";
  std::stringstream ss;
  ss << f.rdbuf();
  std::string dir = std::filesystem::path(file_name).parent_path().string();
  auto flags = launcher_properties(std::getenv("SERVER_JVMFLAGS"), std::getenv("JVMFLAGS"), dir.empty() ? "." : dir);
  auto parsed = parse_config(ss.str(), file_name, jvm_flag_properties(flags));
  if (auto* c = std::get_if<Config>(&parsed)) {
    c->config_text = ss.str();
    c->config_file = file_name;
    if (auto why = read_my_id(*c)) return *why;
    if (auto why = check_ensemble(*c)) return *why;
  }
  return parsed;
}

}  // namespace warden::server
