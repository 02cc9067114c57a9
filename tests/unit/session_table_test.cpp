// The session table's expiry buckets, against a plain model of what each session's deadline is.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

#include "server/state/session_table.hpp"

using warden::server::SessionId;
using warden::server::SessionTable;

namespace {
// What the table must hold: each open session's bucket, and which are closing.
struct Model {
  int64_t tick;
  std::map<SessionId, int32_t> timeout;
  std::map<SessionId, int64_t> deadline;
  std::set<SessionId> closing;

  int64_t bucket(int64_t t) const { return (t / tick + 1) * tick; }

  std::vector<std::pair<int64_t, std::vector<SessionId>>> sets() const {
    std::map<int64_t, std::vector<SessionId>> by;
    for (auto [id, d] : deadline)
      if (!closing.count(id)) by[d].push_back(id);
    return {by.begin(), by.end()};
  }
};
}  // namespace

TEST_CASE("a touch moves a session to the bucket of its new deadline") {
  SessionTable t(2000);
  t.add(1, 10000, "p", 0);
  t.add(2, 10000, "p", 0);
  t.add(3, 4000, "p", 500);
  auto sets = t.expiry_sets();
  REQUIRE(sets.size() == 2);
  CHECK(sets[0] == std::pair<int64_t, std::vector<SessionId>>{6000, {3}});
  CHECK(sets[1] == std::pair<int64_t, std::vector<SessionId>>{12000, {1, 2}});

  CHECK(t.touch(1, 3000));  // 13000 -> bucket 14000
  CHECK(t.touch(2, 1000));  // 11000 -> 12000: stays
  sets = t.expiry_sets();
  REQUIRE(sets.size() == 3);
  CHECK(sets[1] == std::pair<int64_t, std::vector<SessionId>>{12000, {2}});
  CHECK(sets[2] == std::pair<int64_t, std::vector<SessionId>>{14000, {1}});

  CHECK(t.take_expired(5999).empty());
  CHECK(t.take_expired(6000) == std::vector<SessionId>{3});
  CHECK_FALSE(t.touch(3, 6000));  // closing: no new requests
  CHECK(t.find(3)->closing);
  CHECK_FALSE(t.touch(99, 6000));

  auto both = t.take_expired(20000);
  std::sort(both.begin(), both.end());
  CHECK(both == std::vector<SessionId>{1, 2});
  CHECK(t.expiry_sets().empty());
  CHECK(t.size() == 3);  // expired sessions stay until their close txn removes them

  t.reopen_closing(21000);  // their closes were lost: all three expire at the next check
  sets = t.expiry_sets();
  REQUIRE(sets.size() == 1);
  CHECK(sets[0] == std::pair<int64_t, std::vector<SessionId>>{21000, {1, 2, 3}});
  t.remove(2);
  t.remove(2);
  auto rest = t.take_expired(21000);
  std::sort(rest.begin(), rest.end());
  CHECK(rest == std::vector<SessionId>{1, 3});
  CHECK(t.size() == 2);
}

TEST_CASE("a session added again leaves its old bucket") {
  SessionTable t(1000);
  t.add(7, 5000, "a", 0);
  t.add(7, 5000, "b", 10000);  // replayed from the log after a snapshot held it
  auto sets = t.expiry_sets();
  REQUIRE(sets.size() == 1);
  CHECK(sets[0].first == 16000);
  CHECK(t.take_expired(15000).empty());
  CHECK(t.find(7)->passwd == "b");
}

TEST_CASE("the buckets agree with a model under random adds, touches, removes and expiries") {
  std::mt19937_64 rng(26);
  for (int round = 0; round < 20; ++round) {
    const int64_t tick = 1 + static_cast<int64_t>(rng() % 3000);
    SessionTable t(static_cast<int32_t>(tick));
    Model m{tick, {}, {}, {}};
    int64_t now = 0;
    for (int step = 0; step < 3000; ++step) {
      now += static_cast<int64_t>(rng() % 700);
      const SessionId id = static_cast<SessionId>(1 + rng() % 200);
      switch (rng() % 8) {
        case 0:
        case 1: {
          const int32_t timeout = 1000 + static_cast<int32_t>(rng() % 20000);
          t.add(id, timeout, "p", now);
          m.timeout[id] = timeout;
          m.deadline[id] = m.bucket(now + timeout);
          m.closing.erase(id);
          break;
        }
        case 2:
        case 3:
        case 4: {
          const bool open = m.deadline.count(id) && !m.closing.count(id);
          REQUIRE(t.touch(id, now) == open);
          if (open) m.deadline[id] = std::max(m.deadline[id], m.bucket(now + m.timeout[id]));
          break;
        }
        case 5:
          t.remove(id);
          m.timeout.erase(id);
          m.deadline.erase(id);
          m.closing.erase(id);
          break;
        case 6: {
          auto got = t.take_expired(now);
          std::sort(got.begin(), got.end());
          std::vector<SessionId> want;
          for (auto [sid, d] : m.deadline)
            if (d <= now && !m.closing.count(sid)) want.push_back(sid);
          REQUIRE(got == want);
          for (SessionId sid : want) m.closing.insert(sid);
          break;
        }
        default:
          if (rng() % 10 == 0) {
            t.reopen_closing(now);
            for (SessionId sid : m.closing) m.deadline[sid] = now;
            m.closing.clear();
          }
      }
      REQUIRE(t.size() == m.deadline.size());
      if (step % 50 == 0) REQUIRE(t.expiry_sets() == m.sets());
    }
    REQUIRE(t.expiry_sets() == m.sets());
  }
}
