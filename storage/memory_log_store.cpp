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
    if (entries_.size() > retained_) entries_.pop_front();
  }
}

void MemoryLogStore::truncate_after(Zxid z) {
  while (!entries_.empty() && entries_.back().zxid > z) entries_.pop_back();
  last_ = std::min(last_, z);
}

std::vector<LogEntry> MemoryLogStore::read_after(Zxid after) const {
  std::vector<LogEntry> out;
  for (const auto& e : entries_)
    if (e.zxid > after) out.push_back(e);
  return out;
}

}  // namespace warden::storage
