#include "consensus/peer_transport.hpp"

#include "consensus/peer_codec.hpp"
#include "consensus/peer_framing.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <chrono>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace warden::consensus {

static_assert(PeerTransport::max_frame == max_peer_message_bytes, "a frame the transport takes must decode");

namespace asio = boost::asio;
using asio::ip::tcp;

using namespace peer_framing;

namespace {
constexpr auto min_backoff = std::chrono::milliseconds(20);
constexpr auto max_backoff = std::chrono::milliseconds(1000);
// A connection that lived this long was healthy: the next failure starts the backoff again.
constexpr auto healthy_after = std::chrono::seconds(2);

using TlsStream = asio::ssl::stream<tcp::socket&>;

std::string tls_reason(const boost::system::error_code& e) {
  if (e.category() == asio::error::get_ssl_category())
    if (const char* r = ERR_reason_error_string(static_cast<unsigned long>(e.value()))) return r;
  if (e == asio::error::eof || e == asio::ssl::error::stream_truncated) return "the other side closed the connection";
  return e.message();
}

// The certificate names `host` (an address or a DNS name), as ZooKeeper's hostname check asks.
bool certificate_names(SSL* ssl, const std::string& host) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (!cert) return false;
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  bool ok = ec ? X509_check_host(cert, host.c_str(), host.size(), 0, nullptr) == 1
               : X509_check_ip_asc(cert, host.c_str(), 0) == 1;
  X509_free(cert);
  return ok;
}

std::string endpoint_text(const tcp::socket& s) {
  boost::system::error_code ec;
  auto ep = s.remote_endpoint(ec);
  return ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
}
// The address a connection comes from, as the configuration's addresses are written (an IPv4
// address mapped into IPv6 as plain IPv4).
std::string remote_address(const tcp::socket& s) {
  boost::system::error_code ec;
  auto ep = s.remote_endpoint(ec);
  if (ec) return {};
  auto a = ep.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  return a.to_string();
}
}  // namespace

struct PeerTransport::Impl {
  asio::io_context& io;
  int64_t self;
  std::map<int64_t, Member> members;
  bool strangers = false;  // set_accept_strangers
  // Servers outside the configuration that add_stranger() took: forgotten with their last
  // connection to this member.
  std::set<int64_t> stranger_ids;
  std::chrono::steady_clock::time_point last_stranger_warning{};
  // Resolves a member a reconfig added: getaddrinfo runs on Asio's resolver thread, never here.
  tcp::resolver member_resolver{io};
  Receive receive;
  tcp::acceptor quorum{io}, election{io};
  bool stopping = false;
  uint64_t refused = 0;
  uint64_t authenticated = 0;
  std::function<void(int64_t)> on_lost;
  std::function<void(int64_t)> on_written;
  PeerTransport::Tls tls;
  PeerTransport::Auth auth;
  bool started = false;
  std::vector<std::tuple<int64_t, std::string, bool>> early;  // sent before start()
  // Each member's host resolved at start: where its connections must come from (empty: it did
  // not resolve then, and is not checked).
  std::map<int64_t, std::vector<std::string>> addresses;
  std::string own_address;  // this member's host, resolved: outgoing connections leave from it
  size_t unidentified = 0;  // incoming connections that owe their hello
  std::chrono::steady_clock::time_point last_cap_warning{};
  // An accept that fails for want of descriptors or memory leaves the port readable: the next try
  // waits this long (as ZooKeeper's accept thread pauses), instead of spinning the server thread.
  static constexpr auto accept_pause = std::chrono::milliseconds(10);
  asio::steady_timer quorum_pause{io}, election_pause{io};
  std::chrono::steady_clock::time_point last_accept_warning{};

  // A connection another member made to us: hello, then frames.
  struct Incoming : std::enable_shared_from_this<Incoming> {
    Impl& t;
    tcp::socket socket;
    bool vote;  // came in on the election port
    std::string peer;
    int64_t from = 0;
    std::string in;
    std::vector<char> chunk = std::vector<char>(64 * 1024);
    bool hello_done = false, closed = false;
    // Identified: the hello taken and, where SASL is required, the learner authenticated.
    bool identified = false;
    std::unique_ptr<PeerTransport::Auth::Exchange> exchange;  // while its learner authenticates
    bool authenticated = false;
    std::string out, writing_out;  // auth frames for the learner
    bool out_writing = false, close_after_write = false;
    asio::steady_timer hello_timer;
    std::shared_ptr<asio::ssl::context> context;
    std::unique_ptr<TlsStream> tls;  // over `socket`, once TLS is spoken
    Incoming(Impl& impl, tcp::socket s, bool v)
        : t(impl), socket(std::move(s)), vote(v), peer(endpoint_text(socket)), hello_timer(impl.io) {}

    // Plaintext, TLS, or (portUnification) whichever the first byte says; the hello's timer
    // bounds a handshake too.
    void begin() {
      using Accept = PeerTransport::Tls::Accept;
      if (t.tls.accept == Accept::tls) return handshake();
      if (t.tls.accept == Accept::plain) return read();
      socket.async_wait(tcp::socket::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
        if (ec || self->closed || self->t.stopping) return self->close();
        unsigned char first = 0;
        size_t n = self->socket.receive(asio::buffer(&first, 1), tcp::socket::message_peek, ec);
        if (ec || n == 0) return self->close();
        if (first == tls_record_handshake) return self->handshake();
        self->read();
      });
    }
    void handshake() {
      context = t.tls.server();
      tls = std::make_unique<TlsStream>(socket, *context);
      tls->async_handshake(asio::ssl::stream_base::server, [self = shared_from_this()](boost::system::error_code ec) {
        if (self->closed || self->t.stopping) return;
        if (ec) {
          ++self->t.refused;
          spdlog::warn("refusing a peer connection from {}: TLS handshake failed: {}", self->peer, tls_reason(ec));
          return self->close();
        }
        self->read();
      });
    }

    void start() {
      ++t.unidentified;
      hello_timer.expires_after(std::chrono::milliseconds(PeerTransport::hello_timeout_ms));
      hello_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (ec || self->identified || self->closed || self->t.stopping) return;
        ++self->t.refused;
        spdlog::warn("closing a peer connection from {}: {} within {} ms", self->peer,
                     self->hello_done ? "no SASL authentication (quorum.auth.serverRequireSasl)" : "no hello",
                     PeerTransport::hello_timeout_ms);
        self->close();
      });
      begin();
    }
    void read() {
      auto done = [self = shared_from_this()](boost::system::error_code ec, size_t n) {
        if (ec || self->t.stopping || self->closed) return self->close();
        if (self->close_after_write) return;  // refused: the answer goes out, then the connection
        if (self->identified) self->arm_idle();
        bool keep = false;
        try {
          self->in.append(self->chunk.data(), n);
          keep = self->consume();
        } catch (const std::bad_alloc&) {
          // A frame this member cannot hold: that connection goes, the I/O loop stays.
          spdlog::error("closing the connection from server {} ({}): out of memory for its frame", self->from,
                        self->peer);
          ++self->t.refused;
        }
        if (!keep) return self->close();
        self->read();
      };
      if (tls)
        tls->async_read_some(asio::buffer(chunk), std::move(done));
      else
        socket.async_read_some(asio::buffer(chunk), std::move(done));
    }
    // Identified: silence past idle_timeout closes the connection (the timer is the hello's).
    void arm_idle() {
      hello_timer.expires_after(std::chrono::milliseconds(PeerTransport::idle_timeout_ms));
      hello_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (ec || self->closed || self->t.stopping) return;
        ++self->t.refused;
        spdlog::warn("closing the connection from server {} ({}): silent for {} ms", self->from, self->peer,
                     PeerTransport::idle_timeout_ms);
        self->close();
      });
    }
    // Why hello `h`, whose first byte is `first`, is refused; "" when it is taken.
    std::string refusal(const Hello& h, unsigned char first) const {
      const int64_t sender = h.sender, target = h.target;
      if (!tls && first == tls_record_handshake)
        return "it speaks TLS, and this member takes plaintext only (sslQuorum, portUnification)";
      if (!h.magic) return "it does not speak the Warden peer protocol";
      if (h.version != PeerTransport::version)
        return "it speaks peer protocol version " + std::to_string(h.version) + ", this member " +
               std::to_string(PeerTransport::version);
      if (sender == t.self || (!t.members.count(sender) && !t.strangers))
        return "server id " + std::to_string(sender) + " is not another member of this ensemble";
      if (t.outside(sender) && t.strangers_connected(sender) >= PeerTransport::max_strangers)
        return "server " + std::to_string(sender) + " is outside the configuration, and " +
               std::to_string(PeerTransport::max_strangers) + " such servers are connected already";
      if (target != t.self)
        return "it meant to reach server " + std::to_string(target) + ", this is server " + std::to_string(t.self);
      auto known = t.addresses.find(sender);
      std::string at = remote_address(socket);
      if (known != t.addresses.end() && !known->second.empty() &&
          std::find(known->second.begin(), known->second.end(), at) == known->second.end())
        return "it says it is server " + std::to_string(sender) + ", configured at " + t.members.at(sender).host +
               ", but comes from " + at;
      if (!tls && t.tls.accept == PeerTransport::Tls::Accept::tls) return "it does not speak TLS";
      if (tls && t.tls.verify_host) {
        auto m = t.members.find(sender);
        if (m == t.members.end())
          return "server " + std::to_string(sender) + " is not in this member's configuration, so the host its "
                 "certificate must name is unknown (ssl.quorum.hostnameVerification)";
        if (!certificate_names(tls->native_handle(), m->second.host))
          return "its certificate does not name server " + std::to_string(sender) + "'s host " + m->second.host +
                 " (ssl.quorum.hostnameVerification)";
      }
      return {};
    }
    // False: the connection must close.
    bool consume() {
      size_t off = 0;
      if (!hello_done) {
        auto h = read_hello(in);
        if (!h) return true;
        std::string why = refusal(*h, static_cast<unsigned char>(in[0]));
        if (!why.empty()) {
          ++t.refused;
          spdlog::warn("refusing a peer connection from {}: {}", peer, why);
          return false;
        }
        from = h->sender;
        hello_done = true;
        if (!t.auth.server_required) identify();
        off = hello_size;
      }
      for (;;) {
        size_t limit = t.outside(from) ? PeerTransport::max_stranger_frame : PeerTransport::max_frame;
        Frame f = next_frame(std::string_view(in).substr(off), limit);
        if (f.kind == Frame::Kind::none) break;
        if (f.kind == Frame::Kind::bad_auth_length) {
          ++t.refused;
          spdlog::warn("closing the connection from server {} ({}): an auth frame of {} bytes", from, peer, f.length);
          return false;
        }
        if (f.kind == Frame::Kind::auth) {
          if (!f.whole) break;
          if (!take_auth(f.body)) return false;
          off += f.consumed;
          if (close_after_write || t.stopping || closed) break;
          continue;
        }
        if (!identified) {
          ++t.refused;
          spdlog::warn("refusing server {} ({}): it sent messages without authenticating, and "
                       "quorum.auth.serverRequireSasl is true", from, peer);
          return false;
        }
        if (f.kind == Frame::Kind::too_long) {
          ++t.refused;
          spdlog::warn("closing the connection from server {} ({}): a frame of {} bytes is above the limit of {}{}",
                       from, peer, f.length, limit,
                       limit < PeerTransport::max_frame ? " for a server outside the configuration" : "");
          return false;
        }
        if (!f.whole) break;
        if (!f.body.empty() && !t.receive(from, f.body)) {
          ++t.refused;
          return false;  // the receiver logged why
        }
        off += f.consumed;
        if (t.stopping || closed) return false;
      }
      in.erase(0, off);
      return true;
    }
    void identify() {
      identified = true;
      --t.unidentified;
      arm_idle();  // replaces the hello's wait
      t.identified(shared_from_this());
    }
    // One auth frame from the learner; false: the connection must close now.
    bool take_auth(std::string_view frame) {
      if (static_cast<unsigned char>(frame[0]) != auth_token || authenticated) {
        ++t.refused;
        spdlog::warn("closing the connection from server {} ({}): a malformed SASL frame", from, peer);
        return false;
      }
      if (!t.auth.enabled) {
        answer(auth_not_taken, "server " + std::to_string(t.self) + " has quorum.auth.enableSasl=false");
        return true;
      }
      if (!exchange) {
        auto m = t.members.find(from);  // a stranger (set_accept_strangers) is known by its address
        exchange = t.auth.server(m != t.members.end() ? m->second : Member{from, remote_address(socket), 0, 0});
      }
      auto st = exchange->step(frame.substr(1));
      using S = PeerTransport::Auth::Step::Status;
      if (st.status == S::more) {
        answer(auth_token, st.token);
      } else if (st.status == S::done) {
        authenticated = true;
        exchange.reset();
        ++t.authenticated;
        spdlog::info("server {} ({}) authenticated as {}", from, peer, st.detail);
        answer(auth_success, st.token);
        if (!identified) identify();
      } else {
        ++t.refused;
        exchange.reset();
        answer(auth_refused, "SASL authentication failed");
        if (t.auth.server_required) {
          spdlog::warn("refusing server {} ({}): SASL authentication failed: {}", from, peer, st.detail);
          close_after_write = true;
        } else {
          spdlog::warn("server {} ({}) failed SASL authentication ({}); taken all the same, as "
                       "quorum.auth.serverRequireSasl is false", from, peer, st.detail);
        }
      }
      return true;
    }
    void answer(AuthStatus status, std::string_view body) {
      out += auth_frame(status, body);
      write_out();
    }
    void write_out() {
      if (out_writing || closed) return;
      if (out.empty()) {
        if (close_after_write) close();
        return;
      }
      out_writing = true;
      writing_out.swap(out);
      out.clear();
      auto done = [self = shared_from_this()](boost::system::error_code ec, size_t) {
        self->out_writing = false;
        self->writing_out.clear();
        if (ec || self->closed || self->t.stopping) return self->close();
        self->write_out();
      };
      if (tls)
        asio::async_write(*tls, asio::buffer(writing_out), std::move(done));
      else
        asio::async_write(socket, asio::buffer(writing_out), std::move(done));
    }
    void close() {
      if (closed) return;
      closed = true;
      if (!identified) --t.unidentified;
      hello_timer.cancel();
      boost::system::error_code ec;
      socket.close(ec);  // the TLS stream, if any, ends with it
      // Posted: close() may run inside a receive, whose caller may still use what a stranger has.
      if (hello_done && !t.stopping && t.stranger_ids.count(from))
        asio::post(t.io, [&impl = t, id = from] {
          if (!impl.stopping) impl.forget_if_gone(id);
        });
    }
  };

  // One incoming connection per member and port: a newer one replaces the older (a member that
  // restarted, or reconnected after a fault its old connection has not seen yet).
  std::map<std::pair<int64_t, bool>, std::weak_ptr<Incoming>> identified_by;
  void identified(const std::shared_ptr<Incoming>& c) {
    auto& slot = identified_by[{c->from, c->vote}];
    if (auto old = slot.lock(); old && old != c && !old->closed) {
      spdlog::info("server {} connected again ({} port, from {}): closing its older connection", c->from,
                   c->vote ? "election" : "quorum", c->peer);
      old->close();
    }
    slot = c;
    // It runs again: our connection to the same port of it need not wait out its backoff (a
    // restarted member would otherwise hear the others' answers up to a second late).
    if (auto o = out.find({c->from, c->vote}); o != out.end()) o->second->peer_is_back();
  }

  // This member's connection to one port of another: it sends only.
  struct Outgoing {
    Impl& t;
    Member to;
    bool vote;
    tcp::socket socket;
    std::shared_ptr<asio::ssl::context> context;
    // Over `socket`, with sslQuorum. Each pending operation holds a reference: failed() drops
    // ours, and the stream (whose state the operation still uses) goes when the last ends.
    std::shared_ptr<TlsStream> tls;
    tcp::resolver resolver;
    asio::steady_timer retry;
    asio::steady_timer keepalive;
    bool sent_recently = false;  // since the last keepalive tick
    bool connected = false, connecting = false, writing = false;
    bool backing_off = false;  // a retry is scheduled: sending does not cut the wait short
    // The hello and auth frames, which go before any message; messages wait in `pending`
    // while this member authenticates (quorum.auth.enableSasl).
    std::string control;
    std::string pending, writing_buf;
    size_t pending_frames = 0, writing_frames = 0;  // messages in each (the observers command)
    std::unique_ptr<PeerTransport::Auth::Exchange> exchange;
    bool authenticating = false;
    std::chrono::steady_clock::time_point auth_since;
    std::string in;  // what the other side wrote: its auth frames
    std::chrono::milliseconds backoff = min_backoff;
    std::chrono::steady_clock::time_point since;
    uint64_t generation = 0;  // a callback of an earlier socket finds a newer one and does nothing
    bool logged_down = false;
    // False once this is destroyed (a forgotten stranger's): every callback holds it and
    // returns at once, before it reads anything of this.
    std::shared_ptr<bool> alive = std::make_shared<bool>(true);
    Outgoing(Impl& impl, Member m, bool v)
        : t(impl), to(std::move(m)), vote(v), socket(impl.io), resolver(impl.io), retry(impl.io), keepalive(impl.io) {}
    ~Outgoing() {
      *alive = false;
      stop();
    }

    uint16_t port() const { return vote ? to.election_port : to.quorum_port; }
    const char* what() const { return vote ? "election" : "quorum"; }

    void connect() {
      if (t.stopping || connecting || connected || backing_off) return;
      connecting = true;
      uint64_t gen = ++generation;
      // An address needs no lookup; a name is looked up on Asio's resolver thread, so that a
      // name that does not resolve (or slowly) never holds up this member's I/O.
      boost::system::error_code literal;
      auto address = asio::ip::make_address(to.host, literal);
      if (!literal) {
        auto results =
            tcp::resolver::results_type::create(tcp::endpoint(address, port()), to.host, std::to_string(port()));
        asio::post(t.io, [this, gen, a = alive, results] {
          if (*a && gen == generation && !t.stopping) resolved(gen, results);
        });
        return;
      }
      resolver.async_resolve(to.host, std::to_string(port()),
                             [this, gen, a = alive](boost::system::error_code ec, tcp::resolver::results_type results) {
                               if (!*a || gen != generation || t.stopping) return;
                               if (ec) return failed("cannot resolve " + to.host + ": " + ec.message());
                               resolved(gen, results);
                             });
    }
    void resolved(uint64_t gen, const tcp::resolver::results_type& results) {
      if (!bind_source(results)) return;
      asio::async_connect(socket, results, [this, gen, a = alive](boost::system::error_code ec, const tcp::endpoint&) {
        if (!*a || gen != generation || t.stopping) return;
        if (ec) return failed(ec.message());
        if (t.tls.connect) return handshake(gen);
        established(gen);
      });
    }
    // Leaves from this member's own configured address, where the receiver expects it; an
    // unspecified one (0.0.0.0, ::) leaves the choice to the system. False: failed() ran.
    bool bind_source(const tcp::resolver::results_type& results) {
      if (t.own_address.empty() || results.empty()) return true;
      boost::system::error_code ec;
      auto a = asio::ip::make_address(t.own_address, ec);
      if (ec || a.is_unspecified()) return true;
      auto protocol = results.begin()->endpoint().protocol();
      if (a.is_v4() != (protocol == tcp::v4())) return true;  // the other family: nothing to bind
      socket.open(protocol, ec);
      if (!ec) socket.bind(tcp::endpoint(a, 0), ec);
      if (ec) {
        failed("cannot leave from this member's address " + t.own_address + ": " + ec.message());
        return false;
      }
      return true;
    }
    void handshake(uint64_t gen) {
      context = t.tls.client();
      tls = std::make_shared<TlsStream>(socket, *context);
      if (t.tls.verify_host) tls->set_verify_callback(asio::ssl::host_name_verification(to.host));
      tls->async_handshake(asio::ssl::stream_base::client,
                           [this, gen, keep = tls, a = alive](boost::system::error_code ec) {
                             if (!*a || gen != generation || t.stopping) return;
                             if (ec) return failed("TLS handshake failed: " + tls_reason(ec));
                             established(gen);
                           });
    }
    void established(uint64_t gen) {
      connecting = false;
      connected = true;
      since = std::chrono::steady_clock::now();
      if (logged_down) spdlog::info("connected to server {} ({} port)", to.id, what());
      logged_down = false;
      boost::system::error_code ec;
      socket.set_option(tcp::no_delay(true), ec);
      control = hello(PeerTransport::version, t.self, to.id);
      if (t.auth.enabled) {
        exchange = t.auth.learner(to);
        auto st = exchange->step({});
        if (st.status == PeerTransport::Auth::Step::Status::failed)
          return failed("SASL authentication cannot start: " + st.detail);
        authenticating = true;
        auth_since = std::chrono::steady_clock::now();
        control += auth_frame(auth_token, st.token);
      }
      flush();
      tick_keepalive(gen);
      read_answers(gen);
    }
    // The other side writes only its auth frames: past those, a read ends when it closes.
    void read_answers(uint64_t gen) {
      auto buf = std::make_shared<std::array<char, 4096>>();
      auto got = [this, gen, buf, a = alive](boost::system::error_code ec, size_t n) {
        if (!*a || gen != generation || t.stopping) return;
        if (ec) return failed(authenticating ? "the connection closed during SASL authentication"
                                             : "the connection closed");
        if (authenticating) {
          in.append(buf->data(), n);
          if (!take_answers()) return;
        }
        read_answers(gen);
      };
      if (tls)
        tls->async_read_some(asio::buffer(*buf), [keep = tls, got](boost::system::error_code ec, size_t n) {
          got(ec, n);
        });
      else
        socket.async_read_some(asio::buffer(*buf), std::move(got));
    }
    // The server's auth frames; false when failed() ran.
    bool take_answers() {
      while (authenticating) {
        Frame f = next_frame(in, 0);
        if (f.kind == Frame::Kind::none) break;
        if (f.kind != Frame::Kind::auth) {
          failed("server " + std::to_string(to.id) + " answered SASL with garbage");
          return false;
        }
        if (!f.whole) break;
        auto status = static_cast<unsigned char>(f.body[0]);
        std::string body(f.body.substr(1));
        in.erase(0, f.consumed);
        using S = PeerTransport::Auth::Step::Status;
        if (status == auth_token || status == auth_success) {
          auto st = exchange->step(body);
          if (st.status == S::failed) {
            failed(std::string(status == auth_success ? "server's last SASL token does not check out: "
                                                      : "SASL authentication failed: ") + st.detail);
            return false;
          }
          if (status == auth_token) {
            control += auth_frame(auth_token, st.token);
            flush();
            continue;
          }
          spdlog::info("authenticated to server {} ({} port)", to.id, what());
        } else if (status == auth_refused || status == auth_not_taken) {
          std::string why = "server " + std::to_string(to.id) + (status == auth_refused ? " refused" : " did not take") +
                            " this member's SASL authentication (" + body + ")";
          if (t.auth.learner_required) {
            failed(why);
            return false;
          }
          spdlog::warn("{}; going on without it, as quorum.auth.learnerRequireSasl is false", why);
        } else {
          failed("server " + std::to_string(to.id) + " answered SASL with garbage");
          return false;
        }
        authenticating = false;
        exchange.reset();
        in.clear();
        flush();
      }
      return true;
    }
    // The member said hello on its own connection to us: connect now if a retry is waiting.
    void peer_is_back() {
      if (!backing_off || t.stopping) return;
      retry.cancel();
      backing_off = false;
      backoff = min_backoff;
      connect();
    }
    // While connected: an empty frame after each keepalive_ms in which nothing was sent.
    void tick_keepalive(uint64_t gen) {
      keepalive.expires_after(std::chrono::milliseconds(PeerTransport::keepalive_ms));
      keepalive.async_wait([this, gen, a = alive](boost::system::error_code ec) {
        if (ec || !*a || gen != generation || t.stopping || !connected) return;
        if (authenticating && std::chrono::steady_clock::now() - auth_since >
                                  std::chrono::milliseconds(PeerTransport::hello_timeout_ms))
          return failed("SASL authentication did not finish within " +
                        std::to_string(PeerTransport::hello_timeout_ms) + " ms");
        if (!sent_recently) {
          append_frame(pending, {});
          flush();
        }
        sent_recently = false;
        tick_keepalive(gen);
      });
    }
    void failed(const std::string& why) {
      if (!logged_down) spdlog::info("no connection to server {} ({} port {}:{}): {}; retrying", to.id, what(), to.host,
                                     port(), why);
      logged_down = true;
      boost::system::error_code ec;
      tls.reset();
      socket.close(ec);
      socket = tcp::socket(t.io);
      ++generation;
      if (connected && std::chrono::steady_clock::now() - since > healthy_after) backoff = min_backoff;
      connected = connecting = writing = authenticating = false;
      pending.clear();  // lost with the connection, as the core expects
      writing_buf.clear();
      pending_frames = writing_frames = 0;
      control.clear();
      in.clear();
      exchange.reset();
      retry.expires_after(backoff);
      backoff = std::min(backoff * 2, std::chrono::duration_cast<std::chrono::milliseconds>(max_backoff));
      backing_off = true;
      retry.async_wait([this, a = alive](boost::system::error_code ec2) {
        if (ec2 || !*a || t.stopping) return;
        backing_off = false;
        connect();
      });
      // Posted: failed() may run inside send(), inside the owner's own call.
      if (!vote && t.on_lost) asio::post(t.io, [&impl = t, id = to.id] {
        if (!impl.stopping && impl.on_lost) impl.on_lost(id);
      });
    }
    void send(std::string bytes) {
      if (pending.size() + writing_buf.size() + bytes.size() + 4 > PeerTransport::max_queued) {
        spdlog::warn("server {} does not read: more than {} MiB queued for it; dropping the connection", to.id,
                     PeerTransport::max_queued >> 20);
        if (connected || connecting) return failed("output queue full");
        pending.clear();
        pending_frames = 0;
        return;
      }
      append_frame(pending, bytes);
      ++pending_frames;
      sent_recently = true;
      if (connected) flush();
      else connect();  // nothing while a retry waits out its backoff: the queue goes then
    }
    void flush() {
      if (writing || !connected || (control.empty() && (authenticating || pending.empty()))) return;
      writing = true;
      writing_buf.swap(control);
      control.clear();
      if (!authenticating) {
        writing_buf += pending;
        pending.clear();
        writing_frames = pending_frames;
        pending_frames = 0;
      }
      uint64_t gen = generation;
      auto done = [this, gen, a = alive](boost::system::error_code ec, size_t) {
        if (!*a || gen != generation || t.stopping) return;
        writing = false;
        writing_buf.clear();
        writing_frames = 0;
        if (ec) return failed(ec.message());
        flush();
        if (!vote && t.on_written) t.on_written(to.id);
      };
      if (tls)
        asio::async_write(*tls, asio::buffer(writing_buf), [keep = tls, done](boost::system::error_code ec, size_t n) {
          done(ec, n);
        });
      else
        asio::async_write(socket, asio::buffer(writing_buf), std::move(done));
    }
    void stop() {
      ++generation;
      boost::system::error_code ec;
      retry.cancel();
      keepalive.cancel();
      resolver.cancel();
      socket.close(ec);
    }
  };
  std::map<std::pair<int64_t, bool>, std::unique_ptr<Outgoing>> out;
  std::vector<std::weak_ptr<Incoming>> incoming;

  Impl(asio::io_context& i, int64_t s, std::vector<Member> ms, Receive r) : io(i), self(s), receive(std::move(r)) {
    for (auto& m : ms) members[m.id] = m;
  }

  void bind(tcp::acceptor& a, const std::string& host, uint16_t port, const char* what) {
    boost::system::error_code ec;
    tcp::resolver resolver(io);
    auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty())
      throw std::runtime_error(std::string("cannot listen on the ") + what + " port " + host + ":" +
                               std::to_string(port) + ": cannot resolve " + host +
                               (ec ? ": " + ec.message() : std::string()));
    tcp::endpoint ep = *results.begin();
    a.open(ep.protocol(), ec);
    if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) a.bind(ep, ec);
    if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      throw std::runtime_error(std::string("cannot listen on the ") + what + " port " + host + ":" +
                               std::to_string(port) + ": " + ec.message());
  }

  void accept(tcp::acceptor& a, bool vote) {
    a.async_accept([this, &a, vote](boost::system::error_code ec, tcp::socket s) {
      if (stopping) return;
      if (!ec && unidentified >= PeerTransport::max_unidentified) {
        ++refused;
        auto now = std::chrono::steady_clock::now();
        if (now - last_cap_warning > std::chrono::seconds(1)) {  // at most a line a second
          last_cap_warning = now;
          spdlog::warn("refusing a peer connection from {}: {} connections already owe their hello", endpoint_text(s),
                       PeerTransport::max_unidentified);
        }
        boost::system::error_code ignored;
        s.close(ignored);
      } else if (!ec) {
        auto c = std::make_shared<Incoming>(*this, std::move(s), vote);
        incoming.erase(std::remove_if(incoming.begin(), incoming.end(), [](auto& w) { return w.expired(); }),
                       incoming.end());
        incoming.push_back(c);
        c->start();
      } else if (ec == asio::error::operation_aborted) {
        return;
      } else {
        auto now = std::chrono::steady_clock::now();
        if (now - last_accept_warning > std::chrono::seconds(1)) {  // at most a line a second
          last_accept_warning = now;
          spdlog::warn("cannot accept a peer connection on the {} port: {}; trying again every {} ms",
                       vote ? "election" : "quorum", ec.message(), accept_pause.count());
        }
        auto& pause = vote ? election_pause : quorum_pause;
        pause.expires_after(accept_pause);
        pause.async_wait([this, &a, vote](boost::system::error_code e) {
          if (!e && !stopping) accept(a, vote);
        });
        return;
      }
      accept(a, vote);
    });
  }

  // Not in the configuration: a stranger's id, or one no member has (a hello taken with
  // set_accept_strangers, before add_stranger).
  bool outside(int64_t id) const { return !members.count(id) || stranger_ids.count(id); }
  // Servers outside the configuration with a connection to this member open now, `except` aside.
  size_t strangers_connected(int64_t except) const {
    std::set<int64_t> ids;
    for (const auto& w : incoming)
      if (auto c = w.lock(); c && !c->closed && c->hello_done && c->from != except && outside(c->from))
        ids.insert(c->from);
    return ids.size();
  }
  // A stranger none of whose connections to this member is open any more: its connections go.
  void forget_if_gone(int64_t id) {
    if (!stranger_ids.count(id)) return;
    for (const auto& w : incoming)
      if (auto c = w.lock(); c && !c->closed && c->hello_done && c->from == id) return;
    stranger_ids.erase(id);
    members.erase(id);
    addresses.erase(id);
    for (bool vote : {false, true}) {
      identified_by.erase({id, vote});
      out.erase({id, vote});  // ~Outgoing stops it; its callbacks find it gone
    }
    spdlog::info("server {}, outside the configuration, has no connection to this member left: forgotten", id);
  }
  // A member a reconfig added: its host resolved on Asio's resolver thread. Until then (or if it
  // does not resolve) its connections are not checked against it, as at start.
  void resolve_later(int64_t id, const Member& m) {
    member_resolver.async_resolve(
        m.host, std::to_string(m.quorum_port),
        [this, id, host = m.host](boost::system::error_code ec, tcp::resolver::results_type results) {
          if (stopping || ec == asio::error::operation_aborted) return;
          auto known = members.find(id);
          if (known == members.end() || known->second.host != host) return;
          std::vector<std::string> found;
          if (!ec) found = address_texts(results);
          if (found.empty())
            spdlog::warn("server {}'s host {} does not resolve now: its connections are not checked against it", id,
                         host);
          addresses[id] = std::move(found);
        });
  }
  static std::vector<std::string> address_texts(const tcp::resolver::results_type& results) {
    std::vector<std::string> found;
    for (const auto& r : results) {
      auto a = r.endpoint().address();
      if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
      found.push_back(a.to_string());
    }
    return found;
  }

  // Each member's host, resolved once at start (a member's own included), or as it is added.
  void resolve_members() {
    for (const auto& [id, m] : members) resolve(id, m);
  }
  void resolve(int64_t id, const Member& m) {
    tcp::resolver resolver(io);
    boost::system::error_code ec;
    auto results = resolver.resolve(m.host, std::to_string(m.quorum_port), ec);
    std::vector<std::string> found;
    if (!ec) found = address_texts(results);
    if (found.empty())
      spdlog::warn("server {}'s host {} does not resolve now: its connections are not checked against it", id, m.host);
    if (id == self && !found.empty()) own_address = found.front();
    addresses[id] = std::move(found);
  }
};

PeerTransport::PeerTransport(asio::io_context& io, int64_t self, std::vector<Member> members, Receive receive)
    : impl_(std::make_unique<Impl>(io, self, std::move(members), std::move(receive))) {}

PeerTransport::~PeerTransport() { stop(); }

void PeerTransport::start() {
  auto& i = *impl_;
  auto me = i.members.find(i.self);
  if (me == i.members.end()) throw std::runtime_error("server " + std::to_string(i.self) + " is not a member");
  i.bind(i.quorum, me->second.host, me->second.quorum_port, "quorum");
  i.bind(i.election, me->second.host, me->second.election_port, "election");
  i.resolve_members();
  i.accept(i.quorum, false);
  i.accept(i.election, true);
  for (const auto& [id, m] : i.members) {
    if (id == i.self) continue;
    for (bool vote : {false, true}) {
      auto o = std::make_unique<Impl::Outgoing>(i, m, vote);
      o->connect();
      i.out.emplace(std::make_pair(id, vote), std::move(o));
    }
  }
  i.started = true;
  auto early = std::move(i.early);
  i.early.clear();
  for (auto& [to, bytes, vote] : early) send(to, std::move(bytes), vote);
}

size_t PeerTransport::add_members(const std::vector<Member>& members) {
  auto& i = *impl_;
  size_t added = 0;
  for (const auto& m : members) {
    auto known = i.members.find(m.id);
    if (known != i.members.end() && i.stranger_ids.erase(m.id)) {
      // A stranger the configuration now names: it stays, at the address the configuration says.
      spdlog::info("server {}, connected from outside the configuration, is now a member", m.id);
      if (known->second.host != m.host || known->second.quorum_port != m.quorum_port ||
          known->second.election_port != m.election_port) {
        for (bool vote : {false, true}) i.out.erase({m.id, vote});
        i.members.erase(known);
        known = i.members.end();
      } else {
        if (i.started && !i.stopping) i.resolve_later(m.id, m);
        continue;
      }
    }
    if (known != i.members.end()) {
      const Member& k = known->second;
      if (k.host != m.host || k.quorum_port != m.quorum_port || k.election_port != m.election_port)
        spdlog::warn("server {} is now at {}:{}:{}; this member reaches it at {}:{}:{} until it restarts", m.id, m.host,
                     m.quorum_port, m.election_port, k.host, k.quorum_port, k.election_port);
      continue;
    }
    spdlog::info("server {} joins at {}:{}:{}", m.id, m.host, m.quorum_port, m.election_port);
    i.members[m.id] = m;
    ++added;
    if (!i.started || i.stopping) continue;  // start() resolves and connects to every member
    i.resolve_later(m.id, m);
    for (bool vote : {false, true}) {
      auto o = std::make_unique<Impl::Outgoing>(i, m, vote);
      o->connect();
      i.out.emplace(std::make_pair(m.id, vote), std::move(o));
    }
  }
  return added;
}

bool PeerTransport::add_stranger(const Member& m) {
  auto& i = *impl_;
  if (!i.started || i.stopping || i.members.count(m.id)) return false;
  if (i.stranger_ids.size() >= max_strangers) {
    auto now = std::chrono::steady_clock::now();
    if (now - i.last_stranger_warning > std::chrono::seconds(1)) {  // at most a line a second
      i.last_stranger_warning = now;
      spdlog::warn("server {}, outside the configuration, is not answered: {} such servers are known already", m.id,
                   max_strangers);
    }
    return false;
  }
  i.members[m.id] = m;
  i.stranger_ids.insert(m.id);
  for (bool vote : {false, true}) {
    auto o = std::make_unique<Impl::Outgoing>(i, m, vote);
    o->connect();
    i.out.emplace(std::make_pair(m.id, vote), std::move(o));
  }
  return true;
}

size_t PeerTransport::strangers() const { return impl_->stranger_ids.size(); }

void PeerTransport::set_tls(Tls tls) { impl_->tls = std::move(tls); }

void PeerTransport::set_accept_strangers(bool on) { impl_->strangers = on; }

void PeerTransport::set_auth(Auth auth) { impl_->auth = std::move(auth); }

void PeerTransport::set_on_lost(std::function<void(int64_t)> lost) { impl_->on_lost = std::move(lost); }

void PeerTransport::set_on_written(std::function<void(int64_t)> written) { impl_->on_written = std::move(written); }

size_t PeerTransport::queued(int64_t to) const {
  auto it = impl_->out.find({to, false});
  return it == impl_->out.end() ? 0 : it->second->pending.size() + it->second->writing_buf.size();
}

size_t PeerTransport::queued_frames(int64_t to) const {
  auto it = impl_->out.find({to, false});
  return it == impl_->out.end() ? 0 : it->second->pending_frames + it->second->writing_frames;
}

void PeerTransport::send(int64_t to, std::string bytes, bool vote) {
  auto& i = *impl_;
  if (i.stopping) return;
  if (!i.started) {
    // The core's first votes go out as the server starts, before the ports are bound: kept
    // for start(), so that an election does not wait for the next round of votes.
    if (i.early.size() < 1000) i.early.emplace_back(to, std::move(bytes), vote);
    return;
  }
  auto it = i.out.find({to, vote});
  if (it == i.out.end()) return;
  it->second->send(std::move(bytes));
}

void PeerTransport::stop() {
  auto& i = *impl_;
  if (i.stopping) return;
  i.stopping = true;
  boost::system::error_code ec;
  i.quorum.close(ec);
  i.election.close(ec);
  i.quorum_pause.cancel();
  i.election_pause.cancel();
  for (auto& [k, o] : i.out) o->stop();
  for (auto& w : i.incoming)
    if (auto c = w.lock()) c->close();
}

uint16_t PeerTransport::quorum_port() const {
  boost::system::error_code ec;
  auto ep = impl_->quorum.local_endpoint(ec);
  return ec ? 0 : ep.port();
}
uint16_t PeerTransport::election_port() const {
  boost::system::error_code ec;
  auto ep = impl_->election.local_endpoint(ec);
  return ec ? 0 : ep.port();
}
uint64_t PeerTransport::refused() const { return impl_->refused; }
uint64_t PeerTransport::authenticated() const { return impl_->authenticated; }

}  // namespace warden::consensus
