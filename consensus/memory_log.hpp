// A LogView over entries held in memory, with an optional snapshot before them: for tests, the
// peer fuzzer and the simulator's replicas (which add the disk's behaviour around it).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "consensus/zab_peer.hpp"

namespace warden::consensus {
#ifdef WARDEN_PLANTS
inline namespace planted {
#endif

struct MemoryLog : LogView {
  std::vector<Entry> log;  // ascending zxids, all above snap_zxid
  Zxid snap_zxid = 0;
  std::string snap;

  Zxid last_zxid() const override { return log.empty() ? snap_zxid : log.back().zxid; }
  Zxid snapshot_zxid() const override { return snap_zxid; }
  bool contains(Zxid z) const override { return entry(z) != nullptr; }
  Zxid floor(Zxid z) const override {
    if (z < snap_zxid) return 0;
    auto it = std::upper_bound(log.begin(), log.end(), z, [](Zxid v, const Entry& e) { return v < e.zxid; });
    return it == log.begin() ? snap_zxid : std::prev(it)->zxid;
  }
  std::vector<Entry> entries(Zxid after, Zxid upto, size_t max, size_t max_bytes) const override {
    std::vector<Entry> out;
    size_t bytes = 0;
    for (auto it = above(after); it != log.end() && it->zxid <= upto && out.size() < max; ++it) {
      if (!out.empty() && bytes + it->payload.size() > max_bytes) break;
      bytes += it->payload.size();
      out.push_back(*it);
    }
    return out;
  }
  std::string snapshot() const override { return snap; }

  const Entry* entry(Zxid z) const {
    auto it = std::lower_bound(log.begin(), log.end(), z, [](const Entry& e, Zxid v) { return e.zxid < v; });
    return it != log.end() && it->zxid == z ? &*it : nullptr;
  }
  // The first entry above `z`.
  std::vector<Entry>::const_iterator above(Zxid z) const {
    return std::upper_bound(log.begin(), log.end(), z, [](Zxid v, const Entry& e) { return v < e.zxid; });
  }
  void truncate_after(Zxid z) {
    while (!log.empty() && log.back().zxid > z) log.pop_back();
  }
};

#ifdef WARDEN_PLANTS
}  // namespace planted
#endif
}  // namespace warden::consensus
