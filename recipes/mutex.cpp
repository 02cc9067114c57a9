#include "recipes/mutex.hpp"

#include "recipes/waiting.hpp"

#include <algorithm>
#include <iterator>
#include <random>

namespace warden::client {

std::string new_uuid() {
  std::random_device rd;
  std::mt19937_64 g((static_cast<uint64_t>(rd()) << 32) ^ rd());
  uint64_t a = g(), b = g();
  a = (a & ~0xf000ULL) | 0x4000ULL;                    // version 4
  b = (b & ~(3ULL << 62)) | (2ULL << 62);              // variant 10
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48), static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

int64_t lock_sequence(const std::string& name, const std::string& lock_name) {
  auto at = name.rfind(lock_name);
  if (at == std::string::npos) return -1;
  std::string digits = name.substr(at + lock_name.size());
  if (digits.empty() || digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return -1;
  return std::stoll(digits);
}

QueueRule QueueRule::exclusive(std::vector<std::string> names) {
  QueueRule r;
  r.names = std::move(names);
  r.turn = [](const std::vector<std::string>& queue, size_t ours) {
    return ours == 0 ? Turn{true, {}, false} : Turn{false, queue[ours - 1], ours == 1};
  };
  return r;
}

namespace {
const std::string read_name = "__READ__";
const std::string write_name = "__WRIT__";

QueueRule reader_rule(const Mutex& writer) {
  QueueRule r;
  r.names = {read_name, write_name};
  r.turn = [&writer](const std::vector<std::string>& queue, size_t ours) {
    if (writer.held()) return QueueRule::Turn{true, {}, false};  // the writer reads too (a downgrade)
    for (size_t i = 0; i < ours; ++i)
      if (queue[i].find(write_name) != std::string::npos) return QueueRule::Turn{false, queue[i], false};
    return QueueRule::Turn{true, {}, false};
  };
  return r;
}
}  // namespace

ReadWriteLock::ReadWriteLock(Client& client, const std::string& path)
    : write_(client, path, write_name, QueueRule::exclusive({read_name, write_name})),
      read_(client, path, read_name, reader_rule(write_)) {}

Mutex::Mutex(Client& client, std::string path, std::string lock_name)
    : Mutex(client, path, lock_name, QueueRule::exclusive({lock_name})) {}

// Wakeups' fields and these, all under its `mu`.
struct Mutex::Shared : Wakeups {
  int holds = 0;           // acquisitions not yet released; > 0 while this contender holds
  bool cancelled = false;  // sticky: set by cancel(), never cleared
  std::function<void()> on_lost;
};

Mutex::Mutex(Client& client, std::string path, std::string lock_name, QueueRule rule)
    : client_(client),
      path_(std::move(path)),
      lock_name_(std::move(lock_name)),
      rule_(std::move(rule)),
      sh_(std::make_shared<Shared>()) {
  listener_ = client_.on_state([sh = sh_](State s) {
    if (!session_gone(s)) return;
    std::function<void()> f;
    {
      std::lock_guard<std::mutex> l(sh->mu);
      if (sh->holds > 0) f = sh->on_lost;
    }
    sh->mark_lost();
    if (f) f();
  });
}

Mutex::~Mutex() {
  client_.remove_state_listener(listener_);
  try {
    bool release_it = false;
    {
      std::lock_guard<std::mutex> l(sh_->mu);
      if (sh_->holds > 0 && !sh_->lost) {
        sh_->holds = 1;
        release_it = true;
      }
    }
    if (release_it) release();
  } catch (...) {
  }
}

bool Mutex::held() const {
  std::lock_guard<std::mutex> l(sh_->mu);
  return sh_->holds > 0 && !sh_->lost;
}
int64_t Mutex::fencing_token() const {
  std::lock_guard<std::mutex> l(sh_->mu);
  return token_;
}
int64_t Mutex::wakeups() const {
  std::lock_guard<std::mutex> l(sh_->mu);
  return sh_->events;
}
void Mutex::on_lost(std::function<void()> f) {
  std::lock_guard<std::mutex> l(sh_->mu);
  sh_->on_lost = std::move(f);
}

int64_t Mutex::acquire() {
  auto token = lock(std::nullopt);
  if (!token) throw std::runtime_error("lock " + path_ + ": the acquisition was cancelled");
  return *token;
}

void Mutex::cancel() {
  {
    std::lock_guard<std::mutex> l(sh_->mu);
    sh_->cancelled = true;
    ++sh_->changes;
  }
  sh_->cv.notify_all();
}

std::optional<int64_t> Mutex::try_acquire(std::chrono::milliseconds timeout) {
  return lock(std::chrono::steady_clock::now() + timeout);
}

std::pair<std::string, Stat> protected_create(Client& client, const std::string& parent, const std::string& uuid,
                                             const std::string& name, ParentKind parents, const std::string& data) {
  std::string prefix = "_c_" + uuid + "-";
  auto find_ours = [&]() -> std::optional<std::string> {
    for (const auto& c : client.children(parent))
      if (c.rfind(prefix, 0) == 0) return parent + "/" + c;
    return std::nullopt;
  };
  for (int attempt = 0;; ++attempt) {
    try {
      try {
        return client.create2(parent + "/" + prefix + name, data, CreateMode::ephemeralSequential);
      } catch (const Error& e) {
        if (e.code() != Err::noNode) throw;
        // The parent does not exist yet: made as Curator makes it.
        if (parents == ParentKind::containers) {
          auto slash = parent.rfind('/');
          if (slash > 0) client.ensure_path(parent.substr(0, slash), true);
          try {
            client.create(parent, {}, CreateMode::container);
          } catch (const Error& e2) {
            if (e2.code() != Err::nodeExists) throw;
          }
        } else {
          client.ensure_path(parent);
        }
      }
    } catch (const Error& e) {
      // The reply was lost: the node may exist. Look for it by our uuid before creating again.
      if (e.code() != Err::connectionLoss || attempt >= 20) throw;
      for (;;) {
        try {
          if (auto ours = find_ours()) {
            auto st = client.exists(*ours);
            if (!st) break;  // gone again (the session expired?): create anew
            return {*ours, *st};
          }
          break;
        } catch (const Error& e2) {
          if (e2.code() == Err::noNode) break;  // the parent itself went (an empty container)
          if (e2.code() != Err::connectionLoss) throw;
        }
      }
    }
  }
}

std::string Mutex::create_node() {
  uuid_ = new_uuid();  // this acquisition's own: a node an earlier one left is never taken for ours
  auto [name, stat] = protected_create(client_, path_, uuid_, lock_name_, ParentKind::containers);
  std::lock_guard<std::mutex> l(sh_->mu);
  token_ = stat.czxid;
  return name;
}

std::optional<int64_t> Mutex::lock(std::optional<std::chrono::steady_clock::time_point> deadline) {
  std::string stale;
  {
    std::lock_guard<std::mutex> l(sh_->mu);
    if (sh_->holds > 0 && !sh_->lost) {
      ++sh_->holds;
      return token_;
    }
    if (sh_->cancelled) return std::nullopt;
    sh_->holds = 0;
    sh_->lost = false;
    sh_->deleted.clear();
    stale = std::move(node_);  // held when the session was lost: the session may live on
    node_.clear();
  }
  // With a deadline every request gives up at it (a connection that is away would otherwise
  // hold a call until it is back or the session is lost); what it leaves in the queue is then
  // removed in the background, in order after it on the session.
  CallDeadline bound(deadline);
  std::string ours;
  try {
    // A node of an earlier hold that the session lost and got back: out of the queue first, or
    // this contender would wait behind itself.
    if (!stale.empty()) remove_for_sure(client_, stale);
    stale.clear();
    ours = create_node();
    try {
      return wait_turn(ours, deadline);
    } catch (const Error& e) {
      if (e.code() == Err::requestTimeout && deadline) throw;
      // Out of the queue before the error goes up, as Curator's deleteOurPath: no orphan node.
      try {
        remove_for_sure(client_, ours);
      } catch (const Error&) {
      }
      throw;
    }
  } catch (const Error& e) {
    if (e.code() != Err::requestTimeout || !deadline) throw;
    // The deadline passed inside a request: not acquired. Our node, if the create went
    // through, must not stand in the queue for nobody.
    if (!stale.empty()) remove_later(client_, stale);
    if (!ours.empty())
      withdraw(ours);
    else
      remove_child_later(client_, path_, "_c_" + uuid_ + "-");
    return std::nullopt;
  }
}

void Mutex::withdraw(const std::string& ours) {
  // Within withdraw_grace when the connection is there (the node is gone as the call returns);
  // else in the background: the delete waits for the connection, and is sent again after a
  // loss, so that the call still ends about at its deadline.
  CallDeadline grace(std::chrono::steady_clock::now() + withdraw_grace);
  try {
    client_.remove(ours);
    return;
  } catch (const Error& e) {
    if (e.code() == Err::noNode || e.code() == Err::sessionExpired) return;
  }
  remove_later(client_, ours);
}

std::optional<int64_t> Mutex::wait_turn(const std::string& ours,
                                        std::optional<std::chrono::steady_clock::time_point> deadline) {
  std::string our_name = ours.substr(ours.rfind('/') + 1);
  std::string what = "lock " + path_;
  auto cancelled = [&] {
    std::lock_guard<std::mutex> l(sh_->mu);
    return sh_->cancelled;
  };
  // Our turn: held, unless the session was lost meanwhile (a grant then would be a second holder).
  auto grant = [&]() -> std::optional<int64_t> {
    if (test_hooks_.before_grant) test_hooks_.before_grant();
    std::lock_guard<std::mutex> l(sh_->mu);
    if (sh_->lost) throw Error(Err::sessionExpired, what + ": the session was lost before the grant");
    node_ = ours;
    sh_->holds = 1;
    return token_;
  };
  ArmedWatch armed;
  for (;;) {
    if (cancelled()) {
      remove_for_sure(client_, ours);
      return std::nullopt;
    }
    uint64_t seen = sh_->seen();
    auto kids = through_losses([&] { return client_.children(path_); });
    std::vector<std::pair<int64_t, std::string>> sorted;
    for (auto& k : kids)
      for (const auto& name : rule_.names)
        if (int64_t s = lock_sequence(k, name); s >= 0) {
          sorted.emplace_back(s, k);
          break;
        }
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> queue;
    for (auto& q : sorted) queue.push_back(std::move(q.second));
    auto me = std::find(queue.begin(), queue.end(), our_name);
    if (me == queue.end()) throw Error(Err::noNode, what + ": our node " + ours + " vanished");
    auto turn = rule_.turn(queue, static_cast<size_t>(me - queue.begin()));
    if (turn.holds) return grant();
    // Only the node the rule names (for a mutex, the one just before ours): one waiter wakes per
    // release. Watched with getData, not exists: an exists watch on a node already gone would
    // wait for its creation, never fire, and be re-sent with every reconnect. Set once; while it
    // has not fired the queue is read again every second (wait_news), without a second watch.
    std::string before = path_ + "/" + turn.watch;
    if (armed.needed(before, seen)) {
      if (test_hooks_.before_watch) test_hooks_.before_watch(before);
      bool there = through_losses([&] {
        try {
          client_.get(before, watcher_of(sh_));
          return true;
        } catch (const Error& e) {
          if (e.code() == Err::noNode) return false;  // it went before we watched it
          throw;
        }
      });
      if (!there) continue;
      armed = {before, seen};
    }
    if (!wait_news(*sh_, seen, deadline, what)) {
      withdraw(ours);  // timed out: out of the queue
      return std::nullopt;
    }
    bool only_one_ahead_went = false;
    {
      std::lock_guard<std::mutex> l(sh_->mu);
      only_one_ahead_went = turn.holds_once_gone && sh_->deleted == before;
    }
    // The only node ahead went: ours is first now (the event came on a live session, so ours is
    // still there).
    if (only_one_ahead_went && !cancelled()) return grant();
  }
}

void Mutex::release() {
  std::string node;
  {
    std::lock_guard<std::mutex> l(sh_->mu);
    if (sh_->holds == 0) throw std::logic_error("release of " + path_ + ", which this Mutex does not hold");
    if (--sh_->holds > 0) return;
    node = node_;
    node_.clear();
  }
  remove_for_sure(client_, node);
}

void remove_for_sure(Client& client, const std::string& node) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    try {
      client.remove(node);
      return;
    } catch (const Error& e) {
      if (e.code() == Err::noNode || e.code() == Err::sessionExpired) return;
      if (e.code() != Err::connectionLoss) throw;
    }
  }
}

Registration::Registration(Client& client, const std::string& path, const std::string& name, const std::string& data)
    : client_(client), node_(path + "/" + name) {
  client_.ensure_path(path);
  client_.create(node_, data, CreateMode::ephemeral);
}

Registration::~Registration() {
  try {
    client_.remove(node_);
  } catch (...) {
  }
}

struct MemberWatcher::Shared : std::enable_shared_from_this<Shared> {
  Client& client;
  std::string path;
  Changed changed;
  mutable std::mutex mu;
  std::vector<std::string> members;
  bool stopped = false;
  Shared(Client& c, std::string p, Changed f) : client(c), path(std::move(p)), changed(std::move(f)) {}

  // Reads the children and watches them again; called first, then from each watch event.
  void refresh() {
    auto self = shared_from_this();
    client.children_async(path, [self](const WatchEvent&) { self->refresh(); },
                          [self](Err e, std::vector<std::string> kids, Stat) {
                            if (e != Err::ok) return;  // NoNode: nothing registered yet
                            std::sort(kids.begin(), kids.end());
                            std::vector<std::string> joined, left;
                            {
                              std::lock_guard<std::mutex> l(self->mu);
                              if (self->stopped) return;
                              std::set_difference(kids.begin(), kids.end(), self->members.begin(),
                                                  self->members.end(), std::back_inserter(joined));
                              std::set_difference(self->members.begin(), self->members.end(), kids.begin(),
                                                  kids.end(), std::back_inserter(left));
                              self->members = kids;
                            }
                            if ((!joined.empty() || !left.empty()) && self->changed) self->changed(joined, left);
                          });
  }
};

MemberWatcher::MemberWatcher(Client& client, std::string path, Changed changed)
    : sh_(std::make_shared<Shared>(client, std::move(path), std::move(changed))) {
  client.ensure_path(sh_->path);
  sh_->refresh();
}

MemberWatcher::~MemberWatcher() {
  std::lock_guard<std::mutex> l(sh_->mu);
  sh_->stopped = true;
}

std::vector<std::string> MemberWatcher::members() const {
  std::lock_guard<std::mutex> l(sh_->mu);
  return sh_->members;
}

}  // namespace warden::client
