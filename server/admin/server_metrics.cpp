#include "server/admin/server_metrics.hpp"

#include "wire/records.hpp"

namespace warden::server::admin {

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
                               {"revalidate_count", revalidations}});
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
          {"dead_watchers_cleaner_latency", &dead_watchers_latency}};
}

NamedSummarySets PipelineMetrics::summary_sets() {
  return {{"read_per_namespace", &read_per_namespace}, {"write_per_namespace", &write_per_namespace}};
}

void PipelineMetrics::reset() {
  bytes_received = connection_requests = closed_not_serving = response_bytes = watch_bytes = prep_queued = 0;
  outstanding_changes_queued = outstanding_changes_removed = leader_commits = learner_commits = 0;
  stale_sessions_expired = stale_replies = dead_watchers = stale_requests = sessionless_expired = 0;
  connection_revalidations = revalidations = 0;
  for (auto& [name, s] : summaries()) s->reset();
  for (auto& [name, s] : summary_sets()) s->reset();
}

}  // namespace warden::server::admin
