// How the configuration reads and shows a value's text: trimmed, as a number, a boolean or an
// address, and shown back in a message without letting the bytes garble the line.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

namespace warden::server {

// Text from a file as a message may show it: at most 40 bytes, each byte outside printable
// ASCII as \xNN, so a NUL or a terminal escape cannot cut or garble the line.
std::string shown(std::string_view s);

// The key of a zoo.cfg line ("key = value"), blanks around it dropped, as parse_config reads
// it; the whole line, trimmed, when it has no '='.
std::string_view config_key_of(std::string_view line);

namespace config_text {

// Without the blanks (spaces, tabs, carriage returns) at either end.
std::string_view trim(std::string_view s);

// The whole of `v` as a number; nothing for an empty value or anything after the digits.
template <class T>
std::optional<T> number(std::string_view v) {
  T out{};
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty()) return std::nullopt;
  return out;
}

// true/yes or false/no, as ZooKeeper's boolean keys take them; false for anything else.
bool boolean(std::string_view v, bool& out);

// Warden listens on addresses, not names: a name would need a resolver at start.
bool is_ip_address(const std::string& s);

// 0.0.0.0 or :: (any spelling): every address of the machine.
bool is_any_address(const std::string& s);

// The whole of the regular file `path` into `text`; false when it cannot be opened or read, or
// is no regular file (a directory's read fails inside the stream, which must not end the
// process: a configuration naming one gets its "cannot be read" message).
bool read_file(const std::string& path, std::string& text);

}  // namespace config_text
}  // namespace warden::server
