// For the TLS unit tests and the TLS fuzzer, which need real handshakes without files made
// beforehand: certificates made in the process with OpenSSL (a CA, a server and a client,
// "alice", ECDSA P-256), the server's PEM files as zoo.cfg's ssl.* keys name them, and a
// client's reads.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "server/config/tls_settings.hpp"

namespace warden::test {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using CertPtr = std::unique_ptr<X509, CertFree>;

inline KeyPtr ec_key() { return KeyPtr(EVP_EC_gen("P-256")); }

// A certificate for `cn` with `key`, signed by `issuer_key` (itself when issuer is null), valid
// from an hour ago for `seconds`.
inline CertPtr certificate(const std::string& cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, long seconds,
                           bool ca, long serial) {
  CertPtr c(X509_new());
  X509_set_version(c.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(c.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c.get()), seconds);
  X509_NAME* name = X509_get_subject_name(c.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(c.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509_set_pubkey(c.get(), key);
  X509V3_CTX v3;
  X509V3_set_ctx(&v3, issuer ? issuer : c.get(), c.get(), nullptr, nullptr, 0);
  X509_EXTENSION* bc = X509V3_EXT_conf_nid(nullptr, &v3, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
  X509_add_ext(c.get(), bc, -1);
  X509_EXTENSION_free(bc);
  X509_sign(c.get(), issuer_key, EVP_sha256());
  return c;
}

// Writes `key` (if any) and `cert` to `p` as PEM; throws when the file cannot be written.
inline void write_pem(const std::filesystem::path& p, X509* cert, EVP_PKEY* key) {
  FILE* f = fopen(p.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + p.string());
  bool ok = (!key || PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1) &&
            PEM_write_X509(f, cert) == 1;
  fclose(f);
  if (!ok) throw std::runtime_error("cannot write " + p.string());
}

// The CA, server and client, and the server's key store and trust store in a directory of the
// process's own (removed with it).
struct Pki {
  std::filesystem::path dir;
  KeyPtr ca_key = ec_key(), server_key = ec_key(), client_key = ec_key();
  CertPtr ca, server, client;
  Pki() {
    dir = std::filesystem::temp_directory_path() / ("warden-tls-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    ca = certificate("test-ca", ca_key.get(), nullptr, ca_key.get(), 86400, true, 1);
    server = certificate("server", server_key.get(), ca.get(), ca_key.get(), 86400, false, 2);
    client = certificate("alice", client_key.get(), ca.get(), ca_key.get(), 86400, false, 3);
    write_pem(dir / "server.pem", server.get(), server_key.get());
    write_pem(dir / "ca.pem", ca.get(), nullptr);
  }
  ~Pki() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  Pki(const Pki&) = delete;
  Pki& operator=(const Pki&) = delete;
  // ssl.keyStore.location and ssl.trustStore.location (clientAuth need, as ZooKeeper's default).
  server::tls::TlsSettings settings() const {
    server::tls::TlsSettings s;
    s.key_store = (dir / "server.pem").string();
    s.trust_store = (dir / "ca.pem").string();
    return s;
  }
};

// Everything `ssl` can read now (until it would wait, or its peer's end).
inline std::string read_available(SSL* ssl) {
  std::string out;
  char buf[16384];
  size_t n = 0;
  while (SSL_read_ex(ssl, buf, sizeof buf, &n) == 1) out.append(buf, n);
  return out;
}

}  // namespace warden::test
