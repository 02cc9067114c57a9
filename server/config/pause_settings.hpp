// The pause monitor's settings (admin/pause_monitor.hpp), apart from the monitor so that the
// configuration, which every part of the server reads, does not bring in threads and locks.
#pragma once

#include <cstdint>

namespace warden::server::admin {

// ZooKeeper's keys and defaults: jvm.pause.monitor, jvm.pause.sleep.time.ms,
// jvm.pause.info-threshold.ms, jvm.pause.warn-threshold.ms.
struct PauseSettings {
  bool enabled = false;
  int32_t sleep_ms = 500;
  int32_t info_threshold_ms = 1000;
  int32_t warn_threshold_ms = 10000;
};

}  // namespace warden::server::admin
