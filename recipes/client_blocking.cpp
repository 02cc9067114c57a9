// The client's blocking forms: each runs its asynchronous call and waits for the callback, within
// the request timeout or the caller's deadline (CallDeadline), never on the client's thread.
#include "recipes/client_impl.hpp"

namespace warden::client {

namespace {
// Runs an asynchronous call and waits for its callback; a failure throws Error(code, what).
// It always ends: a reply, a broken connection (ConnectionLoss), a session reported lost
// (ConnectionLoss, within a session timeout of the last answer) or ended; and with
// Options::request_timeout_ms, RequestTimeout once that passed (the request's outcome is then
// unknown, as with ZooKeeper's zookeeper.request.timeout).
thread_local std::optional<std::chrono::steady_clock::time_point> call_deadline;

template <class... T, class Start>
std::tuple<T...> wait_for(const std::thread& t, int32_t timeout_ms, const std::string& what, Start start) {
  not_on_client_thread(t);
  auto p = std::make_shared<std::promise<std::pair<Err, std::tuple<T...>>>>();
  auto f = p->get_future();
  start([p](Err e, T... v) { p->set_value({e, std::tuple<T...>(std::move(v)...)}); });
  std::optional<std::chrono::steady_clock::time_point> until;
  if (timeout_ms > 0) until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool callers = call_deadline && (!until || *call_deadline < *until);
  if (callers) until = call_deadline;
  if (until && f.wait_until(*until) != std::future_status::ready)
    throw Error(Err::requestTimeout, what + (callers ? std::string(": the caller's deadline passed")
                                                     : ": no reply within " + std::to_string(timeout_ms) + " ms"));
  auto [e, v] = f.get();
  if (e != Err::ok) throw Error(e, what);
  return std::move(v);
}
}  // namespace

CallDeadline::CallDeadline(std::optional<std::chrono::steady_clock::time_point> deadline) : previous_(call_deadline) {
  call_deadline = deadline;
}
CallDeadline::~CallDeadline() { call_deadline = previous_; }

std::pair<std::string, Stat> Client::create2(const std::string& path, const std::string& data, CreateMode mode,
                                             AclList acl, int64_t ttl_ms) {
  auto [p, s] = wait_for<std::string, Stat>(
      impl_->thread, impl_->opts.request_timeout_ms, "create " + path,
      [&](auto cb) { create_async(path, data, mode, std::move(acl), ttl_ms, std::move(cb)); });
  return {p, s};
}
std::string Client::create(const std::string& path, const std::string& data, CreateMode mode, AclList acl,
                           int64_t ttl_ms) {
  return create2(path, data, mode, std::move(acl), ttl_ms).first;
}
void Client::remove(const std::string& path, int32_t version) {
  wait_for<>(impl_->thread, impl_->opts.request_timeout_ms, "delete " + path,
             [&](auto cb) { remove_async(path, version, std::move(cb)); });
}
std::optional<Stat> Client::exists(const std::string& path, Watcher watcher) {
  return std::get<0>(
      wait_for<std::optional<Stat>>(impl_->thread, impl_->opts.request_timeout_ms, "exists " + path,
                                    [&](auto cb) { exists_async(path, std::move(watcher), std::move(cb)); }));
}
std::pair<std::string, Stat> Client::get(const std::string& path, Watcher watcher) {
  auto [d, s] = wait_for<std::string, Stat>(impl_->thread, impl_->opts.request_timeout_ms, "get " + path,
                                            [&](auto cb) { get_async(path, std::move(watcher), std::move(cb)); });
  return {d, s};
}
std::pair<std::string, Stat> Client::reconfig(std::optional<std::string> joining, std::optional<std::string> leaving,
                                              std::optional<std::string> members, int64_t from_config) {
  auto [d, s] = wait_for<std::string, Stat>(impl_->thread, impl_->opts.request_timeout_ms, "reconfig", [&](auto cb) {
    reconfig_async(std::move(joining), std::move(leaving), std::move(members), from_config, std::move(cb));
  });
  return {d, s};
}
std::pair<std::string, Stat> Client::config(Watcher watcher) {
  auto [d, s] = wait_for<std::string, Stat>(impl_->thread, impl_->opts.request_timeout_ms, "config",
                                            [&](auto cb) { config_async(std::move(watcher), std::move(cb)); });
  return {d, s};
}
Stat Client::set(const std::string& path, const std::string& data, int32_t version) {
  return std::get<0>(wait_for<Stat>(impl_->thread, impl_->opts.request_timeout_ms, "set " + path,
                                    [&](auto cb) { set_async(path, data, version, std::move(cb)); }));
}
std::vector<std::string> Client::children(const std::string& path, Watcher watcher) {
  return children2(path, std::move(watcher)).first;
}
std::pair<std::vector<std::string>, Stat> Client::children2(const std::string& path, Watcher watcher) {
  auto [c, s] = wait_for<std::vector<std::string>, Stat>(
      impl_->thread, impl_->opts.request_timeout_ms, "ls " + path,
      [&](auto cb) { children_async(path, std::move(watcher), std::move(cb)); });
  return {c, s};
}
std::pair<AclList, Stat> Client::get_acl(const std::string& path) {
  auto [a, s] = wait_for<AclList, Stat>(impl_->thread, impl_->opts.request_timeout_ms, "getAcl " + path,
                                        [&](auto cb) { get_acl_async(path, std::move(cb)); });
  return {a, s};
}
Stat Client::set_acl(const std::string& path, AclList acl, int32_t version) {
  return std::get<0>(wait_for<Stat>(impl_->thread, impl_->opts.request_timeout_ms, "setAcl " + path,
                                    [&](auto cb) { set_acl_async(path, std::move(acl), version, std::move(cb)); }));
}
void Client::sync(const std::string& path) {
  wait_for<>(impl_->thread, impl_->opts.request_timeout_ms, "sync " + path,
             [&](auto cb) { sync_async(path, std::move(cb)); });
}
std::vector<MultiResult> Client::multi(std::vector<MultiOp> ops) {
  return std::get<0>(wait_for<std::vector<MultiResult>>(impl_->thread, impl_->opts.request_timeout_ms, "multi",
                                                        [&](auto cb) { multi_async(std::move(ops), std::move(cb)); }));
}
void Client::add_auth(const std::string& scheme, const std::string& credentials) {
  wait_for<>(impl_->thread, impl_->opts.request_timeout_ms, "addauth " + scheme,
             [&](auto cb) { add_auth_async(scheme, credentials, std::move(cb)); });
}
void Client::add_watch(const std::string& path, bool recursive, Watcher watcher) {
  wait_for<>(impl_->thread, impl_->opts.request_timeout_ms, "addWatch " + path,
             [&](auto cb) { add_watch_async(path, recursive, std::move(watcher), std::move(cb)); });
}
void Client::remove_watches(const std::string& path) {
  wait_for<>(impl_->thread, impl_->opts.request_timeout_ms, "removeWatches " + path,
             [&](auto cb) { remove_watches_async(path, std::move(cb)); });
}
std::vector<std::string> Client::ephemerals(const std::string& prefix) {
  return std::get<0>(wait_for<std::vector<std::string>>(impl_->thread, impl_->opts.request_timeout_ms,
                                                        "getEphemerals " + prefix,
                                                        [&](auto cb) { ephemerals_async(prefix, std::move(cb)); }));
}
int32_t Client::all_children_number(const std::string& path) {
  return std::get<0>(wait_for<int32_t>(impl_->thread, impl_->opts.request_timeout_ms, "getAllChildrenNumber " + path,
                                       [&](auto cb) { all_children_number_async(path, std::move(cb)); }));
}

void Client::ensure_path(const std::string& path, bool containers) {
  if (path.empty() || path == "/") return;
  size_t at = 1;
  for (;;) {
    size_t slash = path.find('/', at);
    std::string prefix = path.substr(0, slash);
    try {
      create(prefix, {}, containers && slash != std::string::npos ? CreateMode::container : CreateMode::persistent);
    } catch (const Error& e) {
      if (e.code() != Err::nodeExists) throw;
    }
    if (slash == std::string::npos) return;
    at = slash + 1;
  }
}

}  // namespace warden::client
