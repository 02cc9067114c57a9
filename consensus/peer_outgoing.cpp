// This member's connection to one port of another: resolve, connect (with backoff), TLS with
// the member's host checked, the hello and SASL, then frames out, and keepalives.

#include "consensus/peer_transport_impl.hpp"

namespace warden::consensus {

PeerTransport::Impl::Outgoing::~Outgoing() {
  *alive = false;
  stop();
}

void PeerTransport::Impl::Outgoing::connect() {
  if (t.stopping || connecting || connected || backing_off) return;
  connecting = true;
  uint64_t gen = ++generation;
  // An address needs no lookup; a name is looked up on Asio's resolver thread, so that a
  // name that does not resolve (or slowly) never holds up this member's I/O.
  boost::system::error_code literal;
  auto address = asio::ip::make_address(to.host, literal);
  if (!literal) {
    auto results = tcp::resolver::results_type::create(tcp::endpoint(address, port()), to.host, std::to_string(port()));
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

void PeerTransport::Impl::Outgoing::resolved(uint64_t gen, const tcp::resolver::results_type& results) {
  if (!bind_source(results)) return;
  asio::async_connect(socket, results, [this, gen, a = alive](boost::system::error_code ec, const tcp::endpoint&) {
    if (!*a || gen != generation || t.stopping) return;
    if (ec) return failed(ec.message());
    if (t.tls.connect) return handshake(gen);
    established(gen);
  });
}

bool PeerTransport::Impl::Outgoing::bind_source(const tcp::resolver::results_type& results) {
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

void PeerTransport::Impl::Outgoing::handshake(uint64_t gen) {
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

void PeerTransport::Impl::Outgoing::established(uint64_t gen) {
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

void PeerTransport::Impl::Outgoing::read_answers(uint64_t gen) {
  auto buf = std::make_shared<std::array<char, 4096>>();
  auto got = [this, gen, buf, a = alive](boost::system::error_code ec, size_t n) {
    if (!*a || gen != generation || t.stopping) return;
    if (ec)
      return failed(authenticating ? "the connection closed during SASL authentication" : "the connection closed");
    if (authenticating) {
      in.append(buf->data(), n);
      if (!take_answers()) return;
    }
    read_answers(gen);
  };
  if (tls)
    tls->async_read_some(asio::buffer(*buf), [keep = tls, got](boost::system::error_code ec, size_t n) { got(ec, n); });
  else
    socket.async_read_some(asio::buffer(*buf), std::move(got));
}

bool PeerTransport::Impl::Outgoing::take_answers() {
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
                                                  : "SASL authentication failed: ") +
               st.detail);
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

void PeerTransport::Impl::Outgoing::peer_is_back() {
  if (!backing_off || t.stopping) return;
  retry.cancel();
  backing_off = false;
  backoff = min_backoff;
  connect();
}

void PeerTransport::Impl::Outgoing::tick_keepalive(uint64_t gen) {
  keepalive.expires_after(std::chrono::milliseconds(PeerTransport::keepalive_ms));
  keepalive.async_wait([this, gen, a = alive](boost::system::error_code ec) {
    if (ec || !*a || gen != generation || t.stopping || !connected) return;
    if (authenticating &&
        std::chrono::steady_clock::now() - auth_since > std::chrono::milliseconds(PeerTransport::hello_timeout_ms))
      return failed("SASL authentication did not finish within " + std::to_string(PeerTransport::hello_timeout_ms) +
                    " ms");
    if (!sent_recently) {
      append_frame(pending, {});
      flush();
    }
    sent_recently = false;
    tick_keepalive(gen);
  });
}

void PeerTransport::Impl::Outgoing::failed(const std::string& why) {
  if (!logged_down)
    spdlog::info("no connection to server {} ({} port {}:{}): {}; retrying", to.id, what(), to.host, port(), why);
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
  if (!vote && t.on_lost)
    asio::post(t.io, [&impl = t, id = to.id] {
      if (!impl.stopping && impl.on_lost) impl.on_lost(id);
    });
}

void PeerTransport::Impl::Outgoing::send(std::string bytes) {
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
  if (connected)
    flush();
  else
    connect();  // nothing while a retry waits out its backoff: the queue goes then
}

void PeerTransport::Impl::Outgoing::flush() {
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
    asio::async_write(*tls, asio::buffer(writing_buf),
                      [keep = tls, done](boost::system::error_code ec, size_t n) { done(ec, n); });
  else
    asio::async_write(socket, asio::buffer(writing_buf), std::move(done));
}

void PeerTransport::Impl::Outgoing::stop() {
  ++generation;
  boost::system::error_code ec;
  retry.cancel();
  keepalive.cancel();
  resolver.cancel();
  socket.close(ec);
}

}  // namespace warden::consensus
