// A client's reconfig as prep checks it (server/reconfig/reconfig_request.hpp), against a gate
// the test sets: ZooKeeper's codes in ZooKeeper's order, garbage refused with BadArguments, and
// the new configuration's text; and the reconfig txn the core reads the members from.
#include <catch2/catch.hpp>

#include <random>

#include "server/reconfig/config_txn.hpp"
#include "server/reconfig/reconfig_request.hpp"

using namespace warden;
using namespace warden::server;
using wire::Err;

namespace {
struct TestGate final : reconfig::Gate {
  bool on = true, members = true, standalone = true, pending = false, synced = true;
  int64_t at = 0x100000005;
  bool enabled() const override { return on; }
  bool ensemble() const override { return members; }
  bool standalone_enabled() const override { return standalone; }
  bool in_progress() const override { return pending; }
  int64_t version() const override { return at; }
  bool quorum_synced(const reconfig::Members&) const override { return synced; }
};

const std::string current =
    "server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n"
    "server.2=127.0.0.2:2888:3888:participant;0.0.0.0:2181\n"
    "server.3=127.0.0.3:2888:3888:participant;0.0.0.0:2181\n"
    "version=100000005";

wire::ReconfigRequest incremental(wire::Bytes joining, wire::Bytes leaving, int64_t from = -1) {
  return wire::ReconfigRequest{std::move(joining), std::move(leaving), std::nullopt, from};
}

Err err_of(const std::variant<reconfig::Plan, Err>& r) { return std::holds_alternative<Err>(r) ? std::get<Err>(r) : Err::ok; }
}  // namespace

TEST_CASE("reconfig: ZooKeeper's refusals in ZooKeeper's order") {
  TestGate g;
  auto leave3 = incremental(std::nullopt, "3");
  g.on = false;
  g.members = false;
  g.pending = true;
  CHECK(err_of(reconfig::plan(leave3, current, g)) == Err::reconfigDisabled);
  g.on = true;
  CHECK(err_of(reconfig::plan(leave3, current, g)) == Err::unimplemented);  // standalone
  g.members = true;
  CHECK(err_of(reconfig::plan(leave3, current, g)) == Err::reconfigInProgress);
  g.pending = false;
  CHECK(err_of(reconfig::plan(incremental(std::nullopt, "3", 7), current, g)) == Err::badVersion);
  CHECK(err_of(reconfig::plan(incremental(std::nullopt, "3", 0x100000005), current, g)) == Err::ok);
  CHECK(err_of(reconfig::plan(incremental(std::nullopt, "2,3"), current, g)) == Err::badArguments);
  g.standalone = false;  // then one voter is enough
  CHECK(err_of(reconfig::plan(incremental(std::nullopt, "2,3"), current, g)) == Err::ok);
  g.synced = false;
  CHECK(err_of(reconfig::plan(leave3, current, g)) == Err::newConfigNoQuorum);
}

TEST_CASE("reconfig: the new configuration's text, incremental and not") {
  TestGate g;
  auto r = reconfig::plan(incremental("server.4=127.0.0.4:2888:3888:observer;2181", "1"), current, g);
  REQUIRE(std::holds_alternative<reconfig::Plan>(r));
  const auto& plan = std::get<reconfig::Plan>(r);
  CHECK(plan.text ==
        "server.2=127.0.0.2:2888:3888:participant;0.0.0.0:2181\n"
        "server.3=127.0.0.3:2888:3888:participant;0.0.0.0:2181\n"
        "server.4=127.0.0.4:2888:3888:observer;0.0.0.0:2181\n");
  CHECK(plan.members.voters == std::vector<int64_t>{2, 3});
  CHECK(plan.members.observers == std::vector<int64_t>{4});
  // A joiner with the id of a member replaces it (here: a role change).
  auto role = reconfig::plan(incremental("server.3=127.0.0.3:2888:3888:observer;0.0.0.0:2181", std::nullopt), current, g);
  REQUIRE(std::holds_alternative<reconfig::Plan>(role));
  CHECK(std::get<reconfig::Plan>(role).members.observers == std::vector<int64_t>{3});
  // A whole list, commas or newlines between its lines.
  wire::ReconfigRequest whole{std::nullopt, std::nullopt,
                              "server.5=127.0.0.5:2888:3888;2181,server.6=127.0.0.6:2888:3888;2181\n"
                              "server.7=127.0.0.7:2888:3888:participant;127.0.0.7:2181",
                              -1};
  auto w = reconfig::plan(whole, current, g);
  REQUIRE(std::holds_alternative<reconfig::Plan>(w));
  CHECK(std::get<reconfig::Plan>(w).members.voters == std::vector<int64_t>{5, 6, 7});
}

TEST_CASE("reconfig: garbage is BadArguments, never a crash") {
  TestGate g;
  CHECK(err_of(reconfig::plan(incremental(std::nullopt, "x"), current, g)) == Err::badArguments);
  CHECK(err_of(reconfig::plan(incremental("server.9=nonsense", std::nullopt), current, g)) == Err::badArguments);
  CHECK(err_of(reconfig::plan(incremental("server.9=127.0.0.1:1:2", std::nullopt), current, g)) == Err::badArguments);
  CHECK(err_of(reconfig::plan(incremental("server.9=127.0.0.1:2888:3888;1", std::nullopt), current, g)) ==
        Err::badArguments);  // the address of server 1
  // Any server id, as ZooKeeper takes it (kazoo's test_no_super_auth adds server.999), but a number.
  CHECK(err_of(reconfig::plan(incremental("server.999=0.0.0.0:1234:2345:observer;3456", std::nullopt), current, g)) ==
        Err::ok);
  CHECK(err_of(reconfig::plan(incremental("server.99999999999=0.0.0.0:1234:2345;3456", std::nullopt), current, g)) ==
        Err::badArguments);
  CHECK(err_of(reconfig::plan(wire::ReconfigRequest{std::nullopt, std::nullopt, "", -1}, current, g)) ==
        Err::badArguments);
  CHECK(err_of(reconfig::plan(wire::ReconfigRequest{std::nullopt, std::nullopt, "tickTime=5", -1}, current, g)) ==
        Err::badArguments);
  std::mt19937_64 rng(11);
  for (int i = 0; i < 3000; ++i) {
    std::string junk(rng() % 80, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng() % 4 ? "server.=:;,0123456789\n"[rng() % 22] : rng());
    wire::ReconfigRequest req{rng() % 2 ? wire::Bytes(junk) : std::nullopt, rng() % 2 ? wire::Bytes(junk) : std::nullopt,
                              rng() % 3 ? std::nullopt : wire::Bytes(junk), -1};
    auto r = reconfig::plan(req, rng() % 2 ? current : junk, g);
    if (auto* p = std::get_if<reconfig::Plan>(&r)) CHECK(!p->members.voters.empty());
  }
}

TEST_CASE("reconfig txn: the members a txn installs, nothing for any other txn or for garbage") {
  auto txn = reconfig::config_txn("server.1=127.0.0.1:2888:3888:participant;2181\n"
                                  "server.2=127.0.0.2:2888:3888:observer;2181\n",
                                  0, 0, 0);
  auto m = reconfig::members_in_txn(encode_txn(txn));
  REQUIRE(m);
  CHECK(m->voters == std::vector<int64_t>{1});
  CHECK(m->observers == std::vector<int64_t>{2});
  Txn set = txn;
  set.type = static_cast<int32_t>(wire::OpCode::setData);
  CHECK_FALSE(reconfig::members_in_txn(encode_txn(set)));
  CHECK_FALSE(reconfig::members_in_txn(encode_txn(reconfig::config_txn("server.2=127.0.0.2:2888:3888:observer;2181\n", 0, 0, 0))));
  CHECK_FALSE(reconfig::members_in_txn(encode_txn(reconfig::config_txn("garbage", 0, 0, 0))));
  std::string bytes = encode_txn(txn);
  for (size_t cut = 0; cut < bytes.size(); ++cut) CHECK_FALSE(reconfig::members_in_txn(bytes.substr(0, cut)));
}
