#pragma once
// The frames waiting to be written to one client connection. Small frames are copied together
// into one buffer (many replies go out in one write); a large frame keeps the buffer it was
// made in (moved, never copied), so a 1 MB reply costs no copy between the pipeline and the
// socket. One write takes everything queued, as a sequence of buffers.

#include <cstddef>
#include <string>
#include <vector>

namespace warden::server {

class SendQueue {
 public:
  // A frame at least this large keeps its own buffer.
  static constexpr size_t own_buffer_from = 16u << 10;
  // Small frames go on being copied into the last buffer until it holds this much.
  static constexpr size_t shared_buffer_up_to = 256u << 10;

  void push(std::string frame) {
    bytes_ += frame.size();
    if (frame.size() >= own_buffer_from) {
      parts_.push_back(std::move(frame));
      open_ = false;
      return;
    }
    if (!open_ || parts_.back().size() + frame.size() > shared_buffer_up_to) {
      parts_.emplace_back();
      if (!spare_.empty()) {
        parts_.back().swap(spare_.back());
        spare_.pop_back();
      }
      open_ = true;
    }
    parts_.back() += frame;
  }

  size_t bytes() const { return bytes_; }
  bool empty() const { return parts_.empty(); }

  // Moves every queued buffer to the back of `out` (one write's buffers); the queue is empty.
  void take(std::vector<std::string>& out) {
    for (auto& p : parts_) out.push_back(std::move(p));
    parts_.clear();
    bytes_ = 0;
    open_ = false;
  }

  // A written buffer handed back for the next small frames (its capacity kept), when it is a
  // shared buffer's size: a large frame's buffer is freed.
  void recycle(std::string buffer) {
    if (buffer.capacity() > shared_buffer_up_to || spare_.size() >= 2) return;
    buffer.clear();
    spare_.push_back(std::move(buffer));
  }

  void clear() {
    parts_.clear();
    bytes_ = 0;
    open_ = false;
  }

 private:
  std::vector<std::string> parts_;
  std::vector<std::string> spare_;
  size_t bytes_ = 0;
  bool open_ = false;  // parts_.back() takes further small frames
};

}  // namespace warden::server
