#include "server/backup/restore_swap.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "server/backup/backup.hpp"
#include "storage/damage/set_aside.hpp"
#include "storage/rocksdb_log_store.hpp"

namespace warden::server::backup {

namespace fs = std::filesystem;

namespace {
// A rename or a new file is durable only once its directory is synced.
void sync_parent(const std::string& path) {
  try {
    storage::sync_directory_of(path);
  } catch (const storage::StorageError& e) {
    throw BackupError(e.what());
  }
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

void remove_all(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) throw BackupError("cannot remove " + path + ": " + ec.message());
}

void rename(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) throw BackupError("cannot rename " + from + " to " + to + ": " + ec.message());
  sync_parent(to);
}
}  // namespace

RestorePaths restore_paths(const std::string& store) {
  return {store, store + ".restoring", store + ".before-restore", store + ".restoring.complete"};
}

void clear_staging(const RestorePaths& p) {
  remove_all(p.complete);
  remove_all(p.staging);
}

void mark_staging_complete(const RestorePaths& p) {
  int fd = ::open(p.complete.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw BackupError("cannot write " + p.complete + ": " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw BackupError("cannot sync " + p.complete);
  sync_parent(p.complete);
}

void swap_in_restored(const RestorePaths& p) {
  if (!exists(p.complete)) throw BackupError(p.staging + " is not marked complete: nothing is swapped");
  remove_all(p.before);  // what an earlier finished restore left (a start removes it too)
  rename(p.store, p.before);
  try {
    rename(p.staging, p.store);
  } catch (const BackupError&) {
    rename(p.before, p.store);  // back as it was; if this throws too, the next start settles it
    throw;
  }
  remove_all(p.complete);
}

std::string settle_interrupted_restore(const RestorePaths& p) {
  bool store = exists(p.store), before = exists(p.before), staging = exists(p.staging);
  bool complete = exists(p.complete);
  std::string note;
  if (store) {
    if (before) note = "removed " + p.before + " (the store a finished restore replaced)";
    if (staging || complete)
      note += std::string(note.empty() ? "" : "; ") + "removed " + p.staging +
              " (a restore stopped before its store was put in place: " + p.store + " serves as it was)";
    remove_all(p.before);
    remove_all(p.complete);
    remove_all(p.staging);
    return note;
  }
  if (before) {
    if (staging && complete) {
      rename(p.staging, p.store);
      remove_all(p.complete);
      remove_all(p.before);
      return "a restore was cut short between its renames: finished it (" + p.store + " is the restored store)";
    }
    rename(p.before, p.store);
    remove_all(p.complete);
    remove_all(p.staging);
    return "a restore was cut short before its store was whole: put the store as it was back in " + p.store;
  }
  if (staging || complete) {
    remove_all(p.complete);
    remove_all(p.staging);
    return "removed " + p.staging + " (a restore stopped before its store was put in place)";
  }
  return note;
}

}  // namespace warden::server::backup
