// JAAS files as ZooKeeper's users write them, where ZooKeeper's scripts find them, and garbage.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "server/auth/jaas.hpp"
#include "server/auth/sasl_server.hpp"

using namespace warden::server::auth;

namespace {
JaasFile parsed(const std::string& text) {
  auto r = parse_jaas(text, "j.conf");
  if (auto* e = std::get_if<std::string>(&r)) FAIL(*e);
  return std::get<JaasFile>(r);
}
std::string error(const std::string& text) {
  auto r = parse_jaas(text, "j.conf");
  REQUIRE(std::holds_alternative<std::string>(r));
  return std::get<std::string>(r);
}
}  // namespace

TEST_CASE("JAAS: sections, modules, flags and options as ZooKeeper's documentation writes them") {
  auto f = parsed(
      "// the server's side\n"
      "Server {\n"
      "  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
      "  user_super=\"adminsecret\"\n"
      "  user_bob=\"bob's \\\"secret\\\"\";\n"
      "};\n"
      "/* Kerberos, for later */\n"
      "QuorumServer { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true\n"
      "  keyTab=\"/etc/zk.keytab\" principal=\"zookeeper/host@EXAMPLE.COM\"; };\n"
      "# an empty one\nClient { };\n");
  REQUIRE(f.section("Server"));
  REQUIRE(f.section("Server")->size() == 1);
  const auto& e = f.section("Server")->front();
  CHECK(e.flag == "required");
  CHECK(e.line == 3);
  auto users = digest_users(*f.section("Server"));
  CHECK(users == std::map<std::string, std::string>{{"super", "adminsecret"}, {"bob", "bob's \"secret\""}});
  CHECK(f.section("QuorumServer")->front().options.at("useKeyTab") == "true");
  CHECK(f.section("Client")->empty());
  CHECK_FALSE(f.section("Nope"));
}

TEST_CASE("JAAS: bad files name the file, the line and what is wrong") {
  CHECK(error("Server {\n  m required\n") == "j.conf:3: expected an option (name=value) or ';' in Server, got the end "
                                            "of the file");
  CHECK(error("Server {\n  m always;\n};") ==
        "j.conf:2: the flag of m must be required, requisite, sufficient or optional, not 'always'");
  CHECK(error("Server {\n m required a=\"b;\n};\n") == "j.conf:2: a quoted value is never closed");
  CHECK(error("Server { m required a; };") == "j.conf:1: expected '=' after a, got ';'");
  CHECK(error("Server { };\nServer { };") == "j.conf:2: section Server is given twice");
  CHECK(error("/* never closed") == "j.conf:1: a /* comment is never closed");
  CHECK(error("Server { m required; }") == "j.conf:1: expected ';' after the } of Server, got the end of the file");
  CHECK(error(std::string("Ser\x01ver { };")).find("control character") != std::string::npos);
  // Garbage of every kind: an error or a file, never a crash or a hang.
  std::mt19937 rng(7);
  const std::string alphabet = "{};=\"/*# \n\tabcXYZ_.\\\x01\xff";
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    for (int n = rng() % 80; n > 0; --n) s += alphabet[rng() % alphabet.size()];
    (void)parse_jaas(s, "g.conf");
  }
}

TEST_CASE("JAAS: found where ZooKeeper's scripts pass it to the JVM") {
  std::string origin;
  CHECK(find_jaas_file("-Xmx1g -Djava.security.auth.login.config=/a/jaas.conf -Dx=1", nullptr, "", &origin) ==
        "/a/jaas.conf");
  CHECK(origin == "$SERVER_JVMFLAGS");
  CHECK(find_jaas_file(nullptr, "-Djava.security.auth.login.config=\"/b c/j.conf\"", "", &origin) == "/b c/j.conf");
  CHECK(origin == "$JVMFLAGS");
  CHECK(find_jaas_file("-Xmx1g", nullptr, "", &origin).empty());
  auto dir = std::filesystem::temp_directory_path() / ("warden-jaas-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "java.env") << "# comment -Djava.security.auth.login.config=/no\n"
                                  << "export SERVER_JVMFLAGS=\"-Djava.security.auth.login.config=/etc/zk/jaas.conf\"\n";
  CHECK(find_jaas_file(nullptr, nullptr, dir.string(), &origin) == "/etc/zk/jaas.conf");
  CHECK(origin == (dir / "java.env").string() + ":2");
  std::filesystem::remove_all(dir);
}

TEST_CASE("a Kerberos principal becomes ZooKeeper's sasl id, host and realm removed on request") {
  CHECK(kerberos_id("alice@EX.COM", false, false) == "alice@EX.COM");
  CHECK(kerberos_id("svc/host.ex.com@EX.COM", false, false) == "svc/host.ex.com@EX.COM");
  CHECK(kerberos_id("svc/host.ex.com@EX.COM", true, false) == "svc@EX.COM");
  CHECK(kerberos_id("svc/host.ex.com@EX.COM", false, true) == "svc/host.ex.com");
  CHECK(kerberos_id("svc/host.ex.com@EX.COM", true, true) == "svc");
  CHECK(kerberos_id("plain", true, true) == "plain");
}
