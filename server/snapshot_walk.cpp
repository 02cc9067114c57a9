#include "server/snapshot_walk.hpp"

#include "server/path.hpp"

namespace warden::server {

std::vector<std::pair<std::string, std::string>> SnapshotWalk::next_chunk(size_t max_paths) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t n = 0; n < max_paths && next_ < paths_.size(); ++n, ++next_) {
    std::string& path = paths_[next_];
    if (path != "/" && skipped_.count(std::string(parent_path(path)))) {
      skipped_.insert(std::move(path));
      continue;
    }
    auto rec = tree_.snapshot_node(path);
    if (!rec) {
      skipped_.insert(std::move(path));
      continue;
    }
    out.emplace_back(std::move(path), std::move(*rec));
    ++written_;
  }
  return out;
}

}  // namespace warden::server
