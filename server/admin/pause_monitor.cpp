#include "server/admin/pause_monitor.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

namespace warden::server::admin {

PauseMonitor::PauseMonitor(const PauseSettings& settings, metrics::Summary& pauses)
    : settings_(settings), pauses_(pauses), thread_([this] { run(); }) {}

PauseMonitor::~PauseMonitor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void PauseMonitor::run() {
  spdlog::info("pause monitor started: sleeps {} ms, logs a pause over {} ms (info) and {} ms (warn)",
               settings_.sleep_ms, settings_.info_threshold_ms, settings_.warn_threshold_ms);
  const auto sleep = std::chrono::milliseconds(settings_.sleep_ms);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    auto start = std::chrono::steady_clock::now();
    // Only a stop ends the wait early: a spurious wake-up waits out the rest.
    if (wake_.wait_until(lock, start + sleep, [this] { return stop_; })) return;
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    int64_t extra = took.count() - settings_.sleep_ms;
    if (extra < 0) continue;
    pauses_.add(extra);
    if (extra > settings_.warn_threshold_ms)
      spdlog::warn("detected a pause of this process or its host of about {} ms (jvm.pause.warn-threshold.ms={})",
                   extra, settings_.warn_threshold_ms);
    else if (extra > settings_.info_threshold_ms)
      spdlog::info("detected a pause of this process or its host of about {} ms (jvm.pause.info-threshold.ms={})",
                   extra, settings_.info_threshold_ms);
  }
}

}  // namespace warden::server::admin
