"""I/O errors at run time on one or two members of a 3-member ensemble (issue 46): the disk fails
an fsync, a write (EIO, or ENOSPC that the server's own free-space reserve did not foresee) or a
read, injected by libwarden-io-faults (io_faults.c, LD_PRELOADed into the member). A failed
fsync also drops what the file took since its last good one, as Linux may: a member that
acknowledged on it would lose the write at its next start.

Checked each time: the member stops (a failed write), retries and repairs itself (a failed
read at its start), or fails one sync and syncs the follower from its live tree (a failed
read of the leader's table files while it sends a stored snapshot); every acknowledged write is on every member after it is started again without
the fault, and the trees are equal. With two members' fsyncs failing no write is acknowledged
that is not on every member in the end.
"""
import os
import re
import shutil
import subprocess
import tempfile
import time

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from ensemble import Ensemble
from stored_writes import check_whole, tree_of, value, write
from support import Checks, wait_until

c = Checks("io faults")
LIB = os.environ["WARDEN_IO_FAULTS"]
WAL = "data/log*.log"  # the members' write-ahead logs: data/log/NNNNNN.log


def faulty(spec, arm=None):
    env = {"LD_PRELOAD": LIB, "WARDEN_IO_FAULT": spec}
    if arm:
        env["WARDEN_IO_FAULT_ARM"] = arm
    return env


def stopped(member, what):
    c.check(wait_until(lambda: not member.alive(), 30), f"{what}: the member stops")
    c.check("io fault" in member.log() and ("stopping the server" in member.log() or "cannot write" in member.log()),
            f"{what}: its log says which write failed: {member.log()[-400:]!r}")


def write_fails_on_one(kind, err, victim_is_leader):
    what = f"{kind} fails with {err} on the {'leader' if victim_is_leader else 'follower'}"
    ens = Ensemble(3)
    arm = os.path.join(ens.dir, "arm")
    try:
        ens.start()
        leader = ens.leader()
        victim = leader if victim_is_leader else [m for m in ens.members if m is not leader][0]
        victim.kill()
        victim.start(env=faulty(f"{kind} {WAL} {err} 1", arm))
        ens.wait_serving(ens.members)
        write(ens.connect_string, 0, 50)
        open(arm, "w").close()
        write(ens.connect_string, 50, 150)  # the other two acknowledge them
        stopped(victim, what)
        os.remove(arm)
        victim.start()
        check_whole(c, ens, what, 150)
    finally:
        for m in ens.members:
            m.kill()
        shutil.rmtree(ens.dir, ignore_errors=True)


def sync_fails_on_two():
    what = "fsync fails on the leader and a follower"
    ens = Ensemble(3)
    arm = os.path.join(ens.dir, "arm")
    try:
        ens.start()
        leader = ens.leader()
        f = [m for m in ens.members if m is not leader][0]
        for m in (leader, f):
            m.kill()
            m.start(env=faulty(f"sync {WAL} EIO 1", arm))
        ens.wait_serving(ens.members)
        write(ens.connect_string, 0, 50)
        acknowledged = set(range(50))
        third = [m for m in ens.members if m not in (leader, f)][0]
        zk = KazooClient(hosts=ens.hosts_of([leader, f]), timeout=4)  # its session is a write too
        zk.start(timeout=30)
        # The third member holds nothing from now: a write the other two acknowledged on a failed
        # fsync would be lost for good.
        third.pause()
        open(arm, "w").close()
        deadline = time.time() + 30
        for i in range(50, 80):  # bounded: a few seconds each at most once no quorum is left
            if time.time() > deadline:
                break
            try:
                # Bounded: with no quorum the client queues the request while it reconnects.
                zk.create_async(f"/n{i:05d}", value(i)).get(timeout=3)
                acknowledged.add(i)
            except (KazooException, KazooTimeoutError):
                pass
        zk.stop()
        zk.close()
        for m in (leader, f):
            stopped(m, f"{what}: server {m.id}")
        c.check(acknowledged == set(range(50)),
                f"{what}: nothing is acknowledged while no quorum can make it durable "
                f"({sorted(acknowledged - set(range(50)))[:5]})")
        os.remove(arm)
        third.resume()
        for m in (leader, f):
            m.start()
        ens.wait_serving(ens.members, timeout=90)
        trees = {m.id: tree_of(m) for m in ens.members}
        for sid, tree in trees.items():
            lost = sorted(i for i in acknowledged if tree.get(f"n{i:05d}") != value(i))
            c.check(not lost, f"{what}: server {sid} holds every acknowledged write "
                              f"({len(acknowledged)}; lost {lost[:5]})")
        c.check(all(t == trees[1] for t in trees.values()), f"{what}: every member serves the same tree")
    finally:
        for m in ens.members:
            m.kill()
        shutil.rmtree(ens.dir, ignore_errors=True)


def read_fails_at_start(times):
    # The open is tried 3 times (RocksDbLogStore::open_attempts): one failure passes, three make
    # the store count as damaged.
    what = f"a read of the write-ahead log fails {times} time(s) at the follower's start"
    ens = Ensemble(3)
    try:
        ens.start()
        leader = ens.leader()
        victim = [m for m in ens.members if m is not leader][0]
        write(ens.connect_string, 0, 100)
        victim.kill()
        write(ens.hosts_of([m for m in ens.members if m is not victim]), 100, 150)
        victim.start(env=faulty(f"read {WAL} EIO {times}"))
        check_whole(c, ens, what, 150)
        log = victim.log()
        c.check("the disk failed a read while opening the log" in log, f"{what}: the member says so and tries again")
        set_aside = "set aside whole" in log
        c.check(set_aside == (times >= 3),
                f"{what}: the store is {'set aside and repaired from the peers' if times >= 3 else 'kept'}")
    finally:
        for m in ens.members:
            m.kill()
        shutil.rmtree(ens.dir, ignore_errors=True)


def read_fails_while_syncing():
    # A wiped follower gets the leader's newest stored snapshot (snapCount=100: the log after it is
    # small), read from the leader's table files, which fail every read from then on. Each member
    # has an arm file of its own, so that only the leader's reads fail.
    what = "the leader's table files fail every read while it syncs a wiped follower"
    ens = Ensemble(3, extra_cfg="snapCount=100\n")
    arm = {m.id: os.path.join(ens.dir, f"arm-{m.id}") for m in ens.members}
    try:
        for m in ens.members:
            m.start(env=faulty("read data/log*.sst EIO 1000000", arm[m.id]))
        ens.wait_serving(ens.members)
        leader = ens.leader()
        victim = [m for m in ens.members if m is not leader][0]
        n = 300
        write(ens.connect_string, 0, n)
        # The leader offers its newest stored snapshot only when the log after it is small (a third
        # of its size, snapshotSizeFactor); else the live tree, and nothing is read from disk (in
        # CI the newest snapshot was 68 txns behind). Ten writes at a time until a durable one is
        # within ten txns of the end (snapshots come every 50-100 txns at snapCount=100).
        def near_end():
            last = leader.last_zxid()
            return last > 0 and last - leader.newest_durable_snapshot() <= 10
        deadline = time.time() + 60
        while not near_end() and time.time() < deadline:
            write(ens.connect_string, n, n + 10)
            n += 10
            wait_until(near_end, 1)
        c.check(near_end(), f"{what}: the leader stored a snapshot near its log's end")
        victim.kill()
        victim.wipe()
        open(arm[leader.id], "w").close()
        victim.start()
        check_whole(c, ens, what, n)
        log = leader.log()
        c.check(re.search(r"syncing server %d failed: .* could not be read: .*Input/output error" % victim.id, log)
                is not None, f"{what}: the leader's sync failed on the read, and it says so: {log[-600:]!r}")
        c.check(leader.alive() and "stopping the server" not in log, f"{what}: the leader keeps serving")
        # The stored snapshot is not offered again: the live tree is sent instead.
        c.check("could not be read: followers get an older snapshot or the live tree" in log and
                re.search(r"syncing server %d: the live tree" % victim.id, log) is not None,
                f"{what}: the follower was synced from the live tree instead")
    finally:
        for m in ens.members:
            m.kill()
        shutil.rmtree(ens.dir, ignore_errors=True)


def garbage_spec():
    """The library refuses a malformed WARDEN_IO_FAULT loudly rather than injecting nothing."""
    with tempfile.TemporaryDirectory() as d:
        for spec in ("sync", "scribble data/log*.log EIO 1", "sync data/log*.log EAGAIN 1"):
            r = subprocess.run(["/bin/true"], env=dict(os.environ, LD_PRELOAD=LIB, WARDEN_IO_FAULT=spec),
                               capture_output=True, text=True, cwd=d)
            c.check(r.returncode != 0 and "io faults:" in r.stderr, f"WARDEN_IO_FAULT={spec!r} is refused: {r.stderr!r}")


garbage_spec()
write_fails_on_one("sync", "EIO", victim_is_leader=False)
write_fails_on_one("sync", "EIO", victim_is_leader=True)
write_fails_on_one("write", "EIO", victim_is_leader=False)
write_fails_on_one("write", "ENOSPC", victim_is_leader=True)
sync_fails_on_two()
read_fails_at_start(1)
read_fails_at_start(3)
read_fails_while_syncing()
c.finish()
