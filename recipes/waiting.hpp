// How the recipes wait (internal to recipes/, not installed): what a waiting recipe hears from
// its client's thread (watch events and a lost session), the one wait they all use, and the
// retry of a request through a lost connection. Mutex and the recipes of coordination.hpp share
// it, so that there is one rule for "woken, lost, or timed out".
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "recipes/client.hpp"

namespace warden::client {

using Deadline = std::optional<std::chrono::steady_clock::time_point>;

// Shared between a recipe and its client's callbacks, so that a callback after the recipe is
// gone finds it alive. Every field under `mu`; `changes` only grows.
struct Wakeups {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t changes = 0;     // bumped by every watch event and by a lost session
  bool lost = false;        // the session was lost, expired or closed since start()
  bool ready_seen = false;  // a watched node was created (DoubleBarrier's ready node)
  std::string deleted;      // the last node a watch reported deleted
  int64_t events = 0;       // watch events received (tests count a lock's wakeups)

  void bump(const WatchEvent& e) {
    {
      std::lock_guard<std::mutex> l(mu);
      ++changes;
      ++events;
      ready_seen = ready_seen || e.type == EventType::nodeCreated;
      if (e.type == EventType::nodeDeleted) deleted = e.path;
    }
    cv.notify_all();
  }
  void mark_lost() {
    {
      std::lock_guard<std::mutex> l(mu);
      lost = true;
      ++changes;
    }
    cv.notify_all();
  }
  uint64_t seen() {
    std::lock_guard<std::mutex> l(mu);
    return changes;
  }
  void start() {
    std::lock_guard<std::mutex> l(mu);
    lost = false;
    ready_seen = false;
    deleted.clear();
  }
};

inline Watcher watcher_of(const std::shared_ptr<Wakeups>& w) {
  return [w](const WatchEvent& e) { w->bump(e); };
}

inline bool session_gone(State s) { return s == State::lost || s == State::expired || s == State::closed; }

inline uint64_t listen_for_loss(Client& client, const std::shared_ptr<Wakeups>& w) {
  return client.on_state([w](State s) {
    if (session_gone(s)) w->mark_lost();
  });
}

// Waits for news after `seen`: at most a second (the caller reads again, so a watch lost with a
// connection delays it by no more) and never past `deadline`. Throws once the session is lost;
// false once the deadline has passed without news.
inline bool wait_news(Wakeups& w, uint64_t seen, Deadline deadline, const std::string& what) {
  std::unique_lock<std::mutex> l(w.mu);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  if (deadline && *deadline < until) until = *deadline;
  w.cv.wait_until(l, until, [&] { return w.changes != seen || w.lost; });
  if (w.lost) throw Error(Err::sessionExpired, what + ": the session was lost while waiting");
  return !(deadline && std::chrono::steady_clock::now() >= *deadline && w.changes == seen);
}

// A request retried while the connection is away (the session, and so our nodes, live on);
// any other error, or too many losses, goes up.
template <class F>
auto through_losses(F f) {
  for (int losses = 0;; ++losses) {
    try {
      return f();
    } catch (const Error& e) {
      if (e.code() != Err::connectionLoss || losses >= 100) throw;
    }
  }
}

// Removes `node` in the background: the client sends the delete when it has a connection
// (requests wait for one, in order), again after a loss, up to `tries` times; a session that
// ends takes an ephemeral node with it anyway. For a caller that must not wait for it.
inline void remove_later(Client& client, const std::string& node, int tries = 50) {
  client.remove_async(node, -1, [&client, node, tries](Err e) {
    if (e == Err::connectionLoss && tries > 1) remove_later(client, node, tries - 1);
  });
}

// The same for the child of `parent` whose name starts with `prefix` (a protected create whose
// outcome is unknown): looked for, in order after that create, then removed.
inline void remove_child_later(Client& client, const std::string& parent, const std::string& prefix, int tries = 50) {
  client.children_async(parent, nullptr,
                        [&client, parent, prefix, tries](Err e, std::vector<std::string> kids, Stat) {
                          if (e == Err::connectionLoss && tries > 1) return remove_child_later(client, parent, prefix, tries - 1);
                          if (e != Err::ok) return;
                          for (const auto& k : kids)
                            if (k.rfind(prefix, 0) == 0) remove_later(client, parent + "/" + k);
                        });
}

// One watch at a time on one node: set again only when the target changed or news came.
struct ArmedWatch {
  std::string path;
  uint64_t at = 0;
  bool needed(const std::string& target, uint64_t seen) const { return target != path || seen != at; }
};

}  // namespace warden::client
