// Quotas as ZooKeeper keeps them: for a path P with a quota, /zookeeper/quota/P/zookeeper_limits
// holds the limits and /zookeeper/quota/P/zookeeper_stats the current use of P's subtree, both
// as StatsTrack text ("count=3,bytes=10", extra keys after "=;": "count=-1,bytes=-1=;
// countHardLimit=5"). Clients (zkCli's setquota, listquota, delquota) write the limits; the
// tree keeps the stats as part of applying each change (see DataTree).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace warden::server {

inline constexpr std::string_view quota_root = "/zookeeper/quota";
inline constexpr std::string_view quota_limits_node = "zookeeper_limits";
inline constexpr std::string_view quota_stats_node = "zookeeper_stats";

// ZooKeeper's StatsTrack. Values absent read as -1 (no limit). Parsing never fails: a pair
// that is not key=number is left out.
struct StatsTrack {
  std::map<std::string, int64_t> values;
  static StatsTrack parse(std::string_view text);
  int64_t get(const std::string& key) const;
  void set(const std::string& key, int64_t v) { values[key] = v; }
  std::string text() const;  // count and bytes first, the rest sorted, as ZooKeeper writes it
};

// "/zookeeper/quota/a/b/zookeeper_limits" -> "/a/b"; empty when `path` is no such node.
std::string quota_target(std::string_view path, std::string_view node_name);
std::string quota_stats_path(std::string_view target);
std::string quota_limits_path(std::string_view target);

}  // namespace warden::server
