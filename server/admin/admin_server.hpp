// ZooKeeper's AdminServer: HTTP on admin.serverAddress:admin.serverPort (default 0.0.0.0:8080),
// and, as a second instance, the Prometheus endpoint (metricsProvider.httpHost:httpPort, GET
// /metrics, ZooKeeper's PrometheusMetricsProvider's),
// GET admin.commandURL (default /commands) lists the commands as links, GET
// /commands/NAME answers a command's JSON (ZkServer::admin_command). HTTP is Boost.Beast's.
// Requests are bounded (8 KiB of header, no body past 64 KiB) and so is a connection's
// silence (admin.idleTimeout); garbage gets 400 and the connection is closed. Everything runs
// on the server's io_context: a command sees the state a client request would. A port that
// cannot be bound is one log line, and the server serves clients without it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace boost::asio {
class io_context;
}

namespace warden::server::admin {

struct AdminSettings {
  bool enabled = true;
  std::string address = "0.0.0.0";
  int32_t port = 8080;
  std::string command_url = "/commands";  // empty: no commands (the metrics endpoint)
  int32_t idle_timeout_ms = 30000;
  std::string metrics_path;  // "/metrics": Prometheus's text format there (Run gets "")
  std::string what = "AdminServer";  // for log lines
};

class AdminServer {
 public:
  // A command's JSON text, for a name as the URL gave it and the URL's query string.
  using Run = std::function<std::string(std::string_view name, std::string_view query)>;
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
