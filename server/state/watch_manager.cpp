#include "server/state/watch_manager.hpp"

#include <algorithm>

#include "server/state/path.hpp"

namespace warden::server {

using wire::EventType;

void WatchManager::Manager::add(const std::string& path, ConnId c, Kinds k) {
  Kinds& held = table[path][c];
  if (held == 0) {
    ++count;
    by_conn[c].insert(path);
  }
  if ((k & recursive) && !(held & recursive)) ++recursive_count;
  held |= k;
}

bool WatchManager::Manager::clear(const std::string& path, ConnId c, Kinds k) {
  auto it = table.find(path);
  if (it == table.end()) return false;
  auto e = it->second.find(c);
  if (e == it->second.end() || !(e->second & k)) return false;
  if ((e->second & k & recursive)) --recursive_count;
  e->second &= static_cast<Kinds>(~k);
  if (e->second == 0) {
    it->second.erase(e);
    if (it->second.empty()) table.erase(it);
    forget(path, c);
  }
  return true;
}

void WatchManager::Manager::forget(const std::string& path, ConnId c) {
  --count;
  if (auto b = by_conn.find(c); b != by_conn.end()) {
    b->second.erase(path);
    if (b->second.empty()) by_conn.erase(b);
  }
}

WatchManager::Kinds WatchManager::Manager::kinds(const std::string& path, ConnId c) const {
  auto it = table.find(path);
  if (it == table.end()) return 0;
  auto e = it->second.find(c);
  return e == it->second.end() ? 0 : e->second;
}

void WatchManager::Manager::fire(const std::string& path, EventType type, std::vector<ConnId>& out) const {
  // Recursive watches never report child-list changes (ZooKeeper's rule: their creates and
  // deletes already tell).
  bool child_change = type == EventType::nodeChildrenChanged;
  if (auto it = table.find(path); it != table.end())
    for (const auto& [c, k] : it->second)
      if ((k & (standard | persistent)) || ((k & recursive) && !child_change)) out.push_back(c);
  if (recursive_count == 0 || child_change || path == "/") return;
  std::string_view at = path;
  do {
    at = parent_path(at);
    auto it = table.find(std::string(at));
    if (it == table.end()) continue;
    for (const auto& [c, k] : it->second)
      if (k & recursive) out.push_back(c);
  } while (at != "/");
}

void WatchManager::Manager::spend(const std::string& path) {
  auto it = table.find(path);
  if (it == table.end()) return;
  auto& held = it->second;
  for (auto e = held.begin(); e != held.end();) {
    if (!(e->second & standard)) {
      ++e;
      continue;
    }
    e->second &= static_cast<Kinds>(~standard);
    if (e->second != 0) {
      ++e;
      continue;
    }
    forget(path, e->first);
    e = held.erase(e);
  }
  if (held.empty()) table.erase(it);
}

bool WatchManager::add_persistent(const std::string& path, ConnId c, int32_t mode) {
  if (mode != 0 && mode != 1) return false;
  Kinds k = mode == 0 ? persistent : recursive;
  data_.add(path, c, k);
  child_.add(path, c, k);
  return true;
}

WatchManager::Fired WatchManager::trigger(const WatchTrigger& t,
                                          const std::function<void(const std::vector<ConnId>&)>& deliver) {
  std::vector<ConnId> conns;
  Fired fired;
  bool data = false, child = false;
  switch (t.type) {
    case EventType::nodeCreated:
    case EventType::nodeDataChanged:
      data_.fire(t.path, t.type, conns);
      fired.data = conns.size();
      data = true;
      break;
    case EventType::nodeChildrenChanged:
      child_.fire(t.path, t.type, conns);
      fired.child = conns.size();
      child = true;
      break;
    case EventType::nodeDeleted:
      data_.fire(t.path, t.type, conns);
      fired.data = conns.size();
      child_.fire(t.path, t.type, conns);
      fired.child = conns.size() - fired.data;
      data = child = true;
      break;
    default:
      return fired;
  }
  // One event per connection, in a stable order whatever the hash order.
  std::sort(conns.begin(), conns.end());
  conns.erase(std::unique(conns.begin(), conns.end()), conns.end());
  if (!conns.empty()) deliver(conns);
  if (data) data_.spend(t.path);
  if (child) child_.spend(t.path);
  return fired;
}

bool WatchManager::contains(const std::string& path, WatcherType type, ConnId c) const {
  Kinds d = data_.kinds(path, c), ch = child_.kinds(path, c);
  switch (type) {
    case WatcherType::children: return ch != 0;
    case WatcherType::data: return d != 0;
    case WatcherType::any: return (d | ch) != 0;
    case WatcherType::persistent: return ((d | ch) & persistent) != 0;
    case WatcherType::persistentRecursive: return ((d | ch) & recursive) != 0;
  }
  return false;
}

bool WatchManager::remove(const std::string& path, WatcherType type, ConnId c) {
  constexpr Kinds all = standard | persistent | recursive;
  switch (type) {
    case WatcherType::children: return child_.clear(path, c, all);
    case WatcherType::data: return data_.clear(path, c, all);
    case WatcherType::any: {
      bool a = child_.clear(path, c, all);
      bool b = data_.clear(path, c, all);
      return a || b;
    }
    case WatcherType::persistent:
    case WatcherType::persistentRecursive: {
      Kinds k = type == WatcherType::persistent ? persistent : recursive;
      bool a = child_.clear(path, c, k);
      bool b = data_.clear(path, c, k);
      return a || b;
    }
  }
  return false;
}

std::vector<std::pair<std::string, std::vector<ConnId>>> WatchManager::data_watches() const {
  std::vector<std::pair<std::string, std::vector<ConnId>>> out;
  for (const auto& [path, conns] : data_.table) {
    std::vector<ConnId> ids;
    for (const auto& [c, k] : conns) ids.push_back(c);
    std::sort(ids.begin(), ids.end());
    out.emplace_back(path, std::move(ids));
  }
  std::sort(out.begin(), out.end());
  return out;
}

void WatchManager::remove_connection(ConnId c) {
  for (Manager* m : {&data_, &child_}) {
    auto b = m->by_conn.find(c);
    if (b == m->by_conn.end()) continue;
    std::vector<std::string> paths(b->second.begin(), b->second.end());
    for (const auto& p : paths) m->clear(p, c, standard | persistent | recursive);
  }
}

}  // namespace warden::server
