#include "server/state/quota.hpp"

#include <charconv>

namespace warden::server {

StatsTrack StatsTrack::parse(std::string_view text) {
  StatsTrack t;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find_first_of(",;", i);
    if (end == std::string_view::npos) end = text.size();
    std::string_view pair = text.substr(i, end - i);
    i = end + 1;
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    std::string_view value = pair.substr(eq + 1);
    if (auto more = value.find('='); more != std::string_view::npos) value = value.substr(0, more);  // "bytes=-1="
    int64_t v = -1;
    if (!value.empty()) {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || p != value.data() + value.size()) continue;
    }
    t.values[std::string(pair.substr(0, eq))] = v;
  }
  return t;
}

int64_t StatsTrack::get(const std::string& key) const {
  auto it = values.find(key);
  return it == values.end() ? -1 : it->second;
}

std::string StatsTrack::text() const {
  std::string out = "count=" + std::to_string(get("count")) + ",bytes=" + std::to_string(get("bytes"));
  bool first = true;
  for (const auto& [k, v] : values) {
    if (k == "count" || k == "bytes") continue;
    if (first) out += "=";  // ZooKeeper's trick so that older parsers skip the new keys
    first = false;
    out += ";" + k + "=" + std::to_string(v);
  }
  return out;
}

std::string quota_target(std::string_view path, std::string_view node_name) {
  if (!path.starts_with(quota_root) || path.size() <= quota_root.size() + node_name.size() + 1) return {};
  std::string_view rest = path.substr(quota_root.size());  // "/a/b/zookeeper_limits"
  if (!rest.ends_with(node_name) || rest[rest.size() - node_name.size() - 1] != '/') return {};
  std::string target(rest.substr(0, rest.size() - node_name.size() - 1));
  return target.empty() || target[0] != '/' ? std::string() : target;
}

std::string quota_stats_path(std::string_view target) {
  return std::string(quota_root) + std::string(target) + "/" + std::string(quota_stats_node);
}

std::string quota_limits_path(std::string_view target) {
  return std::string(quota_root) + std::string(target) + "/" + std::string(quota_limits_node);
}

}  // namespace warden::server
