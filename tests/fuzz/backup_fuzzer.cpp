// libFuzzer target: the backup file reader (server/backup), what POST /commands/restore and
// `warden-server restore-backup` run on an uploaded file before anything is restored. Every
// input is either refused with a BackupError or read whole; nothing else may happen.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "server/backup/backup.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/warden-fuzz-backup-" + std::to_string(getpid());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    auto info = warden::server::backup::check_backup(path);
    if (info.bytes != size) __builtin_trap();  // a file read whole is all of the file
  } catch (const warden::server::backup::BackupError&) {
  }
  return 0;
}
