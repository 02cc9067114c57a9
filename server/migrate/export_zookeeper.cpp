#include "server/migrate/export_zookeeper.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "server/state/stored_state.hpp"
#include "storage/zookeeper_format/zookeeper_files.hpp"

namespace warden::server::migrate {

namespace {
namespace fs = std::filesystem;
namespace zkf = storage::zookeeper_format;

// ZooKeeper keeps OPEN_ACL_UNSAFE out of its map, as the key -1.
bool is_open(const wire::AclList& acl) {
  return acl.size() == 1 && acl[0].perms == 31 && acl[0].id.scheme == "world" && acl[0].id.id == "anyone";
}
}  // namespace

ExportReport export_zookeeper(const ExportOptions& o) {
  fs::path v2 = fs::path(o.to) / "version-2";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(v2, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("snapshot.", 0) == 0 || name.rfind("log.", 0) == 0)
      throw ExportError(fmt::format("--to {}: {} already holds ZooKeeper's files ({}): export writes into a fresh "
                                    "directory only",
                                    o.to, v2.string(), name));
  }
  StoredState s;
  load_stored_state(o.data_dir, s, true);
  const DataTree& tree = s.tree;
  ExportReport rep;
  rep.zxid = tree.last_applied();

  // The ACL map: each distinct list once, keyed from 1 in the order the walk meets them.
  auto paths = tree.sorted_paths();  // a parent before its descendants, as ZooKeeper's load needs
  std::map<wire::AclList, int64_t> keys;
  std::vector<std::pair<int64_t, wire::AclList>> map;
  for (const auto& p : paths) {
    const auto& acl = *tree.acl_of(*tree.find(p));
    if (!is_open(acl) && keys.emplace(acl, static_cast<int64_t>(map.size()) + 1).second)
      map.emplace_back(static_cast<int64_t>(map.size()) + 1, acl);
  }
  fs::create_directories(v2, ec);
  if (ec) throw ExportError(fmt::format("--to {}: cannot create {}: {}", o.to, v2.string(), ec.message()));
  rep.snapshot = (v2 / fmt::format("snapshot.{:x}", static_cast<uint64_t>(rep.zxid))).string();
  zkf::SnapshotFileWriter w(rep.snapshot);
  auto sessions = s.sessions.timeouts();
  w.sessions(sessions);
  w.acls(map);
  for (const auto& p : paths) {
    const Node& n = *tree.find(p);
    zkf::SnapshotNode z;
    z.path = p;
    z.data = n.data_bytes();
    const auto& acl = *tree.acl_of(n);
    z.acl = is_open(acl) ? zkf::open_acl_key : keys.at(acl);
    z.stat = {n.czxid, n.mzxid, n.ctime, n.mtime, n.version, n.creates, n.aversion, n.ephemeralOwner, n.pzxid};
    w.node(z);
  }
  w.finish(zkf::ZxidDigest{rep.zxid, 2, static_cast<int64_t>(tree.zk_digest())});
  // A member of a ZooKeeper ensemble refuses to start when its epochs are below its last zxid's.
  auto epoch = static_cast<uint32_t>(static_cast<uint64_t>(rep.zxid) >> 32);
  rep.accepted_epoch = std::max(s.replica.accepted_epoch, epoch);
  rep.current_epoch = std::max(s.replica.current_epoch, epoch);
  zkf::write_epoch_file((v2 / "acceptedEpoch").string(), rep.accepted_epoch);
  zkf::write_epoch_file((v2 / "currentEpoch").string(), rep.current_epoch);
  rep.nodes = paths.size();
  rep.sessions = sessions.size();
  rep.acls = map.size();
  return rep;
}

}  // namespace warden::server::migrate
