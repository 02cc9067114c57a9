#include "server/config/tls_settings.hpp"

#include <charconv>

namespace warden::server::tls {

namespace {
std::vector<std::string> split_list(std::string_view v) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from <= v.size()) {
    size_t comma = std::min(v.find(',', from), v.size());
    std::string_view item = v.substr(from, comma - from);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    from = comma + 1;
  }
  return out;
}

bool known_protocol(std::string_view p) {
  return p == "TLS" || p == "TLSv1" || p == "TLSv1.1" || p == "TLSv1.2" || p == "TLSv1.3";
}
}  // namespace

std::string TlsSettings::where(const std::string& key) const {
  auto it = origins.find(key);
  std::string name = prefix + key;
  return it == origins.end() ? name : it->second + ": " + name;
}

bool read_tls_key(std::string_view key, std::string_view value, const std::string& origin, TlsSettings& client,
                  TlsSettings& quorum, std::optional<std::string>& error) {
  if (key.rfind("zookeeper.", 0) == 0) key.remove_prefix(10);
  TlsSettings* s = nullptr;
  if (key.rfind("ssl.quorum.", 0) == 0) {
    s = &quorum;
    key.remove_prefix(11);
  } else if (key.rfind("ssl.", 0) == 0) {
    s = &client;
    key.remove_prefix(4);
  } else {
    return false;
  }
  std::string k(key), v(value);
  auto boolean = [&](bool& out) {
    if (v == "true") out = true;
    else if (v == "false") out = false;
    else error = s->prefix + k + "=" + v + ": must be true or false";
  };
  if (k == "keyStore.location") s->key_store = v;
  else if (k == "keyStore.password") s->key_store_password = v;
  else if (k == "keyStore.type") s->key_store_type = v;
  else if (k == "trustStore.location") s->trust_store = v;
  else if (k == "trustStore.password") s->trust_store_password = v;
  else if (k == "trustStore.type") s->trust_store_type = v;
  else if (k == "clientAuth") {
    // ZooKeeper's ClientAuth.fromPropertyValue: case-insensitive, empty means need.
    std::string lower;
    for (char ch : v) lower += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    if (lower.empty()) lower = "need";
    if (lower != "need" && lower != "want" && lower != "none")
      error = s->prefix + k + "=" + v + ": must be need, want or none";
    s->client_auth = lower;
  } else if (k == "protocol") {
    if (!known_protocol(v)) error = s->prefix + k + "=" + v + ": must be TLS, TLSv1.2 or TLSv1.3 (or TLSv1, TLSv1.1)";
    s->protocol = v;
  } else if (k == "enabledProtocols") {
    s->enabled_protocols = split_list(v);
    for (const auto& p : s->enabled_protocols)
      if (!known_protocol(p) || p == "TLS")
        error = s->prefix + k + "=" + v + ": unknown protocol '" + p + "' (TLSv1.2, TLSv1.3, TLSv1.1, TLSv1)";
    if (s->enabled_protocols.empty()) error = s->prefix + k + "=" + v + ": names no protocol";
  } else if (k == "ciphersuites") {
    s->ciphersuites = split_list(v);
    if (s->ciphersuites.empty()) error = s->prefix + k + "=" + v + ": names no cipher suite";
  } else if (k == "hostnameVerification") {
    boolean(s->hostname_verification);
  } else if (k == "handshakeDetectionTimeoutMillis") {
    int32_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || p != v.data() + v.size() || n < 1)
      error = s->prefix + k + "=" + v + ": must be a positive number of milliseconds";
    s->handshake_timeout_ms = n;
  } else if (k == "clientHostnameVerification" || k == "crl" || k == "ocsp" || k == "context.supplier.class" ||
             k == "authProvider" || k == "sslProvider" || k == "fips-mode") {
    // Known to ZooKeeper; Warden keeps its own behaviour (no CRL or OCSP checks yet, OpenSSL
    // as the provider): accepted so that a ZooKeeper file starts.
    if ((k == "crl" || k == "ocsp") && v == "true")
      error = s->prefix + k + "=true: revocation checks are not supported by Warden yet";
  } else {
    error = s->prefix + k + ": unknown TLS key (ZooKeeper's are keyStore.*, trustStore.*, clientAuth, protocol, "
            "enabledProtocols, ciphersuites, hostnameVerification, handshakeDetectionTimeoutMillis)";
  }
  s->origins[k] = origin;
  return true;
}

}  // namespace warden::server::tls
