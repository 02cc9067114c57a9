// libFuzzer target over the peer port's decoder and the Zab core behind it. An input is a run of
// records [sender id: 1 byte][length: 2 bytes big-endian][bytes]; every record goes through
// decode_peer_message, and what decodes is encoded again (it must decode to the same message)
// and handed to a ZabPeer of a 3-voter, 1-observer ensemble, with a tick and a durability report
// between records. The corpus is real traffic captured from the simulator (warden-sim --seed S
// --capture DIR), protocol version 2. Any crash, sanitizer report, leak or hang is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "consensus/memory_log.hpp"
#include "consensus/peer_codec.hpp"
#include "consensus/zab_peer.hpp"

using namespace warden::consensus;


extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  MemoryLog log;  // a few entries, as a follower or leader might hold
  log.log = {{0x100000001, "a"}, {0x100000002, "b"}, {0x200000001, "c"}};
  PeerConfig cfg;
  cfg.id = 1;
  cfg.ensemble.voters = {1, 2, 3};
  cfg.ensemble.observers = {4};
  cfg.stream_sync = size % 2 == 1;  // both kinds of sync: inline, and streamed by a host
  ZabPeer peer(cfg, log, Epochs{2, 2}, 0x100000002);
  uint64_t n = 0;
  while (in.size() >= 3) {
    auto sender = static_cast<PeerId>(static_cast<uint8_t>(in[0]) % 6);  // 0 and 5: not members
    size_t len = (static_cast<uint8_t>(in[1]) << 8) | static_cast<uint8_t>(in[2]);
    in.remove_prefix(3);
    len = std::min(len, in.size());
    auto decoded = decode_peer_message(in.substr(0, len));
    in.remove_prefix(len);
    if (decoded.message) {
      auto again = decode_peer_message(encode_peer_message(*decoded.message));
      if (!again.message || again.message->SerializeAsString() != decoded.message->SerializeAsString())
        __builtin_trap();  // a message that does not survive its own encoding
      peer.receive(sender, *decoded.message);
    } else if (decoded.error.empty()) {
      __builtin_trap();  // neither a message nor a reason
    }
    peer.tick(++n);
    peer.durable(log.last_zxid());
    (void)peer.ready();
    if (peer.role() == Role::leading) (void)peer.propose("fuzz");
  }
  return 0;
}
