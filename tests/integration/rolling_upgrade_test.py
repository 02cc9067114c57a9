"""A rolling upgrade (issue 48): an ensemble of three members of the earlier build (old_build.py:
f1c90d0, warden-server 0.1.0, unless WARDEN_UPGRADE_FROM says another), under a write load, is
upgraded to this build one member at a time, followers first and the leader last, each stopped
with SIGTERM and started on the new binary with the same zoo.cfg and data directory.

Checked: no acknowledged write is lost; each member serves again within SERVE_BOUND_S of its
start; writes never stop for longer than one election (the ensemble's settle bound plus the
client's reconnection); the ensemble runs at version 2 while a member speaks protocol 2 alone and
rises to 3 once the last is upgraded, every member saying so in srvr and its log; the members
agree at the end. Then the way back: the earlier build refuses the upgraded data directory at
its start with a line naming both formats, and docs/operations.md's rollback of one member (its
data moved aside, the earlier build started: it syncs from the others, and the ensemble version
falls to 2) serves every acknowledged write; upgraded again, it rejoins and the version is 3.

By hand: scripts/rolling-upgrade [COMMIT].
"""
import os
import re
import shutil
import subprocess
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NodeExistsError, OperationTimeoutError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError

import old_build
from ensemble import Ensemble, four_letter
from support import Checks, handshake_ok, wait_until

c = Checks("rolling_upgrade")
NEW = os.environ["WARDEN_SERVER"]
BUILD = os.path.dirname(os.path.dirname(NEW))
# A restarted member must serve (complete a client handshake) within this many seconds of its
# start: it opens its store, finds the leader (or elects one) and is synced.
SERVE_BOUND_S = 15
# The client's own share of a gap in writes: noticing its member went away and connecting to
# another (kazoo's retry pauses are 50-200 ms here), and the create it retries.
RECONNECT_S = 2.0


def value(i):
    return b"upgrade-%06d" % i


class Writes:
    """One client creating /u/000000, /u/000001, ... in order through every member's address,
    each create retried until it is acknowledged (one found existing went through before its
    answer was lost), until stopped: at most `max_ops`, and `max_seconds`. `acked` holds (path,
    monotonic time) of each acknowledged create."""

    def __init__(self, hosts, max_ops=200000, max_seconds=400):
        self.hosts, self.max_ops, self.deadline = hosts, max_ops, time.time() + max_seconds
        self.acked = []
        self.stop_event = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def client(self):
        zk = KazooClient(hosts=self.hosts, timeout=10.0,
                         connection_retry={"max_tries": -1, "delay": 0.05, "max_delay": 0.2})
        zk.start(timeout=30)
        return zk

    def run(self):
        try:
            zk = self.client()
            zk.ensure_path("/u")
            i = 0
            while i < self.max_ops and not self.stop_event.is_set() and time.time() < self.deadline:
                path = f"/u/{i:06d}"
                try:
                    zk.create(path, value(i))
                except NodeExistsError:
                    if zk.get(path)[0] != value(i):
                        raise RuntimeError(f"{path} does not hold what was written")
                except (ConnectionLoss, OperationTimeoutError, KazooTimeoutError):
                    time.sleep(0.02)
                    continue
                except SessionExpiredError:
                    zk.stop()
                    zk.close()
                    zk = self.client()
                    continue
                self.acked.append((path, time.monotonic()))
                i += 1
            zk.stop()
            zk.close()
        except Exception as e:  # a failure the checks report, never a hung thread
            self.error = repr(e)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stop_event.set()
        self.thread.join(timeout=120)

    def count(self):
        return len(self.acked)

    def longest_gap(self, since):
        """The longest time between two acknowledged writes (and from `since` to the first)."""
        times = [since] + [t for _, t in self.acked if t >= since]
        return max((b - a for a, b in zip(times, times[1:])), default=0.0)


def tree(member):
    """{path: data} of /u as `member` serves it after a sync."""
    zk = KazooClient(hosts=member.hosts, timeout=10.0)
    zk.start(timeout=30)
    try:
        zk.sync("/u")
        return {p: zk.get(f"/u/{p}")[0] for p in zk.get_children("/u")}
    finally:
        zk.stop()
        zk.close()


def srvr_version(member):
    """srvr's ensemble version on `member` (None: no such line, as the earlier build's srvr)."""
    m = re.search(r"^Peer protocols: (\d+) to (\d+), ensemble version (\d+)$", four_letter(member.client_port, "srvr"),
                  re.M)
    return int(m.group(3)) if m else None


def writes_go_on(writes, what, more=50, timeout=30):
    n = writes.count()
    c.check(wait_until(lambda: writes.count() >= n + more, timeout=timeout),
            f"{what}: writes go on ({writes.count() - n} more acknowledged within {timeout} s)")


def restart_on(member, binary, what):
    """SIGTERM, then a start of `binary` with the same zoo.cfg and data directory; the seconds
    until it serves (None: not within the bound)."""
    c.equal(member.terminate(), 0, f"{what}: server {member.id} exits 0 on SIGTERM")
    started = time.time()
    member.start(binary=binary)
    while not handshake_ok(member.client_port):
        if not member.alive() or time.time() - started > SERVE_BOUND_S * 4:
            c.check(False, f"{what}: server {member.id} serves again:\n{member.log()[-3000:]}")
            return None
        time.sleep(0.05)
    took = time.time() - started
    c.check(took <= SERVE_BOUND_S, f"{what}: server {member.id} serves again within {SERVE_BOUND_S} s ({took:.2f} s)")
    print(f"{what}: server {member.id} serves {took:.2f} s after its start", flush=True)
    return took


def all_agree(ens, writes, what):
    acked = {p.rsplit("/", 1)[1] for p, _ in writes.acked}
    trees = {m.id: tree(m) for m in ens.members}
    for mid, t in trees.items():
        lost = sorted(acked - set(t))
        c.equal(lost[:5], [], f"{what}: server {mid} holds every acknowledged write ({len(acked)})")
        c.check(all(t[p] == value(int(p)) for p in t), f"{what}: server {mid}'s nodes hold what was written")
    first = trees[ens.members[0].id]
    c.check(all(t == first for t in trees.values()), f"{what}: the members serve the same tree ({len(first)} nodes)")


def garbage():
    """What a person may mistype: the command's arguments, the commit to upgrade from."""
    script = os.path.join(old_build.ROOT, "scripts", "rolling-upgrade")
    for args, said in ((["--from"], "usage: scripts/rolling-upgrade [COMMIT]"), (["a", "b"], "usage"),
                       (["no-such-commit-0000"], "'no-such-commit-0000' is not a commit of this clone")):
        r = subprocess.run([script] + args, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        c.check(r.returncode == 2 and said in r.stderr, f"scripts/rolling-upgrade {args}: refused ({r.stderr[-300:]!r})")
    saved = os.environ.get("WARDEN_UPGRADE_FROM")
    os.environ["WARDEN_UPGRADE_FROM"] = "\x01 not a commit"
    try:
        old_build.server(os.path.join(BUILD, "nowhere"))
        c.check(False, "a commit that is not in the history is refused")
    except RuntimeError as e:
        c.check("is not in this clone's history" in str(e), f"a commit that is not in the history is refused: {e}")
    finally:
        if saved is None:
            del os.environ["WARDEN_UPGRADE_FROM"]
        else:
            os.environ["WARDEN_UPGRADE_FROM"] = saved


def main():
    garbage()
    try:
        old = old_build.server(BUILD)
    except RuntimeError as e:
        c.check(False, f"the earlier build's server: {e}")
        return c.finish()
    print(f"upgrading from {old_build.upgrade_from()} ({old}) to {NEW}", flush=True)
    with Ensemble(3) as ens:
        ens.start(binary=old)
        leader = ens.leader()
        srvr = four_letter(leader.client_port, "srvr")
        c.check("Peer protocols" not in srvr, f"the members run the earlier build (its srvr): {srvr[:200]!r}")
        writes = Writes(ens.connect_string).start()
        c.check(wait_until(lambda: writes.count() >= 50, timeout=30), "writes are acknowledged by the earlier build")
        began = time.monotonic()

        followers = [m for m in ens.members if m is not leader]
        for f in followers:
            restart_on(f, NEW, "upgrade a follower")
            c.equal(srvr_version(f), 2, f"server {f.id}, upgraded beside a member of protocol 2 alone: ensemble version 2")
            writes_go_on(writes, f"after server {f.id}'s upgrade")
        restart_on(leader, NEW, "upgrade the leader, last")
        c.check(wait_until(lambda: all(srvr_version(m) == 3 for m in ens.members), timeout=30),
                f"once every member is upgraded, each runs at ensemble version 3: "
                f"{[srvr_version(m) for m in ens.members]}")
        c.check(any("the ensemble version rises from 2 to 3" in m.log() for m in ens.members),
                "the rise to ensemble version 3 is logged")
        writes_go_on(writes, "after the leader's upgrade")
        gap = writes.longest_gap(began)
        bound = ens.settle_bound_s() + RECONNECT_S
        c.check(gap <= bound, f"writes never stop longer than one election: the longest gap {gap:.2f} s, "
                              f"the bound {bound:.2f} s")
        print(f"rolling upgrade: {writes.count()} writes acknowledged, the longest gap {gap:.2f} s", flush=True)

        # The way back. The earlier build refuses the upgraded data directory.
        back = next(m for m in ens.members if m.mode() == "follower")
        c.equal(back.terminate(), 0, f"server {back.id} exits 0 on SIGTERM")
        r = subprocess.run([old, back.cfg], capture_output=True, text=True, timeout=60)
        said = r.stdout + r.stderr
        c.check(r.returncode != 0 and "warden-log-4" in said and "warden-log-3" in said,
                f"the earlier build refuses the upgraded data directory, naming both formats: {said[-800:]!r}")
        # Rolled back as docs/operations.md says: its data moved aside (myid kept), the earlier
        # build started: it syncs from the others, and the ensemble version falls to 2.
        data = os.path.join(back.dir, "data")
        aside = os.path.join(back.dir, "data-aside")
        os.makedirs(aside)
        for name in os.listdir(data):
            if name != "myid":
                shutil.move(os.path.join(data, name), aside)
        started = time.time()
        back.start(binary=old)
        c.check(wait_until(lambda: handshake_ok(back.client_port), timeout=SERVE_BOUND_S * 4),
                f"rolled back, server {back.id} serves on the earlier build ({time.time() - started:.2f} s):\n"
                f"{back.log()[-2000:]}")
        others = [m for m in ens.members if m is not back]
        c.check(wait_until(lambda: all(srvr_version(m) == 2 for m in others), timeout=30),
                f"with a member of protocol 2 alone back, the ensemble version falls to 2: "
                f"{[srvr_version(m) for m in others]}")
        c.check(any("the ensemble version falls from 3 to 2" in m.log() for m in others), "the fall is logged")
        writes_go_on(writes, "after the rollback")
        writes.stop()
        c.check(writes.error is None, f"the writer ends without an error: {writes.error}")
        all_agree(ens, writes, "with one member rolled back")

        # Upgraded again: the earlier build's store is read and marked with this build's format.
        writes = Writes(ens.connect_string).start()
        restart_on(back, NEW, "upgrade the rolled-back member again")
        c.check("was of format 'warden-log-3'" in back.log(), "its store of the earlier build is read and marked 4")
        c.check(wait_until(lambda: all(srvr_version(m) == 3 for m in ens.members), timeout=30),
                f"the ensemble version is 3 again: {[srvr_version(m) for m in ens.members]}")
        writes_go_on(writes, "after the second upgrade")
        writes.stop()
        c.check(writes.error is None, f"the writer ends without an error: {writes.error}")
        all_agree(ens, writes, "at the end")
        c.equal(ens.stop_cleanly(), [], "every member exits cleanly on SIGTERM")
    c.finish()


if __name__ == "__main__":
    main()
