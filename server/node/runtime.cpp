// Building a running server (the composition root), recovery, the client ports, the tick and
// shutdown; the public ServerRuntime. The other parts of ServerRuntime::Impl: runtime_impl.hpp.

#include "server/node/runtime_impl.hpp"

namespace warden::server {

ServerOptions ServerRuntime::Impl::options_of(const Config& c) {
  ServerOptions o;
  o.tick_ms = c.tick_time;
  o.min_session_timeout_ms = c.effective_min_session_timeout();
  o.max_session_timeout_ms = c.effective_max_session_timeout();
  o.extended_types = c.extended_types;
  o.digest_enabled = c.digest_enabled;
  o.container_check_interval_ms = c.container_check_interval_ms;
  o.sessionless_timeout_ms = c.sessionless_timeout_ms;
  o.read_only_mode = c.read_only_mode && c.ensemble();
  o.reconfig_enabled = c.reconfig_enabled;
  o.standalone_enabled = c.standalone_enabled;
  o.super_digest = c.super_digest;
  o.enforce_quota = c.enforce_quota;
  o.skip_acl = c.skip_acl;
  o.linearizable_reads = c.linearizable_reads;
  o.sasl_acls = c.sasl_provider;
  if (c.enforce_auth) o.enforce_auth_schemes = c.enforce_auth_schemes;
  o.server_id = static_cast<uint8_t>(c.session_id_byte());
  o.config_node = config_node_text(c);
  o.config_version = static_cast<Zxid>(c.config_version);
  return o;
}

ServerOptions ServerRuntime::Impl::server_options() {
  ServerOptions o = options_of(config);
  if (sasl) {
    o.sasl = [s = sasl.get()] { return s->start(); };
    o.sasl_super_user = config.sasl_super_user;
    o.sasl_failed_clients_stay = config.allow_sasl_failed_clients;
  }
  return o;
}

void ServerRuntime::Impl::load_sasl() {
  bool required = std::find(config.enforce_auth_schemes.begin(), config.enforce_auth_schemes.end(), "sasl") !=
                  config.enforce_auth_schemes.end();
  if (!config.jaas_file.empty()) {
    auto jaas = auth::load_jaas(config.jaas_file);
    if (auto* why = std::get_if<std::string>(&jaas))
      throw std::runtime_error(*why + (config.jaas_origin.empty() ? "" : " (named by " + config.jaas_origin + ")"));
    const auto& file = this->jaas.emplace(std::get<auth::JaasFile>(jaas));
    if (file.section(config.sasl_section)) {
      sasl = std::make_unique<auth::SaslServer>(
          file, config.sasl_section,
          auth::SaslServer::Principals{config.kerberos_remove_host, config.kerberos_remove_realm});
      spdlog::info("SASL for clients: {} ({}'s {} section)", sasl->mechanism(), config.jaas_file, config.sasl_section);
    } else if (!required) {
      spdlog::warn("{} has no {} section: no SASL for clients", config.jaas_file, config.sasl_section);
    }
  }
  if (required && !sasl)
    throw std::runtime_error("enforce.auth.schemes (or sessionRequireClientSASLAuth) asks for sasl, but no JAAS " +
                             config.sasl_section +
                             " section offers it (set jaasConfigFile, or "
                             "-Djava.security.auth.login.config in SERVER_JVMFLAGS)");
}

ServerRuntime::Impl::Impl(const Config& c) : config(c) {
  load_sasl();
  if (config.tls_needed()) {
    client_tls = std::make_unique<tls::ServerTlsContext>(config.client_tls);  // throws, naming key and file
    for (TlsPolicy* p : {&plain_policy, &secure_policy}) {
      p->context = client_tls.get();
      p->x509_super_user = config.x509_super_user;
    }
    secure_policy.mode = TlsPolicy::Mode::tls;
    if (config.client_port_unification) plain_policy.mode = TlsPolicy::Mode::either;
  }
  if (config.in_memory) {
    log = std::make_unique<storage::MemoryLogStore>();
  } else {
    auto dir = std::filesystem::path(config.store_dir());
    std::error_code ec;
    // A restore (POST /commands/restore) put its store in place and started this process
    // again, or was cut short by a crash: settled before the store opens (restore_swap.hpp).
    if (auto note = backup::settle_interrupted_restore(backup::restore_paths(dir.string())); !note.empty())
      spdlog::warn("{}", note);
    remove_backup_leftovers();
    std::filesystem::create_directories(dir, ec);
    if (ec) throw storage::StorageError("cannot create the log directory " + dir.string() + ": " + ec.message());
    std::unique_ptr<storage::RocksDbLogStore> durable;
    try {
      durable = std::make_unique<storage::RocksDbLogStore>(dir.string(), config.force_sync);
    } catch (const storage::StorageDamage& e) {
      if (!config.ensemble())
        throw storage::StorageDamage(std::string(e.what()) +
                                     ": a standalone server does not start on it (docs/operations.md, Storage "
                                     "faults, says what to do)");
      set_aside(dir.string(), e.what());
      durable = std::make_unique<storage::RocksDbLogStore>(dir.string(), config.force_sync);
    }
    if (!durable->recovery_note().empty()) spdlog::warn("{}", durable->recovery_note());
    log = std::move(durable);
    if (!config.force_sync) spdlog::warn("forceSync=no: a machine crash may lose acknowledged writes");
  }
  if (config.ensemble()) {
    make_member();
    replication = ensemble.get();
    server = std::make_unique<RequestPipeline>(server_options(), *ensemble, wall_ms, steady_ms);
    member_view.r = ensemble.get();
    server->set_ensemble(&member_view);
    server->set_on_config([this](std::string_view text, Zxid version) { config_in_force(text, version); });
  } else {
    replicator =
        std::make_unique<consensus::ZabReplicator>(*log, [this](storage::LogEntry e) { persist(std::move(e)); });
    replication = replicator.get();
    server = std::make_unique<RequestPipeline>(server_options(), *replicator, wall_ms, steady_ms);
  }
  connections = std::make_unique<ClientConnections>(
      io, *server, ClientConnections::Limits{config.jute_max_buffer, config.max_client_cnxns}, four_letter);
  connections->pause_while([this] { return over_outstanding_limit(); });
  server->set_fan_out(&connections->fan_out());
  auto* snapshots = log->snapshots();
  if (!snapshots) start_replication(0);  // an in-memory log starts empty
  if (snapshots) {
    try {
      recover(*snapshots);
    } catch (const storage::StorageError& e) {
      // Damage that only reading finds (a table file's block, the replica state): an ensemble
      // member sets its store aside as at the open, and starts again in place on an empty one.
      if (!config.ensemble() || dynamic_cast<const storage::DiskFullError*>(&e) || std::getenv(set_aside_env) ||
          restart_argv().empty())
        throw;
      set_aside(config.store_dir(), e.what());
      setenv(set_aside_env, "1", 1);
      restart_in_place("on an empty store");
    }
    unsetenv(set_aside_env);
    return_free_memory();  // what loading the snapshot and replaying the log left behind
    plan_next_snapshot();
    snapshot_writer =
        std::make_unique<storage::SnapshotWriter>(*snapshots, [this](Zxid at, uint64_t attempt, std::string error) {
          asio::post(io, [this, at, attempt, error] {
            heap_to_trim = true;
            if (error.empty()) {
              spdlog::info("snapshot at 0x{:x} written: durable", at);
            } else {  // a snapshot is an optimisation: without it the log still holds everything
              spdlog::error("snapshot at 0x{:x} abandoned: {}", at, error);
              // Its producer stopped with the failure. Matched by attempt, not zxid: a later
              // attempt at the same zxid may be walking already (its failure came after the walk).
              if (walk && walk_attempt == attempt) walk.reset();
            }
          });
        });
    committer = std::make_unique<storage::GroupCommitter>(
        *log,
        [this](Zxid upto, std::optional<storage::GroupCommitter::Failure> failure) {
          asio::post(io, [this, upto, failure] { on_durable(upto, failure); });
        },
        config.fsync_warning_ms,
        [this](const storage::GroupCommitter::Write& w) {
          metrics.fsynctime.add(w.micros / 1000);
          metrics.log_write_micros.add(w.micros);
          metrics.sync_processor_batch_size.add(static_cast<int64_t>(w.waited_micros.size()));
          metrics.sync_processor_flush_time.add(w.micros / 1000);
          metrics.sync_processor_queue_time.add_each(w.waited_micros, 0, 1000);
          metrics.sync_processor_queue_and_flush_time.add_each(w.waited_micros, w.micros, 1000);
        });
  }
}

void ServerRuntime::Impl::recover(const storage::SnapshotStore& snapshots) {
  auto started = std::chrono::steady_clock::now();
  struct Timed {  // dbinittime: the snapshot's load and the replay after it
    Metrics& m;
    std::chrono::steady_clock::time_point t;
    ~Timed() { m.dbinittime.add(ms_since(t)); }
  } timed{metrics, started};
  const storage::LogStore& durable = *log;
  SnapshotSink sink{[this] { server->start_snapshot_load(); },
                    [this](std::string_view p, std::string_view r) { return server->load_snapshot_node(p, r); },
                    [this](std::string_view k, std::string_view r) { return server->load_snapshot_session(k, r); }};
  Zxid from = load_newest_snapshot(
      snapshots, sink,
      [](Zxid at, size_t nodes) { spdlog::info("loading the snapshot at 0x{:x}: {} nodes so far", at, nodes); },
      1000000, [](const std::string& why) { spdlog::error("{}", why); });
  metrics.startup_snap_load_time.add(ms_since(started));
  // The log holds only what follows its base; what is at or below it lives in snapshots. With
  // no complete snapshot at or above the base, the state up to it is in no file: refused, as
  // ZooKeeper refuses "No snapshot found, but there are log entries", never started on a tree
  // that lacks it.
  if (durable.base() > from)
    throw storage::StorageError(
        fmt::format("{}: the log starts after 0x{:x}, but {}: the txns up to 0x{:x} are in no file; refusing to start "
                    "(restore a backup, or move the directory aside to have this member synced from its peers)",
                    config.store_dir(), static_cast<uint64_t>(durable.base()),
                    from ? fmt::format("the newest snapshot that loads is at 0x{:x}", static_cast<uint64_t>(from))
                         : std::string("no complete snapshot loads"),
                    static_cast<uint64_t>(durable.base())));
  auto replay_started = std::chrono::steady_clock::now();
  if (from) {
    server->finish_snapshot_load(from);
    spdlog::info("loaded the snapshot at 0x{:x}: {} nodes, {} sessions", from, server->tree().size(),
                 server->session_count());
  }
  // Only what is known committed replays here; the rest of the log is the replicator's to
  // commit (a lone voter commits all of it as it leads again; a follower what its leader says).
  Zxid mark = durable.replica_state().commit_mark;
  size_t n = 0;
  durable.for_each_after(from, [&](const storage::LogEntry& e) {
    if (e.zxid > mark) return;
    server->replay(e.zxid, e.payload);
    if (++n % 1000000 == 0) spdlog::info("replaying the log: {} txns so far", n);
  });
  metrics.startup_txns_load_time.add(ms_since(replay_started));
  metrics.startup_txns_loaded.add(static_cast<int64_t>(n));
  Zxid replayed = server->tree().last_applied();
  start_replication(replayed);
  if (n > 0 || from > 0 || durable.last_zxid() > 0)
    spdlog::info(
        "recovered up to zxid 0x{:x} ({} txns replayed after the snapshot up to the commit mark 0x{:x}, "
        "the rest committed as this server leads); {} nodes, {} sessions",
        server->tree().last_applied(), n, replayed, server->tree().size(), server->session_count());
}

void ServerRuntime::Impl::start_replication(Zxid applied) {
  if (ensemble) {
    ++metrics.looking_count;
    metrics.looking_since = metrics.unavailable_since = std::chrono::steady_clock::now();
  }
  replication->start(applied);
}

void ServerRuntime::Impl::move_client_port(const std::string& address, int32_t port) {
  boost::system::error_code ec;
  auto bound = acceptor.local_endpoint(ec);
  if (ec || stopping) return;  // no plaintext client port
  auto wanted = asio::ip::make_address(address, ec);
  if (ec || (bound.address() == wanted && bound.port() == port)) return;
  std::string before = address_of(acceptor);
  tcp::acceptor next{io};
  auto bind = [&](tcp::acceptor& a, const std::string& host, int32_t p) {
    try {
      listen(a, host, p, "clientPort");
      return std::string();
    } catch (const std::exception& e) {
      boost::system::error_code ignored;
      a.close(ignored);
      return std::string(e.what());
    }
  };
  std::string why = bind(next, address, port);
  if (!why.empty()) {
    // The same port on another address may clash with the old socket: free it, then try.
    accept_on_client_ports(&acceptor);
    acceptor.close(ec);
    why = bind(next, address, port);
    if (!why.empty()) {
      spdlog::error(
          "the configuration moves this member's client port to {}:{}, which cannot be bound ({}); it "
          "stays at {}",
          address, port, why, before);
      bind(acceptor, bound.address().to_string(), bound.port());
      accept_on_client_ports();
      return;
    }
  }
  accept_on_client_ports(&acceptor);
  acceptor.close(ec);
  acceptor = std::move(next);
  config.client_port_address = address;
  config.client_port = port;
  accept_on_client_ports();
  spdlog::info("client port moved from {} to {} by the configuration", before, address_of(acceptor));
}

void ServerRuntime::Impl::accept_on_client_ports(const tcp::acceptor* leaving) {
  if (!accepter)
    accepter = std::make_unique<AcceptThread>([this](std::vector<AcceptThread::Accepted> got) {
      asio::post(io, [this, batch = AcceptedBatch(std::move(got))]() mutable { adopt(batch); });
    });
  std::vector<AcceptThread::Listener> ports;
  if (acceptor.is_open() && &acceptor != leaving) ports.push_back({acceptor.native_handle(), plain_port});
  if (secure_acceptor.is_open() && &secure_acceptor != leaving)
    ports.push_back({secure_acceptor.native_handle(), secure_port});
  accepter->listen_on(std::move(ports));
}

void ServerRuntime::Impl::adopt(AcceptedBatch& batch) {
  auto fds = std::exchange(batch.fds, {});
  for (size_t i = 0; i < fds.size(); ++i) {
    if (stopping) {
      for (size_t j = i; j < fds.size(); ++j) ::close(fds[j].fd);
      return;
    }
    if (!connections->adopt(fds[i].fd, fds[i].tag == secure_port ? secure_policy : plain_policy))
      ++metrics.connection_rejected;
  }
}

void ServerRuntime::Impl::schedule_tick() {
  // A few checks per tick keep expiry within a fraction of a tick of ZooKeeper's.
  auto period = std::chrono::milliseconds(std::max(10, config.tick_time / 4));
  ticker.expires_after(period);
  ticker.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping) return;
    server->tick();
    trim_when_idle();
    schedule_tick();
  });
}

void ServerRuntime::Impl::shutdown() {
  if (stopping) return;
  stopping = true;
  boost::system::error_code ec;
  if (accepter) accepter->stop();  // before the listening sockets it polls are closed
  acceptor.close(ec);
  secure_acceptor.close(ec);
  ticker.cancel();
  peer_ticker.cancel();
  if (streamer) streamer->cancel_all();
  if (transport) transport->stop();
  if (admin_server) admin_server->stop();
  if (metrics_server) metrics_server->stop();
  purge_timer.cancel();
  signals.cancel();
  if (connections) connections->close_all();
  spdlog::info("warden-server stopped");
}

ServerRuntime::ServerRuntime(const Config& config) : impl_(std::make_unique<Impl>(config)) {}
ServerRuntime::~ServerRuntime() {
  if (impl_ && impl_->backup_worker.joinable()) impl_->backup_worker.join();
}

void remember_command_line(int argc, char** argv) { restart_argv().assign(argv, argv + argc); }

void ServerRuntime::bind() {
  const Config& c = impl_->config;
  if (c.client_port >= 0) listen(impl_->acceptor, c.client_port_address, c.client_port, "clientPort");
  if (c.secure_client_port >= 0)
    listen(impl_->secure_acceptor, c.secure_client_port_address, c.secure_client_port, "secureClientPort");
  if (impl_->transport) impl_->transport->start();
  if (c.admin.enabled) {
    auto* i = impl_.get();
    admin::AdminSettings settings = c.admin;
    if (!c.in_memory) {
      settings.uploads = {"restore", "rest"};
      settings.upload_dir = c.data_dir;
      // Nothing is stored for a client that may not restore: it is told so (the body bounded).
      settings.upload_allowed = [i](std::string_view, std::string_view authorization, const std::string& peer) {
        return i->config.admin_restore_enabled && i->server->serving() &&
               i->server->admin_authorized(authorization, peer, "/", 31).first == 200;
      };
    }
    impl_->admin_server = std::make_unique<admin::AdminServer>(
        impl_->io, settings, [i](admin::AdminRequest r, std::function<void(admin::AdminReply)> done) {
          i->admin_request(std::move(r), std::move(done));
        });
    impl_->admin_server->start();  // a port it cannot bind is logged; clients are served all the same
  }
  if (c.metrics.enabled) {
    auto* i = impl_.get();
    impl_->metrics_server = std::make_unique<admin::AdminServer>(
        impl_->io, c.metrics, [i](admin::AdminRequest, std::function<void(admin::AdminReply)> done) {
          auto env = i->four_letter_env("mntr");
          admin::AdminReply r;
          r.body = admin::prometheus_text(admin::monitor_values(*i->server, env), admin::summaries(*i->server, env),
                                          i->server->summary_sets(), i->warden_metrics());
          done(std::move(r));
        });
    impl_->metrics_server->start();
  }
  if (c.pause.enabled)
    impl_->pause_monitor = std::make_unique<admin::PauseMonitor>(c.pause, impl_->metrics.jvm_pause_time);
}

uint16_t ServerRuntime::admin_port() const { return impl_->admin_server ? impl_->admin_server->port() : 0; }

uint16_t ServerRuntime::port() const {
  boost::system::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

std::string ServerRuntime::address() const { return address_of(impl_->acceptor); }
std::string ServerRuntime::secure_address() const { return address_of(impl_->secure_acceptor); }

bool ServerRuntime::run(bool handle_signals) {
  if (handle_signals) {
    impl_->signals.add(SIGTERM);
    impl_->signals.add(SIGINT);
    impl_->signals.async_wait([this](boost::system::error_code ec, int sig) {
      if (ec) return;
      spdlog::info("signal {} received, stopping", sig);
      impl_->shutdown();
    });
  }
  impl_->accept_on_client_ports();
  impl_->schedule_tick();
  if (impl_->ensemble) impl_->schedule_peer_tick();
  impl_->schedule_purge(std::chrono::hours(0));
  impl_->io.run();
  impl_->snapshot_writer.reset();  // an unfinished snapshot has no marker and is never used
  impl_->committer.reset();        // writes what is queued, then stops its thread
  return !impl_->failed;
}

void ServerRuntime::stop() {
  asio::post(impl_->io, [this] { impl_->shutdown(); });
}

}  // namespace warden::server
