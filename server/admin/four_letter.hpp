// ZooKeeper's four-letter words on the client port: a connection whose first four bytes spell
// one of them (no frame length can: they are ASCII letters) gets the command's text back and
// is closed. Only the words in `4lw.commands.whitelist` run (default: srvr; "*" for all); the
// others get ZooKeeper's refusal line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/metrics/json.hpp"
#include "server/state/watch_manager.hpp"
#include "server/metrics/summary.hpp"
#include "wire/four_letter_words.hpp"

namespace warden::server {

// The words themselves are the client port's (wire/four_letter_words.hpp).
using wire::four_letter_words;
using wire::is_four_letter_word;
bool four_letter_allowed(const std::vector<std::string>& whitelist, std::string_view word);
// What ZooKeeper answers for a word outside the whitelist.
std::string four_letter_refusal(std::string_view word);

// What the pipeline cannot know and the runtime adds: configuration, directories, process.
struct FourLetterEnv {
  std::vector<std::pair<std::string, std::string>> conf;         // conf's key=value lines
  std::vector<std::pair<std::string, std::string>> environment;  // envi's lines
  int64_t data_dir_bytes = 0, log_dir_bytes = 0;
  int64_t open_fds = 0, max_fds = 0;
  int64_t uptime_ms = 0;
  // The member's role as srvr shows it ("standalone", "leader", "follower", "observer"), and
  // whether it serves clients (a member without a quorum does not).
  std::string mode = "standalone";
  bool serving = true;
  std::string peer_state;  // mntr's zk_peer_state, e.g. "leading - broadcast"; empty standalone
  int64_t followers = 0, synced_followers = 0, pending_syncs = 0;  // a leader's
  // A member's peer protocol versions (the range it speaks; consensus/protocol.hpp) and the
  // ensemble version; 0 standalone.
  int64_t peer_protocol_oldest = 0, peer_protocol_newest = 0, ensemble_version = 0;
  // For the AdminServer: configuration's typed keys, the configuration file's text, the leader.
  std::vector<std::pair<std::string, metrics::Json>> admin_conf;
  std::string initial_configuration;
  int64_t leader_id = -1;
  std::string leader_ip;
  // The voting members as ZooKeeper 3.8's voting_view shows them (QuorumServer's fields):
  // "host:port" addresses, the client address ("" when unknown here) and the learner type.
  struct Member {
    int64_t id = 0;
    std::string host;
    int32_t quorum_port = 0, election_port = 0;
    std::string client_address;
    std::string learner_type = "participant";
  };
  std::vector<Member> voting_view;
  // zabstate on a member: this member (its entry in the configuration) and its last zxid.
  std::optional<Member> self;
  int64_t last_zxid = 0;
  // Group commit's writes slower than fsync.warningthresholdms (ZooKeeper's fsync count).
  int64_t fsync_threshold_exceeded = 0;
  // The newest complete snapshot: its zxid (-1: none) and when it was finished (s; -1: unknown).
  int64_t last_snapshot_zxid = -1, last_snapshot_seconds = -1;
  // system_properties: what ZooKeeper's JVM reports that a native process has too (os.*,
  // user.*, file and line separators) and zookeeper.* for zoo.cfg's keys ZooKeeper makes
  // properties of.
  std::vector<std::pair<std::string, std::string>> system_properties;
  // ServerMetrics kept outside the pipeline (the log, snapshots, elections, syncs): summaries
  // and counters under ZooKeeper's names, for monitor and mntr (srst resets the summaries).
  metrics::NamedSummaries summaries;
  std::vector<std::pair<std::string, metrics::Json>> metrics;
  // A leader's synced observers, each as ZooKeeper's LearnerHandler info (the observers command).
  metrics::Json observers = metrics::Json::array();
  int64_t synced_observers = 0;
};

// What ZooKeeper answers for a word that needs a serving server when it does not serve.
inline constexpr std::string_view not_serving_text = "This ZooKeeper instance is not currently serving requests\n";

class RequestPipeline;
// A four-letter word's text (one of four_letter_words()) as ZooKeeper 3.8 formats it, from the
// pipeline's operator view and `env`; `self` is the connection that asked. crst and srst reset
// the statistics (srst `env`'s summaries too).
std::string four_letter_text(RequestPipeline& p, std::string_view word, ConnId self, const FourLetterEnv& env);

}  // namespace warden::server
