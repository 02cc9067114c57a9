// libFuzzer target: a client connection's TLS on the server's side (server/tls/tls_channel.hpp
// over a socket pair, with the context make_context builds from the ssl.* keys, clientAuth
// need): what a client sends before, during and after a handshake. The first byte picks how
// the rest is used:
//   0 (and any value above 3): the client's bytes from the first, then its end: the record
//     layer and the ClientHello's parser;
//   1: a real client's handshake whose bytes to the server are changed where the input says
//     (after a byte choosing TLS 1.2 (even) or 1.3, triples of a 16-bit offset into the stream
//     and a byte to xor there): in TLS 1.2 the server also parses a damaged certificate, key
//     exchange and signature;
//   2: after a real handshake, the input as application data from the client, cut into
//     records and read by the server into small buffers, echoed back by the server: every
//     byte must arrive, in order, both ways;
//   3: after a real handshake, the input as raw bytes on the socket (records that do not
//     decrypt, cut records, alerts).
// In every mode the client ends at last, and the server's side must then end too (closed or
// failed) within a bounded number of steps: nothing may crash, leak or wait for ever.
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "server/tls/tls_channel.hpp"
#include "server/tls/tls_context.hpp"
#include "tests/common/tls_support.hpp"

namespace {

using warden::server::tls::TlsChannel;
using S = TlsChannel::Status;

struct Fixture {
  warden::test::Pki pki;
  std::shared_ptr<boost::asio::ssl::context> server = warden::server::tls::make_context(pki.settings(), true);
  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  Fixture() {
    X509_STORE_add_cert(SSL_CTX_get_cert_store(client), pki.ca.get());
    SSL_CTX_set_verify(client, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_use_certificate(client, pki.client.get());
    SSL_CTX_use_PrivateKey(client, pki.client_key.get());
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

// The two ends of a connection: the server's (fds[0], the channel's) and the client's, where
// this file writes and reads raw bytes.
struct Wire {
  int fds[2] = {-1, -1};
  Wire() {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) __builtin_trap();
    for (int fd : fds) fcntl(fd, F_SETFL, O_NONBLOCK);
  }
  ~Wire() {
    for (int fd : fds) close(fd);
  }
  void send(const std::string& b) {
    size_t off = 0;
    while (off < b.size()) {
      ssize_t n = ::send(fds[1], b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;  // full (inputs are far smaller than a socket pair holds) or gone
      off += static_cast<size_t>(n);
    }
  }
  std::string take() {
    std::string out;
    char buf[16384];
    ssize_t n;
    while ((n = read(fds[1], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }
  void end() { shutdown(fds[1], SHUT_WR); }
};

// An OpenSSL client on memory BIOs: what it sends is taken (and may be changed) before it goes
// on the wire.
struct Client {
  SSL* ssl;
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  explicit Client(bool tls12) : ssl(SSL_new(fixture().client)) {
    BIO_set_mem_eof_return(in, -1);  // empty: wait for more, not the end
    SSL_set_bio(ssl, in, out);
    SSL_set_connect_state(ssl);
    if (tls12) SSL_set_max_proto_version(ssl, TLS1_2_VERSION);
  }
  ~Client() { SSL_free(ssl); }
  std::string output() {
    std::string s;
    char buf[16384];
    int n;
    while ((n = BIO_read(out, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
    return s;
  }
  void input(const std::string& s) {
    if (!s.empty()) BIO_write(in, s.data(), static_cast<int>(s.size()));
  }
};

// The server's side of one connection: the handshake, then reads into `cap`-byte pieces (all
// it is given is kept in `heard`). False once the channel has ended.
struct Server {
  Wire& wire;
  TlsChannel channel{fixture().server->native_handle(), wire.fds[0]};
  bool handshaken = false;
  std::string heard;
  explicit Server(Wire& w) : wire(w) {}
  bool turn(size_t cap) {
    if (!handshaken) {
      auto st = channel.handshake();
      if (st != S::done) return st == S::want_read || st == S::want_write;
      handshaken = true;
    }
    char buf[4096];
    cap = std::min(cap, sizeof buf);
    for (int i = 0; i < 100000; ++i) {
      size_t got = 0;
      auto st = channel.read(buf, cap, got);
      if (got > cap) __builtin_trap();
      heard.append(buf, got);
      if (st != S::done) return st == S::want_read || st == S::want_write;
    }
    return true;
  }
  // After the client's end: the channel must end within a few turns.
  void must_end() {
    for (int i = 0; i < 16; ++i) {
      if (!turn(4096)) return;
      wire.take();
    }
    __builtin_trap();  // a connection whose client has gone never ended
  }
};

// A real handshake between `c` and `srv`, the client's bytes xored where `changes` says (stream
// offset -> byte); true when both sides finished.
bool handshake(Client& c, Server& srv, const std::map<size_t, uint8_t>& changes) {
  size_t offset = 0;
  for (int i = 0; i < 32; ++i) {
    SSL_do_handshake(c.ssl);
    std::string out = c.output();
    for (auto it = changes.lower_bound(offset); it != changes.end() && it->first < offset + out.size(); ++it)
      out[it->first - offset] = static_cast<char>(out[it->first - offset] ^ it->second);
    offset += out.size();
    srv.wire.send(out);
    if (!srv.turn(4096)) return false;
    c.input(srv.wire.take());
    if (srv.handshaken && SSL_is_init_finished(c.ssl)) return true;
  }
  return false;
}

void raw_from_the_first(const uint8_t* data, size_t size) {
  Wire w;
  Server srv(w);
  w.send(std::string(reinterpret_cast<const char*>(data), size));
  w.end();
  srv.must_end();
}

void changed_handshake(const uint8_t* data, size_t size) {
  if (size < 1) return;
  std::map<size_t, uint8_t> changes;
  for (size_t i = 1; i + 2 < size; i += 3) changes[data[i] | (static_cast<size_t>(data[i + 1]) << 8)] ^= data[i + 2];
  Wire w;
  Server srv(w);
  bool unchanged = true;
  for (const auto& [at, x] : changes) unchanged = unchanged && x == 0;
  Client c(data[0] % 2 == 0);
  if (!handshake(c, srv, changes) && unchanged) __builtin_trap();  // an unchanged handshake always finishes
  w.end();
  srv.must_end();
}

void application_data(const uint8_t* data, size_t size) {
  if (size < 1) return;
  size_t record = 1 + data[0] % 61, cap = 1 + data[0] % 97;
  std::string sent(reinterpret_cast<const char*>(data + 1), size - 1);
  Wire w;
  Server srv(w);
  Client c(data[0] % 2 == 0);
  if (!handshake(c, srv, {})) __builtin_trap();  // an unchanged handshake always finishes
  for (size_t off = 0; off < sent.size(); off += record) {
    size_t n = 0;
    if (SSL_write_ex(c.ssl, sent.data() + off, std::min(record, sent.size() - off), &n) != 1) __builtin_trap();
    w.send(c.output());
    if (!srv.turn(cap)) __builtin_trap();
  }
  if (srv.heard != sent) __builtin_trap();  // every byte, in order
  size_t echoed = 0;
  for (int i = 0; echoed < sent.size(); ++i) {
    if (i == 10000) __builtin_trap();  // the socket is emptied every time: a write must go on
    size_t n = 0;
    auto st = srv.channel.write(sent.data() + echoed, sent.size() - echoed, n);
    echoed += n;
    if (st != S::done && st != S::want_write) __builtin_trap();
    c.input(w.take());
  }
  c.input(w.take());
  if (warden::test::read_available(c.ssl) != sent) __builtin_trap();
  if (data[0] & 0x80) {
    SSL_shutdown(c.ssl);  // a close_notify first
    w.send(c.output());
  }
  w.end();
  srv.must_end();
}

void raw_after_handshake(const uint8_t* data, size_t size) {
  Wire w;
  Server srv(w);
  Client c(size > 0 && data[0] % 2 == 0);
  if (!handshake(c, srv, {})) __builtin_trap();
  w.send(std::string(reinterpret_cast<const char*>(data), size));
  w.end();
  srv.must_end();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  switch (data[0]) {
    case 1: changed_handshake(data + 1, size - 1); break;
    case 2: application_data(data + 1, size - 1); break;
    case 3: raw_after_handshake(data + 1, size - 1); break;
    default: raw_from_the_first(data + 1, size - 1); break;
  }
  ERR_clear_error();
  return 0;
}
