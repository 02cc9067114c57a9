// The names of the AdminServer's commands, as ZooKeeper 3.8 registers them: a primary name
// and short names (the four-letter words' among them). The answers come from
// RequestPipeline::admin_command, beside the four-letter words.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace warden::server::admin {

struct CommandNames {
  std::string primary;
  std::vector<std::string> short_names;
};
const std::vector<CommandNames>& commands();
// The primary name of `name` (primary or short); empty when Warden has no such command.
std::string primary_name(std::string_view name);

}  // namespace warden::server::admin
