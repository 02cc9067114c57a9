#include "server/tls/verified_chains.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <limits>

namespace warden::server::tls {

namespace {

// The chain as the peer sent it: each certificate's DER with its length in front, so that two
// different chains never give the same bytes. Empty when a certificate cannot be encoded.
std::string chain_bytes(X509* leaf, STACK_OF(X509) * sent) {
  std::string out;
  auto add = [&out](X509* c) {
    int n = i2d_X509(c, nullptr);
    if (n <= 0) return false;
    size_t at = out.size();
    out.resize(at + 4 + static_cast<size_t>(n));
    for (int i = 0; i < 4; ++i) out[at + static_cast<size_t>(i)] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
    auto* p = reinterpret_cast<unsigned char*>(out.data() + at + 4);
    return i2d_X509(c, &p) == n;
  };
  if (!leaf || !add(leaf)) return {};
  int count = sent ? sk_X509_num(sent) : 0;
  for (int i = 0; i < count; ++i) {
    X509* c = sk_X509_value(sent, i);
    if (c != leaf && !add(c)) return {};  // a handshake's list starts with the leaf: once is enough
  }
  return out;
}

// The span in which every certificate of the verified chain is valid; false if a time cannot
// be read.
bool validity(STACK_OF(X509) * chain, time_t& from, time_t& until) {
  from = std::numeric_limits<time_t>::min();
  until = std::numeric_limits<time_t>::max();
  int count = chain ? sk_X509_num(chain) : 0;
  if (count == 0) return false;
  for (int i = 0; i < count; ++i) {
    X509* c = sk_X509_value(chain, i);
    struct tm before {}, after {};
    if (ASN1_TIME_to_tm(X509_get0_notBefore(c), &before) != 1 || ASN1_TIME_to_tm(X509_get0_notAfter(c), &after) != 1)
      return false;
    from = std::max(from, timegm(&before));
    until = std::min(until, timegm(&after));
  }
  return from <= until;
}

int verify_remembering(X509_STORE_CTX* store_ctx, void* arg) {
  auto* memo = static_cast<VerifiedChains*>(arg);
  std::string der = chain_bytes(X509_STORE_CTX_get0_cert(store_ctx), X509_STORE_CTX_get0_untrusted(store_ctx));
  time_t now = time(nullptr);
  if (!der.empty() && memo->known(der, now)) {
    X509_STORE_CTX_set_error(store_ctx, X509_V_OK);
    return 1;
  }
  memo->count_full_verification();
  int ok = X509_verify_cert(store_ctx);
  time_t from = 0, until = 0;
  if (ok == 1 && !der.empty() && validity(X509_STORE_CTX_get0_chain(store_ctx), from, until))
    memo->remember(std::move(der), from, until, now);
  return ok;
}

void free_memo(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) { delete static_cast<VerifiedChains*>(ptr); }

int memo_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, free_memo);
  return index;
}

}  // namespace

bool VerifiedChains::known(const std::string& der, time_t now) {
  std::lock_guard<std::mutex> hold(mutex_);
  auto it = entries_.find(der);
  if (it == entries_.end()) return false;
  const Entry& e = it->second;
  if (now < e.valid_from || now > e.valid_until || now >= e.expires) {
    entries_.erase(it);
    return false;
  }
  return true;
}

void VerifiedChains::remember(std::string der, time_t valid_from, time_t valid_until, time_t now) {
  std::lock_guard<std::mutex> hold(mutex_);
  if (entries_.size() >= max_entries) entries_.clear();  // bounded; the next handshakes refill it
  entries_[std::move(der)] = Entry{valid_from, valid_until, now + max_age_s};
}

uint64_t VerifiedChains::full_verifications() const {
  std::lock_guard<std::mutex> hold(mutex_);
  return full_;
}

void VerifiedChains::count_full_verification() {
  std::lock_guard<std::mutex> hold(mutex_);
  ++full_;
}

void VerifiedChains::attach(SSL_CTX* ctx) {
  auto* memo = new VerifiedChains;
  SSL_CTX_set_ex_data(ctx, memo_index(), memo);  // freed with the context
  SSL_CTX_set_cert_verify_callback(ctx, verify_remembering, memo);
}

VerifiedChains* VerifiedChains::of(SSL_CTX* ctx) {
  return static_cast<VerifiedChains*>(SSL_CTX_get_ex_data(ctx, memo_index()));
}

}  // namespace warden::server::tls
