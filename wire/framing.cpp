#include "wire/framing.hpp"

#include "wire/jute.hpp"

namespace warden::wire {

FrameScan scan_frame(std::string_view in, int32_t max_length) {
  FrameScan s;
  if (in.size() < 4) return s;
  Reader r(in.substr(0, 4));
  s.length = r.get_int();
  if (s.length < 0 || s.length > max_length) {
    s.status = FrameStatus::bad_length;
    return s;
  }
  size_t total = 4 + static_cast<size_t>(s.length);
  if (in.size() < total) return s;
  s.status = FrameStatus::complete;
  s.payload = in.substr(4, static_cast<size_t>(s.length));
  s.consumed = total;
  return s;
}

void append_frame(std::string& out, std::string_view payload) {
  Writer w(out);
  w.put_int(static_cast<int32_t>(payload.size()));
  out.append(payload);
}

}  // namespace warden::wire
