#include "server/config/text.hpp"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace warden::server {

std::string shown(std::string_view s) {
  std::string out;
  for (unsigned char ch : s.substr(0, 40)) {
    if (ch >= 0x20 && ch < 0x7f) {
      out += static_cast<char>(ch);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    }
  }
  return s.size() > 40 ? out + "..." : out;
}

std::string_view config_key_of(std::string_view line) { return config_text::trim(line.substr(0, line.find('='))); }

namespace config_text {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool boolean(std::string_view v, bool& out) {
  if (v == "true" || v == "yes") {
    out = true;
    return true;
  }
  if (v == "false" || v == "no") {
    out = false;
    return true;
  }
  return false;
}

bool is_ip_address(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

bool is_any_address(const std::string& s) {
  unsigned char buf[16] = {};
  static const unsigned char zero[16] = {};
  if (inet_pton(AF_INET, s.c_str(), buf) == 1) return std::memcmp(buf, zero, 4) == 0;
  return inet_pton(AF_INET6, s.c_str(), buf) == 1 && std::memcmp(buf, zero, 16) == 0;
}

bool read_file(const std::string& path, std::string& text) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return false;
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return false;
  text = ss.str();
  return true;
}

}  // namespace config_text
}  // namespace warden::server
