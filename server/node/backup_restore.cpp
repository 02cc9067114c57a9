// The AdminServer's snapshot and restore (ZooKeeper 3.9's commands): checked, then run off the
// server's thread; a restore swaps the store in and starts the process again in place.

#include "server/node/runtime_impl.hpp"

namespace warden::server {

void ServerRuntime::Impl::remove_backup_leftovers() const {
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(config.data_dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    bool backup = name.rfind(backup_file_prefix, 0) == 0 && name.size() > 4 && name.substr(name.size() - 4) == ".tmp";
    if (backup || name.rfind("admin-upload-", 0) == 0) {
      std::error_code rm;
      std::filesystem::remove(it->path(), rm);
      spdlog::info("removed {} (a backup or upload a stopped process left)", it->path().string());
    }
  }
}

admin::AdminReply ServerRuntime::Impl::json_reply(int status, const std::string& command, metrics::Json error,
                                                  std::vector<std::pair<std::string, metrics::Json>> extra) {
  metrics::Json j = metrics::Json::object();
  for (auto& [k, v] : extra) j.set(k, std::move(v));
  j.set("command", command);
  j.set("error", std::move(error));
  admin::AdminReply r;
  r.status = status;
  r.body = j.dump();
  return r;
}

void ServerRuntime::Impl::backup_command(const std::string& primary, admin::AdminRequest req,
                                         std::function<void(admin::AdminReply)> done) {
  auto now = std::chrono::steady_clock::now();
  if (auto refused = backup_refusal(primary, req, now)) {
    std::error_code ec;
    if (!req.body_file.empty()) std::filesystem::remove(req.body_file, ec);
    return done(std::move(*refused));
  }
  backup_last[primary] = now;
  backup_running = true;
  if (backup_worker.joinable()) backup_worker.join();
  if (primary == "snapshot") return write_backup(req, std::move(done));
  restore_backup(req, std::move(done));
}

std::optional<admin::AdminReply> ServerRuntime::Impl::backup_refusal(const std::string& primary,
                                                                     const admin::AdminRequest& req,
                                                                     std::chrono::steady_clock::time_point now) {
  bool snapshot = primary == "snapshot";
  if (!(snapshot ? config.admin_snapshot_enabled : config.admin_restore_enabled)) {
    spdlog::warn("AdminServer: the {} command is off (admin.{}.enabled)", primary, primary);
    return json_reply(503, primary, nullptr);
  }
  if (!server->serving()) return json_reply(200, primary, "This ZooKeeper instance is not currently serving requests");
  auto [status, why] = server->admin_authorized(req.authorization, req.peer, "/", 31);  // ALL on /
  if (status != 200) {
    spdlog::warn("AdminServer: {} from {} refused: {}", primary, req.peer, why);
    return json_reply(status, primary, why);
  }
  if (!snapshot && req.body_file.empty()) return json_reply(400, primary, "the request has no body");
  if (config.in_memory || !log->snapshots()) return json_reply(500, primary, "this server keeps no durable store");
  if (!snapshot && ((ensemble && !ensemble->leading()) || restart_argv().empty()))
    return json_reply(500, primary,
                      restart_argv().empty() ? std::string("restore needs the warden-server process")
                                             : fmt::format("restore on the leader (server {}): it restarts on "
                                                           "the restored state and syncs every member",
                                                           ensemble->leader()));
  auto last = backup_last.find(primary);
  if (backup_running || (snapshot && backups_sending >= max_backups_sending) ||
      (last != backup_last.end() && now - last->second < std::chrono::milliseconds(config.admin_rate_limit_ms))) {
    spdlog::warn("AdminServer: {} request rate limited (admin.rateLimiterIntervalInMS={})", primary,
                 config.admin_rate_limit_ms);
    return json_reply(429, primary, nullptr);
  }
  return std::nullopt;
}

void ServerRuntime::Impl::write_backup(const admin::AdminRequest& req, std::function<void(admin::AdminReply)> done) {
  // Everything applied here, which this server's clients may have read: a follower applies a
  // txn the quorum committed while its own log may still be writing it, so the worker waits
  // (bounded) for the log to hold it; past the bound, the state both hold.
  Zxid upto = server->tree().last_applied();
  bool streaming = req.query.find("streaming=false") == std::string::npos;
  std::string file = fmt::format("{}/{}{}-{}.tmp", config.data_dir, backup_file_prefix, getpid(), ++backups_made);
  spdlog::info("AdminServer: writing a backup of the state at 0x{:x} for {}", upto, req.peer);
  backup_worker = std::thread([this, upto, file, streaming, done = std::move(done)]() mutable {
    std::string error;
    backup::BackupInfo info;
    try {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (log->last_zxid() < upto && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      upto = std::min(upto, log->last_zxid());
      info = backup::write_backup(*log, upto, file);
    } catch (const std::exception& e) {
      error = e.what();
    }
    asio::post(io, [this, info, error, file, streaming, done = std::move(done)] {
      backup_running = false;
      std::error_code ec;
      if (!error.empty()) {
        spdlog::error("AdminServer: the backup failed: {}", error);
        std::filesystem::remove(file, ec);
        return done(json_reply(500, "snapshot", error));
      }
      spdlog::info("AdminServer: backup of 0x{:x} written: {} bytes (the snapshot at 0x{:x} and {} txns)", info.last,
                   info.bytes, info.snapshot, info.txns);
      admin::AdminReply r = json_reply(200, "snapshot", nullptr);
      r.headers = {{"last_zxid", fmt::format("0x{:x}", info.last)}, {"snapshot_size", std::to_string(info.bytes)}};
      if (streaming) {
        // The file is this backup's alone; the AdminServer removes it once it is sent (or the
        // transfer fails), then calls `after`.
        r.file = file;
        r.content_type = "application/octet-stream";
        ++backups_sending;
        r.after = [this] { --backups_sending; };
      } else {
        std::filesystem::remove(file, ec);
      }
      done(std::move(r));
    });
  });
}

void ServerRuntime::Impl::restore_backup(const admin::AdminRequest& req, std::function<void(admin::AdminReply)> done) {
  auto paths = backup::restore_paths(config.store_dir());
  std::error_code size_ec;
  spdlog::warn("AdminServer: restoring a backup from {} ({} bytes)", req.peer,
               std::filesystem::file_size(req.body_file, size_ec));
  // Above every zxid this server (and so its clients, and on a leader the ensemble) has.
  Zxid above = std::max(log->last_zxid(), server->tree().last_applied());
  backup_worker = std::thread([this, paths, above, upload = req.body_file, done = std::move(done)]() mutable {
    std::string error;
    backup::BackupInfo info;
    std::error_code ec;
    try {
      backup::clear_staging(paths);
      info = backup::restore_backup(upload, paths.staging, above);
      backup::mark_staging_complete(paths);
    } catch (const std::exception& e) {
      error = e.what();
      std::filesystem::remove_all(paths.staging, ec);
    }
    std::filesystem::remove(upload, ec);
    asio::post(io, [this, info, error, paths, done = std::move(done)]() mutable {
      backup_running = false;
      if (error.empty()) error = swap_in_restored(paths);
      if (!error.empty()) {
        spdlog::error("AdminServer: the restore was refused: {}", error);
        return done(json_reply(500, "restore", error));
      }
      // The restored store is in place: the 200 goes out, then the process starts again on it.
      admin::AdminReply r = json_reply(200, "restore", nullptr, {{"last_zxid", static_cast<int64_t>(info.last)}});
      r.after = [this, last = info.last] { restart_on_restored(last); };
      if (ensemble)  // the others lose their leader now, and it is elected again, ahead of them
        spdlog::warn("restoring the ensemble: this leader restarts on the backup and syncs every member");
      done(std::move(r));
    });
  });
}

std::string ServerRuntime::Impl::swap_in_restored(const backup::RestorePaths& paths) {
  restoring = true;
  if (committer) committer->wait_idle();
  try {
    backup::swap_in_restored(paths);
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (std::filesystem::exists(paths.store)) {  // the store is back: serve on from it
      restoring = false;
      resume_reading();  // connections paused by the swap read again
      return why;
    }
    spdlog::critical("cannot put the restored store in place ({}): stopping; the next start settles it", why);
    spdlog::shutdown();
    std::_Exit(70);
  }
  return {};
}

void ServerRuntime::Impl::set_aside(const std::string& dir, const std::string& why) {
  std::string to = storage::set_aside_damaged(dir);
  spdlog::error(
      "{}. The store is set aside whole as {} (kept for inspection: remove it once this member serves "
      "again); this member starts on an empty store, unsynced: members that are synced do not count its "
      "votes, and it takes part again once the leader they elect has synced it whole (docs/operations.md, "
      "Storage faults)",
      why, to);
}

void ServerRuntime::Impl::admin_request(admin::AdminRequest req, std::function<void(admin::AdminReply)> done) {
  std::string primary = admin::primary_name(req.name);
  if (primary == "snapshot" || primary == "restore") return backup_command(primary, std::move(req), std::move(done));
  if (!req.body_file.empty()) {
    std::error_code ec;
    std::filesystem::remove(req.body_file, ec);
  }
  admin::AdminReply r;
  r.body = admin_command(req.name, req.query);
  done(std::move(r));
}

}  // namespace warden::server
