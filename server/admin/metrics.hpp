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

#include "server/admin/json.hpp"

namespace warden::server::admin {

std::string prometheus_text(const std::vector<std::pair<std::string, Json>>& values);

}  // namespace warden::server::admin
