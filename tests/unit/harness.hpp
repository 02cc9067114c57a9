// Drives a RequestPipeline directly: fake connections that collect frames, and a clock the test moves.
#pragma once

#include <catch2/catch.hpp>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "consensus/replicator.hpp"
#include "server/pipeline/request_pipeline.hpp"
#include "storage/log_store.hpp"
#include "wire/framing.hpp"
#include "wire/records.hpp"

namespace test {

// A directory of its own for one test, removed with everything in it at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> n{0};
    path = std::filesystem::temp_directory_path() /
           ("warden-unit-" + std::to_string(getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string str() const { return path.string(); }
};

using namespace warden;
using wire::Err;
using wire::OpCode;

struct FakeLink : server::ClientLink {
  std::deque<std::string> frames;
  bool closed = false;
  std::string addr = "127.0.0.1";
  void send(std::string f) override { frames.push_back(std::move(f)); }
  void close() override { closed = true; }
  const std::string& peer_address() const override { return addr; }
};

struct Harness {
  int64_t now = 1'700'000'000'000;  // the wall clock
  int64_t elapsed = 0;                // the monotonic one
  storage::MemoryLogStore log;
  // With `defer_sync`, proposals wait in `unsynced` until sync(): a log that syncs in groups.
  bool defer_sync = false;
  std::vector<storage::LogEntry> unsynced;
  consensus::ZabReplicator replicator{log, [this](storage::LogEntry e) {
                                         if (defer_sync) {
                                           unsynced.push_back(std::move(e));
                                           return;
                                         }
                                         wire::Zxid z = e.zxid;
                                         log.append({std::move(e)});
                                         replicator.durable(z);
                                       }};
  server::RequestPipeline server;
  explicit Harness(server::ServerOptions o = {}, int64_t start = 1'700'000'000'000)
      : now(start), server(o, replicator, [this] { return now; }, [this] { return elapsed; }) {
    replicator.start(0);
  }
  // Makes every deferred proposal durable in one group.
  void sync() {
    if (unsynced.empty()) return;
    wire::Zxid last = unsynced.back().zxid;
    log.append(std::move(unsynced));
    unsynced.clear();
    replicator.durable(last);
  }
  // Makes the deferred proposals durable but for the newest `keep`: something stays in flight.
  void sync_all_but(size_t keep) {
    if (unsynced.size() <= keep) return;
    std::vector<storage::LogEntry> rest(unsynced.end() - static_cast<std::ptrdiff_t>(keep), unsynced.end());
    unsynced.resize(unsynced.size() - keep);
    sync();
    // What the commits made the server propose meanwhile comes after the ones kept back.
    rest.insert(rest.end(), std::make_move_iterator(unsynced.begin()), std::make_move_iterator(unsynced.end()));
    unsynced = std::move(rest);
  }
  // The log failed to write the deferred proposals: they are taken back, as runtime.cpp does.
  void fail_sync() {
    unsynced.clear();
    replicator.abort();
    server.abort_in_flight(wire::Err::systemError);
  }
  // Moves the clock and runs the ticks a real server would have run meanwhile.
  void advance(int64_t ms) {
    for (int64_t step = 0; step < ms; step += 100) {
      now += std::min<int64_t>(100, ms - step);
      elapsed += std::min<int64_t>(100, ms - step);
      server.tick();
    }
  }
  // The wall clock alone jumps (NTP's step, a hand, a virtual machine restored).
  void step_wall_clock(int64_t ms) { now += ms; }
};

struct Reply {
  wire::ReplyHeader header;
  std::string body;
  Err err() const { return static_cast<Err>(header.err); }
};

class Client {
 public:
  explicit Client(Harness& h) : h_(h) { id_ = h_.server.open(&link_); }
  ~Client() {
    if (!gone_) h_.server.closed(id_);
  }

  // Handshake; returns the response, or nothing when the server closed without one.
  // Sends the handshake without waiting for the answer.
  void send_connect(int32_t timeout = 30000) {
    h_.server.receive(id_, wire::encode_connect_request({0, 0, timeout, 0, std::string(16, '\0'), false}));
  }
  std::optional<wire::ConnectResponse> read_connect_response() {
    if (link_.frames.empty()) return std::nullopt;
    auto resp = wire::decode_connect_response(pop());
    REQUIRE(resp);
    session_ = resp->sessionId;
    passwd_ = resp->passwd.value_or("");
    return resp;
  }
  std::optional<wire::ConnectResponse> connect(int32_t timeout = 30000, wire::SessionId session = 0,
                                               std::string passwd = std::string(16, '\0'), wire::Zxid last = 0) {
    wire::ConnectRequest req{0, last, timeout, session, passwd, false};
    h_.server.receive(id_, wire::encode_connect_request(req));
    if (link_.frames.empty()) return std::nullopt;
    auto f = pop();
    auto resp = wire::decode_connect_response(f);
    REQUIRE(resp);
    session_ = resp->sessionId;
    passwd_ = resp->passwd.value_or("");
    return resp;
  }

  // Sends one request and returns its reply; watch events that came first land in `events`.
  template <class R>
  Reply call(OpCode op, const R& body) {
    return call_raw(op, wire::encode(body));
  }
  // Sends a request without waiting for its reply; returns its xid.
  template <class R>
  int32_t send(OpCode op, const R& body) {
    int32_t x = next_xid_++;
    h_.server.receive(id_, wire::encode(wire::RequestHeader{x, static_cast<int32_t>(op)}) + wire::encode(body));
    return x;
  }
  bool has_frames() const { return !link_.frames.empty(); }
  // Sends bytes as one frame and expects nothing back.
  void send_raw(const std::string& payload) { h_.server.receive(id_, payload); }
  Reply call_raw(OpCode op, const std::string& body, int32_t xid = 0) {
    int32_t x = xid ? xid : next_xid_++;
    h_.server.receive(id_, wire::encode(wire::RequestHeader{x, static_cast<int32_t>(op)}) + body);
    return next_reply();
  }
  Reply next_reply() {
    while (!link_.frames.empty()) {
      auto f = pop();
      wire::Reader r(f);
      wire::ReplyHeader h;
      h.visit(r);
      REQUIRE(r.ok());
      std::string body(f.substr(16));
      if (h.xid == wire::xid::notification) {
        auto ev = wire::decode<wire::WatcherEvent>(body);
        REQUIRE(ev);
        events.push_back(*ev);
        order.push_back("event:" + ev->path);
        continue;
      }
      order.push_back("reply");
      return Reply{h, body};
    }
    FAIL("no reply was sent");
    return {};
  }
  // Collects events sent without a request (triggered by another client); returns how many
  // other frames (replies) it dropped.
  int drain() {
    int others = 0;
    while (!link_.frames.empty()) {
      auto f = pop();
      wire::Reader r(f);
      wire::ReplyHeader h;
      h.visit(r);
      if (h.xid == wire::xid::notification)
        events.push_back(*wire::decode<wire::WatcherEvent>(f.substr(16)));
      else
        ++others;
    }
    return others;
  }

  Reply create(const std::string& path, std::string data = "", int32_t flags = 0,
               OpCode op = OpCode::create, wire::AclList acl = open_acl()) {
    return call(op, wire::CreateRequest{path, data, acl, flags});
  }
  std::optional<wire::Stat> exists(const std::string& path, bool watch = false) {
    auto r = call(OpCode::exists, wire::PathWatchRequest{path, watch});
    if (r.err() != Err::ok) return std::nullopt;
    return wire::decode<wire::StatResponse>(r.body)->stat;
  }
  wire::Bytes get(const std::string& path) {
    auto r = call(OpCode::getData, wire::PathWatchRequest{path, false});
    REQUIRE(r.err() == Err::ok);
    return wire::decode<wire::GetDataResponse>(r.body)->data;
  }
  std::vector<std::string> children(const std::string& path, bool watch = false) {
    auto r = call(OpCode::getChildren, wire::PathWatchRequest{path, watch});
    REQUIRE(r.err() == Err::ok);
    return wire::decode<wire::GetChildrenResponse>(r.body)->children;
  }
  static wire::AclList open_acl() { return {wire::Acl{wire::perms::all, wire::Id{"world", "anyone"}}}; }

  void disconnect() {
    h_.server.closed(id_);
    gone_ = true;
  }
  FakeLink& link() { return link_; }
  wire::SessionId session() const { return session_; }
  const std::string& passwd() const { return passwd_; }

  std::vector<wire::WatcherEvent> events;
  std::vector<std::string> order;

 private:
  std::string pop() {
    std::string f = std::move(link_.frames.front());
    link_.frames.pop_front();
    auto scan = wire::scan_frame(f, wire::default_max_buffer);
    REQUIRE(scan.status == wire::FrameStatus::complete);
    return std::string(scan.payload);
  }

  Harness& h_;
  FakeLink link_;
  server::ConnId id_;
  bool gone_ = false;
  wire::SessionId session_ = 0;
  std::string passwd_;
  int32_t next_xid_ = 1;
};

}  // namespace test
