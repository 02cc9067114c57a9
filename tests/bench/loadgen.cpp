// warden-loadgen: a load generator cheap enough not to be the bottleneck. It speaks the
// ZooKeeper protocol directly: requests are encoded once and re-sent as the same bytes,
// each connection keeps `depth` requests in flight, and one thread polls a group of
// connections. It prints throughput, latency percentiles and its own CPU time, so a reader
// can see whether the client or the server was the limit.
//
// --tls-ca FILE [--tls-cert FILE --tls-key FILE] speaks TLS (OpenSSL, non-blocking, TLS 1.2
// as ZooKeeper 3.8's Java client). --op connect opens --connections sessions at once (TCP,
// TLS, the session handshake, all in flight together) and reports the time until the last is
// established. --op fanout opens --connections watchers, arms a data (or, with --fan-kind
// child, a child) watch on each, and times one change's notifications to all of them, over
// --rounds rounds. --op fanout-floor and --op idle-floor measure the same with no server (a bare
// child process of their own at the other end): this machine's floor for each.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "server/network/fan_out.hpp"
#include "server/tls/verified_chains.hpp"
#include "wire/framing.hpp"
#include "wire/records.hpp"

using namespace warden::wire;
using warden::server::FanOutSender;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  std::vector<int> ports;  // --ports a,b,c: connection i goes to ports[i % n] (an ensemble)
  std::string op = "get";
  int connections = 8;
  int depth = 32;
  int threads = 1;
  double seconds = 5;
  long max_ops = 5'000'000;  // a bound on the run whatever its duration
  int value_size = 100;
  int rounds = 5;                  // --op fanout: rounds
  std::string fan_kind = "data";   // --op fanout: data or child watches
  std::string prefix = "/bench";   // the node under which each connection has its own
  int multi_ops = 1000;            // --op multi: setData ops in each multi
  int session_timeout_ms = 30000;  // --op idle: the sessions' timeout
  long index_from = 0;             // --op idle and watch-gone: the first ephemeral's index
  int32_t max_buffer = default_max_buffer;  // the largest reply frame taken (jute.maxbuffer)
  std::string tls_ca, tls_cert, tls_key;
};

// TLS: one context for every connection; nullptr when plaintext.
static SSL_CTX* tls_context = nullptr;

static SSL_CTX* make_tls_context(const Options& o) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);  // as ZooKeeper 3.8's Java client
  if (SSL_CTX_load_verify_locations(ctx, o.tls_ca.c_str(), nullptr) != 1)
    throw std::runtime_error("cannot read the CA file " + o.tls_ca);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (!o.tls_cert.empty() && (SSL_CTX_use_certificate_chain_file(ctx, o.tls_cert.c_str()) != 1 ||
                              SSL_CTX_use_PrivateKey_file(ctx, o.tls_key.c_str(), SSL_FILETYPE_PEM) != 1))
    throw std::runtime_error("cannot use the client certificate " + o.tls_cert);
  // The chain sent is built once (without the root, which the server holds), as a Java client
  // sends its key store's chain: OpenSSL would build it again in every handshake, at a cost
  // (under OpenSSL 3.0) that made the storm's client, not the server, the bottleneck.
  if (!o.tls_cert.empty())
    SSL_CTX_build_cert_chain(ctx, SSL_BUILD_CHAIN_FLAG_NO_ROOT | SSL_BUILD_CHAIN_FLAG_IGNORE_ERROR |
                                      SSL_BUILD_CHAIN_FLAG_CLEAR_ERROR);
  SSL_CTX_set_mode(ctx, SSL_MODE_NO_AUTO_CHAIN);
  // This one process stands for thousands of clients, each on a machine of its own, that would
  // each verify the server's chain on its own CPU: here that CPU is the server's machine's, so
  // the chain is verified once (the server's side of every handshake is unchanged).
  warden::server::tls::VerifiedChains::attach(ctx);
  return ctx;
}

// A connection's bytes, plaintext or through its SSL object. Non-blocking: -1 with errno EAGAIN
// when nothing can move now.
static ssize_t tls_result(SSL* ssl, int r) {
  if (r > 0) return r;
  int e = SSL_get_error(ssl, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    errno = EAGAIN;
    return -1;
  }
  return 0;
}
static ssize_t io_read(int fd, SSL* ssl, char* buf, size_t n) {
  return ssl ? tls_result(ssl, SSL_read(ssl, buf, static_cast<int>(n))) : read(fd, buf, n);
}
static ssize_t io_write(int fd, SSL* ssl, const char* buf, size_t n) {
  return ssl ? tls_result(ssl, SSL_write(ssl, buf, static_cast<int>(n))) : write(fd, buf, n);
}
// `read_ahead`: one receive takes all that has come (where nothing can be left in OpenSSL's
// buffer unread while the loop waits for the socket: a storm's handshake and its one reply).
static SSL* new_ssl(int fd, bool read_ahead = false) {
  SSL* ssl = SSL_new(tls_context);
  SSL_set_fd(ssl, fd);
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_set_read_ahead(ssl, read_ahead ? 1 : 0);
  return ssl;
}

static std::string frame_of(const std::string& payload) {
  std::string f;
  append_frame(f, payload);
  return f;
}

static std::string request(int32_t xid, OpCode op, const std::string& body) {
  return frame_of(encode(RequestHeader{xid, static_cast<int32_t>(op)}) + body);
}

static AclList open_acl() { return {Acl{perms::all, Id{"world", "anyone"}}}; }

static int dial(const Options& o, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, o.host.c_str(), &a.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect failed");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static void write_all(int fd, SSL* ssl, const std::string& b) {
  size_t off = 0;
  while (off < b.size()) {
    ssize_t n = io_write(fd, ssl, b.data() + off, b.size() - off);
    if (n <= 0) throw std::runtime_error("write failed");
    off += static_cast<size_t>(n);
  }
}

static std::string read_frame_blocking(int fd, SSL* ssl) {
  std::string buf;
  char tmp[4096];
  for (;;) {
    auto s = scan_frame(buf, default_max_buffer);
    if (s.status == FrameStatus::complete) return std::string(s.payload);
    if (s.status == FrameStatus::bad_length) throw std::runtime_error("bad frame");
    ssize_t n = io_read(fd, ssl, tmp, sizeof tmp);
    if (n <= 0) throw std::runtime_error("server closed the connection");
    buf.append(tmp, static_cast<size_t>(n));
  }
}

// Opens a session on a blocking socket (TLS first when asked).
static int open_session(const Options& o, int port, SSL** ssl) {
  int fd = dial(o, port);
  *ssl = nullptr;
  if (tls_context) {
    *ssl = new_ssl(fd);
    if (SSL_connect(*ssl) != 1) throw std::runtime_error("TLS handshake failed");
  }
  ConnectRequest c{0, 0, 30000, 0, std::string(16, '\0'), false};
  write_all(fd, *ssl, frame_of(encode_connect_request(c)));
  auto resp = decode_connect_response(read_frame_blocking(fd, *ssl));
  if (!resp || resp->sessionId == 0) throw std::runtime_error("handshake failed");
  return fd;
}

// A synchronous call during set-up; returns the error code.
static int32_t call(int fd, SSL* ssl, OpCode op, const std::string& body) {
  write_all(fd, ssl, request(1, op, body));
  std::string reply = read_frame_blocking(fd, ssl);  // the Reader only views it
  Reader r(reply);
  ReplyHeader h;
  h.visit(r);
  return h.err;
}

struct Conn {
  int fd = -1;
  SSL* ssl = nullptr;
  std::string out;  // bytes not yet written
  std::string in;
  std::deque<Clock::time_point> sent;
  long issued = 0;
  std::string primary, secondary;  // the pre-encoded requests
  std::string node;                 // --op delete: the parent whose n-<seq> children it deletes
  bool exhausted = false;           // --op delete: a NoNode came back, nothing is left
};

// SIGTERM ends a run early as its --seconds would: nothing more is sent, what is in flight is
// answered, and the results print (a benchmark stops a load the moment what it waits for is done).
static std::atomic<bool> stop_requested{false};

struct Result {
  long ops = 0;
  long errors = 0;
  std::vector<uint32_t> lat_us;
};

static void run_group(std::vector<Conn*> conns, const Options& o, Clock::time_point end,
                      std::atomic<long>& budget, Result& res) {
  for (auto* c : conns) fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
  auto issue = [&](Conn& c) {
    while (static_cast<int>(c.sent.size()) < o.depth && !c.exhausted && Clock::now() < end &&
           !stop_requested.load(std::memory_order_relaxed) && budget.fetch_sub(1) > 0) {
      bool mix_write = o.op == "mix" && c.issued % 10 == 9;  // 90% reads
      if (o.op == "delete") {
        // The children --op create made, in their sequence order (persistent-sequential, from 0).
        char name[32];
        std::snprintf(name, sizeof name, "/n-%010ld", c.issued);
        c.out += request(2, OpCode::remove, encode(DeleteRequest{c.node + name, -1}));
      } else {
        c.out += mix_write ? c.secondary : c.primary;
      }
      c.sent.push_back(Clock::now());
      ++c.issued;
    }
  };
  for (auto* c : conns) issue(*c);
  std::vector<pollfd> pfds(conns.size());
  char buf[256 * 1024];
  for (;;) {
    bool any = false;
    for (size_t i = 0; i < conns.size(); ++i) {
      pfds[i] = {conns[i]->fd, static_cast<short>(POLLIN | (conns[i]->out.empty() ? 0 : POLLOUT)), 0};
      any = any || !conns[i]->sent.empty();
    }
    if (!any) break;
    if (poll(pfds.data(), pfds.size(), 1000) < 0) {
      if (errno != EINTR) throw std::runtime_error("poll failed");
      continue;  // SIGTERM: the next issue() sends nothing more
    }
    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = *conns[i];
      if ((pfds[i].revents & POLLOUT) && !c.out.empty()) {
        ssize_t n = io_write(c.fd, c.ssl, c.out.data(), c.out.size());
        if (n > 0) c.out.erase(0, static_cast<size_t>(n));
      }
      if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        // TLS may hold decrypted bytes beyond one read: drain until it would block.
        bool got = false;
        for (;;) {
          ssize_t n = io_read(c.fd, c.ssl, buf, sizeof buf);
          if (n < 0 && errno == EAGAIN) break;
          if (n <= 0) throw std::runtime_error("server closed a connection under load");
          c.in.append(buf, static_cast<size_t>(n));
          got = true;
          if (!c.ssl) break;
        }
        if (!got) continue;
        size_t off = 0;
        auto now = Clock::now();
        for (;;) {
          auto s = scan_frame(std::string_view(c.in).substr(off), o.max_buffer);
          if (s.status != FrameStatus::complete) break;
          off += s.consumed;
          Reader r(s.payload);
          ReplyHeader h;
          h.visit(r);
          if (h.xid < 0) continue;  // a notification or ping
          if (h.err == static_cast<int32_t>(Err::noNode) && o.op == "delete") c.exhausted = true;
          else if (h.err != 0) ++res.errors;
          auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - c.sent.front()).count();
          c.sent.pop_front();
          res.lat_us.push_back(static_cast<uint32_t>(us));
          ++res.ops;
        }
        c.in.erase(0, off);
        issue(c);
      }
    }
  }
}

static double cpu_seconds();

struct StormConn {
  enum Stage { tcp, handshake, send, receive, done, failed };
  int fd = -1;
  SSL* ssl = nullptr;
  Stage stage = tcp;
  short want = POLLOUT;
  std::string out, in;
  size_t port = 0;  // index into Options::ports
  int64_t session = 0;
  int32_t timeout = 0;  // as the server negotiated it
  std::string passwd;
};

// Opens `n` sessions at once, non-blocking: TCP connect, TLS handshake (if asked), the session
// handshake; returns them (stage done or failed) when the last is settled or after 120 s. Past
// 25,000 connections each further 25,000 come from the next loopback source address
// (127.0.0.2, ...), as one address has about 28,000 ephemeral ports to one server port; `first`:
// how many this process opened before (the index the count starts from).
static std::vector<StormConn> storm(const Options& o, size_t n, int32_t timeout_ms = 30000, size_t first = 0) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  using S = StormConn;
  using enum StormConn::Stage;
  std::vector<S> all(n);
  std::string hello = frame_of(encode_connect_request(ConnectRequest{0, 0, timeout_ms, 0, std::string(16, '\0'), false}));
  auto start = Clock::now();
  for (size_t i = 0; i < all.size(); ++i) {
    S& s = all[i];
    s.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (s.fd < 0) throw std::runtime_error("out of file descriptors at connection " + std::to_string(i));
    if (first + n > 25000 && o.host == "127.0.0.1") {
      sockaddr_in src{};
      src.sin_family = AF_INET;
      src.sin_addr.s_addr = htonl(0x7f000001u + static_cast<uint32_t>((first + i) / 25000));
      if (bind(s.fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0)
        throw std::runtime_error("cannot bind a loopback source address");
    }
    int one = 1;
    setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    s.port = (first + i) % o.ports.size();
    a.sin_port = htons(static_cast<uint16_t>(o.ports[s.port]));
    inet_pton(AF_INET, o.host.c_str(), &a.sin_addr);
    if (connect(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) s.stage = failed;
  }
  // epoll: a wakeup costs what is ready, not the thousands still waiting (poll over every
  // connection made this loop, not the servers, the bottleneck).
  int ep = epoll_create1(0);
  auto watch = [&](size_t i, int op) {
    epoll_event ev{};
    ev.events = all[i].want == POLLIN ? EPOLLIN : EPOLLOUT;
    ev.data.u64 = i;
    epoll_ctl(ep, op, all[i].fd, &ev);
  };
  size_t finished = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].stage == failed) ++finished;
    else watch(i, EPOLL_CTL_ADD);
  }
  auto deadline = start + std::chrono::seconds(120);
  std::vector<epoll_event> events(1024);
  while (finished < all.size() && Clock::now() < deadline) {
    int n_ready = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 1000);
    if (n_ready < 0 && errno != EINTR) throw std::runtime_error("epoll_wait failed");
    for (int k = 0; k < n_ready; ++k) {
      size_t idx = events[static_cast<size_t>(k)].data.u64;
      S& s = all[idx];
      short before = s.want;
      StormConn::Stage stage_before = s.stage;
      struct Rewatch {
        std::function<void()> f;
        ~Rewatch() { f(); }
      } rewatch{[&, idx, before, stage_before] {
        S& x = all[idx];
        if (x.stage == done || x.stage == failed) {
          if (stage_before != done && stage_before != failed) {
            ++finished;
            epoll_ctl(ep, EPOLL_CTL_DEL, x.fd, nullptr);
          }
        } else if (x.want != before) {
          watch(idx, EPOLL_CTL_MOD);
        }
      }};
      if (s.stage == tcp) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
          s.stage = failed;
          continue;
        }
        s.out = hello;
        if (tls_context) {
          s.ssl = new_ssl(s.fd, true);
          s.stage = handshake;
        } else {
          s.stage = send;
        }
      }
      if (s.stage == handshake) {
        int r = SSL_connect(s.ssl);
        if (r == 1) {
          s.stage = send;
        } else {
          int e = SSL_get_error(s.ssl, r);
          if (e == SSL_ERROR_WANT_READ) s.want = POLLIN;
          else if (e == SSL_ERROR_WANT_WRITE) s.want = POLLOUT;
          else s.stage = failed;
          continue;
        }
      }
      if (s.stage == send) {
        ssize_t n = io_write(s.fd, s.ssl, s.out.data(), s.out.size());
        if (n > 0) s.out.erase(0, static_cast<size_t>(n));
        else if (!(n < 0 && errno == EAGAIN)) s.stage = failed;
        if (s.out.empty()) s.stage = receive;
        s.want = s.stage == receive ? POLLIN : POLLOUT;
        continue;
      }
      if (s.stage == receive) {
        char buf[4096];
        ssize_t n = io_read(s.fd, s.ssl, buf, sizeof buf);
        if (n < 0 && errno == EAGAIN) continue;
        if (n <= 0) {
          s.stage = failed;
          continue;
        }
        s.in.append(buf, static_cast<size_t>(n));
        auto f = scan_frame(s.in, default_max_buffer);
        if (f.status == FrameStatus::complete) {
          auto resp = decode_connect_response(f.payload);
          s.stage = resp && resp->sessionId != 0 ? done : failed;
          if (s.stage == done) {
            s.session = resp->sessionId;
            s.timeout = resp->timeOut;
            s.passwd = resp->passwd.value_or("");
            s.in.erase(0, f.consumed);
          }
        }
      }
    }
  }
  close(ep);
  return all;
}

// --op connect: every connection at once (storm); the time until the last session is established.
// --threads splits the connections among that many threads, each a storm of its own share, all
// started at once: a TLS storm's client does as much crypto per connection as the server, and one
// thread of it alone would be the bottleneck.
static int connect_storm(const Options& o) {
  double cpu0 = cpu_seconds();
  auto start = Clock::now();
  size_t n = static_cast<size_t>(o.connections), threads = std::min<size_t>(static_cast<size_t>(o.threads), n);
  std::vector<std::vector<StormConn>> parts(threads);
  std::vector<std::exception_ptr> errors(threads);
  {
    std::vector<std::thread> running;
    for (size_t t = 0; t < threads; ++t)
      running.emplace_back([&, t] {
        size_t from = n * t / threads, to = n * (t + 1) / threads;
        try {
          parts[t] = storm(o, to - from, 30000, from);
        } catch (...) {
          errors[t] = std::current_exception();
        }
      });
    for (auto& r : running) r.join();
  }
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<StormConn> all;
  for (auto& p : parts) std::move(p.begin(), p.end(), std::back_inserter(all));
  size_t ok = 0, bad = 0;
  for (auto& s : all) {
    ok += s.stage == StormConn::done;
    bad += s.stage != StormConn::done;
  }
  std::printf("op=connect connections=%zu established=%zu failed=%zu seconds=%.3f client_cpu_s=%.3f\n", all.size(), ok,
              bad, secs, cpu_seconds() - cpu0);
  for (auto& s : all) {
    if (s.ssl) SSL_free(s.ssl);
    if (s.fd >= 0) close(s.fd);
  }
  return 0;  // failures are counted in the output, for the reader
}

// Writes all of `b` to a non-blocking socket, waiting for room when it is full.
static void write_all_nonblocking(int fd, const std::string& b) {
  size_t off = 0;
  while (off < b.size()) {
    ssize_t n = write(fd, b.data() + off, b.size() - off);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, 1000);
    } else {
      throw std::runtime_error("write failed");
    }
  }
}

// --op fanout: --connections watchers (opened at once, as storm), each with a data watch on one
// node (--fan-kind data) or a child watch on one parent (--fan-kind child); a writer session
// changes it once; the time from sending that write to each notification's arrival, over
// --rounds rounds (every watch armed again, with a ping, before each). Plaintext only.
static const std::string& ping_frame() {
  static const std::string f = frame_of(encode(RequestHeader{xid::ping, static_cast<int32_t>(OpCode::ping)}));
  return f;
}

// Opens --connections sessions 50 at a time (the storm is --op connect's business, not this
// one's: ZooKeeper's accept queue is 50 deep, and a SYN it drops is sent again only a second
// later), the ones that failed tried again, every session pinged every 5 s meanwhile so that
// none expires. Spread over --ports in turn.
static std::vector<StormConn> open_sessions(const Options& o, int32_t timeout_ms) {
  std::vector<StormConn> w;
  auto pinged = Clock::now();
  for (int failures = 0; static_cast<int>(w.size()) < o.connections && failures < 1000;) {
    if (Clock::now() - pinged > std::chrono::seconds(5)) {
      for (auto& c : w) write_all_nonblocking(c.fd, ping_frame());
      pinged = Clock::now();
    }
    size_t want = std::min<size_t>(50, static_cast<size_t>(o.connections) - w.size());
    for (auto& c : storm(o, want, timeout_ms, w.size())) {
      if (c.stage == StormConn::done) {
        w.push_back(std::move(c));
      } else {
        ++failures;
        if (c.fd >= 0) close(c.fd);
      }
    }
  }
  if (static_cast<int>(w.size()) != o.connections)
    throw std::runtime_error(std::to_string(o.connections - static_cast<int>(w.size())) + " sessions could not connect");
  return w;
}

// Reads whatever each ready session sent (replies, pings, events); `on` gets (session, frame
// payload) per whole frame. A session whose connection closed is reported once through `lost`.
static void pump_sessions(int ep, std::vector<StormConn>& all, int ms, std::vector<epoll_event>& events,
                          const std::function<void(size_t, std::string_view)>& on,
                          const std::function<void(size_t)>& lost) {
  char buf[64 * 1024];
  int ready = epoll_wait(ep, events.data(), static_cast<int>(events.size()), ms);
  for (int k = 0; k < ready; ++k) {
    size_t i = events[static_cast<size_t>(k)].data.u64;
    if (all[i].fd < 0) continue;
    bool closed = false;
    for (;;) {
      ssize_t r = read(all[i].fd, buf, sizeof buf);
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) break;
      if (r <= 0) {
        closed = true;
        break;
      }
      all[i].in.append(buf, static_cast<size_t>(r));
      // A short read took all there was: epoll (level-triggered) says when more comes, so a
      // second read that finds nothing is not made (one system call per frame, not two).
      if (static_cast<size_t>(r) < sizeof buf) break;
    }
    size_t off = 0;
    for (;;) {
      auto f = scan_frame(std::string_view(all[i].in).substr(off), default_max_buffer);
      if (f.status != FrameStatus::complete) break;
      off += f.consumed;
      on(i, f.payload);
    }
    all[i].in.erase(0, off);
    if (closed) {
      epoll_ctl(ep, EPOLL_CTL_DEL, all[i].fd, nullptr);
      close(all[i].fd);
      all[i].fd = -1;
      lost(i);
    }
  }
}

static int epoll_of(const std::vector<StormConn>& all) {
  int ep = epoll_create1(0);
  for (size_t i = 0; i < all.size(); ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    epoll_ctl(ep, EPOLL_CTL_ADD, all[i].fd, &ev);
  }
  return ep;
}

// One fan-out's notifications as the loadgen hears them, round after round: what --op fanout
// and --op fanout-floor report, measured the same way.
struct FanTally {
  std::vector<double> lasts, firsts;
  std::vector<uint32_t> lat;  // each watcher's first notification, us after the change was sent
  long missing = 0, duplicates = 0;
  double cpu = 0;  // this process's CPU while the notifications came in
};

using FanPump = std::function<void(int ms, const std::function<void(size_t, int32_t)>& on)>;

// Times one round: `fire` sends the change; every watcher's first notification counts, up to
// 60 s, then 50 ms more for duplicates (one would follow at once).
static void time_fan_round(FanTally& t, std::vector<int>& got, const FanPump& pump, const std::function<void()>& fire) {
  std::fill(got.begin(), got.end(), 0);
  size_t heard = 0, frames = 0;
  double cpu0 = cpu_seconds();
  auto t0 = Clock::now();
  fire();
  Clock::time_point first = t0, last = t0;
  auto on_event = [&](size_t i, int32_t x) {
    if (x != xid::notification) return;
    auto now = Clock::now();
    ++frames;
    if (got[i]++ == 0) {
      if (heard++ == 0) first = now;
      last = now;
      t.lat.push_back(static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::microseconds>(now - t0).count()));
    }
  };
  auto deadline = t0 + std::chrono::seconds(60);
  while (heard < got.size() && Clock::now() < deadline) pump(1000, on_event);
  t.cpu += cpu_seconds() - cpu0;
  auto settle = Clock::now() + std::chrono::milliseconds(50);
  while (Clock::now() < settle) pump(10, on_event);
  t.lasts.push_back(std::chrono::duration<double, std::milli>(last - t0).count());
  t.firsts.push_back(std::chrono::duration<double, std::milli>(first - t0).count());
  t.missing += static_cast<long>(got.size() - heard);
  t.duplicates += static_cast<long>(frames - heard);
}

// Prints the rounds' medians and percentiles; the exit status (1 if any was missing or twice).
static int report_fan(const char* op, const char* kind, size_t watchers, int rounds, FanTally& t) {
  std::vector<double> sorted = t.lasts;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double p) -> uint32_t {
    if (t.lat.empty()) return 0;
    size_t k = std::min(t.lat.size() - 1, static_cast<size_t>(p * static_cast<double>(t.lat.size())));
    std::nth_element(t.lat.begin(), t.lat.begin() + static_cast<long>(k), t.lat.end());
    return t.lat[k];
  };
  std::string each;
  for (double l : t.lasts) {
    if (!each.empty()) each += ',';
    each += std::to_string(l);
  }
  double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  std::sort(t.firsts.begin(), t.firsts.end());
  double first_median = t.firsts.empty() ? 0 : t.firsts[t.firsts.size() / 2];
  std::printf("op=%s kind=%s watchers=%zu rounds=%d last_ms_median=%.3f last_ms_min=%.3f last_ms_each=%s "
              "first_ms_median=%.3f p50_us=%u p99_us=%u per_watcher_us=%.3f missing=%ld duplicates=%ld "
              "client_cpu_s=%.3f\n",
              op, kind, watchers, rounds, median, sorted.empty() ? 0 : sorted[0], each.c_str(), first_median,
              pct(0.5), pct(0.99), median * 1000 / static_cast<double>(watchers), t.missing, t.duplicates, t.cpu);
  return t.missing || t.duplicates ? 1 : 0;
}

// A pump over `w` that hands each frame's xid to `on` (FanPump).
static FanPump fan_pump(int ep, std::vector<StormConn>& w, std::vector<epoll_event>& events) {
  return [ep, &w, &events](int ms, const std::function<void(size_t, int32_t)>& on) {
    pump_sessions(
        ep, w, ms, events,
        [&](size_t i, std::string_view payload) {
          Reader rd(payload);
          ReplyHeader h;
          h.visit(rd);
          on(i, h.xid);
        },
        [](size_t) -> void { throw std::runtime_error("the other side closed a watcher's connection"); });
  };
}

// What both fan-out ops read their watchers with, and what they tally.
struct FanReader {
  explicit FanReader(std::vector<StormConn>& w) : ep(epoll_of(w)), events(4096), got(w.size()), pump(fan_pump(ep, w, events)) {}
  ~FanReader() { close(ep); }
  FanReader(const FanReader&) = delete;
  FanReader& operator=(const FanReader&) = delete;
  int ep;
  std::vector<epoll_event> events;
  std::vector<int> got;
  FanPump pump;  // holds `events` by reference: a FanReader stays where it was made
  FanTally tally;
};

static int fanout(const Options& o) {
  std::vector<StormConn> w = open_sessions(o, 40000);
  const std::string& ping = ping_frame();
  SSL* none = nullptr;
  int writer = open_session(o, o.ports[0], &none);
  bool child = o.fan_kind == "child";
  call(writer, nullptr, OpCode::create, encode(CreateRequest{"/bench", std::string(), open_acl(), 0}));
  call(writer, nullptr, OpCode::create, encode(CreateRequest{"/bench/fan", std::string("v"), open_acl(), 0}));
  call(writer, nullptr, OpCode::create, encode(CreateRequest{"/bench/fanp", std::string(), open_acl(), 0}));
  std::string arm = ping + request(1, child ? OpCode::getChildren : OpCode::getData, encode(PathWatchRequest{child ? "/bench/fanp" : "/bench/fan", true}));
  FanReader r(w);
  for (int round = 0; round < o.rounds; ++round) {
    for (auto& c : w) write_all_nonblocking(c.fd, arm);
    size_t armed = 0;
    auto deadline = Clock::now() + std::chrono::seconds(120);
    while (armed < w.size() && Clock::now() < deadline)
      r.pump(1000, [&](size_t, int32_t x) { armed += x == 1; });
    if (armed < w.size()) throw std::runtime_error("watches were not all armed within 120 s");
    std::string tag = std::to_string(round);
    std::string change = child ? request(2, OpCode::create, encode(CreateRequest{"/bench/fanp/c" + tag, std::string(), open_acl(), 0}))
                               : request(2, OpCode::setData, encode(SetDataRequest{"/bench/fan", tag, -1}));
    time_fan_round(r.tally, r.got, r.pump, [&] { write_all(writer, nullptr, change); });
    if (read_frame_blocking(writer, nullptr).empty()) throw std::runtime_error("the write had no reply");
  }
  int rc = report_fan("fanout", child ? "child" : "data", w.size(), o.rounds, r.tally);
  close(writer);
  for (auto& c : w) close(c.fd);
  return rc;
}

// The floors' server: a process of this one's own at the other end of --connections loopback
// connections, doing only what the floor measures. `go` and `done` are pipes to it: the child
// reads `go`, answers on `done`, and dies with this process.
struct BareServer {
  pid_t pid = -1;
  int go = -1, done = -1;
  std::vector<StormConn> conns;  // this side's ends, non-blocking
};

// `body(accepted, go, done)` runs in the child once it has accepted every connection (each
// with TCP_NODELAY, as the server sets it); its return is the child's exit status.
using BareBody = std::function<int(std::vector<int>& accepted, int go, int done)>;

static BareServer start_bare(size_t n, const char* what, const BareBody& body) {
  auto fail = [what](const char* step) {
    throw std::runtime_error(std::string(what) + ": " + step + ": " + std::strerror(errno));
  };
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(listener, 4096) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    fail("cannot listen");
  int go[2], done[2];
  if (pipe(go) != 0 || pipe(done) != 0) fail("pipe failed");
  pid_t parent = getpid();
  BareServer b;
  b.pid = fork();
  if (b.pid < 0) fail("fork failed");
  if (b.pid == 0) {
    // Ends with this process, whatever way it ends (a failed connect, a signal).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    close(go[1]);
    close(done[0]);
    std::vector<int> accepted;
    while (accepted.size() < n) {
      int fd = accept(listener, nullptr, nullptr);
      if (fd < 0) _exit(1);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      accepted.push_back(fd);
    }
    close(listener);
    char c = 0;
    if (write(done[1], &c, 1) != 1) _exit(1);
    _exit(body(accepted, go[0], done[1]));
  }
  close(listener);
  close(go[0]);
  close(done[1]);
  b.go = go[1];
  b.done = done[0];
  b.conns.resize(n);
  for (auto& c : b.conns) {
    c.fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c.fd < 0 || connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fail("connect failed");
    fcntl(c.fd, F_SETFL, O_NONBLOCK);
  }
  char c = 0;
  if (read(b.done, &c, 1) != 1) throw std::runtime_error(std::string(what) + ": the child did not start");
  return b;
}

// Closes this side (the child sees `go` end) and reaps the child: true if it ended well.
static bool end_bare(BareServer& b) {
  close(b.go);
  for (auto& c : b.conns)
    if (c.fd >= 0) close(c.fd);
  int status = 0;
  waitpid(b.pid, &status, 0);
  close(b.done);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// --op fanout-floor: this machine's floor for --op fanout, with no server: a child process
// holding --connections loopback connections sends one notification frame to each over as
// many threads as the server's fan-out (the same sender, with nothing else to do) for each
// byte on `go`, and this process hears them exactly as --op fanout does. Plaintext, a data
// watch's frame.
static int fanout_floor(const Options& o) {
  BareServer b = start_bare(static_cast<size_t>(o.connections), "fanout-floor", [](std::vector<int>& fds, int go, int done) {
    std::vector<FanOutSender::Target> targets;
    for (int fd : fds) targets.push_back({fd, 0});
    std::string frame = frame_of(encode(ReplyHeader{xid::notification, -1, 0}) +
                                 encode(WatcherEvent{3 /* NodeDataChanged */, 3 /* SyncConnected */, "/bench/fan"}));
    FanOutSender sender(FanOutSender::helpers_for_this_machine());
    char c = 0;
    while (read(go, &c, 1) == 1) {
      sender.send_all(targets, frame);
      for (auto& t : targets)
        if (t.result != static_cast<ssize_t>(frame.size())) return 1;  // every socket has room: one frame each
      if (write(done, &c, 1) != 1) return 1;
    }
    return 0;
  });
  FanReader r(b.conns);
  for (int round = 0; round < o.rounds; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // as between --op fanout's rounds
    char c = 0;
    time_fan_round(r.tally, r.got, r.pump, [&] {
      if (write(b.go, &c, 1) != 1) throw std::runtime_error("fanout-floor: the sender is gone");
    });
    if (read(b.done, &c, 1) != 1) throw std::runtime_error("fanout-floor: the sender failed");
  }
  bool ended = end_bare(b);
  std::printf("threads=%u ", 1 + FanOutSender::helpers_for_this_machine());
  int rc = report_fan("fanout-floor", "data", b.conns.size(), o.rounds, r.tally);
  return rc || !ended ? 1 : 0;
}

// --op failover: --connections sessions spread over --ports, pinged every third of their
// timeout; prints "ready" once all are open and then waits (up to --seconds) for their
// connections to drop (a member is killed): each dropped session re-attaches with its id and
// password on the next member, trying the members in turn every 50 ms until one answers. The
// answer tells: re-attached (a timeout), or expired (timeout 0, as ZooKeeper tells an expired
// session). Prints the time from the first drop to the last re-attach and the counts; ends
// when every dropped session is settled and nothing dropped for 2 s.
static int failover(const Options& o) {
  const int32_t timeout_ms = 30000;
  std::vector<StormConn> all = open_sessions(o, timeout_ms);
  int32_t negotiated = timeout_ms;  // pinged at a third of the shortest the servers granted
  for (auto& c : all) negotiated = std::min(negotiated, c.timeout);
  enum State { live, waiting, connecting, handshaking, reattached_gone, expired };
  struct Track {
    State state = live;
    bool dropped = false;
    Clock::time_point next_try;
  };
  std::vector<Track> t(all.size());
  int ep = epoll_create1(0);
  auto watch = [&](size_t i, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = i;
    epoll_ctl(ep, op, all[i].fd, &ev);
  };
  for (size_t i = 0; i < all.size(); ++i) watch(i, EPOLLIN, EPOLL_CTL_ADD);
  std::printf("ready sessions=%zu\n", all.size());
  std::fflush(stdout);
  double cpu0 = cpu_seconds();
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  Clock::time_point first_drop{}, last_attach{}, last_change = start;
  long drops = 0, reattached = 0, expired_n = 0, attempts = 0;
  auto drop = [&](size_t i, Clock::time_point now) {
    epoll_ctl(ep, EPOLL_CTL_DEL, all[i].fd, nullptr);
    close(all[i].fd);
    all[i].fd = -1;
    all[i].in.clear();
    if (t[i].state == live) {
      ++drops;
      if (first_drop == Clock::time_point{}) first_drop = now;
      t[i].dropped = true;
    }
    all[i].port = (all[i].port + 1) % o.ports.size();
    // A live session tries the next member at once; a failed attempt waits 50 ms first.
    t[i].next_try = now + std::chrono::milliseconds(t[i].state == live ? 0 : 50);
    t[i].state = waiting;
    last_change = now;
  };
  auto pinged = Clock::now();
  std::vector<epoll_event> events(4096);
  char buf[16 * 1024];
  for (;;) {
    auto now = Clock::now();
    if (now > deadline) break;
    size_t unsettled = 0;
    for (auto& x : t) unsettled += x.state == waiting || x.state == connecting || x.state == handshaking;
    if (drops > 0 && unsettled == 0 && now - last_change > std::chrono::seconds(2)) break;
    if (now - pinged > std::chrono::milliseconds(negotiated / 3)) {
      for (size_t i = 0; i < all.size(); ++i)
        if (t[i].state == live && write(all[i].fd, ping_frame().data(), ping_frame().size()) < 0 && errno != EAGAIN) drop(i, now);
      pinged = now;
    }
    for (size_t i = 0; i < all.size(); ++i) {
      if (t[i].state != waiting || now < t[i].next_try) continue;
      ++attempts;
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      if (fd < 0) throw std::runtime_error("out of file descriptors while re-attaching");
      if (all.size() > 25000 && o.host == "127.0.0.1") {
        sockaddr_in src{};
        src.sin_family = AF_INET;
        src.sin_addr.s_addr = htonl(0x7f000001u + static_cast<uint32_t>(i / 25000));
        bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(o.ports[all[i].port]));
      inet_pton(AF_INET, o.host.c_str(), &a.sin_addr);
      all[i].fd = fd;
      t[i].state = connecting;
      if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
        watch(i, EPOLLOUT, EPOLL_CTL_ADD);
        drop(i, now);
        continue;
      }
      watch(i, EPOLLOUT, EPOLL_CTL_ADD);
    }
    int ready = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 10);
    now = Clock::now();
    for (int k = 0; k < ready; ++k) {
      size_t i = events[static_cast<size_t>(k)].data.u64;
      if (all[i].fd < 0) continue;
      if (t[i].state == connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(all[i].fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
          drop(i, now);
          continue;
        }
        std::string hello = frame_of(encode_connect_request(
            ConnectRequest{0, 0, timeout_ms, all[i].session, all[i].passwd, false}));
        if (write(all[i].fd, hello.data(), hello.size()) != static_cast<ssize_t>(hello.size())) {
          drop(i, now);
          continue;
        }
        t[i].state = handshaking;
        watch(i, EPOLLIN, EPOLL_CTL_MOD);
        continue;
      }
      for (;;) {
        ssize_t r = read(all[i].fd, buf, sizeof buf);
        if (r < 0 && errno == EAGAIN) break;
        if (r <= 0) {
          drop(i, now);
          break;
        }
        all[i].in.append(buf, static_cast<size_t>(r));
      }
      if (all[i].fd < 0) continue;
      if (t[i].state == handshaking) {
        auto f = scan_frame(all[i].in, default_max_buffer);
        if (f.status != FrameStatus::complete) continue;
        auto resp = decode_connect_response(f.payload);
        all[i].in.erase(0, f.consumed);
        last_change = now;
        if (resp && resp->timeOut > 0 && resp->sessionId == all[i].session) {
          t[i].state = live;
          ++reattached;
          last_attach = now;
        } else {
          ++expired_n;
          t[i].state = expired;
          epoll_ctl(ep, EPOLL_CTL_DEL, all[i].fd, nullptr);
          close(all[i].fd);
          all[i].fd = -1;
        }
      } else {
        all[i].in.clear();  // ping replies
      }
    }
  }
  close(ep);
  long failed = 0, never_dropped = 0;
  for (auto& x : t) {
    failed += x.state == waiting || x.state == connecting || x.state == handshaking;
    never_dropped += !x.dropped;
  }
  double secs = first_drop == Clock::time_point{} || last_attach < first_drop
                    ? 0
                    : std::chrono::duration<double>(last_attach - first_drop).count();
  std::printf("op=failover sessions=%zu dropped=%ld reattached=%ld expired=%ld failed=%ld never_dropped=%ld "
              "attempts=%ld seconds=%.3f client_cpu_s=%.3f\n",
              all.size(), drops, reattached, expired_n, failed, never_dropped, attempts, secs, cpu_seconds() - cpu0);
  for (auto& c : all)
    if (c.fd >= 0) close(c.fd);
  return 0;
}

// --op idle: --connections sessions (timeout --session-timeout ms), each with an ephemeral
// <prefix>/e-<index> (index from --index-from), kept alive by a ping every third of the
// timeout, spread evenly over the sessions as independent clients' pings are; prints "ready"
// once all are open and their ephemerals made, then idles until --seconds pass or SIGTERM (or
// until SIGKILL: its sessions then vanish at once, to expire on the server).
// Pings every connection of `all` once a third of `timeout_ms`, the pings spread evenly over
// time, for `seconds` (or until SIGTERM), handing what comes back to `on_frame`; returns the
// pings sent.
static long ping_evenly(std::vector<StormConn>& all, int ep, std::vector<epoll_event>& events, int32_t timeout_ms,
                        double seconds, const std::function<void(size_t, std::string_view)>& on_frame,
                        const std::function<void(size_t)>& on_lost) {
  auto start = Clock::now();
  auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  auto period = std::chrono::milliseconds(timeout_ms / 3);
  long pinged = 0;  // over all sessions in turn
  while (!stop_requested.load() && Clock::now() < end) {
    auto due = static_cast<long>(static_cast<double>(all.size()) * std::chrono::duration<double>(Clock::now() - start) /
                                 std::chrono::duration<double>(period));
    for (; pinged < due; ++pinged) {
      auto& c = all[static_cast<size_t>(pinged) % all.size()];
      if (c.fd >= 0) write_all_nonblocking(c.fd, ping_frame());
    }
    pump_sessions(ep, all, 10, events, on_frame, on_lost);
  }
  return pinged;
}

static int idle(const Options& o) {
  {
    SSL* none = nullptr;
    int setup = open_session(o, o.ports[0], &none);
    call(setup, nullptr, OpCode::create, encode(CreateRequest{o.prefix, std::string(), open_acl(), 0}));
    close(setup);
  }
  std::vector<StormConn> all = open_sessions(o, o.session_timeout_ms);
  int ep = epoll_of(all);
  std::vector<epoll_event> events(4096);
  size_t made = 0, lost = 0;
  long failed = 0;
  auto on_reply = [&](size_t, std::string_view payload) {
    Reader r(payload);
    ReplyHeader h;
    h.visit(r);
    if (h.xid == 1) {
      ++made;
      failed += h.err != 0;
    }
  };
  auto on_lost = [&](size_t) { ++lost; };
  for (size_t i = 0; i < all.size(); ++i) {
    std::string path = o.prefix + "/e-" + std::to_string(static_cast<long>(i) + o.index_from);
    write_all_nonblocking(all[i].fd, request(1, OpCode::create, encode(CreateRequest{path, std::string("e"), open_acl(), 1})));
  }
  auto deadline = Clock::now() + std::chrono::seconds(300);
  while (made + lost < all.size() && Clock::now() < deadline) pump_sessions(ep, all, 1000, events, on_reply, on_lost);
  if (made < all.size() || failed) throw std::runtime_error("ephemerals not all made: " + std::to_string(made) + " of " +
                                                           std::to_string(all.size()) + ", " + std::to_string(failed) + " failed");
  int32_t negotiated = o.session_timeout_ms;
  for (auto& c : all) negotiated = std::min(negotiated, c.timeout);
  std::printf("ready sessions=%zu timeout_ms=%d\n", all.size(), negotiated);
  std::fflush(stdout);
  signal(SIGTERM, [](int) { stop_requested.store(true); });
  double cpu0 = cpu_seconds();
  long pinged = ping_evenly(all, ep, events, negotiated, o.seconds, [](size_t, std::string_view) {}, on_lost);
  close(ep);
  std::printf("op=idle sessions=%zu lost=%zu pings=%ld client_cpu_s=%.3f\n", all.size(), lost, pinged,
              cpu_seconds() - cpu0);
  for (auto& c : all)
    if (c.fd >= 0) close(c.fd);
  return lost ? 1 : 0;
}

// --op idle-floor: this machine's floor for --op idle's server CPU, with no server: a child
// process holding --connections loopback connections answers each ping with a ping reply (one
// receive and one send per ping, from one thread polling them all, nothing else), pinged as
// --op idle pings (every third of --session-timeout, spread evenly) for --seconds; the child's
// CPU over those seconds is the figure.
static int idle_floor(const Options& o) {
  BareServer b = start_bare(static_cast<size_t>(o.connections), "idle-floor", [](std::vector<int>& fds, int go, int done) {
    int ep = epoll_create1(0);
    for (size_t i = 0; i <= fds.size(); ++i) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = i;  // fds.size(): the `go` pipe
      fcntl(i < fds.size() ? fds[i] : go, F_SETFL, O_NONBLOCK);
      epoll_ctl(ep, EPOLL_CTL_ADD, i < fds.size() ? fds[i] : go, &ev);
    }
    const size_t ping_size = ping_frame().size();
    const std::string reply = frame_of(encode(ReplyHeader{xid::ping, 1, 0}));
    std::vector<size_t> partial(fds.size());
    std::vector<epoll_event> events(4096);
    std::string out;
    char buf[4096];
    for (size_t open = fds.size(); open > 0;) {
      int ready = epoll_wait(ep, events.data(), static_cast<int>(events.size()), -1);
      for (int k = 0; k < ready; ++k) {
        size_t i = events[static_cast<size_t>(k)].data.u64;
        if (i == fds.size()) {  // this process's CPU, asked for
          char c = 0;
          if (read(go, &c, 1) != 1) return 0;
          double cpu = cpu_seconds();
          if (write(done, &cpu, sizeof cpu) != sizeof cpu) return 1;
          continue;
        }
        ssize_t r = recv(fds[i], buf, sizeof buf, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (r <= 0) {
          epoll_ctl(ep, EPOLL_CTL_DEL, fds[i], nullptr);
          close(fds[i]);
          --open;
          continue;
        }
        size_t bytes = partial[i] + static_cast<size_t>(r);
        partial[i] = bytes % ping_size;
        out.clear();
        for (size_t p = bytes / ping_size; p > 0; --p) out += reply;
        if (!out.empty()) send(fds[i], out.data(), out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      }
    }
    return 0;
  });
  auto child_cpu = [&b] {
    char c = 0;
    double cpu = 0;
    if (write(b.go, &c, 1) != 1 || read(b.done, &cpu, sizeof cpu) != sizeof cpu)
      throw std::runtime_error("idle-floor: the responder is gone");
    return cpu;
  };
  int ep = epoll_of(b.conns);
  std::vector<epoll_event> events(4096);
  size_t lost = 0;
  long replies = 0;
  auto on_reply = [&replies](size_t, std::string_view payload) {
    Reader r(payload);
    ReplyHeader h;
    h.visit(r);
    replies += h.xid == xid::ping;
  };
  signal(SIGTERM, [](int) { stop_requested.store(true); });
  double cpu0 = cpu_seconds(), child0 = child_cpu();
  auto t0 = Clock::now();
  long pinged = ping_evenly(b.conns, ep, events, o.session_timeout_ms, o.seconds, on_reply, [&](size_t) { ++lost; });
  double child = child_cpu() - child0;
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  close(ep);
  bool ended = end_bare(b);
  std::printf("op=idle-floor sessions=%zu lost=%zu pings=%ld replies=%ld seconds=%.3f responder_cpu_s=%.3f "
              "client_cpu_s=%.3f\n",
              b.conns.size(), lost, pinged, replies, secs, child, cpu_seconds() - cpu0);
  return lost || !ended ? 1 : 0;
}

// --op watch-gone: one session leaves an exists watch on <prefix>/e-<index> for --connections
// indexes from --index-from (as --op idle made them), prints "ready", then waits (up to
// --seconds) for each to be deleted: the steady clock's reading (seconds, CLOCK_MONOTONIC as
// Python's time.monotonic) at the first and the last NodeDeleted, and how many came (a
// duplicate is counted apart).
static int watch_gone(const Options& o) {
  SSL* none = nullptr;
  std::vector<StormConn> one(1);
  one[0].fd = open_session(o, o.ports[0], &none);
  fcntl(one[0].fd, F_SETFL, fcntl(one[0].fd, F_GETFL) | O_NONBLOCK);
  int ep = epoll_of(one);
  std::vector<epoll_event> events(16);
  size_t n = static_cast<size_t>(o.connections);
  std::string all_requests;
  for (size_t i = 0; i < n; ++i)
    all_requests += request(1, OpCode::exists, encode(PathWatchRequest{
                                                   o.prefix + "/e-" + std::to_string(static_cast<long>(i) + o.index_from), true}));
  write_all_nonblocking(one[0].fd, all_requests);
  size_t answered = 0, existing = 0, deleted = 0, duplicates = 0;
  std::vector<bool> seen(n);
  double first = 0, last = 0;
  bool lost = false;
  auto on_frame = [&](size_t, std::string_view payload) {
    Reader r(payload);
    ReplyHeader h;
    h.visit(r);
    if (h.xid == 1) {
      ++answered;
      existing += h.err == 0;
      return;
    }
    if (h.xid != xid::notification) return;
    WatcherEvent e;
    e.visit(r);
    if (e.type != 2 || e.path.size() <= o.prefix.size() + 3) return;  // NodeDeleted of <prefix>/e-N only
    long index = std::atol(e.path.c_str() + o.prefix.size() + 3) - o.index_from;
    if (index < 0 || static_cast<size_t>(index) >= n) return;
    double now = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    if (seen[static_cast<size_t>(index)]) {
      ++duplicates;
      return;
    }
    seen[static_cast<size_t>(index)] = true;
    if (deleted++ == 0) first = now;
    last = now;
  };
  auto on_lost = [&](size_t) { lost = true; };
  auto deadline = Clock::now() + std::chrono::seconds(300);
  while (answered < n && !lost && Clock::now() < deadline) pump_sessions(ep, one, 1000, events, on_frame, on_lost);
  if (answered < n) throw std::runtime_error("the watches were not all set");
  std::printf("ready watches=%zu existing=%zu\n", n, existing);
  std::fflush(stdout);
  auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  auto pinged = Clock::now();
  while (deleted < existing && !lost && Clock::now() < end) {
    if (Clock::now() - pinged > std::chrono::seconds(3)) {
      write_all_nonblocking(one[0].fd, ping_frame());
      pinged = Clock::now();
    }
    pump_sessions(ep, one, 100, events, on_frame, on_lost);
  }
  auto settle = Clock::now() + std::chrono::milliseconds(200);  // a duplicate would follow at once
  while (!lost && Clock::now() < settle) pump_sessions(ep, one, 20, events, on_frame, on_lost);
  close(ep);
  std::printf("op=watch-gone watches=%zu existing=%zu deleted=%zu duplicates=%zu first_s=%.6f last_s=%.6f lost=%d\n", n,
              existing, deleted, duplicates, first, last, lost ? 1 : 0);
  if (one[0].fd >= 0) close(one[0].fd);
  return lost || duplicates ? 1 : 0;
}

static double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char** argv) {
  // A server that resets a connection (ZooKeeper's TLS port under a connection storm) must fail
  // that connection's write, not kill the loadgen: SSL_write writes through write(2).
  signal(SIGPIPE, SIG_IGN);
  Options o;
  try {
    for (int i = 1; i + 1 < argc; i += 2) {
      std::string k = argv[i], v = argv[i + 1];
      if (k == "--host") o.host = v;
      else if (k == "--port") o.port = std::stoi(v);
      else if (k == "--ports") {
        for (size_t from = 0; from <= v.size();) {
          size_t comma = std::min(v.find(',', from), v.size());
          o.ports.push_back(std::stoi(v.substr(from, comma - from)));
          from = comma + 1;
        }
      }
      else if (k == "--op") o.op = v;
      else if (k == "--connections") o.connections = std::stoi(v);
      else if (k == "--depth") o.depth = std::stoi(v);
      else if (k == "--threads") o.threads = std::stoi(v);
      else if (k == "--seconds") o.seconds = std::stod(v);
      else if (k == "--max-ops") o.max_ops = std::stol(v);
      else if (k == "--value-size") o.value_size = std::stoi(v);
      else if (k == "--multi-ops") o.multi_ops = std::stoi(v);
      else if (k == "--max-buffer") o.max_buffer = std::stoi(v);
      else if (k == "--session-timeout") o.session_timeout_ms = std::stoi(v);
      else if (k == "--index-from") o.index_from = std::stol(v);
      else if (k == "--rounds") o.rounds = std::stoi(v);
      else if (k == "--fan-kind") o.fan_kind = v;
      else if (k == "--prefix") o.prefix = v;
      else if (k == "--tls-ca") o.tls_ca = v;
      else if (k == "--tls-cert") o.tls_cert = v;
      else if (k == "--tls-key") o.tls_key = v;
      else {
        std::fprintf(stderr, "unknown option %s\n", k.c_str());
        return 2;
      }
    }
  } catch (const std::exception&) {  // std::stoi on a value that is not a number
    std::fprintf(stderr, "warden-loadgen: a numeric option has a value that is not a number\n");
    return 2;
  }
  if (o.ports.empty() && o.port > 0) o.ports.push_back(o.port);
  if ((o.ports.empty() && o.op != "fanout-floor" && o.op != "idle-floor") || o.connections < 1 || o.depth < 1 || o.threads < 1 || o.seconds <= 0 ||
      (o.op != "create" && o.op != "set" && o.op != "get" && o.op != "exists" && o.op != "mix" && o.op != "connect" &&
       o.op != "fanout" && o.op != "fanout-floor" && o.op != "idle-floor" && o.op != "failover" && o.op != "delete" && o.op != "children" && o.op != "multi" &&
       o.op != "idle" && o.op != "watch-gone") ||
      o.prefix.empty() || o.prefix[0] != '/' || o.rounds < 1 || (o.fan_kind != "data" && o.fan_kind != "child") ||
      o.multi_ops < 1 || o.max_buffer < 1024 || o.session_timeout_ms < 1 || o.index_from < 0) {
    std::fprintf(stderr,
                 "usage: warden-loadgen --port N|--ports N,N,... [--host A] --op create|set|get|exists|mix|delete|children|multi|\n"
                 "       connect|fanout|fanout-floor|failover|idle|idle-floor|watch-gone [--multi-ops N] [--max-buffer BYTES]\n"
                 "       [--session-timeout MS] [--index-from N]\n"
                 "       [--connections N] [--depth N] [--threads N] [--seconds S] [--max-ops N] [--value-size N]\n"
                 "       [--tls-ca FILE [--tls-cert FILE --tls-key FILE]] [--rounds N] [--fan-kind data|child]\n"
                 "       [--prefix /PATH]\n");
    return 2;
  }
  try {
    if (!o.tls_ca.empty()) tls_context = make_tls_context(o);
    if (o.op == "connect") return connect_storm(o);
    if (o.op == "fanout") return fanout(o);
    if (o.op == "fanout-floor") return fanout_floor(o);
    if (o.op == "idle-floor") return idle_floor(o);
    if (o.op == "failover") return failover(o);
    if (o.op == "idle") return idle(o);
    if (o.op == "watch-gone") return watch_gone(o);
    std::string value(static_cast<size_t>(o.value_size), 'v');
    std::vector<Conn> conns(static_cast<size_t>(o.connections));
    for (int i = 0; i < o.connections; ++i) {
      Conn& c = conns[static_cast<size_t>(i)];
      c.fd = open_session(o, o.ports[static_cast<size_t>(i) % o.ports.size()], &c.ssl);
      std::string node = o.prefix + "/c" + std::to_string(i);
      c.node = node;
      call(c.fd, c.ssl, OpCode::create, encode(CreateRequest{o.prefix, std::string(), open_acl(), 0}));
      call(c.fd, c.ssl, OpCode::create, encode(CreateRequest{node, value, open_acl(), 0}));
      std::string set = request(2, OpCode::setData, encode(SetDataRequest{node, value, -1}));
      if (o.op == "create") {
        // Persistent-sequential: the same bytes make a new node every time.
        c.primary = request(2, OpCode::create, encode(CreateRequest{node + "/n-", value, open_acl(), 2}));
      } else if (o.op == "set") {
        c.primary = set;
      } else if (o.op == "get" || o.op == "mix") {
        c.primary = request(2, OpCode::getData, encode(PathWatchRequest{node, false}));
        c.secondary = set;
      } else if (o.op == "children") {
        // The children of the first connection's node (--op create --connections 1 made them).
        c.primary = request(2, OpCode::getChildren, encode(PathWatchRequest{o.prefix + "/c0", false}));
      } else if (o.op == "multi") {
        // --multi-ops setData of the connection's node in one transaction.
        std::vector<MultiOp> ops(static_cast<size_t>(o.multi_ops),
                                 MultiOp{OpCode::setData, SetDataRequest{node, value, -1}});
        c.primary = request(2, OpCode::multi, encode_multi_request(ops));
      } else {
        c.primary = request(2, OpCode::exists, encode(PathWatchRequest{node, false}));
      }
    }
    signal(SIGTERM, [](int) { stop_requested.store(true); });
    double cpu0 = cpu_seconds();
    auto start = Clock::now();
    auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
    std::atomic<long> budget{o.max_ops};
    std::vector<Result> results(static_cast<size_t>(o.threads));
    std::vector<std::thread> threads;
    for (int t = 0; t < o.threads; ++t) {
      std::vector<Conn*> group;
      for (int i = t; i < o.connections; i += o.threads) group.push_back(&conns[static_cast<size_t>(i)]);
      threads.emplace_back([&, group, t] { run_group(group, o, end, budget, results[static_cast<size_t>(t)]); });
    }
    for (auto& th : threads) th.join();
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    double cpu = cpu_seconds() - cpu0;
    Result all;
    for (auto& r : results) {
      all.ops += r.ops;
      all.errors += r.errors;
      all.lat_us.insert(all.lat_us.end(), r.lat_us.begin(), r.lat_us.end());
    }
    auto pct = [&](double p) -> uint32_t {
      if (all.lat_us.empty()) return 0;
      size_t k = std::min(all.lat_us.size() - 1, static_cast<size_t>(p * static_cast<double>(all.lat_us.size())));
      std::nth_element(all.lat_us.begin(), all.lat_us.begin() + static_cast<long>(k), all.lat_us.end());
      return all.lat_us[k];
    };
    std::printf("op=%s ops=%ld errors=%ld seconds=%.3f ops_per_s=%.0f p50_us=%u p99_us=%u p999_us=%u "
                "client_cpu_s=%.3f\n",
                o.op.c_str(), all.ops, all.errors, secs, static_cast<double>(all.ops) / secs, pct(0.50), pct(0.99),
                pct(0.999), cpu);
    for (auto& c : conns) {
      if (c.ssl) SSL_free(c.ssl);
      close(c.fd);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warden-loadgen: %s\n", e.what());
    return 1;
  }
  return 0;
}
