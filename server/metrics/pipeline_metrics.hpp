// The metrics of ZooKeeper's ServerMetrics that the request pipeline (RequestPipeline) feeds, under
// ZooKeeper's names and in its units (ms, bytes, counts). monitor and mntr list them, /metrics
// serves them, srst resets them (as ZooKeeper's ServerStats.reset() resets every metric): this
// struct is their one source. Those of the log, the election and the syncs live with the
// runtime that sees them (runtime.cpp's Metrics) and join the same lists.
//
// Where Warden's pipeline differs from ZooKeeper's processors, a metric measures the stage that
// does the same work: the "prep processor queue" is a connection's frames held behind its
// writes in flight (ZooKeeper's requests wait in PrepRequestProcessor's queue instead), the
// "final processor" is the apply of a commit with its watch events and reply (ZooKeeper 3.8
// registers read_final_proc_time_ms and never feeds it: unfed_metrics() lists it with the
// metrics of parts Warden does not have), and dead watchers
// are those of a closed connection (removed at once: Warden has no cleaner thread to queue them
// for, so queued and cleared count the same watches).
#pragma once

#include <string_view>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "server/metrics/json.hpp"
#include "server/metrics/summary.hpp"

namespace warden::server::metrics {

// ZooKeeper 3.8's metrics for parts Warden does not have: each is listed under its name and
// kind, so that whatever reads ZooKeeper's monitor, mntr or /metrics finds every key, and reads
// what ZooKeeper shows with that part switched off or idle: a counter 0, a summary with no
// samples. `why` says why Warden does not feed it (docs/operations.md lists them the same way).
struct UnfedMetric {
  // The sets (keyed series, as ZooKeeper's CounterSet, GaugeSet and SummarySet) are served as
  // families with no series.
  enum class Kind { counter, ratio, summary, advanced_summary, summary_set, gauge_set, counter_set };
  const char* name;
  Kind kind;
  const char* why;
};
const std::vector<UnfedMetric>& unfed_metrics();

// Whether ZooKeeper registers the metric `name` as a Counter (Prometheus type counter; every
// other number it shows is a gauge): those Warden feeds, and unfed_metrics()'s counters. It_metrics
// checks each type against what a running ZooKeeper 3.8 registers.
bool zookeeper_counter(std::string_view name);

struct PipelineMetrics {
  // Counters.
  int64_t bytes_received = 0;             // bytes_received_count: client frames, length prefix included
  int64_t connection_requests = 0;        // connection_request_count: ConnectRequests read
  int64_t closed_not_serving = 0;         // cnxn_closed_without_zk_server_running
  int64_t response_bytes = 0;             // response_bytes: replies (length prefix included)
  int64_t watch_bytes = 0;                // watch_bytes: watch events sent
  int64_t prep_queued = 0;                // prep_processor_request_queued: requests that reached prep
  int64_t outstanding_changes_queued = 0;  // paths prep staged for txns in flight
  int64_t outstanding_changes_removed = 0;  // ... and dropped once the tree caught up
  int64_t leader_commits = 0;             // commit_count: txns this server committed as leader (or alone)
  int64_t learner_commits = 0;            // learner_commit_received_count: commits heard from a leader
  int64_t stale_sessions_expired = 0;     // sessions expired by this server (as leader, or alone)
  int64_t stale_replies = 0;              // replies whose connection closed before they were ready
  int64_t dead_watchers = 0;              // watches of closed connections (queued and cleared at once)
  // Requests whose connection closed before they reached prep (frames held behind writes):
  // Warden always drops them, so stale_requests and stale_requests_dropped count the same.
  int64_t stale_requests = 0;
  int64_t sessionless_expired = 0;  // sessionless_connections_expired: no ConnectRequest in time
  int64_t connection_revalidations = 0;  // connection_revalidate_count: ConnectRequests with a session id
  int64_t revalidations = 0;             // revalidate_count: a leader's re-attaches asked by members
  int64_t commits_applied = 0;           // request_commit_queued: every commit this server applies

  // Summaries (ms unless named otherwise). Only RequestPipeline's thread touches them (the AdminServer
  // reads them there too): they do not lock.
  static constexpr Access mine = Access::one_thread;
  Summary read_latency{true, mine}, update_latency{true, mine};  // readlatency, updatelatency: arrival to reply
  // Watches one event fired, per event type.
  Summary node_created_watch{false, mine}, node_deleted_watch{false, mine}, node_changed_watch{false, mine},
      node_children_watch{false, mine};
  Summary prep_queue_size{false, mine};        // prep_processor_queue_size: frames held before prep, at each arrival
  Summary prep_queue_time{true, mine};         // prep_processor_queue_time_ms: arrival to prep
  Summary prep_process_time{false, mine};      // prep_process_time: a write's prep
  Summary proposal_process_time{false, mine};  // from prep's end to the txn handed to the log (propose)
  Summary close_session_prep_time{true, mine};
  Summary propagation_latency{true, mine};     // a txn's time (the leader's clock) to its apply here
  Summary commit_process_time{false, mine};    // applying a committed txn to the tree
  Summary write_final_time{true, mine};        // write_final_proc_time_ms: a commit's apply, events and reply
  Summary dead_watchers_latency{true, mine};   // dead_watchers_cleaner_latency: a closed connection's watches removed
  // ZooKeeper's CommitProcessor holds a session's requests behind its writes; Warden's
  // pipeline holds them per connection (request_pipeline.hpp): the same waits, under its names.
  Summary read_commitproc_time{true, mine};  // read_commitproc_time_ms: a read's arrival to its answer
  Summary write_commit_wait{true, mine};     // write_commitproc_time_ms: a client's write proposed to committed here
  Summary session_queue_size{false, mine};   // requests_in_session_queue: frames waiting, at each one queued
  Summary reads_after_write{false, mine};    // reads_after_write_in_session_queue: answered as a write applied
  // Bytes per top-level namespace, as ZooKeeper's DataTree counts them (reads: path, data and a
  // Stat's 68 bytes; writes: path and data). The first 1000 namespaces get a summary each
  // (ZooKeeper's sets are unbounded): the sets stay bounded whatever clients create at the top.
  SummarySet read_per_namespace{false, 1000, mine}, write_per_namespace{false, 1000, mine};
  // A Stat's bytes, as ZooKeeper counts them in a read (six longs, five ints).
  static constexpr int64_t stat_bytes = 6 * 8 + 5 * 4;

  void add_read(const std::string& path, int64_t bytes) { add_namespace(read_per_namespace, path, bytes + stat_bytes); }
  void add_write(const std::string& path, int64_t bytes) { add_namespace(write_per_namespace, path, bytes); }
  // A watch trigger of `type` (wire::EventType) fired `watchers` watches of one manager.
  void add_fired(int32_t type, size_t watchers);

  // monitor's counters (ZooKeeper's names, unfed_metrics()'s counters included), its summaries
  // and summary sets.
  void list(std::vector<std::pair<std::string, Json>>& values) const;
  NamedSummaries summaries();             // those this struct feeds (srst resets them)
  NamedSummaries summaries_with_unfed();  // ... and unfed_metrics()'s, for the lists
  NamedSummarySets summary_sets();
  void reset();

 private:
  static void add_namespace(SummarySet& set, const std::string& path, int64_t bytes);
};

}  // namespace warden::server::metrics
