"""Acknowledged writes and the check that every member holds them: what the storage fault
tests (it_storage_faults, it_io_faults) write and how they judge a repaired ensemble."""
import re
import time

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NodeExistsError, OperationTimeoutError

from ensemble import four_letter
from support import sanitized, wait_until

SERVING = ("leader", "follower")


def value(i):
    return b"mark-%05d-" % i + b"v" * 40


def client(hosts):
    # A sanitizer build can be slow enough for a heartbeat to be missed: a longer session there,
    # and every call retried on a lost connection (a create that went through is found existing).
    zk = KazooClient(hosts=hosts, timeout=30 if sanitized() else 10)
    zk.start(timeout=60)
    return zk


def write(hosts, lo, hi):
    zk = client(hosts)
    try:
        for i in range(lo, hi):
            path = f"/n{i:05d}"
            for attempt in range(40):
                try:
                    zk.create(path, value(i))
                    break
                except NodeExistsError:  # an earlier attempt went through before its answer was lost
                    if zk.get(path)[0] != value(i):
                        raise RuntimeError(f"{path} does not hold what was written")
                    break
                except (ConnectionLoss, OperationTimeoutError):
                    time.sleep(0.5)
            else:
                raise RuntimeError(f"{path}: no create went through in 40 attempts")
    finally:
        zk.stop()
        zk.close()


def tree_of(member):
    """What `member` serves after a sync: {path: value} of the /n nodes."""
    zk = client(member.hosts)
    try:
        zk.retry(zk.sync, "/")
        return {p: zk.retry(zk.get, "/" + p)[0] for p in zk.retry(zk.get_children, "/") if p.startswith("n")}
    finally:
        zk.stop()
        zk.close()


def check_whole(c, ens, what, n):
    """Checks (with `c`, a support.Checks) that every member of `ens` serves writes 0..n-1 whole,
    the same tree, and has counted no digest mismatch."""
    ens.wait_serving(ens.members, timeout=90)
    trees = {m.id: tree_of(m) for m in ens.members}
    want = {f"n{i:05d}": value(i) for i in range(n)}
    for sid, tree in trees.items():
        missing = sorted(set(want) - set(tree))
        wrong = sorted(p for p in want if p in tree and tree[p] != want[p])
        c.check(not missing and not wrong,
                f"{what}: server {sid} holds all {n} acknowledged writes, unchanged "
                f"(missing {len(missing)} {missing[:3]}, wrong {len(wrong)} {wrong[:3]})")
    c.check(all(t == trees[1] for t in trees.values()), f"{what}: every member serves the same tree")
    # The leader's pings carry its tree digest and every follower compares its own: whole trees
    # never mismatch (a mismatch would sync the member from nothing again).
    def mismatches(m):
        found = []
        wait_until(lambda: found.append(re.search(r"^zk_digest_mismatches_count\t(\d+)$",
                                                  four_letter(m.client_port, "mntr"), re.M)) or found[-1], 30)
        return found[-1]
    counts = {m.id: mismatches(m) for m in ens.members}
    c.check(all(v and v.group(1) == "0" for v in counts.values()),
            f"{what}: no member counts a digest mismatch ({[(k, v and v.group(1)) for k, v in counts.items()]})")
