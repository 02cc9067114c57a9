// A server context's memo of verified client chains (server/tls/verified_chains.hpp), driven
// through real handshakes in memory, and a client connection's TLS channel (tls_channel.hpp)
// over a socket pair: certificates made here with OpenSSL, the server's context built by
// make_context from PEM files as zoo.cfg's ssl.* keys name them.
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ssl.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "server/tls/tls_channel.hpp"
#include "server/tls/tls_context.hpp"
#include "server/tls/verified_chains.hpp"
#include "tests/common/tls_support.hpp"

using namespace warden::server::tls;
using namespace warden::test;

namespace {

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

namespace {

// A TlsChannel (the server's side) and an OpenSSL client on the two ends of a socket pair,
// both non-blocking, driven in turn from this thread.
struct ChannelPair {
  Pki pki;
  std::shared_ptr<boost::asio::ssl::context> server_ctx = make_context(pki.settings(), true);
  SSL_CTX* client_ctx = SSL_CTX_new(TLS_client_method());
  int fds[2] = {-1, -1};
  SSL* client = nullptr;
  std::unique_ptr<TlsChannel> server;

  ChannelPair() {
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    for (int fd : fds) fcntl(fd, F_SETFL, O_NONBLOCK);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(client_ctx), pki.ca.get());
    SSL_CTX_set_verify(client_ctx, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_use_certificate(client_ctx, pki.client.get());
    SSL_CTX_use_PrivateKey(client_ctx, pki.client_key.get());
    client = SSL_new(client_ctx);
    SSL_set_fd(client, fds[1]);
    SSL_set_connect_state(client);
    server = std::make_unique<TlsChannel>(server_ctx->native_handle(), fds[0]);
  }
  ~ChannelPair() {
    server.reset();
    SSL_free(client);
    SSL_CTX_free(client_ctx);
    for (int fd : fds)
      if (fd >= 0) close(fd);
    ERR_clear_error();
  }
  // Both sides' handshakes, in turn until both are done; the server's last status.
  TlsChannel::Status handshake() {
    auto st = TlsChannel::Status::want_read;
    bool client_done = false;
    for (int i = 0; i < 50 && !(client_done && st == TlsChannel::Status::done); ++i) {
      if (!client_done) client_done = SSL_do_handshake(client) == 1;
      if (st != TlsChannel::Status::done) st = server->handshake();
      if (st == TlsChannel::Status::failed || st == TlsChannel::Status::closed) break;
    }
    return st;
  }
  // What the client can read now.
  std::string client_reads() { return read_available(client); }
  void client_writes(const std::string& data) {
    size_t n = 0;
    REQUIRE(SSL_write_ex(client, data.data(), data.size(), &n) == 1);
    REQUIRE(n == data.size());
  }
  void close_client() {
    close(fds[1]);
    fds[1] = -1;
  }
};

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

}  // namespace

TEST_CASE("a TLS channel passes both ways whatever the socket takes at a time", "[tls]") {
  using S = TlsChannel::Status;
  ChannelPair p;
  REQUIRE(p.handshake() == S::done);
  X509* peer = SSL_get1_peer_certificate(p.server->native());
  CHECK(peer != nullptr);
  X509_free(peer);

  // Three records from the client: one read takes them all.
  std::string sent;
  for (const std::string& part : {pattern(100), pattern(5000), pattern(17000)}) {
    p.client_writes(part);
    sent += part;
  }
  std::vector<char> buf(64 * 1024);
  size_t got = 0;
  CHECK(p.server->read(buf.data(), buf.size(), got) == S::want_read);
  CHECK(std::string(buf.data(), got) == sent);
  CHECK_FALSE(p.server->pending());

  // A read that fills its buffer stops there, and says more is held.
  p.client_writes(pattern(3000));
  CHECK(p.server->read(buf.data(), 1000, got) == S::done);
  CHECK(got == 1000);
  CHECK(p.server->pending());
  size_t rest = 0;
  CHECK(p.server->read(buf.data() + 1000, buf.size() - 1000, rest) == S::want_read);
  CHECK(std::string(buf.data(), got + rest) == pattern(3000));

  // 4 MiB from the server, more than the socket holds: the rest waits, then goes on from where
  // it stopped, and arrives whole and in order.
  std::string big = pattern(4 << 20);
  size_t off = 0;
  std::string heard;
  int waits = 0;
  while (off < big.size()) {
    size_t n = 0;
    auto st = p.server->write(big.data() + off, big.size() - off, n);
    off += n;
    if (st == S::want_write) ++waits;
    else REQUIRE(st == S::done);
    heard += p.client_reads();
  }
  heard += p.client_reads();
  CHECK(waits > 0);
  CHECK(heard.size() == big.size());
  CHECK(heard == big);
}

TEST_CASE("a TLS channel's ends: the client's close, garbage, a gone peer", "[tls]") {
  using S = TlsChannel::Status;
  SECTION("plaintext where a handshake should be: failed, with OpenSSL's reason") {
    ChannelPair p;
    std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    REQUIRE(write(p.fds[1], junk.data(), junk.size()) == static_cast<ssize_t>(junk.size()));
    CHECK(p.server->handshake() == S::failed);
    CHECK_FALSE(p.server->failure().empty());
    CHECK(p.server->failure() != "TLS error");
  }
  SECTION("a client gone before its handshake: closed") {
    ChannelPair p;
    p.close_client();
    CHECK(p.server->handshake() == S::closed);
    CHECK(p.server->failure() == "the client closed the connection");
  }
  SECTION("a truncated handshake record: the client closed mid-way") {
    ChannelPair p;
    const unsigned char hello_start[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00};
    REQUIRE(write(p.fds[1], hello_start, sizeof hello_start) == sizeof hello_start);
    CHECK(p.server->handshake() == S::want_read);
    p.close_client();
    CHECK(p.server->handshake() == S::closed);
  }
  SECTION("the client's close_notify after data: the data, then closed") {
    ChannelPair p;
    REQUIRE(p.handshake() == S::done);
    p.client_writes("last words");
    SSL_shutdown(p.client);
    char buf[100];
    size_t got = 0;
    CHECK(p.server->read(buf, sizeof buf, got) == S::closed);
    CHECK(std::string(buf, got) == "last words");
  }
  SECTION("the client's socket closed without close_notify: closed") {
    ChannelPair p;
    REQUIRE(p.handshake() == S::done);
    p.close_client();
    char buf[100];
    size_t got = 0;
    CHECK(p.server->read(buf, sizeof buf, got) == S::closed);
  }
  SECTION("writing to a peer that is gone fails, and raises no SIGPIPE") {
    ChannelPair p;
    REQUIRE(p.handshake() == S::done);
    p.close_client();
    std::string chunk = pattern(64 * 1024);
    auto st = S::done;
    for (int i = 0; i < 100 && st == S::done; ++i) {
      size_t n = 0;
      st = p.server->write(chunk.data(), chunk.size(), n);
    }
    CHECK((st == S::failed || st == S::closed));
  }
}

TEST_CASE("a TLS 1.3 key update read while the socket is full waits to write, then goes on", "[tls]") {
  using S = TlsChannel::Status;
  ChannelPair p;
  REQUIRE(p.handshake() == S::done);
  REQUIRE(SSL_version(p.server->native()) == TLS1_3_VERSION);
  // The server's side of the socket full: nothing more can be sent until the client reads.
  std::string chunk = pattern(64 * 1024);
  size_t off = 0;  // of the chunk the full socket stopped (a write goes on with the same bytes)
  for (int i = 0; i < 1000; ++i) {
    size_t n = 0;
    S w = p.server->write(chunk.data() + off, chunk.size() - off, n);
    off = (off + n) % chunk.size();
    if (w != S::done) break;
  }
  // The client asks for a key update (its answer must be sent) and sends a request after it.
  REQUIRE(SSL_key_update(p.client, SSL_KEY_UPDATE_REQUESTED) == 1);
  p.client_writes("ping");
  char buf[100];
  size_t got = 0;
  S st = p.server->read(buf, sizeof buf, got);
  std::string heard(buf, got);
  // Whatever OpenSSL does with the answer while the socket is full, the request is not lost:
  // once the client has read, the server reads (and writes) on.
  std::string drained;
  for (int i = 0; i < 200 && heard.size() < 4; ++i) {
    drained += p.client_reads();
    if (st == S::want_write || st == S::want_read || st == S::done) {
      size_t more = 0;
      st = p.server->read(buf, sizeof buf, more);
      heard.append(buf, more);
    }
  }
  CHECK(heard == "ping");
  CHECK((st == S::want_read || st == S::done));
  // The server's writes go on (the rest of the stopped chunk, then an answer), its key update
  // with them; the client reads on with the new keys.
  S w = S::want_write;
  for (int i = 0; i < 200 && w != S::done; ++i) {
    size_t n = 0;
    w = p.server->write(chunk.data() + off, chunk.size() - off, n);
    off += n;
    drained += p.client_reads();
  }
  REQUIRE(w == S::done);
  size_t sent = 0;
  for (int i = 0; i < 200 && (w = p.server->write("pong", 4, sent)) != S::done; ++i) drained += p.client_reads();
  for (int i = 0; i < 200 && drained.size() < 4; ++i) drained += p.client_reads();
  drained += p.client_reads();
  CHECK(w == S::done);
  CHECK(drained.substr(drained.size() - 4) == "pong");
}
