#include "server/tls/tls_channel.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <stdexcept>

namespace warden::server::tls {
namespace {

// The socket a channel's BIO reads and writes, and whether its end was seen.
struct SocketEnd {
  int fd = -1;
  bool eof = false;
};

SocketEnd& end_of(BIO* b) { return *static_cast<SocketEnd*>(BIO_get_data(b)); }

int socket_write(BIO* b, const char* data, int len) {
  BIO_clear_retry_flags(b);
  for (;;) {
    ssize_t r = ::send(end_of(b).fd, data, static_cast<size_t>(len), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r >= 0) return static_cast<int>(r);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(b);
    return -1;
  }
}

int socket_read(BIO* b, char* buf, int len) {
  BIO_clear_retry_flags(b);
  for (;;) {
    ssize_t r = ::recv(end_of(b).fd, buf, static_cast<size_t>(len), MSG_DONTWAIT);
    if (r > 0) return static_cast<int>(r);
    if (r == 0) {
      end_of(b).eof = true;
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(b);
    return -1;
  }
}

long socket_ctrl(BIO* b, int cmd, long, void*) {
  switch (cmd) {
    case BIO_CTRL_FLUSH: return 1;  // every write went to the socket at once
    case BIO_CTRL_EOF: return end_of(b).eof ? 1 : 0;
    default: return 0;
  }
}

int socket_create(BIO* b) {
  BIO_set_data(b, new SocketEnd);
  BIO_set_init(b, 1);
  return 1;
}

int socket_destroy(BIO* b) {
  delete static_cast<SocketEnd*>(BIO_get_data(b));
  BIO_set_data(b, nullptr);
  return 1;
}

BIO_METHOD* socket_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "warden socket");
    if (!m || !BIO_meth_set_write(m, socket_write) || !BIO_meth_set_read(m, socket_read) ||
        !BIO_meth_set_ctrl(m, socket_ctrl) || !BIO_meth_set_create(m, socket_create) ||
        !BIO_meth_set_destroy(m, socket_destroy))
      throw std::runtime_error("OpenSSL cannot make a BIO method");
    return m;
  }();
  return method;
}

// The first error OpenSSL queued (the cause; later ones say where it surfaced), as its reason.
std::string first_reason() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "TLS error";
  if (ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
    return "the client closed the connection";
  const char* reason = ERR_reason_error_string(e);
  return reason ? reason : "TLS error " + std::to_string(e);
}

}  // namespace

TlsChannel::TlsChannel(SSL_CTX* ctx, int fd) : ssl_(SSL_new(ctx)) {
  BIO* bio = ssl_ ? BIO_new(socket_method()) : nullptr;
  if (!bio) {
    SSL_free(ssl_);
    ERR_clear_error();
    throw std::runtime_error("OpenSSL cannot make a TLS connection");
  }
  end_of(bio).fd = fd;
  SSL_set_bio(ssl_, bio, bio);  // the SSL owns it
  SSL_set_accept_state(ssl_);
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  SSL_set_read_ahead(ssl_, 1);  // one receive takes every record that has come
  // The socket's end without a close_notify is the end (ZooKeeper's frames carry their own
  // lengths, so a cut one is seen), not an error answered with an alert to a closed socket.
  SSL_set_options(ssl_, SSL_OP_IGNORE_UNEXPECTED_EOF);
}

TlsChannel::~TlsChannel() { SSL_free(ssl_); }

TlsChannel::Status TlsChannel::status_of(int result) {
  int saved = errno;  // what the socket said, if it was the socket
  int error = SSL_get_error(ssl_, result);
  switch (error) {
    case SSL_ERROR_WANT_READ: return Status::want_read;
    case SSL_ERROR_WANT_WRITE: return Status::want_write;
    case SSL_ERROR_ZERO_RETURN:
      failure_ = "the client closed the connection";
      ERR_clear_error();
      return Status::closed;
    case SSL_ERROR_SYSCALL:
      if (ERR_peek_error() == 0) {
        // The socket's end without a close_notify (or reset, the client having left replies
        // unread), or another socket error.
        if (saved == 0 || saved == ECONNRESET || saved == EPIPE) {
          failure_ = "the client closed the connection";
          return Status::closed;
        }
        failure_ = std::strerror(saved);
        return Status::failed;
      }
      failure_ = first_reason();
      return Status::failed;
    default:
      failure_ = first_reason();
      return failure_ == "the client closed the connection" ? Status::closed : Status::failed;
  }
}

TlsChannel::Status TlsChannel::handshake() {
  ERR_clear_error();
  errno = 0;
  int r = SSL_do_handshake(ssl_);
  return r == 1 ? Status::done : status_of(r);
}

TlsChannel::Status TlsChannel::repeat(const std::function<int(size_t at, size_t& n)>& op, size_t len,
                                      size_t& moved) {
  moved = 0;
  while (moved < len) {
    ERR_clear_error();
    errno = 0;
    size_t n = 0;
    int r = op(moved, n);
    if (r != 1) return status_of(r);
    moved += n;
  }
  return Status::done;
}

TlsChannel::Status TlsChannel::read(char* buf, size_t cap, size_t& got) {
  return repeat([&](size_t at, size_t& n) { return SSL_read_ex(ssl_, buf + at, cap - at, &n); }, cap, got);
}

bool TlsChannel::pending() const { return SSL_has_pending(ssl_) == 1; }

TlsChannel::Status TlsChannel::write(const char* data, size_t len, size_t& sent) {
  return repeat([&](size_t at, size_t& n) { return SSL_write_ex(ssl_, data + at, len - at, &n); }, len, sent);
}

void TlsChannel::keep_session() { SSL_set_shutdown(ssl_, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN); }

}  // namespace warden::server::tls
