// A server's TLS context, built with OpenSSL (through Asio's ssl) from ZooKeeper's ssl.* keys:
// the key store (PEM or PKCS12: the private key and its certificate chain), the trust store
// (PEM or PKCS12 certificates), clientAuth, protocols and cipher suites. A JKS store is
// refused with the keytool command that converts it.
//
// The stores are read again when their files change (as ZooKeeper's X509Util watches them), so
// a rotation needs no restart: a connection takes the context current when it is accepted, and
// keeps it. A change that does not load (a file half written) keeps the last good context and
// is logged once.
#pragma once

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "server/config/tls_settings.hpp"

namespace boost::asio::ssl {
class context;
}

namespace warden::server::tls {

// A store or setting that cannot be used: the message names the key, the file and the reason.
struct TlsSetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ServerTlsContext {
 public:
  // Reads the stores now; throws TlsSetupError. `server` false: a context for connecting out
  // (a member to another), with the same stores.
  explicit ServerTlsContext(TlsSettings settings, bool server = true);
  ~ServerTlsContext();
  // The context a new connection uses (reloaded first when a store's file changed).
  std::shared_ptr<boost::asio::ssl::context> current();
  const TlsSettings& settings() const { return settings_; }

 private:
  struct FileStamp {
    std::string path;
    long long mtime_ns = 0, size = -1, inode = 0;
    bool operator==(const FileStamp&) const = default;
  };
  std::vector<FileStamp> stamps() const;

  TlsSettings settings_;
  bool server_ = true;
  std::mutex mutex_;
  std::shared_ptr<boost::asio::ssl::context> context_;
  std::vector<FileStamp> loaded_;       // the files as they were when context_ was built
  std::vector<FileStamp> failed_;       // the last change that did not load (logged once)
};

// Builds a context from the settings; throws TlsSetupError. For servers (client port, quorum
// listener) and, with `server` false, for a member connecting to another.
std::shared_ptr<boost::asio::ssl::context> make_context(const TlsSettings& s, bool server);

}  // namespace warden::server::tls
