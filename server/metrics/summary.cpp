#include "server/metrics/summary.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace warden::server::metrics {

namespace {
// Values below 32 have a bucket each; above, each power of two is cut into 32 buckets.
constexpr int exact = 32;
constexpr int per_octave = 32;

size_t bucket_of(int64_t v) {
  if (v < exact) return static_cast<size_t>(std::max<int64_t>(v, 0));
  auto u = static_cast<uint64_t>(v);
  int e = 63 - std::countl_zero(u);  // 2^e <= v, e >= 5
  auto sub = static_cast<size_t>((u >> (e - 5)) & (per_octave - 1));
  return static_cast<size_t>(exact + (e - 5) * per_octave) + sub;
}

// The middle of a bucket's range.
int64_t value_of(size_t b) {
  if (b < static_cast<size_t>(exact)) return static_cast<int64_t>(b);
  int e = static_cast<int>((b - exact) / per_octave) + 5;
  uint64_t sub = (b - exact) % per_octave;
  uint64_t low = (uint64_t{per_octave} + sub) << (e - 5);
  uint64_t width = uint64_t{1} << (e - 5);
  return static_cast<int64_t>(low + width / 2);
}
}  // namespace

void Summary::add(int64_t value) {
  if (!locks_) return record(value);
  std::lock_guard<std::mutex> l(mu_);
  record(value);
}

void Summary::add_each(const std::vector<int64_t>& values, int64_t plus, int64_t divisor) {
  std::unique_lock<std::mutex> l(mu_, std::defer_lock);
  if (locks_) l.lock();
  for (int64_t v : values) record((v + plus) / divisor);
}

void Summary::record(int64_t value) {
  v_.min = v_.count ? std::min(v_.min, value) : value;
  v_.max = v_.count ? std::max(v_.max, value) : value;
  ++v_.count;
  v_.sum += value;
  size_t b = bucket_of(value);
  if (v_.buckets.size() <= b) v_.buckets.resize(b + 1, 0);
  ++v_.buckets[b];
}

void Summary::reset() {
  std::unique_lock<std::mutex> l(mu_, std::defer_lock);
  if (locks_) l.lock();
  v_ = View{};
  zeros_ = 0;
}

Summary::View Summary::view() const {
  std::unique_lock<std::mutex> l(mu_, std::defer_lock);
  if (locks_) l.lock();
  View v = v_;
  if (zeros_ > 0) {
    v.min = v.count ? std::min<int64_t>(v.min, 0) : 0;
    v.max = v.count ? std::max<int64_t>(v.max, 0) : 0;
    v.count += zeros_;
    if (v.buckets.empty()) v.buckets.resize(1, 0);
    v.buckets[0] += zeros_;  // 0's bucket
  }
  return v;
}

int64_t Summary::View::quantile(double q) const {
  if (count == 0) return 0;
  auto rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(count)));
  rank = std::clamp<int64_t>(rank, 1, count);
  int64_t seen = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    seen += buckets[b];
    if (seen >= rank) return std::clamp(value_of(b), min, max);
  }
  return max;
}

int64_t Summary::View::count_at_most(int64_t v) const {
  if (v < min) return 0;
  if (v >= max) return count;
  size_t last = bucket_of(v);
  int64_t n = 0;
  for (size_t b = 0; b < buckets.size() && b <= last; ++b) n += buckets[b];
  return n;
}

Summary* SummarySet::find_or_make(std::string_view key) {
  // Requests come in runs under one namespace: the last key is checked before the map.
  if (last_ && key == last_key_) return last_;
  auto it = by_key_.find(key);
  if (it == by_key_.end()) {
    if (by_key_.size() >= max_keys_) return nullptr;
    it = by_key_.emplace(std::string(key), std::make_unique<Summary>(advanced_, access_)).first;
  }
  last_key_.assign(key);
  last_ = it->second.get();  // entries live as long as the set
  return last_;
}

void SummarySet::add(std::string_view key, int64_t value) {
  Summary* s;
  if (access_ == Access::one_thread) {
    s = find_or_make(key);
  } else {
    std::lock_guard<std::mutex> l(mu_);
    s = find_or_make(key);
  }
  if (s) s->add(value);
}

void SummarySet::reset() {
  std::unique_lock<std::mutex> l(mu_, std::defer_lock);
  if (access_ == Access::any_thread) l.lock();
  for (auto& [key, s] : by_key_) s->reset();
}

std::vector<std::pair<std::string, Summary*>> SummarySet::entries() const {
  std::unique_lock<std::mutex> l(mu_, std::defer_lock);
  if (access_ == Access::any_thread) l.lock();
  std::vector<std::pair<std::string, Summary*>> out;
  for (const auto& [key, s] : by_key_) out.emplace_back(key, s.get());
  return out;
}

NamedSummaries set_entries(const NamedSummarySets& sets) {
  NamedSummaries out;
  for (const auto& [name, set] : sets)
    for (const auto& [key, s] : set->entries()) out.emplace_back(key + "_" + name, s);
  return out;
}

void add_monitor_keys(std::vector<std::pair<std::string, Json>>& out, const NamedSummaries& summaries) {
  for (const auto& [name, s] : summaries) {
    auto v = s->view();
    // ZooKeeper's AvgMinMaxCounter: a rounded average (four decimals), min and max 0 when empty.
    out.emplace_back("avg_" + name, std::round(v.avg() * 10000) / 10000);
    out.emplace_back("min_" + name, v.min);
    out.emplace_back("max_" + name, v.max);
    out.emplace_back("cnt_" + name, v.count);
    out.emplace_back("sum_" + name, v.sum);
    if (s->advanced())
      for (auto [key, q] : {std::pair{"p50_", 0.5}, {"p95_", 0.95}, {"p99_", 0.99}, {"p999_", 0.999}})
        out.emplace_back(key + name, v.quantile(q));
  }
}

}  // namespace warden::server::metrics
