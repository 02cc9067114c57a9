#include "recipes/client_impl.hpp"

namespace warden::client {

const char* state_name(State s) {
  switch (s) {
    case State::connecting:
      return "connecting";
    case State::connected:
      return "connected";
    case State::suspended:
      return "suspended";
    case State::reconnected:
      return "reconnected";
    case State::lost:
      return "lost";
    case State::expired:
      return "expired";
    case State::auth_failed:
      return "auth_failed";
    case State::closed:
      return "closed";
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

Client::Impl::Impl(Options o)
    : opts(std::move(o)),
      cs(ConnectString::parse(opts.connect_string)),
      host_order(cs.hosts.size(), opts.seed ? *opts.seed : std::random_device{}()) {
  auth = opts.auth;
  if (opts.tls.enabled) tls_context = make_tls_context(opts.tls);
  if (opts.session_id) {
    if (opts.session_password.size() != 16)
      throw std::invalid_argument("a session password has 16 bytes, not " +
                                  std::to_string(opts.session_password.size()));
    session_id_ = opts.session_id;
    passwd_ = opts.session_password;
  }
}

std::string Client::Impl::full(const std::string& p) const {
  if (cs.chroot.empty()) return p;
  return p == "/" ? cs.chroot : cs.chroot + p;
}

std::string Client::Impl::relative(const std::string& p) const {
  if (cs.chroot.empty()) return p;
  if (p == cs.chroot) return "/";
  if (p.size() > cs.chroot.size() && p.compare(0, cs.chroot.size(), cs.chroot) == 0 && p[cs.chroot.size()] == '/')
    return p.substr(cs.chroot.size());
  return p;
}

void Client::Impl::set_state(State s) {
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

State Client::Impl::get_state() const {
  std::lock_guard<std::mutex> l(mu);
  return state_;
}

template <class Handler>
void Client::Impl::read_some(Handler h) {
  if (tls)
    tls->async_read_some(asio::buffer(chunk),
                         [keep = tls, h = std::move(h)](boost::system::error_code ec, size_t n) mutable { h(ec, n); });
  else
    socket.async_read_some(asio::buffer(chunk), std::move(h));
}

void Client::Impl::watch_config() {
  if (!opts.follow_config || follow == Follow::no || config_watching || states.ended()) return;
  config_watching = true;
  get_data(
      config_node, config_node,
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

void Client::Impl::follow_members(const std::string& text) {
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
  host_order.reset(cs.hosts.size());
  // A server that left the ensemble: the session moves on, as updateServerList moves it.
  if (states.connected() && !stays) broken("the server left the ensemble's configuration");
}

void Client::Impl::get_data(std::string server_path, std::string path, Watcher watcher,
                            Callback<std::string, Stat> cb) {
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

void Client::Impl::send_set_watches() {
  auto server_path = [this](const std::string& p) { return p == config_node ? p : full(p); };
  for (const auto& sw : watches.set_watches(last_zxid, server_path))
    send_raw(request_frame(wire::xid::setWatches, OpCode::setWatches2, sw));
}

template <class R>
void Client::Impl::submit(OpCode op, const R& body, Done done) {
  asio::post(io, [self = this, op, body, done = std::move(done)]() mutable {
    int32_t xid = self->requests.next_xid();
    Request q{xid, op, request_frame(xid, op, body), std::move(done), {}, wire::goes_to_leader(op)};
    self->send_request(std::move(q));
  });
}

void Client::Impl::deliver(EventType t, const std::string& path) {
  WatchEvent ev{t, path};
  for (auto& w : watches.fire(t, path)) w(ev);
}

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
    if (i->states.ended()) return done->set_value();
    if (!i->states.connected()) {
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
    i->listeners.erase(
        std::remove_if(i->listeners.begin(), i->listeners.end(), [id](auto& l) { return l.first == id; }),
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
    if (i->states.connected()) i->broken("dropped by the user");
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
        w.push_back(
            {OpCode::create2, wire::CreateRequest{i->full(o.path), o.data, o.acl, static_cast<int32_t>(o.mode)}});
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
    i->send_request(
        Impl::Request{xid, OpCode::multi, std::move(frame), [i, cb = std::move(cb)](Err e, Zxid, std::string_view b) {
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
                          if (first == Err::ok && m.err != Err::ok && m.err != Err::runtimeInconsistency) first = m.err;
                          out.push_back(std::move(m));
                        }
                        cb(first, std::move(out));
                      }});
  });
}

void Client::add_auth_async(std::string scheme, std::string credentials, Callback<> cb) {
  asio::post(impl_->io, [i = impl_.get(), scheme, credentials, cb = std::move(cb)]() mutable {
    i->auth.emplace_back(scheme, credentials);
    if (!i->states.connected()) return cb(Err::ok);  // sent with the next connection's handshake
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

}  // namespace warden::client
