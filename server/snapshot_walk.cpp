#include "server/snapshot_walk.hpp"

#include <fmt/format.h>

#include <charconv>


namespace warden::server {

std::pair<std::string, std::string> SnapshotWalk::next_chunk(size_t max_nodes) {
  std::string key, bytes;
  wire::Writer(key).put_long(static_cast<int64_t>(chunks_++));
  wire::Writer w(bytes);
  size_t taken = 0;
  auto take = [&](std::string path, const Node& n) {
    w.put_string(path);
    DataTree::append_snapshot_node(bytes, n);
    ++taken;
    // Children added after this point were created after `at`: the log replays them.
    if (!n.children.empty()) stack_.push_back(Frame{std::move(path), {}, &n});
  };
  if (!started_) {
    started_ = true;
    if (const Node* root = tree_.find("/")) take("/", *root);
  }
  // The tree does not change during one call: each frame's node is looked up once per call.
  // A node gone since the cursor entered it took its subtree with it (a parent cannot go
  // before its children): whatever stands there now was created after `at`.
  for (auto& f : stack_) f.node = tree_.find(f.path);
  while (taken < max_nodes && !stack_.empty()) {
    Frame& top = stack_.back();
    const Node* n = top.node;
    auto next = n ? (top.last_child.empty() ? n->children.begin() : n->children.upper_bound(top.last_child))
                  : decltype(n->children)::const_iterator{};
    if (!n || next == n->children.end()) {
      stack_.pop_back();
      continue;
    }
    const auto& [name, kid] = *next;
    top.last_child = name;
    take(top.path == "/" ? "/" + name : top.path + "/" + name, *kid);
  }
  written_ += taken;
  return {std::move(key), std::move(bytes)};
}

bool for_each_in_chunk(std::string_view chunk,
                       const std::function<bool(std::string_view path, std::string_view record)>& fn) {
  wire::Reader r(chunk);
  while (!r.at_end()) {
    auto path = r.get_view();
    auto record = r.get_view();
    if (!r.ok() || !path || !record || !fn(*path, *record)) return false;
  }
  return true;
}

Zxid load_newest_snapshot(const storage::RocksDbLogStore& log, const SnapshotSink& sink,
                          const std::function<void(Zxid, size_t)>& progress) {
  using Part = storage::RocksDbLogStore::SnapshotPart;
  auto snaps = log.complete_snapshots();
  if (snaps.empty()) return 0;
  Zxid at = snaps.back();
  // The marker's summary starts with the node count ("N nodes"): the tree makes room for them.
  size_t expected = 0;
  std::string summary = log.snapshot_summary(at);
  std::from_chars(summary.data(), summary.data() + summary.size(), expected);
  sink.begin(std::min<size_t>(expected, size_t{1} << 24));  // a damaged summary must not claim all memory
  size_t nodes = 0;
  log.for_each_snapshot_record(at, Part::node, [&](std::string_view k, std::string_view v) {
    std::string_view last = "(none)";
    bool ok = for_each_in_chunk(v, [&](std::string_view path, std::string_view record) {
      last = path;
      if (!sink.node(path, record)) return false;
      if (++nodes % 1000000 == 0 && progress) progress(at, nodes);
      return true;
    });
    if (!ok)
      throw storage::StorageError(fmt::format("the snapshot at 0x{:x} is damaged in chunk {} after node {}", at,
                                              wire::Reader(k).get_long(), last));
  });
  log.for_each_snapshot_record(at, Part::session, [&](std::string_view k, std::string_view v) {
    if (!sink.session(k, v))
      throw storage::StorageError(fmt::format("the snapshot at 0x{:x} has a damaged session record", at));
  });
  return at;
}

}  // namespace warden::server
