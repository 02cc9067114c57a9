#include "server/auth/jaas.hpp"

#include "server/config/config.hpp"
#include "server/config/jvm_flags.hpp"
#include "server/secrets/redaction.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

namespace warden::server::auth {

namespace {
constexpr size_t max_jaas_bytes = 1u << 20;  // a login configuration is a few lines

struct Token {
  enum class Kind { word, quoted, open, close, semicolon, equals, end } kind;
  std::string text;
  int line;
};

// JAAS's syntax (Java's ConfigFile): words, "quoted strings", { } ; =, and comments in // and
// /* */ form (and #, which Java's tokenizer also skips).
std::variant<std::vector<Token>, std::string> tokens(std::string_view s, const std::string& file) {
  std::vector<Token> out;
  int line = 1;
  size_t i = 0;
  auto fail = [&](const std::string& why) { return file + ":" + std::to_string(line) + ": " + why; };
  while (i < s.size()) {
    char ch = s[i];
    if (ch == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      ++i;
    } else if (ch == '#' || (ch == '/' && i + 1 < s.size() && s[i + 1] == '/')) {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (ch == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t end = s.find("*/", i + 2);
      if (end == std::string_view::npos) return fail("a /* comment is never closed");
      for (size_t k = i; k < end; ++k) line += s[k] == '\n';
      i = end + 2;
    } else if (ch == '{' || ch == '}' || ch == ';' || ch == '=') {
      out.push_back({ch == '{'   ? Token::Kind::open
                     : ch == '}' ? Token::Kind::close
                     : ch == ';' ? Token::Kind::semicolon
                                 : Token::Kind::equals,
                     std::string(1, ch), line});
      ++i;
    } else if (ch == '"') {
      std::string v;
      int start = line;
      ++i;
      while (i < s.size() && s[i] != '"') {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;  // Java's StreamTokenizer takes \" and \\ so
        if (s[i] == '\n') ++line;
        v += s[i++];
      }
      if (i >= s.size()) return file + ":" + std::to_string(start) + ": a quoted value is never closed";
      ++i;
      out.push_back({Token::Kind::quoted, v, start});
    } else {
      std::string w;
      while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])) && s[i] != '{' && s[i] != '}' &&
             s[i] != ';' && s[i] != '=' && s[i] != '"')
        w += s[i++];
      for (unsigned char c : w)
        if (c < 0x20 || c == 0x7f) return fail("a control character in '" + server::shown(w) + "'");
      out.push_back({Token::Kind::word, w, line});
    }
  }
  out.push_back({Token::Kind::end, "", line});
  return out;
}

}  // namespace

std::variant<JaasFile, std::string> parse_jaas(std::string_view text, const std::string& file_name) {
  auto lexed = tokens(text, file_name);
  if (auto* e = std::get_if<std::string>(&lexed)) return *e;
  const auto& t = std::get<std::vector<Token>>(lexed);
  JaasFile f;
  f.path = file_name;
  size_t i = 0;
  auto at = [&](const Token& k) { return file_name + ":" + std::to_string(k.line) + ": "; };
  auto shown = [&](const Token& k) {
    if (k.kind == Token::Kind::end) return std::string("the end of the file");
    // A token right after a secret option's name (password "x", password = "x") is its value.
    size_t n = static_cast<size_t>(&k - t.data());
    for (size_t back = 1; back <= 2 && back <= n; ++back)
      if (t[n - back].kind == Token::Kind::word && secrets::secret_key(t[n - back].text))
        return std::string(secrets::mask);
    // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict) on "'" + std::string&&.
    std::string out(1, '\'');
    out += server::shown(k.text);
    out += '\'';
    return out;
  };
  while (t[i].kind != Token::Kind::end) {
    if (t[i].kind != Token::Kind::word) return at(t[i]) + "expected a section name, got " + shown(t[i]);
    std::string name = t[i].text;
    if (f.sections.count(name)) return at(t[i]) + "section " + name + " is given twice";
    ++i;
    if (t[i].kind != Token::Kind::open) return at(t[i]) + "expected '{' after " + name + ", got " + shown(t[i]);
    ++i;
    auto& entries = f.sections[name];
    while (t[i].kind != Token::Kind::close) {
      if (t[i].kind != Token::Kind::word) return at(t[i]) + "expected a login module in " + name + ", got " + shown(t[i]);
      JaasEntry e;
      e.module = t[i].text;
      e.line = t[i].line;
      ++i;
      if (t[i].kind != Token::Kind::word) return at(t[i]) + "expected a flag after " + e.module + ", got " + shown(t[i]);
      e.flag = t[i].text;
      if (e.flag != "required" && e.flag != "requisite" && e.flag != "sufficient" && e.flag != "optional")
        return at(t[i]) + "the flag of " + e.module + " must be required, requisite, sufficient or optional, not '" +
               e.flag.substr(0, 40) + "'";
      ++i;
      while (t[i].kind != Token::Kind::semicolon) {
        if (t[i].kind != Token::Kind::word)
          return at(t[i]) + "expected an option (name=value) or ';' in " + name + ", got " + shown(t[i]);
        std::string key = t[i].text;
        ++i;
        if (t[i].kind != Token::Kind::equals) return at(t[i]) + "expected '=' after " + key + ", got " + shown(t[i]);
        ++i;
        if (t[i].kind != Token::Kind::quoted && t[i].kind != Token::Kind::word)
          return at(t[i]) + "expected a value for " + key + ", got " + shown(t[i]);
        e.options[key] = t[i].text;
        ++i;
      }
      ++i;  // ';'
      entries.push_back(std::move(e));
    }
    ++i;  // '}'
    if (t[i].kind != Token::Kind::semicolon) return at(t[i]) + "expected ';' after the } of " + name + ", got " + shown(t[i]);
    ++i;
  }
  return f;
}

std::variant<JaasFile, std::string> load_jaas(const std::string& file_name) {
  std::string text;
  if (!config_text::read_file(file_name, text)) return file_name + ": the JAAS file cannot be read";
  if (text.size() > max_jaas_bytes) return file_name + ": larger than 1 MiB: not a JAAS login configuration";
  return parse_jaas(text, file_name);
}

std::string find_jaas_file(const char* server_jvmflags, const char* jvmflags, const std::string& config_dir,
                           std::string* origin) {
  for (const auto& p : launcher_properties(server_jvmflags, jvmflags, config_dir)) {
    if (p.name != "java.security.auth.login.config" || p.value.empty()) continue;
    if (origin) *origin = p.origin;
    return p.value;
  }
  return {};
}

std::map<std::string, std::string> digest_users(const std::vector<JaasEntry>& section) {
  std::map<std::string, std::string> users;
  for (const auto& e : section) {
    if (e.module != "org.apache.zookeeper.server.auth.DigestLoginModule") continue;
    for (const auto& [k, v] : e.options)
      if (k.rfind("user_", 0) == 0 && k.size() > 5) users[k.substr(5)] = v;
  }
  return users;
}

}  // namespace warden::server::auth
