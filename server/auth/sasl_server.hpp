// SASL for clients, with Cyrus SASL, configured as ZooKeeper's server is by its JAAS `Server`
// section: DIGEST-MD5 against the DigestLoginModule's users (their passwords are handed to
// Cyrus by an in-memory auxiliary property plugin, never written anywhere). ZooKeeper's names
// for the exchange: service "zookeeper", server name and realm "zk-sasl-md5" (which its
// clients, and kazoo, put in the digest-uri).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "server/auth/jaas.hpp"
#include "server/auth/sasl_exchange.hpp"

namespace warden::server::auth {

class SaslServer {
 public:
  // From the JAAS file's section (`section_name`, "Server" unless zookeeper.sasl.serverconfig
  // says otherwise). Throws std::runtime_error naming the file and the problem: no usable
  // login module, Cyrus SASL without its DIGEST-MD5 plugin.
  SaslServer(const JaasFile& jaas, const std::string& section_name);
  ~SaslServer();
  std::unique_ptr<SaslExchange> start() const;
  const std::string& mechanism() const { return mechanism_; }
  size_t users() const;

 private:
  std::string mechanism_;
};

}  // namespace warden::server::auth
