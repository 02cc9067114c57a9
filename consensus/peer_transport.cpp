// The peer transport: its ports, accepting, members added and resolved, and the public
// PeerTransport. Its connections: peer_incoming.cpp, peer_outgoing.cpp (peer_transport_impl.hpp).

#include "consensus/peer_transport_impl.hpp"

namespace warden::consensus {

void PeerTransport::Impl::identified(const std::shared_ptr<Incoming>& c) {
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

PeerTransport::Impl::Impl(asio::io_context& i, int64_t s, std::vector<Member> ms, Receive r)
    : io(i), self(s), receive(std::move(r)) {
  for (auto& m : ms) members[m.id] = m;
}

void PeerTransport::Impl::bind(tcp::acceptor& a, const std::string& host, uint16_t port, const char* what) {
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

void PeerTransport::Impl::accept(tcp::acceptor& a, bool vote) {
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

size_t PeerTransport::Impl::strangers_connected(int64_t except) const {
  std::set<int64_t> ids;
  for (const auto& w : incoming)
    if (auto c = w.lock(); c && !c->closed && c->hello_done && c->from != except && outside(c->from))
      ids.insert(c->from);
  return ids.size();
}

void PeerTransport::Impl::forget_if_gone(int64_t id) {
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

void PeerTransport::Impl::resolve_later(int64_t id, const Member& m) {
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

std::vector<std::string> PeerTransport::Impl::address_texts(const tcp::resolver::results_type& results) {
  std::vector<std::string> found;
  for (const auto& r : results) {
    auto a = r.endpoint().address();
    if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
    found.push_back(a.to_string());
  }
  return found;
}

void PeerTransport::Impl::resolve_members() {
  for (const auto& [id, m] : members) resolve(id, m);
}

void PeerTransport::Impl::resolve(int64_t id, const Member& m) {
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
