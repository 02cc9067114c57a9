// Peer messages on the wire: a PeerMessage (peer.proto) per frame. Decoding checks what the
// schema cannot: the protocol version, a body, zxids that are not negative and entries in
// ascending order. Anything else is an error naming the problem, never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "consensus/peer.pb.h"

namespace warden::consensus {

// Bumped whenever a message changes meaning; a peer speaking another version is refused.
// 2: syncs are streamed (Sync.streamed, SyncData, SnapChunk), which a member of version 1 would
// take for an empty sync.
constexpr uint32_t protocol_version = 2;
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
