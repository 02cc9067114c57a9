// The build's version, from CMake (server/base/build_info.cpp).
#pragma once

#include <string>

namespace warden::server {

// The version string 4lw output carries, in ZooKeeper's form "X.Y.Z-..., built on ..." so
// that tools that parse it (zktop) read it.
std::string four_letter_version();
// Warden's version (CMake's project version): --version, srvr's line, the package's.
std::string warden_version();

}  // namespace warden::server
