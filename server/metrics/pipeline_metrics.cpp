#include "server/metrics/pipeline_metrics.hpp"

#include <set>

#include "wire/records.hpp"

namespace warden::server::metrics {

const std::vector<UnfedMetric>& unfed_metrics() {
  using K = UnfedMetric::Kind;
  static const char* const cache = "Warden has no cache of serialized replies: it serializes each reply as it goes out";
  static const char* const pool =
      "Warden has no commit processor worker pool or batches: it applies a commit and answers its reads "
      "on the server's thread, in order";
  static const char* const apply_queue =
      "Warden has no queue between a commit's arrival and its apply: it applies a commit where it arrives";
  static const char* const learner_processor = "Warden has no learner request processor";
  static const char* const throttle =
      "Warden has no connection or request throttle: it bounds a connection's requests in flight and its "
      "unread replies instead";
  static const char* const ensemble_auth = "Warden has no ensemble auth scheme";
  static const char* const observer_master = "Warden has no observer masters: its observers follow the leader";
  static const char* const unfed_by_zookeeper = "ZooKeeper 3.8 registers it and never feeds it either";
  static const char* const quota =
      "Warden does not report quotas per namespace: their limits and usage are the /zookeeper/quota nodes' "
      "and a getData of their zookeeper_stats";
  static const std::vector<UnfedMetric> all{
      {"response_packet_cache_hits", K::counter, cache},
      {"response_packet_cache_misses", K::counter, cache},
      {"response_packet_get_children_cache_hits", K::counter, cache},
      {"response_packet_get_children_cache_misses", K::counter, cache},
      {"commit_commit_proc_req_queued", K::summary, pool},
      {"concurrent_request_processing_in_commit_processor", K::summary, pool},
      {"read_commit_proc_issued", K::summary, pool},
      {"read_commit_proc_req_queued", K::summary, pool},
      {"write_commit_proc_issued", K::summary, pool},
      {"write_commit_proc_req_queued", K::summary, pool},
      {"reads_issued_from_session_queue", K::summary, pool},
      {"pending_session_queue_size", K::summary, pool},
      {"session_queues_drained", K::summary, pool},
      {"time_waiting_empty_pool_in_commit_processor_read_ms", K::summary, pool},
      {"write_batch_time_in_commit_processor", K::summary, pool},
      {"local_write_committed_time_ms", K::advanced_summary, apply_queue},
      {"server_write_committed_time_ms", K::advanced_summary, apply_queue},
      {"requests_not_forwarded_to_commit_processor", K::counter,
       "Warden has no path that skips a commit processor: it has one"},
      {"skip_learner_request_to_next_processor_count", K::counter, learner_processor},
      {"learner_request_processor_queue_size", K::summary, learner_processor},
      {"sync_process_time", K::summary,
       "Warden has no per-request log append: its group commit appends a batch (sync_processor_queue_* time it)"},
      {"netty_queued_buffer_capacity", K::summary, "Warden has no Netty queued input buffer"},
      {"socket_closing_time", K::summary, "Warden's closes of a member's socket do not block"},
      {"connection_drop_count", K::counter, throttle},
      {"connection_drop_probability", K::ratio, throttle},
      {"connection_token_deficit", K::summary, throttle},
      {"request_throttle_queue_time_ms", K::advanced_summary, throttle},
      {"request_throttle_wait_count", K::counter, throttle},
      {"throttled_ops", K::counter, throttle},
      {"large_requests_rejected", K::counter,
       "Warden has no largeRequestMaxBytes: it refuses a frame over jute.maxbuffer"},
      {"ensemble_auth_success", K::counter, ensemble_auth},
      {"ensemble_auth_fail", K::counter, ensemble_auth},
      {"ensemble_auth_skip", K::counter, ensemble_auth},
      {"om_proposal_process_time_ms", K::advanced_summary, observer_master},
      {"om_commit_process_time_ms", K::advanced_summary, observer_master},
      {"insecure_admin_count", K::counter, "Warden has no HTTPS or port unification on the AdminServer"},
      {"add_dead_watcher_stall_time", K::counter,
       "Warden has no dead-watcher cleaner thread: a closed connection's watches go at once"},
      {"quit_leading_due_to_disloyal_voter", K::counter,
       "Warden's leader has no wait for its voters' epochs that quits"},
      {"unrecoverable_error_count", K::counter, "Warden stops on an unrecoverable error, so it never counts one"},
      {"commit_propagation_latency", K::advanced_summary, unfed_by_zookeeper},
      {"proposal_ack_creation_latency", K::advanced_summary, unfed_by_zookeeper},
      {"read_final_proc_time_ms", K::advanced_summary, unfed_by_zookeeper},
      {"learner_handler_qp_size", K::summary_set,
       "Warden's leader has no queue of packets per learner: a learner's socket takes them as they go"},
      {"learner_handler_qp_time_ms", K::summary_set,
       "Warden's leader has no queue of packets per learner: a learner's socket takes them as they go"},
      {"quota_bytes_limit_per_namespace", K::gauge_set, quota},
      {"quota_bytes_usage_per_namespace", K::gauge_set, quota},
      {"quota_count_limit_per_namespace", K::gauge_set, quota},
      {"quota_count_usage_per_namespace", K::gauge_set, quota},
      {"quota_exceeded_error_per_namespace", K::counter_set, quota},
  };
  return all;
}

bool zookeeper_counter(std::string_view name) {
  static const std::set<std::string, std::less<>> counters = [] {
    std::set<std::string, std::less<>> s{
        "bytes_received_count", "cnxn_closed_without_zk_server_running", "commit_count", "connection_rejected",
        "connection_request_count", "connection_revalidate_count", "dead_watchers_cleared", "dead_watchers_queued",
        "diff_count", "digest_mismatches_count", "learner_commit_received_count", "learner_proposal_received_count",
        "looking_count",
        "outstanding_changes_queued", "outstanding_changes_removed", "prep_processor_request_queued",
        "proposal_count", "request_commit_queued", "response_bytes", "revalidate_count",
        "sessionless_connections_expired", "snap_count", "stale_replies", "stale_requests", "stale_requests_dropped",
        "stale_sessions_expired", "sync_processor_request_queued", "watch_bytes", "tls_handshake_exceeded",
        "unsuccessful_handshake", "quota_exceeded_error_per_namespace"};
    for (const auto& m : unfed_metrics())
      if (m.kind == UnfedMetric::Kind::counter) s.emplace(m.name);
    return s;
  }();
  return counters.count(name) > 0;
}

void PipelineMetrics::add_namespace(SummarySet& set, const std::string& path, int64_t bytes) {
  // ZooKeeper's top namespace: the first name after the root; the root itself has none.
  if (path.size() < 2 || path[0] != '/') return;
  auto end = path.find('/', 1);
  std::string_view ns = std::string_view(path).substr(1, end == std::string::npos ? std::string::npos : end - 1);
  set.add(ns, static_cast<int64_t>(path.size()) + bytes);
}

void PipelineMetrics::add_fired(int32_t type, size_t watchers) {
  if (watchers == 0) return;  // as ZooKeeper: an event that fires no watch is not counted
  auto n = static_cast<int64_t>(watchers);
  switch (static_cast<wire::EventType>(type)) {
    case wire::EventType::nodeCreated: return node_created_watch.add(n);
    case wire::EventType::nodeDeleted: return node_deleted_watch.add(n);
    case wire::EventType::nodeDataChanged: return node_changed_watch.add(n);
    case wire::EventType::nodeChildrenChanged: return node_children_watch.add(n);
    default: return;
  }
}

void PipelineMetrics::list(std::vector<std::pair<std::string, Json>>& values) const {
  values.insert(values.end(), {{"bytes_received_count", bytes_received},
                               {"connection_request_count", connection_requests},
                               {"cnxn_closed_without_zk_server_running", closed_not_serving},
                               {"response_bytes", response_bytes},
                               {"watch_bytes", watch_bytes},
                               {"prep_processor_request_queued", prep_queued},
                               {"outstanding_changes_queued", outstanding_changes_queued},
                               {"outstanding_changes_removed", outstanding_changes_removed},
                               {"commit_count", leader_commits},
                               {"learner_commit_received_count", learner_commits},
                               {"stale_sessions_expired", stale_sessions_expired},
                               {"stale_replies", stale_replies},
                               {"dead_watchers_queued", dead_watchers},
                               {"dead_watchers_cleared", dead_watchers},
                               {"stale_requests", stale_requests},
                               {"stale_requests_dropped", stale_requests},
                               {"sessionless_connections_expired", sessionless_expired},
                               {"connection_revalidate_count", connection_revalidations},
                               {"revalidate_count", revalidations},
                               {"request_commit_queued", commits_applied}});
  for (const auto& m : unfed_metrics()) {
    if (m.kind == UnfedMetric::Kind::counter) values.emplace_back(m.name, int64_t{0});
    if (m.kind == UnfedMetric::Kind::ratio) values.emplace_back(m.name, 0.0);
  }
}

NamedSummaries PipelineMetrics::summaries() {
  return {{"readlatency", &read_latency},
          {"updatelatency", &update_latency},
          {"node_created_watch_count", &node_created_watch},
          {"node_deleted_watch_count", &node_deleted_watch},
          {"node_changed_watch_count", &node_changed_watch},
          {"node_children_watch_count", &node_children_watch},
          {"prep_processor_queue_size", &prep_queue_size},
          {"prep_processor_queue_time_ms", &prep_queue_time},
          {"prep_process_time", &prep_process_time},
          {"proposal_process_time", &proposal_process_time},
          {"close_session_prep_time", &close_session_prep_time},
          {"propagation_latency", &propagation_latency},
          {"commit_process_time", &commit_process_time},
          {"write_final_proc_time_ms", &write_final_time},
          {"dead_watchers_cleaner_latency", &dead_watchers_latency},
          {"read_commitproc_time_ms", &read_commitproc_time},
          {"write_commitproc_time_ms", &write_commit_wait},
          {"requests_in_session_queue", &session_queue_size},
          {"reads_after_write_in_session_queue", &reads_after_write}};
}

NamedSummaries PipelineMetrics::summaries_with_unfed() {
  NamedSummaries all = summaries();
  // Never fed, so never changed: one empty summary of each detail level serves every name.
  static Summary basic{false}, advanced{true};
  for (const auto& m : unfed_metrics()) {
    if (m.kind == UnfedMetric::Kind::summary) all.emplace_back(m.name, &basic);
    if (m.kind == UnfedMetric::Kind::advanced_summary) all.emplace_back(m.name, &advanced);
  }
  return all;
}

NamedSummarySets PipelineMetrics::summary_sets() {
  return {{"read_per_namespace", &read_per_namespace}, {"write_per_namespace", &write_per_namespace}};
}

void PipelineMetrics::reset() {
  bytes_received = connection_requests = closed_not_serving = response_bytes = watch_bytes = prep_queued = 0;
  outstanding_changes_queued = outstanding_changes_removed = leader_commits = learner_commits = 0;
  stale_sessions_expired = stale_replies = dead_watchers = stale_requests = sessionless_expired = 0;
  connection_revalidations = revalidations = commits_applied = 0;
  for (auto& [name, s] : summaries()) s->reset();
  for (auto& [name, s] : summary_sets()) s->reset();
}

}  // namespace warden::server::metrics
