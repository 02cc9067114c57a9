// PeerTransport::Impl, shared by the transport's files (private to consensus/): peer_transport.cpp
// (the ports, accepting, members added and resolved, the public PeerTransport), peer_incoming.cpp
// (a connection another member made: TLS or plain, the hello, auth frames, then messages in) and
// peer_outgoing.cpp (this member's connection to one port of another: connect, TLS, hello, auth,
// then frames out, with backoff and keepalive). The bytes themselves are peer_framing, pure.
#pragma once

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <chrono>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "consensus/peer_codec.hpp"
#include "consensus/peer_framing.hpp"
#include "consensus/peer_transport.hpp"

namespace warden::consensus {

static_assert(PeerTransport::max_frame == max_peer_message_bytes, "a frame the transport takes must decode");

namespace asio = boost::asio;
using asio::ip::tcp;

using namespace peer_framing;

inline constexpr auto min_backoff = std::chrono::milliseconds(20);
inline constexpr auto max_backoff = std::chrono::milliseconds(1000);
// A connection that lived this long was healthy: the next failure starts the backoff again.
inline constexpr auto healthy_after = std::chrono::seconds(2);

using TlsStream = asio::ssl::stream<tcp::socket&>;

inline std::string tls_reason(const boost::system::error_code& e) {
  if (e.category() == asio::error::get_ssl_category())
    if (const char* r = ERR_reason_error_string(static_cast<unsigned long>(e.value()))) return r;
  if (e == asio::error::eof || e == asio::ssl::error::stream_truncated) return "the other side closed the connection";
  return e.message();
}

// The certificate names `host` (an address or a DNS name), as ZooKeeper's hostname check asks.
inline bool certificate_names(SSL* ssl, const std::string& host) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (!cert) return false;
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  bool ok = ec ? X509_check_host(cert, host.c_str(), host.size(), 0, nullptr) == 1
               : X509_check_ip_asc(cert, host.c_str(), 0) == 1;
  X509_free(cert);
  return ok;
}

inline std::string endpoint_text(const tcp::socket& s) {
  boost::system::error_code ec;
  auto ep = s.remote_endpoint(ec);
  return ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
}
// The address a connection comes from, as the configuration's addresses are written (an IPv4
// address mapped into IPv6 as plain IPv4).
inline std::string remote_address(const tcp::socket& s) {
  boost::system::error_code ec;
  auto ep = s.remote_endpoint(ec);
  if (ec) return {};
  auto a = ep.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  return a.to_string();
}

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
    void begin();
    void handshake();

    void start();
    void read();
    // Identified: silence past idle_timeout closes the connection (the timer is the hello's).
    void arm_idle();
    // Why hello `h`, whose first byte is `first`, is refused; "" when it is taken.
    std::string refusal(const Hello& h, unsigned char first) const;
    // False: the connection must close.
    bool consume();
    void identify();
    // One auth frame from the learner; false: the connection must close now.
    bool take_auth(std::string_view frame);
    void answer(AuthStatus status, std::string_view body);
    void write_out();
    void close();
  };

  // One incoming connection per member and port: a newer one replaces the older (a member that
  // restarted, or reconnected after a fault its old connection has not seen yet).
  std::map<std::pair<int64_t, bool>, std::weak_ptr<Incoming>> identified_by;
  void identified(const std::shared_ptr<Incoming>& c);

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
    ~Outgoing();

    uint16_t port() const { return vote ? to.election_port : to.quorum_port; }
    const char* what() const { return vote ? "election" : "quorum"; }

    void connect();
    void resolved(uint64_t gen, const tcp::resolver::results_type& results);
    // Leaves from this member's own configured address, where the receiver expects it; an
    // unspecified one (0.0.0.0, ::) leaves the choice to the system. False: failed() ran.
    bool bind_source(const tcp::resolver::results_type& results);
    void handshake(uint64_t gen);
    void established(uint64_t gen);
    // The other side writes only its auth frames: past those, a read ends when it closes.
    void read_answers(uint64_t gen);
    // The server's auth frames; false when failed() ran.
    bool take_answers();
    // The member said hello on its own connection to us: connect now if a retry is waiting.
    void peer_is_back();
    // While connected: an empty frame after each keepalive_ms in which nothing was sent.
    void tick_keepalive(uint64_t gen);
    void failed(const std::string& why);
    void send(std::string bytes);
    void flush();
    void stop();
  };
  std::map<std::pair<int64_t, bool>, std::unique_ptr<Outgoing>> out;
  std::vector<std::weak_ptr<Incoming>> incoming;

  Impl(asio::io_context& i, int64_t s, std::vector<Member> ms, Receive r);

  void bind(tcp::acceptor& a, const std::string& host, uint16_t port, const char* what);

  void accept(tcp::acceptor& a, bool vote);

  // Not in the configuration: a stranger's id, or one no member has (a hello taken with
  // set_accept_strangers, before add_stranger).
  bool outside(int64_t id) const { return !members.count(id) || stranger_ids.count(id); }
  // Servers outside the configuration with a connection to this member open now, `except` aside.
  size_t strangers_connected(int64_t except) const;
  // A stranger none of whose connections to this member is open any more: its connections go.
  void forget_if_gone(int64_t id);
  // A member a reconfig added: its host resolved on Asio's resolver thread. Until then (or if it
  // does not resolve) its connections are not checked against it, as at start.
  void resolve_later(int64_t id, const Member& m);
  static std::vector<std::string> address_texts(const tcp::resolver::results_type& results);

  // Each member's host, resolved once at start (a member's own included), or as it is added.
  void resolve_members();
  void resolve(int64_t id, const Member& m);
};

}  // namespace warden::consensus
