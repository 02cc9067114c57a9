#include "server/reconfig/config_txn.hpp"

#include <variant>

#include "server/config/config.hpp"
#include "wire/records.hpp"

namespace warden::server::reconfig {

namespace {
// Where encode_txn puts a txn's type: after its session (8 bytes), cxid (4) and time (8).
constexpr size_t type_offset = 20;
}  // namespace

Txn config_txn(std::string text, SessionId session, int32_t cxid, int64_t time_ms) {
  Txn t;
  t.session = session;
  t.cxid = cxid;
  t.time = time_ms;
  t.type = static_cast<int32_t>(wire::OpCode::reconfig);
  // ZooKeeper writes the node with version -1: a reconfig does not count as a setData.
  t.body = SetDataTxn{std::string(config_node), std::move(text), -1};
  return t;
}

std::optional<Members> members_in_txn(std::string_view payload) {
  if (payload.size() < type_offset + 4) return std::nullopt;
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(payload[type_offset + i])); };
  uint32_t type = byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3);
  if (type != static_cast<uint32_t>(wire::OpCode::reconfig)) return std::nullopt;
  auto txn = decode_txn(payload);
  const auto* set = txn ? std::get_if<SetDataTxn>(&txn->body) : nullptr;
  if (!set || set->path != config_node || !set->data) return std::nullopt;
  Config c;
  if (parse_members(c, *set->data, "reconfig", true, true)) return std::nullopt;
  Members m;
  for (const auto& [id, e] : c.servers) (e.observer() ? m.observers : m.voters).push_back(id);
  if (m.voters.empty()) return std::nullopt;
  m.text = *set->data;
  return m;
}

}  // namespace warden::server::reconfig
