#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace warden::server {

// The client port could not be bound: the address, the port and the system's reason.
struct ListenError : std::runtime_error {
  ListenError(std::string address, int32_t port, std::string reason, bool in_use, std::string key = "clientPort")
      : std::runtime_error("cannot listen on " + address + ":" + std::to_string(port) + ": " + reason),
        address(std::move(address)), port(port), reason(std::move(reason)), in_use(in_use), key(std::move(key)) {}
  std::string address;
  int32_t port;
  std::string reason;
  bool in_use;  // another socket holds the address and port
  std::string key;  // clientPort or secureClientPort
};

}  // namespace warden::server
