// The Prometheus text exposition format (version 0.0.4), as ZooKeeper's
// PrometheusMetricsProvider serves it at /metrics: each of the server's numbers under the
// name ZooKeeper registers it by (mntr's keys without "zk_", the same numbers as monitor: one
// source), as a gauge; and the process metrics Prometheus's client libraries export
// (process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds), read from /proc.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "server/metrics/json.hpp"
#include "server/metrics/summary.hpp"

namespace warden::server::admin {

// `values` as gauges, `summaries` as ZooKeeper's Prometheus provider writes its summaries
// (quantile 0.5, or 0.5, 0.9 and 0.99 for an advanced one; _count and _sum), then `extra` (text
// already in the format), then the process metrics.
// `sets`: each a summary family labelled key="<key>", as ZooKeeper's provider writes a metrics::SummarySet.
std::string prometheus_text(const std::vector<std::pair<std::string, metrics::Json>>& values,
                            const metrics::NamedSummaries& summaries, const metrics::NamedSummarySets& sets, const std::string& extra);

// One metric family of labelled series ("server_id=\"2\"" -> value) in the text format.
std::string prometheus_gauges(const std::string& name, const std::string& help,
                              const std::vector<std::pair<std::string, double>>& series);
// Summaries under one name, one per label set, their values multiplied by `unit` (1e-6: us to s).
std::string prometheus_summaries(const std::string& name, const std::string& help,
                                 const std::vector<std::pair<std::string, metrics::Summary*>>& series, double unit);
// A histogram from a summary's buckets: the count at or below each bound (in the summary's
// values times `unit`), within the summary's bucket precision.
std::string prometheus_histogram(const std::string& name, const std::string& help, const metrics::Summary& s, double unit,
                                 const std::vector<double>& bounds);

}  // namespace warden::server::admin
