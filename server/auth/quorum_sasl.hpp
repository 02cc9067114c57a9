// SASL between members, as ZooKeeper's quorum.auth.* keys configure it: the exchanges the peer
// transport runs on each member connection. The member that connects authenticates with the
// JAAS QuorumLearner section (DigestLoginModule username and password, or Krb5LoginModule
// keyTab and principal, asking for quorum.auth.kerberos.servicePrincipal with _HOST as the
// other member's configured host); the member reached checks it against the QuorumServer
// section (its user_NAME users, or its keyTab and principal). Names as ZooKeeper's: service
// "zookeeper-quorum", DIGEST-MD5 server name "zk-quorum-sasl-md5". As ZooKeeper authorises a
// Kerberos learner, its principal's host must be one of the members' hosts.
#pragma once

#include <string>
#include <vector>

#include "consensus/peer_transport.hpp"
#include "server/auth/jaas.hpp"
#include "server/config/config.hpp"

namespace warden::server::auth {

// The transport's SASL from the configuration and the JAAS file; `client_section` is the
// client-port SASL section (its Kerberos keyTab must be the quorum's, as Cyrus takes one
// acceptor keytab a process). Throws std::runtime_error naming the file, the section and the
// problem.
consensus::PeerTransport::Auth quorum_auth(const Config& config, const JaasFile& jaas,
                                           const std::vector<std::string>& member_hosts);

}  // namespace warden::server::auth
