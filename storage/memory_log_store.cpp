#include <algorithm>
#include <cassert>
#include <stdexcept>

#include "storage/log_store.hpp"

namespace warden::storage {

void MemoryLogStore::append(std::vector<LogEntry> entries) {
  for (auto& e : entries) {
    if (e.zxid <= last_) throw std::logic_error("log append out of zxid order");
    last_ = e.zxid;
    entries_.push_back(std::move(e));
    if (entries_.size() > retained_) {
      base_ = entries_.front().zxid;
      entries_.pop_front();
    }
  }
}

void MemoryLogStore::truncate_after(Zxid z) {
  while (!entries_.empty() && entries_.back().zxid > z) entries_.pop_back();
  last_ = std::min(last_, z);
  base_ = std::min(base_, z);  // as the durable store: nothing above z is left, so z is the base at most
}

Zxid MemoryLogStore::floor(Zxid z) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), z, [](Zxid v, const LogEntry& e) { return v < e.zxid; });
  if (it != entries_.begin()) return std::prev(it)->zxid;
  return z >= base_ ? base_ : 0;
}

uint64_t MemoryLogStore::approximate_bytes(Zxid after, Zxid upto) const {
  uint64_t n = 0;
  for (const auto& e : entries_)
    if (e.zxid > after && e.zxid <= upto) n += e.payload.size() + 16;
  return n;
}

std::vector<LogEntry> MemoryLogStore::read_after(Zxid after) const {
  std::vector<LogEntry> out;
  for (const auto& e : entries_)
    if (e.zxid > after) out.push_back(e);
  return out;
}

}  // namespace warden::storage
