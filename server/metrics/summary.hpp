// A summary of observed values, as ZooKeeper's metrics keep them (its Summary): how many, their
// sum, the smallest and largest, and quantiles. monitor and mntr show avg_, min_, max_, cnt_
// and sum_ NAME (and p50_, p95_, p99_, p999_ for an advanced one), as ZooKeeper's default
// provider does; /metrics serves a Prometheus summary (quantile 0.5; 0.5, 0.9 and 0.99 for an
// advanced one), as its Prometheus provider does. One Summary is the one source of both.
//
// Quantiles come from log-spaced buckets: within about 3% of the true value. A summary shared
// between threads locks; one that only its owner's thread touches (the pipeline's, read by
// the AdminServer on the same thread) does not: an uncontended lock per request was a
// measurable share of a read's cost.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/metrics/json.hpp"

namespace warden::server::metrics {

enum class Access { any_thread, one_thread };

class Summary {
 public:
  explicit Summary(bool advanced = false, Access access = Access::any_thread)
      : advanced_(advanced), locks_(access == Access::any_thread) {}
  Summary(const Summary&) = delete;
  Summary& operator=(const Summary&) = delete;

  void add(int64_t value);
  // Each of `values` divided by `divisor`, under one lock (a group commit's txns).
  void add_each(const std::vector<int64_t>& values, int64_t plus, int64_t divisor);
  // add(), with a fast path for 0 (most requests wait for nothing): one increment, folded into
  // the view when it is read.
  void add_zero_or(int64_t value) {
    if (value == 0 && !locks_)
      ++zeros_;
    else
      add(value);
  }
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
  void record(int64_t value);
  const bool advanced_;
  const bool locks_;
  mutable std::mutex mu_;
  View v_;
  int64_t zeros_ = 0;  // add_zero_or's zeros not in v_ yet (one_thread only)
};

// A named summary, as the monitor and /metrics list them.
using NamedSummaries = std::vector<std::pair<std::string, Summary*>>;

// Summaries by key, as ZooKeeper's SummarySet keeps them (per top-level namespace, say): one
// is made the first time its key is seen, up to `max_keys` of them (later keys are not
// counted: the set stays bounded whatever keys come). An entry lives as long as the set;
// `access` as a Summary's.
class SummarySet {
 public:
  explicit SummarySet(bool advanced = false, size_t max_keys = 1000, Access access = Access::any_thread)
      : advanced_(advanced), max_keys_(max_keys), access_(access) {}
  void add(std::string_view key, int64_t value);
  void reset();  // every entry emptied, the keys kept (as ZooKeeper's reset does)
  std::vector<std::pair<std::string, Summary*>> entries() const;  // by key
 private:
  Summary* find_or_make(std::string_view key);
  const bool advanced_;
  const size_t max_keys_;
  const Access access_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Summary>, std::less<>> by_key_;
  std::string last_key_;     // the key find_or_make found last, and its entry
  Summary* last_ = nullptr;
};
using NamedSummarySets = std::vector<std::pair<std::string, SummarySet*>>;

// monitor's keys for each summary, appended to `out`.
void add_monitor_keys(std::vector<std::pair<std::string, Json>>& out, const NamedSummaries& summaries);
// A set's entries as ZooKeeper's default provider names them: "<key>_<name>".
NamedSummaries set_entries(const NamedSummarySets& sets);

}  // namespace warden::server::metrics
