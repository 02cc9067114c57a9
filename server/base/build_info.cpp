// The build's version and time, from CMake (WARDEN_VERSION, WARDEN_BUILD_TIME): kept to this
// file so that a new configure's time recompiles nothing else.
#include "server/base/version.hpp"

#include "consensus/protocol.hpp"
#include "storage/rocksdb_log_store.hpp"

namespace warden::server {

std::string warden_version() { return WARDEN_VERSION; }

std::string data_format() {
  return storage::RocksDbLogStore::data_format_name(storage::RocksDbLogStore::data_format);
}

std::string data_formats_read() {
  using storage::RocksDbLogStore;
  return RocksDbLogStore::data_format_name(RocksDbLogStore::oldest_data_format) + " to " + data_format();
}

std::string version_text() {
  return "warden-server " + warden_version() + " (ZooKeeper 3.9 client protocol)\npeer protocols " +
         consensus::protocol_range_text(consensus::ProtocolRange{}) + "\ndata format " + data_format() + " (reads " +
         data_formats_read() + ")\n";
}

std::string four_letter_version() {
  // The protocol level Warden serves (ZooKeeper 3.9's client surface), then Warden's own name,
  // and the build's time as ZooKeeper's Version.getFullVersion prints it ("2024-12-29 17:54
  // UTC"): go-zookeeper's FLWSrvr and the exporters parse that form.
  return "3.9.0-warden-" + warden_version() + ", built on " WARDEN_BUILD_TIME;
}

}  // namespace warden::server
