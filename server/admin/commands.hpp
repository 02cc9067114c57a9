// The AdminServer's commands, as ZooKeeper 3.8 registers them (a primary name and short names,
// the four-letter words' among them), and their answers: functions over the request pipeline's
// operator view and what the node adds (FourLetterEnv), beside the four-letter words.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/admin/four_letter.hpp"
#include "server/metrics/json.hpp"
#include "server/metrics/summary.hpp"

namespace warden::server {
class RequestPipeline;
}

namespace warden::server::admin {

struct CommandNames {
  std::string primary;
  std::vector<std::string> short_names;
};
const std::vector<CommandNames>& commands();
// The primary name of `name` (primary or short); empty when Warden has no such command.
std::string primary_name(std::string_view name);

// /commands/NAME's answer: ZooKeeper's JSON keys and types, from the same state as the
// four-letter words; "error" names an unknown command. `query`: the URL's query string
// ("traceMask=7" for set_trace_mask).
metrics::Json command_answer(RequestPipeline& p, std::string_view name, const FourLetterEnv& env,
                             std::string_view query = {});
// mntr's numbers, typed: the four-letter word prints them, the monitor command returns them.
std::vector<std::pair<std::string, metrics::Json>> monitor_values(const RequestPipeline& p, const FourLetterEnv& env);
// Every summary monitor and /metrics show: the pipeline's (request latencies) and `env`'s.
metrics::NamedSummaries summaries(RequestPipeline& p, const FourLetterEnv& env);
// monitor's and mntr's keys: monitor_values() and every summary's keys.
std::vector<std::pair<std::string, metrics::Json>> monitor_keys(RequestPipeline& p, const FourLetterEnv& env);

}  // namespace warden::server::admin
