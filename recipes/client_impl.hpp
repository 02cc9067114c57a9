// Client::Impl, shared by the client's files (private to recipes/): client.cpp (values, the
// session's small methods, the Client's life and its asynchronous calls), client_connection.cpp
// (connecting, TLS, the handshake, reads and pings, SASL, a broken connection, sending) and
// client_blocking.cpp (the blocking forms). The session's rules without the socket:
// session/session_core.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>
#include <utility>

// After the standard headers: Boost 1.74's awaitable.hpp uses std::exchange without <utility>.
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include "recipes/client.hpp"
#include "recipes/session/session_core.hpp"
#include "wire/framing.hpp"
#include "wire/jute.hpp"

namespace warden::client {

namespace asio = boost::asio;
using asio::ip::tcp;
using wire::OpCode;
using Clock = std::chrono::steady_clock;

inline std::string framed(const std::string& payload) {
  std::string f;
  wire::append_frame(f, payload);
  return f;
}
template <class R>
std::string request_frame(int32_t xid, OpCode op, const R& body) {
  return framed(wire::encode(wire::RequestHeader{xid, static_cast<int32_t>(op)}) + wire::encode(body));
}

// Where getConfig reads (ZooDefs.CONFIG_NODE): never under a chroot.
inline constexpr const char* config_node = "/zookeeper/config";

inline void not_on_client_thread(const std::thread& t) {
  if (std::this_thread::get_id() == t.get_id())
    throw std::logic_error("a blocking call of warden::client::Client from one of its own callbacks");
}

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

  // Read from other threads (state(), session_id() ...): under `mu`.
  mutable std::mutex mu;
  State state_ = State::connecting;
  int64_t session_id_ = 0;
  std::string passwd_ = std::string(16, '\0');
  int32_t negotiated_ = 0;
  std::string server_;
  std::string last_error_;

  // The client's thread only.
  // Whether the current connection's handshake is done, whether the session ended (expired,
  // auth failed or closed: no more connections), and which state each event reports.
  session::ConnectionStates states;
  // Invariant: every asynchronous callback (resolve, connect, read, write, timers) captures the
  // generation current when it was started and does nothing when it finds another; connect()
  // and drop_socket() bump it. So a callback of a connection that has ended never touches the
  // socket, buffers or requests of the one after it, whatever order Asio runs them in.
  uint64_t generation = 0;
  session::HostOrder host_order;
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

  explicit Impl(Options o);

  // ---- paths under the chroot ----
  std::string full(const std::string& p) const;
  std::string relative(const std::string& p) const;

  void set_state(State s);
  State get_state() const;

  // ---- connections ----
  void connect();

  void tls_handshake(uint64_t gen, const std::string& server_name);

  static std::string tls_reason(const boost::system::error_code& e);

  static std::shared_ptr<asio::ssl::context> make_tls_context(const Options::Tls& t);

  void handshake(uint64_t gen, const std::string& server_name);

  template <class Handler>
  void read_some(Handler h);

  void read(uint64_t gen);

  void arm_read_timer();

  // A ping goes out once no confirming request (a ping, a write: see SessionClock) has been sent
  // for a third of the session timeout (ZooKeeper's client rule: half its read timeout), timed
  // from that send itself: a fixed period from the last check could let a send just after a
  // check put off the ping to nearly two thirds, and the read timer (two thirds after the last
  // reply) then fire before the ping's answer came (CI saw an idle session suspended on
  // ZooKeeper 3.8). A client that only reads pings too, so its loss deadline keeps moving.
  void schedule_ping();

  void frame(const std::string& payload);

  void on_connect_response(const std::string& payload);

  // SASL first, as ZooKeeper's client does it: nothing else is sent until the exchange ends.
  void begin_sasl();

  void sasl_send(const SaslClientExchange::Step& st);

  void on_sasl_reply(int32_t err, std::string_view body);

  void sasl_failed(const std::string& why);

  // The session is usable on this connection: auth first, then the watches, then whatever
  // waited for it.
  void ready();

  // ---- following the member list (Options::follow_config) ----
  void watch_config();

  void follow_members(const std::string& text);

  void get_data(std::string server_path, std::string path, Watcher watcher, Callback<std::string, Stat> cb);

  // The watches again, on a new connection (getConfig's outside the chroot).
  void send_set_watches();

  // The connection is gone: what was in flight failed (its outcome unknown), the rest waits
  // for the next one, with the session, until the session is reported lost.
  void broken(const std::string& why);

  void drop_socket();

  void fail_queued(Err e);

  void fail_in_flight(Err e);

  // No more connections: expired, auth failed or closed.
  void end(State s, Err e);

  void send_raw(std::string frame);

  void flush();

  void send_request(Request q);

  template <class R>
  void submit(OpCode op, const R& body, Done done);

  // ---- watches ----
  void add_watch(WatchKind k, const std::string& path, Watcher w) { watches.add(k, path, std::move(w)); }
  void deliver(EventType t, const std::string& path);
};

}  // namespace warden::client
