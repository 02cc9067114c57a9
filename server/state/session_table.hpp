// The sessions the ensemble knows, and when each expires. Expiry uses ZooKeeper's buckets: a
// session's deadline is rounded up to the next multiple of the tick, so one check per tick
// finds every expired session at once.
//
// Sessions are added and removed only by applying txns (create/close session), so every
// replica has the same table; deadlines are local to the server that tracks them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "wire/records.hpp"

namespace warden::server {

using wire::SessionId;

struct Session {
  SessionId id = 0;
  int32_t timeout_ms = 0;
  std::string passwd;
  int64_t deadline = 0;  // the bucket this session sits in
  bool closing = false;  // a close txn is on its way: no new requests
  Session* prev = nullptr;  // its neighbours in that bucket (SessionTable's own)
  Session* next = nullptr;
};

class SessionTable {
 public:
  explicit SessionTable(int32_t tick_ms) : tick_(tick_ms) {}
  // The buckets point into the table's own nodes: moved whole, never copied.
  SessionTable(const SessionTable&) = delete;
  SessionTable& operator=(const SessionTable&) = delete;
  SessionTable(SessionTable&&) = default;
  SessionTable& operator=(SessionTable&&) = default;

  // Seeds the id generator as ZooKeeper does: the server id in the top byte, the start time in
  // milliseconds below it, so ids never repeat across restarts of a server whose clock advances.
  void seed_ids(int64_t now_ms, uint8_t server_id);
  SessionId next_id();
  // An id seen in the log: the generator never hands it, or one below it of this server, out.
  void saw_id(SessionId id);

  void add(SessionId id, int32_t timeout_ms, std::string passwd, int64_t now_ms);
  Session* find(SessionId id);
  // Pushes the session's deadline out to now + its timeout; false for an unknown or closing one.
  bool touch(SessionId id, int64_t now_ms);
  void remove(SessionId id);
  // Every open session expires no sooner than its whole timeout from now (a new leader's rule:
  // it cannot know when followers last heard from them).
  void touch_all(int64_t now_ms);
  // Sessions whose close txn was lost (the log failed) are open again and expire at the next
  // check, so the close is tried again.
  void reopen_closing(int64_t now_ms);
  // Every session whose deadline has passed, marked closing.
  std::vector<SessionId> take_expired(int64_t now_ms);
  size_t size() const { return sessions_.size(); }
  // Each deadline (ms) with the sessions expiring then, in id order: the dump's session sets.
  std::vector<std::pair<int64_t, std::vector<SessionId>>> expiry_sets() const;
  // Every session's id and timeout, in id order (tools: a snapshot in ZooKeeper's format).
  std::vector<std::pair<SessionId, int32_t>> timeouts() const;
  // Every session as (8-byte big-endian id, record), and back: for snapshots.
  std::vector<std::pair<std::string, std::string>> records() const;
  bool load(std::string_view key, std::string_view record, int64_t now_ms);
  // Forgets every session (a snapshot load starts again from an older one); ids handed out
  // stay handed out.
  void forget_all() {
    sessions_.clear();
    buckets_.clear();
  }

 private:
  int64_t bucket_for(int64_t t) const { return (t / tick_ + 1) * tick_; }
  // Puts `s` into the bucket of `deadline` / takes it out of the one it is in.
  void link(Session& s, int64_t deadline);
  void unlink(Session& s);

  int32_t tick_;
  SessionId next_ = 1;
  std::unordered_map<SessionId, Session> sessions_;  // nodes stay put: the buckets point at them
  std::map<int64_t, Session*> buckets_;              // deadline -> the first session of its list
};

}  // namespace warden::server
