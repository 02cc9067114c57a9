#include "server/admin/metrics.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/metrics/pipeline_metrics.hpp"

namespace warden::server::admin {

namespace {
void metric(std::string& out, const std::string& name, const char* type, const std::string& help, double value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
}

// A Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]*.
// A label's value in the text format: backslash, double quote and newline escaped.
std::string label_value(const std::string& v) {
  std::string out;
  for (char ch : v) {
    if (ch == '\\' || ch == '"') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  return out;
}

bool valid_name(const std::string& n) {
  if (n.empty() || (n[0] >= '0' && n[0] <= '9')) return false;
  for (char ch : n)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == ':'))
      return false;
  return true;
}

void process_metrics(std::string& out) {
  long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  std::ifstream stat("/proc/self/stat");
  std::string line;
  std::getline(stat, line);
  // Fields after the command's closing parenthesis: state is field 3; utime 14, stime 15,
  // starttime 22, vsize 23, rss 24 (proc(5)).
  auto close = line.rfind(')');
  if (close != std::string::npos && ticks > 0) {
    std::istringstream rest(line.substr(close + 2));
    std::vector<std::string> f{"", "", ""};  // fields 1 and 2 were before; index from 1
    std::string x;
    while (rest >> x) f.push_back(x);
    if (f.size() > 24) {
      double cpu = (std::stod(f[14]) + std::stod(f[15])) / static_cast<double>(ticks);
      metric(out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpu);
      metric(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", std::stod(f[23]));
      metric(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
             std::stod(f[24]) * static_cast<double>(page));
      // starttime is in ticks since boot: add the boot time (/proc/stat's btime).
      std::ifstream proc_stat("/proc/stat");
      double btime = 0;
      for (std::string l; std::getline(proc_stat, l);)
        if (l.rfind("btime ", 0) == 0) btime = std::stod(l.substr(6));
      metric(out, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
             btime + std::stod(f[22]) / static_cast<double>(ticks));
    }
  }
  std::error_code ec;
  double fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++fds;
  metric(out, "process_open_fds", "gauge", "Number of open file descriptors.", fds);
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0)
    metric(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
           static_cast<double>(lim.rlim_cur));
}
}  // namespace

std::string prometheus_gauges(const std::string& name, const std::string& help,
                              const std::vector<std::pair<std::string, double>>& series) {
  std::string out = fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
  for (const auto& [labels, v] : series) out += fmt::format("{}{{{}}} {}\n", name, labels, v);
  return out;
}

namespace {
void summary_lines(std::string& out, const std::string& name, const std::string& labels, const metrics::Summary& s,
                   double unit) {
  auto v = s.view();
  std::vector<double> qs{0.5};
  if (s.advanced()) qs = {0.5, 0.9, 0.99};
  std::string sep = labels.empty() ? "" : ",";
  for (double q : qs)
    out += fmt::format("{}{{{}{}quantile=\"{}\"}} {}\n", name, labels, sep, q,
                       static_cast<double>(v.quantile(q)) * unit);
  std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += fmt::format("{}_count{} {}\n{}_sum{} {}\n", name, braces, v.count, name, braces,
                     static_cast<double>(v.sum) * unit);
}
}  // namespace

std::string prometheus_summaries(const std::string& name, const std::string& help,
                                 const std::vector<std::pair<std::string, metrics::Summary*>>& series, double unit) {
  std::string out = fmt::format("# HELP {} {}\n# TYPE {} summary\n", name, help, name);
  for (const auto& [labels, s] : series) summary_lines(out, name, labels, *s, unit);
  return out;
}

std::string prometheus_histogram(const std::string& name, const std::string& help, const metrics::Summary& s, double unit,
                                 const std::vector<double>& bounds) {
  auto v = s.view();
  std::string out = fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  for (double b : bounds)
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, b, v.count_at_most(static_cast<int64_t>(b / unit)));
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_count {}\n{}_sum {}\n", name, v.count, name, v.count, name,
                     static_cast<double>(v.sum) * unit);
  return out;
}

namespace {
// A metric's HELP: its name, or for one of ZooKeeper's that Warden does not feed, why not.
std::string help_of(const std::string& name) {
  static const std::map<std::string, std::string, std::less<>> unfed = [] {
    std::map<std::string, std::string, std::less<>> m;
    for (const auto& u : metrics::unfed_metrics()) m.emplace(u.name, std::string("never fed: ") + u.why);
    return m;
  }();
  auto it = unfed.find(name);
  return it == unfed.end() ? name : it->second;
}
}  // namespace

std::string prometheus_text(const std::vector<std::pair<std::string, metrics::Json>>& values,
                            const metrics::NamedSummaries& summaries, const metrics::NamedSummarySets& sets, const std::string& extra) {
  std::string out;
  for (const auto& [name, v] : values) {
    auto n = v.number();
    if (!n || !valid_name(name)) continue;  // version and server_state are text: no metric
    metric(out, name, metrics::zookeeper_counter(name) ? "counter" : "gauge", help_of(name), *n);
  }
  for (const auto& [name, s] : summaries) {
    out += fmt::format("# HELP {} {}\n# TYPE {} summary\n", name, help_of(name), name);
    summary_lines(out, name, "", *s, 1);
  }
  // A set's family is served with no series until it has one, as ZooKeeper's provider does.
  for (const auto& [name, set] : sets) {
    std::vector<std::pair<std::string, metrics::Summary*>> series;
    for (const auto& [key, s] : set->entries()) series.emplace_back(fmt::format("key=\"{}\"", label_value(key)), s);
    out += prometheus_summaries(name, name, series, 1);
  }
  for (const auto& u : metrics::unfed_metrics()) {
    if (u.kind == metrics::UnfedMetric::Kind::summary_set)
      out += fmt::format("# HELP {} {}\n# TYPE {} summary\n", u.name, help_of(u.name), u.name);
    if (u.kind == metrics::UnfedMetric::Kind::gauge_set)
      out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", u.name, help_of(u.name), u.name);
    if (u.kind == metrics::UnfedMetric::Kind::counter_set)
      out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", u.name, help_of(u.name), u.name);
  }
  out += extra;
  process_metrics(out);
  return out;
}

}  // namespace warden::server::admin
