// Quorum arithmetic, in one place: how many voters make a majority, how many of them a
// predicate counts, and how far the acknowledgements of a quorum reach. As ZooKeeper's
// majority rule (QuorumMaj): more than half of the voters; observers never count. The Zab
// core (election, discovery, synchronisation, commit) and the simulator's checks ask here.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace warden::consensus {

// The least number of `voters` that outnumbers the rest: 1 of 1, 2 of 3, 3 of 4 or 5.
constexpr size_t majority_of(size_t voters) { return voters / 2 + 1; }

// How many of `voters` the predicate `counted` says yes to.
template <class Id, class F>
size_t count_of(const std::vector<Id>& voters, F counted) {
  return static_cast<size_t>(std::count_if(voters.begin(), voters.end(), counted));
}

// The highest position that at least `quorum` of the acknowledged positions in `acks` reach
// (the `quorum`-th largest), or 0 when fewer than `quorum` acknowledged at all.
inline int64_t reached_by_quorum(std::vector<int64_t> acks, size_t quorum) {
  if (quorum == 0 || acks.size() < quorum) return 0;
  auto kth = acks.begin() + static_cast<std::ptrdiff_t>(quorum - 1);
  std::nth_element(acks.begin(), kth, acks.end(), std::greater<>());
  return *kth;
}

}  // namespace warden::consensus
