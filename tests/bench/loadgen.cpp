// warden-loadgen: a load generator cheap enough not to be the bottleneck. It speaks the
// ZooKeeper protocol directly: requests are encoded once and re-sent as the same bytes,
// each connection keeps `depth` requests in flight, and one thread polls a group of
// connections. It prints throughput, latency percentiles and its own CPU time, so a reader
// can see whether the client or the server was the limit.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "wire/framing.hpp"
#include "wire/records.hpp"

using namespace warden::wire;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  std::vector<int> ports;  // --ports a,b,c: connection i goes to ports[i % n] (an ensemble)
  std::string op = "get";
  int connections = 8;
  int depth = 32;
  int threads = 1;
  double seconds = 5;
  long max_ops = 5'000'000;  // a bound on the run whatever its duration
  int value_size = 100;
};

static std::string frame_of(const std::string& payload) {
  std::string f;
  append_frame(f, payload);
  return f;
}

static std::string request(int32_t xid, OpCode op, const std::string& body) {
  return frame_of(encode(RequestHeader{xid, static_cast<int32_t>(op)}) + body);
}

static AclList open_acl() { return {Acl{perms::all, Id{"world", "anyone"}}}; }

static int dial(const Options& o, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, o.host.c_str(), &a.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect failed");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static void write_all(int fd, const std::string& b) {
  size_t off = 0;
  while (off < b.size()) {
    ssize_t n = write(fd, b.data() + off, b.size() - off);
    if (n <= 0) throw std::runtime_error("write failed");
    off += static_cast<size_t>(n);
  }
}

static std::string read_frame_blocking(int fd) {
  std::string buf;
  char tmp[4096];
  for (;;) {
    auto s = scan_frame(buf, default_max_buffer);
    if (s.status == FrameStatus::complete) return std::string(s.payload);
    if (s.status == FrameStatus::bad_length) throw std::runtime_error("bad frame");
    ssize_t n = read(fd, tmp, sizeof tmp);
    if (n <= 0) throw std::runtime_error("server closed the connection");
    buf.append(tmp, static_cast<size_t>(n));
  }
}

// Opens a session on a blocking socket and returns the fd.
static int open_session(const Options& o, int port) {
  int fd = dial(o, port);
  ConnectRequest c{0, 0, 30000, 0, std::string(16, '\0'), false};
  write_all(fd, frame_of(encode_connect_request(c)));
  auto resp = decode_connect_response(read_frame_blocking(fd));
  if (!resp || resp->sessionId == 0) throw std::runtime_error("handshake failed");
  return fd;
}

// A synchronous call during set-up; returns the error code.
static int32_t call(int fd, OpCode op, const std::string& body) {
  write_all(fd, request(1, op, body));
  Reader r(read_frame_blocking(fd));
  ReplyHeader h;
  h.visit(r);
  return h.err;
}

struct Conn {
  int fd = -1;
  std::string out;  // bytes not yet written
  std::string in;
  std::deque<Clock::time_point> sent;
  long issued = 0;
  std::string primary, secondary;  // the pre-encoded requests
};

struct Result {
  long ops = 0;
  long errors = 0;
  std::vector<uint32_t> lat_us;
};

static void run_group(std::vector<Conn*> conns, const Options& o, Clock::time_point end,
                      std::atomic<long>& budget, Result& res) {
  for (auto* c : conns) fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
  auto issue = [&](Conn& c) {
    while (static_cast<int>(c.sent.size()) < o.depth && Clock::now() < end && budget.fetch_sub(1) > 0) {
      bool mix_write = o.op == "mix" && c.issued % 10 == 9;  // 90% reads
      c.out += mix_write ? c.secondary : c.primary;
      c.sent.push_back(Clock::now());
      ++c.issued;
    }
  };
  for (auto* c : conns) issue(*c);
  std::vector<pollfd> pfds(conns.size());
  char buf[256 * 1024];
  for (;;) {
    bool any = false;
    for (size_t i = 0; i < conns.size(); ++i) {
      pfds[i] = {conns[i]->fd, static_cast<short>(POLLIN | (conns[i]->out.empty() ? 0 : POLLOUT)), 0};
      any = any || !conns[i]->sent.empty();
    }
    if (!any) break;
    if (poll(pfds.data(), pfds.size(), 1000) < 0) throw std::runtime_error("poll failed");
    for (size_t i = 0; i < conns.size(); ++i) {
      Conn& c = *conns[i];
      if ((pfds[i].revents & POLLOUT) && !c.out.empty()) {
        ssize_t n = write(c.fd, c.out.data(), c.out.size());
        if (n > 0) c.out.erase(0, static_cast<size_t>(n));
      }
      if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = read(c.fd, buf, sizeof buf);
        if (n <= 0) throw std::runtime_error("server closed a connection under load");
        c.in.append(buf, static_cast<size_t>(n));
        size_t off = 0;
        auto now = Clock::now();
        for (;;) {
          auto s = scan_frame(std::string_view(c.in).substr(off), default_max_buffer);
          if (s.status != FrameStatus::complete) break;
          off += s.consumed;
          Reader r(s.payload);
          ReplyHeader h;
          h.visit(r);
          if (h.xid < 0) continue;  // a notification or ping
          if (h.err != 0) ++res.errors;
          auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - c.sent.front()).count();
          c.sent.pop_front();
          res.lat_us.push_back(static_cast<uint32_t>(us));
          ++res.ops;
        }
        c.in.erase(0, off);
        issue(c);
      }
    }
  }
}

static double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char** argv) {
  Options o;
  try {
    for (int i = 1; i + 1 < argc; i += 2) {
      std::string k = argv[i], v = argv[i + 1];
      if (k == "--host") o.host = v;
      else if (k == "--port") o.port = std::stoi(v);
      else if (k == "--ports") {
        for (size_t from = 0; from <= v.size();) {
          size_t comma = std::min(v.find(',', from), v.size());
          o.ports.push_back(std::stoi(v.substr(from, comma - from)));
          from = comma + 1;
        }
      }
      else if (k == "--op") o.op = v;
      else if (k == "--connections") o.connections = std::stoi(v);
      else if (k == "--depth") o.depth = std::stoi(v);
      else if (k == "--threads") o.threads = std::stoi(v);
      else if (k == "--seconds") o.seconds = std::stod(v);
      else if (k == "--max-ops") o.max_ops = std::stol(v);
      else if (k == "--value-size") o.value_size = std::stoi(v);
      else {
        std::fprintf(stderr, "unknown option %s\n", k.c_str());
        return 2;
      }
    }
  } catch (const std::exception&) {  // std::stoi on a value that is not a number
    std::fprintf(stderr, "warden-loadgen: a numeric option has a value that is not a number\n");
    return 2;
  }
  if (o.ports.empty() && o.port > 0) o.ports.push_back(o.port);
  if (o.ports.empty() || o.connections < 1 || o.depth < 1 || o.threads < 1 || o.seconds <= 0 ||
      (o.op != "create" && o.op != "set" && o.op != "get" && o.op != "exists" && o.op != "mix")) {
    std::fprintf(stderr,
                 "usage: warden-loadgen --port N|--ports N,N,... [--host A] --op create|set|get|exists|mix [--connections N]\n"
                 "       [--depth N] [--threads N] [--seconds S] [--max-ops N] [--value-size N]\n");
    return 2;
  }
  try {
    std::string value(static_cast<size_t>(o.value_size), 'v');
    std::vector<Conn> conns(static_cast<size_t>(o.connections));
    for (int i = 0; i < o.connections; ++i) {
      Conn& c = conns[static_cast<size_t>(i)];
      c.fd = open_session(o, o.ports[static_cast<size_t>(i) % o.ports.size()]);
      std::string node = "/bench/c" + std::to_string(i);
      call(c.fd, OpCode::create, encode(CreateRequest{"/bench", std::string(), open_acl(), 0}));
      call(c.fd, OpCode::create, encode(CreateRequest{node, value, open_acl(), 0}));
      std::string set = request(2, OpCode::setData, encode(SetDataRequest{node, value, -1}));
      if (o.op == "create") {
        // Persistent-sequential: the same bytes make a new node every time.
        c.primary = request(2, OpCode::create, encode(CreateRequest{node + "/n-", value, open_acl(), 2}));
      } else if (o.op == "set") {
        c.primary = set;
      } else if (o.op == "get" || o.op == "mix") {
        c.primary = request(2, OpCode::getData, encode(PathWatchRequest{node, false}));
        c.secondary = set;
      } else {
        c.primary = request(2, OpCode::exists, encode(PathWatchRequest{node, false}));
      }
    }
    double cpu0 = cpu_seconds();
    auto start = Clock::now();
    auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
    std::atomic<long> budget{o.max_ops};
    std::vector<Result> results(static_cast<size_t>(o.threads));
    std::vector<std::thread> threads;
    for (int t = 0; t < o.threads; ++t) {
      std::vector<Conn*> group;
      for (int i = t; i < o.connections; i += o.threads) group.push_back(&conns[static_cast<size_t>(i)]);
      threads.emplace_back([&, group, t] { run_group(group, o, end, budget, results[static_cast<size_t>(t)]); });
    }
    for (auto& th : threads) th.join();
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    double cpu = cpu_seconds() - cpu0;
    Result all;
    for (auto& r : results) {
      all.ops += r.ops;
      all.errors += r.errors;
      all.lat_us.insert(all.lat_us.end(), r.lat_us.begin(), r.lat_us.end());
    }
    auto pct = [&](double p) -> uint32_t {
      if (all.lat_us.empty()) return 0;
      size_t k = std::min(all.lat_us.size() - 1, static_cast<size_t>(p * static_cast<double>(all.lat_us.size())));
      std::nth_element(all.lat_us.begin(), all.lat_us.begin() + static_cast<long>(k), all.lat_us.end());
      return all.lat_us[k];
    };
    std::printf("op=%s ops=%ld errors=%ld seconds=%.3f ops_per_s=%.0f p50_us=%u p99_us=%u p999_us=%u "
                "client_cpu_s=%.3f\n",
                o.op.c_str(), all.ops, all.errors, secs, static_cast<double>(all.ops) / secs, pct(0.50), pct(0.99),
                pct(0.999), cpu);
    for (auto& c : conns) close(c.fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warden-loadgen: %s\n", e.what());
    return 1;
  }
  return 0;
}
