// What an AdminServer listens on and serves (ZooKeeper's admin.* keys, and the Prometheus
// endpoint's metricsProvider.* keys): plain settings, so that the configuration holds them
// without the HTTP server's header.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace warden::server::admin {

struct AdminSettings {
  bool enabled = true;
  std::string address = "0.0.0.0";
  int32_t port = 8080;
  std::string command_url = "/commands";  // empty: no commands (the metrics endpoint)
  int32_t idle_timeout_ms = 30000;
  std::string metrics_path;  // "/metrics": Prometheus's text format there (Run gets "")
  std::string what = "AdminServer";  // for log lines
  // Commands (primary or short names) whose POST body is written to a file in upload_dir, up
  // to max_upload bytes, within upload_timeout_ms.
  std::vector<std::string> uploads;
  // Asked once the headers are in, before an upload's body is read: a client that may not
  // upload (a command that is off, credentials that do not authorize it) gets its answer
  // without the server storing what it sends (the body is then bounded as any other).
  std::function<bool(std::string_view name, std::string_view authorization, const std::string& peer)> upload_allowed;
  std::string upload_dir;
  uint64_t max_upload = 1ull << 40;
  int64_t upload_timeout_ms = 3600000;
};

}  // namespace warden::server::admin
