#include "server/config/jvm_flags.hpp"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace warden::server {

namespace {
std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> jvm_properties(std::string_view flags) {
  // Words as a shell splits them: spaces outside quotes; the quotes themselves dropped.
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char ch : flags) {
    if (quote) {
      if (ch == quote)
        quote = 0;
      else
        word += ch;
    } else if (ch == '"' || ch == '\'') {
      quote = ch;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += ch;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& w : words) {
    if (w.rfind("-D", 0) != 0) continue;
    auto eq = w.find('=');
    if (eq == std::string::npos || eq == 2) continue;
    out.emplace_back(w.substr(2, eq - 2), w.substr(eq + 1));
  }
  return out;
}

void apply_java_env(std::string_view text, std::map<std::string, std::string>& flags,
                    std::map<std::string, std::string>* origins, const std::string& file_name) {
  std::istringstream in{std::string(text)};
  int line_no = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++line_no;
    std::string_view line = trimmed(raw);
    if (line.rfind("export ", 0) == 0) line = trimmed(line.substr(7));
    auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(line.substr(0, eq));
    if (name != "SERVER_JVMFLAGS" && name != "JVMFLAGS") continue;
    std::string_view value = line.substr(eq + 1);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    std::string out;
    for (size_t i = 0; i < value.size(); ++i) {
      if (value[i] != '$') {
        out += value[i];
        continue;
      }
      bool braced = i + 1 < value.size() && value[i + 1] == '{';
      size_t start = i + (braced ? 2 : 1), end = start;
      while (end < value.size() && (std::isalnum(static_cast<unsigned char>(value[end])) || value[end] == '_')) ++end;
      std::string ref(value.substr(start, end - start));
      if (braced && end < value.size() && value[end] == '}') ++end;
      if (auto it = flags.find(ref); it != flags.end())
        out += it->second;
      else if (const char* e = ref.empty() ? nullptr : std::getenv(ref.c_str()))
        out += e;
      i = end - 1;
    }
    flags[name] = out;
    if (origins) (*origins)[name] = file_name + ":" + std::to_string(line_no);
  }
}

std::vector<JvmProperty> launcher_properties(const char* server_jvmflags, const char* jvmflags,
                                             const std::string& config_dir) {
  std::map<std::string, std::string> flags, origins;
  if (server_jvmflags) flags["SERVER_JVMFLAGS"] = server_jvmflags, origins["SERVER_JVMFLAGS"] = "$SERVER_JVMFLAGS";
  if (jvmflags) flags["JVMFLAGS"] = jvmflags, origins["JVMFLAGS"] = "$JVMFLAGS";
  if (!config_dir.empty()) {
    std::string env_file = (std::filesystem::path(config_dir) / "java.env").string();
    if (std::ifstream env(env_file); env) {
      std::stringstream text;
      text << env.rdbuf();
      apply_java_env(text.str(), flags, &origins, env_file);
    }
  }
  std::vector<JvmProperty> out;
  for (const char* variable : {"SERVER_JVMFLAGS", "JVMFLAGS"}) {
    auto it = flags.find(variable);
    if (it == flags.end()) continue;
    for (auto& [name, value] : jvm_properties(it->second)) out.push_back({name, value, origins[variable]});
  }
  return out;
}

}  // namespace warden::server
