// The build's version, from CMake (server/base/build_info.cpp).
#pragma once

#include <string>

namespace warden::server {

// The version string 4lw output carries, in ZooKeeper's form "X.Y.Z-..., built on ..." so
// that tools that parse it (zktop) read it.
std::string four_letter_version();
// Warden's version (CMake's project version): --version, srvr's line, the package's.
std::string warden_version();
// The data format this build writes ("warden-log-4"), and what it reads ("warden-log-3 to
// warden-log-4"): storage::RocksDbLogStore's numbers.
std::string data_format();
std::string data_formats_read();
// What --version prints: the version, the peer protocol versions this build speaks
// (consensus/protocol.hpp) and its data format, a line each.
std::string version_text();

}  // namespace warden::server
