// One SASL exchange on one client connection, as the pipeline (RequestPipeline) drives it: each
// client token in, the server's answer out, until the mechanism is done (with the id the
// client authenticated as) or failed. server/auth/sasl_server.hpp implements it with Cyrus SASL.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace warden::server::auth {

class SaslExchange {
 public:
  struct Step {
    enum class Status { more, done, failed } status = Status::failed;
    std::optional<std::string> token;  // for the client (none: null)
    std::string id;                    // done: the authorization id (ZooKeeper's sasl:<id>)
    std::string error;                 // failed: why, for the log
  };
  virtual ~SaslExchange() = default;
  virtual Step step(std::string_view client_token) = 0;
};

// Makes the exchange for a connection's first SASL packet.
using SaslExchangeFactory = std::function<std::unique_ptr<SaslExchange>()>;

}  // namespace warden::server::auth
