// The summaries behind monitor's avg_/min_/max_/cnt_/sum_/pNN_ keys and /metrics' summaries and
// histogram, and the Prometheus text they make.
#include <catch2/catch.hpp>
#include <random>

#include "server/admin/metrics.hpp"
#include "server/metrics/summary.hpp"

using namespace warden::server::admin;
using namespace warden::server::metrics;

TEST_CASE("a summary's count, sum, extremes and quantiles") {
  Summary s(true);
  CHECK(s.view().quantile(0.5) == 0);  // empty
  std::vector<int64_t> values;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) values.push_back(static_cast<int64_t>(rng() % 100000));
  for (auto v : values) s.add(v);
  std::sort(values.begin(), values.end());
  auto v = s.view();
  CHECK(v.count == 20000);
  CHECK(v.min == values.front());
  CHECK(v.max == values.back());
  int64_t sum = 0;
  for (auto x : values) sum += x;
  CHECK(v.sum == sum);
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    auto want = static_cast<double>(values[static_cast<size_t>(q * 20000) - 1]);
    auto got = static_cast<double>(v.quantile(q));
    CHECK(std::abs(got - want) <= 0.04 * want + 1);  // within the buckets' ~3%
  }
  CHECK(v.count_at_most(-1) == 0);
  CHECK(v.count_at_most(values.back()) == 20000);
  auto below = std::upper_bound(values.begin(), values.end(), 50000) - values.begin();
  CHECK(std::abs(static_cast<double>(v.count_at_most(50000) - below)) <= 0.04 * static_cast<double>(below));
  s.reset();
  CHECK(s.view().count == 0);
}

TEST_CASE("small values are exact, and monitor's keys are ZooKeeper's") {
  Summary basic, advanced(true);
  for (int64_t x : {1, 2, 3, 4}) basic.add(x), advanced.add(x);
  CHECK(basic.view().quantile(0.5) == 2);
  CHECK(basic.view().count_at_most(3) == 3);
  std::vector<std::pair<std::string, Json>> out;
  add_monitor_keys(out, {{"fsynctime", &basic}, {"readlatency", &advanced}});
  std::vector<std::string> keys;
  for (const auto& [k, v] : out) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"avg_fsynctime", "min_fsynctime", "max_fsynctime", "cnt_fsynctime",
                                         "sum_fsynctime", "avg_readlatency", "min_readlatency", "max_readlatency",
                                         "cnt_readlatency", "sum_readlatency", "p50_readlatency", "p95_readlatency",
                                         "p99_readlatency", "p999_readlatency"});
  CHECK(out[0].second.text() == "2.5");
}

TEST_CASE("Prometheus text: summaries, labelled series, a histogram") {
  Summary s;
  for (int64_t x : {10, 20, 30}) s.add(x);
  SummarySet per_ns;
  per_ns.add("app", 7);
  per_ns.add("q\"x", 1);
  std::string text = prometheus_text({{"znode_count", Json(int64_t{5})}, {"version", Json("3.8")}},
                                     {{"fsynctime", &s}}, {{"read_per_namespace", &per_ns}}, "");
  CHECK(text.find("read_per_namespace{key=\"app\",quantile=\"0.5\"} 7\n") != std::string::npos);
  CHECK(text.find("read_per_namespace_count{key=\"q\\\"x\"} 1\n") != std::string::npos);
  CHECK(text.find("# TYPE znode_count gauge\nznode_count 5\n") != std::string::npos);
  CHECK(text.find("version") == std::string::npos);
  CHECK(text.find("# TYPE fsynctime summary\nfsynctime{quantile=\"0.5\"} 20\nfsynctime_count 3\nfsynctime_sum 60\n") !=
        std::string::npos);
  Summary us(true);
  for (int64_t x : {100, 2000, 3000000}) us.add(x);
  std::string h = prometheus_histogram("w", "help", us, 1e-6, {0.001, 0.01, 1});
  CHECK(h == "# HELP w help\n# TYPE w histogram\nw_bucket{le=\"0.001\"} 1\nw_bucket{le=\"0.01\"} 2\n"
             "w_bucket{le=\"1\"} 2\nw_bucket{le=\"+Inf\"} 3\nw_count 3\nw_sum 3.0021\n");
  std::string g = prometheus_gauges("lag", "txns behind", {{"server_id=\"2\"", 4}});
  CHECK(g == "# HELP lag txns behind\n# TYPE lag gauge\nlag{server_id=\"2\"} 4\n");
  std::string sm = prometheus_summaries("ack", "h", {{"server_id=\"3\"", &us}}, 1e-6);
  CHECK(sm.find("ack{server_id=\"3\",quantile=\"0.99\"}") != std::string::npos);
  CHECK(sm.find("ack_count{server_id=\"3\"} 3\n") != std::string::npos);
}

TEST_CASE("A summary set keeps one summary per key, up to its bound, named as ZooKeeper's") {
  SummarySet set(false, 2);
  set.add("b", 3);
  set.add("a", 1);
  set.add("a", 5);
  set.add("c", 9);  // past the bound: not counted
  auto entries = set.entries();
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].first == "a");
  CHECK(entries[0].second->view().count == 2);
  CHECK(entries[1].second->view().sum == 3);
  std::vector<std::pair<std::string, Json>> out;
  add_monitor_keys(out, set_entries({{"write_per_namespace", &set}}));
  REQUIRE(out.size() == 10);
  CHECK(out[0].first == "avg_a_write_per_namespace");
  CHECK(out[0].second.text() == "3.0");
  set.reset();
  CHECK(set.entries().size() == 2);
  CHECK(set.entries()[0].second->view().count == 0);
}

TEST_CASE("A one-thread summary's zeros count as any other value") {
  Summary fast(true, Access::one_thread), plain(true);
  for (int64_t x : {0, 0, 5, 0, 40}) {
    fast.add_zero_or(x);
    plain.add(x);
  }
  auto a = fast.view(), b = plain.view();
  CHECK(a.count == b.count);
  CHECK(a.sum == b.sum);
  CHECK(a.min == 0);
  CHECK(a.max == 40);
  CHECK(a.quantile(0.5) == b.quantile(0.5));
  CHECK(a.quantile(0.99) == b.quantile(0.99));
  Summary only_zeros(false, Access::one_thread);
  only_zeros.add_zero_or(0);
  CHECK(only_zeros.view().count == 1);
  CHECK(only_zeros.view().max == 0);
  only_zeros.reset();
  CHECK(only_zeros.view().count == 0);
}
