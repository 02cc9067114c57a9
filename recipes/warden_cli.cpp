// warden: a command-line client for Warden and any ZooKeeper (recipes/README in the main
// README, "The warden command line"). `warden [--server HOSTS] COMMAND ...`; HOSTS from
// WARDEN_SERVER, else 127.0.0.1:2181. Bad arguments: usage and exit 2; an unreachable server: a
// message and exit 1, within the connect timeout.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <condition_variable>
#include <mutex>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "recipes/client.hpp"
#include "recipes/mutex.hpp"

using namespace warden::client;
namespace wire = warden::wire;

namespace {

const char* usage_text =
    "usage: warden [--server HOSTS] [--timeout-ms MS] [--session-timeout-ms MS] [--auth SCHEME:AUTH] COMMAND ...\n"
    "  HOSTS: a connect string, host:port[,host:port...][/chroot]; default $WARDEN_SERVER, else 127.0.0.1:2181\n"
    "  --fixed-servers: only HOSTS, even after a reconfig names others (the ensemble's list is followed)\n"
    "TLS (to a secureClientPort): [--tls] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] [--tls-no-hostname-check]\n"
    "  PEM files; each defaults to $WARDEN_TLS_CA, $WARDEN_TLS_CERT, $WARDEN_TLS_KEY (a key's password:\n"
    "  $WARDEN_TLS_KEY_PASSWORD); any of them turns TLS on. Without a CA file, the system's CAs.\n"
    "SASL: [--sasl DIGEST-MD5|GSSAPI] [--sasl-user NAME] [--sasl-host HOST]; default $WARDEN_SASL_MECHANISM,\n"
    "  $WARDEN_SASL_USER; the DIGEST-MD5 password from $WARDEN_SASL_PASSWORD; GSSAPI takes the Kerberos\n"
    "  ticket cache (kinit, KRB5CCNAME) for zookeeper/HOST (default: the server's host as given).\n"
    "commands:\n"
    "  create [-s] [-e] [-c] [-t TTL_MS] PATH [DATA]\n"
    "  get [-s] [-w] PATH          set [-v VERSION] PATH DATA      delete [-v VERSION] PATH\n"
    "  deleteall PATH              ls [-R] [-s] PATH                stat PATH\n"
    "  getAcl PATH                 setAcl PATH ACL (scheme:id:perms[,...])\n"
    "  addauth SCHEME AUTH         (checks the credentials; --auth SCHEME:AUTH applies them to a command)\n"
    "  sync PATH                   watch PATH (prints one event)\n"
    "  config                      the ensemble's configuration (/zookeeper/config)\n"
    "  reconfig [-v VERSION] (-add SERVERS | -remove IDS | -members SERVERS)\n"
    "      change the members as zkCli's reconfig: SERVERS server.N=host:port:port[:role];[host:]port[,...],\n"
    "      IDS N[,...], VERSION the configuration's (hex); needs reconfigEnabled and the super user\n"
    "      (--auth digest:super:PASSWORD) or write permission on /zookeeper/config\n"
    "  lock PATH [--timeout SECONDS] [--grace SECONDS] -- CMD [ARGS...]\n"
    "      runs CMD holding the Curator-compatible mutex at PATH, with WARDEN_FENCING_TOKEN set;\n"
    "      exits with CMD's status, 75 if not acquired within --timeout; SIGINT or SIGTERM while\n"
    "      waiting withdraws from the queue and exits 130 or 143 without running CMD\n"
    "  elect PATH [--grace SECONDS] -- CMD [ARGS...]   runs CMD only while this process leads\n"
    "      (Curator's LeaderLatch)\n"
    "  register PATH NAME [--data TEXT] [--grace SECONDS] -- CMD [ARGS...]\n"
    "      keeps PATH/NAME (ephemeral) while CMD runs\n"
    "  CMD runs in a process group of its own; SIGINT and SIGTERM are passed on to that group. If\n"
    "  the session is lost, the group gets SIGTERM, then SIGKILL after --grace seconds (default 5),\n"
    "  and warden exits 70 once the whole group is gone.\n"
    "  members PATH [--watch]          PATH's children, sorted; --watch: then +NAME and -NAME as they change\n";

int usage(const std::string& why = {}) {
  if (!why.empty()) std::fprintf(stderr, "warden: %s\n", why.c_str());
  std::fputs(usage_text, stderr);
  return 2;
}

std::string time_text(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  char buf[64];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%a %b %d %H:%M:%S UTC %Y", &tm);
  return buf;
}

void print_stat(const Stat& s) {
  std::printf("cZxid = 0x%llx\nctime = %s\nmZxid = 0x%llx\nmtime = %s\npZxid = 0x%llx\ncversion = %d\n"
              "dataVersion = %d\naclVersion = %d\nephemeralOwner = 0x%llx\ndataLength = %d\nnumChildren = %d\n",
              static_cast<unsigned long long>(s.czxid), time_text(s.ctime).c_str(),
              static_cast<unsigned long long>(s.mzxid), time_text(s.mtime).c_str(),
              static_cast<unsigned long long>(s.pzxid), s.cversion, s.version, s.aversion,
              static_cast<unsigned long long>(s.ephemeralOwner), s.dataLength, s.numChildren);
}

// ZooKeeper's names of watch event types, as zkCli prints them.
const char* event_name(EventType t) {
  switch (t) {
    case EventType::none: return "None";
    case EventType::nodeCreated: return "NodeCreated";
    case EventType::nodeDeleted: return "NodeDeleted";
    case EventType::nodeDataChanged: return "NodeDataChanged";
    case EventType::nodeChildrenChanged: return "NodeChildrenChanged";
    case EventType::dataWatchRemoved: return "DataWatchRemoved";
    case EventType::childWatchRemoved: return "ChildWatchRemoved";
    case EventType::persistentWatchRemoved: return "PersistentWatchRemoved";
  }
  return "Unknown";
}

void print_event(const WatchEvent& ev) {
  std::printf("WatchedEvent state:SyncConnected type:%s path:%s\n", event_name(ev.type), ev.path.c_str());
}

// A failed command's message as zkCli words it (its own words for the common errors, else
// ZooKeeper's KeeperException message).
std::string failure_text(const Error& e, const std::string& path) {
  switch (e.code()) {
    case Err::nodeExists: return "Node already exists: " + path;
    case Err::noNode: return "Node does not exist: " + path;
    case Err::noAuth: return "Insufficient permission : " + path;
    case Err::badVersion: return "version No is not valid : " + path;
    case Err::notEmpty: return "Node not empty: " + path;
    case Err::noChildrenForEphemerals: return "Ephemerals cannot have children: " + path;
    case Err::invalidACL: return "Acl is not valid : " + path;
    default: return "KeeperErrorCode = " + std::string(wire::err_name(e.code())) + " for " + path;
  }
}

std::string perms_text(int32_t p) {
  std::string s;
  if (p & wire::perms::create) s += 'c';
  if (p & wire::perms::remove) s += 'd';
  if (p & wire::perms::read) s += 'r';
  if (p & wire::perms::write) s += 'w';
  if (p & wire::perms::admin) s += 'a';
  return s;
}

// "scheme:id:perms[,scheme:id:perms]" as zkCli's setAcl takes it.
AclList parse_acl(const std::string& text) {
  AclList out;
  size_t from = 0;
  while (from <= text.size()) {
    size_t comma = std::min(text.find(',', from), text.size());
    std::string one = text.substr(from, comma - from);
    from = comma + 1;
    auto first = one.find(':'), last = one.rfind(':');
    if (first == std::string::npos || last == first) throw std::invalid_argument("'" + one + "' is not scheme:id:perms");
    int32_t p = 0;
    for (char ch : one.substr(last + 1)) {
      switch (ch) {
        case 'c': p |= wire::perms::create; break;
        case 'd': p |= wire::perms::remove; break;
        case 'r': p |= wire::perms::read; break;
        case 'w': p |= wire::perms::write; break;
        case 'a': p |= wire::perms::admin; break;
        default: throw std::invalid_argument("'" + one + "': perms are letters of cdrwa");
      }
    }
    out.push_back(wire::Acl{p, wire::Id{one.substr(0, first), one.substr(first + 1, last - first - 1)}});
  }
  return out;
}

void list(Client& c, const std::string& path, bool recursive, bool with_stat) {
  auto [kids, stat] = c.children2(path);
  std::sort(kids.begin(), kids.end());
  if (!recursive) {
    std::printf("[");
    for (size_t i = 0; i < kids.size(); ++i) std::printf("%s%s", i ? ", " : "", kids[i].c_str());
    std::printf("]\n");
    if (with_stat) print_stat(stat);
    return;
  }
  // Breadth first, as zkCli's ls -R (children sorted at each level).
  std::vector<std::string> level{path};
  while (!level.empty()) {
    std::vector<std::string> next;
    for (const auto& p : level) {
      std::printf("%s\n", p.c_str());
      auto below = p == path ? kids : c.children(p);
      std::sort(below.begin(), below.end());
      for (const auto& k : below) next.push_back(p == "/" ? "/" + k : p + "/" + k);
    }
    level = std::move(next);
  }
}

void delete_all(Client& c, const std::string& path) {
  for (const auto& k : c.children(path)) delete_all(c, path == "/" ? "/" + k : path + "/" + k);
  if (path != "/") {
    try {
      c.remove(path);
    } catch (const Error& e) {
      if (e.code() != Err::noNode) throw;
    }
  }
}

// ---- warden lock ----
std::atomic<bool> lost{false};

// How long CMD's process group has after SIGTERM on a lost session before SIGKILL.
double grace_s = 5;

// SIGTERM or SIGINT if one is pending (they are blocked in every thread: see main), else 0;
// waits at most `ms` for one.
int pending_stop_signal(long ms) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  timespec wait{ms / 1000, (ms % 1000) * 1000 * 1000};
  int sig = sigtimedwait(&stop, nullptr, &wait);
  return sig == SIGTERM || sig == SIGINT ? sig : 0;
}

// Runs `cmd` in a process group of its own and waits for it, passing SIGTERM and SIGINT on to
// the group; a lost session stops the whole group (SIGTERM, SIGKILL after grace_s) and makes the
// result 70. `what` names the hold in messages.
int run_child(const std::vector<std::string>& cmd, const std::string& token, const std::string& what);

int run_locked(Client& client, const std::string& path, double timeout_s, const std::vector<std::string>& cmd,
               const std::string& lock_name = "lock-") {
  Mutex m(client, path, lock_name);
  m.on_lost([] { lost = true; });
  // The wait for the lock runs on a thread of its own, so that SIGINT and SIGTERM (blocked, and
  // taken here with sigtimedwait) can withdraw it: a process told to stop never runs CMD.
  std::mutex mu;
  bool done = false;
  std::optional<int64_t> token;
  std::exception_ptr failed;
  std::thread waiter([&] {
    std::optional<int64_t> t;
    std::exception_ptr e;
    try {
      // Without --timeout: no deadline in practice (ten years), but one that cancel() can end.
      auto limit = timeout_s >= 0 ? std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000))
                                  : std::chrono::milliseconds(std::chrono::hours(24 * 3650));
      t = m.try_acquire(limit);
    } catch (...) {
      e = std::current_exception();
    }
    std::lock_guard<std::mutex> l(mu);
    token = t;
    failed = e;
    done = true;
  });
  int sig = 0;
  for (;;) {
    {
      std::lock_guard<std::mutex> l(mu);
      if (done) break;
    }
    if ((sig = pending_stop_signal(50)) != 0) {
      m.cancel();
      break;
    }
  }
  waiter.join();
  if (failed) std::rethrow_exception(failed);
  // A signal that came while the lock was granted still means: do not run CMD.
  if (sig == 0 && token) sig = pending_stop_signal(0);
  if (sig != 0) {
    std::fprintf(stderr, "warden: %s while waiting for %s: withdrawn, CMD not run\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", path.c_str());
    if (token && !lost) {
      try {
        m.release();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "warden: releasing %s: %s\n", path.c_str(), e.what());
      }
    }
    return 128 + sig;
  }
  if (!token) {
    std::fprintf(stderr, "warden: lock %s not acquired within %g s\n", path.c_str(), timeout_s);
    return 75;
  }
  int rc = run_child(cmd, std::to_string(*token), path);
  if (!lost) {
    try {
      m.release();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "warden: releasing %s: %s\n", path.c_str(), e.what());
    }
  }
  return rc;
}

int run_child(const std::vector<std::string>& cmd, const std::string& token, const std::string& what) {
  pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "warden: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (child == 0) {
    setpgid(0, 0);  // a group of its own: what CMD starts is stopped with it
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (!token.empty()) setenv("WARDEN_FENCING_TOKEN", token.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "warden: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(child, child);  // also here, so no signal below can come before the child's own call
  const pid_t group = child;
  auto group_alive = [group] { return kill(-group, 0) == 0 || errno != ESRCH; };
  // SIGTERM and SIGINT go on to CMD's group. A lost session stops the group: SIGTERM, then
  // SIGKILL after the grace period; nothing CMD started may go on believing it holds the lock.
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGTERM);
  sigaddset(&waited, SIGINT);
  sigaddset(&waited, SIGCHLD);
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  bool killed = false, reaped = false;
  int status = 0;
  for (;;) {
    timespec tick{0, 50 * 1000 * 1000};
    int sig = sigtimedwait(&waited, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) kill(-group, sig);
    if (lost && !kill_at) {
      std::fprintf(stderr, "warden: the session holding %s was lost; stopping the command (SIGTERM, SIGKILL after %g s)\n",
                   what.c_str(), grace_s);
      kill(-group, SIGTERM);
      kill_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000));
    }
    if (kill_at && !killed && std::chrono::steady_clock::now() >= *kill_at && group_alive()) {
      std::fprintf(stderr, "warden: the command's processes outlived the grace period: SIGKILL\n");
      kill(-group, SIGKILL);
      killed = true;
    }
    if (!reaped && waitpid(child, &status, WNOHANG) == child) reaped = true;
    // On a loss, warden returns only once every process of the group is gone (SIGKILL cannot
    // be refused; the bound on it is the kernel's).
    if (reaped && (!lost || !group_alive())) break;
  }
  if (lost) return 70;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// What one invocation asks for, read from its arguments.
struct Invocation {
  Options opts;
  std::string cmd;
  std::vector<std::string> flags, rest;
  std::map<std::string, std::string> values;
  std::vector<std::string> command;  // after "--"
  AclList acl;                       // setAcl's

  bool has(const char* f) const { return std::find(flags.begin(), flags.end(), f) != flags.end(); }
  bool given(const char* k) const { return values.count(k) != 0; }
  std::string value(const char* k) const {
    auto it = values.find(k);
    return it == values.end() ? std::string() : it->second;
  }
  std::optional<std::string> optional_value(const char* k) const {
    return given(k) ? std::optional<std::string>(value(k)) : std::nullopt;
  }
  // A decimal option's value into `out`; false when it is given and is not a number.
  bool number(const char* k, int64_t& out) const {
    if (!given(k)) return true;
    std::string v = value(k);
    char* end = nullptr;
    out = std::strtoll(v.c_str(), &end, 10);
    return *end == '\0' && !v.empty();
  }
  bool runs_command() const { return cmd == "lock" || cmd == "elect" || cmd == "register"; }
};

// The defaults, then what the environment sets (WARDEN_SERVER, WARDEN_TLS_*, WARDEN_SASL_*).
Options options_from_environment() {
  Options opts;
  const char* env = std::getenv("WARDEN_SERVER");
  opts.connect_string = env && *env ? env : "127.0.0.1:2181";
  opts.connect_timeout_ms = 10000;
  auto from_env = [](const char* name, std::string& out) {
    const char* v = std::getenv(name);
    if (v && *v) out = v;
    return v && *v;
  };
  opts.tls.enabled |= from_env("WARDEN_TLS_CA", opts.tls.ca_file);
  opts.tls.enabled |= from_env("WARDEN_TLS_CERT", opts.tls.cert_file);
  opts.tls.enabled |= from_env("WARDEN_TLS_KEY", opts.tls.key_file);
  from_env("WARDEN_TLS_KEY_PASSWORD", opts.tls.key_password);
  from_env("WARDEN_SASL_MECHANISM", opts.sasl.mechanism);
  from_env("WARDEN_SASL_USER", opts.sasl.username);
  from_env("WARDEN_SASL_PASSWORD", opts.sasl.password);
  return opts;
}

// The options before the command, from args[i] on; `i` is left at the command. An exit status
// when the invocation ends here (--help, a bad option, no command).
std::optional<int> read_options(const std::vector<std::string>& args, size_t& i, Options& opts) {
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(usage_text, stdout);
      return 0;
    } else if (a == "--server") {
      if (++i >= args.size()) return usage("--server needs a connect string");
      opts.connect_string = args[i];
    } else if (a == "--timeout-ms" || a == "--session-timeout-ms") {
      char* end = nullptr;
      long v = ++i < args.size() ? std::strtol(args[i].c_str(), &end, 10) : 0;
      if (!end || *end || v < 100 || v > 600000) return usage(a + " needs a number of milliseconds from 100 to 600000");
      (a == "--timeout-ms" ? opts.connect_timeout_ms : opts.session_timeout_ms) = static_cast<int32_t>(v);
    } else if (a == "--sasl" || a == "--sasl-user" || a == "--sasl-host") {
      if (++i >= args.size() || args[i].empty()) return usage(a + " needs a value");
      (a == "--sasl" ? opts.sasl.mechanism : a == "--sasl-user" ? opts.sasl.username : opts.sasl.host) = args[i];
    } else if (a == "--fixed-servers") {
      opts.follow_config = false;
    } else if (a == "--tls") {
      opts.tls.enabled = true;
    } else if (a == "--tls-no-hostname-check") {
      opts.tls.verify_hostname = false;
    } else if (a == "--tls-ca" || a == "--tls-cert" || a == "--tls-key") {
      if (++i >= args.size() || args[i].empty()) return usage(a + " needs a PEM file");
      (a == "--tls-ca" ? opts.tls.ca_file : a == "--tls-cert" ? opts.tls.cert_file : opts.tls.key_file) = args[i];
      opts.tls.enabled = true;
    } else if (a == "--auth") {
      if (++i >= args.size() || args[i].find(':') == std::string::npos) return usage("--auth needs SCHEME:AUTH");
      auto colon = args[i].find(':');
      opts.auth.emplace_back(args[i].substr(0, colon), args[i].substr(colon + 1));
    } else {
      break;
    }
  }
  if (i >= args.size()) return usage("no command");
  if (!opts.sasl.mechanism.empty() && opts.sasl.mechanism != "DIGEST-MD5" && opts.sasl.mechanism != "GSSAPI")
    return usage("--sasl takes DIGEST-MD5 or GSSAPI, not '" + opts.sasl.mechanism + "'");
  if (opts.sasl.mechanism == "DIGEST-MD5" && opts.sasl.username.empty())
    return usage("SASL DIGEST-MD5 needs --sasl-user (or WARDEN_SASL_USER) and WARDEN_SASL_PASSWORD");
  return std::nullopt;
}

// The command's own words from args[i] on: flags, valued options, arguments and, after "--",
// the command to run.
void read_command_words(const std::vector<std::string>& args, size_t i, Invocation& inv) {
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      inv.command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if ((a == "-t" || a == "-v" || a == "--timeout" || a == "--data" || a == "--grace" || a == "-add" ||
         a == "-remove" || a == "-members") &&
        i + 1 < args.size()) {
      inv.values[a] = args[++i];
    } else if (a == "--watch") {
      inv.flags.push_back(a);
    } else if (a.size() == 2 && a[0] == '-' && std::isalpha(static_cast<unsigned char>(a[1]))) {
      inv.flags.push_back(a);
    } else {
      inv.rest.push_back(a);
    }
  }
}

// What can be told wrong before connecting: the command, its arguments and options. An exit
// status (usage's) when something is; sets grace_s and inv.acl.
std::optional<int> check_command(Invocation& inv) {
  static const std::map<std::string, std::pair<size_t, size_t>> arity{
      {"create", {1, 2}}, {"get", {1, 1}},    {"set", {2, 2}},    {"delete", {1, 1}}, {"deleteall", {1, 1}},
      {"ls", {1, 1}},     {"stat", {1, 1}},   {"getAcl", {1, 1}}, {"setAcl", {2, 2}}, {"addauth", {2, 2}},
      {"sync", {1, 1}},   {"watch", {1, 1}},  {"lock", {1, 1}},   {"elect", {1, 1}},  {"register", {2, 2}},
      {"members", {1, 1}}, {"config", {0, 0}},   {"reconfig", {0, 0}}};
  const std::string& cmd = inv.cmd;
  auto& rest = inv.rest;
  auto ar = arity.find(cmd);
  if (ar == arity.end()) return usage("unknown command '" + cmd + "'");
  if (rest.size() < ar->second.first || rest.size() > ar->second.second)
    return usage(cmd + " takes " + std::to_string(ar->second.first) +
                 (ar->second.second != ar->second.first ? " or " + std::to_string(ar->second.second) : "") +
                 " argument(s)");
  if (!rest.empty() && cmd != "addauth" && (rest[0].empty() || rest[0][0] != '/'))
    return usage("'" + rest[0] + "' is not a path (it starts with /)");
  if (rest.empty()) rest.push_back("/zookeeper/config");  // config and reconfig: what errors name
  bool changes = inv.given("-add") || inv.given("-remove");
  if (cmd == "reconfig" && !changes && !inv.given("-members")) return usage("reconfig needs -add, -remove or -members");
  if (cmd == "reconfig" && inv.given("-members") && changes)
    return usage("reconfig takes -members alone, or -add and -remove");
  if (inv.runs_command() && inv.command.empty()) return usage(cmd + " needs -- CMD [ARGS...]");
  if (!inv.runs_command() && !inv.command.empty()) return usage(cmd + " takes no command after --");
  if (cmd == "register" && rest[1].find('/') != std::string::npos) return usage("a member NAME has no '/'");
  if (inv.given("--grace")) {
    if (!inv.runs_command()) return usage(cmd + " takes no --grace");
    std::string g = inv.value("--grace");
    char* end = nullptr;
    grace_s = std::strtod(g.c_str(), &end);
    if (*end || g.empty() || !(grace_s >= 0 && grace_s <= 3600)) return usage("--grace needs a number of seconds from 0 to 3600");
  }
  if (cmd == "setAcl") {
    try {
      inv.acl = parse_acl(rest[1]);
    } catch (const std::invalid_argument& e) {
      return usage(std::string("setAcl: ") + e.what());
    }
  }
  return std::nullopt;
}

// A command run under the session waits for its signals: they are blocked in every thread,
// so this runs before the client starts its own.
void block_stop_signals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGCHLD);
  sigprocmask(SIG_BLOCK, &s, nullptr);
}

// Waits for one event of a watch `arm` sets with the watcher it is given, and returns it.
WatchEvent first_event(const std::function<void(Watcher)>& arm) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<WatchEvent> fired;
  arm([&](const WatchEvent& ev) {
    std::lock_guard<std::mutex> l(mu);
    if (!fired) fired = ev;
    cv.notify_all();
  });
  std::fflush(stdout);
  std::unique_lock<std::mutex> l(mu);
  cv.wait(l, [&] { return fired.has_value(); });
  return *fired;
}

void create_command(Client& c, const Invocation& inv, int64_t ttl) {
  CreateMode mode = CreateMode::persistent;
  bool s = inv.has("-s"), e = inv.has("-e");
  if (inv.has("-c")) mode = CreateMode::container;
  else if (inv.given("-t")) mode = s ? CreateMode::persistentSequentialWithTtl : CreateMode::persistentWithTtl;
  else if (s && e) mode = CreateMode::ephemeralSequential;
  else if (s) mode = CreateMode::persistentSequential;
  else if (e) mode = CreateMode::ephemeral;
  const auto& rest = inv.rest;
  std::string made = c.create(rest[0], rest.size() > 1 ? rest[1] : std::string(), mode, open_acl(), ttl);
  std::printf("Created %s\n", made.c_str());
  if (e)  // an ephemeral lives as long as its session: this one ends now
    std::fprintf(stderr, "warden: note: the ephemeral %s goes with this command's session\n", made.c_str());
}

void get_command(Client& c, const Invocation& inv) {
  const std::string& path = inv.rest[0];
  if (!inv.has("-w")) {
    auto [data, stat] = c.get(path);
    std::printf("%s\n", data.c_str());
    if (inv.has("-s")) print_stat(stat);
    return;
  }
  WatchEvent ev = first_event([&](Watcher w) {
    auto [data, stat] = c.get(path, std::move(w));
    std::printf("%s\n", data.c_str());
    if (inv.has("-s")) print_stat(stat);
  });
  std::printf("WATCHER::\n\n");
  print_event(ev);
}

void on_lost_session(Client& c) {
  c.on_state([](State s) {
    if (s == State::lost || s == State::expired) lost = true;
  });
}

int members_command(Client& c, const Invocation& inv) {
  const std::string& path = inv.rest[0];
  if (!inv.has("--watch")) {
    auto kids = c.children(path);
    std::sort(kids.begin(), kids.end());
    for (const auto& k : kids) std::printf("%s\n", k.c_str());
    return 0;
  }
  on_lost_session(c);
  std::mutex mu;
  MemberWatcher w(c, path, [&](const std::vector<std::string>& joined, const std::vector<std::string>& left) {
    std::lock_guard<std::mutex> l(mu);
    for (const auto& j : joined) std::printf("+%s\n", j.c_str());
    for (const auto& g : left) std::printf("-%s\n", g.c_str());
    std::fflush(stdout);
  });
  while (!lost) std::this_thread::sleep_for(std::chrono::milliseconds(200));  // until killed
  std::fprintf(stderr, "warden: the session watching %s was lost\n", path.c_str());
  return 70;
}

// Runs the command on a started client; its exit status. Errors of ZooKeeper's are thrown.
int run_command(Client& c, const Invocation& inv) {
  const std::string& cmd = inv.cmd;
  const std::string& path = inv.rest[0];
  int64_t version = -1, ttl = 0;
  if (cmd == "reconfig" && inv.given("-v")) {
    // A configuration's version, in hex as zkCli takes it and /zookeeper/config shows it.
    std::string v = inv.value("-v");
    char* end = nullptr;
    version = static_cast<int64_t>(std::strtoull(v.c_str(), &end, 16));
    if (*end || v.empty()) return usage("-v needs a configuration version (hex)");
  } else if (!inv.number("-v", version)) {
    return usage("-v needs a version number");
  }
  if (!inv.number("-t", ttl)) return usage("-t needs a TTL in milliseconds");
  if (cmd == "create") {
    create_command(c, inv, ttl);
  } else if (cmd == "get") {
    get_command(c, inv);
  } else if (cmd == "set") {
    c.set(path, inv.rest[1], static_cast<int32_t>(version));
  } else if (cmd == "delete") {
    c.remove(path, static_cast<int32_t>(version));
  } else if (cmd == "deleteall") {
    try {
      delete_all(c, path);
    } catch (const Error& e) {
      if (e.code() == Err::connectionLoss || e.code() == Err::sessionExpired) throw;
      std::fprintf(stderr, "Failed to delete some node(s) in the subtree!\n");
      return 1;
    }
  } else if (cmd == "ls") {
    list(c, path, inv.has("-R"), inv.has("-s"));
  } else if (cmd == "stat") {
    auto st = c.exists(path);
    if (!st) throw Error(Err::noNode, "stat " + path);
    print_stat(*st);
  } else if (cmd == "getAcl") {
    auto [acl, stat] = c.get_acl(path);
    for (const auto& a : acl) std::printf("'%s,'%s\n: %s\n", a.id.scheme.c_str(), a.id.id.c_str(), perms_text(a.perms).c_str());
  } else if (cmd == "setAcl") {
    c.set_acl(path, inv.acl, static_cast<int32_t>(version));
  } else if (cmd == "addauth") {
    c.add_auth(inv.rest[0], inv.rest[1]);
  } else if (cmd == "sync") {
    c.sync(path);
    std::printf("Sync is OK\n");
  } else if (cmd == "watch") {
    print_event(first_event([&](Watcher w) { c.add_watch(path, false, std::move(w)); }));
  } else if (cmd == "lock") {
    double timeout = -1;
    if (inv.given("--timeout")) {
      std::string t = inv.value("--timeout");
      char* end = nullptr;
      timeout = std::strtod(t.c_str(), &end);
      if (*end || timeout < 0) return usage("--timeout needs a number of seconds");
    }
    return run_locked(c, path, timeout, inv.command);
  } else if (cmd == "elect") {
    return run_locked(c, path, -1, inv.command, "latch-");
  } else if (cmd == "register") {
    on_lost_session(c);
    Registration reg(c, path, inv.rest[1], inv.value("--data"));
    return run_child(inv.command, std::string(), reg.node());
  } else if (cmd == "config") {
    std::printf("%s\n", c.config().first.c_str());
  } else if (cmd == "reconfig") {
    auto [text, stat] =
        c.reconfig(inv.optional_value("-add"), inv.optional_value("-remove"), inv.optional_value("-members"), version);
    std::printf("Committed new configuration:\n%s\n", text.c_str());
  } else if (cmd == "members") {
    return members_command(c, inv);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  Invocation inv;
  inv.opts = options_from_environment();
  size_t i = 0;
  if (auto status = read_options(args, i, inv.opts)) return *status;
  inv.cmd = args[i++];
  read_command_words(args, i, inv);
  if (auto status = check_command(inv)) return *status;
  if (inv.runs_command()) block_stop_signals();

  try {
    try {
      ConnectString::parse(inv.opts.connect_string);
    } catch (const std::invalid_argument& e) {
      return usage(std::string("--server: ") + e.what());
    }
    std::unique_ptr<Client> made;
    try {
      made = std::make_unique<Client>(inv.opts);
    } catch (const std::invalid_argument& e) {  // a TLS file that cannot be used
      std::fprintf(stderr, "warden: TLS: %s\n", e.what());
      return 2;
    }
    try {
      made->start();
    } catch (const Error& e) {
      std::fprintf(stderr, "warden: cannot reach %s: %s\n", inv.opts.connect_string.c_str(), e.what());
      return 1;
    }
    return run_command(*made, inv);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", failure_text(e, inv.rest[0]).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warden: %s\n", e.what());
    return 1;
  }
}
