// Quorum arithmetic (consensus/quorum.hpp): majorities, counting, and how far a quorum's
// acknowledgements reach, against the answers worked by hand.
#include "consensus/quorum.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "consensus/zab_peer.hpp"

using namespace warden::consensus;

TEST_CASE("a majority is more than half of the voters", "[quorum]") {
  CHECK(majority_of(1) == 1);
  CHECK(majority_of(2) == 2);
  CHECK(majority_of(3) == 2);
  CHECK(majority_of(4) == 3);
  CHECK(majority_of(5) == 3);
  CHECK(majority_of(7) == 4);
  // Observers never count: an ensemble's quorum is over its voters only.
  Ensemble e{{1, 2, 3}, {4, 5, 6, 7}, 0, {}};
  CHECK(e.quorum() == 2);
}

TEST_CASE("count_of counts the voters a predicate names", "[quorum]") {
  std::vector<int64_t> voters{1, 2, 3, 4, 5};
  CHECK(count_of(voters, [](int64_t p) { return p % 2 == 1; }) == 3);
  CHECK(count_of(voters, [](int64_t) { return false; }) == 0);
  CHECK(count_of(std::vector<int64_t>{}, [](int64_t) { return true; }) == 0);
}

TEST_CASE("reached_by_quorum is the position a quorum of acknowledgements holds", "[quorum]") {
  // Three voters acked 5, 9 and 3: two of them hold 5, all three hold 3, one holds 9.
  CHECK(reached_by_quorum({5, 9, 3}, 2) == 5);
  CHECK(reached_by_quorum({5, 9, 3}, 3) == 3);
  CHECK(reached_by_quorum({5, 9, 3}, 1) == 9);
  // Equal acknowledgements, and too few of them to make the quorum.
  CHECK(reached_by_quorum({7, 7, 2, 7, 1}, 3) == 7);
  CHECK(reached_by_quorum({7, 7}, 3) == 0);
  CHECK(reached_by_quorum({}, 1) == 0);
  CHECK(reached_by_quorum({4}, 0) == 0);
}
