// The client's connection: choosing a host, connecting, TLS, the handshake, reading frames and
// the read timer, pings, SASL, a broken connection and what is failed then, and sending.
#include "recipes/client_impl.hpp"

namespace warden::client {

void Client::Impl::connect() {
  if (states.ended()) return;
  uint64_t gen = ++generation;
  current_host = cs.hosts[host_order.next()];
  auto [host, port] = current_host;
  {
    std::lock_guard<std::mutex> l(mu);
    server_.clear();
  }
  // Each attempt gets a share of the session timeout, as ZooKeeper's client gives it.
  int32_t share = std::max<int32_t>(1000, opts.session_timeout_ms / static_cast<int32_t>(cs.hosts.size()));
  connect_timer.expires_after(std::chrono::milliseconds(share));
  connect_timer.async_wait([self = this, gen](boost::system::error_code ec) {
    if (!ec && gen == self->generation && !self->states.connected()) self->broken("connect timed out");
  });
  auto server_name = host + ":" + std::to_string(port);
  resolver.async_resolve(host, std::to_string(port),
                         [self = this, gen, server_name](boost::system::error_code ec, tcp::resolver::results_type r) {
                           if (gen != self->generation) return;
                           if (ec) return self->broken("cannot resolve " + server_name);
                           asio::async_connect(
                               self->socket, r,
                               [self, gen, server_name](boost::system::error_code ec2, const tcp::endpoint&) {
                                 if (gen != self->generation) return;
                                 if (ec2) return self->broken(ec2.message());
                                 if (self->tls_context) return self->tls_handshake(gen, server_name);
                                 self->handshake(gen, server_name);
                               });
                         });
}

void Client::Impl::tls_handshake(uint64_t gen, const std::string& server_name) {
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

std::string Client::Impl::tls_reason(const boost::system::error_code& e) {
  if (e.category() == asio::error::get_ssl_category())
    if (const char* r = ERR_reason_error_string(static_cast<unsigned long>(e.value()))) return r;
  if (e == asio::error::eof || e == asio::ssl::error::stream_truncated) return "the server closed the connection";
  return e.message();
}

std::shared_ptr<asio::ssl::context> Client::Impl::make_tls_context(const Options::Tls& t) {
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
    step("the key file", t.key_file,
         [&](auto& ec) { ctx->use_private_key_file(t.key_file, asio::ssl::context::pem, ec); });
  }
  return ctx;
}

void Client::Impl::handshake(uint64_t gen, const std::string& server_name) {
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

void Client::Impl::read(uint64_t gen) {
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

void Client::Impl::arm_read_timer() {
  // Nothing heard for two thirds of the session timeout: the connection is dead (ZooKeeper's
  // client rule); the session may still live, elsewhere.
  int32_t t = negotiated_ > 0 ? negotiated_ : opts.session_timeout_ms;
  uint64_t gen = generation;
  read_timer.expires_after(std::chrono::milliseconds(t * 2 / 3));
  read_timer.async_wait([self = this, gen](boost::system::error_code ec) {
    if (!ec && gen == self->generation && self->states.connected()) self->broken("nothing heard from the server");
  });
}

void Client::Impl::schedule_ping() {
  uint64_t gen = generation;
  auto due = clock.ping_due(negotiated_);
  auto now = Clock::now();
  ping_timer.expires_after(due > now ? due - now : Clock::duration::zero());
  ping_timer.async_wait([self = this, gen](boost::system::error_code ec) {
    if (ec || gen != self->generation || !self->states.connected()) return;
    if (Clock::now() >= self->clock.ping_due(self->negotiated_)) {
      self->clock.ping_sent(Clock::now());
      self->send_raw(framed(wire::encode(wire::RequestHeader{wire::xid::ping, static_cast<int32_t>(OpCode::ping)})));
    }
    self->schedule_ping();
  });
}

void Client::Impl::frame(const std::string& payload) {
  if (!states.connected()) return on_connect_response(payload);
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

void Client::Impl::on_connect_response(const std::string& payload) {
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
  states.handshake_answered();
  lost_timer.cancel();
  arm_read_timer();
  schedule_ping();
  if (!opts.sasl.mechanism.empty()) return begin_sasl();
  ready();
}

void Client::Impl::begin_sasl() {
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

void Client::Impl::sasl_send(const SaslClientExchange::Step& st) {
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

void Client::Impl::on_sasl_reply(int32_t err, std::string_view body) {
  if (err != 0) return sasl_failed("the server refused SASL " + opts.sasl.mechanism + " (" + std::to_string(err) + ")");
  auto resp = wire::decode<wire::SetSaslResponse>(body);
  if (!resp) return broken("a SASL reply that does not decode");
  sasl_send(sasl->step(resp->token.value_or(std::string())));
}

void Client::Impl::sasl_failed(const std::string& why) {
  {
    std::lock_guard<std::mutex> l(mu);
    last_error_ = why;
  }
  sasl_phase = false;
  sasl.reset();
  end(State::auth_failed, Err::authFailed);
}

void Client::Impl::ready() {
  for (const auto& [scheme, cred] : auth)
    send_raw(request_frame(wire::xid::auth, OpCode::auth, wire::AuthPacket{0, scheme, cred}));
  send_set_watches();
  if (auto s = states.ready()) set_state(*s);
  while (requests.any_queued() && states.connected()) send_request(requests.pop_queued());
  if (states.connected()) watch_config();
}

void Client::Impl::broken(const std::string& why) {
  if (states.ended()) return;
  {
    std::lock_guard<std::mutex> l(mu);
    last_error_ = why;
  }
  auto now = states.broken();
  bool was = now.has_value();
  drop_socket();
  fail_in_flight(Err::connectionLoss);
  if (was) {
    set_state(*now);
    int32_t t = negotiated_ > 0 ? negotiated_ : opts.session_timeout_ms;
    lost_timer.expires_at(clock.lost_at(t));
    lost_timer.async_wait([self = this](boost::system::error_code ec) {
      auto lost = ec ? std::nullopt : self->states.lost_deadline();
      if (!lost) return;
      self->set_state(*lost);
      // Nothing is waiting for a connection any more: what the session may no longer have
      // fails now (ConnectionLoss; it was never sent), as ZooKeeper's client fails its queue
      // when a connection attempt fails. Until a connection is back, new requests fail at
      // once (send_request).
      self->fail_queued(Err::connectionLoss);
    });
  }
  // The next server at once after a working connection; after a failed attempt a short pause
  // once every server was tried.
  retry_timer.expires_after(host_order.pause(was));
  retry_timer.async_wait([self = this](boost::system::error_code ec) {
    if (!ec && !self->states.ended() && !self->states.connected()) self->connect();
  });
}

void Client::Impl::drop_socket() {
  ++generation;
  states.dropped();
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

void Client::Impl::fail_queued(Err e) {
  auto waiting = requests.take_queued();
  for (auto& q : waiting)
    if (q.done) q.done(e, 0, {});
}

void Client::Impl::fail_in_flight(Err e) {
  auto failed = requests.take_in_flight();
  auto auths = std::move(auth_waiting);
  auth_waiting.clear();
  for (auto& q : failed)
    if (q.done) q.done(e, 0, {});
  for (auto& cb : auths)
    if (cb) cb(e);
}

void Client::Impl::end(State s, Err e) {
  auto last = states.end(s);
  drop_socket();
  lost_timer.cancel();
  retry_timer.cancel();
  fail_in_flight(e);
  fail_queued(e);
  watches.clear();
  set_state(last);
}

void Client::Impl::send_raw(std::string frame) {
  out_pending += frame;
  last_send = Clock::now();
  flush();
}

void Client::Impl::flush() {
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
    asio::async_write(*tls, asio::buffer(out_writing),
                      [keep = tls, done](boost::system::error_code ec, size_t n) { done(ec, n); });
  else
    asio::async_write(socket, asio::buffer(out_writing), std::move(done));
}

void Client::Impl::send_request(Request q) {
  if (states.ended()) {
    if (q.done) q.done(get_state() == State::closed ? Err::sessionExpired : Err::sessionExpired, 0, {});
    return;
  }
  if (!states.connected() || sasl_phase) {
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

}  // namespace warden::client
