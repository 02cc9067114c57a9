#include "recipes/sasl_client.hpp"

#include <sasl/sasl.h>

#include <cstring>
#include <mutex>
#include <vector>

namespace warden::client {

namespace {
int init_result() {
  static std::once_flag once;
  static int result = SASL_OK;
  std::call_once(once, [] { result = sasl_client_init(nullptr); });
  return result;
}
}  // namespace

struct SaslClientExchange::Impl {
  SaslSettings s;
  sasl_conn_t* conn = nullptr;
  std::vector<sasl_callback_t> callbacks;
  std::vector<char> secret;  // a sasl_secret_t: length, then the password
  bool complete = false;
  std::string error;

  static int user(void* ctx, int id, const char** result, unsigned* len) {
    auto* i = static_cast<Impl*>(ctx);
    if (id != SASL_CB_USER && id != SASL_CB_AUTHNAME) return SASL_FAIL;
    *result = i->s.username.c_str();
    if (len) *len = static_cast<unsigned>(i->s.username.size());
    return SASL_OK;
  }
  static int pass(sasl_conn_t*, void* ctx, int, sasl_secret_t** out) {
    auto* i = static_cast<Impl*>(ctx);
    *out = reinterpret_cast<sasl_secret_t*>(i->secret.data());
    return SASL_OK;
  }
  static int realm(void*, int, const char** available, const char** result) {
    *result = available && available[0] ? available[0] : "";
    return SASL_OK;
  }

  Step result(int r, const char* out, unsigned len) {
    Step st;
    if (r == SASL_OK || r == SASL_CONTINUE) {
      complete = r == SASL_OK;
      st.status = Step::Status::send;
      st.token.assign(out ? out : "", out ? len : 0);
      if (complete && st.token.empty()) st.status = Step::Status::done;
      return st;
    }
    const char* detail = conn ? sasl_errdetail(conn) : nullptr;
    st.error = detail ? detail : sasl_errstring(r, nullptr, nullptr);
    return st;
  }
};

SaslClientExchange::SaslClientExchange(const SaslSettings& s, const std::string& host) : impl_(std::make_unique<Impl>()) {
  auto& i = *impl_;
  i.s = s;
  using Cb = int (*)();
  i.callbacks = {{SASL_CB_USER, reinterpret_cast<Cb>(reinterpret_cast<void*>(&Impl::user)), &i},
                 {SASL_CB_AUTHNAME, reinterpret_cast<Cb>(reinterpret_cast<void*>(&Impl::user)), &i},
                 {SASL_CB_PASS, reinterpret_cast<Cb>(reinterpret_cast<void*>(&Impl::pass)), &i},
                 {SASL_CB_GETREALM, reinterpret_cast<Cb>(reinterpret_cast<void*>(&Impl::realm)), &i},
                 {SASL_CB_LIST_END, nullptr, nullptr}};
  i.secret.resize(sizeof(sasl_secret_t) + s.password.size() + 1, 0);
  auto* secret = reinterpret_cast<sasl_secret_t*>(i.secret.data());
  secret->len = s.password.size();
  std::memcpy(secret->data, s.password.data(), s.password.size());
  if (int r = init_result(); r != SASL_OK) {
    i.error = std::string("Cyrus SASL cannot start: ") + sasl_errstring(r, nullptr, nullptr);
    return;
  }
  // ZooKeeper's names: DIGEST-MD5 always for "zk-sasl-md5"; Kerberos for service/host.
  std::string server = s.mechanism == "DIGEST-MD5" ? s.digest_server : (s.host.empty() ? host : s.host);
  int r = sasl_client_new(s.service.c_str(), server.c_str(), nullptr, nullptr, i.callbacks.data(), 0, &i.conn);
  if (r != SASL_OK) {
    i.error = sasl_errstring(r, nullptr, nullptr);
    return;
  }
  sasl_security_properties_t props{};
  props.max_ssf = 0;  // authentication only (qop=auth), as ZooKeeper's clients ask
  sasl_setprop(i.conn, SASL_SEC_PROPS, &props);
}

SaslClientExchange::~SaslClientExchange() {
  if (impl_->conn) sasl_dispose(&impl_->conn);
}

SaslClientExchange::Step SaslClientExchange::start() {
  auto& i = *impl_;
  if (!i.conn) return Step{Step::Status::failed, {}, i.error};
  const char* out = nullptr;
  unsigned len = 0;
  const char* used = nullptr;
  int r = sasl_client_start(i.conn, i.s.mechanism.c_str(), nullptr, &out, &len, &used);
  auto st = i.result(r, out, len);
  if (st.status == Step::Status::done) st.status = Step::Status::send;  // the server still answers
  return st;
}

SaslClientExchange::Step SaslClientExchange::step(std::string_view server_token) {
  auto& i = *impl_;
  if (!i.conn) return Step{Step::Status::failed, {}, i.error};
  if (i.complete) return Step{Step::Status::done, {}, {}};
  const char* out = nullptr;
  unsigned len = 0;
  int r = sasl_client_step(i.conn, server_token.empty() ? nullptr : server_token.data(),
                           static_cast<unsigned>(server_token.size()), nullptr, &out, &len);
  return i.result(r, out, len);
}

}  // namespace warden::client
