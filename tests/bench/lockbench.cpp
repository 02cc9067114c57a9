// Lock hand-off, Warden's Mutex: N contenders (each a thread with a session of its own) take
// and release one lock path for a while; prints acquisitions per second and the hand-off
// latency (one holder's release to the next holder's acquire, on one clock) percentiles.
//   warden-lockbench HOSTS PATH CONTENDERS SECONDS
// The floor of a hand-off: one holder, one waiter already queued behind it; the holder's release
// (its delete's round trip) against the hand-off, ROUNDS times:
//   warden-lockbench HOSTS PATH floor ROUNDS
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "recipes/client.hpp"
#include "recipes/mutex.hpp"

using Clock = std::chrono::steady_clock;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int floor_run(const std::string& hosts, const std::string& path, int rounds) {
  warden::client::Options o;
  o.connect_string = hosts;
  warden::client::Client a(o), b(o);
  a.start();
  b.start();
  std::vector<double> release_us, handoff_us;
  for (int i = 0; i < rounds; ++i) {
    warden::client::Mutex holder(a, path), waiter(b, path);
    holder.acquire();
    Clock::time_point got;
    std::thread t([&] {
      waiter.acquire();
      got = Clock::now();
    });
    // The waiter queued, and a moment to set its watch.
    for (int k = 0; k < 5000 && a.children(path).size() < 2; ++k) std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto t0 = Clock::now();
    holder.release();
    auto t1 = Clock::now();
    t.join();
    waiter.release();
    release_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    handoff_us.push_back(std::chrono::duration<double, std::micro>(got - t0).count());
  }
  std::printf("rounds=%d release_p50_us=%.0f handoff_p50_us=%.0f\n", rounds, median(release_us), median(handoff_us));
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[3]) == "floor") {
    int rounds = std::atoi(argv[4]);
    if (rounds < 1 || rounds > 100000) {
      std::fprintf(stderr, "warden-lockbench: ROUNDS 1..100000\n");
      return 2;
    }
    return floor_run(argv[1], argv[2], rounds);
  }
  if (argc != 5) {
    std::fprintf(stderr, "usage: warden-lockbench HOSTS PATH CONTENDERS SECONDS | HOSTS PATH floor ROUNDS\n");
    return 2;
  }
  std::string hosts = argv[1], path = argv[2];
  int n = std::atoi(argv[3]);
  double seconds = std::atof(argv[4]);
  if (n < 1 || n > 1000 || seconds <= 0 || seconds > 600) {
    std::fprintf(stderr, "warden-lockbench: CONTENDERS 1..1000, SECONDS (0, 600]\n");
    return 2;
  }
  std::mutex mu;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> holds;  // (acquired, released)
  std::vector<std::unique_ptr<warden::client::Client>> clients;
  for (int i = 0; i < n; ++i) {
    warden::client::Options o;
    o.connect_string = hosts;
    clients.push_back(std::make_unique<warden::client::Client>(o));
    clients.back()->start();
  }
  auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i)
    ts.emplace_back([&, i] {
      warden::client::Mutex m(*clients[i], path);
      while (Clock::now() < end) {
        m.acquire();
        auto got = Clock::now();
        auto released = Clock::now();
        m.release();
        std::lock_guard<std::mutex> l(mu);
        holds.emplace_back(got, released);
      }
    });
  for (auto& t : ts) t.join();
  std::sort(holds.begin(), holds.end());
  std::vector<double> handoff_us;
  for (size_t i = 1; i < holds.size(); ++i)
    handoff_us.push_back(std::chrono::duration<double, std::micro>(holds[i].first - holds[i - 1].second).count());
  std::sort(handoff_us.begin(), handoff_us.end());
  auto pct = [&](double p) {
    return handoff_us.empty() ? 0.0 : handoff_us[std::min(handoff_us.size() - 1, static_cast<size_t>(p * handoff_us.size()))];
  };
  std::printf("acquisitions=%zu per_s=%.1f handoff_p50_us=%.0f handoff_p99_us=%.0f\n", holds.size(),
              holds.size() / seconds, pct(0.5), pct(0.99));
  return 0;
}
