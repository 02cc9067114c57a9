#include "server/state/node_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

namespace warden::server {

namespace {
char* map_slab() {
  // Twice the size, then the unaligned ends unmapped: a slab is one huge page, aligned.
  size_t span = NodePool::slab_bytes * 2;
  void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  auto base = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (base + NodePool::slab_bytes - 1) & ~(uintptr_t{NodePool::slab_bytes} - 1);
  if (aligned > base) munmap(p, aligned - base);
  uintptr_t end = base + span, slab_end = aligned + NodePool::slab_bytes;
  if (end > slab_end) munmap(reinterpret_cast<void*>(slab_end), end - slab_end);
  auto* slab = reinterpret_cast<char*>(aligned);
  madvise(slab, NodePool::slab_bytes, MADV_HUGEPAGE);  // where the kernel gives them on request
  return slab;
}

char* slab_of(const char* block) {
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(block) & ~(uintptr_t{NodePool::slab_bytes} - 1));
}
}  // namespace

NodePool::~NodePool() {
  for (char* s : slabs_) munmap(s, slab_bytes);
}

char* NodePool::new_block(size_t size) {
  char* b;
  if (!spare_blocks_.empty()) {
    b = spare_blocks_.back();
    spare_blocks_.pop_back();
  } else {
    if (carve_ == carve_end_) {
      slabs_.push_back(map_slab());
      carve_ = slabs_.back();
      carve_end_ = carve_ + slab_bytes;
    }
    b = carve_;
    carve_ += block_bytes;
  }
  blocks_.push_back(b);
  block_sizes_.push_back(static_cast<uint32_t>(size));
  return b;
}

size_t NodePool::trim() {
  if (blocks_.empty() || free_bytes_ == 0) return 0;
  std::vector<size_t> order(blocks_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return blocks_[a] < blocks_[b]; });
  auto block_of = [&](const void* p) {
    auto c = static_cast<const char*>(p);
    auto it = std::upper_bound(order.begin(), order.end(), c, [&](const char* x, size_t i) { return x < blocks_[i]; });
    return order[static_cast<size_t>(it - order.begin()) - 1];  // a free node lies in a block in use
  };
  std::vector<uint32_t> free_in(blocks_.size(), 0);
  for (Free* head : free_)
    for (Free* f = head; f; f = f->next) ++free_in[block_of(f)];
  std::vector<char> empty(blocks_.size(), 0);
  size_t emptied = 0;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Bump& b = bump_[block_sizes_[i] / granule];
    bool filling = blocks_[i] <= b.next && b.next <= blocks_[i] + block_bytes;
    empty[i] = !filling && free_in[i] == block_bytes / block_sizes_[i];
    emptied += empty[i] ? 1 : 0;
  }
  if (emptied == 0) return 0;
  for (Free*& head : free_) {
    Free** link = &head;
    for (Free* f = head; f; f = f->next) {
      if (!empty[block_of(f)]) {
        *link = f;
        link = &f->next;
      }
    }
    *link = nullptr;
  }
  size_t kept = 0;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    if (empty[i]) {
      free_bytes_ -= block_bytes / block_sizes_[i] * block_sizes_[i];
      madvise(blocks_[i], block_bytes, MADV_DONTNEED);  // zero pages when touched again
      spare_blocks_.push_back(blocks_[i]);
    } else {
      blocks_[kept] = blocks_[i];
      block_sizes_[kept] = block_sizes_[i];
      ++kept;
    }
  }
  blocks_.resize(kept);
  block_sizes_.resize(kept);
  // A slab none of whose carved blocks is in use goes back whole (the one being carved stays).
  std::unordered_map<char*, size_t> in_use;
  for (char* b : blocks_) ++in_use[slab_of(b)];
  char* carving = carve_end_ ? carve_end_ - slab_bytes : nullptr;
  std::vector<char*> gone;
  for (char* s : slabs_)
    if (s != carving && !in_use.count(s)) gone.push_back(s);
  if (!gone.empty()) {
    std::sort(gone.begin(), gone.end());
    auto is_gone = [&](char* p) { return std::binary_search(gone.begin(), gone.end(), slab_of(p)); };
    spare_blocks_.erase(std::remove_if(spare_blocks_.begin(), spare_blocks_.end(), is_gone), spare_blocks_.end());
    slabs_.erase(std::remove_if(slabs_.begin(), slabs_.end(), [&](char* s) {
                   return std::binary_search(gone.begin(), gone.end(), s);
                 }),
                 slabs_.end());
    for (char* s : gone) munmap(s, slab_bytes);
  }
  return emptied;
}

}  // namespace warden::server
