// A standalone server inside the calling process, for tests: it binds a free loopback port,
// serves from a thread of its own and stops when asked or destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "server/config/config.hpp"

namespace warden::server {

class ServerRuntime;

class EmbeddedServer {
 public:
  // Defaults: 127.0.0.1 on port 0, in-memory storage, ZooKeeper's default timings.
  static Config default_config();

  explicit EmbeddedServer(Config config = default_config());
  ~EmbeddedServer();
  EmbeddedServer(const EmbeddedServer&) = delete;
  EmbeddedServer& operator=(const EmbeddedServer&) = delete;

  uint16_t port() const { return port_; }
  std::string connect_string() const;
  void stop();

 private:
  std::unique_ptr<ServerRuntime> runtime_;
  std::thread thread_;
  uint16_t port_ = 0;
};

}  // namespace warden::server
