#include "consensus/peer_framing.hpp"

#include <algorithm>

namespace warden::consensus::peer_framing {

namespace {
void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_be(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
}  // namespace

std::string hello(uint32_t version, int64_t sender, int64_t target) {
  std::string out(magic, 4);
  put_be(out, version, 4);
  put_be(out, static_cast<uint64_t>(sender), 8);
  put_be(out, static_cast<uint64_t>(target), 8);
  return out;
}

std::optional<Hello> read_hello(std::string_view in) {
  if (in.size() < hello_size) return std::nullopt;
  Hello h;
  h.magic = std::equal(magic, magic + 4, in.data());
  h.version = static_cast<uint32_t>(get_be(in.data() + 4, 4));
  h.sender = static_cast<int64_t>(get_be(in.data() + 8, 8));
  h.target = static_cast<int64_t>(get_be(in.data() + 16, 8));
  return h;
}

std::string auth_frame(AuthStatus status, std::string_view body) {
  std::string f;
  put_be(f, auth_bit | static_cast<uint32_t>(body.size() + 1), 4);
  f.push_back(static_cast<char>(status));
  f.append(body);
  return f;
}

void append_frame(std::string& out, std::string_view body) {
  put_be(out, static_cast<uint32_t>(body.size()), 4);
  out.append(body);
}

Frame next_frame(std::string_view in, size_t message_limit) {
  Frame f;
  if (in.size() < 4) return f;
  auto declared = static_cast<uint32_t>(get_be(in.data(), 4));
  f.length = declared & ~auth_bit;
  if (declared & auth_bit) {
    f.kind = f.length == 0 || f.length > max_auth_frame ? Frame::Kind::bad_auth_length : Frame::Kind::auth;
  } else {
    f.kind = f.length > message_limit ? Frame::Kind::too_long : Frame::Kind::message;
  }
  bool takes = f.kind == Frame::Kind::auth || f.kind == Frame::Kind::message;
  if (takes && in.size() - 4 >= f.length) {
    f.whole = true;
    f.body = in.substr(4, f.length);
    f.consumed = 4 + f.length;
  }
  return f;
}

}  // namespace warden::consensus::peer_framing
