// SASL for clients, with Cyrus SASL, configured as ZooKeeper's server is by its JAAS `Server`
// section: Kerberos (GSSAPI) when it has a Krb5LoginModule with a keyTab and a principal
// ("zookeeper/HOST@REALM": the service and host Cyrus accepts for), else DIGEST-MD5 against the
// DigestLoginModule's users (their passwords are handed to Cyrus by an in-memory auxiliary
// property plugin, never written anywhere). ZooKeeper's names for DIGEST-MD5: service
// "zookeeper", server name and realm "zk-sasl-md5" (which its clients, and kazoo, put in the
// digest-uri). A Kerberos client's id is its principal, without its host or realm as
// kerberos.removeHostFromPrincipal and kerberos.removeRealmFromPrincipal ask. Between members
// (the QuorumServer section) ZooKeeper's names are "zookeeper-quorum" and "zk-quorum-sasl-md5";
// each service has its own users. Cyrus's GSSAPI takes one acceptor keytab a process (the
// runtime refuses two different ones).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "server/auth/jaas.hpp"
#include "server/auth/sasl_exchange.hpp"

namespace warden::server::auth {

// How a Kerberos client's principal becomes its id.
struct PrincipalRules {
  bool remove_host = false;   // kerberos.removeHostFromPrincipal
  bool remove_realm = false;  // kerberos.removeRealmFromPrincipal
};

// The SASL service, and DIGEST-MD5's server name (its realm, in the digest-uri).
struct SaslNames {
  std::string service = "zookeeper";
  std::string digest_host = "zk-sasl-md5";
};

class SaslServer {
 public:
  using Principals = PrincipalRules;
  using Names = SaslNames;
  static Names quorum_names() { return {"zookeeper-quorum", "zk-quorum-sasl-md5"}; }
  // From the JAAS file's section (`section_name`, "Server" unless zookeeper.sasl.serverconfig
  // says otherwise). Throws std::runtime_error naming the file and the problem: no usable
  // login module, Cyrus SASL without its DIGEST-MD5 plugin.
  SaslServer(const JaasFile& jaas, const std::string& section_name, Principals principals = Principals(),
             Names names = Names());
  ~SaslServer();
  std::unique_ptr<SaslExchange> start() const;
  const std::string& mechanism() const { return mechanism_; }
  size_t users() const;

 private:
  void require_mechanism(const char* package) const;
  std::string mechanism_;
  std::string service_, host_;  // for Cyrus's sasl_server_new
  std::string realm_;                                         // the server principal's (GSSAPI)
  Principals principals_;
};

// A Kerberos principal "primary[/instance][@REALM]" as ZooKeeper names it for ACLs.
std::string kerberos_id(const std::string& principal, bool remove_host, bool remove_realm);

}  // namespace warden::server::auth
