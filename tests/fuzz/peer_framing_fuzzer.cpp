// libFuzzer target over the bytes of a connection between members, as its receiving side reads
// them (consensus/peer_framing.hpp): a hello, then frames, message and auth alike, with a frame
// limit the first byte picks (a member's, or a stranger's smaller one). Every frame read is
// checked against what its 4 bytes declared, and encoded again it must give back the bytes it
// was read from. The corpus: hellos, keepalives, messages and SASL exchanges as members write
// them, and garbage. Any crash, sanitizer report, failed check or hang is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "consensus/peer_framing.hpp"

using namespace warden::consensus::peer_framing;

namespace {
void require(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto h = read_hello(in);
  require(h.has_value() == (in.size() >= hello_size));
  if (!h) return 0;
  std::string again = hello(h->version, h->sender, h->target);
  require(again.size() == hello_size && h->magic == (in.substr(0, 4) == std::string_view(magic, 4)));
  require(again.substr(4) == in.substr(4, hello_size - 4));
  size_t limit = static_cast<uint8_t>(in[0]) % 2 ? 1 << 20 : 64 * 1024;
  std::string_view rest = in.substr(hello_size);
  for (;;) {
    Frame f = next_frame(rest, limit);
    if (f.kind == Frame::Kind::none) {
      require(rest.size() < 4);
      break;
    }
    if (f.kind == Frame::Kind::bad_auth_length) {
      require(f.length == 0 || f.length > max_auth_frame);
      break;
    }
    if (f.kind == Frame::Kind::too_long) {
      require(f.length > limit && !f.whole);
      break;
    }
    if (!f.whole) {
      require(rest.size() < 4 + f.length);
      break;
    }
    require(f.consumed == 4 + f.length && f.consumed <= rest.size() && f.body.size() == f.length);
    require(f.body.data() == rest.data() + 4);
    std::string encoded;
    if (f.kind == Frame::Kind::auth) {
      require(f.length >= 1 && f.length <= max_auth_frame);
      encoded = auth_frame(static_cast<AuthStatus>(f.body[0]), f.body.substr(1));
    } else {
      require(f.length <= limit);
      append_frame(encoded, f.body);
    }
    require(encoded == rest.substr(0, f.consumed));
    rest.remove_prefix(f.consumed);
  }
  return 0;
}
