// A connection's send queue: the bytes it takes come out in order; small frames share buffers,
// a large frame keeps its own (the very buffer it was made in, not a copy).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "server/network/send_queue.hpp"

using warden::server::SendQueue;

namespace {
std::string joined(const std::vector<std::string>& parts) {
  std::string all;
  for (const auto& p : parts) all += p;
  return all;
}
}  // namespace

TEST_CASE("send queue: frames come out whole and in order", "[send_queue]") {
  SendQueue q;
  std::string want;
  for (int i = 0; i < 2000; ++i) {
    // Sizes from a few bytes to past the own-buffer threshold, in no pattern.
    size_t size = static_cast<size_t>((i * 7919) % 40000) + 1;
    std::string frame(size, static_cast<char>('a' + i % 26));
    want += frame;
    q.push(std::move(frame));
  }
  CHECK(q.bytes() == want.size());
  std::vector<std::string> out;
  q.take(out);
  CHECK(q.empty());
  CHECK(q.bytes() == 0);
  CHECK(joined(out) == want);
  for (const auto& part : out) CHECK(part.size() <= std::max(SendQueue::shared_buffer_up_to, size_t{40000}));
}

TEST_CASE("send queue: small frames share a buffer, a large one is moved", "[send_queue]") {
  SendQueue q;
  for (int i = 0; i < 100; ++i) q.push(std::string(50, 'x'));
  std::string big(1 << 20, 'y');
  const char* big_data = big.data();
  q.push(std::move(big));
  q.push(std::string(10, 'z'));
  std::vector<std::string> out;
  q.take(out);
  REQUIRE(out.size() == 3);
  CHECK(out[0] == std::string(5000, 'x'));
  CHECK(out[1].data() == big_data);  // not copied
  CHECK(out[2] == std::string(10, 'z'));
}

TEST_CASE("send queue: a written buffer is reused, a large one is not kept", "[send_queue]") {
  SendQueue q;
  q.push(std::string(100, 'a'));
  std::vector<std::string> out;
  q.take(out);
  std::string used = std::move(out[0]);
  used.reserve(64 << 10);
  const char* kept = used.data();
  q.recycle(std::move(used));
  q.recycle(std::string(1 << 20, 'b'));  // a large frame's buffer: freed, not kept
  q.push(std::string(10, 'c'));
  out.clear();
  q.take(out);
  REQUIRE(out.size() == 1);
  CHECK(out[0] == std::string(10, 'c'));
  CHECK(out[0].data() == kept);
  q.push(std::string(10, 'd'));
  q.clear();
  CHECK(q.empty());
  CHECK(q.bytes() == 0);
}
