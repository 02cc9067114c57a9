// The child index against std::set under random inserts and erases: order, lookups, the
// cursor's after(), and the leaves' splits and merges.
#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "server/state/child_index.hpp"

namespace {
struct Named {
  std::string n;
  std::string_view name() const { return n; }
};

// A name such as "k17" (built by appending: GCC 12 at -O3 misreads "k" + std::string).
std::string key(char c, long n) { return std::string(1, c).append(std::to_string(n)); }

std::vector<std::string> listed(const warden::server::ChildIndex<Named>& idx) {
  std::vector<std::string> out;
  for (const Named& k : idx) out.push_back(k.n);
  return out;
}
}  // namespace

TEST_CASE("the child index keeps names in order through random inserts and erases") {
  using Index = warden::server::ChildIndex<Named>;
  std::mt19937 rng(42);
  for (int round = 0; round < 4; ++round) {
    Index idx;
    std::set<std::string> model;
    std::vector<std::unique_ptr<Named>> owned;
    int range = round % 2 ? 300 : 5000;  // few names: many erases and merges; many: many splits
    for (int step = 0; step < 20000; ++step) {
      std::string name = key('k', rng() % range);
      if (rng() % 3 == 0 && round >= 2) name = key('z', step);  // appends in order
      bool add = rng() % 5 < 3;
      if (add) {
        owned.push_back(std::make_unique<Named>(Named{name}));
        bool fresh = idx.insert(owned.back().get());
        REQUIRE(fresh == model.insert(name).second);
      } else {
        REQUIRE(idx.erase(name) == (model.erase(name) == 1));
      }
      REQUIRE(idx.size() == model.size());
      if (step % 500 == 0) {
        REQUIRE(listed(idx) == std::vector<std::string>(model.begin(), model.end()));
        for (int probe = 0; probe < 20; ++probe) {
          std::string q = key('k', rng() % range);
          REQUIRE((idx.find(q) != nullptr) == (model.count(q) == 1));
          auto it = idx.after(q);
          auto want = model.upper_bound(q);
          if (want == model.end())
            REQUIRE(it == idx.end());
          else
            REQUIRE(it->n == *want);
        }
      }
    }
    REQUIRE(listed(idx) == std::vector<std::string>(model.begin(), model.end()));
  }
}

TEST_CASE("children appended in order fill whole leaves, and a replaced pointer keeps its place") {
  using Index = warden::server::ChildIndex<Named>;
  Index idx;
  std::vector<std::unique_ptr<Named>> owned;
  char buf[16];
  for (int i = 0; i < 1000; ++i) {
    std::snprintf(buf, sizeof buf, "n-%010d", i);
    owned.push_back(std::make_unique<Named>(Named{buf}));
    REQUIRE(idx.insert(owned.back().get()));
  }
  CHECK_FALSE(idx.insert(owned[500].get()));  // taken
  CHECK(idx.size() == 1000);
  CHECK(idx.leaf_count() == 16);  // 15 full leaves of 63 and one of 55
  Named moved{owned[700]->n};
  idx.replace(owned[700].get(), &moved);
  CHECK(idx.find(moved.n) == &moved);
  CHECK(idx.after("n-0000000699")->n == moved.n);
  CHECK(idx.after("n-0000000999") == idx.end());
  CHECK(idx.after("") == idx.begin());
  int seen = 0;
  idx.drain([&](Named*) { ++seen; });
  CHECK(seen == 1000);
  CHECK(idx.empty());
  CHECK(idx.begin() == idx.end());
}
