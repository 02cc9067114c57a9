// Jute, ZooKeeper's serialization: big-endian ints and longs, one-byte booleans, strings and
// buffers prefixed by an int length where -1 means null, vectors prefixed by an int count.
//
// Records declare their fields once with WIRE_FIELDS; the Reader and the Writer walk them.
// The Reader never reads past its input: any length that does not fit marks it failed and
// every later read returns a default, so a decoder checks `ok()` once at the end.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace warden::wire {

// A jute `buffer`: bytes that may be null (a length of -1), which clients tell apart from empty.
using Bytes = std::optional<std::string>;

#define WIRE_FIELDS(...)                          \
  template <class V>                              \
  void visit(V& v) {                              \
    v(__VA_ARGS__);                               \
  }                                               \
  template <class V>                              \
  void visit(V& v) const {                        \
    v(__VA_ARGS__);                               \
  }

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  void put_int(int32_t v) { (*this)(v); }
  void put_long(int64_t v) { (*this)(v); }
  void put_bool(bool v) { out_.push_back(v ? 1 : 0); }
  void put_string(std::string_view s) {
    put_int(static_cast<int32_t>(s.size()));
    out_.append(s);
  }
  void put_bytes(const Bytes& b) {
    if (!b) {
      put_int(-1);
    } else {
      put_string(*b);
    }
  }

  // A record of ints, longs and booleans alone (a Stat, a reply header) goes out in one append:
  // one call into std::string per record, not one per field.
  template <class... T>
  void operator()(const T&... fields) {
    if constexpr (sizeof...(T) > 0 && ((fixed_size<T>() > 0) && ...)) {
      char staged[(fixed_size<T>() + ...)];
      char* p = staged;
      (stage(p, fields), ...);
      out_.append(staged, sizeof staged);
    } else {
      (field(fields), ...);
    }
  }

 private:
  template <class T>
  static constexpr size_t fixed_size() {
    if constexpr (std::is_same_v<T, int32_t>) return 4;
    else if constexpr (std::is_same_v<T, int64_t>) return 8;
    else if constexpr (std::is_same_v<T, bool>) return 1;
    else return 0;
  }
  static void stage(char*& p, int32_t v) {
    uint32_t be = big_endian(static_cast<uint32_t>(v));
    std::memcpy(p, &be, 4);
    p += 4;
  }
  static void stage(char*& p, int64_t v) {
    uint64_t be = big_endian(static_cast<uint64_t>(v));
    std::memcpy(p, &be, 8);
    p += 8;
  }
  template <class U>
  static U big_endian(U u) {
    if constexpr (std::endian::native == std::endian::big)
      return u;
    else if constexpr (sizeof(U) == 4)
      return __builtin_bswap32(u);
    else
      return __builtin_bswap64(u);
  }
  static void stage(char*& p, bool v) { *p++ = v ? 1 : 0; }

  void field(int32_t v) { put_int(v); }
  void field(int64_t v) { put_long(v); }
  void field(bool v) { put_bool(v); }
  void field(const std::string& v) { put_string(v); }
  void field(const Bytes& v) { put_bytes(v); }
  template <class T>
  void field(const std::vector<T>& v) {
    put_int(static_cast<int32_t>(v.size()));
    for (const auto& e : v) field(e);
  }
  template <class R>
  void field(const R& record) {
    record.visit(*this);
  }

  std::string& out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : p_(in.data()), end_(in.data() + in.size()) {}

  bool ok() const { return ok_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  bool at_end() const { return p_ == end_; }
  void fail() {
    ok_ = false;
    p_ = end_;
  }

  int32_t get_int() {
    if (remaining() < 4) {
      fail();
      return 0;
    }
    const auto* u = reinterpret_cast<const unsigned char*>(p_);
    p_ += 4;
    return static_cast<int32_t>((uint32_t(u[0]) << 24) | (uint32_t(u[1]) << 16) |
                                (uint32_t(u[2]) << 8) | uint32_t(u[3]));
  }
  int64_t get_long() {
    uint64_t hi = static_cast<uint32_t>(get_int());
    uint64_t lo = static_cast<uint32_t>(get_int());
    return static_cast<int64_t>((hi << 32) | lo);
  }
  bool get_bool() {
    if (remaining() < 1) {
      fail();
      return false;
    }
    return *p_++ != 0;
  }
  // A null string (-1) reads as empty: no ZooKeeper string field gives null a meaning of its own.
  std::string get_string() {
    Bytes b = get_bytes();
    return b ? std::move(*b) : std::string();
  }
  Bytes get_bytes() {
    auto v = get_view();
    if (!v) return std::nullopt;
    return std::string(*v);
  }

  // A non-null buffer as a view into the input, without a copy; nothing for null or short input.
  std::optional<std::string_view> get_view() {
    int32_t n = get_int();
    if (!ok_ || n == -1) return std::nullopt;
    if (n < -1 || static_cast<size_t>(n) > remaining()) {
      fail();
      return std::nullopt;
    }
    std::string_view v(p_, static_cast<size_t>(n));
    p_ += n;
    return v;
  }

  template <class... T>
  void operator()(T&... fields) {
    (field(fields), ...);
  }

 private:
  void field(int32_t& v) { v = get_int(); }
  void field(int64_t& v) { v = get_long(); }
  void field(bool& v) { v = get_bool(); }
  void field(std::string& v) { v = get_string(); }
  void field(Bytes& v) { v = get_bytes(); }
  template <class T>
  void field(std::vector<T>& v) {
    int32_t n = get_int();
    v.clear();
    if (!ok_ || n == -1) return;
    // Every element takes at least one byte, so a count beyond the input is garbage.
    if (n < -1 || static_cast<size_t>(n) > remaining()) {
      fail();
      return;
    }
    v.resize(static_cast<size_t>(n));
    for (auto& e : v) {
      field(e);
      if (!ok_) return;
    }
  }
  template <class R>
  void field(R& record) {
    record.visit(*this);
  }

  const char* p_;
  const char* end_;
  bool ok_ = true;
};

template <class R>
std::string encode(const R& record) {
  std::string out;
  Writer w(out);
  record.visit(w);
  return out;
}

// Decodes a whole record: trailing bytes are allowed (ZooKeeper ignores them), a short input is not.
template <class R>
std::optional<R> decode(std::string_view in) {
  Reader r(in);
  R record{};
  record.visit(r);
  if (!r.ok()) return std::nullopt;
  return record;
}

}  // namespace warden::wire
