// A server context's memo of verified client chains (server/tls/verified_chains.hpp), driven
// through real handshakes in memory: certificates made here with OpenSSL, the server's context
// built by make_context from PEM files as zoo.cfg's ssl.* keys name them.
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <boost/asio/ssl.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "server/tls/tls_context.hpp"
#include "server/tls/verified_chains.hpp"

namespace fs = std::filesystem;
using namespace warden::server::tls;

namespace {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using CertPtr = std::unique_ptr<X509, CertFree>;

KeyPtr ec_key() { return KeyPtr(EVP_EC_gen("P-256")); }

// A certificate for `cn` with `key`, signed by `issuer_key` (itself when issuer is null), valid
// from an hour ago for `seconds`.
CertPtr certificate(const std::string& cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, long seconds,
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

void write_pem(const fs::path& p, X509* cert, EVP_PKEY* key) {
  FILE* f = fopen(p.c_str(), "w");
  REQUIRE(f);
  if (key) PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  PEM_write_X509(f, cert);
  fclose(f);
}

// One handshake in memory between `server` and a client presenting `cert` with `key`; true
// when both sides finished.
bool handshake(SSL_CTX* server, X509* ca, X509* cert, EVP_PKEY* key) {
  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  X509_STORE_add_cert(SSL_CTX_get_cert_store(client), ca);
  SSL_CTX_set_verify(client, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_use_certificate(client, cert);
  SSL_CTX_use_PrivateKey(client, key);
  SSL* s = SSL_new(server);
  SSL* c = SSL_new(client);
  BIO *a = nullptr, *b = nullptr;
  BIO_new_bio_pair(&a, 0, &b, 0);
  SSL_set_bio(s, a, a);
  SSL_set_bio(c, b, b);
  SSL_set_accept_state(s);
  SSL_set_connect_state(c);
  bool done = false;
  for (int i = 0; i < 20 && !done; ++i) {
    int rc = SSL_do_handshake(c);
    int rs = SSL_do_handshake(s);
    done = rc == 1 && rs == 1;
    if (rs <= 0 && SSL_get_error(s, rs) != SSL_ERROR_WANT_READ && SSL_get_error(s, rs) != SSL_ERROR_WANT_WRITE) break;
  }
  bool verified = done && SSL_get_verify_result(s) == X509_V_OK;
  SSL_free(s);
  SSL_free(c);
  SSL_CTX_free(client);
  ERR_clear_error();
  return verified;
}

struct Pki {
  fs::path dir;
  KeyPtr ca_key = ec_key(), server_key = ec_key(), client_key = ec_key();
  CertPtr ca, server, client;
  Pki() {
    dir = fs::temp_directory_path() / ("warden-tls-test-" + std::to_string(getpid()));
    fs::create_directories(dir);
    ca = certificate("test-ca", ca_key.get(), nullptr, ca_key.get(), 86400, true, 1);
    server = certificate("server", server_key.get(), ca.get(), ca_key.get(), 86400, false, 2);
    client = certificate("alice", client_key.get(), ca.get(), ca_key.get(), 86400, false, 3);
    write_pem(dir / "server.pem", server.get(), server_key.get());
    write_pem(dir / "ca.pem", ca.get(), nullptr);
  }
  ~Pki() { fs::remove_all(dir); }
  TlsSettings settings() const {
    TlsSettings s;
    s.key_store = (dir / "server.pem").string();
    s.trust_store = (dir / "ca.pem").string();
    return s;
  }
};

}  // namespace

TEST_CASE("a client chain verified once is answered from memory, and only while it holds", "[tls]") {
  Pki pki;
  auto ctx = make_context(pki.settings(), true);
  SSL_CTX* native = ctx->native_handle();
  VerifiedChains* memo = VerifiedChains::of(native);
  REQUIRE(memo != nullptr);

  SECTION("the same chain again: no second verification") {
    REQUIRE(handshake(native, pki.ca.get(), pki.client.get(), pki.client_key.get()));
    CHECK(memo->full_verifications() == 1);
    for (int i = 0; i < 3; ++i) REQUIRE(handshake(native, pki.ca.get(), pki.client.get(), pki.client_key.get()));
    CHECK(memo->full_verifications() == 1);
  }

  SECTION("another chain is verified in full, and one the trust store does not accept is refused") {
    REQUIRE(handshake(native, pki.ca.get(), pki.client.get(), pki.client_key.get()));
    KeyPtr other_key = ec_key();
    CertPtr bob = certificate("bob", other_key.get(), pki.ca.get(), pki.ca_key.get(), 86400, false, 4);
    REQUIRE(handshake(native, pki.ca.get(), bob.get(), other_key.get()));
    CHECK(memo->full_verifications() == 2);
    // Same subject and key as alice's, signed by a CA the server does not trust.
    KeyPtr rogue_ca_key = ec_key();
    CertPtr rogue_ca = certificate("test-ca", rogue_ca_key.get(), nullptr, rogue_ca_key.get(), 86400, true, 1);
    CertPtr forged = certificate("alice", pki.client_key.get(), rogue_ca.get(), rogue_ca_key.get(), 86400, false, 3);
    for (int i = 0; i < 2; ++i) CHECK_FALSE(handshake(native, pki.ca.get(), forged.get(), pki.client_key.get()));
    CHECK(memo->full_verifications() == 4);  // a refusal is never remembered
    CHECK(handshake(native, pki.ca.get(), pki.client.get(), pki.client_key.get()));
    CHECK(memo->full_verifications() == 4);
  }

  SECTION("a remembered chain that has expired is verified again, and refused") {
    KeyPtr key = ec_key();
    CertPtr brief = certificate("brief", key.get(), pki.ca.get(), pki.ca_key.get(), 2, false, 5);
    REQUIRE(handshake(native, pki.ca.get(), brief.get(), key.get()));
    REQUIRE(handshake(native, pki.ca.get(), brief.get(), key.get()));
    CHECK(memo->full_verifications() == 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(3200));
    CHECK_FALSE(handshake(native, pki.ca.get(), brief.get(), key.get()));
    CHECK(memo->full_verifications() == 2);
  }
}

TEST_CASE("a rotated trust store starts with an empty memo", "[tls]") {
  Pki pki;
  ServerTlsContext holder(pki.settings(), true);
  auto first = holder.current();
  REQUIRE(handshake(first->native_handle(), pki.ca.get(), pki.client.get(), pki.client_key.get()));
  // The trust store now holds another CA only: alice's chain, remembered by the old context,
  // must be verified by the new one, and refused.
  KeyPtr new_ca_key = ec_key();
  CertPtr new_ca = certificate("new-ca", new_ca_key.get(), nullptr, new_ca_key.get(), 86400, true, 9);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a new modification time
  write_pem(pki.dir / "ca.pem", new_ca.get(), nullptr);
  auto second = holder.current();
  REQUIRE(second != first);
  CHECK_FALSE(handshake(second->native_handle(), pki.ca.get(), pki.client.get(), pki.client_key.get()));
  CHECK(VerifiedChains::of(second->native_handle())->full_verifications() == 1);
}

TEST_CASE("the memo's bounds", "[tls]") {
  VerifiedChains memo;
  time_t now = 1'000'000;
  memo.remember("a", now - 10, now + 100, now);
  CHECK(memo.known("a", now));
  CHECK(memo.known("a", now + 100));
  CHECK_FALSE(memo.known("a", now + 101));  // past the chain's validity: forgotten
  memo.remember("b", now - 10, now + 100'000, now);
  CHECK_FALSE(memo.known("b", now + VerifiedChains::max_age_s));  // re-verified after ten minutes
  memo.remember("c", now + 5, now + 100, now);
  CHECK_FALSE(memo.known("c", now));  // not yet valid
  for (size_t i = 0; i < VerifiedChains::max_entries + 10; ++i) memo.remember(std::to_string(i), now, now + 10, now);
  CHECK(memo.known(std::to_string(VerifiedChains::max_entries + 9), now));
  CHECK_FALSE(memo.known("garbage that was never verified", now));
}
