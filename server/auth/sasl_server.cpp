#include "server/auth/sasl_server.hpp"

#include <sasl/sasl.h>
#include <sasl/saslplug.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace warden::server::auth {

namespace {
// The users Cyrus's lookups see, by SASL service (clients' and members'). Cyrus is initialised
// once a process and calls the plugin with no context of ours, so they are process-wide; a
// server started later in the same process (embedded tests) replaces its service's.
std::mutex users_mutex;
std::map<std::string, std::map<std::string, std::string>> users_now;

const char* const plugin_name = "warden";

// Cyrus asks for the password ("*userPassword" of the authentication id) of a user; DIGEST-MD5
// names the user NAME@REALM once canonicalised.
int lookup(void*, sasl_server_params_t* sparams, unsigned flags, const char* user, unsigned ulen) {
  if (!sparams || !user) return SASL_BADPARAM;
  std::string name(user, ulen);
  std::string password;
  {
    std::lock_guard<std::mutex> hold(users_mutex);
    auto service = users_now.find(sparams->service ? sparams->service : "");
    if (service == users_now.end()) return SASL_NOUSER;
    const auto& users = service->second;
    auto it = users.find(name);
    if (it == users.end()) {
      auto at = name.rfind('@');
      if (at != std::string::npos) it = users.find(name.substr(0, at));
    }
    if (it == users.end()) return SASL_NOUSER;
    password = it->second;
  }
  const propval* wanted = sparams->utils->prop_get(sparams->propctx);
  for (const propval* cur = wanted; cur && cur->name; ++cur) {
    const char* prop = cur->name;
    if (flags & SASL_AUXPROP_AUTHZID) {
      if (prop[0] == '*') continue;
    } else {
      if (prop[0] != '*') continue;
      ++prop;
    }
    if (std::strcmp(prop, SASL_AUX_PASSWORD_PROP) != 0) continue;
    if (cur->values) {
      if (!(flags & SASL_AUXPROP_OVERRIDE)) continue;
      sparams->utils->prop_erase(sparams->propctx, cur->name);
    }
    sparams->utils->prop_set(sparams->propctx, cur->name, password.data(), static_cast<int>(password.size()));
  }
  return SASL_OK;
}

sasl_auxprop_plug_t plugin = {0, 0, nullptr, nullptr, lookup, const_cast<char*>(plugin_name), nullptr};

int plugin_init(const sasl_utils_t*, int max_version, int* out_version, sasl_auxprop_plug_t** plug, const char*) {
  if (max_version < SASL_AUXPROP_PLUG_VERSION) return SASL_BADVERS;
  *out_version = SASL_AUXPROP_PLUG_VERSION;
  *plug = &plugin;
  return SASL_OK;
}

int get_option(void*, const char*, const char* option, const char** result, unsigned* len) {
  if (std::strcmp(option, "auxprop_plugin") == 0)
    *result = plugin_name;
  else if (std::strcmp(option, "mech_list") == 0)
    *result = "DIGEST-MD5 GSSAPI";
  else
    return SASL_FAIL;
  if (len) *len = static_cast<unsigned>(std::strlen(*result));
  return SASL_OK;
}

int log_line(void*, int level, const char* message) {
  if (level <= SASL_LOG_ERR)
    spdlog::warn("SASL: {}", message ? message : "");
  else
    spdlog::debug("SASL: {}", message ? message : "");
  return SASL_OK;
}

// As ZooKeeper's server (its AuthorizeCallback authorises every authenticated client, and its id
// comes from the authentication id, not from what the client asks to act as): any requested
// authorization id is accepted, and ignored (step() reads SASL_AUTHUSER).
int authorize(sasl_conn_t*, void*, const char*, unsigned, const char*, unsigned, const char*, unsigned,
              struct propctx*) {
  return SASL_OK;
}

using Callback = int (*)();
sasl_callback_t callbacks[] = {
    {SASL_CB_PROXY_POLICY, reinterpret_cast<Callback>(reinterpret_cast<void*>(&authorize)), nullptr},
    {SASL_CB_GETOPT, reinterpret_cast<Callback>(reinterpret_cast<void*>(&get_option)), nullptr},
    {SASL_CB_LOG, reinterpret_cast<Callback>(reinterpret_cast<void*>(&log_line)), nullptr},
    {SASL_CB_LIST_END, nullptr, nullptr}};

// Cyrus is initialised once a process, on the first server that offers SASL.
void init_cyrus() {
  static std::once_flag once;
  static int result = SASL_OK;
  std::call_once(once, [] {
    result = sasl_auxprop_add_plugin(plugin_name, plugin_init);
    if (result == SASL_OK) result = sasl_server_init(callbacks, "warden");
  });
  if (result != SASL_OK)
    throw std::runtime_error(std::string("Cyrus SASL cannot start: ") + sasl_errstring(result, nullptr, nullptr));
}

class CyrusExchange final : public SaslExchange {
 public:
  CyrusExchange(std::string mechanism, const std::string& service, const std::string& host, std::string realm,
                SaslServer::Principals principals)
      : mechanism_(std::move(mechanism)), host_(host), realm_(std::move(realm)), principals_(principals) {
    int r = sasl_server_new(service.c_str(), host.c_str(), nullptr, nullptr, nullptr, nullptr, SASL_SUCCESS_DATA,
                            &conn_);
    if (r != SASL_OK) {
      error_ = sasl_errstring(r, nullptr, nullptr);
      return;
    }
    // No security layer (ZooKeeper's clients ask for qop=auth): authentication only.
    sasl_security_properties_t props{};
    props.min_ssf = 0;
    props.max_ssf = 0;
    props.maxbufsize = 0;
    sasl_setprop(conn_, SASL_SEC_PROPS, &props);
  }
  ~CyrusExchange() override {
    if (conn_) sasl_dispose(&conn_);
  }

  Step step(std::string_view token) override {
    Step s;
    if (!conn_) {
      s.error = "Cyrus SASL: " + error_;
      return s;
    }
    if (token.size() > max_token_bytes) {
      s.error = "a SASL token of " + std::to_string(token.size()) + " bytes";
      return s;
    }
    const char* out = nullptr;
    unsigned out_len = 0;
    const char* in = token.empty() ? nullptr : token.data();
    int r = started_ ? sasl_server_step(conn_, in, static_cast<unsigned>(token.size()), &out, &out_len)
                     : sasl_server_start(conn_, mechanism_.c_str(), in, static_cast<unsigned>(token.size()), &out,
                                         &out_len);
    started_ = true;
    if (out) s.token = std::string(out, out_len);
    if (r == SASL_CONTINUE) {
      s.status = Step::Status::more;
      if (!s.token) s.token = std::string();
    } else if (r == SASL_OK) {
      const void* user = nullptr;
      sasl_getprop(conn_, SASL_AUTHUSER, &user);
      s.id = user ? static_cast<const char*>(user) : "";
      if (mechanism_ == "GSSAPI") {
        // Cyrus leaves out the realm of a client of the server's own realm; ZooKeeper's id has it.
        if (s.id.find('@') == std::string::npos && !realm_.empty()) s.id += "@" + realm_;
        s.id = kerberos_id(s.id, principals_.remove_host, principals_.remove_realm);
      } else {
        // Cyrus names a DIGEST-MD5 user NAME@REALM; ZooKeeper's id is the name alone.
        std::string suffix = "@" + host_;
        if (s.id.size() > suffix.size() && s.id.compare(s.id.size() - suffix.size(), suffix.size(), suffix) == 0)
          s.id.resize(s.id.size() - suffix.size());
      }
      s.status = Step::Status::done;
    } else {
      s.status = Step::Status::failed;
      s.token.reset();
      const char* detail = sasl_errdetail(conn_);
      s.error = detail ? detail : sasl_errstring(r, nullptr, nullptr);
    }
    return s;
  }

 private:
  // A DIGEST-MD5 response is a few hundred bytes (RFC 2831 caps it at 4 KiB); far above that is garbage.
  static constexpr size_t max_token_bytes = 64 * 1024;
  std::string mechanism_;
  std::string host_;   // DIGEST-MD5: the server name, its users' realm
  std::string realm_;  // the server principal's realm (GSSAPI)
  SaslServer::Principals principals_;
  sasl_conn_t* conn_ = nullptr;
  std::string error_;
  bool started_ = false;
};
}  // namespace

std::string kerberos_id(const std::string& principal, bool remove_host, bool remove_realm) {
  std::string name = principal, realm;
  if (auto at = name.rfind('@'); at != std::string::npos) {
    realm = name.substr(at + 1);
    name.resize(at);
  }
  std::string primary = name, host;
  if (auto slash = name.find('/'); slash != std::string::npos) {
    primary = name.substr(0, slash);
    host = name.substr(slash + 1);
  }
  std::string id = primary;
  if (!host.empty() && !remove_host) id += "/" + host;
  if (!realm.empty() && !remove_realm) id += "@" + realm;
  return id;
}

SaslServer::SaslServer(const JaasFile& jaas, const std::string& section_name, Principals principals, Names names)
    : service_(names.service), host_(names.digest_host), principals_(principals) {
  const auto* section = jaas.section(section_name);
  if (!section) throw std::runtime_error(jaas.path + ": has no " + section_name + " section");
  auto users = digest_users(*section);
  for (const auto& e : *section) {
    if (e.module != "com.sun.security.auth.module.Krb5LoginModule") continue;
    auto where = jaas.path + ":" + std::to_string(e.line) + ": " + section_name + ": Krb5LoginModule";
    auto keytab = e.options.find("keyTab");
    auto principal = e.options.find("principal");
    if (keytab == e.options.end() || principal == e.options.end())
      throw std::runtime_error(where + " needs keyTab and principal (useKeyTab=true), as a server's login does");
    if (FILE* f = std::fopen(keytab->second.c_str(), "rb"))
      std::fclose(f);
    else
      throw std::runtime_error(where + ": keyTab " + keytab->second + " cannot be read: " + std::strerror(errno));
    // "service/host@REALM": Cyrus accepts for service@host, with the keys of the keytab.
    std::string p = principal->second;
    auto at = p.find('@');
    std::string name = p.substr(0, at);
    auto slash = name.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == name.size())
      throw std::runtime_error(where + ": principal '" + p + "' is not service/host@REALM");
    service_ = name.substr(0, slash);
    host_ = name.substr(slash + 1);
    realm_ = at == std::string::npos ? std::string() : p.substr(at + 1);
    setenv("KRB5_KTNAME", keytab->second.c_str(), 1);  // the acceptor's keytab, for GSSAPI
    init_cyrus();
    mechanism_ = "GSSAPI";
    require_mechanism("libsasl2-modules-gssapi-mit");
    return;
  }
  if (users.empty())
    throw std::runtime_error(jaas.path + ": the " + section_name + " section has no DigestLoginModule with "
                             "user_NAME=\"password\" options");
  init_cyrus();
  mechanism_ = "DIGEST-MD5";
  {
    std::lock_guard<std::mutex> hold(users_mutex);
    users_now[service_] = std::move(users);
  }
  require_mechanism("libsasl2-modules");
}

// Fails at start, not at a client's first packet, when the mechanism's Cyrus plugin (a Debian
// package of its own) is missing.
void SaslServer::require_mechanism(const char* package) const {
  sasl_conn_t* conn = nullptr;
  const char* list = nullptr;
  bool offered = false;
  if (sasl_server_new(service_.c_str(), host_.c_str(), nullptr, nullptr, nullptr, nullptr, 0, &conn) == SASL_OK &&
      sasl_listmech(conn, nullptr, " ", " ", " ", &list, nullptr, nullptr) == SASL_OK && list)
    offered = (std::string(" ") + list + " ").find(" " + mechanism_ + " ") != std::string::npos;
  if (conn) sasl_dispose(&conn);
  if (!offered)
    throw std::runtime_error("Cyrus SASL cannot offer " + mechanism_ + " (is Debian's " + package + " installed?)");
}

SaslServer::~SaslServer() = default;

size_t SaslServer::users() const {
  std::lock_guard<std::mutex> hold(users_mutex);
  auto it = users_now.find(service_);
  return it == users_now.end() ? 0 : it->second.size();
}

std::unique_ptr<SaslExchange> SaslServer::start() const {
  return std::make_unique<CyrusExchange>(mechanism_, service_, host_, realm_, principals_);
}

}  // namespace warden::server::auth
