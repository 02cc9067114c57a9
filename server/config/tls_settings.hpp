// The TLS keys of zoo.cfg, under ZooKeeper's names (its X509Util's): ssl.* for the client port,
// ssl.quorum.* between members, each also with ZooKeeper's "zookeeper." in front (the name of
// the Java system property, which ZooKeeper's zoo.cfg keys become). Plain values only: the
// files are read when the server starts (server/tls/tls_context.hpp), which names the key and
// the file of any problem.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warden::server::tls {

struct TlsSettings {
  std::string key_store, key_store_password, key_store_type;        // ssl.keyStore.*
  std::string trust_store, trust_store_password, trust_store_type;  // ssl.trustStore.*
  // ssl.clientAuth: need (ZooKeeper's default), want or none.
  std::string client_auth = "need";
  // ssl.protocol (ZooKeeper's default TLSv1.2) and ssl.enabledProtocols. Without the latter,
  // TLS 1.2 and 1.3 are both offered: ZooKeeper 3.8's Java client speaks only 1.2, newer
  // clients 1.3.
  std::string protocol = "TLSv1.2";
  std::vector<std::string> enabled_protocols;
  std::vector<std::string> ciphersuites;  // ssl.ciphersuites, in IANA names as Java's; empty: OpenSSL's
  // ssl.hostnameVerification: a member checks the other member's certificate against its
  // address (quorum). ZooKeeper 3.8 never checks a client's certificate against its address on
  // the client port, and neither does Warden.
  bool hostname_verification = true;
  // ssl.handshakeDetectionTimeoutMillis: a handshake that has not finished by then is dropped.
  int32_t handshake_timeout_ms = 5000;
  // Where each key was set ("FILE:LINE"), for messages about it.
  std::map<std::string, std::string> origins;

  // "FILE:LINE: ssl.keyStore.location" (with the prefix the settings were read under).
  std::string where(const std::string& key) const;
  std::string prefix = "ssl.";
  bool has_key_store() const { return !key_store.empty(); }
  static TlsSettings for_quorum() {
    TlsSettings s;
    s.prefix = "ssl.quorum.";
    return s;
  }
};

// Reads one zoo.cfg line when its key is a TLS key ("ssl.X", "ssl.quorum.X", either with
// "zookeeper." in front). False when it is not one; otherwise `error` is set when the value
// is bad (naming the key and the reason, without the origin, which the caller adds).
bool read_tls_key(std::string_view key, std::string_view value, const std::string& origin, TlsSettings& client,
                  TlsSettings& quorum, std::optional<std::string>& error);

}  // namespace warden::server::tls
