"""A CTRL-style fault matrix (issue 46; Alagappan et al., FAST 2018): on a 3-member ensemble, one
block of one file of one stopped member is damaged, with or without a second fault, and the
outcome is classed as CTRL classes it:

  correct      every member serves again, each holds every acknowledged write unchanged, and
               their trees are equal;
  unavailable  nothing acknowledged is lost or changed where anything is served, but some member
               does not serve (it refuses to start, or no quorum forms);
  unsafe       a serving member lacks or changed an acknowledged write, or members serve
               different trees.

A round: a new ensemble (snapCount=100, so snapshots exist); 200 creates, each value carrying a
marker; the victim stopped; one file of its data directory (any: write-ahead log, table files,
MANIFEST, CURRENT, OPTIONS, ZooKeeper's log, snapshot and epoch files) chosen, one 4 KiB block in
it corrupted (random bytes), zeroed, or the file truncated at that block; the victim started.
With the second fault ("lagging", CTRL's Figure 2) a follower L is stopped after the first 100
creates, the victim (another follower) and the leader after the last 100; the victim is damaged,
the victim and L started alone for a while (they must not serve without the writes only the
victim and the leader held), then the leader. The same harness runs Apache ZooKeeper 3.8.

Damage to the last records of a write-ahead log (the file cut short by the disk, or its last
block zeroed or garbled) read as a crash's torn tail until the store kept how far its log had
synced (storage/damage/durable_end.hpp): beside a lagging member the two then elected without
the writes the cut held (seed 1796204372, lagging, the log truncated at 20,480: "server 2 lacks
90 acknowledged writes"). The random choice of file depends on which files a run left, so a seed
does not replay that round: --damage fixes the damage (ctest faults_matrix_lost_tail: the newest
write-ahead log cut 8 KiB before its end, a round alone and one beside a lagging member).

  matrix.py [--system warden|zookeeper|both] [--rounds N] [--seed S] [--damage 'KIND wal@-N']
Environment: WARDEN_SERVER (the server binary) for warden. Exits 1 when a Warden round is unsafe.
"""
import argparse
import os
import random
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from ensemble import Ensemble, mode_of  # noqa: E402
from stored_writes import SERVING, tree_of, value, write  # noqa: E402
import support  # noqa: E402

WRITES = 200
BLOCK = 4096
KINDS = ("corrupt", "zero", "truncate")


class WardenMember:
    def __init__(self, m):
        self.m = m
        self.id = m.id
        self.hosts = m.hosts

    def start(self):
        self.m.start()

    def kill(self):
        self.m.kill()

    def alive(self):
        return self.m.alive()

    def serving(self):
        return self.m.mode() in SERVING

    def mode(self):
        return self.m.mode()

    def data_dir(self):
        return os.path.join(self.m.dir, "data")


class ZooKeeperMember:
    def __init__(self, ens, m):
        self.ens, self.m = ens, m
        self.id = m["id"]
        self.hosts = f"127.0.0.1:{m['client_port']}"

    def start(self):
        self.ens.start_member(self.m)

    def kill(self):
        if self.alive():
            self.m["proc"].kill()
            self.m["proc"].wait()

    def alive(self):
        return self.m["proc"] is not None and self.m["proc"].poll() is None

    def mode(self):
        return mode_of(self.m["client_port"]) if self.alive() else ""

    def serving(self):
        return self.mode() in SERVING

    def data_dir(self):
        return os.path.join(self.m["dir"], "data")


class Cluster:
    """Three members of one system, started; `settle` is how long a start may take."""

    def __init__(self, system):
        self.system = system
        if system == "warden":
            self.ens = Ensemble(3, extra_cfg="snapCount=100\n")
            self.ens.start()
            self.members = [WardenMember(m) for m in self.ens.members]
            self.settle = 30
        else:
            self.ens = support.ZkEnsemble(3, 500, 256, extra_cfg="snapCount=100\n")
            self.ens.start()
            self.members = [ZooKeeperMember(self.ens, m) for m in self.ens.members]
            self.settle = 60

    def hosts(self, members=None):
        return ",".join(m.hosts for m in (members or self.members))

    def leader(self):
        deadline = time.time() + self.settle
        while time.time() < deadline:
            for m in self.members:
                if m.mode() == "leader":
                    return m
            time.sleep(0.2)
        raise RuntimeError(f"{self.system}: no leader")

    def stop(self):
        for m in self.members:
            m.kill()
        shutil.rmtree(self.ens.dir, ignore_errors=True)


def data_files(member):
    """Every non-empty file of the member's data directory but myid."""
    out = []
    for root, _, files in os.walk(member.data_dir()):
        for f in files:
            p = os.path.join(root, f)
            if f != "myid" and os.path.getsize(p) > 0:
                out.append(p)
    return sorted(out)


def parse_damage(spec):
    """--damage: "KIND wal@-N", the newest write-ahead log (Warden's) damaged N bytes before its
    end; (kind, N). Raises ValueError naming the problem."""
    kind, _, where = spec.partition(" ")
    target, _, back = where.partition("@-")
    if kind not in KINDS or target != "wal" or not back.isdigit() or int(back) < 1:
        raise ValueError(f"--damage takes 'KIND wal@-N' (KIND one of {', '.join(KINDS)}, N a byte count), not {spec!r}")
    return kind, int(back)


def newest_wal(member):
    logs = [p for p in data_files(member) if p.endswith(".log") and os.path.basename(p)[:-4].isdigit()]
    if not logs:
        raise RuntimeError(f"server {member.id} has no write-ahead log to damage")
    return max(logs, key=os.path.basename)


def damage(rng, member, fixed=None):
    """Damages one block of one of the member's files (`fixed`: parse_damage's, the newest
    write-ahead log that many bytes before its end); returns what was done."""
    if fixed:
        kind, back = fixed
        path = newest_wal(member)
        size = os.path.getsize(path)
        at = max(0, size - back)
    else:
        path = rng.choice(data_files(member))
        size = os.path.getsize(path)
        at = rng.randrange((size + BLOCK - 1) // BLOCK) * BLOCK
        kind = rng.choice(KINDS)
    with open(path, "r+b") as f:
        if kind == "truncate":
            f.truncate(at)
        else:
            n = min(BLOCK, size - at)
            f.seek(at)
            f.write(bytes(n) if kind == "zero" else bytes(rng.randrange(256) for _ in range(n)))
        f.flush()
        os.fsync(f.fileno())
    return f"{kind} {os.path.relpath(path, member.data_dir())}@{at}"


def lost_in(member, acknowledged):
    """The acknowledged writes the member lacks or serves changed, and its tree."""
    tree = tree_of(member)
    return [i for i in acknowledged if tree.get(f"n{i:05d}") != value(i)], tree


def judge(cluster, acknowledged, deadline):
    while time.time() < deadline and not all(m.serving() for m in cluster.members):
        time.sleep(0.5)
    serving = [m for m in cluster.members if m.serving()]
    trees = {}
    for m in serving:
        lost, trees[m.id] = lost_in(m, acknowledged)
        if lost:
            return "unsafe", f"server {m.id} lacks {len(lost)} acknowledged writes ({lost[:3]})"
    if len({tuple(sorted(t.items())) for t in trees.values()}) > 1:
        return "unsafe", "members serve different trees"
    if len(serving) < len(cluster.members):
        return "unavailable", "not serving: " + ", ".join(
            f"{m.id} ({'exited' if not m.alive() else m.mode() or 'no answer'})"
            for m in cluster.members if m not in serving)
    return "correct", ""


def run_round(system, seed, lagging, fixed=None):
    rng = random.Random(seed)
    cluster = Cluster(system)
    try:
        leader = cluster.leader()
        followers = [m for m in cluster.members if m is not leader]
        acknowledged = range(WRITES)
        if not lagging:
            victim = rng.choice(cluster.members)
            write(cluster.hosts(), 0, WRITES)
            victim.kill()
            what = damage(rng, victim, fixed)
            victim.start()
            outcome = judge(cluster, acknowledged, time.time() + cluster.settle)
        else:
            victim, lag = followers[0], followers[1]
            write(cluster.hosts(), 0, WRITES // 2)
            lag.kill()
            write(cluster.hosts([leader, victim]), WRITES // 2, WRITES)
            leader.kill()
            victim.kill()
            what = damage(rng, victim, fixed)
            victim.start()
            lag.start()
            time.sleep(8)  # many elections' time for the two alone
            outcome = None
            for m in (victim, lag):
                if m.serving():
                    lost, _ = lost_in(m, acknowledged)
                    if lost:
                        outcome = ("unsafe", f"server {m.id} served without {len(lost)} acknowledged writes "
                                             f"while the intact member was down ({lost[:3]})")
            leader.start()
            outcome = outcome or judge(cluster, acknowledged, time.time() + cluster.settle)
        return outcome[0], what, outcome[1]
    finally:
        cluster.stop()


def main():
    ap = argparse.ArgumentParser(description="CTRL-style storage fault matrix")
    ap.add_argument("--system", choices=("warden", "zookeeper", "both"), default="warden")
    ap.add_argument("--rounds", type=int, default=20, help="rounds per system (half of them with a lagging member)")
    ap.add_argument("--seed", type=int, default=None, help="the first round's seed (default: the time)")
    ap.add_argument("--damage", default=None,
                    help="every round's damage, not a random one: 'KIND wal@-N', the newest write-ahead log "
                         "(Warden's) corrupted, zeroed or truncated N bytes before its end")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, not {args.rounds}")
    try:
        fixed = parse_damage(args.damage) if args.damage is not None else None
    except ValueError as e:
        ap.error(str(e))
    if fixed and args.system != "warden":
        ap.error("--damage names Warden's write-ahead log: it takes --system warden")
    first = args.seed if args.seed is not None else int(time.time())
    systems = ("warden", "zookeeper") if args.system == "both" else (args.system,)
    totals = {}
    for system in systems:
        counts = {"correct": 0, "unavailable": 0, "unsafe": 0}
        for r in range(args.rounds):
            seed, lagging = first + r, r % 2 == 1
            try:
                outcome, what, why = run_round(system, seed, lagging, fixed)
            except Exception as e:  # the harness's own failure is nobody's outcome: say it and stop
                print(f"{system} seed {seed}: the harness failed: {e!r}", flush=True)
                raise
            counts[outcome] += 1
            shape = "lagging" if lagging else "single"
            print(f"{system} seed {seed} {shape:7} {what}: {outcome}{' (' + why + ')' if why else ''}", flush=True)
        totals[system] = counts
    for system, counts in totals.items():
        n = sum(counts.values())
        print(f"{system}: {n} rounds: {counts['correct']} correct, {counts['unavailable']} unavailable, "
              f"{counts['unsafe']} unsafe")
    return 1 if totals.get("warden", {}).get("unsafe") else 0


if __name__ == "__main__":
    sys.exit(main())
