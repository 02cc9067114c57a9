// The build's version and time, from CMake (WARDEN_VERSION, WARDEN_BUILD_TIME): kept to this
// file so that a new configure's time recompiles nothing else.
#include "server/base/version.hpp"

namespace warden::server {

std::string warden_version() { return WARDEN_VERSION; }

std::string four_letter_version() {
  // The protocol level Warden serves (ZooKeeper 3.9's client surface), then Warden's own name,
  // and the build's time as ZooKeeper's Version.getFullVersion prints it ("2024-12-29 17:54
  // UTC"): go-zookeeper's FLWSrvr and the exporters parse that form.
  return "3.9.0-warden-" + warden_version() + ", built on " WARDEN_BUILD_TIME;
}

}  // namespace warden::server
