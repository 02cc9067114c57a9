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
constexpr char magic_v1[8] = {'W', 'D', 'E', 'N', 'D', '0', '0', '1'};  // 24 bytes: no epochs
constexpr char magic[8] = {'W', 'D', 'E', 'N', 'D', '0', '0', '2'};
constexpr size_t v1_bytes = 24;

void put_be(std::string& b, size_t at, uint64_t x, int n) {
  for (int i = 0; i < n; ++i) b[at + static_cast<size_t>(i)] = static_cast<char>(x >> (8 * (n - 1 - i)));
}

uint64_t get_be(const std::string& b, size_t at, int n) {
  uint64_t x = 0;
  for (int i = 0; i < n; ++i) x = (x << 8) | static_cast<unsigned char>(b[at + static_cast<size_t>(i)]);
  return x;
}

uint32_t crc_of(const char* p, size_t n) {
  return static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(p), static_cast<uInt>(n)));
}

std::string path_in(const std::string& dir) { return (std::filesystem::path(dir) / DurableEnd::file_name).string(); }
}  // namespace

std::string DurableEnd::encode(Zxid z, Epochs e) {
  std::string b(record_bytes, '\0');
  std::memcpy(b.data(), magic, sizeof magic);
  put_be(b, 8, static_cast<uint64_t>(z), 8);
  put_be(b, 16, e.accepted, 4);
  put_be(b, 20, e.current, 4);
  put_be(b, 24, crc_of(b.data(), 24), 4);
  return b;
}

std::optional<DurableEnd::Record> DurableEnd::decode_record(const std::string& bytes) {
  bool v1 = bytes.size() >= v1_bytes && std::memcmp(bytes.data(), magic_v1, sizeof magic_v1) == 0;
  bool v2 = bytes.size() >= record_bytes && std::memcmp(bytes.data(), magic, sizeof magic) == 0;
  if (!v1 && !v2) return std::nullopt;
  size_t checked = v1 ? 16 : 24;
  if (get_be(bytes, checked, 4) != crc_of(bytes.data(), checked)) return std::nullopt;
  uint64_t u = get_be(bytes, 8, 8);
  if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  Record r{static_cast<Zxid>(u), std::nullopt};
  if (v2) r.epochs = Epochs{static_cast<uint32_t>(get_be(bytes, 16, 4)), static_cast<uint32_t>(get_be(bytes, 20, 4))};
  return r;
}

std::optional<Zxid> DurableEnd::decode(const std::string& bytes) {
  auto r = decode_record(bytes);
  if (!r) return std::nullopt;
  return r->zxid;
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
  if (auto r = decode_record(bytes)) {
    recorded_ = r->zxid;
    recorded_epochs_ = r->epochs;
    written_ = r->zxid;
    written_epochs_ = r->epochs.value_or(Epochs{});
  } else if (n > 0) {
    spdlog::warn("{} holds no whole record that checks ({} bytes): how far the log was durable is not known; "
                 "it is written afresh", path_, n);
  }
}

DurableEnd::~DurableEnd() {
  if (fd_ >= 0) ::close(fd_);
}

bool DurableEnd::write(Zxid z, Epochs e) {
  std::string b = encode(z, e);
  ssize_t n = ::pwrite(fd_, b.data(), b.size(), 0);
  if (n != static_cast<ssize_t>(b.size())) return false;
  written_ = z;
  written_epochs_ = e;
  return true;
}

void DurableEnd::advance(Zxid z) {
  std::lock_guard<std::mutex> hold(mutex_);
  if (z <= written_) return;
  if (!write(z, written_epochs_) && !warned_) {
    warned_ = true;  // once: a disk that fails this fails the log's writes too, which say so
    spdlog::warn("cannot write {} ({}): a later open cannot tell a lost log tail from a torn one", path_,
                 std::strerror(errno));
  }
}

void DurableEnd::lower_to(Zxid z) {
  std::lock_guard<std::mutex> hold(mutex_);
  if (z >= written_) return;
  if (!write(z, written_epochs_) || ::fdatasync(fd_) != 0)
    throw StorageError("cannot write " + path_ + " before cutting the log back to zxid " + std::to_string(z) + ": " +
                       std::strerror(errno));
}

void DurableEnd::keep_epochs(Epochs e) {
  std::lock_guard<std::mutex> hold(mutex_);
  if (e == written_epochs_) return;
  if (!write(written_, e) || ::fdatasync(fd_) != 0)
    throw StorageError("cannot write the epochs' copy in " + path_ + ": " + std::strerror(errno));
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
