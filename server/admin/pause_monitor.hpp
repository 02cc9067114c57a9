// ZooKeeper's pause monitor (its JvmPauseMonitor), for a process without a JVM: a thread that
// sleeps a fixed time and measures how much longer the sleep took. What it measures is every
// stall of the whole process or its host (a machine swapping, a starved CPU, a stopped process,
// a stalled disk the kernel waits on): the cause of sessions expiring "for no reason". Each
// sleep's overshoot (ms) goes to jvm_pause_time_ms, as ZooKeeper's does, and one over a
// threshold is logged, at info or warn. Off unless jvm.pause.monitor=true, as in ZooKeeper.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "server/config/pause_settings.hpp"
#include "server/metrics/summary.hpp"

namespace warden::server::admin {

class PauseMonitor {
 public:
  // Starts the thread; `pauses` (shared between threads) receives each sleep's overshoot.
  PauseMonitor(const PauseSettings& settings, metrics::Summary& pauses);
  ~PauseMonitor();  // stops and joins the thread at once, mid-sleep included
  PauseMonitor(const PauseMonitor&) = delete;
  PauseMonitor& operator=(const PauseMonitor&) = delete;

 private:
  void run();
  const PauseSettings settings_;
  metrics::Summary& pauses_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace warden::server::admin
