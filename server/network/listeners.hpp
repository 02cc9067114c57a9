#pragma once
// The client ports' listening sockets: bound as zoo.cfg names them, and shown as the log and the
// four-letter words show them.

#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <string>

namespace warden::server {

// Binds and listens on `address`:`port` (0 picks a free port); throws ListenError naming `key`
// (clientPort, secureClientPort) when it cannot.
void listen(boost::asio::ip::tcp::acceptor& a, const std::string& address, int32_t port, const char* key);

// "host:port" ("[v6]:port") of a listening socket, or empty when it has none.
std::string address_of(const boost::asio::ip::tcp::acceptor& a);

}  // namespace warden::server
