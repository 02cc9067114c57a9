// A leader's view of one linked follower or observer, as its host reports it (the observers
// admin command, each follower's lag and ack latency in /metrics).
#pragma once

#include <cstdint>

namespace warden::consensus {

struct LinkView {
  int64_t id = 0;  // the member's server id
  uint64_t link = 0;  // this link's number (a new link for every FollowerInfo)
  bool observer = false;
  bool synced = false;
  int64_t acked = 0;     // a voter: durable there up to this zxid
  int64_t informed = 0;  // an observer: committed entries sent up to this zxid
  uint64_t sent = 0, received = 0;  // messages each way on the link
};

}  // namespace warden::consensus
