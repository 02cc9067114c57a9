// Wall-clock times as text, in UTC, for tools and the four-letter words.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

namespace warden::server {

// `ms` since the Unix epoch through strftime's `format`, in UTC.
inline std::string utc_text(int64_t ms, const char* format) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char b[64];
  std::strftime(b, sizeof b, format, &tm);
  return b;
}

}  // namespace warden::server
