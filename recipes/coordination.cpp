#include "recipes/coordination.hpp"

#include "recipes/waiting.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>

namespace warden::client {

using Clock = std::chrono::steady_clock;

namespace {

std::string basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

// ---- Semaphore ----

struct Semaphore::Holders {
  std::mutex mu;
  int held = 0;  // leases granted and not yet released
  std::function<void()> on_lost;
};

Semaphore::Lease::Lease(Client* client, std::string node, std::shared_ptr<Holders> holders)
    : client_(client), node_(std::move(node)), holders_(std::move(holders)) {
  std::lock_guard<std::mutex> l(holders_->mu);
  ++holders_->held;
}

Semaphore::Lease& Semaphore::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    try {
      release();
    } catch (...) {
    }
    client_ = o.client_;
    node_ = std::move(o.node_);
    holders_ = std::move(o.holders_);
    o.node_.clear();
  }
  return *this;
}

Semaphore::Lease::~Lease() {
  try {
    release();
  } catch (...) {
  }
}

void Semaphore::Lease::release() {
  if (node_.empty()) return;
  std::string node = std::move(node_);
  node_.clear();
  if (holders_) {
    std::lock_guard<std::mutex> l(holders_->mu);
    --holders_->held;
  }
  remove_for_sure(*client_, node);
}

Semaphore::Semaphore(Client& client, std::string path, int max_leases)
    : client_(client),
      leases_(path + "/leases"),
      max_(max_leases),
      lock_(client, path + "/locks"),
      wake_(std::make_shared<Wakeups>()),
      holders_(std::make_shared<Holders>()) {
  if (max_leases < 1) throw std::invalid_argument("a semaphore needs at least one lease, not " + std::to_string(max_leases));
  listener_ = client_.on_state([w = wake_, h = holders_](State s) {
    if (!session_gone(s)) return;
    w->mark_lost();
    std::function<void()> f;
    {
      std::lock_guard<std::mutex> l(h->mu);
      if (h->held > 0) f = h->on_lost;
    }
    if (f) f();
  });
}

void Semaphore::on_lost(std::function<void()> f) {
  std::lock_guard<std::mutex> l(holders_->mu);
  holders_->on_lost = std::move(f);
}

Semaphore::~Semaphore() { client_.remove_state_listener(listener_); }

std::vector<Semaphore::Lease> Semaphore::acquire(int qty) { return *take(qty, std::nullopt); }

std::optional<std::vector<Semaphore::Lease>> Semaphore::try_acquire(int qty, std::chrono::milliseconds timeout) {
  return take(qty, Clock::now() + timeout);
}

std::vector<std::string> Semaphore::participants() {
  try {
    return client_.children(leases_);
  } catch (const Error& e) {
    if (e.code() == Err::noNode) return {};
    throw;
  }
}

std::optional<std::vector<Semaphore::Lease>> Semaphore::take(int qty, Deadline deadline) {
  if (qty < 1) throw std::invalid_argument("acquire at least one lease, not " + std::to_string(qty));
  wake_->start();
  std::vector<Lease> got;  // released again (destroyed) if this fails or times out
  for (int i = 0; i < qty; ++i) {
    for (int vanished = 0;; ++vanished) {
      Outcome o = take_one(got, deadline);
      if (o == Outcome::held) break;
      if (o == Outcome::timed_out) return std::nullopt;
      if (vanished >= 3)
        throw Error(Err::noNode, "semaphore " + leases_ + ": our lease node vanished (session lost?)");
    }
  }
  return got;
}

Semaphore::Outcome Semaphore::take_one(std::vector<Lease>& got, Deadline deadline) {
  if (deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
    if (!lock_.try_acquire(std::max(left, std::chrono::milliseconds(0)))) return Outcome::timed_out;
  } else {
    lock_.acquire();
  }
  struct Unlock {
    Mutex& m;
    ~Unlock() {
      try {
        m.release();
      } catch (...) {
      }
    }
  } unlock{lock_};
  got.push_back(Lease(&client_, protected_create(client_, leases_, new_uuid(), "lease-", ParentKind::persistent).first,
                      holders_));
  std::string ours = basename(got.back().node());
  ArmedWatch armed;
  for (;;) {
    uint64_t seen = wake_->seen();
    // Watch the children only when no watch of ours is pending on them.
    bool arm = armed.needed(leases_, seen);
    auto kids = through_losses([&] { return client_.children(leases_, arm ? watcher_of(wake_) : nullptr); });
    if (arm) armed = {leases_, seen};
    if (std::find(kids.begin(), kids.end(), ours) == kids.end()) {
      got.pop_back();
      return Outcome::vanished;
    }
    if (static_cast<int64_t>(kids.size()) <= max_) return Outcome::held;
    if (!wait_news(*wake_, seen, deadline, "semaphore " + leases_)) return Outcome::timed_out;
  }
}

// ---- DoubleBarrier ----

DoubleBarrier::DoubleBarrier(Client& client, std::string path, int members)
    : client_(client),
      path_(std::move(path)),
      members_(members),
      ours_(path_ + "/" + new_uuid()),
      ready_(path_ + "/ready"),
      wake_(std::make_shared<Wakeups>()) {
  if (members < 1) throw std::invalid_argument("a barrier needs at least one member, not " + std::to_string(members));
  listener_ = listen_for_loss(client_, wake_);
}

DoubleBarrier::~DoubleBarrier() { client_.remove_state_listener(listener_); }

bool DoubleBarrier::enter(std::optional<std::chrono::milliseconds> timeout) {
  Deadline deadline;
  if (timeout) deadline = Clock::now() + *timeout;
  wake_->start();
  std::string what = "barrier " + path_;
  bool ready = through_losses([&] { return client_.exists(ready_, watcher_of(wake_)).has_value(); });
  through_losses([&] {
    for (;;) {
      try {
        client_.create(ours_, {}, CreateMode::ephemeral);
        return;
      } catch (const Error& e) {
        if (e.code() == Err::nodeExists) return;  // ours, made by a try whose reply was lost
        if (e.code() != Err::noNode) throw;
        client_.ensure_path(path_, true);  // the barrier's node is a container, as Curator's
      }
    }
  });
  if (ready) return true;
  for (;;) {
    uint64_t seen = wake_->seen();
    {
      std::lock_guard<std::mutex> l(wake_->mu);
      if (wake_->ready_seen) return true;
    }
    auto kids = through_losses([&] { return client_.children(path_); });
    auto count = std::count_if(kids.begin(), kids.end(), [](const std::string& k) { return k != "ready"; });
    if (std::find(kids.begin(), kids.end(), "ready") != kids.end()) return true;
    if (count >= members_) {
      through_losses([&] {
        try {
          client_.create(ready_);
        } catch (const Error& e) {
          if (e.code() != Err::nodeExists) throw;
        }
      });
      return true;
    }
    if (!wait_news(*wake_, seen, deadline, what)) {
      remove_for_sure(client_, ours_);
      return false;
    }
  }
}

bool DoubleBarrier::leave(std::optional<std::chrono::milliseconds> timeout) {
  Deadline deadline;
  if (timeout) deadline = Clock::now() + *timeout;
  std::string what = "barrier " + path_;
  std::string our_name = basename(ours_);
  bool ours_there = true;
  ArmedWatch armed;
  // ZooKeeper's double-barrier recipe: the lowest member waits for the highest; every other
  // one leaves at once and waits for the lowest; whoever is last alone leaves and is done.
  for (;;) {
    uint64_t seen = wake_->seen();
    std::vector<std::string> kids;
    try {
      kids = through_losses([&] { return client_.children(path_); });
    } catch (const Error& e) {
      if (e.code() != Err::noNode) throw;
    }
    kids.erase(std::remove(kids.begin(), kids.end(), "ready"), kids.end());
    std::sort(kids.begin(), kids.end());
    if (kids.empty()) break;
    bool present = std::find(kids.begin(), kids.end(), our_name) != kids.end();
    if (!present && ours_there)
      throw Error(Err::noNode, what + ": our node " + ours_ + " is gone (the session was lost, or it never entered)");
    std::string target;
    if (present && kids.size() == 1) {
      remove_for_sure(client_, ours_);
      ours_there = false;
      break;
    }
    if (present && kids.front() == our_name) {
      target = path_ + "/" + kids.back();
    } else {
      if (ours_there) remove_for_sure(client_, ours_);
      ours_there = false;
      target = path_ + "/" + kids.front();
    }
    if (armed.needed(target, seen)) {
      auto st = through_losses([&] { return client_.exists(target, watcher_of(wake_)); });
      if (!st) continue;  // it went meanwhile: read again
      armed = {target, seen};
    }
    if (!wait_news(*wake_, seen, deadline, what)) return false;
  }
  try {
    client_.remove(ready_);
  } catch (const Error& e) {
    if (e.code() != Err::noNode && e.code() != Err::notEmpty) throw;
  }
  return true;
}

// ---- Counter ----

std::string encode_counter(int64_t v) {
  std::string out(8, '\0');
  auto u = static_cast<uint64_t>(v);
  for (int i = 7; i >= 0; --i, u >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(u & 0xff);
  return out;
}

int64_t decode_counter(const std::string& data, const std::string& path) {
  if (data.empty()) return 0;
  if (data.size() != 8)
    throw Error(Err::badArguments,
                "counter " + path + " holds " + std::to_string(data.size()) + " bytes, not an 8-byte value");
  uint64_t u = 0;
  for (char c : data) u = (u << 8) | static_cast<unsigned char>(c);
  return static_cast<int64_t>(u);
}

Counter::Counter(Client& client, std::string path, int max_attempts)
    : client_(client), path_(std::move(path)), max_attempts_(max_attempts) {}

Counter::Read Counter::read() {
  return through_losses([&] {
    try {
      auto [data, stat] = client_.get(path_);
      return Read{decode_counter(data, path_), stat.version};
    } catch (const Error& e) {
      if (e.code() != Err::noNode) throw;
      return Read{};
    }
  });
}

int64_t Counter::get() { return read().value; }

bool Counter::write(const Read& seen, int64_t value) {
  try {
    if (seen.version) {
      client_.set(path_, encode_counter(value), *seen.version);
    } else {
      try {
        client_.create(path_, encode_counter(value));
      } catch (const Error& e) {
        if (e.code() != Err::noNode) throw;
        auto slash = path_.rfind('/');
        if (slash > 0) client_.ensure_path(path_.substr(0, slash));
        client_.create(path_, encode_counter(value));
      }
    }
    return true;
  } catch (const Error& e) {
    // Another change came first. A lost reply is read again too: a change that did land shows
    // as a new version, and retrying it would apply it twice, so ConnectionLoss goes up.
    if (e.code() == Err::badVersion || e.code() == Err::nodeExists || e.code() == Err::noNode) return false;
    throw;
  }
}

int64_t Counter::add(int64_t delta) {
  for (int attempt = 0; attempt < max_attempts_; ++attempt) {
    Read seen = read();
    int64_t next = static_cast<int64_t>(static_cast<uint64_t>(seen.value) + static_cast<uint64_t>(delta));
    if (write(seen, next)) return next;
  }
  throw Error(Err::badVersion, "counter " + path_ + ": gave up after " + std::to_string(max_attempts_) +
                                   " attempts, each overtaken by another change");
}

bool Counter::compare_and_set(int64_t expected, int64_t value) {
  for (int attempt = 0; attempt < max_attempts_; ++attempt) {
    Read seen = read();
    if (seen.value != expected) return false;
    if (write(seen, value)) return true;
  }
  throw Error(Err::badVersion, "counter " + path_ + ": gave up after " + std::to_string(max_attempts_) +
                                   " attempts, each overtaken by another change");
}

}  // namespace warden::client
