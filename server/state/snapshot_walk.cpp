#include "server/state/snapshot_walk.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>



namespace warden::server {

std::pair<std::string, std::string> SnapshotWalk::next_chunk(size_t max_nodes) {
  std::string key, bytes;
  wire::Writer(key).put_long(static_cast<int64_t>(chunks_++));
  bytes.reserve(std::min(max_nodes * 192, max_chunk_bytes));  // a node with 100 bytes of data takes about 200
  wire::Writer w(bytes);
  size_t taken = 0;
  // Writes the node at parent + "/" + name without building its path, unless the walk must
  // come back to it (it has children).
  auto take = [&](std::string_view parent, std::string_view name, const Node& n) {
    size_t len = parent == "/" ? 1 + name.size() : parent.size() + 1 + name.size();
    w.put_int(static_cast<int32_t>(name.empty() ? 1 : len));
    if (name.empty()) {
      bytes += '/';
    } else {
      if (parent != "/") bytes.append(parent);
      bytes += '/';
      bytes.append(name);
    }
    tree_.append_snapshot_node(bytes, n);
    ++taken;
    // Children added after this point were created after `at`: the log replays them.
    if (n.child_count() > 0)
      stack_.push_back(Frame{{}, {}, &n, {}, false, nullptr});  // its path is set by the caller
  };
  if (!started_) {
    started_ = true;
    if (const Node* root = tree_.find("/")) {
      take("/", "", *root);
      if (!stack_.empty()) stack_.back().path.assign(1, '/');
    }
  }
  // The tree does not change during one call: each frame's node is looked up once per call,
  // and its position among the children once (a name lookup), then followed by iterator.
  // A node gone since the cursor entered it took its subtree with it (a parent cannot go
  // before its children): whatever stands there now was created after `at`.
  for (auto& f : stack_) {
    f.node = tree_.find(f.path);
    f.positioned = false;
    f.taken = nullptr;
  }
  while (taken < max_nodes && bytes.size() < max_chunk_bytes && !stack_.empty()) {
    Frame& top = stack_.back();
    const Node* n = top.node;
    if (n && !top.positioned) {
      top.next = top.last_child.empty() ? n->children().begin() : n->children().after(top.last_child);
      top.positioned = true;
    }
    if (!n || top.next == n->children().end()) {
      stack_.pop_back();
      continue;
    }
    const Node& kid = *top.next;
    std::string_view name = kid.name();
    top.taken = &kid;
    ++top.next;
    size_t depth = stack_.size();
    take(top.path, name, kid);
    if (stack_.size() > depth) {  // the child has children: remember its path, and ours
      Frame& parent = stack_[depth - 1];
      parent.last_child = name;
      std::string& path = stack_.back().path;
      path.reserve(parent.path.size() + 1 + name.size());
      if (parent.path != "/") path.append(parent.path);
      path.append("/").append(name);
    }
  }
  // Where each level stands, for the next call (iterators do not survive changes between calls).
  for (auto& f : stack_)
    if (f.taken) f.last_child = f.taken->name();
  written_ += taken;
  return {std::move(key), std::move(bytes)};
}

std::vector<std::pair<std::string, std::string>> SnapshotWalk::next_chunks(
    size_t max_nodes, std::chrono::steady_clock::time_point deadline) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t bytes = 0;
  while (!done()) {
    out.push_back(next_chunk(max_nodes));
    bytes += out.back().second.size();
    if (std::chrono::steady_clock::now() >= deadline || bytes >= max_batch_bytes) break;
  }
  return out;
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

Zxid load_newest_snapshot(const storage::SnapshotStore& log, const SnapshotSink& sink,
                          const std::function<void(Zxid, size_t)>& progress, size_t progress_every,
                          const std::function<void(const std::string&)>& unusable) {
  using Part = storage::SnapshotStore::SnapshotPart;
  auto snaps = log.complete_snapshots();
  std::string refused;  // why each newer snapshot was passed over
  for (auto at_it = snaps.rbegin(); at_it != snaps.rend(); ++at_it) {
    Zxid at = *at_it;
    sink.begin();
    size_t nodes = 0;
    storage::SnapshotStore::RecordCounts read;
    log.for_each_snapshot_record(at, Part::node, [&](std::string_view k, std::string_view v) {
      ++read.node;
      std::string_view last = "(none)";
      bool ok = for_each_in_chunk(v, [&](std::string_view path, std::string_view record) {
        last = path;
        if (!sink.node(path, record)) return false;
        if (++nodes % progress_every == 0 && progress) progress(at, nodes);
        return true;
      });
      if (!ok)
        throw storage::StorageError(fmt::format("the snapshot at 0x{:x} is damaged in chunk {} after node {}", at,
                                                wire::Reader(k).get_long(), last));
    });
    log.for_each_snapshot_record(at, Part::session, [&](std::string_view k, std::string_view v) {
      ++read.session;
      if (!sink.session(k, v))
        throw storage::StorageError(fmt::format("the snapshot at 0x{:x} has a damaged session record", at));
    });
    // A snapshot that does not hold what it was finished with would lose (or bring back) nodes
    // silently: an older one, with the log after it, recovers the same tree.
    auto want = log.snapshot_record_counts(at);
    if (!want || *want == read) return at;
    std::string why = fmt::format(
        "the snapshot at 0x{:x} holds {} chunk and {} session records where its marker says {} and {}", at, read.node,
        read.session, want->node, want->session);
    if (!unusable) throw storage::StorageError(why);
    unusable(why + (std::next(at_it) == snaps.rend() ? "" : "; trying the one before it"));
    refused += (refused.empty() ? "" : "; ") + why;
  }
  if (!refused.empty()) throw storage::StorageError("no usable snapshot: " + refused);
  return 0;
}

size_t write_whole_snapshot(const DataTree& tree, storage::SnapshotStore::Records sessions,
                            storage::SnapshotStore& store, Zxid at, const std::string& summary) {
  using Part = storage::SnapshotStore::SnapshotPart;
  SnapshotWalk walk(tree);
  for (;;) {
    auto chunks = walk.next_chunks(1000, std::chrono::steady_clock::now() + std::chrono::seconds(1));
    if (chunks.empty()) break;
    store.put_snapshot_records(at, Part::node, std::move(chunks));
  }
  store.put_snapshot_records(at, Part::session, std::move(sessions));
  store.finish_snapshot(at, summary);
  store.install_snapshot(at);
  return walk.written();
}

}  // namespace warden::server
