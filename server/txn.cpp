#include "server/txn.hpp"

namespace warden::server {

namespace {
template <class Variant>
void put_variant(wire::Writer& w, const Variant& v) {
  w.put_int(static_cast<int32_t>(v.index()));
  std::visit(
      [&](const auto& b) {
        if constexpr (requires { b.visit(w); }) b.visit(w);
      },
      v);
}

// Reads the alternative numbered `index`; false for an index the variant does not have.
template <class Variant, size_t I = 0>
bool get_variant(wire::Reader& r, size_t index, Variant& out) {
  if constexpr (I < std::variant_size_v<Variant>) {
    if (index == I) {
      std::variant_alternative_t<I, Variant> b{};
      if constexpr (requires { b.visit(r); }) {
        b.visit(r);
        out = std::move(b);
        return true;
      } else {
        return false;  // multi is read by decode_txn itself
      }
    }
    return get_variant<Variant, I + 1>(r, index, out);
  } else {
    return false;
  }
}

// Multi bodies nest variants, so they are written by hand rather than with WIRE_FIELDS.
constexpr size_t multi_index = 8;
static_assert(std::is_same_v<std::variant_alternative_t<multi_index, TxnBody>, MultiTxn>);
}  // namespace

std::string encode_txn(const Txn& t) {
  std::string out;
  wire::Writer w(out);
  w.put_long(t.session);
  w.put_int(t.cxid);
  w.put_long(t.time);
  w.put_int(t.type);
  if (const auto* m = std::get_if<MultiTxn>(&t.body)) {
    w.put_int(static_cast<int32_t>(multi_index));
    w.put_int(static_cast<int32_t>(m->ops.size()));
    for (const auto& op : m->ops) {
      w.put_int(op.type);
      put_variant(w, op.body);
    }
  } else {
    put_variant(w, t.body);
  }
  return out;
}

std::optional<Txn> decode_txn(std::string_view bytes) {
  wire::Reader r(bytes);
  Txn t;
  t.session = r.get_long();
  t.cxid = r.get_int();
  t.time = r.get_long();
  t.type = r.get_int();
  int32_t index = r.get_int();
  if (!r.ok() || index < 0) return std::nullopt;
  if (static_cast<size_t>(index) == multi_index) {
    MultiTxn m;
    int32_t n = r.get_int();
    if (n < 0 || static_cast<size_t>(n) > r.remaining()) return std::nullopt;
    for (int32_t i = 0; i < n && r.ok(); ++i) {
      SubTxn op;
      op.type = r.get_int();
      int32_t sub = r.get_int();
      if (!r.ok() || sub < 0 || !get_variant(r, static_cast<size_t>(sub), op.body)) return std::nullopt;
      m.ops.push_back(std::move(op));
    }
    t.body = std::move(m);
  } else if (!get_variant(r, static_cast<size_t>(index), t.body)) {
    return std::nullopt;
  }
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return t;
}

}  // namespace warden::server
