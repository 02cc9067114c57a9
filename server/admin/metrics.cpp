#include "server/admin/metrics.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace warden::server::admin {

namespace {
void metric(std::string& out, const std::string& name, const char* type, const std::string& help, double value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
}

// A Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]*.
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

std::string prometheus_text(const std::vector<std::pair<std::string, Json>>& values) {
  std::string out;
  for (const auto& [name, v] : values) {
    auto n = v.number();
    if (!n || !valid_name(name)) continue;  // version and server_state are text: no metric
    metric(out, name, "gauge", name, *n);
  }
  process_metrics(out);
  return out;
}

}  // namespace warden::server::admin
