#include "consensus/peer_transport.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <chrono>
#include <map>
#include <stdexcept>

namespace warden::consensus {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr char magic[4] = {'W', 'R', 'D', 'P'};
constexpr size_t hello_size = 4 + 4 + 8 + 8;
constexpr auto min_backoff = std::chrono::milliseconds(20);
constexpr auto max_backoff = std::chrono::milliseconds(1000);
// A connection that lived this long was healthy: the next failure starts the backoff again.
constexpr auto healthy_after = std::chrono::seconds(2);

void put_u32(std::string& out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_be(const char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
std::string endpoint_text(const tcp::socket& s) {
  boost::system::error_code ec;
  auto ep = s.remote_endpoint(ec);
  return ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
}
}  // namespace

struct PeerTransport::Impl {
  asio::io_context& io;
  int64_t self;
  std::map<int64_t, Member> members;
  Receive receive;
  tcp::acceptor quorum{io}, election{io};
  bool stopping = false;
  uint64_t refused = 0;
  std::function<void(int64_t)> on_lost;

  // A connection another member made to us: hello, then frames.
  struct Incoming : std::enable_shared_from_this<Incoming> {
    Impl& t;
    tcp::socket socket;
    std::string peer;
    int64_t from = 0;
    std::string in;
    std::vector<char> chunk = std::vector<char>(64 * 1024);
    bool hello_done = false, closed = false;
    Incoming(Impl& impl, tcp::socket s) : t(impl), socket(std::move(s)), peer(endpoint_text(socket)) {}

    void start() { read(); }
    void read() {
      socket.async_read_some(asio::buffer(chunk), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
        if (ec || self->t.stopping) return self->close();
        self->in.append(self->chunk.data(), n);
        if (!self->consume()) return self->close();
        self->read();
      });
    }
    // False: the connection must close.
    bool consume() {
      size_t off = 0;
      if (!hello_done) {
        if (in.size() < hello_size) return true;
        const char* p = in.data();
        uint32_t v = static_cast<uint32_t>(get_be(p + 4, 4));
        auto sender = static_cast<int64_t>(get_be(p + 8, 8));
        auto target = static_cast<int64_t>(get_be(p + 16, 8));
        std::string why;
        if (!std::equal(magic, magic + 4, p))
          why = "it does not speak the Warden peer protocol";
        else if (v != PeerTransport::version)
          why = "it speaks peer protocol version " + std::to_string(v) + ", this member " +
                std::to_string(PeerTransport::version);
        else if (sender == t.self || !t.members.count(sender))
          why = "server id " + std::to_string(sender) + " is not another member of this ensemble";
        else if (target != t.self)
          why = "it meant to reach server " + std::to_string(target) + ", this is server " + std::to_string(t.self);
        if (!why.empty()) {
          ++t.refused;
          spdlog::warn("refusing a peer connection from {}: {}", peer, why);
          return false;
        }
        from = sender;
        hello_done = true;
        off = hello_size;
      }
      while (in.size() - off >= 4) {
        size_t len = get_be(in.data() + off, 4);
        if (len > PeerTransport::max_frame) {
          ++t.refused;
          spdlog::warn("closing the connection from server {} ({}): a frame of {} bytes is above the limit of {}", from,
                       peer, len, PeerTransport::max_frame);
          return false;
        }
        if (in.size() - off - 4 < len) break;
        if (!t.receive(from, std::string_view(in.data() + off + 4, len))) {
          ++t.refused;
          return false;  // the receiver logged why
        }
        off += 4 + len;
        if (t.stopping) return false;
      }
      in.erase(0, off);
      return true;
    }
    void close() {
      if (closed) return;
      closed = true;
      boost::system::error_code ec;
      socket.close(ec);
    }
  };

  // This member's connection to one port of another: it sends only.
  struct Outgoing {
    Impl& t;
    Member to;
    bool vote;
    tcp::socket socket;
    tcp::resolver resolver;
    asio::steady_timer retry;
    bool connected = false, connecting = false, writing = false;
    std::string pending, writing_buf;
    std::chrono::milliseconds backoff = min_backoff;
    std::chrono::steady_clock::time_point since;
    uint64_t generation = 0;  // a callback of an earlier socket finds a newer one and does nothing
    bool logged_down = false;
    Outgoing(Impl& impl, Member m, bool v)
        : t(impl), to(std::move(m)), vote(v), socket(impl.io), resolver(impl.io), retry(impl.io) {}

    uint16_t port() const { return vote ? to.election_port : to.quorum_port; }
    const char* what() const { return vote ? "election" : "quorum"; }

    void connect() {
      if (t.stopping || connecting || connected) return;
      connecting = true;
      uint64_t gen = ++generation;
      resolver.async_resolve(to.host, std::to_string(port()),
                             [this, gen](boost::system::error_code ec, tcp::resolver::results_type results) {
                               if (gen != generation || t.stopping) return;
                               if (ec) return failed("cannot resolve " + to.host + ": " + ec.message());
                               asio::async_connect(socket, results,
                                                   [this, gen](boost::system::error_code ec2, const tcp::endpoint&) {
                                                     if (gen != generation || t.stopping) return;
                                                     if (ec2) return failed(ec2.message());
                                                     established(gen);
                                                   });
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
      std::string hello(magic, 4);
      put_u32(hello, PeerTransport::version);
      put_u64(hello, static_cast<uint64_t>(t.self));
      put_u64(hello, static_cast<uint64_t>(to.id));
      pending.insert(0, hello);
      flush();
      // The other side never writes on this connection: a read ends only when it closes.
      auto sink = std::make_shared<std::array<char, 64>>();
      socket.async_read_some(asio::buffer(*sink), [this, gen, sink](boost::system::error_code, size_t) {
        if (gen == generation && !t.stopping) failed("the connection closed");
      });
    }
    void failed(const std::string& why) {
      if (!logged_down) spdlog::info("no connection to server {} ({} port {}:{}): {}; retrying", to.id, what(), to.host,
                                     port(), why);
      logged_down = true;
      boost::system::error_code ec;
      socket.close(ec);
      socket = tcp::socket(t.io);
      ++generation;
      if (connected && std::chrono::steady_clock::now() - since > healthy_after) backoff = min_backoff;
      connected = connecting = writing = false;
      pending.clear();  // lost with the connection, as the core expects
      writing_buf.clear();
      retry.expires_after(backoff);
      backoff = std::min(backoff * 2, std::chrono::duration_cast<std::chrono::milliseconds>(max_backoff));
      retry.async_wait([this](boost::system::error_code ec2) {
        if (!ec2 && !t.stopping) connect();
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
        return;
      }
      put_u32(pending, static_cast<uint32_t>(bytes.size()));
      pending += bytes;
      if (connected) flush();
      else connect();
    }
    void flush() {
      if (writing || pending.empty() || !connected) return;
      writing = true;
      writing_buf.swap(pending);
      pending.clear();
      uint64_t gen = generation;
      asio::async_write(socket, asio::buffer(writing_buf), [this, gen](boost::system::error_code ec, size_t) {
        if (gen != generation || t.stopping) return;
        writing = false;
        writing_buf.clear();
        if (ec) return failed(ec.message());
        flush();
      });
    }
    void stop() {
      ++generation;
      boost::system::error_code ec;
      retry.cancel();
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

  void accept(tcp::acceptor& a) {
    a.async_accept([this, &a](boost::system::error_code ec, tcp::socket s) {
      if (stopping) return;
      if (!ec) {
        auto c = std::make_shared<Incoming>(*this, std::move(s));
        incoming.erase(std::remove_if(incoming.begin(), incoming.end(), [](auto& w) { return w.expired(); }),
                       incoming.end());
        incoming.push_back(c);
        c->start();
      } else if (ec == asio::error::operation_aborted) {
        return;
      }
      accept(a);
    });
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
  i.accept(i.quorum);
  i.accept(i.election);
  for (const auto& [id, m] : i.members) {
    if (id == i.self) continue;
    for (bool vote : {false, true}) {
      auto o = std::make_unique<Impl::Outgoing>(i, m, vote);
      o->connect();
      i.out.emplace(std::make_pair(id, vote), std::move(o));
    }
  }
}

void PeerTransport::set_on_lost(std::function<void(int64_t)> lost) { impl_->on_lost = std::move(lost); }

void PeerTransport::send(int64_t to, std::string bytes, bool vote) {
  auto it = impl_->out.find({to, vote});
  if (it == impl_->out.end() || impl_->stopping) return;
  it->second->send(std::move(bytes));
}

void PeerTransport::stop() {
  auto& i = *impl_;
  if (i.stopping) return;
  i.stopping = true;
  boost::system::error_code ec;
  i.quorum.close(ec);
  i.election.close(ec);
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

}  // namespace warden::consensus
