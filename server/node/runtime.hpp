// A running standalone server: the log, the ensemble of one, the pipeline, the client port and
// the tick on one event-loop thread (the server's), with two helpers: the group committer's
// thread syncs the log, and the snapshot writer's thread walks the tree (under a lock the server
// thread takes only to apply commits) and writes snapshots. The binary and EmbeddedServer both
// build on it. Asio stays inside runtime.cpp and server/network/.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "server/config/config.hpp"
#include "server/network/listen_error.hpp"

namespace warden::server {

// Keeps main's arguments: after a restore (POST /commands/restore) the process starts again in
// place with them. Without them a restore is refused (an embedded server cannot restart).
void remember_command_line(int argc, char** argv);

class ServerRuntime {
 public:
  // Opens the log under dataLogDir (or dataDir) and replays it. Throws storage::StorageError
  // (a std::runtime_error) naming the directory and the problem when it cannot.
  explicit ServerRuntime(const Config& config);
  ~ServerRuntime();
  ServerRuntime(const ServerRuntime&) = delete;
  ServerRuntime& operator=(const ServerRuntime&) = delete;

  // Binds the client port (0 picks a free one). Throws ListenError when it cannot.
  void bind();
  // "host:port" as bound, IPv6 in brackets; empty for a port not configured.
  std::string address() const;
  std::string secure_address() const;
  // The AdminServer's port (0 when it is off or could not bind).
  uint16_t admin_port() const;  // secureClientPort's
  uint16_t port() const;
  // Serves until stop(); stops cleanly on SIGTERM and SIGINT when `handle_signals`. False when
  // it stopped because RocksDB failed a log write.
  bool run(bool handle_signals);
  // Safe from any thread.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace warden::server
