// The one host loop: what a replicator does with each Ready the Zab core gives, for a lone voter
// (ZabReplicator, the standalone server) and a member of an ensemble (EnsembleReplicator) alike.
// carry_out() takes the parts of a Ready in the order consensus/README.md gives ("Hosts"):
// what an operator must hear, the epochs (and the synced mark) persisted, a configuration in
// force or pending, the store emptied, cut or replaced by a snapshot, the entries appended
// (handed to persist), the messages sent, the commits applied, then the role's change and the
// requests forwarded to a leader. Each host supplies the steps it can take; a part of a Ready
// for which a host has no step is one it must never get, and is refused (std::logic_error), never
// dropped. apply_committed() is the commit step both hosts share.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "consensus/zab_peer.hpp"
#include "storage/log_store.hpp"

namespace warden::consensus {

struct HostSteps {
  std::function<void(const std::vector<std::string>& notes)> notes;
  std::function<void()> save_epochs;
  std::function<void(bool synced)> synced;
  std::function<void(const Ensemble& config)> config;
  std::function<void(const Ensemble& pending)> pending;
  std::function<void()> reset;
  std::function<void(Zxid after)> truncate;
  // A snapshot at `at` (r.snapshot_streamed: its records came before, kept by the host).
  std::function<void(Zxid at, bool streamed)> snapshot;
  std::function<void(Entry e)> append;
  std::function<void(PeerId to, pb::PeerMessage& m)> send;
  std::function<void(Zxid committed)> apply;
  std::function<void(Zxid at, uint64_t digest)> leader_digest;
  // After the commits: the host's own follow-up; true when it made more work (a resync).
  std::function<bool()> after_commits;
  std::function<void()> role_changed;
  std::function<void(PeerId from, std::string payload)> request;
  // The ensemble version changed: for the host to log (optional, as role_changed).
  std::function<void(uint32_t version)> ensemble_version;
};

// Carries out `r` with `steps`, in the order above. Returns whether `r` held work (or a step
// made more): the caller asks the core for its next Ready until one holds none.
bool carry_out(Ready& r, const HostSteps& steps);

// Applies every txn after `applied` up to `committed`, in zxid order: first what the store held
// before `tail` (a restart's log, a lone voter's history), then `tail`, the entries appended
// since, ascending; moves `applied` on and hands each to `apply`.
void apply_committed(const storage::LogStore& store, const std::deque<storage::LogEntry>& tail, Zxid& applied,
                     Zxid committed, const std::function<void(const storage::LogEntry&)>& apply);

}  // namespace warden::consensus
