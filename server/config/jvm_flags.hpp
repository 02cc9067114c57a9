// What ZooKeeper's launcher passes its JVM, for the settings its users give there: zkServer.sh
// runs the JVM with SERVER_JVMFLAGS and JVMFLAGS, which zkEnv.sh lets the java.env beside
// zoo.cfg set further. Their -D properties are read from here, by zoo.cfg's parser
// (readonlymode.enabled and the like) and by the JAAS file's lookup
// (java.security.auth.login.config): one reading of the flags for both.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warden::server {

struct JvmProperty {
  std::string name, value;
  std::string origin;  // "$SERVER_JVMFLAGS", or "DIR/java.env:N" where java.env last set the variable
};

// The -Dname=value words of `flags`; a value quoted with " or ' may hold spaces.
std::vector<std::pair<std::string, std::string>> jvm_properties(std::string_view flags);

// java.env as zkEnv.sh sources it, for what it sets SERVER_JVMFLAGS and JVMFLAGS to: `[export]
// NAME=value` lines, the value quoted or not, $NAME and ${NAME} expanded (these two from
// `flags`, others from the environment); other lines are ignored, nothing is run. `origins`
// gets "FILE:N" for each variable a line set (FILE: `file_name`).
void apply_java_env(std::string_view text, std::map<std::string, std::string>& flags,
                    std::map<std::string, std::string>* origins = nullptr, const std::string& file_name = "java.env");

// The properties of SERVER_JVMFLAGS, then JVMFLAGS: their values as given (null: unset), then as
// the java.env in `config_dir` sets them (none when empty or absent).
std::vector<JvmProperty> launcher_properties(const char* server_jvmflags, const char* jvmflags,
                                             const std::string& config_dir);

}  // namespace warden::server
