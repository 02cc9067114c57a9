// The certificate chains a server context has verified, remembered so that the same chain
// presented again is not verified again. A fleet's clients often share one client certificate,
// and after a member dies they all connect at once: under OpenSSL 3.0 verifying the chain was
// a sixth of a mutually authenticated handshake's CPU on the server.
//
// What is remembered is exactly what the verification depended on: the chain's bytes as the
// peer sent them, the trust store (a memo belongs to one context, and a context is built anew
// when a store changes on disk), and the time (an entry holds only while every certificate of
// the verified chain is within its validity, and for at most ten minutes). Only successes are
// remembered: a refused chain is verified, and logged, every time. Neither CRLs nor OCSP are
// used by Warden's contexts (ssl.crl and ssl.ocsp are refused), and a hostname check on a
// certificate is made after the handshake, outside what is remembered.
#pragma once

#include <cstdint>
#include <ctime>
#include <mutex>
#include <string>
#include <unordered_map>

typedef struct ssl_ctx_st SSL_CTX;

namespace warden::server::tls {

class VerifiedChains {
 public:
  static constexpr size_t max_entries = 4096;
  static constexpr time_t max_age_s = 600;

  // The chain `der` (its certificates' DER, leaf first) verified at `now`: true when it was
  // verified before, still holds, and the answer can be given without verifying.
  bool known(const std::string& der, time_t now);
  // `der` verified at `now`; every certificate of the verified chain is valid in
  // [valid_from, valid_until].
  void remember(std::string der, time_t valid_from, time_t valid_until, time_t now);
  // Verifications made in full (a test's view of whether the memo answered).
  uint64_t full_verifications() const;
  void count_full_verification();

  // Makes `ctx` verify its peers' chains through a memo of its own (owned by the context). Not
  // for a context whose connections name a host to check inside the verification
  // (SSL_set1_host): the memo would answer for another host. Warden's server contexts check
  // no host, and the quorum's hostname check runs after the handshake.
  static void attach(SSL_CTX* ctx);
  // The memo attached to `ctx`, or nullptr.
  static VerifiedChains* of(SSL_CTX* ctx);

 private:
  struct Entry {
    time_t valid_from = 0, valid_until = 0, expires = 0;
  };
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  uint64_t full_ = 0;
};

}  // namespace warden::server::tls
