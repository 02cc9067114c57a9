// The znode pool: memory a mass delete frees goes back to the system (trim), the nodes that
// live are untouched, and the pool keeps serving afterwards.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "harness.hpp"
#include "server/state/node_pool.hpp"

using warden::server::NodePool;

namespace {
// The process's resident bytes (statm's second field, in pages).
[[maybe_unused]] size_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  size_t total = 0, resident = 0;
  f >> total >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

void fill(void* p, size_t n, unsigned char v) { std::memset(p, v, n); }
bool holds(const void* p, size_t n, unsigned char v) {
  auto c = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (c[i] != v) return false;
  return true;
}
}  // namespace

TEST_CASE("a node pool gives back what a mass delete empties and keeps the live nodes") {
  NodePool pool;
  std::vector<void*> live, churn;
  for (int i = 0; i < 2000; ++i) {
    live.push_back(pool.allocate(120));
    fill(live.back(), 120, static_cast<unsigned char>(i));
  }
  size_t churn_bytes = 0;
  for (int i = 0; i < 200000; ++i) {
    churn.push_back(pool.allocate(i % 3 ? 120 : 200));
    fill(churn.back(), i % 3 ? 120 : 200, 0xee);
    churn_bytes += i % 3 ? 120 : 200;
  }
#ifdef WARDEN_NODE_POOL_PASSTHROUGH
  // Under AddressSanitizer every node is the general heap's: nothing to trim.
  for (size_t i = 0; i < churn.size(); ++i) pool.release(churn[i], i % 3 ? 120 : 200);
  CHECK(pool.trim() == 0);
  CHECK(pool.slab_count() == 0);
  (void)churn_bytes;
#else
  size_t slabs = pool.slab_count(), blocks = pool.block_count();
  REQUIRE(slabs >= churn_bytes / NodePool::slab_bytes);
  for (size_t i = 0; i < churn.size(); ++i) pool.release(churn[i], i % 3 ? 120 : 200);
  CHECK(pool.free_bytes() == churn_bytes);
  size_t before = resident_bytes();
  size_t emptied = pool.trim();
  size_t after = resident_bytes();
  CHECK(emptied >= churn_bytes / NodePool::block_bytes - 4);
  CHECK(pool.block_count() == blocks - emptied);
  CHECK(pool.slab_count() < slabs / 2);
  CHECK(pool.free_bytes() < 4 * NodePool::block_bytes);  // what the kept blocks' free nodes hold
  CHECK(before - std::min(before, after) >= churn_bytes / 2);
  CHECK(pool.trim() == 0);  // nothing more to give
#endif
  for (int i = 0; i < 2000; ++i) CHECK(holds(live[static_cast<size_t>(i)], 120, static_cast<unsigned char>(i)));
  // The pool serves on, from spare blocks and new slabs.
  churn.clear();
  for (int i = 0; i < 50000; ++i) {
    churn.push_back(pool.allocate(120));
    fill(churn.back(), 120, 0x5a);
  }
  for (void* p : churn) CHECK(holds(p, 120, 0x5a));
  for (void* p : churn) pool.release(p, 120);
  for (int i = 0; i < 2000; ++i) pool.release(live[static_cast<size_t>(i)], 120);
}

TEST_CASE("a server gives back the memory of znodes deleted by the hundred thousand") {
  test::Harness h;
  test::Client a(h);
  a.connect();
  a.create("/keep", "k");
  a.create("/churn");
  for (int i = 0; i < 100000; ++i) a.create("/churn/n" + std::to_string(i), std::string(100, 'v'));
  size_t spare_before = h.server.tree().spare_node_bytes();
  for (int i = 0; i < 100000; ++i)
    REQUIRE(a.call(test::OpCode::remove, warden::wire::DeleteRequest{"/churn/n" + std::to_string(i), -1}).err() ==
            test::Err::ok);
#ifdef WARDEN_NODE_POOL_PASSTHROUGH
  (void)spare_before;
  CHECK(h.server.tree().spare_node_bytes() == 0);  // the general heap's, not the pool's
  CHECK(h.server.trim_spare_nodes() == 0);
#else
  CHECK(h.server.tree().spare_node_bytes() >= spare_before + 100000 * 100);
  CHECK(h.server.trim_spare_nodes() > 100000 * 100 / NodePool::block_bytes / 2);
  CHECK(h.server.tree().spare_node_bytes() < 100000 * 100 / 4);
#endif
  CHECK(a.exists("/keep"));
  CHECK(a.children("/churn").empty());
  a.create("/churn/again", "x");  // new nodes come from the pool as before
  CHECK(a.exists("/churn/again"));
}
