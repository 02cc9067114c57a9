#include "server/secrets/redaction.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace warden::server::secrets {

namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}
}  // namespace

bool secret_key(std::string_view key) {
  // Words that, anywhere in a key, make its value a secret. "superdigest" is the digest of the
  // super user's password, which is enough to log in as super with a crafted digest scheme
  // client (and to brute-force the password offline).
  static constexpr std::array<std::string_view, 7> words{"password", "passwd", "passphrase", "secret",
                                                         "superdigest", "credential", "keypass"};
  std::string k = lower(trim(key));
  if (k.rfind("-d", 0) == 0) k.erase(0, 2);  // a launcher flag, -Dkey
  for (auto w : words)
    if (k.find(w) != std::string::npos) return true;
  // A JAAS section's user_NAME option holds NAME's password (DigestLoginModule's server side).
  return k.rfind("user_", 0) == 0;
}

std::string shown_value(std::string_view key, std::string_view value) {
  return secret_key(key) ? std::string(mask) : std::string(value);
}

std::string redacted_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end == std::string_view::npos ? text.size() : end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    // A commented-out line is masked too: it is often the previous password.
    size_t eq = line.find('=');
    if (eq != std::string_view::npos && secret_key(line.substr(0, eq))) {
      out.append(line.substr(0, eq + 1));
      out.append(mask);
    } else {
      out.append(line);
    }
    if (end != std::string_view::npos) out += '\n';
  }
  return out;
}

}  // namespace warden::server::secrets
