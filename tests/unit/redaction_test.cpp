// What the server shows of its settings: secrets masked by their key's name (issue 45, point 1).
#include <catch2/catch.hpp>

#include <random>

#include "server/auth/jaas.hpp"
#include "server/config/config.hpp"
#include "server/secrets/redaction.hpp"

using namespace warden::server;

TEST_CASE("a key that names a password, a secret or the super digest is a secret") {
  for (const char* k : {"ssl.keyStore.password", "ssl.trustStore.password", "ssl.quorum.keyStore.password",
                        "zookeeper.ssl.keyStore.password", "DigestAuthenticationProvider.superDigest",
                        "zookeeper.DigestAuthenticationProvider.superDigest", "ssl.keyStore.passwordPath",
                        "some.client.secret", "-Dzookeeper.ssl.trustStore.password", "user_super", "PASSWD",
                        " password "})
    CHECK(secrets::secret_key(k));
  for (const char* k : {"tickTime", "dataDir", "ssl.keyStore.location", "ssl.keyStore.type", "clientPort",
                        "admin.serverPort", "username", "", "user.name"})
    CHECK_FALSE(secrets::secret_key(k));
  CHECK(secrets::shown_value("ssl.keyStore.password", "pw") == "********");
  CHECK(secrets::shown_value("tickTime", "2000") == "2000");
}

TEST_CASE("a configuration text keeps every byte but a secret's value") {
  std::string text =
      "tickTime=2000\n"
      "ssl.keyStore.password = s3cret\n"
      "# ssl.trustStore.password=old\n"
      "DigestAuthenticationProvider.superDigest=super:abc=\n"
      "no equals here\n"
      "dataDir=/var/x=y";
  CHECK(secrets::redacted_text(text) ==
        "tickTime=2000\n"
        "ssl.keyStore.password =********\n"
        "# ssl.trustStore.password=********\n"
        "DigestAuthenticationProvider.superDigest=********\n"
        "no equals here\n"
        "dataDir=/var/x=y");
  CHECK(secrets::redacted_text("") == "");
  CHECK(secrets::redacted_text("\n\n") == "\n\n");
}

TEST_CASE("garbage through the redaction never shows a secret's value nor crashes") {
  std::mt19937 rng(45);
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    int n = static_cast<int>(rng() % 200);
    for (int i = 0; i < n; ++i) text += static_cast<char>(rng() % 256);
    if (rng() % 2) text += "\npassword=HIDDEN\n";
    std::string out = secrets::redacted_text(text);
    CHECK(out.find("HIDDEN") == std::string::npos);
  }
}

TEST_CASE("a refused value of a secret key is named by file, line and key, its value masked") {
  auto r = parse_config("tickTime=2000\nDigestAuthenticationProvider.superDigest=nocolonhere\n", "zoo.cfg");
  REQUIRE(std::holds_alternative<std::string>(r));
  auto err = std::get<std::string>(r);
  CHECK(err.find("zoo.cfg:2: DigestAuthenticationProvider.superDigest=********") == 0);
  CHECK(err.find("nocolonhere") == std::string::npos);
  auto r2 = parse_config("tickTime=2000\nssl.keyStore.password hunter2\n", "zoo.cfg");
  REQUIRE(std::holds_alternative<std::string>(r2));
  CHECK(std::get<std::string>(r2).find("hunter2") == std::string::npos);
}

TEST_CASE("a JAAS file's error never shows a password") {
  auto r = auth::parse_jaas("Server {\n org.Digest required\n user_super \"hunter2\";\n};\n", "jaas.conf");
  REQUIRE(std::holds_alternative<std::string>(r));
  CHECK(std::get<std::string>(r).find("hunter2") == std::string::npos);
  auto r2 = auth::parse_jaas("Server {\n org.Digest required\n password = \"hunter2\" x y;\n};\n", "jaas.conf");
  REQUIRE(std::holds_alternative<std::string>(r2));
  CHECK(std::get<std::string>(r2).find("hunter2") == std::string::npos);
}
