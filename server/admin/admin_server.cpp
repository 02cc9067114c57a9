#include "server/admin/admin_server.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>

#include "server/admin/commands.hpp"

namespace warden::server::admin {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {
constexpr size_t max_header = 8 * 1024;
std::string_view to_std(beast::string_view s) { return {s.data(), s.size()}; }
constexpr size_t max_body = 64 * 1024;

// One handler type for every read and write of a connection: Beast's operations are then
// instantiated once a body type rather than once a lambda (this file was the longest compile of
// a first build; docs/benchmarks.md, "Build time").
using Done = std::function<void(beast::error_code, size_t)>;

// One client's connection: requests in turn, each answered before the next is read.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket s, AdminSettings settings, AdminServer::Run run)
      : socket_(std::move(s)), deadline_(socket_.get_executor()), settings_(std::move(settings)), run_(std::move(run)) {}
  ~Session() { drop_upload(); }
  void start() { read(); }

 private:
  void read() {
    head_.emplace();
    head_->header_limit(max_header);
    expires_after(std::chrono::milliseconds(settings_.idle_timeout_ms));
    http::async_read_header(socket_, buffer_, *head_, Done([self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted) return self->close();
      if (ec) return self->bad_request(ec.message());
      self->read_body();
    }));
  }

  // The command a target names under the command URL ("" when it names none).
  std::string command_of(std::string_view target) const {
    target = target.substr(0, target.find('?'));
    std::string_view base = settings_.command_url;
    if (base.empty() || target.size() <= base.size() + 1 || target.substr(0, base.size()) != base ||
        target[base.size()] != '/')
      return {};
    return std::string(target.substr(base.size() + 1));
  }

  void read_body() {
    const auto& h = head_->get();
    std::string name = command_of(std::string_view(h.target().data(), h.target().size()));
    bool upload = h.method() == http::verb::post && !settings_.upload_dir.empty() &&
                  std::find(settings_.uploads.begin(), settings_.uploads.end(), name) != settings_.uploads.end() &&
                  (!settings_.upload_allowed ||
                   settings_.upload_allowed(name, to_std(h[http::field::authorization]), peer_address()));
    Done done = [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec == asio::error::operation_aborted) return self->close();
      if (ec) return self->bad_request(ec.message());
      self->answer();
    };
    if (!upload) {
      // A body announced past the bound is refused before it is read.
      if (auto n = head_->content_length(); n && *n > max_body) return bad_request("body too large");
      text_.emplace(std::move(*head_));
      text_->body_limit(max_body);
      return http::async_read(socket_, buffer_, *text_, std::move(done));
    }
    static std::atomic<uint64_t> uploads{0};
    upload_path_ = settings_.upload_dir + "/admin-upload-" + std::to_string(getpid()) + "-" + std::to_string(++uploads);
    file_.emplace(std::move(*head_));
    file_->body_limit(settings_.max_upload);
    beast::error_code ec;
    file_->get().body().open(upload_path_.c_str(), beast::file_mode::write, ec);
    if (ec) {
      spdlog::warn("AdminServer: cannot write an upload to {}: {}", upload_path_, ec.message());
      upload_path_.clear();
      return bad_request("cannot store the body");
    }
    expires_after(std::chrono::milliseconds(settings_.upload_timeout_ms));
    std::function<void()> read = [self = shared_from_this(), done = std::move(done)]() {
      http::async_read(self->socket_, self->buffer_, *self->file_, Done(done));
    };
    if (!beast::iequals(file_->get()[http::field::expect], "100-continue")) return read();
    // curl and others wait for this before they send a large body.
    auto cont = std::make_shared<http::response<http::string_body>>(http::status::continue_, 11);
    http::async_write(socket_, *cont, Done([cont, read = std::move(read)](beast::error_code ec, size_t) {
      if (!ec) read();
    }));
  }

  void drop_upload() {
    if (upload_path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove(upload_path_, ec);
    upload_path_.clear();
  }

  void answer() {
    const auto& req = text_ ? static_cast<const http::request_header<>&>(text_->get())
                            : static_cast<const http::request_header<>&>(file_->get());
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(req.version());
    res->keep_alive(text_ ? text_->get().keep_alive() : file_->get().keep_alive());
    res->set(http::field::server, "Warden");
    std::string_view target(req.target().data(), req.target().size());
    std::string_view query = target.find('?') == std::string_view::npos ? std::string_view()
                                                                         : target.substr(target.find('?') + 1);
    target = target.substr(0, target.find('?'));
    std::string_view base = settings_.command_url;
    std::string name = command_of(target);
    bool get = req.method() == http::verb::get || req.method() == http::verb::head;
    bool upload_command = std::find(settings_.uploads.begin(), settings_.uploads.end(), name) != settings_.uploads.end();
    if (!get && !(req.method() == http::verb::post && (file_ || upload_command))) {
      res->result(http::status::method_not_allowed);
      res->set(http::field::allow, "GET, HEAD");
    } else if (!settings_.metrics_path.empty() && target == settings_.metrics_path) {
      return run_request(AdminRequest{}, res, "text/plain; version=0.0.4; charset=utf-8");
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
    } else if (!name.empty()) {
      AdminRequest r;
      r.name = name;
      r.query = std::string(query);
      r.authorization = std::string(req[http::field::authorization]);
      r.peer = peer_address();
      r.post = !get;
      r.body_file = std::exchange(upload_path_, {});
      // No Access-Control-Allow-Origin, as ZooKeeper 3.8: a page open in an operator's browser
      // must not read what the commands show (docs/security.md).
      return run_request(std::move(r), res, "");
    } else {
      res->result(http::status::not_found);
      res->set(http::field::content_type, "text/plain");
      res->body() = "Not found: try " + settings_.command_url + "\n";
    }
    finish(res, req.method() == http::verb::head);
  }

  // Runs the command; its reply (now or later) goes out as text or as a file.
  void run_request(AdminRequest r, std::shared_ptr<http::response<http::string_body>> res, std::string content_type) {
    bool head = (text_ ? text_->get().method() : file_->get().method()) == http::verb::head;
    run_(std::move(r), [self = shared_from_this(), res, content_type, head](AdminReply reply) {
      res->result(static_cast<http::status>(reply.status));
      res->set(http::field::content_type, content_type.empty() ? reply.content_type : content_type);
      for (const auto& [k, v] : reply.headers) res->set(k, v);
      if (reply.file.empty()) {
        res->body() = std::move(reply.body);
        return self->finish(res, head, std::move(reply.after));
      }
      self->send_file(res, std::move(reply));
    });
  }

  void finish(std::shared_ptr<http::response<http::string_body>> res, bool head, std::function<void()> after = {}) {
    if (head) {
      res->content_length(res->body().size());
      res->body().clear();
    } else {
      res->prepare_payload();
    }
    write(res, !res->keep_alive(), false, std::move(after));
  }

  // The reply's file as the body, read as the connection takes it; the file goes afterwards.
  void send_file(std::shared_ptr<http::response<http::string_body>> head, AdminReply reply) {
    auto res = std::make_shared<http::response<http::file_body>>(head->result(), head->version());
    for (const auto& f : *head) res->set(f.name_string(), f.value());
    res->keep_alive(false);  // the file may be large: one per connection
    beast::error_code ec;
    res->body().open(reply.file.c_str(), beast::file_mode::scan, ec);
    std::filesystem::path file = reply.file;
    if (ec) {
      spdlog::warn("AdminServer: cannot read {}: {}", reply.file, ec.message());
      head->result(http::status::internal_server_error);
      head->body() = "{\n  \"error\" : \"cannot read the reply's file\"\n}";
      return finish(head, false, std::move(reply.after));
    }
    res->prepare_payload();
    expires_never();  // bounded by the client's reading, and the socket's own timeouts
    http::async_write(socket_, *res, Done([self = shared_from_this(), res, file, after = std::move(reply.after)](
                                              beast::error_code, size_t) {
      std::error_code rm;
      std::filesystem::remove(file, rm);
      self->close();
      if (after) after();
    }));
  }

  std::string peer_address() {
    beast::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    return ec ? std::string() : ep.address().to_string();
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
  void write(std::shared_ptr<http::response<http::string_body>> res, bool then_close, bool unread = false,
             std::function<void()> after = {}) {
    expires_after(std::chrono::milliseconds(settings_.idle_timeout_ms));
    http::async_write(socket_, *res, Done([self = shared_from_this(), res, then_close, unread, after = std::move(after)](
                                              beast::error_code ec, size_t) {
      self->drop_upload();
      if (after) after();
      if (!ec && unread) return self->drain_then_close();
      if (ec || then_close) return self->close();
      self->text_.reset();
      self->file_.reset();
      self->read();
    }));
  }

  void drain_then_close() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    expires_after(std::chrono::seconds(1));
    auto sink = std::make_shared<std::array<char, 4096>>();
    socket_.async_read_some(asio::buffer(*sink), [self = shared_from_this(), sink](beast::error_code e, size_t) {
      if (e) return self->close();
      self->drain_then_close();
    });
  }

  std::string peer() {
    beast::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    return ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void close() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    deadline_.cancel();
  }

  // The idle and upload timeouts: once `after` passes, the connection closes and what is pending
  // on it completes with operation_aborted. Setting it again replaces the one before.
  void expires_after(std::chrono::milliseconds after) {
    deadline_.expires_after(after);
    deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
      // A wait that completed just before the deadline moved must not close the connection.
      if (!ec && self->deadline_.expiry() <= std::chrono::steady_clock::now()) self->close();
    });
  }
  void expires_never() { deadline_.expires_at(std::chrono::steady_clock::time_point::max()); }

  tcp::socket socket_;
  asio::steady_timer deadline_;
  beast::flat_buffer buffer_{max_header + max_body};
  std::optional<http::request_parser<http::empty_body>> head_;
  std::optional<http::request_parser<http::string_body>> text_;
  std::optional<http::request_parser<http::file_body>> file_;
  std::string upload_path_;  // an upload's file until a command takes it
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
  // An accept that fails for want of descriptors or memory leaves the port readable: the next try
  // waits this long (as ZooKeeper's accept thread pauses), instead of spinning the server thread.
  static constexpr auto accept_pause = std::chrono::milliseconds(10);
  asio::steady_timer pause{io};
  std::chrono::steady_clock::time_point last_warning{};
  Impl(asio::io_context& i, AdminSettings s, Run r) : io(i), settings(std::move(s)), run(std::move(r)) {}

  void accept() {
    acceptor.async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket s) {
      if (self->stopped || ec == asio::error::operation_aborted) return;
      if (!ec) {
        std::make_shared<Session>(std::move(s), self->settings, self->run)->start();
        return self->accept();
      }
      auto now = std::chrono::steady_clock::now();
      if (now - self->last_warning > std::chrono::seconds(1)) {  // at most a line a second
        self->last_warning = now;
        spdlog::warn("AdminServer: cannot accept a connection: {}; trying again every {} ms", ec.message(),
                     accept_pause.count());
      }
      self->pause.expires_after(accept_pause);
      self->pause.async_wait([self](beast::error_code e) {
        if (!e && !self->stopped) self->accept();
      });
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
  impl_->pause.cancel();
}

uint16_t AdminServer::port() const {
  beast::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

}  // namespace warden::server::admin
