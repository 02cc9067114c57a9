// Framing of the client port: every message is a 4-byte big-endian length and that many bytes.
// A length below zero or above jute.maxbuffer is not a frame: ZooKeeper closes the connection.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace warden::wire {

enum class FrameStatus { incomplete, complete, bad_length };

struct FrameScan {
  FrameStatus status = FrameStatus::incomplete;
  int32_t length = 0;        // the declared length, for the log line of a bad one
  std::string_view payload;  // valid when complete
  size_t consumed = 0;       // bytes of `in` the frame took, header included
};

// Looks at the front of `in` for one frame no longer than `max_length`.
FrameScan scan_frame(std::string_view in, int32_t max_length);

// Appends a frame holding `payload` to `out`.
void append_frame(std::string& out, std::string_view payload);

}  // namespace warden::wire
