// The one host loop (consensus/host_loop.hpp), alone: the order in which a Ready's parts are
// carried out, the refusal of a part a host has no step for, and the commits applied from a
// MemoryLogStore and the tail appended since, each once and in zxid order.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "consensus/host_loop.hpp"
#include "consensus/peer.pb.h"
#include "storage/log_store.hpp"

using namespace warden::consensus;
using warden::storage::LogEntry;
using warden::storage::MemoryLogStore;

namespace {
// Every step records its name (and what it was given) in `done`.
HostSteps recording(std::vector<std::string>& done) {
  HostSteps h;
  h.notes = [&](const std::vector<std::string>& n) { done.push_back("notes:" + n.front()); };
  h.save_epochs = [&] { done.push_back("epochs"); };
  h.synced = [&](bool s) { done.push_back(s ? "synced" : "unsynced"); };
  h.config = [&](const Ensemble& c) { done.push_back("config:" + std::to_string(c.version)); };
  h.pending = [&](const Ensemble& c) { done.push_back("pending:" + std::to_string(c.version)); };
  h.reset = [&] { done.push_back("reset"); };
  h.truncate = [&](Zxid after) { done.push_back("truncate:" + std::to_string(after)); };
  h.snapshot = [&](Zxid at, bool streamed) { done.push_back("snapshot:" + std::to_string(at) + (streamed ? "s" : "")); };
  h.append = [&](Entry e) { done.push_back("append:" + std::to_string(e.zxid) + "=" + e.payload); };
  h.send = [&](PeerId to, pb::PeerMessage& m) { done.push_back("send:" + std::to_string(to) + "@" + std::to_string(m.link())); };
  h.apply = [&](Zxid committed) { done.push_back("apply:" + std::to_string(committed)); };
  h.leader_digest = [&](Zxid at, uint64_t d) { done.push_back("digest:" + std::to_string(at) + "=" + std::to_string(d)); };
  h.after_commits = [&] {
    done.push_back("after");
    return false;
  };
  h.role_changed = [&] { done.push_back("role"); };
  h.request = [&](PeerId from, std::string p) { done.push_back("request:" + std::to_string(from) + "=" + p); };
  return h;
}

Ready full_ready() {
  Ready r;
  r.notes = {"note"};
  r.epochs = Epochs{3, 3};
  r.synced = true;
  r.config = Ensemble{{1, 2, 3}, {}, 7, ""};
  r.pending = Ensemble{{1, 2}, {}, 9, ""};
  r.reset = true;
  r.truncate_after = 5;
  r.snapshot = std::make_pair(Zxid{4}, std::string());
  r.snapshot_streamed = true;
  r.append = {Entry{6, "a"}, Entry{7, "b"}};
  pb::PeerMessage m;
  m.set_link(11);
  r.messages.emplace_back(2, m);
  r.committed = 6;
  r.leader_digest = std::make_pair(Zxid{6}, uint64_t{42});
  r.role_changed = true;
  r.requests.emplace_back(3, "req");
  return r;
}
}  // namespace

TEST_CASE("the host loop carries out a Ready's parts in the core's order", "[host_loop]") {
  std::vector<std::string> done;
  HostSteps h = recording(done);
  Ready r = full_ready();
  CHECK(carry_out(r, h));
  CHECK(done == std::vector<std::string>{"notes:note", "epochs", "synced", "config:7", "pending:9", "reset",
                                         "truncate:5", "snapshot:4s", "append:6=a", "append:7=b", "send:2@11",
                                         "apply:6", "digest:6=42", "after", "role", "request:3=req"});

  // An empty Ready holds no work: only the commit step runs (it may apply what became durable).
  done.clear();
  Ready empty;
  empty.committed = 9;
  CHECK_FALSE(carry_out(empty, h));
  CHECK(done == std::vector<std::string>{"apply:9", "after"});

  // A follow-up that made work (a resync) keeps the loop going even after an empty Ready.
  h.after_commits = [] { return true; };
  CHECK(carry_out(empty, h));
}

TEST_CASE("a part of a Ready its host has no step for is refused, never dropped", "[host_loop]") {
  std::vector<std::string> done;
  struct Missing {
    const char* part;
    void (*clear)(HostSteps&);
  };
  const Missing cases[] = {
      {"notes", [](HostSteps& h) { h.notes = nullptr; }},
      {"epochs", [](HostSteps& h) { h.save_epochs = nullptr; }},
      {"synced mark", [](HostSteps& h) { h.synced = nullptr; }},
      {"configuration", [](HostSteps& h) { h.config = nullptr; }},
      {"pending configuration", [](HostSteps& h) { h.pending = nullptr; }},
      {"reset", [](HostSteps& h) { h.reset = nullptr; }},
      {"truncation", [](HostSteps& h) { h.truncate = nullptr; }},
      {"snapshot", [](HostSteps& h) { h.snapshot = nullptr; }},
      {"entries", [](HostSteps& h) { h.append = nullptr; }},
      {"messages", [](HostSteps& h) { h.send = nullptr; }},
      {"leader digest", [](HostSteps& h) { h.leader_digest = nullptr; }},
      {"forwarded requests", [](HostSteps& h) { h.request = nullptr; }},
  };
  for (const auto& c : cases) {
    INFO(c.part);
    HostSteps h = recording(done);
    c.clear(h);
    Ready r = full_ready();
    CHECK_THROWS_WITH(carry_out(r, h), Catch::Contains(c.part));
  }
  // The role's change and the follow-up are the host's to take or leave.
  HostSteps h = recording(done);
  h.role_changed = nullptr;
  h.after_commits = nullptr;
  Ready r = full_ready();
  CHECK_NOTHROW(carry_out(r, h));
}

TEST_CASE("commits are applied from the store, then the tail, each once and in order", "[host_loop]") {
  MemoryLogStore store;
  std::vector<LogEntry> logged;
  for (Zxid z = 1; z <= 8; ++z) logged.push_back(LogEntry{z, "t" + std::to_string(z)});
  store.append(logged);
  // The tail: what the host appended since it started (the store has it too, or will).
  std::deque<LogEntry> tail;
  for (Zxid z = 6; z <= 10; ++z) tail.push_back(LogEntry{z, "t" + std::to_string(z)});
  std::vector<Zxid> applied_ones;
  auto apply = [&](const LogEntry& e) {
    CHECK(e.payload == "t" + std::to_string(e.zxid));
    applied_ones.push_back(e.zxid);
  };

  Zxid applied = 2;
  apply_committed(store, tail, applied, 7, apply);
  CHECK(applied == 7);
  CHECK(applied_ones == std::vector<Zxid>{3, 4, 5, 6, 7});

  // Nothing twice: a commit at or below what was applied applies nothing.
  apply_committed(store, tail, applied, 7, apply);
  apply_committed(store, tail, applied, 4, apply);
  CHECK(applied_ones.size() == 5);

  // Past the store's end, from the tail alone (10 is not written yet).
  apply_committed(store, tail, applied, 10, apply);
  CHECK(applied == 10);
  CHECK(applied_ones == std::vector<Zxid>{3, 4, 5, 6, 7, 8, 9, 10});

  // No tail: the store alone, up to the commit (a restart's log, a lone voter's history).
  std::deque<LogEntry> none;
  Zxid from_start = 0;
  applied_ones.clear();
  apply_committed(store, none, from_start, 5, apply);
  CHECK(from_start == 5);
  CHECK(applied_ones == std::vector<Zxid>{1, 2, 3, 4, 5});

  // A commit beyond everything held applies what there is and no more.
  applied_ones.clear();
  apply_committed(store, none, from_start, 100, apply);
  CHECK(from_start == 8);
  CHECK(applied_ones == std::vector<Zxid>{6, 7, 8});
}
