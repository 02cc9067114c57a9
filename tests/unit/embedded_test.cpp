// EmbeddedServer: a real server on a free loopback port inside the test process, reached over
// a real socket.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <rocksdb/db.h>

#include <filesystem>

#include "server/node/embedded_server.hpp"
#include "storage/rocksdb_log_store.hpp"
#include "wire/framing.hpp"
#include "wire/records.hpp"

using namespace warden;

namespace {
class Socket {
 public:
  explicit Socket(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~Socket() { close(fd_); }
  void send(const std::string& payload) {
    std::string f;
    wire::append_frame(f, payload);
    REQUIRE(::send(fd_, f.data(), f.size(), 0) == static_cast<ssize_t>(f.size()));
  }
  std::string receive() {
    for (;;) {
      auto s = wire::scan_frame(buf_, wire::default_max_buffer);
      if (s.status == wire::FrameStatus::complete) {
        std::string p(s.payload);
        buf_.erase(0, s.consumed);
        return p;
      }
      char tmp[4096];
      ssize_t n = recv(fd_, tmp, sizeof tmp, 0);
      REQUIRE(n > 0);
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buf_;
};
}  // namespace

TEST_CASE("an embedded server serves a real client over loopback and stops") {
  server::EmbeddedServer srv;
  REQUIRE(srv.port() != 0);
  CHECK(srv.connect_string() == "127.0.0.1:" + std::to_string(srv.port()));
  Socket s(srv.port());
  s.send(wire::encode_connect_request({0, 0, 30000, 0, std::string(16, '\0'), false}));
  auto resp = wire::decode_connect_response(s.receive());
  REQUIRE(resp);
  CHECK(resp->sessionId != 0);
  CHECK(resp->timeOut == 30000);
  wire::AclList acl{wire::Acl{wire::perms::all, wire::Id{"world", "anyone"}}};
  s.send(wire::encode(wire::RequestHeader{1, 1}) + wire::encode(wire::CreateRequest{"/emb", std::string("hi"), acl, 0}));
  auto created = s.receive();
  auto h = wire::decode<wire::ReplyHeader>(created);
  REQUIRE(h);
  CHECK(h->err == 0);
  s.send(wire::encode(wire::RequestHeader{2, 4}) + wire::encode(wire::PathWatchRequest{"/emb", false}));
  auto got = s.receive();
  auto data = wire::decode<wire::GetDataResponse>(std::string_view(got).substr(16));
  REQUIRE(data);
  CHECK(data->data == std::string("hi"));
  srv.stop();
  srv.stop();  // stopping twice is harmless
}

TEST_CASE("two embedded servers run side by side on different ports") {
  server::EmbeddedServer a, b;
  CHECK(a.port() != b.port());
}

TEST_CASE("a store whose log starts above every complete snapshot is refused, naming the zxids") {
  // What a crash between dropping the old snapshot and completing the new one left (issue 45,
  // point 4): the log purged up to 0x3, the only snapshot at or above it gone.
  auto dir = std::filesystem::temp_directory_path() / ("warden-base-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::string store_dir = (dir / "log").string();
  std::filesystem::create_directories(dir);
  {
    storage::RocksDbLogStore store(store_dir, false);
    store.append({{1, "a"}, {2, "b"}, {3, "c"}});
    store.finish_snapshot(2, "");
    store.finish_snapshot(3, "");
    REQUIRE(store.purge(1) == 1);
    REQUIRE(store.base() == 3);
  }
  {
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(rocksdb::Options(), store_dir, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    std::string marker(9, '\0');
    marker[0] = 'M';
    marker[8] = 3;
    REQUIRE(db->Delete(rocksdb::WriteOptions(), marker).ok());
  }
  auto config = server::EmbeddedServer::default_config();
  config.in_memory = false;
  config.data_dir = dir.string();
  std::string error;
  try {
    server::EmbeddedServer srv(config);
  } catch (const std::exception& e) {
    error = e.what();
  }
  CHECK(error.find(store_dir + ": the log starts after 0x3, but no complete snapshot loads") == 0);
  std::filesystem::remove_all(dir);
}
