#pragma once
// The server's side of one TLS client connection, run by OpenSSL straight on the connection's
// socket: the handshake, reads and writes, each a call that never blocks and says what it
// waits for. The caller (the connection, on the server's thread) waits for its socket to be
// readable or writable and calls again.
//
// Asio's TLS stream puts a BIO pair and two record-sized buffers of its own (zero-filled at
// the stream's birth) between OpenSSL and the socket and copies every byte through them: about
// 70 KiB of new memory touched per connection, and a copy each way. Here OpenSSL receives from
// and sends to the socket itself (recv and send with MSG_NOSIGNAL: a peer gone raises no
// SIGPIPE), reads ahead as much as has come, and gives its record buffers back whenever they
// are empty (SSL_MODE_RELEASE_BUFFERS), so an idle TLS connection holds only OpenSSL's state.

#include <cstddef>
#include <functional>
#include <string>

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace warden::server::tls {

class TlsChannel {
 public:
  enum class Status {
    done,        // finished: the handshake, or all of a write, or a read that filled its buffer
    want_read,   // call again once the socket is readable
    want_write,  // call again once the socket is writable
    closed,      // the peer ended the connection (a close_notify, or the socket's end)
    failed,      // a protocol or socket error: failure() says what
  };

  // The server's side of the connection on `fd` (non-blocking; not owned: the caller closes
  // it). Throws std::runtime_error if OpenSSL cannot make one.
  TlsChannel(SSL_CTX* ctx, int fd);
  ~TlsChannel();
  TlsChannel(const TlsChannel&) = delete;
  TlsChannel& operator=(const TlsChannel&) = delete;

  Status handshake();

  // Decrypts what has come into `buf` (at most `cap` bytes); `got`: how much. done when `buf`
  // filled (more may be waiting: call again); otherwise what stopped it, after taking all there
  // was (data taken and an end seen in the same call: `got` bytes and closed or failed).
  Status read(char* buf, size_t cap, size_t& got);

  // Bytes OpenSSL holds that a read() would return (or a part of a record, for which it needs
  // the socket): read() before waiting for the socket.
  bool pending() const;

  // Encrypts and sends `data`; `sent`: how much of it was taken. done when all was; otherwise
  // the rest waits, and the next call passes the same bytes from where this one stopped.
  Status write(const char* data, size_t len, size_t& sent);

  // Lets the session be resumed by id although the connection ends without a close_notify
  // (the caller closes the socket as it is: the peer is often gone).
  void keep_session();

  SSL* native() const { return ssl_; }

  // Why the last call ended closed or failed: OpenSSL's reason ("certificate verify failed",
  // "wrong version number", "peer did not return a certificate"), or "the client closed the
  // connection".
  const std::string& failure() const { return failure_; }

 private:
  Status status_of(int result);
  // Calls `op` (an SSL_read_ex or SSL_write_ex from offset `at`, `n` what it moved) until `len`
  // bytes have moved or it stops.
  Status repeat(const std::function<int(size_t at, size_t& n)>& op, size_t len, size_t& moved);

  SSL* ssl_ = nullptr;
  std::string failure_;
};

}  // namespace warden::server::tls
