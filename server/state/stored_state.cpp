#include "server/state/stored_state.hpp"

#include <fmt/format.h>

#include "server/state/snapshot_walk.hpp"
#include "server/state/txn.hpp"
#include "server/config/config.hpp"
#include "storage/rocksdb_log_store.hpp"

namespace warden::server {

void load_stored_state(const std::string& data_dir, StoredState& s, bool replay,
                       const std::function<void(size_t txns)>& progress) {
  auto log = storage::RocksDbLogStore::open_read_only(log_dir_of(data_dir));
  s.replica = log->replica_state();
  s.note = log->recovery_note();
  s.wal_damaged = log->wal_damaged();
  SnapshotSink sink{[&] {
                      s.tree.start_load();
                      s.sessions.forget_all();
                    },
                    [&](std::string_view p, std::string_view r) { return s.tree.load_node(p, r); },
                    [&](std::string_view k, std::string_view r) { return s.sessions.load(k, r, 0); }};
  s.snapshot = load_newest_snapshot(*log, sink);
  if (s.snapshot) s.tree.finish_load(s.snapshot);
  if (!replay) return;
  std::vector<WatchTrigger> ignored;
  log->for_each_after(s.snapshot, [&](const storage::LogEntry& e) {
    auto t = decode_txn(e.payload);
    if (!t) throw storage::StorageError(fmt::format("record 0x{:x} does not hold a txn", e.zxid));
    s.tree.apply(*t, e.zxid, ignored);
    ignored.clear();
    if (const auto* cs = std::get_if<CreateSessionTxn>(&t->body)) s.sessions.add(t->session, cs->timeout, cs->passwd, 0);
    if (std::holds_alternative<CloseSessionTxn>(t->body)) s.sessions.remove(t->session);
    if (++s.txns % 1000000 == 0 && progress) progress(s.txns);
  });
}

}  // namespace warden::server
