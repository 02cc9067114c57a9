// Watches, as ZooKeeper's two WatchManagers keep them: a data manager (getData, exists) and a
// child manager (getChildren), each mapping path -> connection -> the kinds of watch it holds
// there. Kinds: a standard watch fires once and is gone; a persistent watch (addWatch mode 0)
// fires for every change of its node and stays; a recursive one (mode 1) also fires for every
// node below it, except child-list changes, and stays. addWatch puts its kind in both
// managers, so removing only the child side of a persistent watch leaves its data side, as in
// ZooKeeper. One connection gets at most one event per trigger.
//
// Unlike ZooKeeper 3.8 (fixed in 3.9), a standard watch set on a path that holds a persistent
// watch of the same connection does not turn the persistent one into a one-shot, and adding a
// persistent mode to a path that has the other one keeps both: the kinds are kept side by side.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "server/state/data_tree.hpp"
#include "wire/records.hpp"

namespace warden::server {

using ConnId = uint64_t;

struct WatchEvent {
  ConnId conn;
  wire::WatcherEvent event;
};

// What removeWatches and checkWatches name (ZooKeeper's WatcherType, 3.9's numbering).
enum class WatcherType : int32_t { children = 1, data = 2, any = 3, persistent = 4, persistentRecursive = 5 };

class WatchManager {
 public:
  void add_data_watch(const std::string& path, ConnId c) { data_.add(path, c, standard); }
  void add_child_watch(const std::string& path, ConnId c) { child_.add(path, c, standard); }
  // addWatch: mode 0 persistent, 1 persistent and recursive. False for another mode.
  bool add_persistent(const std::string& path, ConnId c, int32_t mode);
  // The watches a trigger fired in each manager (before one connection's are merged into one
  // event): ZooKeeper's node_*_watch_count metrics count them per manager.
  struct Fired {
    size_t data = 0, child = 0;
  };
  // The connections a change fires (each once, in order) go to `deliver`; the standard watches
  // among them are spent when it returns, so that a large fan-out starts sending before the
  // table's bookkeeping. `deliver` must not change the watches.
  Fired trigger(const WatchTrigger& t, const std::function<void(const std::vector<ConnId>&)>& deliver);
  // checkWatches and removeWatches: whether `c` holds (held) a watch of `type` at `path`.
  bool contains(const std::string& path, WatcherType type, ConnId c) const;
  bool remove(const std::string& path, WatcherType type, ConnId c);
  void remove_connection(ConnId c);
  size_t watch_count() const { return data_.count + child_.count; }
  // The data manager's watches, path -> connections (what ZooKeeper's wchs, wchc, wchp show).
  std::vector<std::pair<std::string, std::vector<ConnId>>> data_watches() const;

 private:
  using Kinds = uint8_t;
  static constexpr Kinds standard = 1, persistent = 2, recursive = 4;

  struct Manager {
    std::unordered_map<std::string, std::unordered_map<ConnId, Kinds>> table;
    std::unordered_map<ConnId, std::unordered_set<std::string>> by_conn;  // for closing a connection
    size_t count = 0;            // (path, connection) entries
    size_t recursive_count = 0;  // entries holding a recursive watch: none, no ancestor walk

    void add(const std::string& path, ConnId c, Kinds k);
    // Clears `k` from the entry; true when it held any of them.
    bool clear(const std::string& path, ConnId c, Kinds k);
    Kinds kinds(const std::string& path, ConnId c) const;
    // Appends the connections a change of `type` at `path` fires; spend() then clears the
    // standard watches at `path`.
    void fire(const std::string& path, wire::EventType type, std::vector<ConnId>& out) const;
    void spend(const std::string& path);
    // An entry (path, c) is gone from the table: the count and c's path set follow.
    void forget(const std::string& path, ConnId c);
  };
  Manager data_;
  Manager child_;
};

}  // namespace warden::server
