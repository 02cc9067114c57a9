// Counters ZooKeeper's ServerStats keeps beside the packet counts and latencies (server_stats,
// srvr and monitor show them; srst resets what ZooKeeper's reset does), and its trace mask.
#pragma once

#include <algorithm>
#include <cstdint>

namespace warden::server {

// ZooKeeper's BufferStats: the last, smallest and largest size seen, -1 until one is.
struct BufferStats {
  int64_t last = -1, min = -1, max = -1;
  int64_t count = 0;  // sizes seen (a leader's proposal_count)
  void add(int64_t size) {
    ++count;
    last = size;
    min = min < 0 ? size : std::min(min, size);
    max = std::max(max, size);
  }
};

struct ServerCounters {
  // Authentication that failed: a TLS handshake, an x509 identity refused, a SASL exchange or
  // an auth packet (ZooKeeper 3.8 counts the first two only).
  int64_t auth_failed = 0;
  // TLS handshakes that failed, and those among them that did not finish in time.
  int64_t unsuccessful_handshake = 0, tls_handshake_exceeded = 0;
  // Connections without TLS, from a loopback address or from another.
  int64_t non_mtls_local = 0, non_mtls_remote = 0;
  BufferStats client_response;  // each reply's size without its length prefix
  BufferStats proposals;        // a leader's proposals (txn sizes), as ZooKeeper's proposal_stats
};

// ZooKeeper's ZooTrace masks: which events a server logs at trace level (set_trace_mask).
namespace trace_mask {
inline constexpr int64_t client_request = 1 << 1;
inline constexpr int64_t client_ping = 1 << 3;
inline constexpr int64_t session = 1 << 5;
inline constexpr int64_t event_delivery = 1 << 6;
// ZooKeeper's default: client requests, server packets, sessions, warnings.
inline constexpr int64_t initial = 306;
}  // namespace trace_mask

}  // namespace warden::server
