#include "server/tools.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <ostream>
#include <set>

#include "server/backup/backup.hpp"
#include "server/base/time_text.hpp"
#include "server/config/config.hpp"
#include "server/migrate/export_zookeeper.hpp"
#include "server/migrate/import_zookeeper.hpp"
#include "server/state/data_tree.hpp"
#include "server/state/session_table.hpp"
#include "server/state/snapshot_walk.hpp"
#include "server/state/stored_state.hpp"
#include "server/state/txn.hpp"
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

namespace {
// Reads "--name VALUE" pairs into the slots named; false (with the reason on `err`) for an
// unknown name, a name without its value, or a required one missing.
bool read_options(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string*>>& slots,
                  const std::vector<std::string>& required, const char* command, const char* usage, std::ostream& err) {
  std::string problem;
  for (size_t i = 0; i < args.size() && problem.empty(); ++i) {
    std::string* slot = nullptr;
    for (const auto& [name, s] : slots)
      if (args[i] == name) slot = s;
    if (!slot)
      problem = "unknown argument " + args[i];
    else if (i + 1 >= args.size())
      problem = args[i] + " needs a directory";
    else
      *slot = args[++i];
  }
  for (const auto& name : required)
    for (const auto& [n, s] : slots)
      if (problem.empty() && n == name && s->empty()) problem = name + " is required";
  if (problem.empty()) return true;
  err << command << ": " << problem << "\nusage: warden-server " << command << " " << usage << "\n";
  return false;
}
}  // namespace

int import_zookeeper_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  migrate::ImportOptions o;
  if (!read_options(args, {{"--from", &o.from}, {"--from-log", &o.from_log}, {"--data-dir", &o.data_dir}},
                    {"--from", "--data-dir"}, "import-zookeeper",
                    "--from ZK_DATADIR [--from-log ZK_DATALOGDIR] --data-dir DIR", err))
    return 2;
  try {
    auto r = migrate::import_zookeeper(o);
    for (const auto& n : r.notes) out << "note: " << n << "\n";
    out << fmt::format("imported {} into {}: {} nodes, {} sessions, the state after txn 0x{:x} ({} from {} and {} "
                       "txns after it); epochs {} accepted, {} current; ZooKeeper's digest {}; {:.2f} s to load the "
                       "snapshot, {:.2f} s to replay, {:.2f} s to write\n",
                       o.from, o.data_dir, r.nodes, r.sessions, static_cast<uint64_t>(r.last),
                       r.snapshot.empty() ? "nothing" : "the snapshot", r.snapshot.empty() ? "-" : r.snapshot, r.txns,
                       r.accepted_epoch, r.current_epoch, r.digest_checked ? "agrees" : "was not recorded", r.load_s,
                       r.replay_s, r.write_s);
    return 0;
  } catch (const std::exception& e) {
    err << "import-zookeeper: " << e.what() << "\n";
    return 1;
  }
}

int export_zookeeper_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  migrate::ExportOptions o;
  if (!read_options(args, {{"--data-dir", &o.data_dir}, {"--to", &o.to}}, {"--data-dir", "--to"}, "export-zookeeper",
                    "--data-dir DIR --to ZK_DATADIR", err))
    return 2;
  try {
    auto r = migrate::export_zookeeper(o);
    out << fmt::format("exported {} into {}: {} nodes, {} sessions, {} ACL lists, the state after txn 0x{:x}; epochs "
                       "{} accepted, {} current\n",
                       o.data_dir, r.snapshot, r.nodes, r.sessions, r.acls, static_cast<uint64_t>(r.zxid),
                       r.accepted_epoch, r.current_epoch);
    return 0;
  } catch (const std::exception& e) {
    err << "export-zookeeper: " << e.what() << "\n";
    return 1;
  }
}

int dump_snapshot(const std::string& data_dir, std::ostream& out, std::ostream& err) {
  try {
    StoredState s;
    load_stored_state(data_dir, s, false);
    if (s.snapshot == 0) {
      out << "no complete snapshot\n";
      return 0;
    }
    const DataTree& tree = s.tree;
    auto sessions = s.sessions.timeouts();
    out << fmt::format("snapshot at 0x{:x}: {} nodes, {} sessions\n", s.snapshot, tree.size(), sessions.size());
    for (const auto& path : tree.sorted_paths()) {
      const Node* n = tree.find(path);
      auto st = client_stat(*n);
      out << fmt::format("{} czxid=0x{:x} mzxid=0x{:x} pzxid=0x{:x} version={} cversion={} aversion={} owner=0x{:x} "
                         "children={} acl={} data={}\n",
                         path, st.czxid, st.mzxid, st.pzxid, st.version, st.cversion, st.aversion,
                         static_cast<uint64_t>(n->ephemeralOwner), st.numChildren, acl_text(*tree.acl_of(*n)),
                         bytes_text(n->data_bytes()));
    }
    for (const auto& [id, timeout] : sessions)
      out << fmt::format("session 0x{:x}\n", static_cast<uint64_t>(id));
    return 0;
  } catch (const std::exception& e) {
    err << "warden-server snapshot-dump: " << e.what() << "\n";
    return 1;
  }
}

int dump_log(const std::string& data_dir, std::ostream& out, std::ostream& err) {
  try {
    auto log = storage::RocksDbLogStore::open_read_only(log_dir_of(data_dir));
    if (!log->recovery_note().empty()) err << "warden-server log-dump: " << log->recovery_note() << "\n";
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

int accept_loss(const std::string& data_dir, std::ostream& out, std::ostream& err) {
  try {
    std::string dir = log_dir_of(data_dir);
    if (!std::filesystem::is_directory(dir)) throw storage::StorageError("no store in " + data_dir + " (" + dir + ")");
    Zxid readable = 0;
    {
      auto view = storage::RocksDbLogStore::open_read_only(dir);
      if (!view->wal_damaged()) {
        out << fmt::format("the log in {} is not damaged before its last batch: nothing to accept, nothing changed\n",
                           dir);
        return 0;
      }
      err << "warden-server accept-loss: " << view->recovery_note() << "\n";
      readable = view->last_zxid();
    }
    Zxid end = storage::RocksDbLogStore::cut_at_damage(dir);
    out << fmt::format("cut the log in {} at the damage: it ends at zxid 0x{:x} (it read whole up to 0x{:x}); every txn "
                       "written after the damage is gone, and a server started on {} serves the state up to 0x{:x}\n",
                       dir, static_cast<uint64_t>(end), static_cast<uint64_t>(readable), data_dir,
                       static_cast<uint64_t>(end));
    return 0;
  } catch (const std::exception& e) {
    err << "warden-server accept-loss: " << e.what() << "\n";
    return 1;
  }
}

int check_data_dir(const std::string& data_dir, std::ostream& out, std::ostream& err) {
  try {
    auto started = std::chrono::steady_clock::now();
    StoredState s;
    load_stored_state(data_dir, s, true, [&](size_t n) { err << fmt::format("replayed {} txns...\n", n); });
    if (s.snapshot) out << fmt::format("snapshot at 0x{:x}\n", s.snapshot);
    if (!s.note.empty()) err << "warden-server check: " << s.note << "\n";
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    out << fmt::format("{}: {} txns up to zxid 0x{:x} replay in {:.2f}s; {} nodes, {} open sessions, digest {:016x}\n",
                       s.wal_damaged ? "damaged" : "ok", s.txns, s.tree.last_applied(), secs, s.tree.size(),
                       s.sessions.size(), s.tree.digest());
    return s.wal_damaged ? 1 : 0;
  } catch (const std::exception& e) {
    err << "warden-server check: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace warden::server
