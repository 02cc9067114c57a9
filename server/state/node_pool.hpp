// Memory for one tree's znodes. A znode is one allocation of its own exact size (see
// znode.hpp), and a tree holds millions that live long while requests come and go around them.
// From the general heap each would carry 8 bytes of header and round up to 16, and the
// requests' short-lived buffers would fill the holes between them: at 1M znodes of 100 bytes
// that was about 40 MiB of the process. The pool hands out sizes in steps of 8 bytes from
// 64 KiB blocks, one free list per size; a size above `largest` goes to the general heap.
// Blocks are cut from 2 MiB slabs mapped for the pool alone (huge pages asked for, as the
// server asks glibc for its heap: main.cpp).
//
// Memory a freed node leaves is kept for later nodes of the same size. After a mass delete (a
// million nodes created and removed), trim() finds the blocks none of whose nodes lives (nodes
// made together sit together, so such churn empties whole blocks): their pages go back to the
// system (MADV_DONTNEED) and they wait for reuse, and a slab all of whose blocks are so goes
// back whole (munmap). A slab only partly emptied may be filled again by the kernel's huge-page
// collapsing (khugepaged), so it is whole slabs that count. Under AddressSanitizer every node
// comes from the general heap, so that its checks see each node.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace warden::server {

#if defined(__SANITIZE_ADDRESS__)
#define WARDEN_NODE_POOL_PASSTHROUGH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WARDEN_NODE_POOL_PASSTHROUGH 1
#endif
#endif

class NodePool {
 public:
  NodePool() = default;
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  ~NodePool();

  void* allocate(size_t bytes) {
    size_t size = round(bytes);
    if (pass_through(size)) return ::operator new(size);
    Free*& head = free_[size / granule];
    if (head) {
      Free* f = head;
      head = f->next;
      free_bytes_ -= size;
      return f;
    }
    Bump& b = bump_[size / granule];
    if (static_cast<size_t>(b.end - b.next) < size) {
      b.next = new_block(size);
      b.end = b.next + block_bytes;
    }
    void* out = b.next;
    b.next += size;
    return out;
  }

  // `bytes` is what allocate() was given for `p`.
  void release(void* p, size_t bytes) {
    size_t size = round(bytes);
    if (pass_through(size)) return ::operator delete(p);
    Free*& head = free_[size / granule];
    head = new (p) Free{head};
    free_bytes_ += size;
  }

  // Blocks holding nodes (or free ones), and slabs mapped.
  size_t block_count() const { return blocks_.size(); }
  size_t slab_count() const { return slabs_.size(); }
  // Bytes of freed nodes kept for later ones.
  size_t free_bytes() const { return free_bytes_; }

  // Takes every block whose nodes are all free (but the block each size is still filling) out
  // of use, its pages given back, and unmaps the slabs left with no block in use; returns how
  // many blocks. Walks every free node once: for when the server is idle.
  size_t trim();

  static constexpr size_t granule = 8;        // every znode's alignment needs
  static constexpr size_t largest = 2048;     // beyond this, a node's own header is noise
  static constexpr size_t block_bytes = 64 << 10;
  static constexpr size_t slab_bytes = 2 << 20;  // a huge page

 private:
  struct Free {
    Free* next;
  };
  struct Bump {
    char* next = nullptr;
    char* end = nullptr;
  };
  static size_t round(size_t bytes) { return (bytes + granule - 1) / granule * granule; }
  static bool pass_through(size_t size) {
#ifdef WARDEN_NODE_POOL_PASSTHROUGH
    (void)size;
    return true;
#else
    return size > largest;
#endif
  }
  // A block for nodes of `size`: a spare one, the next of the newest slab, or a new slab's first.
  char* new_block(size_t size);

  std::array<Free*, largest / granule + 1> free_{};
  std::array<Bump, largest / granule + 1> bump_{};
  std::vector<char*> blocks_;          // in use
  std::vector<uint32_t> block_sizes_;  // the node size each block in use serves
  std::vector<char*> spare_blocks_;    // emptied by trim(), their pages given back
  std::vector<char*> slabs_;           // mapped, 2 MiB-aligned
  char* carve_ = nullptr;              // the next block of the newest slab
  char* carve_end_ = nullptr;          // and its end
  size_t free_bytes_ = 0;
};

}  // namespace warden::server
