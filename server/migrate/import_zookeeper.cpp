#include "server/migrate/import_zookeeper.hpp"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "consensus/replicator.hpp"
#include "server/pipeline/request_pipeline.hpp"
#include "server/state/data_tree.hpp"
#include "server/state/session_table.hpp"
#include "server/state/snapshot_walk.hpp"
#include "storage/rocksdb_log_store.hpp"
#include "storage/zookeeper_format/zookeeper_files.hpp"

namespace warden::server::migrate {

namespace {
namespace fs = std::filesystem;
namespace zkf = storage::zookeeper_format;

// ZooKeeper keeps its files in `version-2` under dataDir (and dataLogDir); either may be named.
std::string version2_of(const std::string& dir, const char* option) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw ImportError(fmt::format("{} {}: not a directory", option, dir));
  fs::path v2 = fs::path(dir) / "version-2";
  if (fs::is_directory(v2, ec)) return v2.string();
  if (fs::path(dir).filename() == "version-2") return dir;
  throw ImportError(fmt::format("{} {}: holds no version-2 directory (is it ZooKeeper's dataDir?)", option, dir));
}

std::string hex(Zxid z) { return fmt::format("0x{:x}", static_cast<uint64_t>(z)); }

uint32_t epoch_of(Zxid z) { return static_cast<uint32_t>(static_cast<uint64_t>(z) >> 32); }
uint32_t counter_of(Zxid z) { return static_cast<uint32_t>(static_cast<uint64_t>(z) & 0xffffffffu); }

const wire::AclList& open_acl() {
  static const wire::AclList acl{wire::Acl{31, wire::Id{"world", "anyone"}}};
  return acl;
}

// Reads `file` on a thread of its own while the caller's visitor builds the tree from what was
// read (in order, on the calling thread): decoding and the checksum overlap the building, on a
// machine whose other cores an import leaves idle. At most `max_batches` batches wait.
zkf::SnapshotSummary read_snapshot_alongside(const zkf::SnapshotFile& file, const zkf::SnapshotVisitor& visit) {
  struct Batch {
    std::vector<std::pair<int64_t, int32_t>> sessions;
    std::vector<std::pair<int64_t, wire::AclList>> acls;
    std::vector<zkf::SnapshotNode> nodes;
  };
  constexpr size_t nodes_per_batch = 2048, max_batches = 4;
  struct Abandoned {};
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Batch> queue;
  bool done = false, abandon = false;
  std::exception_ptr failed;
  zkf::SnapshotSummary sum;
  std::thread reader([&] {
    Batch b;
    auto push = [&] {
      std::unique_lock lk(mu);
      cv.wait(lk, [&] { return queue.size() < max_batches || abandon; });
      if (abandon) throw Abandoned{};
      queue.push_back(std::move(b));
      b = Batch{};
      cv.notify_all();
    };
    zkf::SnapshotVisitor v;
    v.session = [&](int64_t id, int32_t t) { b.sessions.emplace_back(id, t); };
    v.acl = [&](int64_t key, wire::AclList acl) { b.acls.emplace_back(key, std::move(acl)); };
    v.node = [&](zkf::SnapshotNode n) {
      b.nodes.push_back(std::move(n));
      if (b.nodes.size() == nodes_per_batch) push();
    };
    try {
      auto got = zkf::read_snapshot(file, v);
      push();
      std::lock_guard lk(mu);
      sum = got;
    } catch (const Abandoned&) {
    } catch (...) {
      std::lock_guard lk(mu);
      failed = std::current_exception();
    }
    std::lock_guard lk(mu);
    done = true;
    cv.notify_all();
  });
  try {
    for (;;) {
      Batch b;
      {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return !queue.empty() || done; });
        if (queue.empty()) break;
        b = std::move(queue.front());
        queue.pop_front();
        cv.notify_all();
      }
      for (const auto& [id, t] : b.sessions) visit.session(id, t);
      for (auto& [key, acl] : b.acls) visit.acl(key, std::move(acl));
      for (auto& n : b.nodes) visit.node(std::move(n));
    }
  } catch (...) {
    {
      std::lock_guard lk(mu);
      abandon = true;
      cv.notify_all();
    }
    reader.join();
    throw;
  }
  reader.join();
  if (failed) std::rethrow_exception(failed);
  return sum;
}

// The state being rebuilt: a server that serves nobody, its tree and session table filled as a
// start fills them, with what import must track beside them.
class Rebuild {
 public:
  Rebuild() : replicator_(scratch_, [](storage::LogEntry) {}), server_(ServerOptions{}, replicator_, [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }) {}

  RequestPipeline& server() { return server_; }
  const DataTree& tree() const { return server_.tree(); }

  // Loads `file`; throws zkf::FormatError for a snapshot that does not read whole.
  zkf::SnapshotSummary load(const zkf::SnapshotFile& file) {
    server_.start_snapshot_load();
    acls_.clear();
    unresolved_.clear();
    live_.clear();
    SessionTable sessions(1000);
    // Warden's own /zookeeper/config, not ZooKeeper's: its member list is the new ensemble's.
    DataTree fresh;
    std::string own_config;
    fresh.append_snapshot_node(own_config, *fresh.find("/zookeeper/config"));
    zkf::SnapshotVisitor v;
    v.session = [&](int64_t id, int32_t timeout) {
      sessions.add(id, timeout, zkf::session_password(id), 0);
      live_.insert(id);
    };
    v.acl = [&](int64_t key, wire::AclList acl) { acls_[key] = std::move(acl); };
    SnapshotNode s;  // one for every node: its ACL is copied only when it changes
    int64_t last_key = 0;
    bool have_key = false;
    v.node = [&](zkf::SnapshotNode n) {
      bool loaded;
      if (n.path == "/zookeeper/config") {
        loaded = server_.load_snapshot_node(n.path, std::string_view(own_config).substr(4));
      } else {
        s.data = std::move(n.data);
        if (!have_key || n.acl != last_key) {
          if (n.acl == zkf::open_acl_key) {
            s.acl = open_acl();
          } else if (auto it = acls_.find(n.acl); it != acls_.end()) {
            s.acl = it->second;
          } else {
            // A list first used while a fuzzy snapshot was written (ZOOKEEPER-3306): the log's
            // create or setACL of the node names it.
            s.acl = open_acl();
          }
          last_key = n.acl;
          have_key = true;
        }
        if (n.acl != zkf::open_acl_key && !acls_.count(n.acl)) unresolved_[n.path] = n.acl;
        s.czxid = n.stat.czxid;
        s.mzxid = n.stat.mzxid;
        s.pzxid = n.stat.pzxid;
        s.ctime = n.stat.ctime;
        s.mtime = n.stat.mtime;
        s.ephemeralOwner = n.stat.ephemeralOwner;
        s.version = n.stat.version;
        s.creates = n.stat.cversion;
        s.aversion = n.stat.aversion;
        loaded = server_.load_snapshot_node(n.path, s);
      }
      if (!loaded) throw zkf::FormatError(fmt::format("{}: node {} does not load", file.path, n.path));
    };
    auto sum = read_snapshot_alongside(file, v);
    if (tree().size() != sum.nodes)
      throw zkf::FormatError(fmt::format("{}: {} of its {} nodes have no parent in it: the snapshot is damaged",
                                         file.path, sum.nodes - tree().size(), sum.nodes));
    for (auto& [key, record] : sessions.records())
      if (!server_.load_snapshot_session(key, record))
        throw zkf::FormatError(fmt::format("{}: a session does not load", file.path));
    server_.finish_snapshot_load(file.zxid);
    return sum;
  }

  // Applies ZooKeeper's txn as Warden's own at its zxid.
  void apply(const zkf::Txn& z) {
    Txn t;
    t.session = z.session;
    t.cxid = z.cxid;
    t.time = z.time;
    t.type = z.type;
    std::visit([&](const auto& b) { t.body = convert(z, b); }, z.body);
    if (z.type == 16) {  // reconfig: ZooKeeper's member list, not Warden's (see load)
      t.type = -1;
      t.body = ErrorTxn{0};
    }
    if (std::holds_alternative<CreateSessionTxn>(t.body)) live_.insert(z.session);
    if (std::holds_alternative<CloseSessionTxn>(t.body)) live_.erase(z.session);
    server_.replay(z.zxid, t);
    resolve_acls(z);
  }

  // ZooKeeper's start removes the ephemerals of sessions it does not hold (closed in a log it
  // never wrote, or the snapshot's table and tree taken at different moments): so does import,
  // at the last zxid, as ZooKeeper's start does. Returns how many sessions' nodes went.
  size_t drop_orphan_ephemerals(Zxid at) {
    std::vector<SessionId> owners;
    for (const auto& [owner, paths] : tree().ephemerals())
      if (!live_.count(owner)) owners.push_back(owner);
    for (SessionId owner : owners) {
      Txn t;
      t.session = owner;
      t.type = -11;
      t.body = CloseSessionTxn{};
      server_.replay(at, t);
    }
    return owners.size();
  }

  const std::map<std::string, int64_t>& unresolved() const { return unresolved_; }
  size_t sessions() const { return live_.size(); }

 private:
  CreateTxn convert_create(const zkf::Txn& z, const zkf::CreateTxn& c) {
    CreateTxn w;
    w.path = c.path;
    w.data = c.data;
    w.acl = c.acl;
    w.ephemeralOwner = c.ttl          ? ephemeral::ttl_owner(*c.ttl)
                       : c.container  ? ephemeral::container
                       : c.ephemeral  ? z.session
                                      : 0;
    w.parentCreates = c.parentCVersion;
    if (c.parentCVersion == -1) {
      // ZooKeeper 3.2's create carries no parent counter: the parent's next one.
      std::string_view p = std::string_view(c.path).substr(0, std::max<size_t>(c.path.rfind('/'), 1));
      const Node* parent = tree().find(p);
      w.parentCreates = parent ? parent->creates + 1 : 0;
    }
    return w;
  }
  TxnBody convert(const zkf::Txn& z, const zkf::CreateTxn& c) { return convert_create(z, c); }
  TxnBody convert(const zkf::Txn&, const zkf::DeleteTxn& d) { return DeleteTxn{d.path}; }
  TxnBody convert(const zkf::Txn&, const zkf::SetDataTxn& s) { return SetDataTxn{s.path, s.data, s.version}; }
  TxnBody convert(const zkf::Txn&, const zkf::SetAclTxn& s) { return SetAclTxn{s.path, s.acl, s.version}; }
  TxnBody convert(const zkf::Txn& z, const zkf::CreateSessionTxn& c) {
    return CreateSessionTxn{c.timeout, zkf::session_password(z.session)};
  }
  TxnBody convert(const zkf::Txn& z, const zkf::CloseSessionTxn& c) {
    // Before 3.6 the close names nothing: ZooKeeper deletes what the session owns then.
    return CloseSessionTxn{c.paths ? *c.paths : tree().ephemerals_of(z.session)};
  }
  TxnBody convert(const zkf::Txn&, const zkf::ErrorTxn& e) { return ErrorTxn{e.err}; }
  TxnBody convert(const zkf::Txn& z, const zkf::MultiTxn& m) {
    MultiTxn w;
    for (const auto& op : m.ops) {
      SubTxn s;
      s.type = op.type;
      std::visit(
          [&](const auto& b) {
            using B = std::decay_t<decltype(b)>;
            if constexpr (std::is_same_v<B, zkf::CreateTxn>)
              s.body = convert_create(z, b);
            else if constexpr (std::is_same_v<B, zkf::DeleteTxn>)
              s.body = DeleteTxn{b.path};
            else if constexpr (std::is_same_v<B, zkf::SetDataTxn>)
              s.body = SetDataTxn{b.path, b.data, b.version};
            else if constexpr (std::is_same_v<B, zkf::CheckVersionTxn>)
              s.body = CheckTxn{b.path};
            else
              s.body = ErrorTxn{b.err};
          },
          op.body);
      w.ops.push_back(std::move(s));
    }
    return w;
  }

  // A node whose ACL the snapshot could not name takes it from the log: a create (the node
  // already there, from the fuzzy snapshot) names the list it was made with, a setACL replaces
  // it (applied already), a delete ends the question.
  void resolve_acls(const zkf::Txn& z) {
    if (unresolved_.empty()) return;
    auto one = [&](const auto& b) {
      using B = std::decay_t<decltype(b)>;
      if constexpr (std::is_same_v<B, zkf::CreateTxn>) {
        if (unresolved_.erase(b.path)) server_.relabel_loaded_acl(b.path, b.acl);
      } else if constexpr (std::is_same_v<B, zkf::SetAclTxn> || std::is_same_v<B, zkf::DeleteTxn>) {
        unresolved_.erase(b.path);
      }
    };
    if (const auto* m = std::get_if<zkf::MultiTxn>(&z.body)) {
      for (const auto& op : m->ops) std::visit(one, op.body);
    } else {
      std::visit(one, z.body);
    }
  }

  storage::MemoryLogStore scratch_;
  consensus::ZabReplicator replicator_;
  RequestPipeline server_;
  std::map<int64_t, wire::AclList> acls_;
  std::map<std::string, int64_t> unresolved_;  // path -> the ACL key its snapshot gave
  std::set<SessionId> live_;
};

// ZooKeeper's digests as the replay meets them: the snapshot's, then each txn's. A snapshot is
// written while txns apply, so its tree is fuzzy up to the txn its digest names, and nothing
// before that txn is compared (nor does ZooKeeper compare it). The digest is read after the walk
// and can be read while a txn is half applied (its node already written, the digest logged still
// the previous txn's): the tree then differs at the digest's txn and agrees from the next, and
// ZooKeeper's own start logs the difference and goes on. So a difference refuses the import only
// when it lasts to the last digest recorded; one that a later digest clears is told.
class DigestTrail {
 public:
  explicit DigestTrail(std::optional<zkf::ZxidDigest> snapshot) : fuzzy_until_(snapshot) {}

  // The tree after txn `at` (the snapshot's own zxid first), whose record in the log carried
  // `recorded` (3.6+), read at `where`.
  void after(const DataTree& tree, Zxid at, std::optional<int64_t> recorded, const std::string& where) {
    if (fuzzy_until_) {
      if (fuzzy_until_->zxid != at) return;
      recorded = fuzzy_until_->digest;
      fuzzy_until_.reset();
    }
    if (!recorded) return;
    auto ours = static_cast<int64_t>(tree.zk_digest());
    bool agrees = ours == *recorded;
    last_agreed_ = agrees;
    if (agrees && differs_) {
      cleared_.push_back(fmt::format("{} (agrees again after txn {})", *differs_, hex(at)));
      differs_.reset();
    } else if (!agrees && !differs_) {
      differs_ = fmt::format("{}: the tree after txn {} is not ZooKeeper's: its digest is {}, ZooKeeper recorded {}",
                             where, hex(at), ours, *recorded);
    }
  }

  // After the last txn: refuses a difference no later digest cleared, and tells the cleared ones.
  void finish(const std::string& snapshot, ImportReport& rep) const {
    if (fuzzy_until_)
      throw ImportError(fmt::format("{}: its digest is of txn {}, which no log holds: txns are missing", snapshot,
                                    hex(fuzzy_until_->zxid)));
    if (differs_) throw ImportError(*differs_ + ", and no later digest agrees (nothing was written)");
    for (const auto& c : cleared_)
      rep.notes.push_back("a difference from ZooKeeper's digest that a later one clears (as when a snapshot's digest "
                          "is read while a txn applies): " + c);
    rep.digest_checked = last_agreed_.value_or(false);
  }

 private:
  std::optional<zkf::ZxidDigest> fuzzy_until_;
  std::optional<std::string> differs_;  // the first difference since the tree last agreed
  std::optional<bool> last_agreed_;
  std::vector<std::string> cleared_;
};
}  // namespace

ImportReport import_zookeeper(const ImportOptions& o) {
  std::string snap_dir = version2_of(o.from, "--from");
  std::string log_dir = o.from_log.empty() ? snap_dir : version2_of(o.from_log, "--from-log");
  std::string store_dir = (fs::path(o.data_dir) / "log").string();
  std::error_code ec;
  if (fs::exists(store_dir, ec) && !fs::is_empty(store_dir, ec))
    throw ImportError(fmt::format("--data-dir {}: already holds a Warden store ({}): import writes a fresh one only",
                                  o.data_dir, store_dir));
  ImportReport rep;
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  auto phase = Clock::now();
  auto logs = zkf::list_logs(log_dir);
  auto snaps = zkf::list_snapshots(snap_dir);
  Rebuild state;
  std::optional<zkf::ZxidDigest> snapshot_digest;
  std::vector<std::string> passed_over;
  bool loaded = false;
  for (const auto& snap : snaps) {
    try {
      auto sum = state.load(snap);
      rep.snapshot = snap.path;
      rep.snapshot_zxid = snap.zxid;
      if (sum.digest && sum.digest->zxid >= snap.zxid) snapshot_digest = sum.digest;
      loaded = true;
      break;
    } catch (const zkf::FormatError& e) {
      passed_over.push_back(e.what());
    }
  }
  for (const auto& why : passed_over) rep.notes.push_back("passed over (a newer snapshot that does not read whole): " + why);
  if (!loaded) {
    // ZooKeeper's first start writes snapshot.0; without any, the logs must hold every txn.
    if (logs.empty() || logs.front().first > 1)
      throw ImportError(fmt::format("{}: no snapshot reads whole{}{}, and the logs do not start at the first txn: "
                                    "nothing to import from",
                                    snap_dir, passed_over.empty() ? "" : " (", passed_over.empty() ? "" : passed_over.front() + ")"));
    state.server().finish_snapshot_load(0);
  }
  rep.nodes = state.tree().size();
  rep.load_s = since(phase);
  phase = Clock::now();

  // The logs that hold txns after the snapshot: the newest starting at or below it, and all after.
  size_t first_log = 0;
  for (size_t i = 0; i < logs.size(); ++i)
    if (logs[i].first <= rep.snapshot_zxid + 1) first_log = i;
  Zxid last = rep.snapshot_zxid;
  DigestTrail digests(snapshot_digest);
  digests.after(state.tree(), last, std::nullopt, rep.snapshot);
  for (size_t i = first_log; i < logs.size(); ++i) {
    auto sum = zkf::read_log(logs[i], [&](zkf::Txn t, uint64_t offset) {
      if (t.zxid <= last) return;  // the snapshot holds it, or an older log's copy was read
      std::string where = fmt::format("{}: offset {}", logs[i].path, offset);
      // Within an epoch ZooKeeper numbers txns without gaps: one missing is a txn lost.
      if (epoch_of(t.zxid) == epoch_of(last) && counter_of(t.zxid) != counter_of(last) + 1 && last != 0)
        throw ImportError(fmt::format("{}: txn {} follows {}: the txns between are in no log (a log removed?)", where,
                                      hex(t.zxid), hex(last)));
      if (last == 0 && t.zxid != 1 && epoch_of(t.zxid) == 0)
        throw ImportError(fmt::format("{}: the first txn is {}, not 0x1: earlier txns are in no log", where, hex(t.zxid)));
      try {
        state.apply(t);
      } catch (const std::exception& e) {
        throw ImportError(fmt::format("{}: txn {} does not apply: {}", where, hex(t.zxid), e.what()));
      }
      last = t.zxid;
      ++rep.txns;
      digests.after(state.tree(), t.zxid, t.digest, where);
    });
    if (!sum.torn_tail.empty()) rep.notes.push_back(sum.torn_tail);
    if (sum.repeated)
      rep.notes.push_back(fmt::format("{} txn(s) logged twice by ZooKeeper, read once ({})", sum.repeated,
                                      sum.first_repeat));
  }
  digests.finish(rep.snapshot, rep);
  rep.last = last;
  if (size_t orphans = state.drop_orphan_ephemerals(last))
    rep.notes.push_back(fmt::format("removed the ephemerals of {} sessions ZooKeeper no longer held, as its start does",
                                    orphans));
  if (!state.unresolved().empty()) {
    const auto& [path, key] = *state.unresolved().begin();
    throw ImportError(fmt::format("{}: node {} names ACL {}, which neither the snapshot's ACL map nor the logs "
                                  "hold ({} such nodes; nothing was written)",
                                  rep.snapshot, path, key, state.unresolved().size()));
  }
  auto accepted = zkf::read_epoch_file((fs::path(snap_dir) / "acceptedEpoch").string());
  auto current = zkf::read_epoch_file((fs::path(snap_dir) / "currentEpoch").string());
  rep.accepted_epoch = std::max(accepted.value_or(0), epoch_of(last));
  rep.current_epoch = std::max(current.value_or(0), epoch_of(last));
  rep.nodes = state.tree().size();
  rep.sessions = state.sessions();
  rep.replay_s = since(phase);
  phase = Clock::now();

  // Written last, so that a refusal above leaves nothing behind; a failed write removes its part.
  bool created = !fs::exists(store_dir, ec);
  try {
    fs::create_directories(store_dir, ec);
    if (ec) throw ImportError("cannot create " + store_dir + ": " + ec.message());
    storage::RocksDbLogStore store(store_dir, true);
    write_whole_snapshot(state.tree(), state.server().session_records(), store, last,
                         fmt::format("{} nodes (imported from ZooKeeper's {})", rep.nodes, o.from));
    store.set_replica_state(storage::ReplicaState{rep.accepted_epoch, rep.current_epoch, last});
    // The seed of a new ensemble, not a member's history: unsynced, as the empty members started
    // beside it, so that they all count each other and elect it (it holds the most).
    store.set_synced(false);
    rep.write_s = since(phase);
  } catch (...) {
    if (created) fs::remove_all(store_dir, ec);
    throw;
  }
  return rep;
}

}  // namespace warden::server::migrate
