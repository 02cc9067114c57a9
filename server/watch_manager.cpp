#include "server/watch_manager.hpp"

#include <algorithm>

namespace warden::server {

using wire::EventType;

void WatchManager::add_data_watch(const std::string& path, ConnId c) {
  data_[path].insert(c);
  by_conn_[c].first.insert(path);
}

void WatchManager::add_child_watch(const std::string& path, ConnId c) {
  child_[path].insert(c);
  by_conn_[c].second.insert(path);
}

std::vector<ConnId> WatchManager::take(Table& table, bool child, const std::string& path) {
  std::vector<ConnId> out;
  auto it = table.find(path);
  if (it == table.end()) return out;
  out.assign(it->second.begin(), it->second.end());
  table.erase(it);
  for (ConnId c : out) {
    auto b = by_conn_.find(c);
    if (b == by_conn_.end()) continue;
    (child ? b->second.second : b->second.first).erase(path);
    if (b->second.first.empty() && b->second.second.empty()) by_conn_.erase(b);
  }
  std::sort(out.begin(), out.end());  // a stable delivery order, whatever the hash order
  return out;
}

void WatchManager::trigger(const WatchTrigger& t, std::vector<WatchEvent>& out) {
  auto emit = [&](const std::vector<ConnId>& conns) {
    for (ConnId c : conns)
      out.push_back({c, wire::WatcherEvent{static_cast<int32_t>(t.type),
                                           static_cast<int32_t>(wire::KeeperState::syncConnected), t.path}});
  };
  switch (t.type) {
    case EventType::nodeCreated:
    case EventType::nodeDataChanged:
      emit(take(data_, false, t.path));
      break;
    case EventType::nodeChildrenChanged:
      emit(take(child_, true, t.path));
      break;
    case EventType::nodeDeleted: {
      auto conns = take(data_, false, t.path);
      for (ConnId c : take(child_, true, t.path))
        if (std::find(conns.begin(), conns.end(), c) == conns.end()) conns.push_back(c);
      emit(conns);
      break;
    }
    default:
      break;
  }
}

void WatchManager::remove_connection(ConnId c) {
  auto b = by_conn_.find(c);
  if (b == by_conn_.end()) return;
  auto drop = [&](Table& table, const std::unordered_set<std::string>& paths) {
    for (const auto& p : paths) {
      auto it = table.find(p);
      if (it == table.end()) continue;
      it->second.erase(c);
      if (it->second.empty()) table.erase(it);
    }
  };
  drop(data_, b->second.first);
  drop(child_, b->second.second);
  by_conn_.erase(b);
}

size_t WatchManager::watch_count() const {
  size_t n = 0;
  for (const auto& [p, s] : data_) n += s.size();
  for (const auto& [p, s] : child_) n += s.size();
  return n;
}

}  // namespace warden::server
