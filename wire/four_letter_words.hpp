// ZooKeeper's four-letter words: a client-port connection whose first four bytes spell one of
// them (no frame length can, as they are ASCII letters) is a command, not a session. The list
// is part of the port's protocol, so the configuration (the whitelist's words) and the server
// (the commands' texts) both read it here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace warden::wire {

// Every word ZooKeeper 3.8 serves, for the whitelist "*".
const std::vector<std::string>& four_letter_words();
// True when `first4` (the first four bytes of a connection) is one of them.
bool is_four_letter_word(std::string_view first4);

}  // namespace warden::wire
