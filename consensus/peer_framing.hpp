// The bytes of a connection between members, apart from its sockets (peer_transport.cpp holds
// those): a connection opens with a hello ("WRDP", the protocol version, the sender's id, the id
// it meant to reach, big-endian), then carries frames. A frame is a 4-byte big-endian length and
// that many bytes of one message (length 0: a keepalive); a length with its top bit set is an
// auth frame instead (SASL between members): a status byte and a token or a reason. Pure, so
// that the fuzzer (tests/fuzz/peer_framing_fuzzer.cpp) reaches what a stranger's bytes reach.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warden::consensus::peer_framing {

inline constexpr char magic[4] = {'W', 'R', 'D', 'P'};
inline constexpr size_t hello_size = 4 + 4 + 8 + 8;
// The first byte of a TLS ClientHello: a member that speaks TLS to one that does not.
inline constexpr unsigned char tls_record_handshake = 0x16;

struct Hello {
  bool magic = false;  // it opens with "WRDP"
  uint32_t version = 0;
  int64_t sender = 0, target = 0;
};
std::string hello(uint32_t version, int64_t sender, int64_t target);
// The hello at the front of `in`; nothing until hello_size bytes are there. Its fields are read
// whatever the magic says: the receiver words its refusal.
std::optional<Hello> read_hello(std::string_view in);

inline constexpr uint32_t auth_bit = 0x80000000u;
inline constexpr size_t max_auth_frame = 64 * 1024;  // a Kerberos token is a few KiB
enum AuthStatus : unsigned char { auth_token = 0, auth_success = 1, auth_refused = 2, auth_not_taken = 3 };
std::string auth_frame(AuthStatus status, std::string_view body);
// Appends a message frame (the length, then `body`) to `out`.
void append_frame(std::string& out, std::string_view body);

struct Frame {
  enum class Kind {
    none,             // fewer than 4 bytes: no length yet
    message,          // a message frame's length is in (its body may not be)
    auth,             // an auth frame's length is in (its body may not be)
    bad_auth_length,  // an auth frame of 0 bytes, or above max_auth_frame
    too_long,         // a message frame above the limit given
  };
  Kind kind = Kind::none;
  size_t length = 0;       // as declared, the auth bit taken off
  bool whole = false;      // the body is in: `body` and `consumed` are set
  std::string_view body;   // a message's bytes; an auth frame's status byte and the rest
  size_t consumed = 0;     // bytes of `in` the frame takes, its length included
};
// The frame at the front of `in`, a message frame refused above `message_limit` bytes. Its kind
// is known from the first 4 bytes, before its body arrives, so a sender cannot make the
// receiver hold more than a limit's worth.
Frame next_frame(std::string_view in, size_t message_limit);

}  // namespace warden::consensus::peer_framing
