#include "server/admin/admin_server.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <array>
#include <chrono>
#include <optional>

#include "server/admin/commands.hpp"

namespace warden::server::admin {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {
constexpr size_t max_header = 8 * 1024;
constexpr size_t max_body = 64 * 1024;

// One client's connection: requests in turn, each answered before the next is read.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket s, AdminSettings settings, AdminServer::Run run)
      : stream_(std::move(s)), settings_(std::move(settings)), run_(std::move(run)) {}
  void start() { read(); }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(max_header);
    parser_->body_limit(max_body);
    stream_.expires_after(std::chrono::milliseconds(settings_.idle_timeout_ms));
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::operation_aborted)
        return self->close();
      if (ec) return self->bad_request(ec.message());
      self->answer();
    });
  }

  void answer() {
    const auto& req = parser_->get();
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(req.version());
    res->keep_alive(req.keep_alive());
    res->set(http::field::server, "Warden");
    std::string_view target(req.target().data(), req.target().size());
    std::string_view query = target.find('?') == std::string_view::npos ? std::string_view()
                                                                         : target.substr(target.find('?') + 1);
    target = target.substr(0, target.find('?'));
    std::string_view base = settings_.command_url;
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      res->result(http::status::method_not_allowed);
      res->set(http::field::allow, "GET, HEAD");
    } else if (!settings_.metrics_path.empty() && target == settings_.metrics_path) {
      res->result(http::status::ok);
      res->set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      res->body() = run_("", {});
    } else if (base.empty()) {
      res->result(http::status::not_found);
      res->set(http::field::content_type, "text/plain");
      res->body() = "Not found: try " + settings_.metrics_path + "\n";
    } else if (target == base || (target.size() == base.size() + 1 && target.substr(0, base.size()) == base &&
                                  target.back() == '/')) {
      res->result(http::status::ok);
      res->set(http::field::content_type, "text/html");
      std::string body;
      for (const auto& c : commands())
        body += "<a href=\"" + settings_.command_url + "/" + c.primary + "\">" + c.primary + "</a><br/>\n";
      res->body() = std::move(body);
    } else if (target.size() > base.size() + 1 && target.substr(0, base.size()) == base &&
               target[base.size()] == '/') {
      res->result(http::status::ok);
      res->set(http::field::content_type, "application/json");
      res->set(http::field::access_control_allow_origin, "*");
      res->body() = run_(target.substr(base.size() + 1), query);
    } else {
      res->result(http::status::not_found);
      res->set(http::field::content_type, "text/plain");
      res->body() = "Not found: try " + settings_.command_url + "\n";
    }
    if (req.method() == http::verb::head) {
      res->content_length(res->body().size());
      res->body().clear();
    }
    res->prepare_payload();
    write(res, !res->keep_alive());
  }

  void bad_request(const std::string& why) {
    spdlog::debug("AdminServer: a bad request from {}: {}", peer(), why);
    auto res = std::make_shared<http::response<http::string_body>>(http::status::bad_request, 11);
    res->set(http::field::content_type, "text/plain");
    res->body() = "Bad request: " + why + "\n";
    res->keep_alive(false);
    res->prepare_payload();
    write(res, true, true);
  }

  // `unread`: the client may still be sending (a refused request); the answer goes out, then
  // what it sends is read and dropped for a moment before the close (a close with unread data
  // would reset the connection, and the client might lose the answer).
  void write(std::shared_ptr<http::response<http::string_body>> res, bool then_close, bool unread = false) {
    stream_.expires_after(std::chrono::milliseconds(settings_.idle_timeout_ms));
    http::async_write(stream_, *res, [self = shared_from_this(), res, then_close, unread](beast::error_code ec, size_t) {
      if (!ec && unread) return self->drain_then_close();
      if (ec || then_close) return self->close();
      self->read();
    });
  }

  void drain_then_close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(std::chrono::seconds(1));
    auto sink = std::make_shared<std::array<char, 4096>>();
    stream_.async_read_some(asio::buffer(*sink), [self = shared_from_this(), sink](beast::error_code e, size_t) {
      if (e) return self->close();
      self->drain_then_close();
    });
  }

  std::string peer() {
    beast::error_code ec;
    auto ep = stream_.socket().remote_endpoint(ec);
    return ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_{max_header + max_body};
  std::optional<http::request_parser<http::string_body>> parser_;
  AdminSettings settings_;  // copies: a session may outlive the AdminServer until the loop ends
  AdminServer::Run run_;
};
}  // namespace

struct AdminServer::Impl : std::enable_shared_from_this<Impl> {
  asio::io_context& io;
  AdminSettings settings;
  Run run;
  tcp::acceptor acceptor{io};
  bool stopped = false;
  Impl(asio::io_context& i, AdminSettings s, Run r) : io(i), settings(std::move(s)), run(std::move(r)) {}

  void accept() {
    acceptor.async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket s) {
      if (self->stopped || ec == asio::error::operation_aborted) return;
      if (!ec) std::make_shared<Session>(std::move(s), self->settings, self->run)->start();
      self->accept();
    });
  }
};

AdminServer::AdminServer(asio::io_context& io, AdminSettings settings, Run run)
    : impl_(std::make_shared<Impl>(io, std::move(settings), std::move(run))) {}

AdminServer::~AdminServer() { stop(); }

bool AdminServer::start() {
  auto& i = *impl_;
  beast::error_code ec;
  auto address = asio::ip::make_address(i.settings.address, ec);
  tcp::endpoint ep(address, static_cast<uint16_t>(i.settings.port));
  if (!ec) i.acceptor.open(ep.protocol(), ec);
  if (!ec) i.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) i.acceptor.bind(ep, ec);
  if (!ec) i.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    spdlog::warn("{}: cannot listen on {}:{} ({}): serving clients without it", i.settings.what, i.settings.address,
                 i.settings.port, ec.message());
    beast::error_code ignored;
    i.acceptor.close(ignored);
    return false;
  }
  spdlog::info("{} on {}:{}{}", i.settings.what, i.settings.address, port(),
               i.settings.command_url.empty() ? i.settings.metrics_path : i.settings.command_url);
  i.accept();
  return true;
}

void AdminServer::stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  beast::error_code ec;
  impl_->acceptor.close(ec);
}

uint16_t AdminServer::port() const {
  beast::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

}  // namespace warden::server::admin
