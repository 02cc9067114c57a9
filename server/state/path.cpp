#include "server/state/path.hpp"

#include <cstdint>
#include <string>

namespace warden::server {

namespace {
// Decodes one UTF-8 code point at s[i], advancing i; returns 0xFFFD for malformed input, which
// is what Java's decoder (ZooKeeper's view of the path) would see, and which ZooKeeper refuses.
uint32_t next_code_point(std::string_view s, size_t& i) {
  auto b = static_cast<unsigned char>(s[i++]);
  if (b < 0x80) return b;
  int extra = (b >= 0xF0) ? 3 : (b >= 0xE0) ? 2 : (b >= 0xC0) ? 1 : -1;
  if (extra < 0 || b >= 0xF8) return 0xFFFD;
  uint32_t cp = b & (0x3F >> extra);
  for (int k = 0; k < extra; ++k) {
    if (i >= s.size()) return 0xFFFD;
    auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80) return 0xFFFD;
    cp = (cp << 6) | (c & 0x3F);
    ++i;
  }
  return cp;
}

// The characters ZooKeeper refuses, as UTF-16 units: controls, the C1 block, surrogates and
// the private-use area, specials. A code point above U+FFFF is a surrogate pair in Java.
bool refused_char(uint32_t c) {
  return (c >= 0x01 && c <= 0x1F) || (c >= 0x7F && c <= 0x9F) || (c >= 0xD800 && c <= 0xF8FF) ||
         (c >= 0xFFF0 && c <= 0xFFFF) || c > 0xFFFF;
}
}  // namespace

std::string path_problem(std::string_view path) {
  if (path.empty()) return "Path length must be > 0";
  if (path[0] != '/') return "Path must start with / character";
  if (path.size() == 1) return {};
  if (path.back() == '/') return "Path must not end with / character";
  size_t i = 1;
  while (i < path.size()) {
    size_t at = i;
    if (path[at] == '\0') return "null character not allowed @" + std::to_string(at);
    if (path[at] == '/' && path[at - 1] == '/') return "empty node name specified @" + std::to_string(at);
    if (path[at] == '.' && path[at - 1] == '/') {
      size_t end = path.find('/', at);
      std::string_view name = path.substr(at, end == std::string_view::npos ? end : end - at);
      if (name == "." || name == "..") return "relative paths not allowed @" + std::to_string(at);
    }
    if (refused_char(next_code_point(path, i))) return "invalid character @" + std::to_string(at);
  }
  return {};
}

std::string_view parent_path(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == 0 ? path.substr(0, 1) : path.substr(0, slash);
}

std::string_view node_name(std::string_view path) { return path.substr(path.rfind('/') + 1); }

}  // namespace warden::server
