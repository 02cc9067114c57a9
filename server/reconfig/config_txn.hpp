// A reconfig as ZooKeeper logs it: a txn of type reconfig (16) whose body sets
// /zookeeper/config to the new configuration's text (server.N lines, then version=<hex>). One
// txn carries it through the log, into every replica's tree (getConfig reads it there) and to
// the consensus core, which takes the members from it (consensus::PeerConfig::config_of) and
// puts them in force once the txn commits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/state/txn.hpp"

namespace warden::server::reconfig {

// The node a reconfig sets (ZooDefs.CONFIG_NODE).
inline constexpr std::string_view config_node = "/zookeeper/config";

struct Members {
  std::vector<int64_t> voters;
  std::vector<int64_t> observers;
  std::string text;  // their server.N lines
};

// The txn that sets /zookeeper/config to `text`.
Txn config_txn(std::string text, SessionId session, int32_t cxid, int64_t time_ms);
// The members a reconfig txn installs: nothing for any other txn (told by its type, before
// anything is decoded) or for one whose text names no voter or does not parse.
std::optional<Members> members_in_txn(std::string_view payload);

}  // namespace warden::server::reconfig
