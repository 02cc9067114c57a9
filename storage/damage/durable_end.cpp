#include "storage/damage/durable_end.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "storage/damage/set_aside.hpp"
#include "storage/rocksdb_log_store.hpp"

namespace warden::storage {

namespace {
constexpr char magic[8] = {'W', 'D', 'E', 'N', 'D', '0', '0', '1'};

uint32_t crc_of(const char* p, size_t n) {
  return static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(p), static_cast<uInt>(n)));
}

std::string path_in(const std::string& dir) { return (std::filesystem::path(dir) / DurableEnd::file_name).string(); }
}  // namespace

std::string DurableEnd::encode(Zxid z) {
  std::string b(record_bytes, '\0');
  std::memcpy(b.data(), magic, sizeof magic);
  auto u = static_cast<uint64_t>(z);
  for (int i = 0; i < 8; ++i) b[static_cast<size_t>(8 + i)] = static_cast<char>(u >> (56 - 8 * i));
  uint32_t c = crc_of(b.data(), 16);
  for (int i = 0; i < 4; ++i) b[static_cast<size_t>(16 + i)] = static_cast<char>(c >> (24 - 8 * i));
  return b;
}

std::optional<Zxid> DurableEnd::decode(const std::string& bytes) {
  if (bytes.size() < record_bytes || std::memcmp(bytes.data(), magic, sizeof magic) != 0) return std::nullopt;
  uint32_t c = 0;
  for (int i = 0; i < 4; ++i) c = (c << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(16 + i)]);
  if (c != crc_of(bytes.data(), 16)) return std::nullopt;
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(8 + i)]);
  if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<Zxid>(u);
}

DurableEnd::DurableEnd(const std::string& dir) : path_(path_in(dir)) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw StorageError("cannot open " + path_ + ": " + std::strerror(errno));
  std::string bytes(record_bytes, '\0');
  ssize_t n = ::pread(fd_, bytes.data(), bytes.size(), 0);
  if (n < 0) {
    spdlog::warn("cannot read {} ({}): how far the log was durable is not known", path_, std::strerror(errno));
    return;
  }
  bytes.resize(static_cast<size_t>(n));
  recorded_ = decode(bytes);
  if (recorded_) {
    written_ = *recorded_;
  } else if (n > 0) {
    spdlog::warn("{} holds no whole record that checks ({} bytes): how far the log was durable is not known; "
                 "it is written afresh", path_, n);
  }
}

DurableEnd::~DurableEnd() {
  if (fd_ >= 0) ::close(fd_);
}

bool DurableEnd::write(Zxid z) {
  std::string b = encode(z);
  ssize_t n = ::pwrite(fd_, b.data(), b.size(), 0);
  if (n != static_cast<ssize_t>(b.size())) return false;
  written_ = z;
  return true;
}

void DurableEnd::advance(Zxid z) {
  std::lock_guard<std::mutex> hold(mutex_);
  if (z <= written_) return;
  if (!write(z) && !warned_) {
    warned_ = true;  // once: a disk that fails this fails the log's writes too, which say so
    spdlog::warn("cannot write {} ({}): a later open cannot tell a lost log tail from a torn one", path_,
                 std::strerror(errno));
  }
}

void DurableEnd::lower_to(Zxid z) {
  std::lock_guard<std::mutex> hold(mutex_);
  if (z >= written_) return;
  if (!write(z) || ::fdatasync(fd_) != 0)
    throw StorageError("cannot write " + path_ + " before cutting the log back to zxid " + std::to_string(z) + ": " +
                       std::strerror(errno));
}

std::optional<Zxid> DurableEnd::read(const std::string& dir) {
  int fd = ::open(path_in(dir).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string bytes(record_bytes, '\0');
  ssize_t n = ::pread(fd, bytes.data(), bytes.size(), 0);
  ::close(fd);
  if (n < 0) return std::nullopt;
  bytes.resize(static_cast<size_t>(n));
  return decode(bytes);
}

void DurableEnd::forget(const std::string& dir) {
  std::string p = path_in(dir);
  std::error_code ec;
  if (std::filesystem::remove(p, ec)) sync_directory_of(p);
  if (ec) throw StorageError("cannot remove " + p + ": " + ec.message());
}

}  // namespace warden::storage
