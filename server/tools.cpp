#include "server/time_text.hpp"
#include "server/tools.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <ostream>
#include <set>

#include "server/backup/backup.hpp"
#include "server/data_tree.hpp"
#include "server/migrate/import_zookeeper.hpp"
#include "server/session_table.hpp"
#include "server/snapshot_walk.hpp"
#include "server/txn.hpp"
#include "storage/rocksdb_log_store.hpp"

namespace warden::server {

namespace {
std::string time_text(int64_t ms) { return fmt::format("{}.{:03}Z", utc_text(ms, "%Y-%m-%dT%H:%M:%S"), ms % 1000); }

std::string bytes_text(const wire::Bytes& b) {
  if (!b) return "null";
  std::string out = "'";
  for (unsigned char c : b->substr(0, 64)) out += (c >= 0x20 && c < 0x7f && c != '\'') ? std::string(1, char(c)) : fmt::format("\\x{:02x}", c);
  if (b->size() > 64) out += fmt::format("'... ({} bytes)", b->size());
  else out += "'";
  return out;
}

std::string acl_text(const wire::AclList& acl) {
  std::string out;
  for (const auto& a : acl) out += fmt::format("{}{}:{}:{}", out.empty() ? "" : ",", a.id.scheme, a.id.id, a.perms);
  return out;
}

std::string body_text(const TxnBody& body);

std::string sub_text(const SubTxnBody& body) {
  return std::visit([](const auto& b) { return body_text(TxnBody(b)); }, body);
}

std::string body_text(const TxnBody& body) {
  return std::visit(
      [](const auto& b) -> std::string {
        using B = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<B, CreateTxn>) {
          return fmt::format("create {} data={} acl={} owner=0x{:x} parentCreates={}", b.path, bytes_text(b.data),
                             acl_text(b.acl), static_cast<uint64_t>(b.ephemeralOwner), b.parentCreates);
        } else if constexpr (std::is_same_v<B, DeleteTxn>) {
          return "delete " + b.path;
        } else if constexpr (std::is_same_v<B, SetDataTxn>) {
          return fmt::format("setData {} data={} version={}", b.path, bytes_text(b.data), b.version);
        } else if constexpr (std::is_same_v<B, SetAclTxn>) {
          return fmt::format("setACL {} acl={} aversion={}", b.path, acl_text(b.acl), b.version);
        } else if constexpr (std::is_same_v<B, CheckTxn>) {
          return "check " + b.path;
        } else if constexpr (std::is_same_v<B, ErrorTxn>) {
          return fmt::format("error {}", wire::err_name(static_cast<wire::Err>(b.err)));
        } else if constexpr (std::is_same_v<B, CreateSessionTxn>) {
          return fmt::format("createSession timeout={}", b.timeout);
        } else if constexpr (std::is_same_v<B, CloseSessionTxn>) {
          std::string out = "closeSession";
          for (const auto& p : b.ephemerals) out += " -" + p;
          return out;
        } else {
          std::string out = fmt::format("multi ({} ops)", b.ops.size());
          for (const auto& op : b.ops) out += " [" + sub_text(op.body) + "]";
          return out;
        }
      },
      body);
}
}  // namespace

std::string log_dir_of(const std::string& data_dir) { return (std::filesystem::path(data_dir) / "log").string(); }

int restore_backup_into(const std::string& file, const std::string& data_dir, std::ostream& out, std::ostream& err) {
  try {
    auto info = backup::restore_backup(file, log_dir_of(data_dir), 0);
    Zxid at = info.restored;
    out << fmt::format("restored {} into {}: the state up to 0x{:x} (the snapshot at 0x{:x} and {} txns after it), "
                       "served from zxid 0x{:x}\n",
                       file, data_dir, info.last, info.snapshot, info.txns, at);
    return 0;
  } catch (const std::exception& e) {
    err << "restore-backup: " << e.what() << "\n";
    return 1;
  }
}

int import_zookeeper_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  migrate::ImportOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string* slot = args[i] == "--from"       ? &o.from
                        : args[i] == "--from-log" ? &o.from_log
                        : args[i] == "--data-dir" ? &o.data_dir
                                                  : nullptr;
    if (!slot || i + 1 >= args.size()) {
      err << "import-zookeeper: " << (slot ? args[i] + " needs a directory" : "unknown argument " + args[i])
          << "\nusage: warden-server import-zookeeper --from ZK_DATADIR [--from-log ZK_DATALOGDIR] --data-dir DIR\n";
      return 2;
    }
    *slot = args[++i];
  }
  if (o.from.empty() || o.data_dir.empty()) {
    err << "import-zookeeper: --from and --data-dir are required\n"
           "usage: warden-server import-zookeeper --from ZK_DATADIR [--from-log ZK_DATALOGDIR] --data-dir DIR\n";
    return 2;
  }
  try {
    auto r = migrate::import_zookeeper(o);
    for (const auto& n : r.notes) out << "note: " << n << "\n";
    out << fmt::format("imported {} into {}: {} nodes, {} sessions, the state after txn 0x{:x} ({} from {} and {} "
                       "txns after it); epochs {} accepted, {} current; ZooKeeper's digest {}\n",
                       o.from, o.data_dir, r.nodes, r.sessions, static_cast<uint64_t>(r.last),
                       r.snapshot.empty() ? "nothing" : "the snapshot", r.snapshot.empty() ? "-" : r.snapshot, r.txns,
                       r.accepted_epoch, r.current_epoch, r.digest_checked ? "agrees" : "was not recorded");
    return 0;
  } catch (const std::exception& e) {
    err << "import-zookeeper: " << e.what() << "\n";
    return 1;
  }
}

namespace {
// Loads the newest complete snapshot into `tree`; returns its zxid (0: none) and its sessions.
Zxid load_snapshot_into(const storage::RocksDbLogStore& log, DataTree& tree, std::set<SessionId>& sessions) {
  SessionTable table(1000);  // validates the records; its clock is of no use here
  SnapshotSink sink{[&] { tree.start_load(); },
                    [&](std::string_view p, std::string_view r) { return tree.load_node(p, r); },
                    [&](std::string_view k, std::string_view r) {
                      if (!table.load(k, r, 0)) return false;
                      sessions.insert(wire::Reader(k).get_long());
                      return true;
                    }};
  Zxid at = load_newest_snapshot(log, sink);
  if (at) tree.finish_load(at);
  return at;
}
}  // namespace

int dump_snapshot(const std::string& data_dir, std::ostream& out, std::ostream& err) {
  try {
    auto log = storage::RocksDbLogStore::open_read_only(log_dir_of(data_dir));
    DataTree tree;
    std::set<SessionId> sessions;
    Zxid at = load_snapshot_into(*log, tree, sessions);
    if (at == 0) {
      out << "no complete snapshot\n";
      return 0;
    }
    out << fmt::format("snapshot at 0x{:x}: {} nodes, {} sessions\n", at, tree.size(), sessions.size());
    for (const auto& path : tree.sorted_paths()) {
      const Node* n = tree.find(path);
      auto st = client_stat(*n);
      out << fmt::format("{} czxid=0x{:x} mzxid=0x{:x} pzxid=0x{:x} version={} cversion={} aversion={} owner=0x{:x} "
                         "children={} acl={} data={}\n",
                         path, st.czxid, st.mzxid, st.pzxid, st.version, st.cversion, st.aversion,
                         static_cast<uint64_t>(n->ephemeralOwner), st.numChildren, acl_text(*tree.acl_of(*n)),
                         bytes_text(n->data_bytes()));
    }
    for (SessionId s : sessions) out << fmt::format("session 0x{:x}\n", static_cast<uint64_t>(s));
    return 0;
  } catch (const std::exception& e) {
    err << "warden-server snapshot-dump: " << e.what() << "\n";
    return 1;
  }
}

int dump_log(const std::string& data_dir, std::ostream& out, std::ostream& err) {
  try {
    auto log = storage::RocksDbLogStore::open_read_only(log_dir_of(data_dir));
    for (Zxid z : log->complete_snapshots()) out << fmt::format("snapshot at 0x{:x}\n", z);
    size_t n = 0;
    log->for_each_after(0, [&](const storage::LogEntry& e) {
      auto t = decode_txn(e.payload);
      if (!t) throw storage::StorageError(fmt::format("record 0x{:x} does not hold a txn", e.zxid));
      out << fmt::format("0x{:x} {} session:0x{:x} cxid:{} {}\n", e.zxid, time_text(t->time),
                         static_cast<uint64_t>(t->session), t->cxid, body_text(t->body));
      ++n;
    });
    out << fmt::format("{} txns\n", n);
    return 0;
  } catch (const std::exception& e) {
    err << "warden-server log-dump: " << e.what() << "\n";
    return 1;
  }
}

int check_data_dir(const std::string& data_dir, std::ostream& out, std::ostream& err) {
  try {
    auto log = storage::RocksDbLogStore::open_read_only(log_dir_of(data_dir));
    DataTree tree;
    std::set<SessionId> sessions;
    std::vector<WatchTrigger> ignored;
    size_t n = 0;
    auto started = std::chrono::steady_clock::now();
    Zxid from = load_snapshot_into(*log, tree, sessions);
    if (from) out << fmt::format("snapshot at 0x{:x}: {} nodes\n", from, tree.size());
    log->for_each_after(from, [&](const storage::LogEntry& e) {
      auto t = decode_txn(e.payload);
      if (!t) throw storage::StorageError(fmt::format("record 0x{:x} does not hold a txn", e.zxid));
      tree.apply(*t, e.zxid, ignored);
      ignored.clear();
      if (std::holds_alternative<CreateSessionTxn>(t->body)) sessions.insert(t->session);
      if (std::holds_alternative<CloseSessionTxn>(t->body)) sessions.erase(t->session);
      if (++n % 1000000 == 0) err << fmt::format("replayed {} txns...\n", n);  // progress for large logs
    });
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    out << fmt::format("ok: {} txns up to zxid 0x{:x} replay in {:.2f}s; {} nodes, {} open sessions, digest {:016x}\n",
                       n, log->last_zxid(), secs, tree.size(), sessions.size(), tree.digest());
    return 0;
  } catch (const std::exception& e) {
    err << "warden-server check: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace warden::server
