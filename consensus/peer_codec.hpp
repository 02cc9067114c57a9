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
constexpr uint32_t protocol_version = 1;
// The largest message a peer accepts (a Sync carries at most max_entries_per_message entries
// or one snapshot; larger snapshots are for the transport to chunk).
constexpr size_t max_peer_message_bytes = 256u << 20;

struct DecodedPeerMessage {
  std::optional<pb::PeerMessage> message;
  std::string error;  // set when message is empty
};

std::string encode_peer_message(const pb::PeerMessage& m);
DecodedPeerMessage decode_peer_message(std::string_view bytes);

}  // namespace warden::consensus
