// A deterministic simulation of whole replicas: each runs the real Zab core (consensus/) and the
// real state machine (prep on the leader, DataTree apply everywhere), in simulated time, over a
// seeded network that delays, drops, duplicates, reorders and partitions messages, on disks that
// are slow and lose what was not yet durable when their server crashes. Invariants are checked
// after every step. One seed is one history: the same seed replays it exactly.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "consensus/zab_peer.hpp"

namespace warden::sim {

struct SimOptions {
  uint64_t seed = 1;
  int voters = 3;
  int observers = 0;
  // Servers outside the first configuration (they start too, and join as reconfigs name them),
  // and whether reconfigs are among the faults: the leader proposes a random new configuration
  // of all the servers (voters, observers, left out) now and then.
  int spares = 0;
  bool reconfig = false;
  // Whether a crashed server's disk may come back wiped (a replaced disk: its store empty, its
  // configuration files kept), one server's at a time: a wipe only while every other server's
  // store is synced (consensus::PeerConfig::synced), so an intact copy of each committed txn
  // stays on a quorum. Safety, and repair within the calm-stretch bound, are checked as ever.
  bool wipes = false;
  // With wipes: half the stores lost at a restart are damaged instead (a record of the log, a
  // snapshot part, the epochs or the commit mark unreadable). The host finds the damage as the
  // store opens and sets the store aside, starting on an empty, unsynced one, as the server does.
  // truncate_on_damage plants the host of builds before 2026-12-02: it cut the log at the
  // damaged record and kept its epochs and synced mark (issue 46, case 1); the checks must catch it.
  bool truncate_on_damage = false;
  // Faults of the disk while the server runs, on top of wipes (which it implies), each on one
  // server at a time and within the rule above (an intact copy of each committed txn on a quorum):
  // a write or fsync of the log or of the epochs that fails (EIO, or ENOSPC: the server stops, as
  // it does, and comes back once the disk is sound), a crash that tears the write in flight (a
  // prefix of its records survives, never acknowledged), a lost write (the disk acknowledged it
  // as synced, and it is gone at the next crash: the newest of one of the epochs' two copies,
  // the commit mark's, or the log's synced tail, which durable-end finds: damage), and reads
  // that fail while the store opens (a few times: a later start; every time: damage).
  bool disk_faults = false;
  // one_epoch_copy plants the host of builds before 2026-12-02: its epochs in one record, which
  // a lost write rolls back, so that a member forgets the epoch it synchronised with and can
  // vote for a leader whose history that epoch superseded (a tree that diverges).
  bool one_epoch_copy = false;
  // The second class (with disk_faults, without reconfig): faults that break the rule above.
  // Any server's store may be lost at a crash, several at once, so long as one voter keeps a
  // synced store (with none, a lost ensemble cannot be told from a new one). Writes only the
  // lost stores held may be gone for good: the checks require safety only (no committed txn
  // missing from a leader, no divergence; unavailable is allowed) and count the calm stretches
  // that committed nothing.
  bool beyond_rule = false;
  // A rolling upgrade (issue 48): every server starts on the build before (peer protocol 2
  // alone: it sends what f1c90d0 sends, reads none of protocol 3, and keeps no synced mark), and
  // each restart among the faults upgrades it with even odds, one server at a time as crashes
  // come. The ones left are restarted on the new build as the faults end. The checks are the
  // same, and at the end every member runs at ensemble version 3. Not with wipes: the build
  // before does not survive a lost store (issue 46).
  bool mixed_versions = false;
  consensus::Plants plants;
  // Simulated time with faults, then without any: the ensemble must settle and commit again.
  int64_t fault_ms = 20000;
  int64_t quiet_ms = 15000;
  // Called with one line per step when set (warden-sim --verbose).
  std::function<void(const std::string&)> trace;
  // Called with each delivered peer message (sender, bytes) when set (warden-sim --capture).
  std::function<void(int64_t from, const std::string& bytes)> capture;
};

struct SimResult {
  bool ok = true;
  std::string failure;  // the broken invariant, with the simulated time and step
  uint64_t steps = 0;
  uint64_t committed = 0;  // txns committed (the highest counter of the run, summed over epochs)
  uint64_t acked = 0;      // client writes acknowledged
  uint64_t elections = 0;  // leaders established
  // Faults injected: crashes, partitions, changes of the network's drop/duplicate/delay, disks
  // made slow or quick.
  uint64_t crashes = 0, partitions = 0, network_changes = 0, disk_changes = 0, wipes = 0, damaged = 0;
  // With disk_faults: writes or fsyncs that failed, crashes that tore a write, synced writes
  // lost, starts whose reads failed.
  uint64_t failed_writes = 0, torn_writes = 0, lost_writes = 0, failed_reads = 0;
  uint64_t reconfigs = 0, reconfigs_committed = 0;  // proposed, and committed
  uint64_t upgrades = 0;  // mixed_versions: servers upgraded among the faults
  uint64_t calm_stretches = 0;  // stretches with every server up and the network whole, checked
  uint64_t calm_unavailable = 0;  // beyond_rule: of those, the ones that committed nothing
  int64_t max_settle_ms = 0;    // the longest a calm stretch waited for its first commit
};

SimResult run_simulation(const SimOptions& options);

}  // namespace warden::sim
