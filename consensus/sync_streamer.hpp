// SyncStreamer: how a leader sends a follower a long sync without holding it in memory and
// without reading it on the server's thread. The core says what to send (a streamed Sync:
// EnsembleReplicator::SyncPlan); a reader thread per stream reads the snapshot's records and
// the log's entries from the store and frames them (peer.proto's SnapChunk and SyncData, at
// most frame_bytes each, a single larger entry alone); the server's thread hands frames to the
// transport only while less than low_water bytes wait for that member there, and the reader
// stays at most max_buffered bytes ahead. So a stream's memory is bounded by a few frames
// whatever the size of the tree or the log, and it goes as fast as the follower reads.
//
// A SNAP's snapshot is the store's (a complete snapshot at its zxid), or else the live tree,
// walked fuzzily from its zxid on (Io::live), as ZooKeeper's leader serialises its tree.
//
// Order on the wire: the snapshot's frames (a SNAP), the Sync, the entries, then every message
// the core sent on that link meanwhile (held here, in order, at most max_held bytes: past that
// the stream is abandoned and the follower comes back for a new sync). A stream ends early
// when the member's connection breaks, when the core starts another link with it, or when this
// server stops leading (cancel); a read failure ends it with `failed`.
//
// The reader waits for the entries it sends to be written to the store (the leader's newest
// are still with the group committer when the sync starts). A purge during a stream is safe
// for the stream (RocksDB iterators keep what they read), but the host defers purges while
// streams run (active()) so a stream never starts on a snapshot about to go.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "consensus/ensemble_replicator.hpp"
#include "storage/log_store.hpp"

namespace warden::consensus {

// A snapshot of the live tree, walked as the stream goes (ZooKeeper's leader serialises its
// tree the same way): made on the server's thread, read on the stream's.
class LiveSnapshot {
 public:
  using Records = std::vector<std::pair<std::string, std::string>>;
  virtual ~LiveSnapshot() = default;
  // Reader thread: the next node records (an empty batch at the end), or nothing when
  // `cancelled` said so while it waited for the tree.
  virtual std::optional<Records> next(const std::function<bool()>& cancelled) = 0;
  // The session records, as they were when the walk started (the log after the snapshot's zxid
  // replays what changed since).
  virtual Records sessions() = 0;
  // Reader thread, after the end: whether the walk met every node that lived through it.
  virtual bool whole() = 0;
};

class SyncStreamer {
 public:
  using PeerId = int64_t;
  struct Io {
    std::function<void(std::function<void()>)> post;         // runs a function on the server's thread
    std::function<void(PeerId to, std::string bytes)> send;  // the transport, quorum port
    std::function<size_t(PeerId to)> queued;                 // bytes the transport holds for `to`
    std::function<void(PeerId to, const std::string& why)> failed;  // a stream failed: drop the link
    // A walk of the live tree, for a SNAP whose zxid is no stored snapshot's (none: refused).
    std::function<std::unique_ptr<LiveSnapshot>()> live;
    // A stored snapshot failed to read (a disk error, damage) while it was sent: the stream failed.
    std::function<void(Zxid at)> snapshot_unread;
  };

  static constexpr size_t frame_bytes = 1u << 20;
  static constexpr size_t frame_entries = 1000;
  static constexpr size_t low_water = 8u << 20;
  static constexpr size_t max_buffered = 4u << 20;
  static constexpr size_t max_held = 48u << 20;
  // How long the reader waits for the group committer to write the entries it must send.
  static constexpr int write_wait_ms = 30000;

  SyncStreamer(PeerId self, const storage::LogStore& log, const storage::SnapshotStore* snapshots, Io io);
  ~SyncStreamer();  // cancels every stream and joins its reader
  SyncStreamer(const SyncStreamer&) = delete;
  SyncStreamer& operator=(const SyncStreamer&) = delete;

  // Server thread, all of them.
  void start(EnsembleReplicator::SyncPlan plan);
  // A link message for `to`: true when it was held behind a stream of that link (or dropped
  // with one that failed). A message of another link cancels the stream (the core moved on).
  bool hold(PeerId to, uint64_t link, std::string& bytes);
  void cancel(PeerId to);
  void cancel_all();
  // The transport wrote to `to`: sends what fits below low_water; finishes a stream whose
  // reader is done.
  void pump(PeerId to);
  bool active() const { return !streams_.empty(); }
  // Streams running now that send a snapshot (or, false, a diff).
  size_t running(bool snapshot) const;
  // Streams finished and frames sent since start (for tests and logs).
  uint64_t streams_done() const { return done_; }

 private:
  struct Stream;
  void finish(PeerId to, Stream& s);
  void read(const std::shared_ptr<Stream>& s, LiveSnapshot* live);
  void read_snapshot(const std::shared_ptr<Stream>& s, LiveSnapshot* live);
  void read_log(const std::shared_ptr<Stream>& s);
  void wake(const std::shared_ptr<Stream>& s);

  PeerId self_;
  const storage::LogStore& log_;
  const storage::SnapshotStore* snapshots_;
  Io io_;
  std::map<PeerId, std::shared_ptr<Stream>> streams_;
  uint64_t done_ = 0;
};

}  // namespace warden::consensus
