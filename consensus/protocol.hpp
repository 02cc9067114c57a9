// The peer protocol versions this build speaks, and what each version added: the one source of
// these numbers (the server's --version, srvr, mntr and the AdminServer print them from here).
//
// Every peer message carries the range its sender speaks (peer.proto's PeerMessage.version, the
// oldest, and .speaks, the newest). A member takes a message whose range meets its own and
// refuses one that does not, with a line naming both. The ensemble version is the newest
// version every member of the configuration speaks: the leader works it out from what it heard
// of each (a member it has not heard from counts as the oldest this build speaks), and tells its
// followers in pings. What a version added is used only once the ensemble runs at it, and each
// change of the ensemble version is logged, so an ensemble can be upgraded one member at a time
// (docs/operations.md, "Upgrades").
#pragma once

#include <cstdint>
#include <string>

namespace warden::consensus {

// 2: syncs are streamed (Sync.streamed, SyncData, SnapChunk). The first build held to rolling
//    upgrades (f1c90d0, warden-server 0.1.0) speaks 2 alone.
// 3: the range itself (PeerMessage.speaks, Ping and UpToDate's ensemble_version); tree digests
//    with commits, informs and pings, and SnapChunk.digest_from; Vote.unsynced; the sender's
//    run in votes and FollowerInfo (incarnation).
constexpr uint32_t oldest_protocol = 2;
constexpr uint32_t newest_protocol = 3;

// What needs which version, used once the ensemble runs at it.
constexpr uint32_t range_protocol = 3;    // messages carry their sender's range; pings the ensemble version
constexpr uint32_t digests_protocol = 3;  // a leader sends its tree digests
// Votes say whether their sender's store is unsynced. Sent, and heeded, by every member that
// speaks it, whatever the ensemble version: the rule is what this member counts, and a member
// of the build before skips the field, so a mixed ensemble is as safe as the build before.
constexpr uint32_t unsynced_votes_protocol = 3;
// Votes and FollowerInfo name their sender's run (its incarnation): a leader that hears a vote of
// a later run from a member it links drops that link (the member restarted, and what it
// acknowledged on it no longer counts). Sent and heeded whatever the ensemble version, for the
// same reason: it only narrows what a leader counts.
constexpr uint32_t incarnations_protocol = 3;

struct ProtocolRange {
  uint32_t oldest = oldest_protocol;
  uint32_t newest = newest_protocol;
  bool operator==(const ProtocolRange&) const = default;
};

// What turns on when the ensemble reaches `version`, for the log line that says so.
inline const char* switched_on_at(uint32_t version) {
  switch (version) {
    case 3: return "leaders send their tree digests with commits, informs and pings";
    default: return "nothing more";
  }
}

// "2" or "2 to 3".
inline std::string protocol_range_text(ProtocolRange r) {
  return r.oldest == r.newest ? std::to_string(r.oldest)
                              : std::to_string(r.oldest) + " to " + std::to_string(r.newest);
}

}  // namespace warden::consensus
