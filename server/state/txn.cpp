#include "server/state/txn.hpp"

namespace warden::server {

namespace {
// The tag written before each txn body: part of the log's format on disk, so fixed here, never
// derived from the variants' order. `top` tags a txn's body, `sub` an op inside a multi (-1: not
// allowed there). Never renumber; a new kind takes the next free number.
template <class T>
struct Tag;
template <> struct Tag<CreateTxn> { static constexpr int32_t top = 0, sub = 0; };
template <> struct Tag<DeleteTxn> { static constexpr int32_t top = 1, sub = 1; };
template <> struct Tag<SetDataTxn> { static constexpr int32_t top = 2, sub = 2; };
template <> struct Tag<SetAclTxn> { static constexpr int32_t top = 3, sub = -1; };
template <> struct Tag<CheckTxn> { static constexpr int32_t top = 4, sub = 3; };
template <> struct Tag<ErrorTxn> { static constexpr int32_t top = 5, sub = 4; };
template <> struct Tag<CreateSessionTxn> { static constexpr int32_t top = 6, sub = -1; };
template <> struct Tag<CloseSessionTxn> { static constexpr int32_t top = 7, sub = -1; };
template <> struct Tag<MultiTxn> { static constexpr int32_t top = 8, sub = -1; };

template <bool Sub, class T>
constexpr int32_t tag_of() {
  return Sub ? Tag<T>::sub : Tag<T>::top;
}

template <bool Sub, class Variant>
void put_variant(wire::Writer& w, const Variant& v) {
  std::visit(
      [&](const auto& b) {
        w.put_int(tag_of<Sub, std::decay_t<decltype(b)>>());
        if constexpr (requires { b.visit(w); }) b.visit(w);
      },
      v);
}

// Reads the alternative tagged `tag`; false for a tag the variant does not have.
template <bool Sub, class Variant, size_t I = 0>
bool get_variant(wire::Reader& r, int32_t tag, Variant& out) {
  if constexpr (I < std::variant_size_v<Variant>) {
    using Alt = std::variant_alternative_t<I, Variant>;
    if (tag == tag_of<Sub, Alt>()) {
      Alt b{};
      if constexpr (requires { b.visit(r); }) {
        b.visit(r);
        out = std::move(b);
        return true;
      } else {
        return false;  // multi is read by decode_txn itself
      }
    }
    return get_variant<Sub, Variant, I + 1>(r, tag, out);
  } else {
    return false;
  }
}

// Multi bodies nest variants, so they are written by hand rather than with WIRE_FIELDS.
constexpr int32_t multi_tag = Tag<MultiTxn>::top;
}  // namespace

std::string encode_txn(const Txn& t) {
  std::string out;
  wire::Writer w(out);
  w.put_long(t.session);
  w.put_int(t.cxid);
  w.put_long(t.time);
  w.put_int(t.type);
  if (const auto* m = std::get_if<MultiTxn>(&t.body)) {
    w.put_int(multi_tag);
    w.put_int(static_cast<int32_t>(m->ops.size()));
    for (const auto& op : m->ops) {
      w.put_int(op.type);
      put_variant<true>(w, op.body);
    }
  } else {
    put_variant<false>(w, t.body);
  }
  return out;
}

std::optional<int64_t> txn_time(std::string_view bytes) {
  wire::Reader r(bytes);
  r.get_long();
  r.get_int();
  int64_t time = r.get_long();
  return r.ok() ? std::optional<int64_t>(time) : std::nullopt;
}

std::optional<Txn> decode_txn(std::string_view bytes) {
  wire::Reader r(bytes);
  Txn t;
  t.session = r.get_long();
  t.cxid = r.get_int();
  t.time = r.get_long();
  t.type = r.get_int();
  int32_t tag = r.get_int();
  if (!r.ok() || tag < 0) return std::nullopt;
  if (tag == multi_tag) {
    MultiTxn m;
    int32_t n = r.get_int();
    if (n < 0 || static_cast<size_t>(n) > r.remaining()) return std::nullopt;
    for (int32_t i = 0; i < n && r.ok(); ++i) {
      SubTxn op;
      op.type = r.get_int();
      int32_t sub = r.get_int();
      if (!r.ok() || sub < 0 || !get_variant<true>(r, sub, op.body)) return std::nullopt;
      m.ops.push_back(std::move(op));
    }
    t.body = std::move(m);
  } else if (!get_variant<false>(r, tag, t.body)) {
    return std::nullopt;
  }
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return t;
}

}  // namespace warden::server
