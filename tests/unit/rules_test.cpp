// Paths, ACL primitives and zoo.cfg parsing.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hex.hpp"
#include "server/admin/four_letter.hpp"
#include "server/auth/jaas.hpp"
#include "server/config/config.hpp"
#include "server/config/keys.hpp"
#include "server/state/acl.hpp"
#include "server/state/path.hpp"
#include "server/state/quota.hpp"

using namespace warden::server;

TEST_CASE("path rules are ZooKeeper's") {
  CHECK(valid_path("/"));
  CHECK(valid_path("/a/b.c/d..e/\xc3\xa9"));  // é is fine
  CHECK(path_problem("") == "Path length must be > 0");
  CHECK(path_problem("a") == "Path must start with / character");
  CHECK(path_problem("/a/") == "Path must not end with / character");
  CHECK(path_problem("/a//b") == "empty node name specified @3");
  CHECK(path_problem("/a/./b") == "relative paths not allowed @3");
  CHECK(path_problem("/a/..") == "relative paths not allowed @3");
  CHECK(path_problem(std::string("/a\0b", 4)) == "null character not allowed @2");
  CHECK_FALSE(valid_path("/\x7f"));
  CHECK_FALSE(valid_path("/\xc2\x85"));        // U+0085, a C1 control
  CHECK_FALSE(valid_path("/\xee\x80\x80"));    // U+E000, private use
  CHECK_FALSE(valid_path("/\xf0\x9f\x98\x80"));  // beyond U+FFFF: a surrogate pair in Java
  CHECK_FALSE(valid_path("/\xff"));            // not UTF-8
  CHECK(parent_path("/a") == "/");
  CHECK(parent_path("/a/b") == "/a");
  CHECK(node_name("/a/b") == "b");
}

TEST_CASE("digest ids are the ones ZooKeeper's DigestAuthenticationProvider prints") {
  CHECK(hex(sha1("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d");
  CHECK(hex(sha1(std::string(1000, 'a'))) == "291e9a6c66994949b57ba5e650361e98fc36b1ba");
  CHECK(base64("f") == "Zg==");
  CHECK(base64("fo") == "Zm8=");
  CHECK(base64("foo") == "Zm9v");
  CHECK(digest_id("alice:secret") == "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=");
  CHECK(digest_id("bob:pw:with:colons") == "bob:Y/LfFgTEMzeSdJM371GRzmUOebQ=");
}

TEST_CASE("ip ids: IPv4 and IPv6 with prefix lengths") {
  CHECK(ip_matches("127.0.0.1", "127.0.0.0/8"));
  CHECK(ip_matches("127.0.0.1", "127.0.0.1"));
  CHECK_FALSE(ip_matches("127.0.0.1", "127.0.0.2"));
  CHECK(ip_matches("::1", "::1/128"));
  CHECK(ip_matches("fe80::1", "fe80::/16"));
  CHECK_FALSE(ip_matches("::1", "127.0.0.1"));
  CHECK_FALSE(valid_ip_id("1.2.3.4/33"));
  CHECK_FALSE(valid_ip_id("garbage"));
  CHECK_FALSE(valid_ip_id("1.2.3.4/"));
}

TEST_CASE("fixup_acl drops duplicates, expands auth, refuses malformed ids") {
  AuthIds ids{{"ip", "127.0.0.1"}, {"digest", "u:h"}};
  warden::wire::Acl world{31, {"world", "anyone"}};
  CHECK(fixup_acl({world, world}, ids).size() == 1);
  auto expanded = fixup_acl({{5, {"auth", ""}}}, ids);
  REQUIRE(expanded.size() == 1);
  CHECK(expanded[0].id.id == "u:h");
  CHECK(fixup_acl({{5, {"auth", ""}}}, {{"ip", "127.0.0.1"}}).empty());
  CHECK(fixup_acl({{5, {"digest", "nohash"}}}, ids).empty());
  CHECK(fixup_acl({{5, {"digest", "a:b:c"}}}, ids).empty());
  CHECK(fixup_acl({{5, {"sasl", "x"}}}, ids).empty());  // without ZooKeeper's SASL provider configured
  CHECK(fixup_acl({{5, {"sasl", "x"}}}, ids, true).size() == 1);
  CHECK(fixup_acl({{5, {"x509", "CN=a"}}}, ids).size() == 1);
  AuthIds strong{{"ip", "127.0.0.1"}, {"sasl", "bob"}, {"x509", "CN=a"}};
  CHECK(fixup_acl({{5, {"auth", ""}}}, strong).size() == 1);        // x509 only
  CHECK(fixup_acl({{5, {"auth", ""}}}, strong, true).size() == 2);  // sasl and x509
  CHECK(acl_allows({{1, {"x509", "CN=a"}}}, 1, strong));
  CHECK_FALSE(acl_allows({{1, {"x509", "CN=b"}}}, 1, strong));
  CHECK(acl_allows({}, 1, {}));
  CHECK(acl_allows({{1, {"digest", "u:h"}}}, 1, ids));
  CHECK_FALSE(acl_allows({{2, {"digest", "u:h"}}}, 1, ids));
  CHECK(acl_allows({{2, {"digest", "other"}}}, 2, {{"super", ""}}));
}

TEST_CASE("a connection's ids iterate in ZooKeeper's order, which the auth ACL and whoAmI show") {
  // The expected order was printed by ZooKeeper 3.8's own classes: org.apache.zookeeper.data.Id
  // added in this order to the ConcurrentHashMap-backed set ServerCnxn keeps, then iterated.
  std::vector<warden::wire::Id> added = {{"ip", "127.0.0.1"},
                                 {"digest", "carol:RffyCdXXV1Js0ywLAoP5/l25yKs="},
                                 {"digest", "bob:ikIaKsbtGweaHnb/jKn7OHqbunM="},
                                 {"super", ""},
                                 {"digest", "j\xc3\xbcrgen:x"},           // two-byte UTF-8
                                 {"digest", "\xf0\x9f\x98\x80:y"},       // a surrogate pair in Java
                                 {"ip", "::1"},
                                 {"digest", "alice:a"}};
  AuthIds ids;
  for (const auto& id : added) add_auth_id(ids, id);
  add_auth_id(ids, added[1]);  // once only
  std::vector<warden::wire::Id> want;
  for (int i : {2, 1, 7, 3, 0, 4, 6, 5}) want.push_back(added[i]);
  CHECK(ids == want);
  // Bytes that are not UTF-8 hash as U+FFFD, and are kept as they came.
  AuthIds odd;
  add_auth_id(odd, warden::wire::Id{"digest", "\xff\xfe:z"});
  add_auth_id(odd, warden::wire::Id{"digest", "\xc3:z"});
  CHECK(odd.size() == 2);
  // The auth entry expands in that order.
  auto acl = fixup_acl(warden::wire::AclList{warden::wire::Acl{31, warden::wire::Id{"auth", ""}}}, ids);
  REQUIRE(acl.size() >= 3);
  CHECK(acl[0].id.id == added[2].id);
  CHECK(acl[1].id.id == added[1].id);
}

TEST_CASE("zoo.cfg: the keys ZooKeeper users write") {
  auto r = parse_config(
      "# comment\n"
      "tickTime=1000\n initLimit = 5 \nsyncLimit=2\ndataDir=/tmp/d\ndataLogDir=/tmp/l\n"
      "clientPort=0\nclientPortAddress=127.0.0.1\nmaxClientCnxns=10\nminSessionTimeout=3000\n"
      "maxSessionTimeout=9000\njute.maxbuffer=4096\nextendedTypesEnabled=true\n"
      "server.1=127.0.0.1:2888:3888\nserver.2=[::1]:2889:3889:observer;127.0.0.1:2182\n"
      "4lw.commands.whitelist=srvr\nsomethingNew=1\n",
      "zoo.cfg");
  REQUIRE(std::holds_alternative<Config>(r));
  auto c = std::get<Config>(r);
  CHECK(c.tick_time == 1000);
  CHECK(c.init_limit == 5);
  CHECK(c.data_log_dir == "/tmp/l");
  CHECK(c.effective_min_session_timeout() == 3000);
  CHECK(c.jute_max_buffer == 4096);
  CHECK(c.extended_types);
  REQUIRE(c.servers.size() == 2);
  CHECK(c.servers[2].host == "::1");
  CHECK(c.servers[2].role == "observer");
  CHECK(c.servers[2].client_address == "127.0.0.1:2182");
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0] == "zoo.cfg:17: unknown key 'somethingNew' ignored");
}

TEST_CASE("zoo.cfg: the four-letter whitelist") {
  auto parse = [](const std::string& line) {
    return std::get<Config>(parse_config("dataDir=/d\nclientPort=1\n" + line, "w.cfg"));
  };
  CHECK(std::get<Config>(parse_config("dataDir=/d\nclientPort=1\n", "w.cfg")).four_letter_whitelist ==
        std::vector<std::string>{"srvr"});
  CHECK(parse("4lw.commands.whitelist=*\n").four_letter_whitelist == std::vector<std::string>{"*"});
  auto c = parse("4lw.commands.whitelist= stat, ruok ,bogus,,mntr\n");
  CHECK(c.four_letter_whitelist == std::vector<std::string>{"stat", "ruok", "mntr"});
  REQUIRE(c.warnings.size() == 1);
  CHECK(c.warnings[0] == "w.cfg:3: 4lw.commands.whitelist: unknown four-letter word 'bogus' ignored");
  CHECK(parse("4lw.commands.whitelist=\n").four_letter_whitelist.empty());
  CHECK(four_letter_allowed({"*"}, "dump"));
  CHECK_FALSE(four_letter_allowed({"srvr"}, "ruok"));
  CHECK(is_four_letter_word("mntr"));
  CHECK_FALSE(is_four_letter_word("MNTR"));
  CHECK_FALSE(is_four_letter_word(std::string("\0\0\0\x2d", 4)));  // a connect request's length
}

TEST_CASE("zoo.cfg: session timeouts default to 2 and 20 ticks") {
  auto c = std::get<Config>(parse_config("tickTime=3000\ndataDir=/d\nclientPort=1\n", "f"));
  CHECK(c.effective_min_session_timeout() == 6000);
  CHECK(c.effective_max_session_timeout() == 60000);
}

TEST_CASE("zoo.cfg: the pause monitor's keys are ZooKeeper's, off by default; garbage is refused") {
  auto off = std::get<Config>(parse_config("dataDir=/d\nclientPort=1\n", "p.cfg"));
  CHECK_FALSE(off.pause.enabled);
  CHECK(off.pause.sleep_ms == 500);
  CHECK(off.pause.info_threshold_ms == 1000);
  CHECK(off.pause.warn_threshold_ms == 10000);
  auto on = std::get<Config>(parse_config("dataDir=/d\nclientPort=1\njvm.pause.monitor=true\n"
                                          "jvm.pause.sleep.time.ms=50\njvm.pause.info-threshold.ms=200\n"
                                          "jvm.pause.warn-threshold.ms=3000\n",
                                          "p.cfg"));
  CHECK(on.pause.enabled);
  CHECK(on.pause.sleep_ms == 50);
  CHECK(on.pause.info_threshold_ms == 200);
  CHECK(on.pause.warn_threshold_ms == 3000);
  CHECK(on.warnings.empty());
  // QuorumPeerConfig keys: not system properties (sysp does not list them, as ZooKeeper's).
  for (const auto& [k, v] : on.properties) CHECK(k.rfind("zookeeper.jvm.", 0) != 0);
  auto err = [](const std::string& text) {
    auto r = parse_config("dataDir=/d\nclientPort=1\n" + text, "p.cfg");
    REQUIRE(std::holds_alternative<std::string>(r));
    return std::get<std::string>(r);
  };
  CHECK(err("jvm.pause.monitor=perhaps\n") == "p.cfg:3: jvm.pause.monitor=perhaps: must be true or false");
  CHECK(err("jvm.pause.sleep.time.ms=0\n").find("p.cfg:3: jvm.pause.sleep.time.ms=0: must be between 1") == 0);
  CHECK(err("jvm.pause.info-threshold.ms=\x01\n").find("p.cfg:3: jvm.pause.info-threshold.ms=") == 0);
  CHECK(err("jvm.pause.warn-threshold.ms=99999999999\n") ==
        "p.cfg:3: jvm.pause.warn-threshold.ms=99999999999: not a whole number");
}

TEST_CASE("zoo.cfg: bad input names the file, the line and the key") {
  auto err = [](const char* text) {
    auto r = parse_config(text, "my.cfg");
    REQUIRE(std::holds_alternative<std::string>(r));
    return std::get<std::string>(r);
  };
  CHECK(err("dataDir=/d\nclientPort=1\nthis line is garbage\n") ==
        "my.cfg:3: expected key=value, got 'this line is garbage'");
  CHECK(err("dataDir=/d\ntickTime=fast\nclientPort=1\n") == "my.cfg:2: tickTime=fast: not a whole number");
  CHECK(err("clientPort=70000\n") == "my.cfg:1: clientPort=70000: must be between 0 and 65535");
  CHECK(err("=x\n") == "my.cfg:1: the key before '=' is empty");
  CHECK(err("dataDir=/d\nclientPort=1\nserver.1=host\n") ==
        "my.cfg:3: server.1=host: expected host:quorumPort:electionPort");
  CHECK(err("dataDir=/d\nclientPort=1\nserver.x=h:1:2\n") ==
        "my.cfg:3: server.x=h:1:2: the server id must be a number from 0 to 254");
  CHECK(err("dataDir=/d\nclientPort=1\nlinearizableReads=maybe\n") ==
        "my.cfg:3: linearizableReads=maybe: must be true or false");
  CHECK(err("dataDir=/d\nclientPort=1\nextendedTypesEnabled=maybe\n") ==
        "my.cfg:3: extendedTypesEnabled=maybe: must be true or false");
  CHECK(err("dataDir=/d\nclientPort=1\nclientPortAddress=localhost\n") ==
        "my.cfg:3: clientPortAddress=localhost: is not an IP address");
  CHECK(err("dataDir=/d\nclientPort=1\nclientPortAddress=\n") == "my.cfg:3: clientPortAddress=: is not an IP address");
  CHECK(err("dataDir=/d\nclientPort=1\nDigestAuthenticationProvider.superDigest=nocolon\n") ==
        "my.cfg:3: DigestAuthenticationProvider.superDigest=********: expected user:base64-digest (as zkCli's or "
        "DigestAuthenticationProvider's output)");
  CHECK(std::get<Config>(parse_config("dataDir=/d\nclientPort=1\nDigestAuthenticationProvider.superDigest=su:abc=\n",
                                      "f")).super_digest == "su:abc=");
  // authProvider.N: SASL's provider turns sasl ids on; ZooKeeper's other three are accepted;
  // anything else, a bare package or garbage, is a warning naming the line, never an error.
  auto providers = [](const std::string& v) {
    return std::get<Config>(parse_config("dataDir=/d\nclientPort=1\nauthProvider.1=" + v + "\n", "p.cfg"));
  };
  const std::string pkg = "org.apache.zookeeper.server.auth.";
  CHECK(providers(pkg + "SASLAuthenticationProvider").sasl_provider);
  for (const char* known : {"X509AuthenticationProvider", "DigestAuthenticationProvider", "IPAuthenticationProvider"}) {
    CHECK_FALSE(providers(pkg + known).sasl_provider);
    CHECK(providers(pkg + known).warnings.empty());
  }
  for (std::string odd : {pkg, std::string("SASLAuthenticationProvider"), pkg + "Nope", std::string("\x01\xff")}) {
    Config c = providers(odd);
    CHECK_FALSE(c.sasl_provider);
    REQUIRE(c.warnings.size() == 1);
    CHECK(c.warnings[0].rfind("p.cfg:3: authProvider.1: authentication provider", 0) == 0);
  }
  CHECK(err("clientPort=1\n") == "my.cfg: dataDir is not set");
  CHECK(err("dataDir=/d\n") == "my.cfg: clientPort is not set");
  CHECK(err("dataDir=/d\nclientPort=1\nminSessionTimeout=9000\nmaxSessionTimeout=100\n") ==
        "my.cfg: minSessionTimeout (9000) is larger than maxSessionTimeout (100)");
  // Binary junk: an error, never a crash.
  std::string junk = "\x01\x02\xff=\xfe\n\x00\x00\n";
  CHECK_FALSE(std::holds_alternative<Config>(parse_config(junk, "junk.cfg")));
}

TEST_CASE("zoo.cfg: every key of the table, and its zookeeper. form, takes garbage without a crash") {
  // Each key with values of every kind: a refusal names the file, the line and the key; a value
  // taken draws no unknown-key warning (the table knows the key). A prefix stands for a key under it.
  const std::vector<std::string> values{"", "garbage", "-1", "0", "99999999999", "true", "no", "127.0.0.1", "a:b",
                                        std::string("\x00\x1b[2J\xff", 6), "/"};
  size_t refused = 0, taken = 0;
  for (std::string_view name : config_keys::names()) {
    std::string key(name);
    if (key.back() == '.') key += key == "server." ? "7" : key == "warden.log." ? "level" : "keyStore.location";
    for (const std::string& k : {key, "zookeeper." + key})
      for (const auto& v : values) {
        if (k == "dynamicConfigFile" || k == "zookeeper.dynamicConfigFile") continue;  // reads a file: its own test
        auto r = parse_config("dataDir=/d\nclientPort=1\n" + k + "=" + v + "\n", "g.cfg");
        if (auto* e = std::get_if<std::string>(&r)) {
          ++refused;
          INFO(k << "=" << v << ": " << *e);
          CHECK((e->rfind("g.cfg:3: ", 0) == 0 || e->rfind("g.cfg: ", 0) == 0));
        } else if (k == key) {
          ++taken;
          for (const auto& w : std::get<Config>(r).warnings) {
            INFO(k << "=" << v);
            CHECK(w.find("unknown key") == std::string::npos);
          }
        }
      }
  }
  CHECK(refused > 200);
  CHECK(taken > 200);
  CHECK(config_keys::names().size() > 70);
  CHECK(config_keys::reference().find("| `tickTime` | `2000` |") != std::string::npos);
}

TEST_CASE("quota StatsTrack text: ZooKeeper's forms, and garbage read as no limit") {
  auto t = StatsTrack::parse("count=3,bytes=-1=;byteHardLimit=10;countHardLimit=-1");
  CHECK(t.get("count") == 3);
  CHECK(t.get("bytes") == -1);
  CHECK(t.get("byteHardLimit") == 10);
  CHECK(t.text() == "count=3,bytes=-1=;byteHardLimit=10;countHardLimit=-1");
  CHECK(StatsTrack::parse("count=2,bytes=5").text() == "count=2,bytes=5");
  CHECK(StatsTrack::parse("").text() == "count=-1,bytes=-1");
  auto junk = StatsTrack::parse("count=abc,=5,bytes,\xff\xfe=1,bytes=99999999999999999999999,count=");
  CHECK(junk.get("count") == -1);
  CHECK(junk.get("bytes") == -1);
  CHECK(quota_target("/zookeeper/quota/a/b/zookeeper_limits", quota_limits_node) == "/a/b");
  CHECK(quota_target("/zookeeper/quota/zookeeper_limits", quota_limits_node).empty());
  CHECK(quota_target("/zookeeper/quota/a/xzookeeper_limits", quota_limits_node).empty());
  CHECK(quota_target("/other/a/zookeeper_limits", quota_limits_node).empty());
}

namespace {
// A config file and its dataDir (with `myid` unless it is empty) in a fresh directory.
struct EnsembleDir {
  std::filesystem::path dir;
  EnsembleDir(const std::string& cfg_body, const std::string& myid) {
    dir = std::filesystem::temp_directory_path() / ("warden-ens-" + std::to_string(::getpid()) + "-" +
                                                     std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "data");
    std::ofstream(dir / "zoo.cfg") << "tickTime=100\ndataDir=" << (dir / "data").string() << "\n" << cfg_body;
    if (!myid.empty()) std::ofstream(dir / "data" / "myid") << myid;
  }
  ~EnsembleDir() { std::filesystem::remove_all(dir); }
  std::string cfg() const { return (dir / "zoo.cfg").string(); }
  std::string myid() const { return (dir / "data" / "myid").string(); }
  ConfigResult load() const { return load_config(cfg()); }
};
const char* three = "clientPort=2181\nserver.1=127.0.0.1:2888:3888\nserver.2=127.0.0.2:2888:3888\n"
                    "server.3=127.0.0.3:2888:3888\n";
}  // namespace

TEST_CASE("zoo.cfg: TLS keys under ZooKeeper's names, with and without its zookeeper. prefix") {
  auto c = std::get<Config>(parse_config(
      "dataDir=/d\nsecureClientPort=2281\nsecureClientPortAddress=127.0.0.1\nssl.keyStore.location=/k.pem\n"
      "zookeeper.ssl.keyStore.password=pw\nssl.trustStore.location=/t.p12\nssl.trustStore.type=PKCS12\n"
      "ssl.clientAuth=WANT\nssl.enabledProtocols=TLSv1.3, TLSv1.2\n"
      "ssl.ciphersuites=TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n"
      "ssl.handshakeDetectionTimeoutMillis=250\nclient.portUnification=false\n"
      "ssl.quorum.keyStore.location=/q.pem\nX509AuthenticationProvider.superUser=CN=root\n"
      "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n"
      "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n",
      "t.cfg"));
  CHECK(c.client_port == -1);  // a TLS port alone is enough, as in ZooKeeper
  CHECK(c.secure_client_port == 2281);
  CHECK(c.secure_client_port_address == "127.0.0.1");
  CHECK(c.client_tls.key_store == "/k.pem");
  CHECK(c.client_tls.key_store_password == "pw");
  CHECK(c.client_tls.trust_store_type == "PKCS12");
  CHECK(c.client_tls.client_auth == "want");
  CHECK(c.client_tls.enabled_protocols == std::vector<std::string>{"TLSv1.3", "TLSv1.2"});
  CHECK(c.client_tls.ciphersuites.size() == 2);
  CHECK(c.client_tls.handshake_timeout_ms == 250);
  CHECK(c.client_tls.where("keyStore.location") == "t.cfg:4: ssl.keyStore.location");
  CHECK(c.quorum_tls.key_store == "/q.pem");
  CHECK(c.quorum_tls.where("keyStore.location") == "t.cfg:13: ssl.quorum.keyStore.location");
  CHECK(c.x509_super_user == "CN=root");
  CHECK(c.warnings.empty());

  auto err = [](const std::string& text) {
    auto r = parse_config("dataDir=/d\nclientPort=1\nssl.keyStore.location=/k\n" + text, "my.cfg");
    REQUIRE(std::holds_alternative<std::string>(r));
    return std::get<std::string>(r);
  };
  CHECK(err("ssl.clientAuth=always\n") == "my.cfg:4: ssl.clientAuth=always: must be need, want or none");
  CHECK(err("ssl.protocol=SSLv3\n").find("my.cfg:4: ssl.protocol=SSLv3: must be") == 0);
  CHECK(err("ssl.enabledProtocols=,\n") == "my.cfg:4: ssl.enabledProtocols=,: names no protocol");
  CHECK(err("ssl.hostnameVerification=perhaps\n") == "my.cfg:4: ssl.hostnameVerification=perhaps: must be true or "
                                                       "false");
  CHECK(err("ssl.handshakeDetectionTimeoutMillis=-5\n").find("must be a positive number") != std::string::npos);
  CHECK(err("ssl.keyStore.colour=red\n").find("my.cfg:4: ssl.keyStore.colour: unknown TLS key") == 0);
  CHECK(err("ssl.quorum.clientAuth=x\n") == "my.cfg:4: ssl.quorum.clientAuth=x: must be need, want or none");
  CHECK(err("ssl.crl=true\n").find("revocation checks are not supported") != std::string::npos);
  CHECK(err("secureClientPort=99999\n") == "my.cfg:4: secureClientPort=99999: must be between 0 and 65535");
  CHECK(err("secureClientPortAddress=name\n") == "my.cfg:4: secureClientPortAddress=name: is not an IP address");
  CHECK(err("client.portUnification=1\n") == "my.cfg:4: client.portUnification=1: must be true or false");
  CHECK(err("sslQuorum=true\n").find("sslQuorum=true needs TLS between members: set ssl.quorum.keyStore") !=
        std::string::npos);
  CHECK(err("serverCnxnFactory=x\n").find("my.cfg:4: serverCnxnFactory=x: unknown connection factory") == 0);
  auto no_store = parse_config("dataDir=/d\nsecureClientPort=1\n", "n.cfg");
  REQUIRE(std::holds_alternative<std::string>(no_store));
  CHECK(std::get<std::string>(no_store).find("secureClientPort needs TLS: set ssl.keyStore.location") !=
        std::string::npos);
  auto same = parse_config("dataDir=/d\nclientPort=5\nsecureClientPort=5\nssl.keyStore.location=/k\n", "s.cfg");
  REQUIRE(std::holds_alternative<std::string>(same));
  CHECK(std::get<std::string>(same).find("client.portUnification=true") != std::string::npos);
  // Garbage in every TLS value: an error or a config, never a crash.
  const char* keys[] = {"ssl.keyStore.type", "ssl.clientAuth", "ssl.protocol", "ssl.enabledProtocols",
                        "ssl.ciphersuites", "ssl.handshakeDetectionTimeoutMillis", "zookeeper.ssl.quorum.protocol"};
  for (const char* k : keys)
    for (const char* v : {"", ",,,", "\x01\xff", "99999999999999999999", "TLSv1.2,garbage"})
      (void)parse_config(std::string("dataDir=/d\nclientPort=1\n") + k + "=" + v + "\n", "g.cfg");
}

TEST_CASE("zoo.cfg: SASL between members, quorum.auth.* as ZooKeeper reads them") {
  auto defaults = std::get<Config>(parse_config("dataDir=/d\nclientPort=1\n", "d.cfg"));
  CHECK_FALSE(defaults.quorum_sasl.enable_sasl);
  CHECK(defaults.quorum_sasl.learner_section == "QuorumLearner");
  CHECK(defaults.quorum_sasl.server_section == "QuorumServer");
  CHECK(defaults.quorum_sasl.service_principal == "zkquorum/localhost");
  auto c = std::get<Config>(parse_config(
      "dataDir=/d\nclientPort=1\nquorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\n"
      "quorum.auth.serverRequireSasl=true\nquorum.auth.learner.saslLoginContext=L\n"
      "quorum.auth.server.saslLoginContext=S\nquorum.auth.kerberos.servicePrincipal=zkquorum/_HOST\n",
      "q.cfg"));
  CHECK(c.quorum_sasl.enable_sasl);
  CHECK(c.quorum_sasl.learner_require_sasl);
  CHECK(c.quorum_sasl.server_require_sasl);
  CHECK(c.quorum_sasl.learner_section == "L");
  CHECK(c.quorum_sasl.server_section == "S");
  CHECK(c.quorum_sasl.service_principal == "zkquorum/_HOST");
  CHECK(c.warnings.empty());

  auto err = [](const std::string& text) {
    auto r = parse_config("dataDir=/d\nclientPort=1\n" + text, "q.cfg");
    REQUIRE(std::holds_alternative<std::string>(r));
    return std::get<std::string>(r);
  };
  CHECK(err("quorum.auth.enableSasl=maybe\n") == "q.cfg:3: quorum.auth.enableSasl=maybe: must be true or false");
  CHECK(err("quorum.auth.serverRequireSasl=true\n") ==
        "q.cfg: quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.serverRequireSasl");
  CHECK(err("quorum.auth.learnerRequireSasl=true\n") ==
        "q.cfg: quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.learnerRequireSasl");
  CHECK(err("quorum.auth.enableSasl=true\nquorum.auth.serverRequireSasl=true\n") ==
        "q.cfg: quorum.auth.learnerRequireSasl is disabled, so cannot enable quorum.auth.serverRequireSasl");
  CHECK(err("quorum.auth.kerberos.servicePrincipal=zkquorum\n").find("must be service/host") != std::string::npos);
  CHECK(err("quorum.auth.kerberos.servicePrincipal=/h@R\n").find("must be service/host") != std::string::npos);
  CHECK(err("quorum.auth.kerberos.servicePrincipal=a/b/c\n").find("must be service/host") != std::string::npos);
  auto realm = parse_config("dataDir=/d\nclientPort=1\nquorum.auth.kerberos.servicePrincipal=zk/_HOST@R.EX\n", "r");
  CHECK(std::get<Config>(realm).quorum_sasl.service_principal == "zk/_HOST");
  CHECK(err("quorum.auth.server.saslLoginContext=\n").find("names no JAAS section") != std::string::npos);
  for (const char* k : {"quorum.auth.enableSasl", "quorum.auth.kerberos.servicePrincipal",
                        "quorum.auth.learner.saslLoginContext"})
    for (const char* v : {"", "/", "\x01\xff", "a/b/c", "_HOST"})
      (void)parse_config(std::string("dataDir=/d\nclientPort=1\n") + k + "=" + v + "\n", "g.cfg");
}

TEST_CASE("zoo.cfg: warden.log.* and the JSON lines' escaping") {
  auto c = std::get<Config>(parse_config("dataDir=/d\nclientPort=1\nwarden.log.level=debug\nwarden.log.file=/l/w.log\n"
                                         "warden.log.maxFileSize=3MB\nwarden.log.maxFiles=0\nwarden.log.format=json\n",
                                         "l.cfg"));
  CHECK(c.log.level == "debug");
  CHECK(c.log.file == "/l/w.log");
  CHECK(c.log.max_file_bytes == (3u << 20));
  CHECK(c.log.max_files == 0);
  CHECK(c.log.json);
  auto d = std::get<Config>(parse_config("dataDir=/d\nclientPort=1\nwarden.log.colour=red\n", "l.cfg"));
  CHECK(d.log.level == "info");
  CHECK(d.log.max_file_bytes == (100u << 20));
  REQUIRE(d.warnings.size() == 1);
  CHECK(d.warnings[0].find("l.cfg:3: unknown key 'warden.log.colour'") == 0);
  auto err = [](const std::string& text) {
    auto r = parse_config("dataDir=/d\nclientPort=1\n" + text, "l.cfg");
    REQUIRE(std::holds_alternative<std::string>(r));
    return std::get<std::string>(r);
  };
  CHECK(err("warden.log.maxFileSize=10TB\n").find("l.cfg:3: warden.log.maxFileSize=10TB: must be a size") == 0);
  CHECK(err("warden.log.maxFileSize=99999999999999999999\n").find("must be a size") != std::string::npos);
  CHECK(err("warden.log.maxFiles=10001\n").find("0 to 10000") != std::string::npos);
  CHECK(err("warden.log.level=WARN\n").find("must be trace") != std::string::npos);
  for (const char* v : {"", "KB", "1KBKB", "\x01\xff", "-1", "0x10"})
    for (const char* k : {"level", "file", "maxFileSize", "maxFiles", "format"})
      (void)parse_config(std::string("dataDir=/d\nclientPort=1\nwarden.log.") + k + "=" + v + "\n", "g.cfg");
  std::string out;
  warden::server::append_json_escaped(out, std::string("a\"b\\c\n\x01\x7f\xc3\xa9", 10));
  CHECK(out == "a\\\"b\\\\c\\n\\u0001\\u007f\xc3\xa9");
}

TEST_CASE("zoo.cfg: enforced authentication as ZooKeeper 3.8 reads it") {
  auto c = std::get<Config>(parse_config(
      "dataDir=/d\nclientPort=1\nenforce.auth.enabled=true\nenforce.auth.schemes= digest , x509\n", "e.cfg"));
  CHECK(c.enforce_auth);
  CHECK(c.enforce_auth_schemes == std::vector<std::string>{"digest", "x509"});
  auto err = [](const std::string& text) {
    auto r = parse_config("dataDir=/d\nclientPort=1\n" + text, "e.cfg");
    REQUIRE(std::holds_alternative<std::string>(r));
    return std::get<std::string>(r);
  };
  CHECK(err("enforce.auth.enabled=true\n").find("enforce.auth.schemes must name") != std::string::npos);
  CHECK(err("enforce.auth.enabled=true\nenforce.auth.schemes=kerberos\n").find("'kerberos' is not available") !=
        std::string::npos);
  // sessionRequireClientSASLAuth turns enforcement on, with sasl among the schemes (whether SASL
  // can be offered is known once the JAAS file is read, at start).
  auto sasl = std::get<Config>(parse_config("dataDir=/d\nclientPort=1\nsessionRequireClientSASLAuth=true\n", "e.cfg"));
  CHECK(sasl.enforce_auth);
  CHECK(sasl.enforce_auth_schemes == std::vector<std::string>{"sasl"});
  CHECK(err("enforce.auth.enabled=sure\n") == "e.cfg:3: enforce.auth.enabled=sure: must be true or false");
  CHECK(std::get<Config>(parse_config("dataDir=/d\nclientPort=1\nenforce.auth.schemes=,,\n", "e.cfg"))
            .enforce_auth_schemes.empty());
}

TEST_CASE("zoo.cfg: an ensemble member is checked against its myid and its servers") {
  {
    EnsembleDir d(three, "2\n");
    auto r = d.load();
    REQUIRE(std::holds_alternative<Config>(r));
    auto c = std::get<Config>(r);
    CHECK(c.ensemble());
    REQUIRE(c.self());
    CHECK(c.self()->host == "127.0.0.2");
    CHECK(c.client_port == 2181);
    CHECK(c.warnings.empty());
  }
  {  // the client port from the server's own line
    EnsembleDir d("server.1=127.0.0.1:2888:3888;127.0.0.9:2191\nserver.2=127.0.0.1:2889:3889;2192\n"
                  "server.3=127.0.0.1:2890:3890:observer\npeerType=observer\n",
                  "1");
    auto c = std::get<Config>(d.load());
    CHECK(c.client_port == 2191);
    CHECK(c.client_port_address == "127.0.0.9");
    CHECK(c.servers[3].observer());
    // two voters tolerate no failure; peerType contradicts the server line (which wins)
    REQUIRE(c.warnings.size() == 2);
    CHECK(c.warnings[0].find("does not match") != std::string::npos);
    CHECK(c.warnings[1].find("tolerates no failure") != std::string::npos);
  }
  {  // four voters: the odd-number warning
    EnsembleDir d(std::string(three) + "server.4=127.0.0.4:2888:3888\n", "4");
    auto c = std::get<Config>(d.load());
    REQUIRE(c.warnings.size() == 1);
    CHECK(c.warnings[0].find("consider an odd number") != std::string::npos);
  }
  {  // autopurge works in an ensemble too (a member behind the purged log gets a snapshot)
    EnsembleDir d(std::string(three) + "autopurge.purgeInterval=1\n", "1");
    auto c = std::get<Config>(d.load());
    CHECK(c.purge_interval_hours == 1);
    CHECK(c.warnings.empty());
  }
  {  // one server line: standalone, no myid needed
    EnsembleDir d("clientPort=0\nserver.1=127.0.0.1:2888:3888\n", "");
    auto c = std::get<Config>(d.load());
    CHECK_FALSE(c.ensemble());
  }
  {  // one server line naming a client address, no clientPort: with its myid, that address serves
    EnsembleDir d("server.1=127.0.0.1:2888:3888;127.0.0.7:2191\n", "1");
    auto c = std::get<Config>(d.load());
    CHECK_FALSE(c.ensemble());
    CHECK(c.client_port == 2191);
    CHECK(c.client_port_address == "127.0.0.7");
  }
  {  // clientPort and clientPortAddress repeating the line, or a wildcard address: agreed
    for (const char* same : {"clientPort=2191\nclientPortAddress=127.0.0.7\n", "clientPort=2191\n",
                             "clientPort=2191\nclientPortAddress=::\n"}) {
      EnsembleDir d(std::string(same) + "server.1=127.0.0.1:2888:3888;127.0.0.7:2191\nserver.2=127.0.0.2:2888:3888\n"
                    "server.3=127.0.0.3:2888:3888\n", "1");
      auto r = d.load();
      REQUIRE(std::holds_alternative<Config>(r));
      CHECK(std::get<Config>(r).client_port == 2191);
      CHECK(std::get<Config>(r).client_port_address == "127.0.0.7");
    }
  }
}

TEST_CASE("zoo.cfg: a bad ensemble names the file, the line and the reason") {
  auto err = [](const std::string& body, const std::string& myid) {
    EnsembleDir d(body, myid);
    auto r = d.load();
    REQUIRE(std::holds_alternative<std::string>(r));
    std::string e = std::get<std::string>(r);
    // Messages name the files by path: replace them so the checks read plainly.
    for (auto [from, to] : {std::pair{d.myid(), std::string("MYID")}, std::pair{d.cfg(), std::string("CFG")}})
      for (size_t at; (at = e.find(from)) != std::string::npos;) e.replace(at, from.size(), to);
    return e;
  };
  CHECK(err(three, "") == "CFG:2: MYID is missing: each member of an ensemble needs it, holding its own server id "
                          "(one of 1, 2, 3)");
  CHECK(err(three, "7") == "MYID:1: server id 7 has no server.7 line in the configuration (its servers are 1, 2, 3)");
  CHECK(err(three, "two") == "MYID:1: 'two' is not a server id (a whole number from 0 to 255)");
  CHECK(err(three, "\x01\x02garbage") ==
        "MYID:1: '\\x01\\x02garbage' is not a server id (a whole number from 0 to 255)");
  CHECK(err("clientPort=1\nserver.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2888:3889\n", "1") ==
        "CFG:5: server.2: its quorum port 127.0.0.1:2888 is already server.1's quorum port (CFG:4)");
  CHECK(err("clientPort=1\nserver.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:3888:2889\n", "1") ==
        "CFG:5: server.2: its quorum port 127.0.0.1:3888 is already server.1's election port (CFG:4)");
  CHECK(err("clientPort=1\nserver.1=127.0.0.1:2888:3888;2888\nserver.2=127.0.0.2:2888:3888\n", "1") ==
        "CFG:4: server.1: its client port 127.0.0.1:2888 is already server.1's quorum port (CFG:4)");
  CHECK(err("server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.2:2888:3888\n", "1") ==
        "CFG:3: server.1 has no client port: set clientPort, or add ';clientPort' to this line");
  CHECK(err("clientPort=1\nserver.1=127.0.0.1:2888:3888:observer\nserver.2=127.0.0.2:2888:3888:observer\n", "1") ==
        "CFG:2: every server.N line is an observer: an ensemble needs voters");
  CHECK(err("clientPort=1\nserver.1=127.0.0.1:2888:3888;nohost:x\nserver.2=127.0.0.2:2888:3888\n", "1") ==
        "CFG:4: server.1=127.0.0.1:2888:3888;nohost:x: the client address 'nohost' is not an IP address");
  CHECK(err("clientPort=1\npeerType=leader\n", "1") == "CFG:4: peerType=leader: must be participant or observer");
  // clientPort contradicting the member's own line (ZooKeeper's setupClientPort refuses it too)
  CHECK(err("clientPort=2181\nserver.1=127.0.0.1:2888:3888;2182\nserver.2=127.0.0.2:2888:3888\n", "1") ==
        "CFG:3: clientPort 2181 is not server.1's client address 2182 (CFG:4): give one, or the same in both");
  CHECK(err("clientPort=2181\nclientPortAddress=127.0.0.2\nserver.1=127.0.0.1:2888:3888;127.0.0.1:2181\n"
            "server.2=127.0.0.2:2888:3888\n", "1") ==
        "CFG:3: clientPort 2181 on 127.0.0.2 is not server.1's client address 127.0.0.1:2181 (CFG:5): give one, or "
        "the same in both");
  // the same in a standalone server started from one line
  CHECK(err("clientPort=2181\nserver.1=127.0.0.1:2888:3888;2182\n", "1") ==
        "CFG:3: clientPort 2181 is not server.1's client address 2182 (CFG:4): give one, or the same in both");
  // one line's client address, but no myid naming it: nothing says this server is server.1
  CHECK(err("server.1=127.0.0.1:2888:3888;2182\n", "") ==
        "CFG:3: clientPort is not set, and server.1's client address serves only a server whose MYID holds 1");
}

TEST_CASE("JVM flags' -D properties are read as ZooKeeper reads them; zoo.cfg wins; a bad one names its flag") {
  auto props = jvm_flag_properties(launcher_properties(
      "-Xmx1g -Dreadonlymode.enabled=true -Dzookeeper.extendedTypesEnabled=true -Dno.such=1 "
      "-Dzookeeper.DigestAuthenticationProvider.superDigest=super:abc= -D -Dx",
      "-Dzookeeper.nio.sessionlessCnxnTimeout='2500' garbage", ""));
  REQUIRE(props.size() == 4);
  CHECK(props[0] == std::pair<std::string, std::string>{"$SERVER_JVMFLAGS -Dreadonlymode.enabled",
                                                        "readonlymode.enabled=true"});
  CHECK(props[1].second == "extendedTypesEnabled=true");  // ZooKeeper's property, the key without its prefix
  CHECK(props[2].second == "zookeeper.DigestAuthenticationProvider.superDigest=super:abc=");
  CHECK(props[3].second == "zookeeper.nio.sessionlessCnxnTimeout=2500");
  auto c = std::get<Config>(parse_config("dataDir=/d\nclientPort=1\n", "z.cfg", props));
  CHECK(c.read_only_mode);
  CHECK(c.extended_types);
  CHECK(c.sessionless_timeout_ms == 2500);
  CHECK(c.super_digest == "super:abc=");
  auto file_wins = std::get<Config>(parse_config("dataDir=/d\nclientPort=1\nreadonlymode.enabled=false\n", "z.cfg", props));
  CHECK(!file_wins.read_only_mode);
  auto bad = parse_config("dataDir=/d\nclientPort=1\n", "z.cfg",
                          jvm_flag_properties(launcher_properties(nullptr, "-Dreadonlymode.enabled=maybe", "")));
  REQUIRE(std::holds_alternative<std::string>(bad));
  CHECK(std::get<std::string>(bad) ==
        "$JVMFLAGS -Dreadonlymode.enabled: readonlymode.enabled=maybe: must be true or false");
}

TEST_CASE("one server line: standalone, or with standaloneEnabled=false an ensemble of one") {
  auto parse = [](const std::string& text) {
    return std::get<Config>(parse_config("dataDir=/d\nserver.1=127.0.0.1:2888:3888;127.0.0.1:2181\n" + text, "z.cfg"));
  };
  CHECK(!parse("clientPort=2181\n").ensemble());
  CHECK(!parse("clientPort=2181\nstandaloneEnabled=true\n").ensemble());
  CHECK(parse("standaloneEnabled=false\n").ensemble());
  CHECK(std::get<Config>(parse_config("dataDir=/d\nclientPort=1\nstandaloneEnabled=false\n", "z.cfg")).ensemble() ==
        false);  // no server line at all: standalone whatever the key says
}

TEST_CASE("skipACL: yes or no, from zoo.cfg or -Dzookeeper.skipACL; anything else is refused") {
  auto parse = [](const std::string& text, const char* flags = nullptr) {
    return parse_config("dataDir=/d\nclientPort=1\n" + text, "z.cfg",
                        jvm_flag_properties(launcher_properties(flags, nullptr, "")));
  };
  CHECK(!std::get<Config>(parse("")).skip_acl);
  CHECK(std::get<Config>(parse("skipACL=yes\n")).skip_acl);
  CHECK(!std::get<Config>(parse("skipACL=no\n")).skip_acl);
  CHECK(std::get<Config>(parse("", "-Dzookeeper.skipACL=yes")).skip_acl);
  CHECK(!std::get<Config>(parse("skipACL=no\n", "-Dzookeeper.skipACL=yes")).skip_acl);  // zoo.cfg wins
  for (const char* garbage : {"true", "YES", "", "yes\x01"}) {
    auto r = parse(std::string("skipACL=") + garbage + "\n");
    REQUIRE(std::holds_alternative<std::string>(r));
    CHECK(std::get<std::string>(r).find("z.cfg:3: skipACL=") == 0);
    CHECK(std::get<std::string>(r).find("must be yes or no") != std::string::npos);
  }
}

TEST_CASE("conf/java.env sets the JVM flags as zkEnv.sh sources it") {
  std::map<std::string, std::string> flags{{"SERVER_JVMFLAGS", "-Xmx1g"}}, origins;
  apply_java_env("# comment\nexport SERVER_JVMFLAGS=\"$SERVER_JVMFLAGS -Dreadonlymode.enabled=true\"\n"
                 "JVMFLAGS='-Dzookeeper.nio.sessionlessCnxnTimeout=3000 ${SERVER_JVMFLAGS}'\n"
                 "OTHER=1\nnot an assignment\n$\n",
                 flags, &origins, "j.env");
  CHECK(flags["SERVER_JVMFLAGS"] == "-Xmx1g -Dreadonlymode.enabled=true");
  CHECK(flags["JVMFLAGS"] == "-Dzookeeper.nio.sessionlessCnxnTimeout=3000 -Xmx1g -Dreadonlymode.enabled=true");
  CHECK(flags.size() == 2);
  CHECK(origins["JVMFLAGS"] == "j.env:3");
  CHECK(jvm_properties("-Da=1 -Db=\"x y\" -c -D=2 -Dd") ==
        std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"b", "x y"}});
  // load_config reads java.env beside zoo.cfg.
  auto dir = std::filesystem::temp_directory_path() / ("warden-javaenv-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "zoo.cfg") << "dataDir=" << (dir / "d").string() << "\nclientPort=0\n";
  std::ofstream(dir / "java.env") << "SERVER_JVMFLAGS=\"-Dreadonlymode.enabled=true\"\n";
  auto loaded = load_config((dir / "zoo.cfg").string());
  std::filesystem::remove_all(dir);
  REQUIRE(std::holds_alternative<Config>(loaded));
  CHECK(std::get<Config>(loaded).read_only_mode);
}

TEST_CASE("zoo.cfg: the members from ZooKeeper 3.5's dynamicConfigFile, its errors by file and line") {
  auto with_dynamic = [](const std::string& dynamic, const std::string& extra = "") {
    auto d = std::make_unique<EnsembleDir>("reconfigEnabled=true\nstandaloneEnabled=false\n" + extra, "2");
    std::ofstream(d->dir / "zoo.cfg.dynamic.100000000") << dynamic;
    std::ofstream(d->cfg(), std::ios::app) << "dynamicConfigFile=" << (d->dir / "zoo.cfg.dynamic.100000000").string()
                                           << "\n";
    return d;
  };
  const std::string members =
      "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n"
      "server.2=127.0.0.2:2888:3888:participant;127.0.0.2:2181\n"
      "server.3=127.0.0.3:2888:3888:participant;127.0.0.3:2181\n";
  {
    auto d = with_dynamic(members);
    auto c = std::get<Config>(d->load());
    CHECK(c.ensemble());
    CHECK(c.servers.size() == 3);
    CHECK(c.config_version == 0x100000000ULL);
    REQUIRE(c.self());
    CHECK(c.client_port == 2181);
    CHECK(c.client_port_address == "127.0.0.2");
    CHECK(c.servers[3].origin == (d->dir / "zoo.cfg.dynamic.100000000").string() + ":3");
  }
  auto error = [&](const std::string& dynamic, const std::string& extra = "") {
    auto d = with_dynamic(dynamic, extra);
    auto r = d->load();
    REQUIRE(std::holds_alternative<std::string>(r));
    return std::get<std::string>(r);
  };
  std::string file = "zoo.cfg.dynamic.100000000:";
  CHECK_THAT(error(members + "server.4=nonsense\n"), Catch::Contains(file + "4: server.4=nonsense: expected"));
  CHECK_THAT(error(members + "tickTime=5\n"), Catch::Contains(file + "4: 'tickTime' does not belong"));
  CHECK_THAT(error("server.1=127.0.0.1:2888:3888\nversion=100000000\n"),
             Catch::Contains(file + "2: version=100000000: the version belongs in the file's name"));
  CHECK_THAT(error(members + "group.1=1:2:3\n"), Catch::Contains("hierarchical quorums"));
  CHECK_THAT(error("\x01\x02garbage\n"), Catch::Contains(file + "1: expected key=value"));
  CHECK_THAT(error("# nobody\n"), Catch::Contains("names no server.N"));
  CHECK_THAT(error(members, "server.9=127.0.0.9:2888:3888\n"),
             Catch::Contains("the server.N lines belong in") && Catch::Contains("zoo.cfg:5"));
  {
    EnsembleDir d("dynamicConfigFile=/nonexistent/zoo.cfg.dynamic\n", "1");
    auto r = d.load();
    REQUIRE(std::holds_alternative<std::string>(r));
    CHECK_THAT(std::get<std::string>(r), Catch::Contains("zoo.cfg:3: dynamicConfigFile=/nonexistent/zoo.cfg.dynamic: "
                                                         "cannot be read"));
  }
  {  // a directory: its read fails inside the stream, which once ended the process (abort)
    EnsembleDir d("", "1");
    std::ofstream(d.cfg(), std::ios::app) << "dynamicConfigFile=" << d.dir.string() << "\n";
    auto r = d.load();
    REQUIRE(std::holds_alternative<std::string>(r));
    CHECK_THAT(std::get<std::string>(r), Catch::Contains("zoo.cfg:3: dynamicConfigFile=" + d.dir.string() +
                                                         ": cannot be read"));
    CHECK(std::get<std::string>(load_config(d.dir.string())) == d.dir.string() + ": cannot be read");
    CHECK(std::get<std::string>(auth::load_jaas(d.dir.string())) == d.dir.string() + ": the JAAS file cannot be read");
  }
}
