#include "storage/damage/set_aside.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "storage/rocksdb_log_store.hpp"

namespace warden::storage {

namespace fs = std::filesystem;

void sync_directory_of(const std::string& path) {
  std::string dir = fs::path(path).parent_path().string();
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw StorageError("cannot open " + dir + " to sync it: " + std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) throw StorageError("cannot sync " + dir + ": " + std::strerror(err));
}

std::string set_aside_damaged(const std::string& dir) {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  std::string base = dir + ".damaged-" + stamp, to = base;
  std::error_code ec;
  for (int n = 2; fs::exists(to, ec); ++n) to = base + "-" + std::to_string(n);
  fs::rename(dir, to, ec);
  if (ec) throw StorageError("cannot set the damaged store " + dir + " aside as " + to + ": " + ec.message());
  sync_directory_of(to);
  return to;
}

}  // namespace warden::storage
