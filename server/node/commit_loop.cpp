// The node's commit loop: persist hands the replicator's entries to the group committer,
// durable reports come back to the replicator; snapshots are scheduled, walked under the tree
// lock and finished; old ones purged; the heap trimmed when the server is quiet.

#include "server/node/runtime_impl.hpp"

namespace warden::server {

std::unique_lock<std::mutex> ServerRuntime::Impl::hold_tree() {
  tree_waiting.fetch_add(1, std::memory_order_acq_rel);
  std::unique_lock<std::mutex> hold(tree_mutex);
  tree_waiting.fetch_sub(1, std::memory_order_acq_rel);
  return hold;
}

void ServerRuntime::Impl::walker_turn() const {
  while (tree_waiting.load(std::memory_order_acquire) > 0) std::this_thread::yield();
}

void ServerRuntime::Impl::abandon_walk() {
  if (!walk) return;
  ++walk_generation;
  walk.reset();
  spdlog::info("snapshot abandoned: a snapshot from the leader replaces it");
}

void ServerRuntime::Impl::plan_next_snapshot() {
  int64_t half = std::max<int64_t>(1, config.snap_count / 2);
  snapshot_after = half + static_cast<int64_t>(rng() % static_cast<uint64_t>(half));
}

void ServerRuntime::Impl::count_for_snapshot() {
  if (++txns_since_snapshot < snapshot_after) return;
  if (!snapshot_due(txns_since_snapshot, server->tree().size(), config.snap_tree_percent)) return;
  if (receiving.at >= 0) return;  // a snapshot from the leader is arriving
  txns_since_snapshot = 0;
  plan_next_snapshot();
  if (walk) {
    // As ZooKeeper's SyncRequestProcessor ("Too busy to snap, skipping"): the count starts
    // again, so snapshots never run back to back however fast the writes come.
    ++snapshots_skipped;
    if (snapshots_skipped == 1 || snapshots_skipped % 100 == 0)
      spdlog::info("too busy to snapshot: one is still being written ({} skipped so far)", snapshots_skipped);
    return;
  }
  // A complete snapshot at this zxid is never written again: a second walk there would clear
  // the first's records before its own were in, leaving no snapshot at the log's base for a
  // while (issue 45, point 4). Nothing was applied since that snapshot: nothing to take.
  if (complete_snapshot_at(server->tree().last_applied())) return;
  walk = std::make_unique<SnapshotWalk>(server->tree());
  metrics.snapshot_started = std::chrono::steady_clock::now();
  spdlog::info("snapshot at 0x{:x} started: {} nodes", walk->at(), server->tree().size());
  walk_attempt = snapshot_writer->produce(
      walk->at(), storage::SnapshotStore::SnapshotPart::node,
      [this, w = walk.get(), gen = walk_generation.load()] { return snapshot_chunks(*w, gen); });
}

void ServerRuntime::Impl::trim_when_idle() {
  int64_t seen = server->packets_received();
  bool quiet = packets_at_last_check >= 0 && seen - packets_at_last_check < quiet_packets;
  size_t spare = server->tree().spare_node_bytes();
  spare_at_last_node_trim = std::min(spare_at_last_node_trim, spare);
  if (quiet && spare >= spare_at_last_node_trim + node_trim_step) {
    size_t blocks = 0;
    auto started = std::chrono::steady_clock::now();
    {
      auto hold = hold_tree();
      blocks = server->trim_spare_nodes();
    }
    spare_at_last_node_trim = server->tree().spare_node_bytes();
    if (blocks > 0) {
      heap_to_trim = true;
      spdlog::info(
          "gave back {} MiB of deleted znodes' memory in {} ms", blocks * NodePool::block_bytes >> 20,
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
    }
  }
  int64_t gone = connections->closed() - closed_at_last_trim;
  if (gone >= connection_trim_step) heap_to_trim = true;
  if (heap_to_trim && quiet) {
    return_free_memory();
    heap_to_trim = false;
    closed_at_last_trim = connections->closed();
    if (gone >= connection_trim_step) spdlog::info("gave back free memory after {} connections ended", gone);
  }
  packets_at_last_check = seen;
}

std::optional<storage::SnapshotWriter::Records> ServerRuntime::Impl::snapshot_chunks(SnapshotWalk& w, uint64_t gen) {
  storage::SnapshotWriter::Records out;
  Zxid at = 0;  // read under the lock: once it is released, an abandoned walk may be gone
  {
    walker_turn();
    std::lock_guard<std::mutex> hold(tree_mutex);
    if (walk_generation.load() != gen) return std::nullopt;
    out = w.next_chunks(snapshot_step_nodes, std::chrono::steady_clock::now() + snapshot_hold);
    at = w.at();
  }
  if (!out.empty()) return out;
  asio::post(io, [this, at] { finish_snapshot(at); });
  return std::nullopt;
}

void ServerRuntime::Impl::finish_snapshot(Zxid at) {
  if (!walk || walk->at() != at) return;
  if (!walk->done() || !walk->met_every_survivor()) {
    // Never: a marker on a walk cut short would lose the rest of the tree at the next start.
    spdlog::error("snapshot at 0x{:x} abandoned: its walk stopped after {} nodes, before the end", at, walk->written());
    walk.reset();
    return;
  }
  using Part = storage::SnapshotStore::SnapshotPart;
  snapshot_writer->put(at, Part::session, server->session_records());
  snapshot_writer->finish(at, fmt::format("{} nodes", walk->written()));
  last_snapshot = {at, wall_ms() / 1000};  // last_snapshot's time (zxid from the store, once done)
  metrics.snapshottime.add(ms_since(metrics.snapshot_started));
  walk.reset();
}

void ServerRuntime::Impl::schedule_purge(std::chrono::steady_clock::duration after) {
  if (config.purge_interval_hours <= 0 || !log->snapshots()) return;
  purge_timer.expires_after(after);
  purge_timer.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping) return;
    if ((streamer && streamer->active()) || backup_running) return schedule_purge(std::chrono::seconds(10));
    try {
      size_t dropped = log->snapshots()->purge(static_cast<size_t>(config.snap_retain_count));
      if (dropped) spdlog::info("purged {} old snapshots and the log before the oldest kept one", dropped);
    } catch (const std::exception& e) {
      spdlog::error("purge failed: {}", e.what());
    }
    schedule_purge(std::chrono::hours(config.purge_interval_hours));
  });
}

void ServerRuntime::Impl::persist(storage::LogEntry e) {
  // A follower's or observer's entries once it serves are the leader's proposals (ZooKeeper
  // counts its PROPOSAL packets; the entries of a sync come before it serves).
  if (ensemble && !ensemble->leading() && ensemble->serving()) {
    ++metrics.learner_proposals;
    // proposal_latency: the txn's time on the leader's clock to its arrival here (clocks
    // may disagree across hosts, as ZooKeeper notes; a negative one is not counted).
    int64_t now = wall_ms();
    if (auto t = txn_time(e.payload); t && now >= *t) metrics.proposal_latency.add(now - *t);
  }
  ++metrics.sync_processor_queued;
  if (committer) {
    metrics.sync_processor_queue_size.add(static_cast<int64_t>(committer->submit(std::move(e))));
    count_for_snapshot();
    return;
  }
  Zxid z = e.zxid;
  log->append({std::move(e)});
  replication->durable(z);
  resume_reading();
}

bool ServerRuntime::Impl::over_outstanding_limit() {
  if (restoring) return true;  // swap_in_restored: no request is read until the restart
  bool over = server->outstanding() >= static_cast<size_t>(config.global_outstanding_limit);
  if (over && !throttling)
    spdlog::info("throttling: {} requests in flight (globalOutstandingLimit={}); reading paused", server->outstanding(),
                 config.global_outstanding_limit);
  throttling = over;
  return over;
}

void ServerRuntime::Impl::resume_reading() { connections->resume_paused(); }

void ServerRuntime::Impl::on_durable(Zxid upto, const std::optional<storage::GroupCommitter::Failure>& failure) {
  {
    // Commits change the tree: never while the snapshot writer's thread reads it.
    auto hold = hold_tree();
    replication->durable(upto);
  }
  resume_reading();
  if (!failure) return;
  if (ensemble && failure->retryable) {
    // A member whose disk is full cannot acknowledge anything: it stops, and the others go
    // on without it (it recovers what was durable when it is started again).
    spdlog::critical("{}; this member stops (restart it once there is room)", failure->message);
    failed = true;
    shutdown();
    return;
  }
  if (!failure->retryable) {
    // RocksDB failed a write: the log must not be written again by this process. Stop; a
    // restart recovers everything that was durable, and nothing after it was acknowledged.
    spdlog::critical("{}; stopping the server", failure->message);
    failed = true;
    shutdown();
    return;
  }
  // A full disk: nothing was written. Everything in flight is taken back and its clients get
  // an error; reads go on, and the next write tries the disk again.
  size_t n;
  {
    // Leading again in a new epoch commits the log's history: a change of the tree, never
    // while the snapshot writer's thread reads it.
    auto hold = hold_tree();
    n = replicator->abort();
  }
  committer->reset();
  spdlog::error("{}; {} writes in flight failed, reads go on", failure->message, n);
  server->abort_in_flight(wire::Err::systemError);
  resume_reading();
}

}  // namespace warden::server
