#include "server/state/acl.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <optional>

namespace warden::server {

std::string sha1(std::string_view data) {
  uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  std::string msg(data);
  uint64_t bit_len = static_cast<uint64_t>(data.size()) * 8;
  msg.push_back(static_cast<char>(0x80));
  while (msg.size() % 64 != 56) msg.push_back(0);
  for (int i = 7; i >= 0; --i) msg.push_back(static_cast<char>(bit_len >> (i * 8)));
  auto rol = [](uint32_t v, int n) { return (v << n) | (v >> (32 - n)); };
  for (size_t off = 0; off < msg.size(); off += 64) {
    uint32_t w[80];
    for (int i = 0; i < 16; ++i) {
      const auto* p = reinterpret_cast<const unsigned char*>(msg.data() + off + 4 * i);
      w[i] = (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
    }
    for (int i = 16; i < 80; ++i) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; ++i) {
      uint32_t f, k;
      if (i < 20) {
        f = (b & c) | (~b & d);
        k = 0x5A827999;
      } else if (i < 40) {
        f = b ^ c ^ d;
        k = 0x6ED9EBA1;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8F1BBCDC;
      } else {
        f = b ^ c ^ d;
        k = 0xCA62C1D6;
      }
      uint32_t t = rol(a, 5) + f + e + k + w[i];
      e = d;
      d = c;
      c = rol(b, 30);
      b = a;
      a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
  }
  std::string out;
  for (uint32_t v : h)
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>(v >> s));
  return out;
}

std::string base64(std::string_view data) {
  static constexpr char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    uint32_t v = (uint8_t(data[i]) << 16) | (uint8_t(data[i + 1]) << 8) | uint8_t(data[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(table[(v >> s) & 63]);
  }
  if (i < data.size()) {
    uint32_t v = uint8_t(data[i]) << 16;
    if (i + 1 < data.size()) v |= uint8_t(data[i + 1]) << 8;
    out.push_back(table[(v >> 18) & 63]);
    out.push_back(table[(v >> 12) & 63]);
    out.push_back(i + 1 < data.size() ? table[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string digest_id(std::string_view user_colon_password) {
  std::string_view user = user_colon_password.substr(0, user_colon_password.find(':'));
  return std::string(user) + ":" + base64(sha1(user_colon_password));
}

namespace {
// Java's String.hashCode: over the UTF-16 code units of the text. A byte that does not start
// a whole UTF-8 sequence counts as one U+FFFD (Java's decoder may fold some malformed runs into
// fewer; such ids may then sit in another place of the order, nothing else).
int32_t java_string_hash(std::string_view utf8) {
  uint32_t h = 0;
  auto unit = [&](uint32_t u) { h = 31 * h + u; };
  for (size_t i = 0; i < utf8.size();) {
    auto b = static_cast<unsigned char>(utf8[i]);
    int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
    uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1f) : len == 3 ? (b & 0x0f) : (b & 0x07);
    bool ok = len > 0 && i + len <= utf8.size();
    for (int k = 1; ok && k < len; ++k) {
      auto c = static_cast<unsigned char>(utf8[i + k]);
      ok = (c & 0xc0) == 0x80;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (!ok) {
      unit(0xfffd);
      ++i;
      continue;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      unit(0xd800 + (cp >> 10));
      unit(0xdc00 + (cp & 0x3ff));
    } else {
      unit(cp);
    }
    i += len;
  }
  return static_cast<int32_t>(h);
}

// The bin of a 16-bin ConcurrentHashMap that holds `id` (the Id record's generated hashCode,
// spread as the map does).
int chm_bin(const wire::Id& id) {
  uint32_t h = 17;
  h = 37 * h + static_cast<uint32_t>(java_string_hash(id.scheme));
  h = 37 * h + static_cast<uint32_t>(java_string_hash(id.id));
  return static_cast<int>(((h ^ (h >> 16)) & 0x7fffffff) & 15);
}
}  // namespace

void add_auth_id(AuthIds& ids, wire::Id id) {
  if (std::find(ids.begin(), ids.end(), id) != ids.end()) return;
  int bin = chm_bin(id);
  auto at = std::find_if(ids.begin(), ids.end(), [&](const wire::Id& i) { return chm_bin(i) > bin; });
  ids.insert(at, std::move(id));
}

namespace {
struct IpPrefix {
  int family = 0;
  std::array<unsigned char, 16> bytes{};
  int bits = 0;
};

std::optional<IpPrefix> parse_ip(std::string_view text, bool allow_prefix) {
  IpPrefix p;
  std::string_view addr = text;
  std::optional<int> bits;
  if (auto slash = text.find('/'); slash != std::string_view::npos) {
    if (!allow_prefix) return std::nullopt;
    addr = text.substr(0, slash);
    std::string_view b = text.substr(slash + 1);
    int v = -1;
    auto [ptr, ec] = std::from_chars(b.data(), b.data() + b.size(), v);
    if (ec != std::errc() || ptr != b.data() + b.size() || b.empty()) return std::nullopt;
    bits = v;
  }
  std::string a(addr);
  if (inet_pton(AF_INET, a.c_str(), p.bytes.data()) == 1) {
    p.family = AF_INET;
    p.bits = bits.value_or(32);
    if (p.bits < 0 || p.bits > 32) return std::nullopt;
  } else if (inet_pton(AF_INET6, a.c_str(), p.bytes.data()) == 1) {
    p.family = AF_INET6;
    p.bits = bits.value_or(128);
    if (p.bits < 0 || p.bits > 128) return std::nullopt;
  } else {
    return std::nullopt;
  }
  return p;
}
}  // namespace

bool valid_ip_id(std::string_view id) { return parse_ip(id, true).has_value(); }

bool ip_matches(std::string_view client_address, std::string_view acl_id) {
  auto want = parse_ip(acl_id, true);
  auto have = parse_ip(client_address, false);
  if (!want || !have || want->family != have->family) return false;
  for (int bit = 0; bit < want->bits; ++bit) {
    int byte = bit / 8, mask = 0x80 >> (bit % 8);
    if ((want->bytes[byte] & mask) != (have->bytes[byte] & mask)) return false;
  }
  return true;
}

namespace {
bool id_matches(const wire::Id& acl_id, const wire::Id& caller) {
  if (acl_id.scheme != caller.scheme) return false;
  if (acl_id.scheme == "digest") return acl_id.id == caller.id;
  if (acl_id.scheme == "ip") return ip_matches(caller.id, acl_id.id);
  // A certificate's subject, a SASL authorization id: equal, as ZooKeeper's providers match them.
  if (acl_id.scheme == "x509" || acl_id.scheme == "sasl") return acl_id.id == caller.id;
  return false;
}

bool valid_digest_id(std::string_view id) {
  // ZooKeeper splits on ':' and wants exactly two non-empty-at-the-end parts.
  auto colon = id.find(':');
  return colon != std::string_view::npos && colon + 1 < id.size() &&
         id.find(':', colon + 1) == std::string_view::npos;
}
}  // namespace

bool acl_allows(const wire::AclList& acl, int32_t perm, const AuthIds& ids) {
  if (acl.empty()) return true;
  for (const auto& id : ids)
    if (id.scheme == "super") return true;
  for (const auto& a : acl) {
    if ((a.perms & perm) == 0) continue;
    if (a.id.scheme == "world" && a.id.id == "anyone") return true;
    for (const auto& id : ids)
      if (id_matches(a.id, id)) return true;
  }
  return false;
}

std::vector<wire::Acl> fixup_acl(const wire::AclList& acl, const AuthIds& ids, bool sasl_scheme) {
  std::vector<wire::Acl> out;
  auto add = [&](const wire::Acl& a) {
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  };
  for (const auto& a : acl) {
    const auto& scheme = a.id.scheme;
    if (scheme == "world" && a.id.id == "anyone") {
      add(a);
    } else if (scheme == "auth") {
      bool any = false;
      for (const auto& id : ids) {
        // Ids of the schemes ZooKeeper calls authenticated: digest, x509 and sasl (not ip).
        if (id.scheme != "digest" && id.scheme != "x509" && !(sasl_scheme && id.scheme == "sasl")) continue;
        add(wire::Acl{a.perms, id});
        any = true;
      }
      if (!any) return {};
    } else if ((scheme == "digest" && valid_digest_id(a.id.id)) ||
               (scheme == "ip" && valid_ip_id(a.id.id)) || ((scheme == "x509" || (sasl_scheme && scheme == "sasl")) && !a.id.id.empty())) {
      add(a);
    } else {
      return {};
    }
  }
  return out;
}

}  // namespace warden::server
