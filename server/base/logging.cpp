#include "server/base/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <stdexcept>

namespace warden::server {

namespace {
std::optional<spdlog::level::level_enum> level_of(std::string_view v) {
  if (v == "trace") return spdlog::level::trace;
  if (v == "debug") return spdlog::level::debug;
  if (v == "info") return spdlog::level::info;
  if (v == "warn" || v == "warning") return spdlog::level::warn;
  if (v == "error") return spdlog::level::err;
  if (v == "off") return spdlog::level::off;
  return std::nullopt;
}

// A size in bytes, or with a KB, MB or GB suffix (1024-based, as logback's maxFileSize).
std::optional<uint64_t> size_of(std::string_view v) {
  uint64_t unit = 1;
  for (auto [suffix, u] : {std::pair{"KB", 1ull << 10}, {"MB", 1ull << 20}, {"GB", 1ull << 30}}) {
    std::string_view sv(suffix);
    if (v.size() > sv.size() && v.substr(v.size() - sv.size()) == sv) {
      unit = u;
      v.remove_suffix(sv.size());
      break;
    }
  }
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n == 0 || n > (1ull << 50) / unit) return std::nullopt;
  return n * unit;
}

// {"ts":"2026-11-26T03:33:18.123Z","level":"info","msg":"..."}
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char ts[96];  // room for any int the format could print (GCC checks -Wformat-truncation)
    std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
    std::string line = "{\"ts\":\"";
    line += ts;
    line += "\",\"level\":\"";
    auto level = spdlog::level::to_string_view(msg.level);
    line.append(level.data(), level.size());
    line += "\",\"msg\":\"";
    append_json_escaped(line, std::string_view(msg.payload.data(), msg.payload.size()));
    line += "\"}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};
}  // namespace

void append_json_escaped(std::string& out, std::string_view text) {
  for (unsigned char ch : text) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (ch < 0x20 || ch == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", ch);
          out += buf;
        } else {
          out += static_cast<char>(ch);  // UTF-8 passes through; JSON takes it as it is
        }
    }
  }
}

std::optional<std::string> read_log_key(std::string_view name, std::string_view value, LogSettings& s, bool* known) {
  *known = true;
  if (name == "level") {
    if (!level_of(value)) return std::string("must be trace, debug, info, warn, error or off");
    s.level = std::string(value);
  } else if (name == "file") {
    if (value.empty()) return std::string("names no file");
    s.file = std::string(value);
  } else if (name == "maxFileSize") {
    auto n = size_of(value);
    if (!n) return std::string("must be a size: bytes, or a number with KB, MB or GB");
    s.max_file_bytes = *n;
  } else if (name == "maxFiles") {
    int32_t n = -1;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || p != value.data() + value.size() || n < 0 || n > 10000)
      return std::string("must be a whole number from 0 to 10000");
    s.max_files = n;
  } else if (name == "format") {
    if (value != "text" && value != "json") return std::string("must be text or json");
    s.json = value == "json";
  } else {
    *known = false;
  }
  return std::nullopt;
}

void apply_logging(const LogSettings& s) {
  spdlog::drop("warden-log");
  std::shared_ptr<spdlog::logger> logger;
  if (s.file.empty()) {
    logger = spdlog::stderr_color_mt("warden-log");
  } else {
    try {
      auto sink = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(s.file, s.max_file_bytes,
                                                                         static_cast<size_t>(s.max_files));
      logger = std::make_shared<spdlog::logger>("warden-log", sink);
    } catch (const spdlog::spdlog_ex& e) {
      throw std::runtime_error("warden.log.file " + s.file + " cannot be written: " + e.what());
    }
  }
  if (s.json)
    logger->set_formatter(std::make_unique<JsonFormatter>());
  else
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  logger->set_level(*level_of(s.level));
  logger->flush_on(spdlog::level::info);  // a line an operator tails is there at once
  spdlog::set_default_logger(logger);
}

}  // namespace warden::server
