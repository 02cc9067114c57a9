#pragma once
// The client connections of one server thread: each accepted socket becomes a connection that
// reads frames (or a four-letter word) into the pipeline (RequestPipeline) and writes its replies, over
// plaintext or TLS; the set of them pauses reading while too many requests are in flight and
// hands the pipeline a fan-out for watch events. Sockets and TLS live in client_connections.cpp;
// this header keeps Asio out of whoever composes the server.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "server/state/watch_manager.hpp"

namespace boost::asio {
class io_context;
}

namespace warden::server {

class RequestPipeline;
class FanOut;
namespace tls {
class ServerTlsContext;
}

// Answers a four-letter word asked on connection `id` (whitelist applied).
using FourLetterHandler = std::function<std::string(std::string_view word, ConnId id)>;

// What a listener asks of the connections it accepts: plaintext, TLS, or either (told apart
// by the first byte: a TLS record starts with 0x16, which as a frame length's first byte would
// be far above jute.maxbuffer, and no four-letter word starts with it).
struct TlsPolicy {
  enum class Mode { plain, tls, either } mode = Mode::plain;
  tls::ServerTlsContext* context = nullptr;
  std::string x509_super_user;
};

class ClientConnections {
 public:
  struct Limits {
    int32_t max_buffer = 0;    // jute.maxbuffer: the largest frame taken
    int32_t per_address = 0;   // maxClientCnxns: connections from one address, 0 for no limit
  };
  ClientConnections(boost::asio::io_context& io, RequestPipeline& server, Limits limits, FourLetterHandler four_letter);
  ~ClientConnections();
  ClientConnections(const ClientConnections&) = delete;
  ClientConnections& operator=(const ClientConnections&) = delete;

  // Takes a connected socket (its descriptor, owned from here) accepted on a port with
  // `policy`, which must outlive the connection. False when it is refused and closed for too
  // many connections from its address (maxClientCnxns); a descriptor that cannot be taken is
  // closed with a warning.
  bool adopt(int fd, const TlsPolicy& policy);

  // Reading stops while `over` says so; the connections that stopped read again at
  // resume_paused(), once it no longer does.
  void pause_while(std::function<bool()> over);
  void resume_paused();

  // Watch events to many connections at once (the pipeline's FanOut).
  FanOut& fan_out();

  int64_t handshakes() const;  // TLS handshakes begun and not ended
  int64_t closed() const;      // connections ended since the start
  // Ends every connection (the server stops).
  void close_all();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace warden::server
