#include "server/auth/sasl_server.hpp"

#include <sasl/sasl.h>
#include <sasl/saslplug.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <mutex>
#include <stdexcept>

namespace warden::server::auth {

namespace {
// The users Cyrus's lookups see. Cyrus is initialised once a process and calls the plugin with
// no context of ours, so they are process-wide; a server started later in the same process
// (embedded tests) replaces them.
std::mutex users_mutex;
std::map<std::string, std::string> users_now;

const char* const plugin_name = "warden";
const char* const digest_realm = "zk-sasl-md5";  // ZooKeeper's fixed server name for DIGEST-MD5

// Cyrus asks for the password ("*userPassword" of the authentication id) of a user; DIGEST-MD5
// names the user NAME@REALM once canonicalised.
int lookup(void*, sasl_server_params_t* sparams, unsigned flags, const char* user, unsigned ulen) {
  if (!sparams || !user) return SASL_BADPARAM;
  std::string name(user, ulen);
  std::string password;
  {
    std::lock_guard<std::mutex> hold(users_mutex);
    auto it = users_now.find(name);
    if (it == users_now.end()) {
      auto at = name.rfind('@');
      if (at != std::string::npos) it = users_now.find(name.substr(0, at));
    }
    if (it == users_now.end()) return SASL_NOUSER;
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
    *result = "DIGEST-MD5";
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

using Callback = int (*)();
sasl_callback_t callbacks[] = {
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
  explicit CyrusExchange(std::string mechanism) : mechanism_(std::move(mechanism)) {
    int r = sasl_server_new("zookeeper", digest_realm, nullptr, nullptr, nullptr, nullptr, SASL_SUCCESS_DATA, &conn_);
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
      sasl_getprop(conn_, SASL_USERNAME, &user);
      s.id = user ? static_cast<const char*>(user) : "";
      // Cyrus names a DIGEST-MD5 user NAME@REALM; ZooKeeper's id is the name alone.
      std::string suffix = std::string("@") + digest_realm;
      if (s.id.size() > suffix.size() && s.id.compare(s.id.size() - suffix.size(), suffix.size(), suffix) == 0)
        s.id.resize(s.id.size() - suffix.size());
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
  sasl_conn_t* conn_ = nullptr;
  std::string error_;
  bool started_ = false;
};
}  // namespace

SaslServer::SaslServer(const JaasFile& jaas, const std::string& section_name) {
  const auto* section = jaas.section(section_name);
  if (!section) throw std::runtime_error(jaas.path + ": has no " + section_name + " section");
  auto users = digest_users(*section);
  for (const auto& e : *section)
    if (e.module == "com.sun.security.auth.module.Krb5LoginModule")
      throw std::runtime_error(jaas.path + ":" + std::to_string(e.line) + ": " + section_name +
                               ": Kerberos (Krb5LoginModule) is not supported by this version of Warden yet");
  if (users.empty())
    throw std::runtime_error(jaas.path + ": the " + section_name + " section has no DigestLoginModule with "
                             "user_NAME=\"password\" options");
  init_cyrus();
  mechanism_ = "DIGEST-MD5";
  {
    std::lock_guard<std::mutex> hold(users_mutex);
    users_now = std::move(users);
  }
  // Fails here, at start, when Debian's libsasl2-modules (the DIGEST-MD5 plugin) is missing.
  auto probe = start();
  auto first = probe->step({});
  if (first.status != SaslExchange::Step::Status::more)
    throw std::runtime_error("Cyrus SASL cannot offer DIGEST-MD5 (is libsasl2-modules installed?): " + first.error);
}

SaslServer::~SaslServer() = default;

size_t SaslServer::users() const {
  std::lock_guard<std::mutex> hold(users_mutex);
  return users_now.size();
}

std::unique_ptr<SaslExchange> SaslServer::start() const { return std::make_unique<CyrusExchange>(mechanism_); }

}  // namespace warden::server::auth
