#include "server/snapshot_walk.hpp"

#include <fmt/format.h>


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

Zxid load_newest_snapshot(const storage::RocksDbLogStore& log, const SnapshotSink& sink,
                          const std::function<void(Zxid, size_t)>& progress) {
  using Part = storage::RocksDbLogStore::SnapshotPart;
  auto snaps = log.complete_snapshots();
  if (snaps.empty()) return 0;
  Zxid at = snaps.back();
  sink.begin();
  size_t nodes = 0;
  log.for_each_snapshot_record(at, Part::node, [&](std::string_view k, std::string_view v) {
    if (!sink.node(std::string(k), v))
      throw storage::StorageError(fmt::format("the snapshot at 0x{:x} is damaged at node {}", at, k));
    if (++nodes % 1000000 == 0 && progress) progress(at, nodes);
  });
  log.for_each_snapshot_record(at, Part::session, [&](std::string_view k, std::string_view v) {
    if (!sink.session(k, v))
      throw storage::StorageError(fmt::format("the snapshot at 0x{:x} has a damaged session record", at));
  });
  return at;
}

}  // namespace warden::server
