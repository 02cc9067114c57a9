"""The registry scenario from our users' designs: server processes register ephemerals under
/data_servers, and a watcher sees every join and every leave, including a process killed with
SIGKILL (whose node goes when its session expires)."""
import signal
import subprocess
import threading
import time

from kazoo.client import KazooClient

import support

MEMBER = r"""
import sys, signal, threading
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=4.0)
zk.start(timeout=10)
zk.create("/data_servers/" + sys.argv[2], b"host:port", ephemeral=True, makepath=True)
print("REGISTERED", flush=True)
done = threading.Event()
signal.signal(signal.SIGTERM, lambda *a: done.set())
done.wait(120)
zk.stop()  # a clean leave: the session closes and the node goes at once
print("LEFT", flush=True)
"""


def main():
    c = support.Checks("registry")
    with support.start_warden() as w:
        watcher = KazooClient(hosts=w.hosts)
        watcher.start(timeout=10)
        watcher.ensure_path("/data_servers")
        snapshots = []
        changed = threading.Condition()

        def on_children(children):
            with changed:
                snapshots.append(sorted(children))
                changed.notify_all()

        watcher.ChildrenWatch("/data_servers", on_children)

        def wait_for(members, timeout):
            deadline = time.time() + timeout
            with changed:
                while not snapshots or snapshots[-1] != members:
                    left = deadline - time.time()
                    if left <= 0:
                        return False
                    changed.wait(left)
            return True

        names = ["ds-1", "ds-2", "ds-3", "ds-4"]
        procs = {}
        for i, n in enumerate(names):
            p = subprocess.Popen(["/usr/bin/python3", "-c", MEMBER, w.hosts, n], stdout=subprocess.PIPE, text=True)
            procs[n] = p
            c.equal(p.stdout.readline().strip(), "REGISTERED", f"{n} registers")
            c.check(wait_for(sorted(names[: i + 1]), 10), f"the watcher sees {n} join")
        try:
            procs["ds-2"].send_signal(signal.SIGTERM)
            c.check(wait_for(["ds-1", "ds-3", "ds-4"], 10), "the watcher sees ds-2 leave cleanly")
            procs["ds-3"].kill()  # SIGKILL: only session expiry removes it
            killed_at = time.time()
            c.check(wait_for(["ds-1", "ds-4"], 20), "the watcher sees the SIGKILLed ds-3 leave")
            c.check(time.time() - killed_at >= 2.0, "ds-3's node stays until its session expires")
            procs["ds-1"].send_signal(signal.SIGTERM)
            procs["ds-4"].send_signal(signal.SIGTERM)
            c.check(wait_for([], 10), "the watcher sees the last members leave")
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
                p.wait()
        c.check(w.alive(), "the server is still running")
        watcher.stop()
    c.finish()


if __name__ == "__main__":
    main()
