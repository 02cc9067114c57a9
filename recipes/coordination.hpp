// The classic recipes beside the locks, each compatible with Curator's on the same path:
//
// - Semaphore: a counting semaphore with leases, as Curator's InterProcessSemaphoreV2. PATH/locks
//   holds a Mutex that admits one acquirer at a time; an acquirer makes its lease, the
//   ephemeral-sequential PATH/leases/_c_<uuid>-lease-<seq>, and holds it once PATH/leases has at
//   most max_leases children (it waits, watching those children, while holding the mutex, so
//   only one process ever waits on them: no herd). A lease ends when released or with its
//   session.
// - DoubleBarrier: as Curator's DistributedDoubleBarrier: members enter by making the ephemeral
//   PATH/<uuid>; the one that finds `members` of them makes PATH/ready, which lets everyone
//   through; leaving waits until every member has left.
// - Counter: a 64-bit counter in one node, as Curator's DistributedAtomicLong stores it (8 bytes,
//   big-endian; no node or no data reads 0), changed only by versioned setData (or a create
//   when there is no node yet): a change that met another is read again and retried.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "recipes/client.hpp"
#include "recipes/mutex.hpp"

namespace warden::client {

struct Wakeups;  // the watches' and the session's news for a waiting recipe (recipes/waiting.hpp)

class Semaphore {
 public:
  // One lease: released by release() or when destroyed (or with its session).
  struct Holders;  // how many of this Semaphore's leases are held, and whom to tell of a loss
  class Lease {
   public:
    Lease(Lease&& o) noexcept : client_(o.client_), node_(std::move(o.node_)), holders_(std::move(o.holders_)) {
      o.node_.clear();
    }
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    const std::string& node() const { return node_; }  // "" once released
    void release();

   private:
    friend class Semaphore;
    Lease(Client* client, std::string node, std::shared_ptr<Holders> holders);
    Client* client_;
    std::string node_;
    std::shared_ptr<Holders> holders_;
  };

  Semaphore(Client& client, std::string path, int max_leases);
  ~Semaphore();
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;

  // Blocks until `qty` leases are held. Throws Error on a lost session or a failed request
  // (leases taken so far are released first).
  std::vector<Lease> acquire(int qty = 1);
  // Nothing if the leases were not all held within `timeout` (those taken are released).
  std::optional<std::vector<Lease>> try_acquire(int qty, std::chrono::milliseconds timeout);
  // The lease nodes there are now.
  std::vector<std::string> participants();
  // Called (on the client's thread) once the session is lost or expired while a lease this
  // Semaphore granted is held: as a Mutex holder, its holder must stop using it.
  void on_lost(std::function<void()> f);

 private:
  enum class Outcome { held, timed_out, vanished };
  std::optional<std::vector<Lease>> take(int qty, std::optional<std::chrono::steady_clock::time_point> deadline);
  Outcome take_one(std::vector<Lease>& got, std::optional<std::chrono::steady_clock::time_point> deadline);

  Client& client_;
  std::string leases_;
  int max_;
  Mutex lock_;
  std::shared_ptr<Wakeups> wake_;
  std::shared_ptr<Holders> holders_;
  uint64_t listener_ = 0;
};

class DoubleBarrier {
 public:
  // `members`: how many must enter before any goes through (more may enter).
  DoubleBarrier(Client& client, std::string path, int members);
  ~DoubleBarrier();
  DoubleBarrier(const DoubleBarrier&) = delete;
  DoubleBarrier& operator=(const DoubleBarrier&) = delete;

  // Blocks until `members` have entered; false if `timeout` passed first (this member's node is
  // then taken away again). Throws Error on a lost session.
  bool enter(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Blocks until every member that entered has left; false if `timeout` passed first.
  bool leave(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  const std::string& node() const { return ours_; }

 private:
  Client& client_;
  std::string path_;
  int members_;
  std::string ours_;
  std::string ready_;
  std::shared_ptr<Wakeups> wake_;
  uint64_t listener_ = 0;
};

class Counter {
 public:
  // `max_attempts`: how many times one change is retried when it met others before giving up
  // (Error(BadVersion)).
  Counter(Client& client, std::string path, int max_attempts = 1000);
  int64_t get();
  // Adds `delta`; the value it made. A change whose reply was lost with the connection throws
  // Error(ConnectionLoss): it may have landed, and is not retried (it would count twice).
  int64_t add(int64_t delta);
  int64_t increment() { return add(1); }
  int64_t decrement() { return add(-1); }
  // Sets `value` if the counter holds `expected` now; whether it did.
  bool compare_and_set(int64_t expected, int64_t value);

 private:
  struct Read {
    int64_t value = 0;
    std::optional<int32_t> version;  // nothing: there is no node yet
  };
  Read read();
  bool write(const Read& seen, int64_t value);  // false when another change came first

  Client& client_;
  std::string path_;
  int max_attempts_;
};

// The 8-byte big-endian form of a counter's value, and back (Error(BadArguments) naming `path`
// for data of another length).
std::string encode_counter(int64_t v);
int64_t decode_counter(const std::string& data, const std::string& path);

}  // namespace warden::client
