// The host of an ensemble member: the replicator's settings and hooks, the peer transport and
// its security, the leader's sync streamer, a follower's snapshot install, role changes, the
// configuration in force, and the peer tick.

#include "server/node/runtime_impl.hpp"

namespace warden::server {

void ServerRuntime::Impl::note_learner_links() {
  if (!ensemble->leading()) return learner_stats.clear();
  for (const auto& l : ensemble->link_views()) {
    auto& st = learner_stats[l.id];
    if (st.link != l.link && l.synced) st = LearnerStats{l.link, wall_ms(), 0, 0, 0};
  }
}

void ServerRuntime::Impl::config_in_force(std::string_view text, Zxid version) {
  if (version <= persisted_config) return;
  persisted_config = version;
  Config next;
  if (auto why = parse_members(next, text, "/zookeeper/config", true, true)) {
    spdlog::error("the configuration 0x{:x} does not parse: {}", static_cast<uint64_t>(version), *why);
    return;
  }
  if (transport) transport->add_members(peer_members(next.servers));
  auto self = next.servers.find(config.my_id.value_or(-1));
  bool line_has_client = self != next.servers.end() && self->second.client_port >= 0;
  if (line_has_client)
    move_client_port(self->second.client_host.empty() ? config.client_port_address : self->second.client_host,
                     self->second.client_port);
  if (config.config_file.empty()) return;
  std::string dynamic = fmt::format("{}.dynamic.{:x}", config.config_file, static_cast<uint64_t>(version));
  // As ZooKeeper's editStaticConfig: when this member's line names its client port, the static
  // clientPort goes too (and clientPortAddress, when the line names an address), so that a
  // restart does not find them contradicting the line.
  std::string static_text;
  {
    std::ifstream in(config.config_file);
    std::string line;
    while (std::getline(in, line)) {
      std::string_view key = config_key_of(line);
      if (key.rfind("server.", 0) == 0 || key == "dynamicConfigFile") continue;
      if (line_has_client && key == "clientPort") continue;
      if (line_has_client && key == "clientPortAddress" && !self->second.client_host.empty()) continue;
      static_text += line + "\n";
    }
  }
  static_text += "dynamicConfigFile=" + dynamic + "\n";
  std::string error;
  if (!write_file_atomically(dynamic, members_text(next.servers), error) ||
      !write_file_atomically(config.config_file, static_text, error))
    spdlog::error("cannot write the configuration 0x{:x}: {}", static_cast<uint64_t>(version), error);
  else
    spdlog::info("configuration 0x{:x} written to {}", static_cast<uint64_t>(version), dynamic);
}

void ServerRuntime::Impl::make_member() {
  persisted_config = static_cast<Zxid>(config.config_version);
  consensus::EnsembleReplicator::Settings s = member_settings();
  consensus::EnsembleReplicator::Hooks h;
  h.send = [this](int64_t to, std::string m, bool vote, uint64_t link) {
    if (!vote && streamer && streamer->hold(to, link, m)) return;
    transport->send(to, std::move(m), vote);
  };
  if (log->snapshots()) add_sync_hooks(h);
  add_replication_hooks(h);
  add_membership_hooks(h);
  ensemble = std::make_unique<consensus::EnsembleReplicator>(*log, s, h);
  make_transport(s.id);
  secure_transport();
  transport->set_accept_strangers(config.reconfig_enabled);
  transport->set_on_lost([this](int64_t member) {
    if (streamer) streamer->cancel(member);
    auto hold = hold_tree();
    ensemble->peer_lost(member);
  });
  if (log->snapshots()) make_streamer(s.id);
}

consensus::EnsembleReplicator::Settings ServerRuntime::Impl::member_settings() const {
  consensus::EnsembleReplicator::Settings s;
  s.id = *config.my_id;
  for (const auto& [id, e] : config.servers) (e.observer() ? s.observers : s.voters).push_back(id);
  s.init_limit = config.init_limit;
  s.sync_limit = config.sync_limit;
  s.subticks = subticks();
  s.config_version = static_cast<Zxid>(config.config_version);
  s.config_members = members_text(config.servers);
  if (config.reconfig_enabled)
    s.config_of = [](std::string_view payload, std::vector<int64_t>& voters, std::vector<int64_t>& observers,
                     std::string& members) {
      auto m = reconfig::members_in_txn(payload);
      if (!m) return false;
      voters = std::move(m->voters);
      observers = std::move(m->observers);
      members = std::move(m->text);
      return true;
    };
  return s;
}

void ServerRuntime::Impl::add_sync_hooks(consensus::EnsembleReplicator::Hooks& h) {
  h.stream = [this](consensus::EnsembleReplicator::SyncPlan p) {
    ++(p.snapshot ? metrics.snap_count : metrics.diff_count);
    bool snapshot = p.snapshot;
    streamer->start(std::move(p));
    (snapshot ? metrics.inflight_snap_count : metrics.inflight_diff_count)
        .add(static_cast<int64_t>(streamer->running(snapshot)));
  };
  h.snapshot_chunk = [this](consensus::EnsembleReplicator::SnapshotFrame f) { snapshot_frame(std::move(f)); };
  h.snapshot_complete = [this](Zxid at, uint64_t link) { return snapshot_received(at, link); };
  h.install_snapshot = [this](Zxid at) { install_snapshot(at); };
  h.digest = [this] { return server->tree().zk_digest(); };
  h.digest_mismatch = [this](Zxid z, uint64_t mine, uint64_t leaders) {
    ++metrics.digest_mismatches;
    spdlog::error(
        "this member's tree differs from the leader's after txn 0x{:x} (digest {:016x}, the leader's "
        "{:016x}): it is synced from nothing (digest_mismatches_count)",
        static_cast<uint64_t>(z), mine, leaders);
  };
  h.ensemble_version = [](uint32_t was, uint32_t now) {
    if (now > was)
      spdlog::info("the ensemble version rises from {} to {}: every member speaks peer protocol {} ({})", was, now, now,
                   consensus::switched_on_at(now));
    else
      spdlog::warn("the ensemble version falls from {} to {}: a member speaks no protocol above {} (a member of an "
                   "older build, or one not heard from yet); what protocol {} added is off",
                   was, now, now, was);
  };
  h.synced_changed = [](bool synced, bool at_start) {
    if (synced)
      spdlog::info("this member's store is synced: the leader synced it whole, or it leads; its votes count again");
    else if (at_start)
      spdlog::info(
          "this member's store is unsynced (new, wiped, or a damaged one set aside): members that are "
          "synced do not count its votes until the leader they elect syncs it whole");
    else
      spdlog::warn("this member's store is unsynced until the leader's sync from nothing completes");
  };
  h.reset_tree = [this] {
    abandon_walk();
    server->start_snapshot_load();
    server->finish_snapshot_load(0);
    txns_since_snapshot = 0;
    spdlog::warn(
        "the leader's history lacks what this member applied: its tree is dropped and synced "
        "from the start");
  };
  h.live_snapshot = [this]() -> std::pair<Zxid, uint64_t> {
    const DataTree& t = server->tree();
    // A snapshot record holds a node's path, data, ACL reference and Stat: its data and
    // path (approximate_data_size) and about 64 bytes more.
    return {t.last_applied(), static_cast<uint64_t>(t.approximate_data_size()) + 64 * t.size()};
  };
}

void ServerRuntime::Impl::add_replication_hooks(consensus::EnsembleReplicator::Hooks& h) {
  h.persist = [this](storage::LogEntry e) { persist(std::move(e)); };
  h.finish_writes = [this] {
    if (committer) committer->wait_idle();
  };
  h.request = [this](int64_t from, std::string payload) {
    ++learner_stats[from].requests;
    server->receive_forwarded(from, payload);
  };
  h.role_changed = [this] { on_role_changed(); };
  h.note = [](const std::string& n) { spdlog::error("{}", n); };
  h.acked = [this](int64_t voter, int64_t micros) {
    auto& s = metrics.ack_micros[voter];
    if (!s) s = std::make_unique<metrics::Summary>(true);
    s->add(micros);
  };
  h.quorum_acked = [this](int64_t micros) { metrics.quorum_ack_latency.add(micros / 1000); };
}

void ServerRuntime::Impl::add_membership_hooks(consensus::EnsembleReplicator::Hooks& h) {
  h.config_changed = [this](Zxid version, const std::vector<int64_t>& voters, const std::vector<int64_t>& observers,
                            const std::string& members) {
    spdlog::info("configuration 0x{:x} in force: voters {}, observers {}", static_cast<uint64_t>(version),
                 fmt::join(voters, ","), fmt::join(observers, ","));
    // A configuration learnt from a member's vote (this one missed the reconfig) names servers
    // this member may not know: reach them now, before it syncs the txn that says where.
    Config next;
    if (!transport || members.empty() || parse_members(next, members, "a peer's configuration", true, true)) return;
    transport->add_members(peer_members(next.servers));
    if ((version & 0xffffffff) == 0 && version > persisted_config) {
      // The files' configuration, versioned by a leader's first epoch (no txn has that zxid):
      // shown and written as a reconfig's would be, as ZooKeeper writes zoo.cfg.dynamic.<epoch>00000000.
      // (The hooks run, as the commit handler does, with the tree held.)
      std::string text = members + fmt::format("version={:x}", static_cast<uint64_t>(version));
      server->configuration_versioned(text, version);
      config_in_force(text, version);
    }
  };
  // A pending reconfig's servers are reached at once: every quorum needs its voters' votes too,
  // and a member restarted with one in its log (its files name only the configuration in force)
  // would otherwise wait for votes that never come.
  h.pending_members = [this](const std::string& members) {
    Config next;
    if (!transport || members.empty() || parse_members(next, members, "a pending configuration", true, true)) return;
    transport->add_members(peer_members(next.servers));
  };
  // A server outside the configuration (one about to be added: reconfigEnabled) reaches this
  // member; its own line in the configuration it sends says where to answer it.
  h.stranger = [this](int64_t from, const std::string& members) {
    Config theirs;
    if (!transport || parse_members(theirs, members, "a joining server's configuration", true, true)) return;
    auto own = theirs.servers.find(from);
    if (own == theirs.servers.end()) return;
    auto them = peer_members({*own});
    if (!them.empty() && transport->add_stranger(them.front()))
      spdlog::info("server {}, outside the configuration, reached this member: it is answered at {}:{}:{}", from,
                   own->second.host, own->second.quorum_port, own->second.election_port);
  };
}

void ServerRuntime::Impl::make_transport(int64_t id) {
  transport = std::make_unique<consensus::PeerTransport>(
      io, id, peer_members(config.servers), [this](int64_t from, std::string_view b) {
        std::string error;
        bool ok;
        {
          // A peer message may commit txns: never while the snapshot writer reads the tree.
          std::unique_lock<std::mutex> hold = hold_tree();
          receiving_lock = &hold;
          struct Forget {
            std::unique_lock<std::mutex>*& p;
            ~Forget() { p = nullptr; }
          } forget{receiving_lock};
          ok = ensemble->receive(from, b, &error);
          if (ok) server->peer_progress();  // a leader's ping may confirm clients' pings
        }
        if (!ok) spdlog::warn("closing the connection from server {}: {}", from, error);
        resume_reading();
        return ok;
      });
}

void ServerRuntime::Impl::secure_transport() {
  if (config.ssl_quorum || config.quorum_port_unification) {
    quorum_accept_tls = std::make_unique<tls::ServerTlsContext>(config.quorum_tls, true);  // throws, naming the key
    quorum_connect_tls = std::make_unique<tls::ServerTlsContext>(config.quorum_tls, false);
    consensus::PeerTransport::Tls t;
    using Accept = consensus::PeerTransport::Tls::Accept;
    t.accept = config.quorum_port_unification ? Accept::either : Accept::tls;
    t.connect = config.ssl_quorum;
    t.verify_host = config.quorum_tls.hostname_verification;
    t.server = [this] { return quorum_accept_tls->current(); };
    t.client = [this] { return quorum_connect_tls->current(); };
    transport->set_tls(std::move(t));
    spdlog::info("members: {} connections out, {} taken in", config.ssl_quorum ? "TLS" : "plaintext",
                 config.quorum_port_unification ? "TLS and plaintext" : "TLS only");
  }
  if (const auto& q = config.quorum_sasl; q.enable_sasl) {
    if (!jaas)
      throw std::runtime_error("quorum.auth.enableSasl=true needs a JAAS file with " + q.learner_section + " and " +
                               q.server_section +
                               " sections (set jaasConfigFile, or "
                               "-Djava.security.auth.login.config in SERVER_JVMFLAGS)");
    std::vector<std::string> hosts;
    for (const auto& [id, e] : config.servers) hosts.push_back(e.host);
    transport->set_auth(auth::quorum_auth(config, *jaas, hosts));  // throws, naming the file and section
    spdlog::info("members: SASL ({}'s {} and {} sections){}{}", jaas->path, q.learner_section, q.server_section,
                 q.learner_require_sasl ? ", required to join others" : "",
                 q.server_require_sasl ? ", required of those who join" : "");
  }
}

void ServerRuntime::Impl::make_streamer(int64_t id) {
  consensus::SyncStreamer::Io sio;
  sio.post = [this](std::function<void()> f) { asio::post(io, std::move(f)); };
  sio.send = [this](int64_t to, std::string bytes) { transport->send(to, std::move(bytes), false); };
  sio.queued = [this](int64_t to) { return transport->queued(to); };
  sio.live = [this]() -> std::unique_ptr<consensus::LiveSnapshot> { return std::make_unique<LiveWalk>(*this); };
  sio.snapshot_unread = [this](Zxid at) {
    spdlog::warn(
        "the snapshot at 0x{:x} could not be read: followers get an older snapshot or the live tree "
        "until this server restarts",
        at);
    ensemble->snapshot_unread(at);
  };
  sio.failed = [this](int64_t to, const std::string&) {
    // Not from inside the replicator's own call (hold() runs in its send hook).
    asio::post(io, [this, to] {
      auto hold = hold_tree();
      ensemble->peer_lost(to);
    });
  };
  streamer = std::make_unique<consensus::SyncStreamer>(id, *log, log->snapshots(), std::move(sio));
  transport->set_on_written([this](int64_t member) { streamer->pump(member); });
}

bool ServerRuntime::Impl::complete_snapshot_at(Zxid at) const {
  auto all = log->snapshots() ? log->snapshots()->complete_snapshots() : std::vector<Zxid>{};
  return std::find(all.begin(), all.end(), at) != all.end();
}

void ServerRuntime::Impl::snapshot_frame(consensus::EnsembleReplicator::SnapshotFrame f) {
  using Part = storage::SnapshotStore::SnapshotPart;
  if (f.at != receiving.at || f.link != receiving.link) {
    abandon_walk();
    receiving = Receiving{};
    receiving.at = f.at;
    receiving.link = f.link;
    snapshot_writer->start();  // a new attempt: what an earlier stream left is dropped
    spdlog::info("receiving the snapshot at 0x{:x} from server {}", f.at, ensemble->leader());
    // The same zxid is the same state: a complete snapshot there stays as it is, rather than
    // being cleared before the stream's copy is in (which would leave none for a while).
    if (complete_snapshot_at(f.at)) {
      receiving.held = true;
      spdlog::info("a complete snapshot at 0x{:x} is here already: it is kept, the stream only counted", f.at);
    }
  }
  if (receiving.end || receiving.failed) return;
  if (f.end) {
    receiving.end = true;
    receiving.sent = {f.node_records, f.session_records};
    return;
  }
  if (f.part != static_cast<char>(Part::node) && f.part != static_cast<char>(Part::session)) {
    receiving.failed = true;
    spdlog::warn("the snapshot from server {} has records of an unknown part {}", ensemble->leader(),
                 static_cast<int>(f.part));
    return;
  }
  (f.part == static_cast<char>(Part::node) ? receiving.got.node : receiving.got.session) += f.records.size();
  if (receiving.held) return;
  without_tree_lock([&] { snapshot_writer->put(f.at, static_cast<Part>(f.part), std::move(f.records)); });
}

bool ServerRuntime::Impl::snapshot_received(Zxid at, uint64_t link) {
  Receiving r = receiving;
  receiving = Receiving{};
  if (r.at != at || r.link != link || !r.end || r.failed || !(r.got == r.sent)) {
    spdlog::warn(
        "the snapshot at 0x{:x} from server {} did not arrive whole ({} and {} records of {} and {}); "
        "syncing again",
        at, ensemble->leader(), r.got.node, r.got.session, r.sent.node, r.sent.session);
    return false;
  }
  if (r.held && complete_snapshot_at(at)) return true;
  snapshot_writer->finish(at, fmt::format("received from server {}", ensemble->leader()));
  without_tree_lock([&] { snapshot_writer->wait_idle(); });
  auto counts = log->snapshots()->snapshot_record_counts(at);
  if (!counts || !(*counts == r.got)) {
    spdlog::warn("the snapshot at 0x{:x} from server {} could not be written (see above); syncing again", at,
                 ensemble->leader());
    return false;
  }
  return true;
}

void ServerRuntime::Impl::install_snapshot(Zxid at) {
  auto* snapshots = log->snapshots();
  snapshots->install_snapshot(at);
  SnapshotSink sink{[this] { server->start_snapshot_load(); },
                    [this](std::string_view p, std::string_view r) { return server->load_snapshot_node(p, r); },
                    [this](std::string_view k, std::string_view r) { return server->load_snapshot_session(k, r); }};
  Zxid loaded = load_newest_snapshot(*snapshots, sink, nullptr, SIZE_MAX, nullptr);
  if (loaded != at)
    throw storage::StorageError(
        fmt::format("the snapshot at 0x{:x} received from server {} did not load", at, ensemble->leader()));
  server->finish_snapshot_load(at);
  txns_since_snapshot = 0;
  spdlog::info("installed the snapshot at 0x{:x} from server {}: {} nodes, {} sessions", at, ensemble->leader(),
               server->tree().size(), server->session_count());
}

void ServerRuntime::Impl::on_role_changed() {
  if (streamer && !ensemble->leading()) streamer->cancel_all();
  // election_time: from looking to a role; follower_sync_time: from following to serving.
  auto now = std::chrono::steady_clock::now();
  std::string_view role = ensemble->role_name();
  // leader_uptime: from this member's start of leading (ZooKeeper's Leader.getUptime).
  if (!ensemble->leading())
    metrics.leading_since.reset();
  else if (!metrics.leading_since)
    metrics.leading_since = now;
  if (role == "looking") {
    if (!metrics.looking_since) ++metrics.looking_count, metrics.looking_since = now;
    if (!metrics.unavailable_since) metrics.unavailable_since = now;
    metrics.syncing_since.reset();
  } else {
    if (metrics.looking_since) {
      metrics.election_time.add(ms_since(*metrics.looking_since));
      metrics.looking_since.reset();
      if (!ensemble->leading()) metrics.syncing_since = now;
    }
    if (metrics.syncing_since && ensemble->serving()) {
      (role == "observing" ? metrics.observer_sync_time : metrics.follower_sync_time)
          .add(ms_since(*metrics.syncing_since));
      metrics.syncing_since.reset();
    }
    if (metrics.unavailable_since && ensemble->serving()) {
      int64_t ms = ms_since(*metrics.unavailable_since);
      metrics.unavailable_time.add(ms);
      if (ensemble->leading()) metrics.leader_unavailable_time.add(ms);
      metrics.unavailable_since.reset();
    }
  }
  if (ensemble->serving())
    spdlog::info("serving as {} in epoch {}{}", member_view.mode(), ensemble->epoch(),
                 ensemble->leading() ? std::string() : fmt::format(" (leader: server {})", ensemble->leader()));
  else
    spdlog::info("not serving clients: {} (no quorum yet)", ensemble->role_name());
  server->role_changed();
}

void ServerRuntime::Impl::schedule_peer_tick() {
  peer_ticker.expires_after(std::chrono::milliseconds(config.tick_time / subticks()));
  peer_ticker.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping) return;
    {
      auto hold = hold_tree();
      ensemble->tick(rng());
    }
    note_learner_links();
    resume_reading();
    schedule_peer_tick();
  });
}

}  // namespace warden::server
