// Where and how the server logs: Warden's own zoo.cfg keys (ZooKeeper configures this in
// logback.xml, which Warden does not read) and the same on the command line.
//   warden.log.level        trace, debug, info (default), warn, error or off  (--log-level)
//   warden.log.file         a file instead of stderr                          (--log-file)
//   warden.log.maxFileSize  rotate at this size: bytes, or with KB, MB or GB (default 100MB)
//   warden.log.maxFiles     rotated files kept besides the live one (default 10)
//   warden.log.format       text (default) or json: one JSON object a line  (--log-format)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warden::server {

struct LogSettings {
  std::string level = "info";
  std::string file;
  uint64_t max_file_bytes = 100ull << 20;
  int32_t max_files = 10;
  bool json = false;
};

// Reads one warden.log.* key (the `warden.log.` prefix taken off: "level", "file", ...).
// nullopt: taken; else why the value is refused. Sets *known to false for an unknown name.
std::optional<std::string> read_log_key(std::string_view name, std::string_view value, LogSettings& s, bool* known);

// Makes the settings the default logger's: level, sink (stderr, or the file rotated by size),
// format. Throws std::runtime_error naming the file when it cannot be opened.
void apply_logging(const LogSettings& s);

// One JSON string's contents: quotes, backslashes and control characters escaped (the log
// message of a JSON line).
void append_json_escaped(std::string& out, std::string_view text);

}  // namespace warden::server
