#include "server/network/listeners.hpp"

#include <stdexcept>

#include "server/network/listen_error.hpp"

namespace warden::server {

namespace asio = boost::asio;
using asio::ip::tcp;

void listen(tcp::acceptor& a, const std::string& address, int32_t port, const char* key) {
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(address, ec);
  if (ec) throw std::runtime_error(std::string(key) + "Address '" + address + "' is not an IP address");
  tcp::endpoint ep(addr, static_cast<uint16_t>(port));
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw ListenError(address, port, ec.message(), ec == asio::error::address_in_use, key);
}

std::string address_of(const tcp::acceptor& a) {
  boost::system::error_code ec;
  auto ep = a.local_endpoint(ec);
  if (ec) return {};
  auto host = ep.address().to_string();
  if (ep.address().is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(ep.port());
}
}  // namespace warden::server
