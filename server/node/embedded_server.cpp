#include "server/node/embedded_server.hpp"

#include "server/node/runtime.hpp"

namespace warden::server {

Config EmbeddedServer::default_config() {
  Config c;
  c.client_port = 0;
  c.client_port_address = "127.0.0.1";
  c.data_dir = "(memory)";
  c.in_memory = true;
  c.admin.enabled = false;  // a test's server: no fixed port
  return c;
}

EmbeddedServer::EmbeddedServer(Config config) : runtime_(std::make_unique<ServerRuntime>(config)) {
  runtime_->bind();
  port_ = runtime_->port();
  thread_ = std::thread([this] { runtime_->run(false); });
}

EmbeddedServer::~EmbeddedServer() { stop(); }

std::string EmbeddedServer::connect_string() const { return "127.0.0.1:" + std::to_string(port_); }

void EmbeddedServer::stop() {
  if (!thread_.joinable()) return;
  runtime_->stop();
  thread_.join();
}

}  // namespace warden::server
