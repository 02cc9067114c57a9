#include "server/network/client_connections.hpp"

#include <spdlog/spdlog.h>

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/admin/four_letter.hpp"
#include "server/network/fan_out.hpp"
#include "server/network/send_queue.hpp"
#include "server/pipeline/request_pipeline.hpp"
#include "server/tls/tls_channel.hpp"
#include "server/tls/tls_context.hpp"
#include "server/tls/x509_name.hpp"
#include "wire/framing.hpp"

namespace warden::server {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// How much one read takes from a socket: large enough to take many pipelined requests at once.
// A connection waits for its socket to be readable and reads (a TLS one decrypts) into the one
// buffer of the server's thread, so an idle connection holds no read buffer.
constexpr size_t read_chunk = 64 * 1024;

char* read_buffer() {
  static thread_local std::vector<char> shared(read_chunk);
  return shared.data();
}
// A request buffer grown by a large request is given back once it has drained below this.
constexpr size_t keep_request_buffer = 256 * 1024;

class Connection;

// Bytes one connection may have queued for sending. Requests are not taken from a connection
// while its replies wait unsent (output_high_water), so what grows past this is what the server
// sends unasked (watch events) to a client that does not read: its connection is closed.
constexpr size_t max_queued_output = 64u << 20;

// A connection whose unsent replies reach this much takes no further request until they drain
// below half of it: a client reading large replies slowly (or never) holds the server's memory
// to about this, plus one reply, plus what its requests already in the pipeline answer.
size_t output_high_water(int32_t max_buffer) {
  return std::max<size_t>(4u << 20, 2 * static_cast<size_t>(max_buffer));
}

struct Registry {
  std::unordered_map<Connection*, std::shared_ptr<Connection>> live;
  std::unordered_map<std::string, int32_t> per_address;  // live connections by client address
  // Reading stops while too many requests are in flight; the connections that stopped wait
  // here until the pipeline drains.
  std::function<bool()> over_limit;
  std::vector<std::weak_ptr<Connection>> paused;
  // Connections given a frame outside a batch of their own requests (a committed write's reply,
  // a watch event, a close): written together once the io handler that queued them ends, by one
  // posted handler, so that a batch of commits costs each connection one write, not one a frame.
  std::vector<std::weak_ptr<Connection>> to_flush;
  bool flush_posted = false;
  int64_t handshakes = 0;  // TLS handshakes begun and not ended: outstanding_tls_handshake
  int64_t closed = 0;      // connections ended since the start (the heap's trim watches it)
};

constexpr unsigned char tls_record_handshake = 0x16;

using TlsStatus = tls::TlsChannel::Status;

class Connection final : public ClientLink, public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket s, RequestPipeline& server, Registry& reg, int32_t max_buffer, const FourLetterHandler& four,
             const TlsPolicy& tls)
      : socket_(std::move(s)), server_(server), registry_(reg), max_buffer_(max_buffer), four_letter_(four),
        policy_(tls), handshake_timer_(socket_.get_executor()) {
    boost::system::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    peer_ = ec ? std::string("unknown") : ep.address().to_string();
    endpoint_ = "/" + peer_ + ":" + (ec ? std::string("0") : std::to_string(ep.port()));
    socket_.set_option(tcp::no_delay(true), ec);
  }

  void start() {
    switch (policy_.mode) {
      case TlsPolicy::Mode::plain: return begin();
      case TlsPolicy::Mode::tls: return handshake();
      case TlsPolicy::Mode::either: return detect();
    }
  }

  void send(std::string frame) override {
    if (done_ || overflowed_ || failed_) return;
    if (backlog() + frame.size() > max_queued_output) {
      spdlog::warn("closing {}: more than {} MiB of replies wait unread", server_.describe(id_),
                   max_queued_output >> 20);
      overflowed_ = true;
      pending_.clear();
      close_requested_ = true;
      // Not from inside the pipeline's call: it may be iterating its connections.
      asio::post(socket_.get_executor(), [self = shared_from_this()] { self->finish(); });
      return;
    }
    if (takes_direct_write() && is_watch_event(frame)) {
      // A watch event with nothing before it: straight to the socket (waiting for the
      // handler's end would only delay it).
      iovec v{frame.data(), frame.size()};
      size_t sent = 0;
      if (!write_now(&v, 1, sent) || sent == frame.size()) return;
      frame.erase(0, sent);
    }
    enqueue(std::move(frame));
  }

  // Whether a frame may go to the socket now, before anything else (from any thread while the
  // server's thread waits: FanOutSender): plaintext, nothing queued or being written, open.
  bool takes_direct_write() const {
    return !tls_ && !writing_ && !corked_ && pending_.empty() && !done_ && !overflowed_ && !failed_;
  }
  int native_fd() { return socket_.native_handle(); }

  // What a fan-out's write of `frame` did (FanOutSender::Target's result): the rest is queued,
  // a failed socket ends the connection.
  void direct_written(ssize_t result, std::string_view frame) {
    if (result < 0) return fail_write();
    if (static_cast<size_t>(result) < frame.size()) enqueue(std::string(frame.substr(static_cast<size_t>(result))));
  }

  // In a fan-out's batch (ConnectionFanOut): a second frame for it waits for the first.
  bool fan_marked = false;

 private:
  void enqueue(std::string frame) {
    pending_.push(std::move(frame));
    ++queued_;
    if (writing_ || corked_ || deferred_) return;
    deferred_ = true;
    registry_.to_flush.push_back(weak_from_this());
    if (!registry_.flush_posted) {
      registry_.flush_posted = true;
      asio::post(socket_.get_executor(), [self = shared_from_this()] { self->flush_deferred(); });
    }
  }

 public:
  // A notification: its reply header's xid is -1.
  static bool is_watch_event(const std::string& frame) {
    return frame.size() >= 8 && std::memcmp(frame.data() + 4, "\xff\xff\xff\xff", 4) == 0;
  }

  // The posted handler: every connection that queued frames outside a batch writes them now.
  void flush_deferred() {
    registry_.flush_posted = false;
    std::vector<std::weak_ptr<Connection>> list;
    list.swap(registry_.to_flush);
    for (auto& weak : list)
      if (auto c = weak.lock()) {
        c->deferred_ = false;
        if (!c->done_ && !c->failed_ && !c->writing_ && !c->corked_ && !c->pending_.empty()) c->flush();
      }
  }

  void close() override {
    if (done_) return;
    close_requested_ = true;
    if (!writing_ && pending_.empty())
      asio::post(socket_.get_executor(), [self = shared_from_this()] { self->finish(); });
  }

  const std::string& peer_address() const override { return peer_; }
  std::string peer_endpoint() const override { return endpoint_; }
  size_t queued() const override { return queued_; }
  std::vector<wire::Id> transport_ids() const override { return certificate_ids_; }
  bool secure() const override { return tls_ != nullptr; }

  void finish() {
    if (done_) return;
    done_ = true;
    handshake_ended();
    // A session that served stays in the cache, so its client may resume it by id: OpenSSL
    // drops a session whose connection closes without a TLS shutdown, and Warden closes the
    // socket without one (the peer is often gone).
    if (tls_ && id_ != 0) tls_->keep_session();
    boost::system::error_code ec;
    handshake_timer_.cancel();
    socket_.close(ec);
    if (auto it = registry_.per_address.find(peer_); it != registry_.per_address.end() && --it->second <= 0)
      registry_.per_address.erase(it);
    server_.closed(id_);
    ++registry_.closed;
    registry_.live.erase(this);  // may drop the last reference: touch nothing after this
  }

 private:
  // The session layer starts once the transport is ready (after the TLS handshake, if any).
  void begin() {
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);  // read() reads only what is there
    id_ = server_.open(this);
    read();
  }

  // A handshake (or, on a unified port, the first byte) that has not come within the bound is
  // dropped: closing the socket ends whatever waits on it, and nobody else waits.
  void arm_handshake_timer() {
    handshake_timer_.expires_after(std::chrono::milliseconds(policy_.context->settings().handshake_timeout_ms));
    handshake_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->done_) return;
      spdlog::warn("TLS handshake from {} did not finish within {} ms (ssl.handshakeDetectionTimeoutMillis): "
                   "connection closed", self->endpoint_, self->policy_.context->settings().handshake_timeout_ms);
      if (self->tls_) self->server_.handshake_failed(true);  // not a unified port's silent plaintext
      self->finish();
    });
  }

  void detect() {
    arm_handshake_timer();
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->done_) return self->finish();
      unsigned char first = 0;
      size_t n = self->socket_.receive(asio::buffer(&first, 1), tcp::socket::message_peek, ec);
      if (ec || n == 0) return self->finish();
      if (first == tls_record_handshake) return self->handshake();
      self->handshake_timer_.cancel();
      self->begin();
    });
  }

  void handshake() {
    context_ = policy_.context->current();
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);
    try {
      tls_ = std::make_unique<tls::TlsChannel>(context_->native_handle(), socket_.native_handle());
    } catch (const std::exception& e) {
      spdlog::warn("TLS connection from {} not started: {}", endpoint_, e.what());
      return finish();
    }
    if (policy_.mode == TlsPolicy::Mode::tls) arm_handshake_timer();
    handshaking_ = true;
    ++registry_.handshakes;
    go_on_handshaking();
  }

  void go_on_handshaking() {
    auto st = tls_->handshake();
    if (st == TlsStatus::want_read || st == TlsStatus::want_write)
      return await(st, [](Connection& c) { c.go_on_handshaking(); });
    handshake_timer_.cancel();
    handshake_ended();
    if (st != TlsStatus::done) {
      spdlog::warn("TLS handshake from {} failed: {}", endpoint_, tls_->failure());
      server_.handshake_failed(false);
      return finish();
    }
    take_certificate();
    begin();
  }

  // Runs `then` once the socket is readable (want_read) or writable (want_write); a closed or
  // failed socket ends the connection instead.
  template <class Then>
  void await(TlsStatus st, Then then) {
    socket_.async_wait(st == TlsStatus::want_read ? tcp::socket::wait_read : tcp::socket::wait_write,
                       [self = shared_from_this(), then](boost::system::error_code ec) {
                         if (self->done_) return;
                         if (ec) return self->finish();
                         then(*self);
                       });
  }

  void handshake_ended() {
    if (handshaking_) --registry_.handshakes;
    handshaking_ = false;
  }

  // x509 authentication (ZooKeeper's X509AuthenticationProvider, which ZooKeeper 3.8 applies
  // on its TLS port whether or not authProvider.x509 names it): a verified client
  // certificate's subject is the id; the configured super user's is also super.
  void take_certificate() {
    SSL* ssl = tls_->native();
    X509* cert = SSL_get1_peer_certificate(ssl);
    if (!cert) return;
    if (SSL_get_verify_result(ssl) == X509_V_OK) {
      std::string subject = tls::java_subject_name(cert);
      certificate_ids_.push_back(wire::Id{"x509", subject});
      if (!policy_.x509_super_user.empty() && subject == policy_.x509_super_user)
        certificate_ids_.push_back(wire::Id{"super", subject});
    }
    X509_free(cert);
  }

  void read() {
    if (tls_) {
      if (tls_ended_) return finish();
      // What OpenSSL already holds comes first: the socket may have nothing more to say.
      if (tls_->pending())
        return asio::post(socket_.get_executor(), [self = shared_from_this()] {
          if (!self->done_) self->read_tls();
        });
      return await(tls_read_waits_, [](Connection& c) { c.read_tls(); });
    }
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
      if (ec) return self->finish();
      size_t n = self->socket_.read_some(asio::buffer(read_buffer(), read_chunk), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) return self->read();
      self->take(ec, read_buffer(), n);
    });
  }

  void read_tls() {
    size_t got = 0;
    auto st = tls_->read(read_buffer(), read_chunk, got);
    if (st == TlsStatus::closed || st == TlsStatus::failed) tls_ended_ = true;  // after what came with it
    // What the next read waits for: OpenSSL may need to send first (a TLS 1.3 key update's answer).
    tls_read_waits_ = st == TlsStatus::want_write ? st : TlsStatus::want_read;
    if (got > 0) return take({}, read_buffer(), got);
    if (st == TlsStatus::want_read || st == TlsStatus::want_write)
      return await(st, [](Connection& c) { c.read_tls(); });
    finish();
  }

  void take(boost::system::error_code ec, const char* data, size_t n) {
    if (ec) return finish();
    in_.append(data, n);
    consume();
    if (in_.capacity() > keep_request_buffer && in_.size() < keep_request_buffer / 4) in_.shrink_to_fit();
    read_on();
  }

  // Reads again unless the replies wait unsent (flush() takes up when they drain) or too many
  // requests are in flight (the pipeline's resume_reading() does).
  void read_on() {
    if (done_ || close_requested_ || held_) return;
    if (registry_.over_limit && registry_.over_limit())
      registry_.paused.push_back(weak_from_this());
    else
      read();
  }

  size_t backlog() const { return pending_.bytes() + sending_bytes_; }

 public:
  // After a pause for too many requests in flight.
  void resume() {
    if (!done_ && !close_requested_ && !held_) read();
  }

 private:

  // The requests in in_. Their replies are held back (corked) until all are answered and then
  // written together: one system call for a batch of pipelined requests.
  void consume() {
    corked_ = true;
    consume_frames();
    corked_ = false;
    if (!done_ && !writing_ && !failed_ && !pending_.empty()) flush();
  }

  void consume_frames() {
    // ZooKeeper reads a connection's first four bytes as a four-letter word when they spell
    // one (a frame length never does): the answer is plain text, then the connection closes.
    if (!first_bytes_seen_ && in_.size() >= 4) {
      first_bytes_seen_ = true;
      std::string_view word(in_.data(), 4);
      if (!tls_ && static_cast<unsigned char>(word[0]) == tls_record_handshake && word[1] == 3) {
        spdlog::warn("closing connection from {}: a TLS handshake on a plaintext port (TLS is taken on "
                     "secureClientPort, or here with client.portUnification=true)", endpoint_);
        in_.clear();
        close();
        return;
      }
      if (is_four_letter_word(word)) {
        std::string text = four_letter_(word, id_);
        in_.clear();
        if (!text.empty()) send(std::move(text));
        close();
        return;
      }
    }
    size_t off = 0;
    while (!close_requested_ && !done_) {
      if (backlog() >= output_high_water(max_buffer_)) {
        held_ = true;  // the rest of in_ waits for the replies to drain
        break;
      }
      auto scan = wire::scan_frame(std::string_view(in_).substr(off), max_buffer_);
      if (scan.status == wire::FrameStatus::incomplete) break;
      if (scan.status == wire::FrameStatus::bad_length) {
        spdlog::warn("closing {}: frame length {} is negative or above jute.maxbuffer {}", server_.describe(id_),
                     scan.length, max_buffer_);
        close();
        break;
      }
      off += scan.consumed;
      server_.receive(id_, scan.payload);
    }
    in_.erase(0, off);
  }

  // Writes what a plaintext socket takes now, without waiting (`sent`: how much). False when the
  // socket failed: nothing more is sent and the connection ends, from the executor (the caller
  // may be the pipeline, going through its connections).
  bool write_now(const iovec* v, size_t n, size_t& sent) {
    msghdr m{};
    m.msg_iov = const_cast<iovec*>(v);
    m.msg_iovlen = n;
    for (;;) {
      ssize_t r = ::sendmsg(socket_.native_handle(), &m, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (r >= 0) {
        sent = static_cast<size_t>(r);
        return true;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        sent = 0;
        return true;
      }
      break;
    }
    fail_write();
    return false;
  }

  void fail_write() {
    failed_ = true;
    pending_.clear();
    close_requested_ = true;
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->finish(); });
  }

  // Writes everything queued, as one gathered write: at once what the socket takes, the rest
  // when it is writable.
  void flush() {
    writing_ = true;
    sending_bytes_ = pending_.bytes();
    pending_.take(sending_);
    queued_ = 0;
    if (tls_) return flush_tls();
    size_t sent = 0;
    constexpr size_t most = 64;
    iovec v[most];
    size_t n = 0;
    for (auto& b : sending_) {
      if (n == most) break;
      v[n++] = iovec{b.data(), b.size()};
    }
    bool ok = write_now(v, n, sent);
    if (!ok || sent == sending_bytes_) {
      written();
      // What a finished write does next (resume a held connection, close one asked to close)
      // runs from the executor: the caller may be the pipeline.
      if (ok && (held_ || close_requested_))
        asio::post(socket_.get_executor(), [self = shared_from_this()] { self->after_write(); });
      return;
    }
    iov_.clear();
    size_t skip = sent;
    for (const auto& b : sending_) {
      if (skip >= b.size()) {
        skip -= b.size();
        continue;
      }
      iov_.emplace_back(b.data() + skip, b.size() - skip);
      skip = 0;
    }
    auto done = [self = shared_from_this()](boost::system::error_code ec, size_t) {
      self->written();
      if (ec || self->overflowed_ || self->failed_) return self->finish();
      self->after_write();
    };
    asio::async_write(socket_, iov_, std::move(done));
  }

  // flush() over TLS: what OpenSSL can send now, the rest when the socket is ready.
  void flush_tls() {
    tls_sent_ = {0, 0};
    auto st = write_tls();
    if (st == TlsStatus::want_read || st == TlsStatus::want_write)
      return await(st, [](Connection& c) { c.go_on_writing_tls(); });
    written();
    if (st != TlsStatus::done) return fail_write();
    // As for plaintext: what a finished write does next runs from the executor.
    if (held_ || close_requested_)
      asio::post(socket_.get_executor(), [self = shared_from_this()] { self->after_write(); });
  }

  // Sends sending_ over TLS from where the last call stopped (tls_sent_: a buffer and an
  // offset in it); done when all is sent.
  TlsStatus write_tls() {
    auto& [buffer, offset] = tls_sent_;
    for (; buffer < sending_.size(); ++buffer, offset = 0) {
      const std::string& b = sending_[buffer];
      size_t sent = 0;
      auto st = tls_->write(b.data() + offset, b.size() - offset, sent);
      offset += sent;
      if (st != TlsStatus::done) return st;
    }
    return TlsStatus::done;
  }

  void go_on_writing_tls() {
    auto st = write_tls();
    if (st == TlsStatus::want_read || st == TlsStatus::want_write)
      return await(st, [](Connection& c) { c.go_on_writing_tls(); });
    written();
    if (st != TlsStatus::done || overflowed_ || failed_) return finish();
    after_write();
  }

  // The write in progress is done: its buffers go back to the queue for reuse.
  void written() {
    writing_ = false;
    sending_bytes_ = 0;
    for (auto& b : sending_) pending_.recycle(std::move(b));
    sending_.clear();
  }

  // After a write: a connection held while its replies drained reads again, what queued
  // meanwhile goes out, and a connection asked to close closes once all is written.
  void after_write() {
    if (done_) return;
    if (held_ && pending_.bytes() < output_high_water(max_buffer_) / 2) {
      held_ = false;
      consume();
      read_on();
      if (done_) return;
    }
    if (writing_ || failed_) return;
    if (!pending_.empty())
      flush();
    else if (close_requested_)
      finish();
  }

  tcp::socket socket_;
  RequestPipeline& server_;
  Registry& registry_;
  int32_t max_buffer_;
  const FourLetterHandler& four_letter_;
  const TlsPolicy& policy_;
  std::shared_ptr<asio::ssl::context> context_;  // the stores this connection was accepted with
  std::unique_ptr<tls::TlsChannel> tls_;
  bool tls_ended_ = false;  // a TLS read saw the connection's end (or an error) after data
  TlsStatus tls_read_waits_ = TlsStatus::want_read;  // what the last TLS read stopped for
  std::pair<size_t, size_t> tls_sent_;  // a TLS write's progress: buffer of sending_, offset
  asio::steady_timer handshake_timer_;
  bool handshaking_ = false;  // counted in registry_.handshakes
  std::vector<wire::Id> certificate_ids_;
  ConnId id_ = 0;
  std::string peer_, endpoint_;
  size_t queued_ = 0;
  bool first_bytes_seen_ = false;
  bool overflowed_ = false;
  std::string in_;
  SendQueue pending_;                  // frames not yet written
  std::vector<std::string> sending_;  // the buffers the write in progress sends
  size_t sending_bytes_ = 0;
  std::vector<asio::const_buffer> iov_;
  bool writing_ = false, close_requested_ = false, done_ = false;
  bool corked_ = false;  // consume() is answering a batch: replies wait for its end
  bool deferred_ = false;  // in registry_.to_flush: written when the running io handler ends
  bool failed_ = false;  // a write failed: the connection is ending
  bool held_ = false;  // requests wait in in_ while the replies drain (output_high_water)
};

// The pipeline's fan-outs (request_pipeline.hpp's FanOut) over the client connections: a watch event
// goes to every watcher with nothing queued before it at once, over the FanOutSender's threads;
// the others queue it as any frame. The runtime's only ClientLink is its Connection.
class ConnectionFanOut final : public FanOut {
 public:
  explicit ConnectionFanOut(unsigned helpers) : sender_(helpers) {}

  void send_to_all(const std::vector<ClientLink*>& links, std::string_view frame) override {
    targets_.clear();
    direct_.clear();
    later_.clear();
    for (ClientLink* l : links) {
      auto* c = static_cast<Connection*>(l);
      if (c->takes_direct_write() && !c->fan_marked) {
        c->fan_marked = true;
        direct_.push_back(c);
        targets_.push_back({c->native_fd(), 0});
      } else {
        later_.push_back(c);
      }
    }
    sender_.send_all(targets_, frame);
    for (size_t i = 0; i < direct_.size(); ++i) {
      direct_[i]->fan_marked = false;
      direct_[i]->direct_written(targets_[i].result, frame);
    }
    for (Connection* c : later_) c->send(std::string(frame));
  }

 private:
  FanOutSender sender_;
  // One fan-out's lists, kept for their capacity.
  std::vector<FanOutSender::Target> targets_;
  std::vector<Connection*> direct_, later_;
};

}  // namespace

struct ClientConnections::State {
  State(asio::io_context& io, RequestPipeline& server, Limits limits, FourLetterHandler four)
      : io(io), server(server), limits(limits), four_letter(std::move(four)) {}
  asio::io_context& io;
  RequestPipeline& server;
  Limits limits;
  FourLetterHandler four_letter;
  Registry registry;
  ConnectionFanOut fan_out{FanOutSender::helpers_for_this_machine()};
};

ClientConnections::ClientConnections(asio::io_context& io, RequestPipeline& server, Limits limits,
                                     FourLetterHandler four)
    : state_(std::make_unique<State>(io, server, limits, std::move(four))) {}

ClientConnections::~ClientConnections() = default;

bool ClientConnections::adopt(int fd, const TlsPolicy& policy) {
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
  boost::system::error_code ec;
  tcp::socket s(state_->io);
  s.assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
  if (ec) {
    spdlog::warn("cannot take a new connection: {}", ec.message());
    ::close(fd);
    return true;  // not a refusal: the descriptor was bad
  }
  std::string peer = s.remote_endpoint(ec).address().to_string();
  auto& registry = state_->registry;
  int32_t& count = registry.per_address[peer];
  if (state_->limits.per_address > 0 && count >= state_->limits.per_address) {
    // As ZooKeeper: the new connection is closed at once, the others are untouched.
    spdlog::warn("too many connections from {}: max is {}", peer, state_->limits.per_address);
    s.close(ec);
    return false;
  }
  ++count;
  auto c = std::make_shared<Connection>(std::move(s), state_->server, registry, state_->limits.max_buffer,
                                        state_->four_letter, policy);
  registry.live.emplace(c.get(), c);
  c->start();
  return true;
}

void ClientConnections::pause_while(std::function<bool()> over) { state_->registry.over_limit = std::move(over); }

void ClientConnections::resume_paused() {
  auto& registry = state_->registry;
  if (registry.paused.empty() || (registry.over_limit && registry.over_limit())) return;
  auto paused = std::move(registry.paused);
  registry.paused.clear();
  for (auto& w : paused)
    if (auto c = w.lock()) c->resume();
}

FanOut& ClientConnections::fan_out() { return state_->fan_out; }

int64_t ClientConnections::handshakes() const { return state_->registry.handshakes; }

int64_t ClientConnections::closed() const { return state_->registry.closed; }

void ClientConnections::close_all() {
  auto live = state_->registry.live;  // finish() edits the registry
  for (auto& [p, c] : live) c->finish();
}

}  // namespace warden::server
