#include "server/auth/quorum_sasl.hpp"

#include <cctype>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "recipes/sasl_client.hpp"
#include "server/auth/sasl_server.hpp"

namespace warden::server::auth {

namespace {
using Auth = consensus::PeerTransport::Auth;
using Step = Auth::Step;

// The member reached: Cyrus's server side, and the Kerberos learner's host checked.
class ServerSide final : public Auth::Exchange {
 public:
  ServerSide(std::unique_ptr<SaslExchange> sasl, bool kerberos, const std::vector<std::string>* hosts)
      : sasl_(std::move(sasl)), kerberos_(kerberos), hosts_(hosts) {}
  Step step(std::string_view token) override {
    auto s = sasl_->step(token);
    Step out;
    out.token = s.token.value_or("");
    if (s.status == SaslExchange::Step::Status::more) {
      out.status = Step::Status::more;
    } else if (s.status == SaslExchange::Step::Status::done) {
      out.detail = s.id;
      out.status = Step::Status::done;
      if (kerberos_) {  // primary/host@REALM: the host must be a member's
        auto name = s.id.substr(0, s.id.find('@'));
        auto slash = name.find('/');
        std::string host = slash == std::string::npos ? std::string() : name.substr(slash + 1);
        bool member = false;
        for (const auto& h : *hosts_) member = member || h == host;
        if (!member) {
          out.status = Step::Status::failed;
          out.detail = "principal " + s.id + " is not of a member's host";
        }
      }
    } else {
      out.status = Step::Status::failed;
      out.detail = s.error;
    }
    return out;
  }

 private:
  std::unique_ptr<SaslExchange> sasl_;
  bool kerberos_;
  const std::vector<std::string>* hosts_;
};

// The member connecting: Cyrus's client side.
class LearnerSide final : public Auth::Exchange {
 public:
  explicit LearnerSide(const client::SaslSettings& s) : sasl_(s, s.host) {}
  Step step(std::string_view token) override {
    auto s = started_ ? sasl_.step(token) : sasl_.start();
    started_ = true;
    Step out;
    out.token = s.token;
    out.detail = s.error;
    using C = client::SaslClientExchange::Step::Status;
    out.status = s.status == C::send ? Step::Status::more : s.status == C::done ? Step::Status::done : Step::Status::failed;
    return out;
  }

 private:
  client::SaslClientExchange sasl_;
  bool started_ = false;
};

const JaasEntry* find_module(const std::vector<JaasEntry>& section, const char* module) {
  for (const auto& e : section)
    if (e.module == module) return &e;
  return nullptr;
}
std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}
constexpr const char* digest_module = "org.apache.zookeeper.server.auth.DigestLoginModule";
constexpr const char* krb5_module = "com.sun.security.auth.module.Krb5LoginModule";

std::string keytab_of(const JaasFile& jaas, const std::string& section) {
  const auto* s = jaas.section(section);
  const auto* e = s ? find_module(*s, krb5_module) : nullptr;
  if (!e) return {};
  auto k = e->options.find("keyTab");
  return k == e->options.end() ? std::string() : k->second;
}
}  // namespace

Auth quorum_auth(const Config& config, const JaasFile& jaas, const std::vector<std::string>& member_hosts) {
  const auto& q = config.quorum_sasl;
  Auth auth;
  auth.enabled = q.enable_sasl;
  auth.learner_required = q.learner_require_sasl;
  auth.server_required = q.server_require_sasl;
  for (const auto* name : {&q.server_section, &q.learner_section})
    if (!jaas.section(*name))
      throw std::runtime_error(jaas.path + ": has no " + *name + " section, which quorum.auth.enableSasl=true needs");

  // The member reached.
  std::string quorum_keytab = keytab_of(jaas, q.server_section), client_keytab = keytab_of(jaas, config.sasl_section);
  if (!quorum_keytab.empty() && !client_keytab.empty() && quorum_keytab != client_keytab)
    throw std::runtime_error(jaas.path + ": the " + q.server_section + " section's keyTab " + quorum_keytab +
                             " is not the " + config.sasl_section + " section's " + client_keytab +
                             ": Cyrus SASL accepts Kerberos with one keytab a process (put both principals in one)");
  auto server = std::make_shared<SaslServer>(jaas, q.server_section, SaslServer::Principals{},
                                             SaslServer::quorum_names());
  bool kerberos = server->mechanism() == "GSSAPI";
  auto hosts = std::make_shared<std::vector<std::string>>(member_hosts);
  auth.server = [server, kerberos, hosts](const consensus::PeerTransport::Member&) {
    return std::make_unique<ServerSide>(server->start(), kerberos, hosts.get());
  };

  // The member connecting.
  const auto& learner = *jaas.section(q.learner_section);
  client::SaslSettings s;
  s.service = "zookeeper-quorum";
  s.digest_server = "zk-quorum-sasl-md5";
  std::string where = jaas.path + ": " + q.learner_section;
  if (const auto* k = find_module(learner, krb5_module)) {
    auto keytab = k->options.find("keyTab");
    if (keytab == k->options.end() || k->options.find("principal") == k->options.end())
      throw std::runtime_error(where + ":" + std::to_string(k->line) +
                               ": Krb5LoginModule needs keyTab and principal (useKeyTab=true)");
    s.mechanism = "GSSAPI";
    auto slash = q.service_principal.find('/');
    s.service = q.service_principal.substr(0, slash);
    // The learner's credentials: its keytab, into a cache of this process's own.
    setenv("KRB5_CLIENT_KTNAME", keytab->second.c_str(), 1);
    setenv("KRB5CCNAME", "MEMORY:warden-quorum-learner", 1);
    auto host_pattern = q.service_principal.substr(slash + 1);
    auth.learner = [s, host_pattern](const consensus::PeerTransport::Member& to) {
      auto settings = s;
      settings.host = host_pattern == "_HOST" ? lower(to.host) : host_pattern;  // as ZooKeeper's SecurityUtils
      return std::make_unique<LearnerSide>(settings);
    };
  } else if (const auto* d = find_module(learner, digest_module)) {
    auto user = d->options.find("username");
    auto password = d->options.find("password");
    if (user == d->options.end() || password == d->options.end())
      throw std::runtime_error(where + ":" + std::to_string(d->line) +
                               ": DigestLoginModule needs username and password, as a learner's login does");
    s.mechanism = "DIGEST-MD5";
    s.username = user->second;
    s.password = password->second;
    auth.learner = [s](const consensus::PeerTransport::Member&) { return std::make_unique<LearnerSide>(s); };
  } else {
    throw std::runtime_error(where + " has neither a DigestLoginModule (username, password) nor a Krb5LoginModule");
  }
  return auth;
}

}  // namespace warden::server::auth
