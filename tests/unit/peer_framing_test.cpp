// The bytes between members (consensus/peer_framing.hpp), without a socket: what the transport's
// two sides read and write. The transport's behaviour on them is it_* and zab_test's.
#include <catch2/catch.hpp>

#include <string>

#include "consensus/peer_framing.hpp"

using namespace warden::consensus::peer_framing;

TEST_CASE("peer framing: a hello is WRDP, the version, the sender and the target, big-endian") {
  std::string h = hello(2, 3, 0x0102030405060708);
  CHECK(h == std::string("WRDP\0\0\0\2\0\0\0\0\0\0\0\3\1\2\3\4\5\6\7\x08", 24));
  CHECK_FALSE(read_hello(h.substr(0, 23)));
  auto r = read_hello(h + "more");
  REQUIRE(r);
  CHECK((r->magic && r->version == 2 && r->sender == 3 && r->target == 0x0102030405060708));
  auto other = read_hello("ZKPR" + h.substr(4));
  REQUIRE(other);
  CHECK_FALSE(other->magic);
  CHECK(other->sender == 3);  // read all the same: the refusal names it
  CHECK(read_hello(hello(1, -1, 0))->sender == -1);
}

TEST_CASE("peer framing: frames are known by their length before their body arrives") {
  std::string in;
  append_frame(in, "");
  append_frame(in, "abc");
  Frame keepalive = next_frame(in, 10);
  CHECK((keepalive.kind == Frame::Kind::message && keepalive.whole && keepalive.body.empty() && keepalive.consumed == 4));
  Frame m = next_frame(std::string_view(in).substr(4), 10);
  CHECK((m.kind == Frame::Kind::message && m.whole && m.body == "abc" && m.consumed == 7));
  Frame part = next_frame(std::string_view(in).substr(4, 5), 10);
  CHECK((part.kind == Frame::Kind::message && !part.whole && part.length == 3));
  CHECK(next_frame(std::string_view(in).substr(4, 3), 10).kind == Frame::Kind::none);
  // Above the limit: refused from its 4 bytes, without waiting for the rest.
  Frame big = next_frame(std::string("\0\0\0\x0b", 4), 10);
  CHECK((big.kind == Frame::Kind::too_long && big.length == 11 && !big.whole));
}

TEST_CASE("peer framing: auth frames carry a status and a token; empty or huge ones are refused") {
  std::string a = auth_frame(auth_success, "tok");
  CHECK(a == std::string("\x80\0\0\4\1tok", 8));
  Frame f = next_frame(a, 0);  // an auth frame is not held to the message limit
  CHECK((f.kind == Frame::Kind::auth && f.whole && f.body == std::string("\1tok", 4) && f.consumed == 8));
  CHECK(next_frame(std::string("\x80\0\0\0", 4), 100).kind == Frame::Kind::bad_auth_length);
  Frame huge = next_frame(std::string("\x80\x01\0\x01", 4), 100);
  CHECK((huge.kind == Frame::Kind::bad_auth_length && huge.length == max_auth_frame + 1));
  CHECK(next_frame(std::string("\x80\x01\0\0", 4), 100).kind == Frame::Kind::auth);  // 64 KiB: the limit itself
  // Garbage of every length: never a frame past the input.
  std::string junk = "\xff\xfe\x00\x80garbage";
  for (size_t n = 0; n <= junk.size(); ++n) {
    Frame g = next_frame(std::string_view(junk).substr(0, n), 1 << 20);
    CHECK(g.consumed <= n);
  }
}
