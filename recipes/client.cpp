#include "recipes/client.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <utility>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <chrono>
#include <condition_variable>
#include <atomic>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>

#include "recipes/session/session_core.hpp"
#include "wire/framing.hpp"
#include "wire/jute.hpp"

namespace warden::client {

namespace asio = boost::asio;
using asio::ip::tcp;
using wire::OpCode;
using Clock = std::chrono::steady_clock;

const char* state_name(State s) {
  switch (s) {
    case State::connecting: return "connecting";
    case State::connected: return "connected";
    case State::suspended: return "suspended";
    case State::reconnected: return "reconnected";
    case State::lost: return "lost";
    case State::expired: return "expired";
    case State::auth_failed: return "auth_failed";
    case State::closed: return "closed";
  }
  return "?";
}

Error::Error(Err code, const std::string& what)
    : std::runtime_error(what + ": " + std::string(wire::err_name(code))), code_(code) {}

AclList open_acl() { return {wire::Acl{wire::perms::all, wire::Id{"world", "anyone"}}}; }

ConnectString ConnectString::parse(std::string_view s) {
  ConnectString out;
  auto slash = s.find('/');
  std::string_view hosts = s.substr(0, slash);
  if (slash != std::string_view::npos) {
    out.chroot = std::string(s.substr(slash));
    while (out.chroot.size() > 1 && out.chroot.back() == '/') out.chroot.pop_back();
    if (out.chroot == "/") out.chroot.clear();
    if (out.chroot.find("//") != std::string::npos)
      throw std::invalid_argument("the chroot '" + out.chroot + "' has an empty name");
  }
  size_t from = 0;
  while (from <= hosts.size()) {
    size_t comma = std::min(hosts.find(',', from), hosts.size());
    std::string_view h = hosts.substr(from, comma - from);
    from = comma + 1;
    while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
    while (!h.empty() && h.back() == ' ') h.remove_suffix(1);
    if (h.empty()) continue;
    std::string host;
    std::string_view port = "2181";
    if (h.front() == '[') {  // [v6]:port
      auto close = h.find(']');
      if (close == std::string_view::npos) throw std::invalid_argument("'" + std::string(h) + "': unclosed '['");
      host = std::string(h.substr(1, close - 1));
      if (close + 1 < h.size()) {
        if (h[close + 1] != ':') throw std::invalid_argument("'" + std::string(h) + "': expected ':' after ']'");
        port = h.substr(close + 2);
      }
    } else if (auto colon = h.rfind(':'); colon != std::string_view::npos) {
      host = std::string(h.substr(0, colon));
      port = h.substr(colon + 1);
    } else {
      host = std::string(h);
    }
    int p = 0;
    for (char ch : port) {
      if (ch < '0' || ch > '9' || p > 65535) {
        p = -1;
        break;
      }
      p = p * 10 + (ch - '0');
    }
    if (host.empty() || port.empty() || p <= 0 || p > 65535)
      throw std::invalid_argument("'" + std::string(h) + "' is not host:port");
    out.hosts.emplace_back(host, static_cast<uint16_t>(p));
  }
  if (out.hosts.empty()) throw std::invalid_argument("the connect string '" + std::string(s) + "' names no server");
  return out;
}

std::vector<std::pair<std::string, uint16_t>> config_client_hosts(std::string_view config) {
  std::vector<std::pair<std::string, uint16_t>> out;
  auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t' || v.front() == '\r')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
    return v;
  };
  // "host:port", "[v6]:port", or "port" alone: (host, port); std::nullopt when it does not parse.
  auto split = [](std::string_view a) -> std::optional<std::pair<std::string_view, std::string_view>> {
    if (!a.empty() && a.front() == '[') {
      auto close = a.find(']');
      if (close == std::string_view::npos) return std::nullopt;
      std::string_view rest = a.substr(close + 1);
      if (!rest.empty() && rest.front() != ':') return std::nullopt;
      return std::make_pair(a.substr(1, close - 1), rest.empty() ? rest : rest.substr(1));
    }
    auto colon = a.find(':');
    if (colon == std::string_view::npos) return std::make_pair(std::string_view(), a);
    return std::make_pair(a.substr(0, colon), a.substr(colon + 1));
  };
  size_t from = 0;
  while (from < config.size()) {
    size_t nl = std::min(config.find('\n', from), config.size());
    std::string_view line = trim(config.substr(from, nl - from));
    from = nl + 1;
    auto eq = line.find('=');
    if (line.rfind("server.", 0) != 0 || eq == std::string_view::npos) continue;
    std::string_view value = trim(line.substr(eq + 1));
    auto semi = value.find(';');
    if (semi == std::string_view::npos) continue;
    auto quorum = split(trim(value.substr(0, semi)));
    std::string_view client = trim(value.substr(semi + 1));
    // In a "host:port" client address the port is after the last colon (an unbracketed
    // IPv6 wildcard "::" has more than one).
    std::optional<std::pair<std::string_view, std::string_view>> addr;
    if (!client.empty() && client.front() != '[' && client.find(':') != client.rfind(':'))
      addr = std::make_pair(client.substr(0, client.rfind(':')), client.substr(client.rfind(':') + 1));
    else
      addr = split(client);
    if (!quorum || !addr) continue;
    std::string_view host = addr->first;
    if (host.empty() || host == "0.0.0.0" || host == "::") host = quorum->first;
    uint32_t port = 0;
    auto [end, ec] = std::from_chars(addr->second.data(), addr->second.data() + addr->second.size(), port);
    if (ec != std::errc() || end != addr->second.data() + addr->second.size() || port == 0 || port > 65535 ||
        host.empty())
      continue;
    out.emplace_back(std::string(host), static_cast<uint16_t>(port));
  }
  return out;
}

namespace {
MultiOp make_op(MultiOp::Kind kind, std::string path, std::string data, int32_t version, CreateMode mode) {
  MultiOp o;
  o.kind = kind;
  o.path = std::move(path);
  o.data = std::move(data);
  o.version = version;
  o.mode = mode;
  return o;
}
}  // namespace
MultiOp MultiOp::create(std::string path, std::string data, CreateMode mode) {
  return make_op(Kind::create, std::move(path), std::move(data), -1, mode);
}
MultiOp MultiOp::remove(std::string path, int32_t version) {
  return make_op(Kind::remove, std::move(path), {}, version, CreateMode::persistent);
}
MultiOp MultiOp::set(std::string path, std::string data, int32_t version) {
  return make_op(Kind::set, std::move(path), std::move(data), version, CreateMode::persistent);
}
MultiOp MultiOp::check(std::string path, int32_t version) {
  return make_op(Kind::check, std::move(path), {}, version, CreateMode::persistent);
}

namespace {
std::string framed(const std::string& payload) {
  std::string f;
  wire::append_frame(f, payload);
  return f;
}
template <class R>
std::string request_frame(int32_t xid, OpCode op, const R& body) {
  return framed(wire::encode(wire::RequestHeader{xid, static_cast<int32_t>(op)}) + wire::encode(body));
}
}  // namespace

// Where getConfig reads (ZooDefs.CONFIG_NODE): never under a chroot.
constexpr const char* config_node = "/zookeeper/config";

struct Client::Impl {
  using Done = session::Requests::Done;
  using Request = session::Requests::Request;
  using WatchKind = session::WatchRegistry::Kind;

  Options opts;
  ConnectString cs;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  tcp::socket socket{io};
  // TLS (Options::tls): the context for every connection, and the current connection's stream
  // over `socket` (made again for each connection).
  std::shared_ptr<asio::ssl::context> tls_context;
  // Each pending operation holds a reference: drop_socket() lets go of ours, and the stream
  // (whose state the operation still uses) goes when the last one ends.
  std::shared_ptr<asio::ssl::stream<tcp::socket&>> tls;
  tcp::resolver resolver{io};
  asio::steady_timer connect_timer{io}, ping_timer{io}, read_timer{io}, lost_timer{io}, retry_timer{io};
  std::thread thread;
  std::mt19937_64 rng;

  // Read from other threads (state(), session_id() ...): under `mu`.
  mutable std::mutex mu;
  State state_ = State::connecting;
  int64_t session_id_ = 0;
  std::string passwd_ = std::string(16, '\0');
  int32_t negotiated_ = 0;
  std::string server_;
  std::string last_error_;

  // The client's thread only.
  bool connected = false;     // the handshake of the current connection is done
  bool ever_connected = false;
  bool ended = false;         // expired, auth failed or closed: no more connections
  // Invariant: every asynchronous callback (resolve, connect, read, write, timers) captures the
  // generation current when it was started and does nothing when it finds another; connect()
  // and drop_socket() bump it. So a callback of a connection that has ended never touches the
  // socket, buffers or requests of the one after it, whatever order Asio runs them in.
  uint64_t generation = 0;
  size_t next_host = 0;
  std::vector<size_t> order;
  std::pair<std::string, uint16_t> current_host;  // the latest one connect() tried
  // Options::follow_config: unknown until the first configuration is read; watching: a read of
  // /zookeeper/config is in flight or its watch is set (setWatches2 keeps it across connections).
  enum class Follow { unknown, yes, no } follow = Follow::unknown;
  bool config_watching = false;
  Zxid last_zxid = 0;
  session::Requests requests;  // xids, and what waits for a connection or for its reply
  std::deque<Callback<>> auth_waiting;
  // This connection's SASL exchange: requests wait (queued) until it is done.
  std::unique_ptr<SaslClientExchange> sasl;
  bool sasl_phase = false;
  int32_t sasl_xid = 0;
  std::vector<std::pair<std::string, std::string>> auth;
  std::string in;
  std::vector<char> chunk = std::vector<char>(64 * 1024);
  std::string out_pending, out_writing;
  bool writing = false;
  Clock::time_point last_send = Clock::now();
  // When the session was last certainly heard, and so when it is to be called lost
  // (session_core.hpp says which answers count and why).
  session::SessionClock clock{Clock::now()};
  session::WatchRegistry watches;
  std::vector<std::pair<uint64_t, std::function<void(State)>>> listeners;
  std::atomic<uint64_t> next_listener{1};

  explicit Impl(Options o) : opts(std::move(o)), cs(ConnectString::parse(opts.connect_string)) {
    rng.seed(opts.seed ? *opts.seed : std::random_device{}());
    for (size_t i = 0; i < cs.hosts.size(); ++i) order.push_back(i);
    std::shuffle(order.begin(), order.end(), rng);
    auth = opts.auth;
    if (opts.tls.enabled) tls_context = make_tls_context(opts.tls);
    if (opts.session_id) {
      if (opts.session_password.size() != 16)
        throw std::invalid_argument("a session password has 16 bytes, not " + std::to_string(opts.session_password.size()));
      session_id_ = opts.session_id;
      passwd_ = opts.session_password;
    }
  }

  // ---- paths under the chroot ----
  std::string full(const std::string& p) const {
    if (cs.chroot.empty()) return p;
    return p == "/" ? cs.chroot : cs.chroot + p;
  }
  std::string relative(const std::string& p) const {
    if (cs.chroot.empty()) return p;
    if (p == cs.chroot) return "/";
    if (p.size() > cs.chroot.size() && p.compare(0, cs.chroot.size(), cs.chroot) == 0 && p[cs.chroot.size()] == '/')
      return p.substr(cs.chroot.size());
    return p;
  }

  void set_state(State s) {
    {
      std::lock_guard<std::mutex> l(mu);
      if (state_ == s) return;
      state_ = s;
    }
    auto copy = listeners;
    for (auto& [id, f] : copy) {
      // A listener removed by an earlier one in this round is not called.
      if (std::any_of(listeners.begin(), listeners.end(), [&, id = id](auto& l) { return l.first == id; })) f(s);
    }
  }
  State get_state() const {
    std::lock_guard<std::mutex> l(mu);
    return state_;
  }

  // ---- connections ----
  void connect() {
    if (ended) return;
    uint64_t gen = ++generation;
    current_host = cs.hosts[order[next_host++ % order.size()]];
    auto [host, port] = current_host;
    {
      std::lock_guard<std::mutex> l(mu);
      server_.clear();
    }
    // Each attempt gets a share of the session timeout, as ZooKeeper's client gives it.
    int32_t share = std::max<int32_t>(1000, opts.session_timeout_ms / static_cast<int32_t>(cs.hosts.size()));
    connect_timer.expires_after(std::chrono::milliseconds(share));
    connect_timer.async_wait([self = this, gen](boost::system::error_code ec) {
      if (!ec && gen == self->generation && !self->connected) self->broken("connect timed out");
    });
    auto server_name = host + ":" + std::to_string(port);
    resolver.async_resolve(host, std::to_string(port),
                           [self = this, gen, server_name](boost::system::error_code ec,
                                                                         tcp::resolver::results_type r) {
                             if (gen != self->generation) return;
                             if (ec) return self->broken("cannot resolve " + server_name);
                             asio::async_connect(self->socket, r,
                                                 [self, gen, server_name](boost::system::error_code ec2,
                                                                          const tcp::endpoint&) {
                                                   if (gen != self->generation) return;
                                                   if (ec2) return self->broken(ec2.message());
                                                   if (self->tls_context) return self->tls_handshake(gen, server_name);
                                                   self->handshake(gen, server_name);
                                                 });
                           });
  }

  void tls_handshake(uint64_t gen, const std::string& server_name) {
    std::string host = server_name.substr(0, server_name.rfind(':'));
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    tls = std::make_shared<asio::ssl::stream<tcp::socket&>>(socket, *tls_context);
    boost::system::error_code ec;
    asio::ip::make_address(host, ec);
    if (ec) SSL_set_tlsext_host_name(tls->native_handle(), host.c_str());  // SNI for names only
    if (opts.tls.verify_hostname) tls->set_verify_callback(asio::ssl::host_name_verification(host));
    tls->async_handshake(asio::ssl::stream_base::client,
                         [self = this, gen, server_name, keep = tls](boost::system::error_code e) {
      if (gen != self->generation) return;
      if (e) return self->broken("TLS handshake with " + server_name + " failed: " + tls_reason(e));
      self->handshake(gen, server_name);
    });
  }

  static std::string tls_reason(const boost::system::error_code& e) {
    if (e.category() == asio::error::get_ssl_category())
      if (const char* r = ERR_reason_error_string(static_cast<unsigned long>(e.value()))) return r;
    if (e == asio::error::eof || e == asio::ssl::error::stream_truncated) return "the server closed the connection";
    return e.message();
  }

  static std::shared_ptr<asio::ssl::context> make_tls_context(const Options::Tls& t) {
    auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
    ctx->set_options(asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                     asio::ssl::context::no_tlsv1_1);
    auto step = [](const char* what, const std::string& file, auto f) {
      if (FILE* probe = std::fopen(file.c_str(), "rb"))
        std::fclose(probe);
      else
        throw std::invalid_argument(std::string(what) + " " + file + " cannot be read: " + std::strerror(errno));
      boost::system::error_code ec;
      f(ec);
      if (ec) throw std::invalid_argument(std::string(what) + " " + file + " cannot be used: " + tls_reason(ec));
    };
    if (t.ca_file.empty())
      ctx->set_default_verify_paths();
    else
      step("the CA file", t.ca_file, [&](auto& ec) { ctx->load_verify_file(t.ca_file, ec); });
    ctx->set_verify_mode(asio::ssl::verify_peer);
    if (!t.cert_file.empty() || !t.key_file.empty()) {
      if (t.cert_file.empty() || t.key_file.empty())
        throw std::invalid_argument("a TLS client certificate needs both its certificate and its key file");
      std::string password = t.key_password;
      ctx->set_password_callback([password](size_t, asio::ssl::context::password_purpose) { return password; });
      step("the certificate file", t.cert_file, [&](auto& ec) { ctx->use_certificate_chain_file(t.cert_file, ec); });
      step("the key file", t.key_file, [&](auto& ec) { ctx->use_private_key_file(t.key_file, asio::ssl::context::pem, ec); });
    }
    return ctx;
  }

  void handshake(uint64_t gen, const std::string& server_name) {
    boost::system::error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    {
      std::lock_guard<std::mutex> l(mu);
      server_ = server_name;
    }
    wire::ConnectRequest req;
    req.lastZxidSeen = last_zxid;
    req.timeOut = opts.session_timeout_ms;
    {
      std::lock_guard<std::mutex> l(mu);
      req.sessionId = session_id_;
      req.passwd = passwd_;
    }
    req.read_only = false;
    clock.handshake_sent(Clock::now());
    send_raw(framed(wire::encode_connect_request(req)));
    read(gen);
  }

  template <class Handler>
  void read_some(Handler h) {
    if (tls)
      tls->async_read_some(asio::buffer(chunk), [keep = tls, h = std::move(h)](boost::system::error_code ec,
                                                                               size_t n) mutable { h(ec, n); });
    else
      socket.async_read_some(asio::buffer(chunk), std::move(h));
  }

  void read(uint64_t gen) {
    read_some([self = this, gen](boost::system::error_code ec, size_t n) {
      if (gen != self->generation) return;
      if (ec) return self->broken(ec == asio::error::eof ? "the server closed the connection" : ec.message());
      self->in.append(self->chunk.data(), n);
      self->arm_read_timer();
      size_t off = 0;
      while (gen == self->generation) {
        auto s = wire::scan_frame(std::string_view(self->in).substr(off), wire::default_max_buffer * 4);
        if (s.status == wire::FrameStatus::incomplete) break;
        if (s.status == wire::FrameStatus::bad_length) return self->broken("a frame with a bad length");
        off += s.consumed;
        std::string payload(s.payload);
        self->frame(payload);
      }
      if (gen != self->generation) return;
      self->in.erase(0, off);
      self->read(gen);
    });
  }

  void arm_read_timer() {
    // Nothing heard for two thirds of the session timeout: the connection is dead (ZooKeeper's
    // client rule); the session may still live, elsewhere.
    int32_t t = negotiated_ > 0 ? negotiated_ : opts.session_timeout_ms;
    uint64_t gen = generation;
    read_timer.expires_after(std::chrono::milliseconds(t * 2 / 3));
    read_timer.async_wait([self = this, gen](boost::system::error_code ec) {
      if (!ec && gen == self->generation && self->connected) self->broken("nothing heard from the server");
    });
  }

  // A ping goes out once no confirming request (a ping, a write: see SessionClock) has been sent
  // for a third of the session timeout (ZooKeeper's client rule: half its read timeout), timed
  // from that send itself: a fixed period from the last check could let a send just after a
  // check put off the ping to nearly two thirds, and the read timer (two thirds after the last
  // reply) then fire before the ping's answer came (CI saw an idle session suspended on
  // ZooKeeper 3.8). A client that only reads pings too, so its loss deadline keeps moving.
  void schedule_ping() {
    uint64_t gen = generation;
    auto due = clock.ping_due(negotiated_);
    auto now = Clock::now();
    ping_timer.expires_after(due > now ? due - now : Clock::duration::zero());
    ping_timer.async_wait([self = this, gen](boost::system::error_code ec) {
      if (ec || gen != self->generation || !self->connected) return;
      if (Clock::now() >= self->clock.ping_due(self->negotiated_)) {
        self->clock.ping_sent(Clock::now());
        self->send_raw(framed(wire::encode(wire::RequestHeader{wire::xid::ping, static_cast<int32_t>(OpCode::ping)})));
      }
      self->schedule_ping();
    });
  }

  void frame(const std::string& payload) {
    if (!connected) return on_connect_response(payload);
    wire::Reader r(payload);
    wire::ReplyHeader h;
    h.visit(r);
    if (!r.ok()) return broken("a reply without a header");
    std::string_view body = std::string_view(payload).substr(16);
    if (h.zxid > 0) last_zxid = std::max(last_zxid, h.zxid);
    if (h.xid == wire::xid::notification) {
      auto ev = wire::decode<wire::WatcherEvent>(body);
      if (ev) deliver(static_cast<EventType>(ev->type), relative(ev->path));
      return;
    }
    if (h.xid == wire::xid::ping) {
      clock.ping_answered();
      return;
    }
    if (h.xid == wire::xid::setWatches) return;
    if (sasl_phase && h.xid == sasl_xid) return on_sasl_reply(h.err, body);
    if (h.xid == wire::xid::auth) {
      auto err = static_cast<Err>(h.err);
      if (!auth_waiting.empty()) {
        auto cb = std::move(auth_waiting.front());
        auth_waiting.pop_front();
        if (cb) cb(err);
      }
      if (err == Err::authFailed) end(State::auth_failed, Err::authFailed);
      return;
    }
    auto q = requests.answer(h.xid);
    if (!q) return broken("a reply out of order");
    clock.answered(q->sent, q->confirms);
    if (q->done) q->done(static_cast<Err>(h.err), h.zxid, body);
  }

  void on_connect_response(const std::string& payload) {
    auto resp = wire::decode_connect_response(payload);
    if (!resp) return broken("a connect response that does not decode");
    connect_timer.cancel();
    if (resp->timeOut <= 0) {
      end(State::expired, Err::sessionExpired);
      return;
    }
    clock.connected();
    {
      std::lock_guard<std::mutex> l(mu);
      session_id_ = resp->sessionId;
      passwd_ = resp->passwd.value_or(std::string(16, '\0'));
      negotiated_ = resp->timeOut;
      last_error_.clear();
    }
    connected = true;
    lost_timer.cancel();
    arm_read_timer();
    schedule_ping();
    if (!opts.sasl.mechanism.empty()) return begin_sasl();
    ready();
  }

  // SASL first, as ZooKeeper's client does it: nothing else is sent until the exchange ends.
  void begin_sasl() {
    std::string host;
    {
      std::lock_guard<std::mutex> l(mu);
      host = server_.substr(0, server_.rfind(':'));
    }
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    sasl = std::make_unique<SaslClientExchange>(opts.sasl, host);
    sasl_phase = true;
    sasl_send(sasl->start());
  }

  void sasl_send(const SaslClientExchange::Step& st) {
    using Status = SaslClientExchange::Step::Status;
    if (st.status == Status::failed) return sasl_failed("SASL " + opts.sasl.mechanism + ": " + st.error);
    if (st.status == Status::done) {
      sasl_phase = false;
      sasl.reset();
      return ready();
    }
    sasl_xid = requests.next_xid();
    send_raw(request_frame(sasl_xid, OpCode::sasl, wire::GetSaslRequest{st.token}));
  }

  void on_sasl_reply(int32_t err, std::string_view body) {
    if (err != 0) return sasl_failed("the server refused SASL " + opts.sasl.mechanism + " (" + std::to_string(err) + ")");
    auto resp = wire::decode<wire::SetSaslResponse>(body);
    if (!resp) return broken("a SASL reply that does not decode");
    sasl_send(sasl->step(resp->token.value_or(std::string())));
  }

  void sasl_failed(const std::string& why) {
    {
      std::lock_guard<std::mutex> l(mu);
      last_error_ = why;
    }
    sasl_phase = false;
    sasl.reset();
    end(State::auth_failed, Err::authFailed);
  }

  // The session is usable on this connection: auth first, then the watches, then whatever
  // waited for it.
  void ready() {
    for (const auto& [scheme, cred] : auth)
      send_raw(request_frame(wire::xid::auth, OpCode::auth, wire::AuthPacket{0, scheme, cred}));
    send_set_watches();
    bool again = ever_connected;
    ever_connected = true;
    set_state(again ? State::reconnected : State::connected);
    while (requests.any_queued() && connected) send_request(requests.pop_queued());
    if (connected) watch_config();
  }

  // ---- following the member list (Options::follow_config) ----
  void watch_config() {
    if (!opts.follow_config || follow == Follow::no || config_watching || ended) return;
    config_watching = true;
    get_data(config_node, config_node,
             [this](const WatchEvent& e) {
               if (e.type == EventType::none) return;
               config_watching = false;
               watch_config();
             },
             [this](Err e, std::string text, Stat) {
               if (e == Err::ok) return follow_members(text);
               config_watching = false;  // the watch was not set: the next connection asks again
               // A server without getConfig's node (ZooKeeper before 3.5) or one that hides it.
               if (e == Err::noNode || e == Err::noAuth || e == Err::unimplemented) follow = Follow::no;
             });
  }

  void follow_members(const std::string& text) {
    auto hosts = config_client_hosts(text);
    if (hosts.empty()) return;  // standalone, or no client addresses: nothing to follow
    auto named = [&](const std::pair<std::string, uint16_t>& h) {
      return std::find(hosts.begin(), hosts.end(), h) != hosts.end();
    };
    if (follow == Follow::unknown) follow = named(current_host) ? Follow::yes : Follow::no;
    if (follow == Follow::no) return;
    auto now = hosts, before = cs.hosts;
    std::sort(now.begin(), now.end());
    std::sort(before.begin(), before.end());
    if (now == before) return;
    bool stays = named(current_host);
    cs.hosts = std::move(hosts);
    order.clear();
    for (size_t i = 0; i < cs.hosts.size(); ++i) order.push_back(i);
    std::shuffle(order.begin(), order.end(), rng);
    next_host = 0;
    // A server that left the ensemble: the session moves on, as updateServerList moves it.
    if (connected && !stays) broken("the server left the ensemble's configuration");
  }

  void get_data(std::string server_path, std::string path, Watcher watcher, Callback<std::string, Stat> cb) {
    bool watch = static_cast<bool>(watcher);
    submit(OpCode::getData, wire::PathWatchRequest{std::move(server_path), watch},
           [this, path, watcher = std::move(watcher), cb = std::move(cb)](Err e, Zxid, std::string_view body) mutable {
             if (e != Err::ok) return cb(e, std::string(), Stat{});
             auto r = wire::decode<wire::GetDataResponse>(body);
             if (!r) return cb(Err::marshallingError, std::string(), Stat{});
             add_watch(WatchKind::data, path, std::move(watcher));
             cb(Err::ok, r->data.value_or(std::string()), r->stat);
           });
  }

  // The watches again, on a new connection (getConfig's outside the chroot).
  void send_set_watches() {
    auto server_path = [this](const std::string& p) { return p == config_node ? p : full(p); };
    for (const auto& sw : watches.set_watches(last_zxid, server_path))
      send_raw(request_frame(wire::xid::setWatches, OpCode::setWatches2, sw));
  }

  // The connection is gone: what was in flight failed (its outcome unknown), the rest waits
  // for the next one, with the session, until the session is reported lost.
  void broken(const std::string& why) {
    if (ended) return;
    {
      std::lock_guard<std::mutex> l(mu);
      last_error_ = why;
    }
    bool was = connected;
    drop_socket();
    fail_in_flight(Err::connectionLoss);
    if (was) {
      set_state(State::suspended);
      int32_t t = negotiated_ > 0 ? negotiated_ : opts.session_timeout_ms;
      lost_timer.expires_at(clock.lost_at(t));
      lost_timer.async_wait([self = this](boost::system::error_code ec) {
        if (ec || self->connected || self->ended) return;
        self->set_state(State::lost);
        // Nothing is waiting for a connection any more: what the session may no longer have
        // fails now (ConnectionLoss; it was never sent), as ZooKeeper's client fails its queue
        // when a connection attempt fails. Until a connection is back, new requests fail at
        // once (send_request).
        self->fail_queued(Err::connectionLoss);
      });
    }
    // The next server at once after a working connection; after a failed attempt a short pause
    // once every server was tried.
    auto pause = was || next_host % order.size() != 0 ? std::chrono::milliseconds(0) : std::chrono::milliseconds(100);
    retry_timer.expires_after(pause);
    retry_timer.async_wait([self = this](boost::system::error_code ec) {
      if (!ec && !self->ended && !self->connected) self->connect();
    });
  }

  void drop_socket() {
    ++generation;
    connected = false;
    boost::system::error_code ec;
    sasl.reset();  // an exchange under way is begun again on the next connection
    sasl_phase = false;
    tls.reset();
    socket.close(ec);
    socket = tcp::socket(io);
    resolver.cancel();
    connect_timer.cancel();
    ping_timer.cancel();
    read_timer.cancel();
    in.clear();
    clock.connection_dropped();
    out_pending.clear();
    out_writing.clear();
    writing = false;
  }

  void fail_queued(Err e) {
    auto waiting = requests.take_queued();
    for (auto& q : waiting)
      if (q.done) q.done(e, 0, {});
  }

  void fail_in_flight(Err e) {
    auto failed = requests.take_in_flight();
    auto auths = std::move(auth_waiting);
    auth_waiting.clear();
    for (auto& q : failed)
      if (q.done) q.done(e, 0, {});
    for (auto& cb : auths)
      if (cb) cb(e);
  }

  // No more connections: expired, auth failed or closed.
  void end(State s, Err e) {
    ended = true;
    drop_socket();
    lost_timer.cancel();
    retry_timer.cancel();
    fail_in_flight(e);
    fail_queued(e);
    watches.clear();
    set_state(s);
  }

  void send_raw(std::string frame) {
    out_pending += frame;
    last_send = Clock::now();
    flush();
  }

  void flush() {
    if (writing || out_pending.empty()) return;
    writing = true;
    out_writing.swap(out_pending);
    out_pending.clear();
    uint64_t gen = generation;
    auto done = [self = this, gen](boost::system::error_code ec, size_t) {
      if (gen != self->generation) return;
      self->writing = false;
      self->out_writing.clear();
      if (ec) return self->broken(ec.message());
      self->flush();
    };
    if (tls)
      asio::async_write(*tls, asio::buffer(out_writing), [keep = tls, done](boost::system::error_code ec, size_t n) {
        done(ec, n);
      });
    else
      asio::async_write(socket, asio::buffer(out_writing), std::move(done));
  }

  void send_request(Request q) {
    if (ended) {
      if (q.done) q.done(get_state() == State::closed ? Err::sessionExpired : Err::sessionExpired, 0, {});
      return;
    }
    if (!connected || sasl_phase) {
      // Lost, or too many waiting already: fails at once rather than waiting without bound.
      if (get_state() == State::lost || !requests.queue(q))
        if (q.done) q.done(Err::connectionLoss, 0, {});
      return;
    }
    std::string f = q.frame;
    q.sent = Clock::now();
    clock.request_sent(q.sent, q.confirms);
    requests.sent(std::move(q));
    send_raw(std::move(f));
  }

  template <class R>
  void submit(OpCode op, const R& body, Done done) {
    asio::post(io, [self = this, op, body, done = std::move(done)]() mutable {
      int32_t xid = self->requests.next_xid();
      Request q{xid, op, request_frame(xid, op, body), std::move(done), {}, wire::goes_to_leader(op)};
      self->send_request(std::move(q));
    });
  }

  // ---- watches ----
  void add_watch(WatchKind k, const std::string& path, Watcher w) { watches.add(k, path, std::move(w)); }
  void deliver(EventType t, const std::string& path) {
    WatchEvent ev{t, path};
    for (auto& w : watches.fire(t, path)) w(ev);
  }
};

// ---- the public side ----

Client::Client(Options options) : impl_(std::make_shared<Impl>(std::move(options))) {
  impl_->thread = std::thread([i = impl_.get()] { i->io.run(); });
}

Client::~Client() {
  try {
    close();
  } catch (...) {
  }
  impl_->work.reset();
  asio::post(impl_->io, [i = impl_.get()] {
    i->drop_socket();
    i->connect_timer.cancel();
    i->lost_timer.cancel();
    i->retry_timer.cancel();
  });
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

namespace {
void not_on_client_thread(const std::thread& t) {
  if (std::this_thread::get_id() == t.get_id())
    throw std::logic_error("a blocking call of warden::client::Client from one of its own callbacks");
}
}  // namespace

void Client::start() {
  not_on_client_thread(impl_->thread);
  auto done = std::make_shared<std::promise<State>>();
  auto fut = done->get_future();
  auto fired = std::make_shared<bool>(false);
  asio::post(impl_->io, [i = impl_.get(), done, fired] {
    i->listeners.emplace_back(0, [done, fired](State s) {
      if (*fired) return;
      if (s == State::connected || s == State::expired || s == State::auth_failed || s == State::closed) {
        *fired = true;
        done->set_value(s);
      }
    });
    i->set_state(State::connecting);
    i->connect();
  });
  if (fut.wait_for(std::chrono::milliseconds(impl_->opts.connect_timeout_ms)) != std::future_status::ready) {
    asio::post(impl_->io, [i = impl_.get()] { i->end(State::closed, Err::connectionLoss); });
    std::string why = last_connection_error();
    throw Error(Err::connectionLoss, "no server of '" + impl_->opts.connect_string + "' answered within " +
                                         std::to_string(impl_->opts.connect_timeout_ms) + " ms" +
                                         (why.empty() ? std::string() : " (last: " + why + ")"));
  }
  State s = fut.get();
  if (s == State::expired) throw Error(Err::sessionExpired, "connecting");
  if (s == State::auth_failed) {
    std::string why = last_connection_error();
    throw Error(Err::authFailed, "connecting" + (why.empty() ? std::string() : " (" + why + ")"));
  }
  if (s != State::connected) throw Error(Err::connectionLoss, "connecting");
}

void Client::close() {
  if (std::this_thread::get_id() == impl_->thread.get_id()) {
    impl_->end(State::closed, Err::sessionExpired);
    return;
  }
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  asio::post(impl_->io, [i = impl_.get(), done] {
    if (i->ended) return done->set_value();
    if (!i->connected) {
      i->end(State::closed, Err::sessionExpired);
      return done->set_value();
    }
    int32_t xid = i->requests.next_xid();
    Impl::Request q{xid, OpCode::closeSession,
                    framed(wire::encode(wire::RequestHeader{xid, static_cast<int32_t>(OpCode::closeSession)})),
                    [i, done](Err, Zxid, std::string_view) {
                      i->end(State::closed, Err::sessionExpired);
                      done->set_value();
                    }};
    i->send_request(std::move(q));
  });
  // A server that does not answer the close: the session expires by itself.
  if (fut.wait_for(std::chrono::seconds(5)) != std::future_status::ready)
    asio::post(impl_->io, [i = impl_.get()] { i->end(State::closed, Err::sessionExpired); });
}

uint64_t Client::on_state(std::function<void(State)> listener) {
  uint64_t id = impl_->next_listener++;
  asio::post(impl_->io, [i = impl_.get(), id, l = std::move(listener)] { i->listeners.emplace_back(id, l); });
  return id;
}

void Client::remove_state_listener(uint64_t id) {
  auto* i = impl_.get();
  auto drop = [i, id] {
    i->listeners.erase(std::remove_if(i->listeners.begin(), i->listeners.end(), [id](auto& l) { return l.first == id; }),
                       i->listeners.end());
  };
  if (std::this_thread::get_id() == i->thread.get_id()) return drop();
  auto done = std::make_shared<std::promise<void>>();
  auto f = done->get_future();
  asio::post(i->io, [drop, done] {
    drop();
    done->set_value();
  });
  // The client's thread may have stopped (the client is being destroyed): then nothing runs.
  f.wait_for(std::chrono::seconds(10));
}
State Client::state() const { return impl_->get_state(); }
int64_t Client::session_id() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->session_id_;
}
std::string Client::session_password() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->passwd_;
}
int32_t Client::negotiated_timeout_ms() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->negotiated_;
}
std::string Client::server() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->server_;
}
std::string Client::last_connection_error() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->last_error_;
}
void Client::drop_connection() {
  asio::post(impl_->io, [i = impl_.get()] {
    if (i->connected) i->broken("dropped by the user");
  });
}

// ---- asynchronous operations ----

void Client::create_async(std::string path, std::string data, CreateMode mode, AclList acl, int64_t ttl_ms,
                          Callback<std::string, Stat> cb) {
  auto* i = impl_.get();
  auto done = [i, cb = std::move(cb)](Err e, Zxid, std::string_view body) {
    if (e != Err::ok) return cb(e, std::string(), Stat{});
    auto r = wire::decode<wire::Create2Response>(body);
    if (!r) return cb(Err::marshallingError, std::string(), Stat{});
    cb(Err::ok, i->relative(r->path), r->stat);
  };
  auto flags = static_cast<int32_t>(mode);
  if (wire::is_ttl(mode))
    i->submit(OpCode::createTTL, wire::CreateTTLRequest{i->full(path), data, acl, flags, ttl_ms}, std::move(done));
  else if (mode == CreateMode::container)
    i->submit(OpCode::createContainer, wire::CreateRequest{i->full(path), data, acl, flags}, std::move(done));
  else
    i->submit(OpCode::create2, wire::CreateRequest{i->full(path), data, acl, flags}, std::move(done));
}

void Client::remove_async(std::string path, int32_t version, Callback<> cb) {
  impl_->submit(OpCode::remove, wire::DeleteRequest{impl_->full(path), version},
                [cb = std::move(cb)](Err e, Zxid, std::string_view) { cb(e); });
}

void Client::exists_async(std::string path, Watcher watcher, Callback<std::optional<Stat>> cb) {
  auto* i = impl_.get();
  bool watch = static_cast<bool>(watcher);
  i->submit(OpCode::exists, wire::PathWatchRequest{i->full(path), watch},
            [i, path, watcher = std::move(watcher), cb = std::move(cb)](Err e, Zxid, std::string_view body) mutable {
              if (e == Err::noNode) {
                i->add_watch(Impl::WatchKind::exist, path, std::move(watcher));
                return cb(Err::ok, std::nullopt);
              }
              if (e != Err::ok) return cb(e, std::nullopt);
              auto r = wire::decode<wire::StatResponse>(body);
              if (!r) return cb(Err::marshallingError, std::nullopt);
              i->add_watch(Impl::WatchKind::data, path, std::move(watcher));
              cb(Err::ok, r->stat);
            });
}

void Client::get_async(std::string path, Watcher watcher, Callback<std::string, Stat> cb) {
  std::string server_path = impl_->full(path);
  get_data(std::move(server_path), std::move(path), std::move(watcher), std::move(cb));
}

void Client::get_data(std::string server_path, std::string path, Watcher watcher, Callback<std::string, Stat> cb) {
  impl_->get_data(std::move(server_path), std::move(path), std::move(watcher), std::move(cb));
}

void Client::config_async(Watcher watcher, Callback<std::string, Stat> cb) {
  // Never under the chroot, as ZooKeeper's getConfig; its events keep the whole path too.
  get_data(config_node, config_node, std::move(watcher), std::move(cb));
}

void Client::reconfig_async(std::optional<std::string> joining, std::optional<std::string> leaving,
                            std::optional<std::string> members, int64_t from_config, Callback<std::string, Stat> cb) {
  impl_->submit(OpCode::reconfig,
                wire::ReconfigRequest{std::move(joining), std::move(leaving), std::move(members), from_config},
                [cb = std::move(cb)](Err e, Zxid, std::string_view body) {
                  if (e != Err::ok) return cb(e, std::string(), Stat{});
                  auto r = wire::decode<wire::GetDataResponse>(body);
                  if (!r) return cb(Err::marshallingError, std::string(), Stat{});
                  cb(Err::ok, r->data.value_or(std::string()), r->stat);
                });
}

void Client::set_async(std::string path, std::string data, int32_t version, Callback<Stat> cb) {
  impl_->submit(OpCode::setData, wire::SetDataRequest{impl_->full(path), data, version},
                [cb = std::move(cb)](Err e, Zxid, std::string_view body) {
                  if (e != Err::ok) return cb(e, Stat{});
                  auto r = wire::decode<wire::StatResponse>(body);
                  if (!r) return cb(Err::marshallingError, Stat{});
                  cb(Err::ok, r->stat);
                });
}

void Client::children_async(std::string path, Watcher watcher, Callback<std::vector<std::string>, Stat> cb) {
  auto* i = impl_.get();
  bool watch = static_cast<bool>(watcher);
  i->submit(OpCode::getChildren2, wire::PathWatchRequest{i->full(path), watch},
            [i, path, watcher = std::move(watcher), cb = std::move(cb)](Err e, Zxid, std::string_view body) mutable {
              if (e != Err::ok) return cb(e, {}, Stat{});
              auto r = wire::decode<wire::GetChildren2Response>(body);
              if (!r) return cb(Err::marshallingError, {}, Stat{});
              i->add_watch(Impl::WatchKind::child, path, std::move(watcher));
              cb(Err::ok, std::move(r->children), r->stat);
            });
}

void Client::get_acl_async(std::string path, Callback<AclList, Stat> cb) {
  impl_->submit(OpCode::getACL, wire::PathRequest{impl_->full(path)},
                [cb = std::move(cb)](Err e, Zxid, std::string_view body) {
                  if (e != Err::ok) return cb(e, {}, Stat{});
                  auto r = wire::decode<wire::GetACLResponse>(body);
                  if (!r) return cb(Err::marshallingError, {}, Stat{});
                  cb(Err::ok, std::move(r->acl), r->stat);
                });
}

void Client::set_acl_async(std::string path, AclList acl, int32_t version, Callback<Stat> cb) {
  impl_->submit(OpCode::setACL, wire::SetACLRequest{impl_->full(path), acl, version},
                [cb = std::move(cb)](Err e, Zxid, std::string_view body) {
                  if (e != Err::ok) return cb(e, Stat{});
                  auto r = wire::decode<wire::StatResponse>(body);
                  if (!r) return cb(Err::marshallingError, Stat{});
                  cb(Err::ok, r->stat);
                });
}

void Client::sync_async(std::string path, Callback<> cb) {
  impl_->submit(OpCode::sync, wire::PathRequest{impl_->full(path)},
                [cb = std::move(cb)](Err e, Zxid, std::string_view) { cb(e); });
}

void Client::multi_async(std::vector<MultiOp> ops, Callback<std::vector<MultiResult>> cb) {
  auto* i = impl_.get();
  std::vector<wire::MultiOp> w;
  for (auto& o : ops) {
    switch (o.kind) {
      case MultiOp::Kind::create:
        w.push_back({OpCode::create2, wire::CreateRequest{i->full(o.path), o.data, o.acl, static_cast<int32_t>(o.mode)}});
        break;
      case MultiOp::Kind::remove:
        w.push_back({OpCode::remove, wire::DeleteRequest{i->full(o.path), o.version}});
        break;
      case MultiOp::Kind::set:
        w.push_back({OpCode::setData, wire::SetDataRequest{i->full(o.path), o.data, o.version}});
        break;
      case MultiOp::Kind::check:
        w.push_back({OpCode::check, wire::CheckVersionRequest{i->full(o.path), o.version}});
        break;
    }
  }
  std::string body = wire::encode_multi_request(w);
  asio::post(i->io, [i, body = std::move(body), cb = std::move(cb)]() mutable {
    int32_t xid = i->requests.next_xid();
    std::string frame = framed(wire::encode(wire::RequestHeader{xid, static_cast<int32_t>(OpCode::multi)}) + body);
    i->send_request(Impl::Request{xid, OpCode::multi, std::move(frame),
                                  [i, cb = std::move(cb)](Err e, Zxid, std::string_view b) {
                                    if (e != Err::ok) return cb(e, {});
                                    auto r = wire::decode_multi_response(b);
                                    if (!r) return cb(Err::marshallingError, {});
                                    std::vector<MultiResult> out;
                                    Err first = Err::ok;
                                    for (auto& res : *r) {
                                      MultiResult m;
                                      m.err = static_cast<Err>(res.err);
                                      if (auto* c2 = std::get_if<wire::Create2Response>(&res.record)) {
                                        m.path = i->relative(c2->path);
                                        m.stat = c2->stat;
                                      } else if (auto* c1 = std::get_if<wire::CreateResponse>(&res.record)) {
                                        m.path = i->relative(c1->path);
                                      } else if (auto* st = std::get_if<wire::StatResponse>(&res.record)) {
                                        m.stat = st->stat;
                                      } else if (auto* er = std::get_if<wire::ErrorResponse>(&res.record)) {
                                        m.err = static_cast<Err>(er->err);
                                      }
                                      // The op that failed, not the runtimeInconsistency of the rest.
                                      if (first == Err::ok && m.err != Err::ok && m.err != Err::runtimeInconsistency)
                                        first = m.err;
                                      out.push_back(std::move(m));
                                    }
                                    cb(first, std::move(out));
                                  }});
  });
}

void Client::add_auth_async(std::string scheme, std::string credentials, Callback<> cb) {
  asio::post(impl_->io, [i = impl_.get(), scheme, credentials, cb = std::move(cb)]() mutable {
    i->auth.emplace_back(scheme, credentials);
    if (!i->connected) return cb(Err::ok);  // sent with the next connection's handshake
    i->auth_waiting.push_back(std::move(cb));
    i->send_raw(request_frame(wire::xid::auth, OpCode::auth, wire::AuthPacket{0, scheme, credentials}));
  });
}

void Client::add_watch_async(std::string path, bool recursive, Watcher watcher, Callback<> cb) {
  auto* i = impl_.get();
  i->submit(OpCode::addWatch, wire::AddWatchRequest{i->full(path), recursive ? 1 : 0},
            [i, path, recursive, watcher = std::move(watcher), cb = std::move(cb)](Err e, Zxid, std::string_view) {
              if (e == Err::ok) i->watches.add_persistent(path, recursive, watcher);
              cb(e);
            });
}

void Client::remove_watches_async(std::string path, Callback<> cb) {
  auto* i = impl_.get();
  // WatcherType.Any (3): every watch of this client on the path, one-shot or persistent.
  i->submit(OpCode::removeWatches, wire::RemoveWatchesRequest{i->full(path), 3},
            [i, path, cb = std::move(cb)](Err e, Zxid, std::string_view) {
              if (e == Err::ok || e == Err::noWatcher) {
                i->watches.remove_all(path);
              }
              cb(e);
            });
}

void Client::ephemerals_async(std::string prefix, Callback<std::vector<std::string>> cb) {
  auto* i = impl_.get();
  i->submit(OpCode::getEphemerals, wire::PathRequest{i->full(prefix)},
            [i, cb = std::move(cb)](Err e, Zxid, std::string_view body) {
              if (e != Err::ok) return cb(e, {});
              auto r = wire::decode<wire::GetEphemeralsResponse>(body);
              if (!r) return cb(Err::marshallingError, {});
              for (auto& p : r->ephemerals) p = i->relative(p);
              cb(Err::ok, std::move(r->ephemerals));
            });
}

void Client::all_children_number_async(std::string path, Callback<int32_t> cb) {
  impl_->submit(OpCode::getAllChildrenNumber, wire::PathRequest{impl_->full(path)},
                [cb = std::move(cb)](Err e, Zxid, std::string_view body) {
                  if (e != Err::ok) return cb(e, 0);
                  auto r = wire::decode<wire::GetAllChildrenNumberResponse>(body);
                  if (!r) return cb(Err::marshallingError, 0);
                  cb(Err::ok, r->totalNumber);
                });
}

// ---- blocking forms ----

namespace {
// Runs an asynchronous call and waits for its callback; a failure throws Error(code, what).
// It always ends: a reply, a broken connection (ConnectionLoss), a session reported lost
// (ConnectionLoss, within a session timeout of the last answer) or ended; and with
// Options::request_timeout_ms, RequestTimeout once that passed (the request's outcome is then
// unknown, as with ZooKeeper's zookeeper.request.timeout).
thread_local std::optional<std::chrono::steady_clock::time_point> call_deadline;

template <class... T, class Start>
std::tuple<T...> wait_for(const std::thread& t, int32_t timeout_ms, const std::string& what, Start start) {
  not_on_client_thread(t);
  auto p = std::make_shared<std::promise<std::pair<Err, std::tuple<T...>>>>();
  auto f = p->get_future();
  start([p](Err e, T... v) { p->set_value({e, std::tuple<T...>(std::move(v)...)}); });
  std::optional<std::chrono::steady_clock::time_point> until;
  if (timeout_ms > 0) until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool callers = call_deadline && (!until || *call_deadline < *until);
  if (callers) until = call_deadline;
  if (until && f.wait_until(*until) != std::future_status::ready)
    throw Error(Err::requestTimeout, what + (callers ? std::string(": the caller's deadline passed")
                                                     : ": no reply within " + std::to_string(timeout_ms) + " ms"));
  auto [e, v] = f.get();
  if (e != Err::ok) throw Error(e, what);
  return std::move(v);
}
}  // namespace

CallDeadline::CallDeadline(std::optional<std::chrono::steady_clock::time_point> deadline) : previous_(call_deadline) {
  call_deadline = deadline;
}
CallDeadline::~CallDeadline() { call_deadline = previous_; }

std::pair<std::string, Stat> Client::create2(const std::string& path, const std::string& data, CreateMode mode,
                                             AclList acl, int64_t ttl_ms) {
  auto [p, s] = wait_for<std::string, Stat>(
      impl_->thread, impl_->opts.request_timeout_ms, "create " + path,
      [&](auto cb) { create_async(path, data, mode, std::move(acl), ttl_ms, std::move(cb)); });
  return {p, s};
}
std::string Client::create(const std::string& path, const std::string& data, CreateMode mode, AclList acl,
                           int64_t ttl_ms) {
  return create2(path, data, mode, std::move(acl), ttl_ms).first;
}
void Client::remove(const std::string& path, int32_t version) {
  wait_for<>(impl_->thread, impl_->opts.request_timeout_ms, "delete " + path,
             [&](auto cb) { remove_async(path, version, std::move(cb)); });
}
std::optional<Stat> Client::exists(const std::string& path, Watcher watcher) {
  return std::get<0>(
      wait_for<std::optional<Stat>>(impl_->thread, impl_->opts.request_timeout_ms, "exists " + path,
                                    [&](auto cb) { exists_async(path, std::move(watcher), std::move(cb)); }));
}
std::pair<std::string, Stat> Client::get(const std::string& path, Watcher watcher) {
  auto [d, s] = wait_for<std::string, Stat>(impl_->thread, impl_->opts.request_timeout_ms, "get " + path,
                                            [&](auto cb) { get_async(path, std::move(watcher), std::move(cb)); });
  return {d, s};
}
std::pair<std::string, Stat> Client::reconfig(std::optional<std::string> joining, std::optional<std::string> leaving,
                                              std::optional<std::string> members, int64_t from_config) {
  auto [d, s] = wait_for<std::string, Stat>(impl_->thread, impl_->opts.request_timeout_ms, "reconfig", [&](auto cb) {
    reconfig_async(std::move(joining), std::move(leaving), std::move(members), from_config, std::move(cb));
  });
  return {d, s};
}
std::pair<std::string, Stat> Client::config(Watcher watcher) {
  auto [d, s] = wait_for<std::string, Stat>(impl_->thread, impl_->opts.request_timeout_ms, "config",
                                            [&](auto cb) { config_async(std::move(watcher), std::move(cb)); });
  return {d, s};
}
Stat Client::set(const std::string& path, const std::string& data, int32_t version) {
  return std::get<0>(wait_for<Stat>(impl_->thread, impl_->opts.request_timeout_ms, "set " + path,
                                    [&](auto cb) { set_async(path, data, version, std::move(cb)); }));
}
std::vector<std::string> Client::children(const std::string& path, Watcher watcher) {
  return children2(path, std::move(watcher)).first;
}
std::pair<std::vector<std::string>, Stat> Client::children2(const std::string& path, Watcher watcher) {
  auto [c, s] = wait_for<std::vector<std::string>, Stat>(
      impl_->thread, impl_->opts.request_timeout_ms, "ls " + path,
      [&](auto cb) { children_async(path, std::move(watcher), std::move(cb)); });
  return {c, s};
}
std::pair<AclList, Stat> Client::get_acl(const std::string& path) {
  auto [a, s] = wait_for<AclList, Stat>(impl_->thread, impl_->opts.request_timeout_ms, "getAcl " + path,
                                        [&](auto cb) { get_acl_async(path, std::move(cb)); });
  return {a, s};
}
Stat Client::set_acl(const std::string& path, AclList acl, int32_t version) {
  return std::get<0>(wait_for<Stat>(impl_->thread, impl_->opts.request_timeout_ms, "setAcl " + path,
                                    [&](auto cb) { set_acl_async(path, std::move(acl), version, std::move(cb)); }));
}
void Client::sync(const std::string& path) {
  wait_for<>(impl_->thread, impl_->opts.request_timeout_ms, "sync " + path,
             [&](auto cb) { sync_async(path, std::move(cb)); });
}
std::vector<MultiResult> Client::multi(std::vector<MultiOp> ops) {
  return std::get<0>(wait_for<std::vector<MultiResult>>(impl_->thread, impl_->opts.request_timeout_ms, "multi",
                                                        [&](auto cb) { multi_async(std::move(ops), std::move(cb)); }));
}
void Client::add_auth(const std::string& scheme, const std::string& credentials) {
  wait_for<>(impl_->thread, impl_->opts.request_timeout_ms, "addauth " + scheme,
             [&](auto cb) { add_auth_async(scheme, credentials, std::move(cb)); });
}
void Client::add_watch(const std::string& path, bool recursive, Watcher watcher) {
  wait_for<>(impl_->thread, impl_->opts.request_timeout_ms, "addWatch " + path,
             [&](auto cb) { add_watch_async(path, recursive, std::move(watcher), std::move(cb)); });
}
void Client::remove_watches(const std::string& path) {
  wait_for<>(impl_->thread, impl_->opts.request_timeout_ms, "removeWatches " + path,
             [&](auto cb) { remove_watches_async(path, std::move(cb)); });
}
std::vector<std::string> Client::ephemerals(const std::string& prefix) {
  return std::get<0>(wait_for<std::vector<std::string>>(impl_->thread, impl_->opts.request_timeout_ms,
                                                        "getEphemerals " + prefix,
                                                        [&](auto cb) { ephemerals_async(prefix, std::move(cb)); }));
}
int32_t Client::all_children_number(const std::string& path) {
  return std::get<0>(wait_for<int32_t>(impl_->thread, impl_->opts.request_timeout_ms, "getAllChildrenNumber " + path,
                                       [&](auto cb) { all_children_number_async(path, std::move(cb)); }));
}

void Client::ensure_path(const std::string& path, bool containers) {
  if (path.empty() || path == "/") return;
  size_t at = 1;
  for (;;) {
    size_t slash = path.find('/', at);
    std::string prefix = path.substr(0, slash);
    try {
      create(prefix, {}, containers && slash != std::string::npos ? CreateMode::container : CreateMode::persistent);
    } catch (const Error& e) {
      if (e.code() != Err::nodeExists) throw;
    }
    if (slash == std::string::npos) return;
    at = slash + 1;
  }
}

}  // namespace warden::client
