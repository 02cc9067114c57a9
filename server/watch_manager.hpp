// One-shot watches, as ZooKeeper's WatchManager keeps them: data watches (set by getData and
// exists) and child watches (set by getChildren), per path, per connection. A trigger removes
// the watches it fires; one connection gets at most one event per trigger.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "server/data_tree.hpp"
#include "wire/records.hpp"

namespace warden::server {

using ConnId = uint64_t;

struct WatchEvent {
  ConnId conn;
  wire::WatcherEvent event;
};

class WatchManager {
 public:
  void add_data_watch(const std::string& path, ConnId c);
  void add_child_watch(const std::string& path, ConnId c);
  void trigger(const WatchTrigger& t, std::vector<WatchEvent>& out);
  void remove_connection(ConnId c);
  size_t watch_count() const;

 private:
  using Table = std::unordered_map<std::string, std::unordered_set<ConnId>>;
  // Removes and returns the watchers of `path` in `table`, forgetting them in by_conn_.
  std::vector<ConnId> take(Table& table, bool child, const std::string& path);

  Table data_;
  Table child_;
  // The reverse index, so a closed connection's watches go without a scan of every path.
  std::unordered_map<ConnId, std::pair<std::unordered_set<std::string>, std::unordered_set<std::string>>> by_conn_;
};

}  // namespace warden::server
