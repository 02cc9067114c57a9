// ZooKeeper's AdminServer: HTTP on admin.serverAddress:admin.serverPort (default 0.0.0.0:8080),
// and, as a second instance, the Prometheus endpoint (metricsProvider.httpHost:httpPort, GET
// /metrics, ZooKeeper's PrometheusMetricsProvider's),
// GET admin.commandURL (default /commands) lists the commands as links, GET
// /commands/NAME answers a command's JSON (RequestPipeline::admin_command). HTTP is Boost.Beast's.
// Requests are bounded (8 KiB of header, no body past 64 KiB, except the commands listed as
// uploads, whose POST body goes to a file) and so is a connection's silence
// (admin.idleTimeout); garbage gets 400 and the connection is closed. A command may answer
// later (from work off the server's thread) and with a file as its body (a backup). Everything runs
// on the server's io_context: a command sees the state a client request would. A port that
// cannot be bound is one log line, and the server serves clients without it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/config/admin_settings.hpp"

namespace boost::asio {
class io_context;
}

namespace warden::server::admin {

struct AdminRequest {
  std::string name, query;  // the command as the URL names it ("" for the metrics path)
  std::string authorization;  // the Authorization header
  std::string peer;           // the client's address
  bool post = false;
  std::string body_file;  // an upload's body (removed once answered)
};

struct AdminReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string file;          // when set: the body is this file's content, and the file is removed after
  std::function<void()> after;  // runs once the reply is written (or the client went away)
};

class AdminServer {
 public:
  // Answers a request by calling `done` once, on the server's thread, now or later.
  using Run = std::function<void(AdminRequest request, std::function<void(AdminReply)> done)>;
  AdminServer(boost::asio::io_context& io, AdminSettings settings, Run run);
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;
  // Binds and serves; false (after one log line) when the address cannot be bound.
  bool start();
  void stop();
  uint16_t port() const;  // bound (0 before start or when not bound)

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace warden::server::admin
