// zoo.cfg: what a server is configured with (Config, each field's initialiser its default) and
// the parser. The keys are a table (keys.cpp), the members and their checks are members.cpp. A
// line that is not `key=value`, or a value that does not parse, stops the start with the file,
// the line and the reason; a key Warden does not know is accepted with a warning, as ZooKeeper
// accepts it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/config/admin_settings.hpp"
#include "server/config/pause_settings.hpp"
#include "server/config/jvm_flags.hpp"
#include "server/config/text.hpp"
#include "server/base/logging.hpp"
#include "server/config/tls_settings.hpp"

namespace warden::server {

struct PeerEntry {
  int64_t id = 0;
  std::string host;
  int32_t quorum_port = 0;
  int32_t election_port = 0;
  std::string role = "participant";
  std::string client_address;  // after ';' ("[address:]port"), empty when absent
  std::string client_host;     // from client_address; empty: clientPortAddress
  int32_t client_port = -1;    // from client_address; -1: absent
  std::string origin;          // "FILE:LINE" of its server.N line, for messages
  bool observer() const { return role == "observer"; }
};

// The store's folder inside a data directory (or dataLogDir): DIR/log.
std::string log_dir_of(const std::string& data_dir);

struct Config {
  int32_t tick_time = 2000;
  int32_t init_limit = 10;
  int32_t sync_limit = 5;
  std::string data_dir;
  std::string data_dir_origin;  // "FILE:LINE" of dataDir, for messages
  std::string data_log_dir;  // defaults to data_dir
  // The store's folder: log_dir_of dataLogDir, or of dataDir without one.
  std::string store_dir() const { return log_dir_of(data_log_dir.empty() ? data_dir : data_log_dir); }
  int32_t client_port = -1;
  // Where clientPort was set ("FILE:LINE", or the command-line option), for messages.
  std::string client_port_origin;
  std::string client_port_address = "0.0.0.0";
  // TLS for clients (ZooKeeper's secureClientPort, secureClientPortAddress): -1 for none. One
  // of clientPort and secureClientPort must be set; either may be alone.
  int32_t secure_client_port = -1;
  std::string secure_client_port_origin;
  std::string secure_client_port_address = "0.0.0.0";
  // client.portUnification: the plain client port takes TLS too (told apart by the first byte).
  bool client_port_unification = false;
  tls::TlsSettings client_tls;                        // ssl.*
  tls::TlsSettings quorum_tls = tls::TlsSettings::for_quorum();  // ssl.quorum.*
  bool ssl_quorum = false;               // sslQuorum
  bool quorum_port_unification = false;  // portUnification
  // A TLS client's verified certificate authenticates it as x509:<its subject> (as ZooKeeper
  // 3.8 does on its TLS port, authProvider.x509 set or not); the subject named by
  // X509AuthenticationProvider.superUser is also super.
  std::string x509_super_user;
  // enforce.auth.enabled with enforce.auth.schemes, and the older sessionRequireClientSASLAuth
  // (which adds sasl): every request of a connection with no id of these schemes is answered
  // SessionClosedRequireAuth and its connection closed, as ZooKeeper 3.8 does.
  bool enforce_auth = false;
  std::vector<std::string> enforce_auth_schemes;
  bool session_require_sasl = false;
  // SASL for clients: the JAAS file (Warden's jaasConfigFile key, else where ZooKeeper's
  // scripts find it: -Djava.security.auth.login.config in SERVER_JVMFLAGS or JVMFLAGS, or the
  // java.env beside zoo.cfg; main() looks), its section (zookeeper.sasl.serverconfig),
  // zookeeper.superUser, zookeeper.allowSaslFailedClients.
  std::string jaas_file;
  std::string jaas_origin;  // where it was named, for messages
  std::string sasl_section = "Server";
  std::string sasl_super_user;
  bool allow_sasl_failed_clients = false;
  bool sasl_provider = false;  // authProvider.N=...SASLAuthenticationProvider: sasl ids in ACLs
  bool kerberos_remove_host = false, kerberos_remove_realm = false;  // kerberos.remove*FromPrincipal
  // SASL between members (ZooKeeper's quorum.auth.*): with enable_sasl a member authenticates
  // each connection it makes (the JAAS QuorumLearner section) and answers those made to it (the
  // QuorumServer section); learner_require_sasl: it does not go on without succeeding;
  // server_require_sasl: it takes no connection that did not authenticate. A Kerberos learner
  // asks for the service principal, _HOST standing for the other member's configured host.
  struct QuorumSasl {
    bool enable_sasl = false, learner_require_sasl = false, server_require_sasl = false;
    std::string learner_section = "QuorumLearner", server_section = "QuorumServer";
    std::string service_principal = "zkquorum/localhost";
  } quorum_sasl;
  LogSettings log;  // warden.log.* (the command line's --log-* override them)
  // ZooKeeper's AdminServer keys: admin.enableServer (default true, as ZooKeeper; off for
  // --standalone and the embedded server), admin.serverAddress, admin.serverPort (8080),
  // admin.commandURL (/commands), admin.idleTimeout (ms).
  admin::AdminSettings admin;
  // ZooKeeper 3.9's backup commands: snapshot (admin.snapshot.enabled) and restore
  // (admin.restore.enabled), both off unless set, each allowed once per
  // admin.rateLimiterIntervalInMS (300000, as ZooKeeper).
  bool admin_snapshot_enabled = false, admin_restore_enabled = false;
  int32_t admin_rate_limit_ms = 300000;
  // ZooKeeper's pause monitor: jvm.pause.monitor (off), jvm.pause.sleep.time.ms,
  // jvm.pause.info-threshold.ms, jvm.pause.warn-threshold.ms (admin/pause_settings.hpp).
  admin::PauseSettings pause;
  // metricsProvider.className=...PrometheusMetricsProvider: /metrics on
  // metricsProvider.httpHost:metricsProvider.httpPort (default 0.0.0.0:7000).
  admin::AdminSettings metrics = metrics_defaults();
  static admin::AdminSettings metrics_defaults() {
    admin::AdminSettings m;
    m.enabled = false;
    m.port = 7000;
    m.command_url.clear();
    m.metrics_path = "/metrics";
    m.what = "Prometheus metrics";
    return m;
  }
  std::string config_text;  // the configuration file as read (initial_configuration)
  // The keys ZooKeeper's QuorumPeerConfig does not read itself and sets as Java system
  // properties instead ("zookeeper." + key), with their values: system_properties shows them.
  std::vector<std::pair<std::string, std::string>> properties;
  bool tls_needed() const { return secure_client_port >= 0 || client_port_unification; }
  int32_t max_client_cnxns = 60;  // per client address; 0: no limit
  // Requests in flight (proposed and not applied, or waiting behind those) past which the
  // server stops reading from clients until they drain (ZooKeeper's globalOutstandingLimit).
  int32_t global_outstanding_limit = 1000;
  int32_t min_session_timeout = -1;  // -1: 2 x tickTime
  int32_t max_session_timeout = -1;  // -1: 20 x tickTime
  int32_t jute_max_buffer = 0xfffff;
  bool extended_types = false;
  int32_t container_check_interval_ms = 60000;
  // A connection that has sent no ConnectRequest this long is closed (ZooKeeper's
  // zookeeper.nio.sessionlessCnxnTimeout).
  int32_t sessionless_timeout_ms = 10000;
  // Sync every log write (ZooKeeper's forceSync). `no` is for benchmarks only: a crash of the
  // machine may then lose acknowledged writes.
  bool force_sync = true;
  // A log write slower than this is logged and counted (fsync.warningthresholdms, ZooKeeper's
  // zookeeper.fsync.warningthresholdms).
  int32_t fsync_warning_ms = 1000;
  // ZooKeeper's digest (digest.enabled; zookeeper.digest.enabled as a property), on by default.
  bool digest_enabled = true;
  // A snapshot is started after about this many txns (ZooKeeper's snapCount; each server picks
  // a point between half and the whole of it, so that replicas do not snapshot together).
  int32_t snap_count = 100000;
  // Beyond ZooKeeper: a snapshot also waits until the txns since the last one number this
  // percent of the tree's znodes (snapTreePercent; 0: ZooKeeper's rule alone). A snapshot costs
  // the whole tree, so this bounds its cost per txn (at 25, at most 4 znodes written per txn)
  // however large the tree; a start then replays at most that share of the tree's size in txns
  // beyond what snapCount alone would leave.
  int32_t snap_tree_percent = 25;
  // autopurge: keep this many snapshots (at least 3, as in ZooKeeper), and purge every this
  // many hours (0: never, the default, as in ZooKeeper).
  int32_t snap_retain_count = 3;
  int32_t purge_interval_hours = 0;
  // Keep the log in memory instead of under dataDir (embedded mode, tests): nothing survives a
  // restart.
  bool in_memory = false;
  // "user:base64(sha1(user:password))": a client that authenticates as it gets every permission
  // on every node (ZooKeeper's zookeeper.DigestAuthenticationProvider.superDigest, which
  // ZooKeeper also takes from zoo.cfg as DigestAuthenticationProvider.superDigest).
  std::string super_digest;
  // Beyond ZooKeeper (off by default, as ZooKeeper has no such mode): every read first waits
  // for a no-op txn of its own to commit through the leader, a quorum round, so that it sees
  // every write acknowledged anywhere before the read was sent (a linearizable read). Without
  // it a read on a follower may lag the leader, as in ZooKeeper; `sync` then read closes the gap.
  bool linearizable_reads = false;
  // ZooKeeper's read-only mode (readonlymode.enabled): a member without a quorum serves reads to
  // clients that allow it.
  bool read_only_mode = false;
  // reconfigEnabled: clients may reconfigure the ensemble (ZooKeeper's default: false);
  // standaloneEnabled: a lone server runs standalone and a reconfig keeps two voters (true).
  bool reconfig_enabled = false;
  bool standalone_enabled = true;
  // ZooKeeper's skipACL ("yes"; zookeeper.skipACL as a -D flag): no permission is checked, for
  // any request, reconfig included.
  bool skip_acl = false;
  // Refuse creates and sets past a hard quota with QuotaExceeded (ZooKeeper's enforceQuota).
  bool enforce_quota = false;
  // Four-letter words that run (4lw.commands.whitelist); "*" for all. ZooKeeper's default.
  std::vector<std::string> four_letter_whitelist{"srvr"};
  std::map<int64_t, PeerEntry> servers;
  // dynamicConfigFile (ZooKeeper 3.5+): the server.N lines live in that file; the
  // configuration's version is its name's hex suffix (zoo.cfg.dynamic.100000000; 0 without).
  std::string dynamic_config_file;
  std::string dynamic_config_origin;  // where it was set, as a message starts ("FILE:LINE: ")
  // The file the configuration was loaded from (load_config); empty otherwise. A reconfig
  // writes the new zoo.cfg.dynamic.<version> beside it and points it there, as ZooKeeper does.
  std::string config_file;
  uint64_t config_version = 0;
  // peerType: this server's role, which its own server.N line decides in the end (as ZooKeeper).
  std::string peer_type = "participant";
  // An ensemble: more than one server.N line; one alone runs standalone, as ZooKeeper does
  // with its default standaloneEnabled=true, and is an ensemble of one (which a reconfig can
  // grow) with standaloneEnabled=false.
  bool ensemble() const { return servers.size() > 1 || (servers.size() == 1 && !standalone_enabled); }
  const PeerEntry* self() const {
    auto it = my_id ? servers.find(*my_id) : servers.end();
    return it == servers.end() ? nullptr : &it->second;
  }
  // The server's id, from the file `myid` in dataDir (ZooKeeper's), when there is one. It is
  // the top byte of every session id this server creates, so two servers of one ensemble never
  // create the same id; without a myid, a standalone server uses 1, as ZooKeeper's does.
  std::optional<int32_t> my_id;
  static constexpr int32_t standalone_session_id_byte = 1;
  int32_t session_id_byte() const { return my_id.value_or(standalone_session_id_byte); }
  std::vector<std::string> warnings;  // one per unknown key, with its line

  int32_t effective_min_session_timeout() const {
    return min_session_timeout < 0 ? 2 * tick_time : min_session_timeout;
  }
  int32_t effective_max_session_timeout() const {
    return max_session_timeout < 0 ? 20 * tick_time : max_session_timeout;
  }
};

// Either a config or one error message naming the file, line and key.
using ConfigResult = std::variant<Config, std::string>;
// `properties`: settings from elsewhere, each (where it came from, "key=value"), read before the
// file's lines so that the file wins where both name a setting.
ConfigResult parse_config(std::string_view text, std::string_view file_name,
                          const std::vector<std::pair<std::string, std::string>>& properties = {});
// The launcher's -D properties (jvm_flags.hpp) that name a setting Warden reads: a property
// under its own name when that is a key (readonlymode.enabled,
// zookeeper.DigestAuthenticationProvider.superDigest), or without its "zookeeper." prefix
// (zookeeper.extendedTypesEnabled). Each as ("ORIGIN -DNAME", "key=value"); others are ignored.
std::vector<std::pair<std::string, std::string>> jvm_flag_properties(const std::vector<JvmProperty>& properties);
// Reads `file_name`, with the launcher's properties (SERVER_JVMFLAGS and JVMFLAGS from the
// environment and from java.env beside the file) read first: the file wins.
ConfigResult load_config(const std::string& file_name);
// Reads DIR/myid into c.my_id when the file exists; an error names the file, line and reason.
std::optional<std::string> read_my_id(Config& c);
// For an ensemble: myid present and one of the server.N lines, no address used twice, this
// member's client port known. Adds ZooKeeper's warnings (an even number of voters, a peerType
// its server line contradicts) to c.warnings. An error names the file, the line and the reason.
// What ZooKeeper 3.5+ keeps in /zookeeper/config for an ensemble (its QuorumVerifier's text):
// a "server.N=host:quorumPort:electionPort:role[;clientHost:clientPort]" line for each member
// in id order, then "version=<hex>"; empty for a standalone server, whose node stays empty.
std::string config_node_text(const Config& c);
// The server.N lines alone, one per member in id order, each ending in a newline.
std::string members_text(const std::map<int64_t, PeerEntry>& servers);
// Adds the members `text` names (server.N lines, as a dynamic configuration file holds them) to
// c.servers; with `version_inside`, a "version=<hex>" line sets c.config_version (the text of
// /zookeeper/config and of a reconfig). With `any_id`, a server id may be any number a
// reconfig may name (ZooKeeper takes any; a file's are those a myid can hold, 0 to 254). An error
// names `name`, the line and the reason.
std::optional<std::string> parse_members(Config& c, std::string_view text, const std::string& name,
                                         bool version_inside, bool any_id = false);

// A server.N line (`key` is "server.N"), from zoo.cfg or a dynamic file, added to c.servers;
// the reason when it is refused. With `any_id`, as parse_members.
std::optional<std::string> add_server(Config& c, const std::string& key, std::string_view value,
                                      const std::string& origin, bool any_id = false);

// The members from c.dynamic_config_file (ZooKeeper 3.5+'s zoo.cfg.dynamic.<version>), whose
// version is the name's hex suffix; `set_at` starts a message about the key that named it.
std::optional<std::string> read_dynamic_config(Config& c, const std::string& set_at);

std::optional<std::string> check_ensemble(Config& c);
// Checks a config assembled from command-line options as well as from a file.
std::optional<std::string> validate_config(const Config& c, std::string_view origin);

}  // namespace warden::server
