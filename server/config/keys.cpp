#include "server/config/keys.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <variant>

#include "server/config/text.hpp"
#include "server/secrets/redaction.hpp"
#include "wire/four_letter_words.hpp"

namespace warden::server::config_keys {

std::string Line::bad(std::string_view why) const {
  return where + std::string(key) + "=" + secrets::shown_value(key, value) + ": " + std::string(why);
}

namespace {
using namespace config_text;
using Error = std::optional<std::string>;

// How a key's value is read. The typed readers name the Config field they fill, so that the
// reference can show the field's default; a key with more to it has a function of its own.
using IntField = int32_t& (*)(Config&);
using BoolField = bool& (*)(Config&);
using TextField = std::string& (*)(Config&);
struct Int {
  IntField field;
  int32_t min, max;
};
struct Bool {
  BoolField field;
  bool yes_no = false;  // written yes or no (both forms are read either way)
};
struct Address {  // an IP address, not a name
  TextField field;
};
struct Text {
  TextField field;
  const char* empty_refusal = nullptr;  // set: an empty value is refused with this
};
struct Custom {
  Error (*read)(Config&, const Line&);
  std::string (*shows)(const Config&) = nullptr;  // its value in a Config, for the reference
};
struct Ignored {};  // ZooKeeper's, accepted without a warning, not used by Warden
using Read = std::variant<Int, Bool, Address, Text, Custom, Ignored>;

#define FIELD(f) [](Config& c) -> auto& { return c.f; }
#define SHOW(e) [](const Config& c) -> std::string { return e; }

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ",") + w;
  return out;
}

enum Flags : unsigned {
  none = 0,
  zk_prefix = 1,   // also read as "zookeeper." + name (ZooKeeper's -D property, and its zoo.cfg form)
  quorum_peer = 2, // ZooKeeper's QuorumPeerConfig reads it itself (no system property)
  prefix = 4,      // the name is a prefix: every key under it
};

struct Key {
  std::string_view name;
  unsigned flags;
  Read read;
  std::string_view zookeeper_default;  // "" : none (the key must be set, or has no default)
  std::string_view doc;
};

constexpr int32_t big = 1 << 30;

// ---- the keys whose reading is more than a type and a range ----

Error data_dir(Config& c, const Line& l) {
  c.data_dir = std::string(l.value);
  c.data_dir_origin = l.file_line;
  return std::nullopt;
}

Error peer_type(Config& c, const Line& l) {
  c.peer_type = std::string(l.value);
  if (l.value != "participant" && l.value != "observer") return l.bad("must be participant or observer");
  return std::nullopt;
}

Error port_with_origin(int32_t& port, std::string& origin, const Line& l) {
  auto v = number<int32_t>(l.value);
  if (!v) return l.bad("not a whole number");
  if (*v < 0 || *v > 65535) return l.bad("must be between 0 and 65535");
  port = *v;
  origin = l.file_line;
  return std::nullopt;
}

Error client_port(Config& c, const Line& l) { return port_with_origin(c.client_port, c.client_port_origin, l); }

Error secure_client_port(Config& c, const Line& l) {
  return port_with_origin(c.secure_client_port, c.secure_client_port_origin, l);
}

Error super_digest(Config& c, const Line& l) {
  c.super_digest = std::string(l.value);
  auto colon = c.super_digest.find(':');
  if (colon == 0 || colon == std::string::npos || colon + 1 == c.super_digest.size())
    return l.bad("expected user:base64-digest (as zkCli's or DigestAuthenticationProvider's output)");
  return std::nullopt;
}

// ZooKeeper compares the value with "yes" and reads anything else as "no": a "true" that would
// silently leave every ACL checked is refused here instead.
Error skip_acl(Config& c, const Line& l) {
  c.skip_acl = l.value == "yes";
  if (l.value != "yes" && l.value != "no") return l.bad("must be yes or no (ZooKeeper reads any other value as no)");
  return std::nullopt;
}

// The comma-separated words of a list, each trimmed, the empty ones dropped (as ZooKeeper
// splits its lists).
template <class Each>
void for_each_listed(std::string_view value, Each each) {
  size_t from = 0;
  while (from <= value.size()) {
    size_t comma = std::min(value.find(',', from), value.size());
    std::string word(trim(value.substr(from, comma - from)));
    from = comma + 1;
    if (!word.empty()) each(std::move(word));
  }
}

// An unknown word is ignored with a warning, as ZooKeeper ignores it.
Error four_letter_whitelist(Config& c, const Line& l) {
  c.four_letter_whitelist.clear();
  for_each_listed(l.value, [&](std::string word) {
    if (word == "*" || wire::is_four_letter_word(word))
      c.four_letter_whitelist.push_back(word);
    else
      c.warnings.push_back(l.where + "4lw.commands.whitelist: unknown four-letter word '" + word + "' ignored");
  });
  return std::nullopt;
}

// ZooKeeper needs Netty's factory for TLS; Warden has one connection layer for both.
Error connection_factory(Config&, const Line& l) {
  if (l.value != "org.apache.zookeeper.server.NettyServerCnxnFactory" &&
      l.value != "org.apache.zookeeper.server.NIOServerCnxnFactory")
    return l.bad("unknown connection factory (ZooKeeper's are org.apache.zookeeper.server.NettyServerCnxnFactory "
                 "and NIOServerCnxnFactory)");
  return std::nullopt;
}

// x509, digest and ip are always on (x509 for TLS clients); sasl where a JAAS Server section
// is found, and its ids in ACLs with this provider named.
Error auth_provider(Config& c, const Line& l) {
  constexpr std::string_view base = "org.apache.zookeeper.server.auth.";
  std::string_view v = l.value;
  std::string_view name = v.substr(0, base.size()) == base ? v.substr(base.size()) : std::string_view{};
  if (name == "SASLAuthenticationProvider") c.sasl_provider = true;
  bool known = name == "X509AuthenticationProvider" || name == "DigestAuthenticationProvider" ||
               name == "IPAuthenticationProvider" || name == "SASLAuthenticationProvider";
  if (!known)
    c.warnings.push_back(l.where + std::string(l.key) + ": authentication provider '" + shown(v) +
                         "' is not supported by Warden: ignored");
  return std::nullopt;
}

Error enforce_auth_schemes(Config& c, const Line& l) {
  c.enforce_auth_schemes.clear();
  for_each_listed(l.value, [&](std::string scheme) { c.enforce_auth_schemes.push_back(std::move(scheme)); });
  return std::nullopt;
}

Error jaas_file(Config& c, const Line& l) {
  c.jaas_file = std::string(l.value);
  c.jaas_origin = l.file_line;
  if (c.jaas_file.empty()) return l.bad("names no file");
  return std::nullopt;
}

// service/host[@REALM]: Kerberos finds the realm of the host itself (krb5.conf's domain_realm).
Error service_principal(Config& c, const Line& l) {
  std::string_view p = l.value.substr(0, l.value.find('@'));
  auto slash = p.find('/');
  c.quorum_sasl.service_principal = std::string(p);
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= p.size() ||
      p.find('/', slash + 1) != std::string_view::npos)
    return l.bad("must be service/host[@REALM] (e.g. zkquorum/_HOST)");
  return std::nullopt;
}

Error command_url(Config& c, const Line& l) {
  std::string url(l.value);
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  c.admin.command_url = url;
  if (url.empty() || url[0] != '/' || url.find_first_of(" ?#\t") != std::string::npos)
    return l.bad("must be a path that starts with /");
  return std::nullopt;
}

Error metrics_provider(Config& c, const Line& l) {
  c.metrics.enabled = l.value == "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider";
  if (!c.metrics.enabled && l.value != "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider")
    c.warnings.push_back(l.where + std::string(l.key) + ": metrics provider '" + shown(l.value) +
                         "' is not supported by Warden (PrometheusMetricsProvider is): ignored");
  return std::nullopt;
}

Error log_key(Config& c, const Line& l) {
  bool known = true;
  auto why = read_log_key(l.key.substr(11), l.value, c.log, &known);
  if (!known)
    c.warnings.push_back(l.where + "unknown key '" + std::string(l.key) +
                         "' ignored (warden.log.* are level, file, maxFileSize, maxFiles, format)");
  else if (why)
    return l.bad(*why);
  return std::nullopt;
}

Error tls_key(Config& c, const Line& l) {
  std::optional<std::string> error;
  if (!tls::read_tls_key(l.key, l.value, l.file_line, c.client_tls, c.quorum_tls, error))
    c.warnings.push_back(l.where + "unknown key '" + std::string(l.key) + "' ignored");
  else if (error)
    return l.where + *error;
  return std::nullopt;
}

Error server_line(Config& c, const Line& l) {
  if (auto why = add_server(c, std::string(l.key), l.value, l.file_line)) return l.bad(*why);
  return std::nullopt;
}

Error dynamic_config_file(Config& c, const Line& l) {
  c.dynamic_config_file = std::string(l.value);
  c.dynamic_config_origin = l.where;
  return std::nullopt;
}

// ---- the table ----

constexpr unsigned Z = zk_prefix, Q = quorum_peer, P = prefix;

const std::vector<Key>& keys() {
  static const std::vector<Key> table{
      // Time and the ensemble's limits
      {"tickTime", Q, Int{FIELD(tick_time), 1, big}, "3000", "the length of a tick in ms: the unit of the limits and of session timeouts"},
      {"initLimit", Q, Int{FIELD(init_limit), 1, big}, "", "ticks a follower may take to connect to its leader and sync"},
      {"syncLimit", Q, Int{FIELD(sync_limit), 1, big}, "", "ticks a follower may fall silent before its leader drops it"},
      {"peerType", Q, Custom{peer_type, SHOW(c.peer_type)}, "participant", "this member's role (participant or observer); its server.N line wins"},
      {"server.", Q | P, Custom{server_line}, "", "server.N=host:quorumPort:electionPort[:role][;[clientAddress:]clientPort]: a member"},
      {"dynamicConfigFile", Q, Custom{dynamic_config_file, SHOW(c.dynamic_config_file)}, "", "a file holding the server.N lines (its name's hex suffix is the version)"},
      {"standaloneEnabled", Q, Bool{FIELD(standalone_enabled)}, "true", "a lone server runs standalone; false: an ensemble of one that reconfig can grow"},
      {"reconfigEnabled", Q, Bool{FIELD(reconfig_enabled)}, "false", "clients may reconfigure the ensemble"},
      {"electionAlg", Q, Ignored{}, "3", "accepted and ignored: Warden has one election"},
      {"quorumListenOnAllIPs", Q, Ignored{}, "false", "accepted and ignored"},
      // Storage
      {"dataDir", Q, Custom{data_dir, SHOW(c.data_dir)}, "", "where snapshots, the myid file and (without dataLogDir) the log live"},
      {"dataLogDir", Q, Text{FIELD(data_log_dir)}, "dataDir", "where the transaction log lives (empty: dataDir)"},
      {"forceSync", none, Bool{FIELD(force_sync), true}, "yes", "sync every log write; no is for benchmarks: a machine crash may lose acknowledged writes"},
      {"fsync.warningthresholdms", Z, Int{FIELD(fsync_warning_ms), 0, big}, "1000", "a log write slower than this (ms) is logged and counted"},
      {"snapCount", none, Int{FIELD(snap_count), 2, big}, "100000", "txns between snapshots (each server picks between half and all of it)"},
      {"snapTreePercent", none, Int{FIELD(snap_tree_percent), 0, 1000000}, "", "Warden's: a snapshot also waits for txns numbering this percent of the tree's znodes (0: off)"},
      {"autopurge.snapRetainCount", Q, Int{FIELD(snap_retain_count), 3, 1 << 20}, "3", "snapshots kept by the purge (at least 3)"},
      {"autopurge.purgeInterval", Q, Int{FIELD(purge_interval_hours), 0, 1 << 20}, "0", "hours between purges (0: never)"},
      {"preAllocSize", none, Ignored{}, "65536", "accepted and ignored: the log is not a preallocated file"},
      {"digest.enabled", Z, Bool{FIELD(digest_enabled)}, "true", "keep the tree's digest, which members compare as they apply txns"},
      // Clients
      {"clientPort", Q, Custom{client_port}, "", "the port clients and the four-letter words use"},
      {"clientPortAddress", Q, Address{FIELD(client_port_address)}, "0.0.0.0", "the address clientPort listens on"},
      {"secureClientPort", Q, Custom{secure_client_port}, "", "a port for TLS clients (ssl.* keys)"},
      {"secureClientPortAddress", Q, Address{FIELD(secure_client_port_address)}, "0.0.0.0", "the address secureClientPort listens on"},
      {"client.portUnification", Z, Bool{FIELD(client_port_unification)}, "false", "clientPort takes TLS too, told apart by the first byte"},
      {"serverCnxnFactory", Z, Custom{connection_factory}, "NIOServerCnxnFactory", "ZooKeeper's NIO or Netty factory, either accepted: Warden has one"},
      {"maxClientCnxns", Q, Int{FIELD(max_client_cnxns), 0, big}, "60", "connections per client address (0: no limit)"},
      {"globalOutstandingLimit", none, Int{FIELD(global_outstanding_limit), 1, big}, "1000", "requests in flight past which the server stops reading from clients"},
      {"minSessionTimeout", Q, Int{FIELD(min_session_timeout), -1, big}, "-1", "the least session timeout granted, in ms (-1: 2 ticks)"},
      {"maxSessionTimeout", Q, Int{FIELD(max_session_timeout), -1, big}, "-1", "the most session timeout granted, in ms (-1: 20 ticks)"},
      {"nio.sessionlessCnxnTimeout", Z, Int{FIELD(sessionless_timeout_ms), 1, big}, "10000", "ms a connection may stay without a ConnectRequest"},
      {"jute.maxbuffer", none, Int{FIELD(jute_max_buffer), 1024, big}, "1048575", "the largest request, in bytes"},
      {"linearizableReads", none, Bool{FIELD(linearizable_reads)}, "", "Warden's: every read waits for a quorum round of its own"},
      {"readonlymode.enabled", Z, Bool{FIELD(read_only_mode)}, "false", "a member without a quorum serves reads to clients that allow it"},
      // The tree
      {"extendedTypesEnabled", none, Bool{FIELD(extended_types)}, "false", "TTL nodes (and server ids up to 254)"},
      {"znode.container.checkIntervalMs", none, Int{FIELD(container_check_interval_ms), 10, big}, "60000", "ms between sweeps of empty containers and expired TTL nodes"},
      {"enforceQuota", Z, Bool{FIELD(enforce_quota)}, "false", "creates and sets past a hard quota fail with QuotaExceeded"},
      // Access
      {"skipACL", Z, Custom{skip_acl, SHOW(c.skip_acl ? "yes" : "no")}, "no", "yes: no permission is checked, for any request"},
      {"DigestAuthenticationProvider.superDigest", Z, Custom{super_digest, SHOW(c.super_digest)}, "", "user:base64(sha1(user:password)): that user has every permission"},
      {"X509AuthenticationProvider.superUser", Z, Text{FIELD(x509_super_user)}, "", "the TLS client subject that has every permission"},
      {"authProvider.", Z | P, Custom{auth_provider}, "", "authentication providers: ZooKeeper's four are accepted (SASL's adds sasl ids in ACLs)"},
      {"enforce.auth.enabled", Z, Bool{FIELD(enforce_auth)}, "false", "a connection without an id of enforce.auth.schemes is refused"},
      {"enforce.auth.schemes", Z, Custom{enforce_auth_schemes}, "", "the schemes enforce.auth.enabled asks for (digest, ip, x509, sasl)"},
      {"sessionRequireClientSASLAuth", Z, Bool{FIELD(session_require_sasl)}, "false", "enforce.auth.enabled with sasl among the schemes"},
      {"jaasConfigFile", none, Custom{jaas_file, SHOW(c.jaas_file)}, "", "Warden's: the JAAS file (else -Djava.security.auth.login.config, as ZooKeeper's scripts)"},
      {"sasl.serverconfig", Z, Text{FIELD(sasl_section), "names no JAAS section"}, "Server", "the JAAS section clients' SASL uses"},
      {"superUser", Z, Text{FIELD(sasl_super_user)}, "", "the SASL user that has every permission"},
      {"allowSaslFailedClients", Z, Bool{FIELD(allow_sasl_failed_clients)}, "false", "a client whose SASL failed may go on unauthenticated"},
      {"kerberos.removeHostFromPrincipal", Z, Bool{FIELD(kerberos_remove_host)}, "false", "a Kerberos id without its host"},
      {"kerberos.removeRealmFromPrincipal", Z, Bool{FIELD(kerberos_remove_realm)}, "false", "a Kerberos id without its realm"},
      // Between members
      {"sslQuorum", Q, Bool{FIELD(ssl_quorum)}, "false", "members talk TLS (ssl.quorum.* keys)"},
      {"portUnification", Q, Bool{FIELD(quorum_port_unification)}, "false", "members' ports take TLS and plaintext alike"},
      {"quorum.auth.enableSasl", Q, Bool{FIELD(quorum_sasl.enable_sasl)}, "false", "members authenticate the connections they make and answer"},
      {"quorum.auth.learnerRequireSasl", Q, Bool{FIELD(quorum_sasl.learner_require_sasl)}, "false", "a member does not go on without authenticating"},
      {"quorum.auth.serverRequireSasl", Q, Bool{FIELD(quorum_sasl.server_require_sasl)}, "false", "a member takes no connection that did not authenticate"},
      {"quorum.auth.learner.saslLoginContext", Q, Text{FIELD(quorum_sasl.learner_section), "names no JAAS section"}, "QuorumLearner", "the JAAS section for connections a member makes"},
      {"quorum.auth.server.saslLoginContext", Q, Text{FIELD(quorum_sasl.server_section), "names no JAAS section"}, "QuorumServer", "the JAAS section for connections a member takes"},
      {"quorum.auth.kerberos.servicePrincipal", Q, Custom{service_principal, SHOW(c.quorum_sasl.service_principal)}, "zkquorum/localhost", "service/host[@REALM] a Kerberos learner asks for (_HOST: the other member's host)"},
      {"ssl.", Z | P, Custom{tls_key}, "", "TLS for clients (ssl.*) and between members (ssl.quorum.*): stores, passwords, protocols, ciphers"},
      // Operations
      {"4lw.commands.whitelist", none, Custom{four_letter_whitelist, SHOW(joined(c.four_letter_whitelist))}, "srvr", "the four-letter words that run, comma-separated, or *"},
      {"admin.enableServer", Z, Bool{FIELD(admin.enabled)}, "true", "serve the AdminServer (off for --standalone and the embedded server)"},
      {"admin.serverAddress", Z, Address{FIELD(admin.address)}, "0.0.0.0", "the AdminServer's address"},
      {"admin.serverPort", Z, Int{FIELD(admin.port), 0, 65535}, "8080", "the AdminServer's port"},
      {"admin.commandURL", Z, Custom{command_url, SHOW(c.admin.command_url)}, "/commands", "the path the AdminServer's commands live under"},
      {"admin.idleTimeout", Z, Int{FIELD(admin.idle_timeout_ms), 1, big}, "30000", "ms an AdminServer connection may stay silent"},
      {"admin.snapshot.enabled", Z, Bool{FIELD(admin_snapshot_enabled)}, "false (3.9)", "the snapshot command (a backup) may run"},
      {"admin.restore.enabled", Z, Bool{FIELD(admin_restore_enabled)}, "false (3.9)", "the restore command may run"},
      {"admin.rateLimiterIntervalInMS", Z, Int{FIELD(admin_rate_limit_ms), 0, big}, "300000 (3.9)", "ms between two snapshot or restore commands"},
      {"metricsProvider.className", Q, Custom{metrics_provider}, "DefaultMetricsProvider", "PrometheusMetricsProvider: /metrics on httpHost:httpPort"},
      {"metricsProvider.httpHost", Q, Address{FIELD(metrics.address)}, "0.0.0.0", "the Prometheus endpoint's address"},
      {"metricsProvider.httpPort", Q, Int{FIELD(metrics.port), 0, 65535}, "7000", "the Prometheus endpoint's port"},
      {"metricsProvider.exportJvmInfo", Q, Ignored{}, "true", "accepted and ignored: there is no JVM"},
      {"jvm.pause.monitor", Q, Bool{FIELD(pause.enabled)}, "false", "log the process's stalls, as ZooKeeper's JVM pause monitor"},
      {"jvm.pause.sleep.time.ms", Q, Int{FIELD(pause.sleep_ms), 1, big}, "500", "ms the pause monitor sleeps between looks"},
      {"jvm.pause.info-threshold.ms", Q, Int{FIELD(pause.info_threshold_ms), 0, big}, "1000", "a stall past this (ms) is logged at info"},
      {"jvm.pause.warn-threshold.ms", Q, Int{FIELD(pause.warn_threshold_ms), 0, big}, "10000", "a stall past this (ms) is logged as a warning"},
      {"warden.log.", P, Custom{log_key}, "", "Warden's log: level, file, maxFileSize, maxFiles, format (the command line's --log-* win)"},
  };
  return table;
}

#undef FIELD
#undef SHOW

struct Index {
  std::map<std::string, const Key*, std::less<>> exact;  // names and their zookeeper. forms
  std::vector<std::pair<std::string, const Key*>> prefixes;
};

const Index& index() {
  static const Index built = [] {
    Index ix;
    for (const Key& k : keys()) {
      std::vector<std::string> names{std::string(k.name)};
      if (k.flags & zk_prefix) names.push_back("zookeeper." + std::string(k.name));
      for (auto& n : names) {
        if (k.flags & prefix)
          ix.prefixes.emplace_back(std::move(n), &k);
        else
          ix.exact.emplace(std::move(n), &k);
      }
    }
    return ix;
  }();
  return built;
}

const Key* find(std::string_view key) {
  const Index& ix = index();
  if (auto it = ix.exact.find(key); it != ix.exact.end()) return it->second;
  for (const auto& [p, k] : ix.prefixes)
    if (key.substr(0, p.size()) == p) return k;
  return nullptr;
}

Error read_with(const Read& read, Config& c, const Line& l) {
  struct Visit {
    Config& c;
    const Line& l;
    Error operator()(const Int& r) const {
      auto v = number<int32_t>(l.value);
      if (!v) return l.bad("not a whole number");
      if (*v < r.min || *v > r.max)
        return l.bad("must be between " + std::to_string(r.min) + " and " + std::to_string(r.max));
      r.field(c) = *v;
      return std::nullopt;
    }
    Error operator()(const Bool& r) const {
      if (!boolean(l.value, r.field(c))) return l.bad(r.yes_no ? "must be yes or no" : "must be true or false");
      return std::nullopt;
    }
    Error operator()(const Address& r) const {
      r.field(c) = std::string(l.value);
      if (!is_ip_address(r.field(c))) return l.bad("is not an IP address");
      return std::nullopt;
    }
    Error operator()(const Text& r) const {
      r.field(c) = std::string(l.value);
      if (r.empty_refusal && l.value.empty()) return l.bad(r.empty_refusal);
      return std::nullopt;
    }
    Error operator()(const Custom& r) const { return r.read(c, l); }
    Error operator()(const Ignored&) const { return std::nullopt; }
  };
  return std::visit(Visit{c, l}, read);
}

// Warden's default, as a default Config holds it; empty where the key's text says it.
std::string warden_default(const Read& read) {
  Config d;
  if (auto* r = std::get_if<Int>(&read)) return std::to_string(r->field(d));
  if (auto* r = std::get_if<Bool>(&read)) return r->field(d) ? (r->yes_no ? "yes" : "true") : (r->yes_no ? "no" : "false");
  if (auto* r = std::get_if<Address>(&read)) return r->field(d);
  if (auto* r = std::get_if<Text>(&read)) return r->field(d);
  if (auto* r = std::get_if<Custom>(&read); r && r->shows) return r->shows(d);
  return "";
}

// ZooKeeper's own keys that Warden does not read: they draw the unknown-key warning, and are
// no system property either.
bool zookeeper_own_unread(std::string_view key) {
  static const std::set<std::string, std::less<>> own{
      "clientPortListenBacklog", "connectToLearnerMasterLimit", "localSessionsEnabled",
      "localSessionsUpgradingEnabled", "multiAddress.enabled", "multiAddress.reachabilityCheckEnabled",
      "multiAddress.reachabilityCheckTimeoutMs", "observerMasterPort", "oraclePath", "quorum.cnxn.threads.size",
      "sslQuorumReloadCertFiles", "syncEnabled"};
  auto starts = [&](std::string_view p) { return key.substr(0, p.size()) == p; };
  return own.count(key) || starts("group") || starts("weight") || starts("metricsProvider.");
}
}  // namespace

std::optional<std::string> read_key(Config& c, const Line& line) {
  const Key* k = find(line.key);
  if (!k) {
    c.warnings.push_back(line.where + "unknown key '" + std::string(line.key) + "' ignored");
    return std::nullopt;
  }
  return read_with(k->read, c, line);
}

bool quorum_peer_config_key(std::string_view key) {
  if (zookeeper_own_unread(key)) return true;
  const Key* k = find(key);
  // Only under its own name: a zookeeper.-prefixed form is a property's.
  return k && (k->flags & quorum_peer) && (k->flags & prefix ? key.substr(0, k->name.size()) == k->name : key == k->name);
}

std::vector<std::string_view> names() {
  std::vector<std::string_view> out;
  for (const Key& k : keys()) out.push_back(k.name);
  return out;
}

std::string reference() {
  // Appended piece by piece: GCC 12 at -O3 takes "`" + s + "`" for an overlapping copy.
  std::string out =
      "| key | Warden's default | ZooKeeper's default | what it does |\n"
      "|---|---|---|---|\n";
  auto quoted = [&out](std::string_view s, std::string_view tail = {}) {
    out += '`';
    out += s;
    out += tail;
    out += '`';
  };
  auto cell = [&](std::string_view s) {
    out += " | ";
    if (s.empty())
      out += '-';
    else
      quoted(s);
  };
  for (const Key& k : keys()) {
    std::string_view star = k.flags & prefix ? "*" : "";
    out += "| ";
    quoted(k.name, star);
    if (k.flags & zk_prefix) {
      out += " (or `zookeeper.";
      out += k.name;
      out += star;
      out += "`)";
    }
    cell(warden_default(k.read));
    cell(k.zookeeper_default);
    out += " | ";
    out += k.doc;
    out += " |\n";
  }
  return out;
}

}  // namespace warden::server::config_keys
