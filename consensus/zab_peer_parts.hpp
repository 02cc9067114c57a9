// What the files of ZabPeer share (zab_peer.cpp, election.cpp, leading.cpp, following.cpp): the
// protobuf forms of entries and configurations, and the simulator's planted bugs. Included by
// those files alone.
#pragma once

#include "consensus/peer.pb.h"
#include "consensus/zab_peer.hpp"

// The core is compiled twice: as the server's, and with the simulator's planted bugs
// (WARDEN_PLANTS, warden_consensus_planted), whose symbols live in an inline namespace so that
// both can be linked into one test binary. PLANT(name) is false in the server's.
#ifdef WARDEN_PLANTS
#define WARDEN_ZAB_BEGIN inline namespace planted {
#define WARDEN_ZAB_END }
#define PLANT(name) (cfg_.plants.name)
#else
#define WARDEN_ZAB_BEGIN
#define WARDEN_ZAB_END
#define PLANT(name) false
#endif

namespace warden::consensus {
WARDEN_ZAB_BEGIN
namespace zab_parts {

inline void to_pb(const Entry& e, pb::Entry* out) {
  out->set_zxid(e.zxid);
  out->set_payload(e.payload);
}
inline Entry from_pb(const pb::Entry& e) { return Entry{e.zxid(), e.payload()}; }
inline void to_pb(const Ensemble& e, pb::Config* out) {
  out->set_version(e.version);
  for (PeerId p : e.voters) out->add_voters(p);
  for (PeerId p : e.observers) out->add_observers(p);
  out->set_members(e.members);
}
inline Ensemble from_pb(const pb::Config& c) {
  Ensemble e;
  e.version = c.version();
  e.voters.assign(c.voters().begin(), c.voters().end());
  e.observers.assign(c.observers().begin(), c.observers().end());
  e.members = c.members();
  return e;
}

}  // namespace zab_parts

// Whether the voters `counted` says make a quorum of the configuration in force and, with
// `with_pending`, of a pending one too (a reconfig commits only with both). Every phase counts.
template <class F>
bool ZabPeer::quorum_of(F counted, bool with_pending) const {
  auto enough = [&](const Ensemble& e) {
    size_t n = count_of(e.voters, counted);
#ifdef WARDEN_PLANTS
    if (PLANT(count_removed_member))
      for (PeerId p : removed_) n += !e.is_member(p) && counted(p) ? 1 : 0;
#endif
    return n >= e.quorum();
  };
  return enough(cfg_.ensemble) &&
         (!pending_ || !with_pending || PLANT(commit_old_quorum_only) || enough(pending_->second));
}
WARDEN_ZAB_END
}  // namespace warden::consensus
