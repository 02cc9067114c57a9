// libFuzzer target: the readers of ZooKeeper's files (storage/zookeeper_format) that
// `warden-server import-zookeeper` runs on another system's data directory. The first byte
// picks the reader (a plain, gzip'd or snappy'd snapshot, a log, one txn record); the rest is
// the file. Every input is either refused with a FormatError or read; nothing else may happen.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "storage/zookeeper_format/zookeeper_files.hpp"

namespace zkf = warden::storage::zookeeper_format;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::string path = "/tmp/warden-fuzz-zkf-" + std::to_string(getpid());
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 5) {
      case 4: zkf::decode_txn(body); return 0;
      default: break;
    }
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return 0;
    std::fwrite(body.data(), 1, body.size(), f);
    std::fclose(f);
    if (data[0] % 5 == 3) {
      zkf::read_log({path, 0}, [](zkf::Txn, uint64_t) {});
    } else {
      auto c = data[0] % 5 == 0 ? zkf::Compression::none : data[0] % 5 == 1 ? zkf::Compression::gzip : zkf::Compression::snappy;
      zkf::SnapshotVisitor v;
      uint64_t nodes = 0;
      v.node = [&](zkf::SnapshotNode) { ++nodes; };
      auto sum = zkf::read_snapshot({path, 0, c}, v);
      if (sum.nodes != nodes) __builtin_trap();  // the summary counts what was handed over
    }
  } catch (const zkf::FormatError&) {
  }
  return 0;
}
