// A connection another member made to this one: TLS, plaintext or (portUnification) whichever
// its first byte says, the hello within its timer, the learner's SASL, then messages in.

#include "consensus/peer_transport_impl.hpp"

namespace warden::consensus {

void PeerTransport::Impl::Incoming::begin() {
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

void PeerTransport::Impl::Incoming::handshake() {
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

void PeerTransport::Impl::Incoming::start() {
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

void PeerTransport::Impl::Incoming::read() {
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
      spdlog::error("closing the connection from server {} ({}): out of memory for its frame", self->from, self->peer);
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

void PeerTransport::Impl::Incoming::arm_idle() {
  hello_timer.expires_after(std::chrono::milliseconds(PeerTransport::idle_timeout_ms));
  hello_timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->closed || self->t.stopping) return;
    ++self->t.refused;
    spdlog::warn("closing the connection from server {} ({}): silent for {} ms", self->from, self->peer,
                 PeerTransport::idle_timeout_ms);
    self->close();
  });
}

std::string PeerTransport::Impl::Incoming::refusal(const Hello& h, unsigned char first) const {
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
      return "server " + std::to_string(sender) +
             " is not in this member's configuration, so the host its "
             "certificate must name is unknown (ssl.quorum.hostnameVerification)";
    if (!certificate_names(tls->native_handle(), m->second.host))
      return "its certificate does not name server " + std::to_string(sender) + "'s host " + m->second.host +
             " (ssl.quorum.hostnameVerification)";
  }
  return {};
}

bool PeerTransport::Impl::Incoming::consume() {
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
      spdlog::warn(
          "refusing server {} ({}): it sent messages without authenticating, and "
          "quorum.auth.serverRequireSasl is true",
          from, peer);
      return false;
    }
    if (f.kind == Frame::Kind::too_long) {
      ++t.refused;
      spdlog::warn("closing the connection from server {} ({}): a frame of {} bytes is above the limit of {}{}", from,
                   peer, f.length, limit,
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

void PeerTransport::Impl::Incoming::identify() {
  identified = true;
  --t.unidentified;
  arm_idle();  // replaces the hello's wait
  t.identified(shared_from_this());
}

bool PeerTransport::Impl::Incoming::take_auth(std::string_view frame) {
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
      spdlog::warn(
          "server {} ({}) failed SASL authentication ({}); taken all the same, as "
          "quorum.auth.serverRequireSasl is false",
          from, peer, st.detail);
    }
  }
  return true;
}

void PeerTransport::Impl::Incoming::answer(AuthStatus status, std::string_view body) {
  out += auth_frame(status, body);
  write_out();
}

void PeerTransport::Impl::Incoming::write_out() {
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

void PeerTransport::Impl::Incoming::close() {
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

}  // namespace warden::consensus
