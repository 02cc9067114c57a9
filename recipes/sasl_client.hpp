// The client side of ZooKeeper's SASL (opcode 102), with Cyrus SASL: DIGEST-MD5 with a user
// name and password (ZooKeeper's fixed server name "zk-sasl-md5"), or Kerberos (GSSAPI) with the
// ticket cache or keytab the Kerberos library finds (KRB5CCNAME, KRB5_CLIENT_KTNAME), for the
// server principal service/host. Used by Client for each new connection.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace warden::client {

struct SaslSettings {
  std::string mechanism;  // "DIGEST-MD5" or "GSSAPI"; empty: no SASL
  std::string username, password;  // DIGEST-MD5
  std::string service = "zookeeper";
  std::string digest_server = "zk-sasl-md5";  // DIGEST-MD5's server name (ZooKeeper's, fixed)
  std::string host;  // GSSAPI: the host in the server's principal; empty: the host connected to
};

class SaslClientExchange {
 public:
  struct Step {
    enum class Status { send, done, failed } status = Status::failed;
    std::string token;  // send: for the server
    std::string error;  // failed: why
  };
  // `host`: the server's host as connected to (GSSAPI's default).
  SaslClientExchange(const SaslSettings& s, const std::string& host);
  ~SaslClientExchange();
  SaslClientExchange(const SaslClientExchange&) = delete;
  SaslClientExchange& operator=(const SaslClientExchange&) = delete;
  // The first token (possibly empty), then one per server answer. Once the client side is
  // complete, a server answer with nothing to read means done.
  Step start();
  Step step(std::string_view server_token);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace warden::client
