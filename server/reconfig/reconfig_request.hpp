// A client's reconfig (opcode 16) checked and turned into the new configuration's text, in the
// order of ZooKeeper's PrepRequestProcessor: ReconfigDisabled (reconfigEnabled=false),
// Unimplemented (a standalone server), ReconfigInProgress (another one pending), BadVersion
// (curConfigId neither -1 nor the version in force), BadArguments (a member list that does not
// parse, a joiner without its client address, two members on one address, too few voters:
// two while standaloneEnabled is true, else one), NewConfigNoQuorum (no quorum of the new voters
// synchronised with the leader). Prep checks write permission on /zookeeper/config after these,
// as ZooKeeper does last.
//
// Incremental: the configuration in force, less `leavingServers` (ids, comma-separated), with
// `joiningServers` (server.N=host:quorumPort:electionPort[:role];[clientHost:]clientPort lines,
// comma-separated) added or replacing the member of that id. Non-incremental: `newMembers`
// (such lines, separated by commas or newlines) is the whole new configuration.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "server/reconfig/config_txn.hpp"
#include "wire/codes.hpp"
#include "wire/records.hpp"

namespace warden::server::reconfig {

// What the checks need to know of the ensemble (the server's is its replicator).
class Gate {
 public:
  virtual ~Gate() = default;
  virtual bool enabled() const = 0;             // reconfigEnabled
  virtual bool ensemble() const = 0;            // false: a standalone server
  virtual bool standalone_enabled() const = 0;  // standaloneEnabled (ZooKeeper's default: true)
  virtual bool in_progress() const = 0;         // a reconfig is pending
  virtual int64_t version() const = 0;          // the configuration in force
  virtual bool quorum_synced(const Members& m) const = 0;
};

struct Plan {
  std::string text;  // server.N lines; apply adds "version=<the txn's zxid>"
  Members members;
};

// `current`: /zookeeper/config's text (the configuration in force).
std::variant<Plan, wire::Err> plan(const wire::ReconfigRequest& req, std::string_view current, const Gate& gate);

}  // namespace warden::server::reconfig
