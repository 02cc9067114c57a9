// A summary of observed values, as ZooKeeper's metrics keep them (its Summary): how many, their
// sum, the smallest and largest, and quantiles. monitor and mntr show avg_, min_, max_, cnt_
// and sum_ NAME (and p50_, p95_, p99_, p999_ for an advanced one), as ZooKeeper's default
// provider does; /metrics serves a Prometheus summary (quantile 0.5; 0.5, 0.9 and 0.99 for an
// advanced one), as its Prometheus provider does. One Summary is the one source of both.
//
// Quantiles come from log-spaced buckets: within about 3% of the true value. add() may be
// called from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/admin/json.hpp"

namespace warden::server::admin {

class Summary {
 public:
  explicit Summary(bool advanced = false) : advanced_(advanced) {}
  Summary(const Summary&) = delete;
  Summary& operator=(const Summary&) = delete;

  void add(int64_t value);
  void reset();
  bool advanced() const { return advanced_; }

  struct View {
    int64_t count = 0, sum = 0, min = 0, max = 0;
    double avg() const { return count ? static_cast<double>(sum) / static_cast<double>(count) : 0.0; }
    std::vector<int64_t> buckets;  // as Summary keeps them
    // The value below which a share `q` of the observations lie (0 when there are none).
    int64_t quantile(double q) const;
    // How many observations were at most `v` (by bucket: exact below 32, within ~3% above).
    int64_t count_at_most(int64_t v) const;
  };
  View view() const;

 private:
  const bool advanced_;
  mutable std::mutex mu_;
  View v_;
};

// A named summary, as the monitor and /metrics list them.
using NamedSummaries = std::vector<std::pair<std::string, Summary*>>;

// monitor's keys for each summary, appended to `out`.
void add_monitor_keys(std::vector<std::pair<std::string, Json>>& out, const NamedSummaries& summaries);

}  // namespace warden::server::admin
