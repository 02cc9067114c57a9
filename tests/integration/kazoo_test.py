"""kazoo (Debian's python3-kazoo, run with /usr/bin/python3) against Warden: CRUD, DataWatch
and ChildrenWatch, transactions, its Lock and Election recipes, and an expired session."""
import signal
import subprocess
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError, NodeExistsError, NotEmptyError, RolledBackError

import support
from support import wait_until




def crud(c, zk):
    zk.create("/crud", b"v1")
    data, stat = zk.get("/crud")
    c.equal(data, b"v1", "get returns what create wrote")
    c.equal(stat.version, 0, "a new node has version 0")
    zk.set("/crud", b"v2", version=0)
    c.equal(zk.get("/crud")[0], b"v2", "set replaces the data")
    try:
        zk.set("/crud", b"v3", version=0)
        c.check(False, "a stale version is refused")
    except BadVersionError:
        c.check(True, "a stale version is refused")
    try:
        zk.create("/crud")
        c.check(False, "create of an existing node fails")
    except NodeExistsError:
        c.check(True, "create of an existing node fails")
    zk.ensure_path("/crud/a/b/c")
    c.equal(zk.get_children("/crud/a/b"), ["c"], "ensure_path creates the chain")
    try:
        zk.delete("/crud/a")
        c.check(False, "delete of a node with children fails")
    except NotEmptyError:
        c.check(True, "delete of a node with children fails")
    zk.delete("/crud", recursive=True)
    c.check(zk.exists("/crud") is None, "recursive delete removes the subtree")
    try:
        zk.get("/crud")
        c.check(False, "get of a missing node raises NoNodeError")
    except NoNodeError:
        c.check(True, "get of a missing node raises NoNodeError")
    path = zk.create("/seq-", b"", sequence=True, ephemeral=True)
    c.check(path.startswith("/seq-") and len(path) == len("/seq-") + 10, f"sequential name {path}")
    c.equal(zk.exists(path).ephemeralOwner, zk.client_id[0], "an ephemeral names its session as owner")


def watches(c, zk, other):
    zk.create("/watched", b"0")
    seen = []
    zk.DataWatch("/watched", lambda data, stat: seen.append(data))
    wait_until(lambda: seen == [b"0"])
    for i in range(1, 4):
        other.set("/watched", str(i).encode())
        wait_until(lambda: seen and seen[-1] == str(i).encode())
    c.equal(seen, [b"0", b"1", b"2", b"3"], "DataWatch sees every change made by another client")
    kids = []
    zk.ensure_path("/fam")
    zk.ChildrenWatch("/fam", lambda ch: kids.append(sorted(ch)))
    other.create("/fam/a")
    wait_until(lambda: kids and kids[-1] == ["a"])
    other.create("/fam/b")
    wait_until(lambda: kids and kids[-1] == ["a", "b"])
    other.delete("/fam/a")
    wait_until(lambda: kids and kids[-1] == ["b"])
    c.equal(kids[-1], ["b"], "ChildrenWatch follows joins and leaves")
    c.equal(kids[0], [], "ChildrenWatch starts from the empty list")


def transactions(c, zk):
    t = zk.transaction()
    t.create("/tx", b"x")
    t.create("/tx/child", b"y")
    t.set_data("/tx", b"z")
    t.check("/tx", 1)
    results = t.commit()
    c.equal(results[0], "/tx", "a transaction's create result is the path")
    c.equal(zk.get("/tx")[0], b"z", "a committed transaction's ops all apply")
    t = zk.transaction()
    t.create("/tx2")
    t.delete("/tx")  # not empty
    results = t.commit()
    c.check(isinstance(results[0], RolledBackError), f"earlier ops are rolled back: {results}")
    c.check(isinstance(results[1], NotEmptyError), f"the failing op carries its error: {results}")
    c.check(zk.exists("/tx2") is None, "a failed transaction leaves nothing behind")


def lock_recipe(c, hosts):
    clients = [KazooClient(hosts=hosts) for _ in range(3)]
    for k in clients:
        k.start(timeout=10)
    inside, max_inside, order = [0], [0], []
    guard = threading.Lock()

    def worker(k, n):
        lock = k.Lock("/locks/res", identifier=str(n))
        for _ in range(5):
            with lock:
                with guard:
                    inside[0] += 1
                    max_inside[0] = max(max_inside[0], inside[0])
                order.append(n)
                time.sleep(0.005)
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=worker, args=(k, i)) for i, k in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    c.equal(max_inside[0], 1, "kazoo Lock: at most one holder at a time")
    c.equal(len(order), 15, "kazoo Lock: every acquisition completed")
    for k in clients:
        k.stop()


def election_recipe(c, hosts):
    clients = [KazooClient(hosts=hosts) for _ in range(3)]
    for k in clients:
        k.start(timeout=10)
    leaders = []
    stop = threading.Event()

    def run(k, n):
        def lead():
            leaders.append(n)
            stop.wait(0.2)
        k.Election("/election", str(n)).run(lead)

    threads = [threading.Thread(target=run, args=(k, i), daemon=True) for i, k in enumerate(clients)]
    for t in threads:
        t.start()
    wait_until(lambda: len(leaders) == 3, 30)
    c.equal(sorted(leaders), [0, 1, 2], "kazoo Election: each candidate leads in turn, once")
    for t in threads:
        t.join(10)
    for k in clients:
        k.stop()


CHILD = r"""
import sys, threading
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState
lost = threading.Event()
zk = KazooClient(hosts=sys.argv[1], timeout=4.0)
zk.add_listener(lambda s: lost.set() if s == KazooState.LOST else None)
zk.start(timeout=10)
zk.create("/exp-eph", ephemeral=True)
print("READY", flush=True)
print("LOST" if lost.wait(60) else "NOT-LOST", flush=True)
zk.stop()
"""


def expired_session(c, hosts):
    """A client frozen past its session timeout loses its session and its ephemeral."""
    watcher = KazooClient(hosts=hosts)
    watcher.start(timeout=10)
    child = subprocess.Popen(["/usr/bin/python3", "-c", CHILD, hosts], stdout=subprocess.PIPE, text=True)
    try:
        c.equal(child.stdout.readline().strip(), "READY", "the frozen client's ephemeral exists")
        gone = threading.Event()
        c.check(watcher.exists("/exp-eph", watch=lambda e: gone.set()) is not None, "watch set on the ephemeral")
        child.send_signal(signal.SIGSTOP)
        c.check(gone.wait(20), "the session expires on the server and its ephemeral is deleted")
        c.check(watcher.exists("/exp-eph") is None, "the ephemeral is gone")
        child.send_signal(signal.SIGCONT)
        c.equal(child.stdout.readline().strip(), "LOST", "the client learns its session expired")
        child.wait(30)
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGCONT)
            child.kill()
            child.wait()
    watcher.stop()


def main():
    c = support.Checks("kazoo")
    with support.start_warden() as w:
        zk = KazooClient(hosts=w.hosts)
        other = KazooClient(hosts=w.hosts)
        zk.start(timeout=10)
        other.start(timeout=10)
        crud(c, zk)
        watches(c, zk, other)
        transactions(c, zk)
        zk.stop()
        other.stop()
        lock_recipe(c, w.hosts)
        election_recipe(c, w.hosts)
        expired_session(c, w.hosts)
        c.check(w.alive(), "the server is still running")
    c.finish()


if __name__ == "__main__":
    main()
