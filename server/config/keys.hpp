// The zoo.cfg keys Warden reads, as one table (keys.cpp): a line a key, with how its value is
// read, ZooKeeper's default and what it does. Warden's default is the Config field's own
// initialiser (config.hpp), read back from the table for the reference, so each default has
// one source. parse_config walks the file's lines and hands each to read_key.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/config/config.hpp"

namespace warden::server::config_keys {

// One key=value line as read, and where it came from.
struct Line {
  std::string_view key, value;
  std::string where;      // the start of a message: "FILE:LINE: ", or a property's "ORIGIN: "
  std::string file_line;  // "FILE:LINE", kept in Config's *_origin fields
  // The message for a refused value: where, the key, its value (masked when secret), why.
  std::string bad(std::string_view why) const;
};

// Reads one line into `c`: nothing when taken (an unknown key adds a warning, as ZooKeeper
// accepts it), else the message that stops the start.
std::optional<std::string> read_key(Config& c, const Line& line);

// The keys ZooKeeper's QuorumPeerConfig reads itself; it makes a system property of any other
// ("zookeeper." + key), which system_properties shows.
bool quorum_peer_config_key(std::string_view key);

// The table's keys, in its order (a prefix, as "ssl.", stands for every key under it).
std::vector<std::string_view> names();

// Every key as a Markdown table: the key (and its zookeeper.-prefixed form where ZooKeeper
// reads one as a -D property), Warden's default, ZooKeeper's default, what it does.
std::string reference();

}  // namespace warden::server::config_keys
