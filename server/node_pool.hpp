// Memory for one tree's znodes. A znode is one allocation of its own exact size (see
// znode.hpp), and a tree holds millions that live long while requests come and go around them.
// From the general heap each would carry 8 bytes of header and round up to 16, and the
// requests' short-lived buffers would fill the holes between them: at 1M znodes of 100 bytes
// that was about 40 MiB of the process. The pool hands out sizes in steps of 8 bytes from
// 64 KiB blocks, one free list per size; a size above `largest` goes to the general heap.
//
// Memory a freed node leaves is kept for later nodes of the same size and goes back only when
// the pool does (as a JVM's heap keeps what it grew to). Under AddressSanitizer every node comes
// from the general heap, so that its checks see each node.
#pragma once

#include <array>
#include <cstddef>
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
  ~NodePool() {
    for (char* b : blocks_) ::operator delete(b);
  }

  void* allocate(size_t bytes) {
    size_t size = round(bytes);
    if (pass_through(size)) return ::operator new(size);
    Free*& head = free_[size / granule];
    if (head) {
      Free* f = head;
      head = f->next;
      return f;
    }
    Bump& b = bump_[size / granule];
    if (static_cast<size_t>(b.end - b.next) < size) {
      blocks_.push_back(static_cast<char*>(::operator new(block_bytes)));
      b.next = blocks_.back();
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
  }

  // Blocks taken from the general heap so far.
  size_t block_count() const { return blocks_.size(); }

  static constexpr size_t granule = 8;        // every znode's alignment needs
  static constexpr size_t largest = 2048;     // beyond this, a node's own header is noise
  static constexpr size_t block_bytes = 64 << 10;

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

  std::array<Free*, largest / granule + 1> free_{};
  std::array<Bump, largest / granule + 1> bump_{};
  std::vector<char*> blocks_;
};

}  // namespace warden::server
