#include "consensus/sync_streamer.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "consensus/peer_codec.hpp"

namespace warden::consensus {

namespace {
struct Cancelled {};

// A message of a sync stream, on the plan's link.
std::string frame(int64_t self, const EnsembleReplicator::SyncPlan& p, pb::PeerMessage& m) {
  stamp_range(m, ProtocolRange{});
  m.set_from(self);
  m.set_epoch(p.epoch);
  m.set_link(p.link);
  return encode_peer_message(m);
}
}  // namespace

// Shared by the server's thread and the stream's reader.
struct SyncStreamer::Stream {
  EnsembleReplicator::SyncPlan plan;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> frames;  // read, not yet handed to the transport
  size_t buffered = 0;
  bool reader_done = false;
  bool cancelled = false;
  std::string error;
  bool snapshot_unread = false;  // the error: the stored snapshot did not read
  std::thread reader;
  // Server thread only: the link's messages the core sent while the stream runs.
  std::vector<std::string> held;
  size_t held_bytes = 0;
  bool header_sent = false;

  // Reader: queues a frame, waiting while the server's thread has enough of them.
  void push(std::string frame) {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return cancelled || buffered < max_buffered; });
    if (cancelled) throw Cancelled{};
    buffered += frame.size();
    frames.push_back(std::move(frame));
  }
  bool is_cancelled() {
    std::lock_guard<std::mutex> l(mu);
    return cancelled;
  }
  void cancel() {
    {
      std::lock_guard<std::mutex> l(mu);
      cancelled = true;
    }
    cv.notify_all();
  }
};

SyncStreamer::SyncStreamer(PeerId self, const storage::LogStore& log, const storage::SnapshotStore* snapshots, Io io)
    : self_(self), log_(log), snapshots_(snapshots), io_(std::move(io)) {}

SyncStreamer::~SyncStreamer() { cancel_all(); }

void SyncStreamer::start(EnsembleReplicator::SyncPlan plan) {
  PeerId to = plan.to;
  cancel(to);
  auto s = std::make_shared<Stream>();
  s->plan = std::move(plan);
  streams_[to] = s;
  // A SNAP of a zxid the store holds no snapshot of: the live tree's, begun here, on the
  // server's thread, so that its walk starts at or after that zxid.
  std::shared_ptr<LiveSnapshot> live;
  if (s->plan.snapshot && !(snapshots_ && snapshots_->snapshot_record_counts(s->plan.snapshot))) {
    if (io_.live) live = io_.live();
    if (!live) {
      spdlog::error("syncing server {}: no snapshot at 0x{:x} to send", to, s->plan.snapshot);
      streams_.erase(to);
      if (io_.failed) io_.failed(to, "no snapshot to send");
      return;
    }
  }
  spdlog::info("syncing server {}: {}entries 0x{:x} to 0x{:x}", to,
               !s->plan.snapshot ? std::string()
               : live            ? fmt::format("the live tree as the snapshot at 0x{:x}, then ", s->plan.snapshot)
                                 : fmt::format("the snapshot at 0x{:x}, then ", s->plan.snapshot),
               s->plan.after, s->plan.upto);
  // The reader holds the stream (shared) and this object's store; the destructor joins it.
  s->reader = std::thread([this, s, live] { read(s, live.get()); });
}

// The reader's thread: the snapshot (a stored one, or the live tree's walk), the plan's header,
// then the log's entries after it; an error is kept for the server's thread to report.
void SyncStreamer::read(const std::shared_ptr<Stream>& s, LiveSnapshot* live) {
  try {
    if (s->plan.snapshot) read_snapshot(s, live);
    s->push(s->plan.header);
    wake(s);
    if (s->plan.upto > s->plan.after) read_log(s);
  } catch (const Cancelled&) {
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> l(s->mu);
    s->error = e.what();
  }
  {
    std::lock_guard<std::mutex> l(s->mu);
    s->reader_done = true;
  }
  wake(s);
}

// Has the server's thread hand what the reader queued to the transport (if the stream is
// still the link's).
void SyncStreamer::wake(const std::shared_ptr<Stream>& s) {
  io_.post([this, s, to = s->plan.to] {
    auto it = streams_.find(to);
    if (it != streams_.end() && it->second == s) pump(to);
  });
}

// The snapshot's records, nodes then sessions, in frames of about frame_bytes, and its end
// with the counts the follower checks.
void SyncStreamer::read_snapshot(const std::shared_ptr<Stream>& s, LiveSnapshot* live) {
  const auto& p = s->plan;
  using Part = storage::SnapshotStore::SnapshotPart;
  uint64_t sent[2] = {0, 0};
  // Records of one part into frames of about frame_bytes.
  pb::PeerMessage m;
  size_t bytes = 0;
  Part part = Part::node;
  auto flush = [&] {
    if (m.snap_chunk().records_size() == 0) return;
    m.mutable_snap_chunk()->set_zxid(p.snapshot);
    m.mutable_snap_chunk()->set_part(static_cast<uint32_t>(part));
    s->push(frame(self_, p, m));
    wake(s);
    m.Clear();
    bytes = 0;
  };
  auto add = [&](std::string_view k, std::string_view v) {
    if (s->is_cancelled()) throw Cancelled{};
    auto* r = m.mutable_snap_chunk()->add_records();
    r->set_key(k.data(), k.size());
    r->set_value(v.data(), v.size());
    bytes += k.size() + v.size();
    ++sent[part == Part::node ? 0 : 1];
    if (bytes >= frame_bytes) flush();
  };
  if (live) {
    auto sessions = live->sessions();
    for (;;) {
      auto recs = live->next([&] { return s->is_cancelled(); });
      if (!recs) throw Cancelled{};
      if (recs->empty()) break;
      for (const auto& [k, v] : *recs) add(k, v);
    }
    flush();
    if (!live->whole()) throw std::runtime_error("the walk of the live tree stopped before its end");
    part = Part::session;
    for (const auto& [k, v] : sessions) add(k, v);
    flush();
  } else {
    for (Part each : {Part::node, Part::session}) {
      part = each;
      try {
        snapshots_->for_each_snapshot_record(p.snapshot, part, add);
      } catch (const std::exception&) {
        s->snapshot_unread = true;  // read only by the server's thread once reader_done is set
        throw;
      }
      flush();
    }
    // A snapshot that does not hold what its marker says is not sent as if it were whole.
    if (auto want = snapshots_->snapshot_record_counts(p.snapshot);
        want && (want->node != sent[0] || want->session != sent[1])) {
      s->snapshot_unread = true;
      throw std::runtime_error(fmt::format("the snapshot at 0x{:x} holds {} and {} records, its marker says {} and {}",
                                           p.snapshot, sent[0], sent[1], want->node, want->session));
    }
  }
  pb::PeerMessage end;
  auto* c = end.mutable_snap_chunk();
  c->set_zxid(p.snapshot);
  c->set_end(true);
  c->set_node_records(sent[0]);
  c->set_session_records(sent[1]);
  c->set_digest_from(static_cast<int64_t>(log_.last_zxid()));
  s->push(frame(self_, p, end));
}

// The log's entries after the plan's `after` up to its `upto`, in frames of at most frame_bytes
// and frame_entries (the newest may still be with the group committer: waited for).
void SyncStreamer::read_log(const std::shared_ptr<Stream>& s) {
  const auto& p = s->plan;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(write_wait_ms);
  while (log_.last_zxid() < p.upto) {
    if (s->is_cancelled()) throw Cancelled{};
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(fmt::format("the log did not reach 0x{:x} (it ends at 0x{:x})", p.upto,
                                           log_.last_zxid()));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  pb::PeerMessage m;
  size_t bytes = 0;
  Zxid last = p.after;
  auto flush = [&] {
    if (m.sync_data().entries_size() == 0) return;
    s->push(frame(self_, p, m));
    wake(s);
    m.Clear();
    bytes = 0;
  };
  log_.for_each_in(p.after, p.upto, SIZE_MAX, [&](const storage::LogEntry& e) {
    if (s->is_cancelled()) throw Cancelled{};
    if (m.sync_data().entries_size() > 0 &&
        (bytes + e.payload.size() > frame_bytes ||
         static_cast<size_t>(m.sync_data().entries_size()) >= frame_entries))
      flush();
    if (m.sync_data().entries_size() == 0) m.mutable_sync_data()->set_after(last);
    auto* pe = m.mutable_sync_data()->add_entries();
    pe->set_zxid(e.zxid);
    pe->set_payload(e.payload);
    bytes += e.payload.size();
    last = e.zxid;
  });
  flush();
  if (last != p.upto)
    throw std::runtime_error(fmt::format("the log holds 0x{:x} to 0x{:x} only up to 0x{:x}", p.after, p.upto, last));
}

bool SyncStreamer::hold(PeerId to, uint64_t link, std::string& bytes) {
  auto it = streams_.find(to);
  if (it == streams_.end()) return false;
  Stream& s = *it->second;
  if (link != s.plan.link) {
    cancel(to);  // the core dropped that link and started another
    return false;
  }
  s.held_bytes += bytes.size();
  s.held.push_back(std::move(bytes));
  if (s.held_bytes > max_held) {
    spdlog::warn("syncing server {}: more than {} MiB of later messages wait behind the sync; starting over", to,
                 max_held >> 20);
    cancel(to);
    if (io_.failed) io_.failed(to, "too much waits behind the sync");
  }
  return true;
}

void SyncStreamer::cancel(PeerId to) {
  auto it = streams_.find(to);
  if (it == streams_.end()) return;
  auto s = it->second;
  streams_.erase(it);
  s->cancel();
  if (s->reader.joinable()) s->reader.join();
}

void SyncStreamer::cancel_all() {
  while (!streams_.empty()) cancel(streams_.begin()->first);
}

void SyncStreamer::pump(PeerId to) {
  auto it = streams_.find(to);
  if (it == streams_.end()) return;
  auto s = it->second;
  for (;;) {
    std::string frame;
    bool done;
    std::string error;
    {
      std::lock_guard<std::mutex> l(s->mu);
      done = s->reader_done && s->frames.empty();
      error = s->error;
      if (!done && !s->frames.empty() && io_.queued(to) < low_water) {
        frame = std::move(s->frames.front());
        s->frames.pop_front();
        s->buffered -= frame.size();
      }
    }
    if (done) {
      if (!error.empty()) {
        spdlog::error("syncing server {} failed: {}", to, error);
        if (s->snapshot_unread && io_.snapshot_unread) io_.snapshot_unread(s->plan.snapshot);
        cancel(to);
        if (io_.failed) io_.failed(to, error);
        return;
      }
      finish(to, *s);
      return;
    }
    if (frame.empty()) return;
    s->cv.notify_all();
    io_.send(to, std::move(frame));
  }
}

void SyncStreamer::finish(PeerId to, Stream& s) {
  // Everything the core sent on the link meanwhile follows the stream, in order.
  for (auto& m : s.held) io_.send(to, std::move(m));
  s.held.clear();
  ++done_;
  spdlog::info("syncing server {}: sent up to 0x{:x}", to, s.plan.upto);
  cancel(to);  // joins the reader, which is done
}

size_t SyncStreamer::running(bool snapshot) const {
  size_t n = 0;
  for (const auto& [to, s] : streams_) n += s->plan.snapshot == snapshot ? 1 : 0;
  return n;
}

}  // namespace warden::consensus
