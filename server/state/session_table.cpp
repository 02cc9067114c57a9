#include "server/state/session_table.hpp"

#include <algorithm>

#include "server/state/txn.hpp"

namespace warden::server {

void SessionTable::seed_ids(int64_t now_ms, uint8_t server_id) {
  uint64_t base = (static_cast<uint64_t>(now_ms) << 24) >> 8;
  next_ = static_cast<SessionId>(base | (static_cast<uint64_t>(server_id) << 56));
}

SessionId SessionTable::next_id() {
  SessionId id = next_++;
  // Never hand out 0 (no session) or the container marker.
  if (id == 0 || id == ephemeral::container) id = next_++;
  return id;
}

namespace {
struct SessionRecord {
  int32_t timeout = 0;
  std::string passwd;
  WIRE_FIELDS(timeout, passwd)
};
}  // namespace

std::vector<std::pair<std::string, std::string>> SessionTable::records() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [id, s] : sessions_) {
    std::string key;
    wire::Writer(key).put_long(id);
    out.emplace_back(std::move(key), wire::encode(SessionRecord{s.timeout_ms, s.passwd}));
  }
  return out;
}

std::vector<std::pair<SessionId, int32_t>> SessionTable::timeouts() const {
  std::vector<std::pair<SessionId, int32_t>> out;
  for (const auto& [id, s] : sessions_) out.emplace_back(id, s.timeout_ms);
  std::sort(out.begin(), out.end());
  return out;
}

bool SessionTable::load(std::string_view key, std::string_view record, int64_t now_ms) {
  if (key.size() != 8) return false;
  SessionId id = wire::Reader(key).get_long();
  auto r = wire::decode<SessionRecord>(record);
  if (!r) return false;
  add(id, r->timeout, r->passwd, now_ms);
  saw_id(id);
  return true;
}

void SessionTable::saw_id(SessionId id) {
  if ((static_cast<uint64_t>(id) >> 56) == (static_cast<uint64_t>(next_) >> 56) && id >= next_) next_ = id + 1;
}

void SessionTable::add(SessionId id, int32_t timeout_ms, std::string passwd, int64_t now_ms) {
  // Known already (in a snapshot and again in the log replayed after it): its old bucket entry
  // goes, or that bucket would expire it early.
  remove(id);
  Session& s = sessions_[id];
  s = Session{id, timeout_ms, std::move(passwd), 0, false};
  link(s, bucket_for(now_ms + timeout_ms));
}

void SessionTable::link(Session& s, int64_t deadline) {
  s.deadline = deadline;
  s.prev = nullptr;
  Session*& head = buckets_[deadline];
  s.next = head;
  if (head) head->prev = &s;
  head = &s;
}

void SessionTable::unlink(Session& s) {
  if (s.next) s.next->prev = s.prev;
  if (s.prev) {
    s.prev->next = s.next;
  } else if (auto b = buckets_.find(s.deadline); b != buckets_.end() && b->second == &s) {
    if (s.next)
      b->second = s.next;
    else
      buckets_.erase(b);
  }
  s.prev = s.next = nullptr;
}

std::vector<std::pair<int64_t, std::vector<SessionId>>> SessionTable::expiry_sets() const {
  std::vector<std::pair<int64_t, std::vector<SessionId>>> out;
  for (const auto& [deadline, head] : buckets_) {
    std::vector<SessionId> ids;
    for (const Session* s = head; s; s = s->next) ids.push_back(s->id);
    std::sort(ids.begin(), ids.end());
    out.emplace_back(deadline, std::move(ids));
  }
  return out;
}

Session* SessionTable::find(SessionId id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : &it->second;
}

void SessionTable::touch_all(int64_t now_ms) {
  std::vector<SessionId> ids;
  ids.reserve(sessions_.size());
  for (const auto& [id, s] : sessions_) ids.push_back(id);
  for (SessionId id : ids) touch(id, now_ms);
}

bool SessionTable::touch(SessionId id, int64_t now_ms) {
  Session* s = find(id);
  if (!s || s->closing) return false;
  int64_t deadline = bucket_for(now_ms + s->timeout_ms);
  if (deadline <= s->deadline) return true;
  unlink(*s);
  link(*s, deadline);
  return true;
}

void SessionTable::remove(SessionId id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  unlink(it->second);
  sessions_.erase(it);
}

void SessionTable::reopen_closing(int64_t now_ms) {
  for (auto& [id, s] : sessions_) {
    if (!s.closing) continue;
    s.closing = false;
    unlink(s);
    link(s, now_ms);
  }
}

std::vector<SessionId> SessionTable::take_expired(int64_t now_ms) {
  std::vector<SessionId> out;
  while (!buckets_.empty() && buckets_.begin()->first <= now_ms) {
    Session* s = buckets_.begin()->second;
    buckets_.erase(buckets_.begin());
    // Out of every bucket now: a later touch() finds it closing and leaves it there.
    while (s) {
      Session* next = s->next;
      out.push_back(s->id);
      s->closing = true;
      s->prev = s->next = nullptr;
      s = next;
    }
  }
  return out;
}

}  // namespace warden::server
