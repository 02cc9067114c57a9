#include "server/tls/tls_context.hpp"

#include "server/tls/verified_chains.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <boost/asio/ssl.hpp>
#include <fstream>
#include <sstream>

namespace warden::server::tls {

namespace asio = boost::asio;

namespace {
// A store larger than this is not a key or trust store (a mistyped path to a data file).
constexpr size_t max_store_bytes = 16u << 20;

template <class T, void (*Free)(T*)>
struct Owned {
  T* p = nullptr;
  Owned() = default;
  explicit Owned(T* x) : p(x) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (p) Free(p);
  }
  T* get() const { return p; }
  T* release() {
    T* x = p;
    p = nullptr;
    return x;
  }
};
void free_certs(STACK_OF(X509) * s) { sk_X509_pop_free(s, X509_free); }
using Bio = Owned<BIO, BIO_free_all>;
using Key = Owned<EVP_PKEY, EVP_PKEY_free>;
using Cert = Owned<X509, X509_free>;
using P12 = Owned<PKCS12, PKCS12_free>;

// OpenSSL's queued errors as one line (and the queue emptied).
std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  return s;
}

// One store, as its key names it: "FILE:LINE: ssl.keyStore.location=PATH".
struct Store {
  std::string what;  // for messages
  std::string path, password, type;
  std::string bytes;
};

Store read_store(const TlsSettings& s, const char* which) {
  bool key = std::string(which) == "keyStore";
  Store st;
  st.path = key ? s.key_store : s.trust_store;
  st.password = key ? s.key_store_password : s.trust_store_password;
  st.type = lower(key ? s.key_store_type : s.trust_store_type);
  st.what = s.where(std::string(which) + ".location") + "=" + st.path;
  std::ifstream f(st.path, std::ios::binary);
  if (!f) throw TlsSetupError(st.what + ": cannot be read: " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  st.bytes = ss.str();
  if (st.bytes.size() > max_store_bytes)
    throw TlsSetupError(st.what + ": larger than 16 MiB: not a key or trust store");
  if (st.bytes.empty()) throw TlsSetupError(st.what + ": the file is empty");
  bool jks = st.bytes.size() >= 4 && static_cast<unsigned char>(st.bytes[0]) == 0xfe &&
             static_cast<unsigned char>(st.bytes[1]) == 0xed && static_cast<unsigned char>(st.bytes[2]) == 0xfe &&
             static_cast<unsigned char>(st.bytes[3]) == 0xed;
  if (jks || st.type == "jks") {
    std::string p12 = st.path + ".p12";
    throw TlsSetupError(st.what + ": a JKS store, which Warden cannot read; convert it to PKCS12 with `keytool "
                        "-importkeystore -srckeystore " + st.path + " -destkeystore " + p12 +
                        " -deststoretype PKCS12` and set ssl." + which + ".location=" + p12 + " and ssl." + which +
                        ".type=PKCS12");
  }
  if (st.type.empty()) {  // as ZooKeeper: by the file's name, else by what it holds
    auto ends = [&](const char* ext) {
      std::string e(ext), p = lower(st.path);
      return p.size() >= e.size() && p.compare(p.size() - e.size(), e.size(), e) == 0;
    };
    if (ends(".p12") || ends(".pfx") || ends(".pkcs12")) st.type = "pkcs12";
    else if (ends(".pem") || ends(".crt") || ends(".key")) st.type = "pem";
    else st.type = st.bytes.find("-----BEGIN") != std::string::npos ? "pem" : "pkcs12";
  }
  if (st.type != "pem" && st.type != "pkcs12")
    throw TlsSetupError(s.where(std::string(which) + ".type") + "=" + st.type + ": Warden reads PEM and PKCS12 stores");
  return st;
}

int password_callback(char* buf, int size, int, void* user) {
  const std::string& p = *static_cast<const std::string*>(user);
  if (p.size() > static_cast<size_t>(size)) return -1;
  std::memcpy(buf, p.data(), p.size());
  return static_cast<int>(p.size());
}

struct Loaded {
  Key key;
  Cert cert;
  std::vector<X509*> chain;  // owned; freed by ~Loaded
  ~Loaded() {
    for (X509* c : chain) X509_free(c);
  }
};

void load_pem(const Store& st, bool want_key, Loaded& out) {
  Bio bio(BIO_new_mem_buf(st.bytes.data(), static_cast<int>(st.bytes.size())));
  while (X509* c = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    if (!out.cert.get() && want_key) out.cert.p = c;
    else out.chain.push_back(c);
  }
  ERR_clear_error();
  if (want_key) {
    Bio kbio(BIO_new_mem_buf(st.bytes.data(), static_cast<int>(st.bytes.size())));
    std::string password = st.password;
    out.key.p = PEM_read_bio_PrivateKey(kbio.get(), nullptr, password_callback, &password);
    if (!out.key.get()) {
      std::string detail = openssl_errors();
      if (st.bytes.find("PRIVATE KEY-----") == std::string::npos)
        throw TlsSetupError(st.what + ": holds no private key (a PEM key store holds the key and its certificates)");
      throw TlsSetupError(st.what + ": its private key cannot be read (wrong ssl.keyStore.password?): " + detail);
    }
    if (!out.cert.get()) throw TlsSetupError(st.what + ": holds no certificate");
  } else if (out.chain.empty()) {
    throw TlsSetupError(st.what + ": holds no PEM certificate");
  }
}

void load_pkcs12(const Store& st, bool want_key, Loaded& out) {
  Bio bio(BIO_new_mem_buf(st.bytes.data(), static_cast<int>(st.bytes.size())));
  P12 p12(d2i_PKCS12_bio(bio.get(), nullptr));
  if (!p12.get()) throw TlsSetupError(st.what + ": not a PKCS12 store (" + openssl_errors() + ")");
  const char* pass = st.password.c_str();
  if (PKCS12_mac_present(p12.get()) && !PKCS12_verify_mac(p12.get(), pass, -1)) {
    // A store made without a password has a MAC over the empty one, or none.
    if (st.password.empty() && PKCS12_verify_mac(p12.get(), nullptr, 0)) {
      pass = nullptr;
    } else {
      ERR_clear_error();
      throw TlsSetupError(st.what + ": wrong password (ssl." + std::string(want_key ? "keyStore" : "trustStore") +
                          ".password), or the store is damaged");
    }
  }
  STACK_OF(X509)* ca = nullptr;
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  if (!PKCS12_parse(p12.get(), pass, &key, &cert, &ca))
    throw TlsSetupError(st.what + ": cannot be read as PKCS12: " + openssl_errors());
  out.key.p = key;
  if (want_key) {
    out.cert.p = cert;
  } else if (cert) {
    out.chain.push_back(cert);
  }
  for (int i = 0; ca && i < sk_X509_num(ca); ++i) {
    X509* c = sk_X509_value(ca, i);
    X509_up_ref(c);
    out.chain.push_back(c);
  }
  free_certs(ca);
  if (want_key && (!out.key.get() || !out.cert.get()))
    throw TlsSetupError(st.what + ": holds no private key with its certificate");
  if (!want_key && out.chain.empty()) throw TlsSetupError(st.what + ": holds no certificate");
}

void load(const Store& st, bool want_key, Loaded& out) {
  ERR_clear_error();
  if (st.type == "pem")
    load_pem(st, want_key, out);
  else
    load_pkcs12(st, want_key, out);
}

// TLS 1.3's suites, named the same by IANA, Java and OpenSSL.
bool tls13_suite(const std::string& n) {
  return n == "TLS_AES_128_GCM_SHA256" || n == "TLS_AES_256_GCM_SHA384" || n == "TLS_CHACHA20_POLY1305_SHA256" ||
         n == "TLS_AES_128_CCM_SHA256" || n == "TLS_AES_128_CCM_8_SHA256";
}

void set_protocols(SSL_CTX* ctx, const TlsSettings& s) {
  std::vector<std::string> on = s.enabled_protocols;
  if (on.empty()) {
    if (!s.origins.count("protocol")) on = {"TLSv1.2", "TLSv1.3"};
    else if (s.protocol == "TLS") on = {"TLSv1.2", "TLSv1.3"};
    else if (s.protocol == "TLSv1.3") on = {"TLSv1.3", "TLSv1.2"};  // as ZooKeeper 3.8 derives it
    else on = {s.protocol};
  }
  auto enabled = [&](const char* p) { return std::find(on.begin(), on.end(), p) != on.end(); };
  long opts = SSL_OP_NO_SSLv2 | SSL_OP_NO_SSLv3 | SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION;
  if (!enabled("TLSv1")) opts |= SSL_OP_NO_TLSv1;
  if (!enabled("TLSv1.1")) opts |= SSL_OP_NO_TLSv1_1;
  if (!enabled("TLSv1.2")) opts |= SSL_OP_NO_TLSv1_2;
  if (!enabled("TLSv1.3")) opts |= SSL_OP_NO_TLSv1_3;
  SSL_CTX_set_options(ctx, opts);
  if (enabled("TLSv1") || enabled("TLSv1.1")) SSL_CTX_set_security_level(ctx, 0);  // else OpenSSL 3 refuses them
  SSL_CTX_set_min_proto_version(ctx, 0);
}

void set_ciphers(SSL_CTX* ctx, const TlsSettings& s) {
  if (s.ciphersuites.empty()) return;
  std::string v12, v13, unknown;
  for (const auto& name : s.ciphersuites) {
    if (tls13_suite(name)) {
      v13 += (v13.empty() ? "" : ":") + name;
      continue;
    }
    std::string ossl = OPENSSL_cipher_name(name.c_str());
    if (ossl == "(NONE)") {
      unknown += (unknown.empty() ? "" : ", ") + name;
      continue;
    }
    v12 += (v12.empty() ? "" : ":") + ossl;
  }
  if (!unknown.empty()) spdlog::warn("{}: OpenSSL does not know {}: left out", s.where("ciphersuites"), unknown);
  if (v12.empty() && v13.empty()) throw TlsSetupError(s.where("ciphersuites") + ": names no cipher suite OpenSSL has");
  // As Java: only the suites listed. A list without TLS 1.3's suites turns 1.3 off, and one
  // without 1.2's turns 1.2 off.
  if (!SSL_CTX_set_ciphersuites(ctx, v13.c_str()))
    throw TlsSetupError(s.where("ciphersuites") + ": " + openssl_errors());
  if (v13.empty()) SSL_CTX_set_options(ctx, SSL_OP_NO_TLSv1_3);
  if (v12.empty())
    SSL_CTX_set_options(ctx, SSL_OP_NO_TLSv1_2 | SSL_OP_NO_TLSv1_1 | SSL_OP_NO_TLSv1);
  else if (!SSL_CTX_set_cipher_list(ctx, v12.c_str()))
    throw TlsSetupError(s.where("ciphersuites") + ": " + openssl_errors());
}

// The chain a handshake sends: the key store's certificate with its intermediates, found once
// here in the key store's own chain and the trust store, without the root (a peer that can
// verify it holds it). Left to itself OpenSSL builds the chain again in every handshake that
// has no chain given, a verification each, and sends the root as well: under OpenSSL 3.0 that
// was a third of a TLS connection's CPU on each side. A chain that cannot be completed keeps
// what was found; one shorter than the key store's own keeps the key store's (as Java sends
// its key store's chain as it is).
void settle_chain(SSL_CTX* native, const Loaded& keys) {
  constexpr int flags = SSL_BUILD_CHAIN_FLAG_UNTRUSTED | SSL_BUILD_CHAIN_FLAG_NO_ROOT |
                        SSL_BUILD_CHAIN_FLAG_IGNORE_ERROR | SSL_BUILD_CHAIN_FLAG_CLEAR_ERROR;
  bool built = SSL_CTX_build_cert_chain(native, flags) == 1;
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(native, &chain);
  size_t found = chain ? static_cast<size_t>(sk_X509_num(chain)) : 0;
  if (!built || found < keys.chain.size()) {
    SSL_CTX_clear_chain_certs(native);
    for (X509* c : keys.chain) SSL_CTX_add1_chain_cert(native, c);
  }
  ERR_clear_error();
  SSL_CTX_set_mode(native, SSL_MODE_NO_AUTO_CHAIN);
}

}  // namespace

std::shared_ptr<asio::ssl::context> make_context(const TlsSettings& s, bool server) {
  if (s.key_store.empty())
    throw TlsSetupError(s.prefix + "keyStore.location is not set: TLS needs this server's key and certificate");
  auto ctx = std::make_shared<asio::ssl::context>(server ? asio::ssl::context::tls_server
                                                         : asio::ssl::context::tls_client);
  SSL_CTX* native = ctx->native_handle();
  Store ks = read_store(s, "keyStore");
  Loaded keys;
  load(ks, true, keys);
  ERR_clear_error();
  if (SSL_CTX_use_certificate(native, keys.cert.get()) != 1)
    throw TlsSetupError(ks.what + ": its certificate cannot be used: " + openssl_errors());
  for (X509* c : keys.chain)  // add1 takes a reference of its own
    if (SSL_CTX_add1_chain_cert(native, c) != 1)
      throw TlsSetupError(ks.what + ": a certificate of its chain cannot be used: " + openssl_errors());
  if (SSL_CTX_use_PrivateKey(native, keys.key.get()) != 1 || SSL_CTX_check_private_key(native) != 1)
    throw TlsSetupError(ks.what + ": the private key does not match the certificate: " + openssl_errors());
  if (!s.trust_store.empty()) {
    Store ts = read_store(s, "trustStore");
    Loaded trusted;
    load(ts, false, trusted);
    X509_STORE* store = SSL_CTX_get_cert_store(native);
    for (X509* c : trusted.chain)
      if (X509_STORE_add_cert(store, c) != 1) ERR_clear_error();  // a certificate listed twice
  } else {
    SSL_CTX_set_default_verify_paths(native);  // Java's default trust store, the system's here
  }
  settle_chain(native, keys);
  set_protocols(native, s);
  set_ciphers(native, s);
  if (server) {
    int mode = s.client_auth == "none" ? SSL_VERIFY_NONE
               : s.client_auth == "want" ? SSL_VERIFY_PEER
                                          : SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(native, mode, nullptr);
    VerifiedChains::attach(native);  // a chain presented again is not verified again
    static const unsigned char sid[] = "warden";
    SSL_CTX_set_session_id_context(native, sid, sizeof sid - 1);
    // Resumption by session id (the server's cache, which the Java client uses) stays; a
    // ticket would cost every new connection an encryption of its session, about a quarter
    // of a handshake's CPU under OpenSSL 3.0 (a connection storm is all new connections).
    SSL_CTX_set_options(native, SSL_OP_NO_TICKET);
  } else {
    SSL_CTX_set_verify(native, SSL_VERIFY_PEER, nullptr);
  }
  return ctx;
}

ServerTlsContext::ServerTlsContext(TlsSettings settings, bool server)
    : settings_(std::move(settings)), server_(server) {
  loaded_ = stamps();
  context_ = make_context(settings_, server_);
}

ServerTlsContext::~ServerTlsContext() = default;

std::vector<ServerTlsContext::FileStamp> ServerTlsContext::stamps() const {
  std::vector<FileStamp> out;
  for (const std::string* p : {&settings_.key_store, &settings_.trust_store}) {
    if (p->empty()) continue;
    FileStamp f;
    f.path = *p;
    struct stat st {};
    if (::stat(p->c_str(), &st) == 0) {
      f.mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
      f.size = static_cast<long long>(st.st_size);
      f.inode = static_cast<long long>(st.st_ino);
    }
    out.push_back(f);
  }
  return out;
}

std::shared_ptr<asio::ssl::context> ServerTlsContext::current() {
  std::lock_guard<std::mutex> hold(mutex_);
  auto now = stamps();  // two stat calls: small beside a handshake
  if (now == loaded_ || now == failed_) return context_;
  try {
    context_ = make_context(settings_, server_);
    loaded_ = now;
    failed_.clear();
    spdlog::info("{}: the key and trust stores changed on disk: new connections use them", settings_.where("keyStore.location"));
  } catch (const TlsSetupError& e) {
    failed_ = now;
    spdlog::warn("the TLS stores changed on disk but cannot be used, the previous ones stay: {}", e.what());
  }
  return context_;
}

}  // namespace warden::server::tls
