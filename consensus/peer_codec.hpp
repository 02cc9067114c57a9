// Peer messages on the wire: a PeerMessage (peer.proto) per frame. Decoding checks what the
// schema cannot: a protocol range that meets this build's (consensus/protocol.hpp), a body, zxids that are not negative and entries in
// ascending order. Anything else is an error naming the problem, never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "consensus/peer.pb.h"
#include "consensus/protocol.hpp"

namespace warden::consensus {

// The range a message's sender speaks: PeerMessage.version is its oldest, .speaks its newest
// (none from a build before it: its version alone).
inline ProtocolRange sender_range(const pb::PeerMessage& m) {
  return {m.version(), m.speaks() ? m.speaks() : m.version()};
}
// Empty when a member speaking `mine` takes messages from a sender that speaks `theirs` (the
// ranges meet); else the line that refuses it, naming both.
std::string protocol_refusal(ProtocolRange theirs, ProtocolRange mine);
// Stamps `m` with the range `r` (the oldest in version, the newest in speaks).
void stamp_range(pb::PeerMessage& m, ProtocolRange r);
// The largest message a peer accepts, and the transport's frame and queue limit: a message is
// at most max_message_bytes of entries (or one entry, at most jute.maxbuffer), and a streamed
// sync's frames are a megabyte; only the simulator's inline snapshots come near it.
constexpr size_t max_peer_message_bytes = 64u << 20;

struct DecodedPeerMessage {
  std::optional<pb::PeerMessage> message;
  std::string error;  // set when message is empty
};

std::string encode_peer_message(const pb::PeerMessage& m);
DecodedPeerMessage decode_peer_message(std::string_view bytes);

}  // namespace warden::consensus
