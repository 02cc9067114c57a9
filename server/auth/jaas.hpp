// JAAS login configuration files, as ZooKeeper's users write them for its SASL: sections of
// login modules, each with a flag and options. Warden reads the `Server` section's
// DigestLoginModule users (user_NAME="password") and, for Kerberos, the Krb5LoginModule's
// keyTab and principal. Where the file is found is ZooKeeper's too: the
// -Djava.security.auth.login.config=FILE in SERVER_JVMFLAGS or JVMFLAGS (the environment, or
// the java.env beside zoo.cfg that ZooKeeper's scripts source), or Warden's own zoo.cfg key.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace warden::server::auth {

struct JaasEntry {
  std::string module;  // e.g. org.apache.zookeeper.server.auth.DigestLoginModule
  std::string flag;    // required, requisite, sufficient or optional
  std::map<std::string, std::string> options;
  int line = 0;
};

struct JaasFile {
  std::string path;
  std::map<std::string, std::vector<JaasEntry>> sections;
  const std::vector<JaasEntry>* section(const std::string& name) const {
    auto it = sections.find(name);
    return it == sections.end() ? nullptr : &it->second;
  }
};

// The file or one message naming the file, the line and what is wrong.
std::variant<JaasFile, std::string> parse_jaas(std::string_view text, const std::string& file_name);
std::variant<JaasFile, std::string> load_jaas(const std::string& file_name);

// The JAAS file ZooKeeper would use: -Djava.security.auth.login.config among the launcher's
// properties (jvm_flags.hpp: SERVER_JVMFLAGS, then JVMFLAGS, as given, then as the java.env in
// `config_dir` sets them; either variable may be null, `config_dir` empty). Empty: none.
// `origin` says where it was found, for messages.
std::string find_jaas_file(const char* server_jvmflags, const char* jvmflags, const std::string& config_dir,
                           std::string* origin);

// The DigestLoginModule users of a section (user_NAME="password" options): NAME -> password.
std::map<std::string, std::string> digest_users(const std::vector<JaasEntry>& section);

}  // namespace warden::server::auth
