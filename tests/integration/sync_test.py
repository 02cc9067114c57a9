"""A member joins a 3-member ensemble whose log is past 200 MB (issue 27, point 1).

Writes 200 setData of 1 MB, then a follower wiped but for its myid is restarted under a write
load and must follow (the leader sends its newest snapshot and the log after it, streamed,
never all of it in memory). Then the other follower stops, a quarter as much again is written,
the two running members restart (each purges its log at start, as autopurge does once at start
and then every purgeInterval hours), and the stopped member, far behind the purged logs but not
wiped, comes back and must follow (SNAP). Each member's tree is compared with the leader's, and
the leader's peak memory stays far below the log's size.

WARDEN_SYNC_MB sets the log's size (200 by default, 64 for a sanitized server)."""
import hashlib
import os
import re
import shutil
import subprocess
import threading
import time

from kazoo.client import KazooClient

from ensemble import Ensemble, four_letter
from support import Checks, handshake_ok

c = Checks("sync")
SANITIZED = any(lib in subprocess.run(["ldd", os.environ["WARDEN_SERVER"]], capture_output=True, text=True).stdout
                for lib in ("libtsan", "libasan"))
# A sanitized server (scripts/test's sanitizer passes) writes ten times slower: a smaller log,
# the same paths (streamed DIFF and SNAP).
MB = int(os.environ.get("WARDEN_SYNC_MB", "64" if SANITIZED else "200"))
payload_size = 1_000_000


def client(member, timeout=15.0):
    k = KazooClient(hosts=member.hosts, timeout=timeout, randomize_hosts=False)
    k.start(timeout=30)
    return k


def big(i):
    head = f"big-{i}-".encode()
    return head + bytes([i % 251]) * (payload_size - len(head))


def digest_of(member):
    """What `member` serves: /big's data and version, /small's children, after a sync."""
    k = client(member)
    try:
        k.sync("/")
        data, stat = k.get("/big")
        small = sorted(k.get_children("/small"))
        return hashlib.sha256(data).hexdigest(), stat.version, small
    finally:
        k.stop()
        k.close()


def memory_mb(member, key):
    """VmRSS (now) or VmHWM (the peak since the last reset_peak) of a member, in MB."""
    with open(f"/proc/{member.proc.pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) // 1024
    return -1


def reset_peak(member):
    """Starts the member's peak RSS again from its RSS now (Linux: clear_refs 5)."""
    with open(f"/proc/{member.proc.pid}/clear_refs", "w") as f:
        f.write("5")
    return memory_mb(member, "VmRSS")


def wait_follows(member, timeout):
    start = time.time()
    while not handshake_ok(member.client_port):
        if not member.alive():
            raise RuntimeError(f"server {member.id} exited:\n{member.log()[-3000:]}")
        if time.time() - start > timeout:
            return None
        time.sleep(0.05)
    return time.time() - start


class Writer:
    """Small writes, as a steady load, while a member joins: bounded in count and time."""

    def __init__(self, member, prefix, limit=2000, seconds=120):
        self.k = client(member)
        self.k.ensure_path("/small")
        self.prefix, self.limit, self.deadline = prefix, limit, time.time() + seconds
        self.done = 0
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run)
        self.t.start()

    def run(self):
        while not self.stop.is_set() and self.done < self.limit and time.time() < self.deadline:
            self.k.create(f"/small/{self.prefix}-", b"x", sequence=True)
            self.done += 1
            time.sleep(0.01)

    def finish(self):
        self.stop.set()
        self.t.join()
        self.k.stop()
        self.k.close()
        return self.done


def scenario(cfg, snap):
    """`snap`: members take snapshots often and purge at start, so joining members get a SNAP;
    else (ZooKeeper's defaults: no snapshot yet) they get the whole log as a streamed DIFF."""
    what = "SNAP" if snap else "DIFF"
    with Ensemble(3, tick_ms=200, init_limit=10, sync_limit=5, extra_cfg=cfg) as ens:
        ens.start()
        leader = ens.leader()
        followers = [m for m in ens.members if m is not leader]
        wiped, behind = followers
        k = client(leader)
        k.ensure_path("/small")
        k.create("/big", b"")

        t0 = time.time()
        for i in range(MB):
            k.set("/big", big(i))
        write_s = time.time() - t0
        print(f"{MB} setData of 1 MB in {write_s:.1f} s")
        k.stop()
        k.close()

        # ---- a wiped follower, restarted under a write load
        wiped.kill()
        data = os.path.join(wiped.dir, "data")
        for name in os.listdir(data):
            if name != "myid":
                p = os.path.join(data, name)
                shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
        w = Writer(leader, "a")
        rss_before = reset_peak(leader)
        wiped.start()
        took = wait_follows(wiped, 120)
        written = w.finish()
        c.check(took is not None, f"the wiped member follows again (log of {MB} MB)")
        print(f"{what}: wiped member: serving after {took} s, {written} small writes meanwhile")
        c.check(written > 0, "the write load ran while it joined")
        sent_snapshot = re.search(r"syncing server %d: the snapshot at" % wiped.id, leader.log()) is not None
        c.equal(sent_snapshot, snap, f"{what}: the leader streamed it a snapshot")
        c.equal("installed the snapshot at" in wiped.log(), snap, f"{what}: it installed a snapshot")
        want = digest_of(leader)
        c.equal(digest_of(wiped), want, "the wiped member serves the leader's tree")
        c.equal(want[1], MB, "every 1 MB write is there")
        c.equal(digest_of(behind), want, "the other follower too")
        grown = memory_mb(leader, "VmHWM") - rss_before
        print(f"{what}: the leader's RSS grew by {grown} MB at most while it synced the member ({rss_before} MB before)")
        # Streamed, a sync holds a few frames; the whole log would be MB megabytes and more. A
        # sanitizer's runtime keeps its own memory (shadow, quarantine): not checked there.
        if not SANITIZED:
            c.check(grown < MB / 2, f"the leader never held the log in memory (grew {grown} MB, log {MB} MB)")
        c.check("dropping the connection" not in leader.log(), "no connection was dropped for a full queue")

        # ---- the other follower stops and falls far behind; the two others restart (each purges its
        # log at start) and the one far behind comes back
        behind.kill()
        k = client(leader)
        for i in range(MB, MB + MB // 4):
            k.set("/big", big(i))
        k.stop()
        k.close()
        for m in (wiped, leader):
            c.equal(m.terminate(), 0, f"server {m.id} stops cleanly")
            m.start()
            ens.wait_serving([m], 120)
            ens.wait_serving([x for x in (wiped, leader)], 120)
        now_leader = ens.leader()
        if snap:
            c.check(any("purged" in m.log() for m in (wiped, leader)), "the restarted members purged their logs")
        w = Writer(now_leader, "b", limit=500)
        behind.start()
        took = wait_follows(behind, 120)
        written = w.finish()
        c.check(took is not None, "the member far behind the purged logs follows again")
        print(f"{what}: member far behind: serving after {took} s, {written} small writes meanwhile")
        sent_snapshot = re.search(r"syncing server %d: the snapshot at" % behind.id, now_leader.log()) is not None
        c.equal(sent_snapshot, snap, f"{what}: the leader sent it a snapshot (its log no longer reaches back to it)")
        want = digest_of(now_leader)
        for m in ens.members:
            c.equal(digest_of(m), want, f"server {m.id} serves the same tree")
        if os.environ.get("WARDEN_SYNC_KEEP"):  # the members' logs, for a person to read
            for m in ens.members:
                keep = os.path.join(os.environ["WARDEN_SYNC_KEEP"], f"{what}-{m.id}.log")
                shutil.copy(os.path.join(m.dir, "server.log"), keep)
        bad = ens.stop_cleanly()
        c.equal(bad, [], "every member stops cleanly")


scenario("", snap=False)
scenario("snapCount=20\nautopurge.snapRetainCount=3\nautopurge.purgeInterval=1\n", snap=True)
c.finish()
