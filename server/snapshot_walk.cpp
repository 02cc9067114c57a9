#include "server/snapshot_walk.hpp"


namespace warden::server {

std::vector<std::pair<std::string, std::string>> SnapshotWalk::next_chunk(size_t max_paths) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t n = 0; n < max_paths && next_ < paths_.size(); ++n, ++next_) {
    std::string& path = paths_[next_];
    auto rec = tree_.snapshot_node(path);
    if (!rec) continue;
    out.emplace_back(std::move(path), std::move(*rec));
    ++written_;
  }
  return out;
}

}  // namespace warden::server
