// A distributed mutex on a Client, compatible with Curator's InterProcessMutex on the same
// path, so that Java services on Curator and C++ services on Warden exclude each other.
//
// As Curator's: each contender creates an ephemeral-sequential child of the lock path named
// `_c_<uuid>-lock-<sequence>` (parents created as containers); children are ordered by the
// sequence suffix; the lowest holds the lock; every other watches only the child just before
// its own (no herd: a release wakes one waiter). A create whose reply was lost in a disconnect
// is found again by its uuid (Curator's protected mode): no orphan node, no second entry.
// Reentrant for the same Mutex object (an acquire by the holder counts; as many releases free
// it). Beyond Curator: each acquisition has a fencing token, the zxid that created the holder's
// node, which strictly increases from one holder of the path to the next (sequence numbers, and
// so holders, follow zxid order), so a resource can refuse a holder that paused past its turn.
// The holder is told (on_lost) when its session is lost or expires: it must not go on as if it
// held the lock.
//
// Threads: one Mutex is one contender. acquire, try_acquire and release are for one thread at a
// time (they are not safe to call concurrently on one object); held(), fencing_token(),
// wakeups(), on_lost() and cancel() may be called from any thread. Several contenders in one
// process take a Mutex each, on one Client or several.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "recipes/client.hpp"

namespace warden::client {

// Which contenders of a lock path form one queue, and when a contender's turn has come. The
// queue holds the children named with any of `names` followed by a sequence number, sorted by
// that number; `turn(queue, ours)` says whether the contender at index `ours` holds, and if
// not, which child it waits on. By default, one name and a mutex: the lowest holds, each other
// contender waits on the one just before it.
struct QueueRule {
  struct Turn {
    bool holds = false;
    std::string watch;  // a child of the lock path, when it does not hold
    // The watched child's deletion alone gives the turn (it is the only one ahead, and no new
    // child can come ahead: sequence numbers only grow), so the queue need not be read again.
    bool holds_once_gone = false;
  };
  std::vector<std::string> names;
  std::function<Turn(const std::vector<std::string>& queue, size_t ours)> turn;
  static QueueRule exclusive(std::vector<std::string> names);
};

class Mutex {
 public:
  // `lock_name`: the part before the sequence number ("lock-" as Curator's InterProcessMutex;
  // LeaderLatch uses "latch-").
  Mutex(Client& client, std::string path, std::string lock_name = "lock-");
  // A contender named `lock_name` in the queue `rule` describes (ReadWriteLock's two sides).
  Mutex(Client& client, std::string path, std::string lock_name, QueueRule rule);
  ~Mutex();  // releases a held lock (best effort)
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // Blocks until held; the fencing token of this acquisition. Throws Error on a session or
  // connection failure, and std::runtime_error once cancel() was called.
  int64_t acquire();
  // Blocks at most `timeout`, and then at most withdraw_grace more to take its node out of the
  // queue; nothing when it was not acquired in time or cancel() was called. Every request it
  // makes gives up at the deadline (CallDeadline), also while the connection is away; a node it
  // could not remove by then is removed in the background once the connection is back (its
  // session's end takes it otherwise), never left for a later holder to wait on.
  std::optional<int64_t> try_acquire(std::chrono::milliseconds timeout);
  static constexpr std::chrono::milliseconds withdraw_grace{1000};
  // From any thread: an acquisition waiting for its turn withdraws (its node is removed) and
  // returns as above; every later one returns at once. For a process that is told to stop while
  // it waits (`warden lock` on SIGINT or SIGTERM). A lock already held stays held.
  void cancel();
  // One release per acquire; the last deletes the node.
  void release();
  bool held() const;
  int64_t fencing_token() const;
  const std::string& node() const { return node_; }  // the holder's node, "" when not held
  // Called (on the client's thread) once the session is lost or expired while held. "Lost" is
  // the client's own verdict (State::lost), reached before the server can have expired the
  // session (client.hpp says by how much).
  void on_lost(std::function<void()> f);
  // Watch events this Mutex received while waiting (tests count them: one per release ahead).
  int64_t wakeups() const;
  // For tests, which must make a race happen at a given point: called on the acquiring thread
  // just before the predecessor's watch is set (with its path), and just before a grant. Set
  // them while no acquisition is under way.
  struct TestHooks {
    std::function<void(const std::string& predecessor)> before_watch;
    std::function<void()> before_grant;
  };
  void set_test_hooks(TestHooks hooks) { test_hooks_ = std::move(hooks); }

 private:
  std::optional<int64_t> lock(std::optional<std::chrono::steady_clock::time_point> deadline);
  std::string create_node();
  void withdraw(const std::string& ours);
  std::optional<int64_t> wait_turn(const std::string& ours, std::optional<std::chrono::steady_clock::time_point> deadline);

  // What the client's callbacks (the state listener, the predecessor's watch) touch, shared so
  // that a callback after this Mutex is gone finds it alive (mutex.cpp).
  struct Shared;
  Client& client_;
  std::string path_;
  std::string uuid_;  // this acquisition's: a fresh one for each, so a stale node is never adopted
  TestHooks test_hooks_;
  std::string lock_name_;
  QueueRule rule_;
  std::string node_;
  int64_t token_ = 0;
  std::shared_ptr<Shared> sh_;
  uint64_t listener_ = 0;
};

// Curator's protected mode: creates the ephemeral-sequential node PARENT/_c_<uuid>-<name><seq>
// (PARENT and its ancestors made first when missing, as containers or persistent nodes); a
// create whose reply was lost in a disconnect is found again by the uuid, so there is never a
// second node of one contender nor an orphan. The node's path and Stat.
enum class ParentKind { containers, persistent };
std::pair<std::string, Stat> protected_create(Client& client, const std::string& parent, const std::string& uuid,
                                             const std::string& name, ParentKind parents,
                                             const std::string& data = {});
// Deletes `node` until it is gone or the session is (Curator's guaranteed delete, in short:
// a lost connection is retried, a bounded number of times).
void remove_for_sure(Client& client, const std::string& node);
// A random (version 4) UUID, as Curator's protected names carry.
std::string new_uuid();

// The sequence number of a lock child name (the digits after the last `lock_name`), -1 if none.
int64_t lock_sequence(const std::string& name, const std::string& lock_name = "lock-");

// A read-write lock compatible with Curator's InterProcessReadWriteLock on the same path:
// readers' children `_c_<uuid>-__READ__<seq>`, writers' `_c_<uuid>-__WRIT__<seq>`, one queue
// in sequence order. A writer holds when it is first in the queue (it waits on the child just
// before it, reader or writer); a reader holds when no writer is ahead of it (it waits on the
// first writer ahead). Many readers hold together; readers and writers are served in the order
// they came, so a stream of readers cannot starve a writer. As Curator's: the holder of the
// write side may take the read side too (and so downgrade by releasing the write side); a
// reader asking for the write side waits for itself forever, so do not.
class ReadWriteLock {
 public:
  ReadWriteLock(Client& client, const std::string& path);
  Mutex& read_lock() { return read_; }
  Mutex& write_lock() { return write_; }

 private:
  Mutex write_;
  Mutex read_;
};

// Leader election compatible with Curator's LeaderLatch on the same path: `_c_<uuid>-latch-<seq>`
// children, the lowest leads, each candidate watches only the one before it. Leadership lasts
// until close() or until the session is lost (on_lost tells).
class LeaderLatch {
 public:
  LeaderLatch(Client& client, std::string path) : m_(client, std::move(path), "latch-") {}
  // Blocks until this candidate leads; the election's fencing token.
  int64_t await_leadership() { return m_.acquire(); }
  std::optional<int64_t> await_leadership(std::chrono::milliseconds timeout) { return m_.try_acquire(timeout); }
  bool has_leadership() const { return m_.held(); }
  void on_lost(std::function<void()> f) { m_.on_lost(std::move(f)); }
  void close() {
    if (m_.held()) m_.release();
  }

 private:
  Mutex m_;
};

// A service registry: a member keeps an ephemeral node PATH/NAME (parents created) with its
// data while registered; MemberWatcher keeps the live list and calls back on joins and leaves.
class Registration {
 public:
  Registration(Client& client, const std::string& path, const std::string& name, const std::string& data);
  ~Registration();  // leaves (best effort)
  const std::string& node() const { return node_; }

 private:
  Client& client_;
  std::string node_;
};

class MemberWatcher {
 public:
  // `changed(joined, left)`, on the client's thread, after every change of PATH's children.
  using Changed = std::function<void(const std::vector<std::string>& joined, const std::vector<std::string>& left)>;
  MemberWatcher(Client& client, std::string path, Changed changed);
  ~MemberWatcher();
  std::vector<std::string> members() const;  // sorted

 private:
  struct Shared;
  std::shared_ptr<Shared> sh_;
};

}  // namespace warden::client
