// warden-server: a ZooKeeper-compatible coordination server.
//   warden-server FILE                              run from a zoo.cfg
//   warden-server --standalone --port N --data-dir DIR [--host ADDR]
// Prints "warden-server listening on HOST:PORT" on stdout once it serves (and "warden-server
// listening for TLS on HOST:PORT" for a secureClientPort).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <sys/resource.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "server/admin/four_letter.hpp"
#include "server/auth/jaas.hpp"
#include "server/base/version.hpp"
#include "server/config/config.hpp"
#include "server/config/keys.hpp"
#include "server/base/logging.hpp"
#include "server/node/runtime.hpp"
#include "server/tools.hpp"

using warden::server::Config;

namespace {
constexpr const char* usage = R"(usage:
  warden-server FILE
      Runs a server from the zoo.cfg FILE, as `zkServer.sh start-foreground FILE` does.
  warden-server --standalone --port N --data-dir DIR [--host ADDR] [--tick-time MS]
      Runs a standalone server with no configuration file.
  warden-server log-dump DIR
      Prints the transaction log under the data directory DIR (or dataLogDir), one txn a line.
  warden-server check DIR
      Loads the newest snapshot and replays the log under DIR without starting a server, and
      reports whether they are sound.
  warden-server snapshot-dump DIR
      Prints the newest snapshot under DIR, one node a line.
  warden-server accept-loss DIR
      Cuts a transaction log under DIR damaged before its last record at the damage, accepting
      the loss of every txn written after it (a standalone server does not start on such a log;
      docs/operations.md, Storage faults). Run on a stopped server; a whole log is left alone.
  warden-server restore-backup FILE DIR
      Writes the backup FILE (what the AdminServer's snapshot command sends) into the data
      directory DIR, which must not hold a store yet; a server started on DIR serves its state.
  warden-server config-keys
      Prints every zoo.cfg key Warden reads, with its default, ZooKeeper's default and what
      it does, as a Markdown table (server/config/keys.cpp).
  warden-server import-zookeeper --from ZK_DATADIR [--from-log ZK_DATALOGDIR] --data-dir DIR
      Writes the state of Apache ZooKeeper's data directory (its newest snapshot and the logs
      after it, sessions included) into DIR, which must not hold a store yet.
  warden-server export-zookeeper --data-dir DIR --to ZK_DATADIR
      Writes the state under DIR (of a running server too) as a ZooKeeper snapshot, with its
      epoch files, into ZK_DATADIR/version-2, from which Apache ZooKeeper starts.

options:
  --standalone        run without a configuration file (requires --port and --data-dir)
  --port N            client port; 0 picks a free one
  --data-dir DIR      data directory
  --host ADDR         address to listen on (default 127.0.0.1)
  --tick-time MS      tick length in milliseconds (default 2000)
  --log-level L       trace, debug, info (default), warn, error or off
  --log-file FILE     log to FILE (rotated by size; zoo.cfg's warden.log.* set the rest)
  --log-format F      text (default) or json (one JSON object a line)
  --help              print this text
  --version           print the version, the peer protocols it speaks and its data format

Under systemd (Type=notify) it reports ready once its client ports are bound.

Once serving, the server prints one line: "warden-server listening on HOST:PORT", and
with a secureClientPort one more: "warden-server listening for TLS on HOST:PORT".
SIGTERM or SIGINT stops it cleanly.
)";

// One line for a client port that cannot be bound: where the port was set and what to change.
std::string listen_failure(const warden::server::ListenError& e, const warden::server::Config& c) {
  bool secure = e.key == "secureClientPort";
  std::string origin = secure ? c.secure_client_port_origin : c.client_port_origin;
  if (origin.empty()) origin = e.key;
  bool from_option = origin == "--port";
  std::string key = from_option ? "--port " + std::to_string(e.port) : e.key + "=" + std::to_string(e.port);
  std::string line = origin + ": cannot listen on " + e.address + ":" + std::to_string(e.port) + " (" + key +
                     "): " + e.reason + ".";
  std::string change = from_option ? "pass another --port" : "set " + e.key + " in " + origin.substr(0, origin.rfind(':')) +
                                                                 " to a free port";
  if (e.in_use)
    return line + " Another process holds that port (another ZooKeeper or Warden?): stop it, or " + change +
           " (0 picks one).";
  return line + " To listen elsewhere, " + change + " or " + e.key + "Address.";
}

int fail(const std::string& msg) {
  std::fprintf(stderr, "warden-server: %s\n", msg.c_str());
  return 2;
}

bool parse_int(const std::string& s, int32_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}
}  // namespace

namespace {
// Every client holds a descriptor: the soft limit goes up to the hard one, as the JVM raises it
// for ZooKeeper (its MaxFDLimit), so that a fleet's connections are not refused at 1,024.
void raise_descriptor_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  rlim_t was = lim.rlim_cur;
  lim.rlim_cur = lim.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
    spdlog::warn("cannot raise the descriptor limit from {}: {}", static_cast<uint64_t>(was), std::strerror(errno));
}
}  // namespace

namespace {

// The subcommands that are tools, not a server (log-dump, import-zookeeper, ...): their exit
// status, or nothing when args[0] names none.
std::optional<int> run_tool(const std::vector<std::string>& args) {
  if (args[0] == "config-keys") {
    if (args.size() != 1) return fail("config-keys takes no argument");
    std::cout << warden::server::config_keys::reference();
    return 0;
  }
  bool tool = args[0] == "log-dump" || args[0] == "check" || args[0] == "snapshot-dump" || args[0] == "accept-loss";
  if (tool && args.size() == 2) {
    if (args[0] == "log-dump") return warden::server::dump_log(args[1], std::cout, std::cerr);
    if (args[0] == "snapshot-dump") return warden::server::dump_snapshot(args[1], std::cout, std::cerr);
    if (args[0] == "accept-loss") return warden::server::accept_loss(args[1], std::cout, std::cerr);
    return warden::server::check_data_dir(args[1], std::cout, std::cerr);
  }
  if (tool) return fail(args[0] + " takes one data directory");
  if (args[0] == "restore-backup") {
    if (args.size() != 3) return fail("restore-backup takes a backup file and a data directory");
    return warden::server::restore_backup_into(args[1], args[2], std::cout, std::cerr);
  }
  if (args[0] == "import-zookeeper")
    return warden::server::import_zookeeper_command({args.begin() + 1, args.end()}, std::cout, std::cerr);
  if (args[0] == "export-zookeeper")
    return warden::server::export_zookeeper_command({args.begin() + 1, args.end()}, std::cout, std::cerr);
  return std::nullopt;
}

// A server's command line: --standalone and its options, or a zoo.cfg; --log-* over either.
struct CommandLine {
  Config config;
  warden::server::LogSettings log_flags;  // --log-*, which win over zoo.cfg's warden.log.*
  std::vector<std::string> log_set;
  bool standalone = false;
  std::string file;
};

// Reads the options into `cl`; an exit status when the invocation ends here.
std::optional<int> read_options(const std::vector<std::string>& args, CommandLine& cl) {
  Config& config = cl.config;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      return 0;
    } else if (a == "--version") {
      std::fputs(warden::server::version_text().c_str(), stdout);
      return 0;
    } else if (a == "--standalone") {
      cl.standalone = true;
    } else if (a == "--port") {
      auto v = value();
      if (!v || !parse_int(*v, config.client_port) || config.client_port < 0 || config.client_port > 65535)
        return fail("--port needs a port number from 0 to 65535");
    } else if (a == "--data-dir") {
      auto v = value();
      if (!v || v->empty()) return fail("--data-dir needs a directory");
      config.data_dir = *v;
    } else if (a == "--host") {
      auto v = value();
      if (!v || v->empty()) return fail("--host needs an address");
      config.client_port_address = *v;
    } else if (a == "--tick-time") {
      auto v = value();
      if (!v || !parse_int(*v, config.tick_time) || config.tick_time < 1)
        return fail("--tick-time needs a positive number of milliseconds");
    } else if (a == "--log-level" || a == "--log-file" || a == "--log-format") {
      auto v = value();
      if (!v) return fail(a + " needs a value (see --help)");
      bool known = true;
      if (auto why = warden::server::read_log_key(a.substr(6), *v, cl.log_flags, &known))
        return fail(a + " " + *v + ": " + *why);
      cl.log_set.push_back(a.substr(6));
    } else if (!a.empty() && a[0] == '-') {
      return fail("unknown option " + a + " (see --help)");
    } else if (cl.file.empty()) {
      cl.file = a;
    } else {
      return fail("more than one configuration file given");
    }
  }
  return std::nullopt;
}

// The configuration the command line names (its file read, or the standalone options), the
// --log-* options over it; an exit status when it cannot be had.
std::optional<int> settle_config(CommandLine& cl) {
  Config& config = cl.config;
  if (cl.standalone) {
    if (!cl.file.empty()) return fail("--standalone takes no configuration file");
    config.client_port_origin = "--port";
    config.admin.enabled = false;  // no AdminServer on 8080 for a server started this way (tests)
    if (config.client_port_address == "0.0.0.0") config.client_port_address = "127.0.0.1";
    if (auto why = warden::server::validate_config(config, "command line"))
      return fail(*why + " (use --port and --data-dir)");
  } else {
    if (cl.file.empty()) return fail("no configuration file given (see --help)");
    auto loaded = warden::server::load_config(cl.file);
    if (auto* err = std::get_if<std::string>(&loaded)) return fail(*err);
    config = std::get<Config>(loaded);
  }
  for (const auto& name : cl.log_set) {
    if (name == "level") config.log.level = cl.log_flags.level;
    if (name == "file") config.log.file = cl.log_flags.file;
    if (name == "format") config.log.json = cl.log_flags.json;
  }
  try {
    warden::server::apply_logging(config.log);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return std::nullopt;
}

// Logs what starts, binds the client ports and serves until stopped; the exit status.
int serve(CommandLine& cl) {
  Config& config = cl.config;
  // The first lines of a start: what runs, from what, as what (the ports follow once bound).
  spdlog::info("warden-server {} (pid {}) starting from {}: {}", warden::server::warden_version(), getpid(),
               cl.file.empty() ? std::string("the command line") : cl.file,
               !config.ensemble() ? std::string("standalone")
                                  : "server " + std::to_string(*config.my_id) + " of an ensemble of " +
                                        std::to_string(config.servers.size()) + " (" +
                                        (config.self()->observer() ? "observer" : "voter") + ")");
  for (const auto& w : config.warnings) spdlog::warn("{}", w);
  if (config.jaas_file.empty()) {
    // Where ZooKeeper's scripts would pass it to the JVM (standalone: the environment only).
    std::string dir = cl.file.empty() ? std::string() : std::filesystem::path(cl.file).parent_path().string();
    if (!cl.file.empty() && dir.empty()) dir = ".";
    config.jaas_file = warden::server::auth::find_jaas_file(std::getenv("SERVER_JVMFLAGS"), std::getenv("JVMFLAGS"),
                                                            dir, &config.jaas_origin);
  }
  raise_descriptor_limit();
  try {
    warden::server::ServerRuntime runtime(config);
    runtime.bind();
    if (!runtime.address().empty()) std::cout << "warden-server listening on " << runtime.address() << std::endl;
    if (!runtime.secure_address().empty())
      std::cout << "warden-server listening for TLS on " << runtime.secure_address() << std::endl;
    std::string where = runtime.address();
    if (config.client_port_unification) where += " (plaintext and TLS)";
    if (!runtime.secure_address().empty()) where += (where.empty() ? "" : ", ") + runtime.secure_address() + " (TLS)";
    spdlog::info("serving clients on {} (tickTime={} ms, session timeouts {}..{} ms)", where, config.tick_time,
                 config.effective_min_session_timeout(), config.effective_max_session_timeout());
    // systemd's Type=notify: ready (nothing happens without NOTIFY_SOCKET).
    sd_notifyf(0, "READY=1\nSTATUS=serving clients on %s\nMAINPID=%lu", where.c_str(),
               static_cast<unsigned long>(getpid()));
    if (!runtime.run(true)) return 1;
  } catch (const warden::server::ListenError& e) {
    return fail(listen_failure(e, config));
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  warden::server::remember_command_line(argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("warden"));
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(usage, stderr);
    return 2;
  }
  if (auto status = run_tool(args)) return *status;
  CommandLine cl;
  if (auto status = read_options(args, cl)) return *status;
  if (auto status = settle_config(cl)) return *status;
  return serve(cl);
}
