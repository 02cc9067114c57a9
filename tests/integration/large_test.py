"""Large replies and wide nodes (issue 26, point 4), on ZooKeeper 3.8 and on Warden alike: a
node whose children list is just under jute.maxbuffer comes whole to kazoo and to the Java
client; past it, kazoo (which has no bound) still takes it and the Java client refuses the reply
(ConnectionLoss, its "Packet len is out of range"). A 1 MB value round-trips; a request above
jute.maxbuffer closes the connection and changes nothing. A multi of 1,000 ops applies whole, or
not at all when one op fails, with the same per-op results on both servers."""
import os
import subprocess
import tempfile

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss

import support

# Children the load generator names n-0000000000 and up: 16 bytes each in a getChildren reply.
FITS, PAST = 60_000, 66_000  # replies of 960,020 and 1,056,020 bytes against 1,048,575


def fill_children(port, upto, have):
    """Makes /wide/c0 hold `upto` children (it holds `have`)."""
    subprocess.run([os.environ["WARDEN_LOADGEN"], "--port", str(port), "--op", "create", "--connections", "1",
                    "--depth", "64", "--seconds", "300", "--prefix", "/wide", "--max-ops", str(upto - have),
                    "--value-size", "1"], check=True, capture_output=True, timeout=600)


def java_children(classpath, hosts, path):
    r = subprocess.run(["java", "-Xmx128m", "-cp", classpath, "WideChildren", hosts, path], capture_output=True,
                       text=True, timeout=120)
    lines = [x for x in r.stdout.splitlines() if x.startswith(("CHILDREN", "ERROR"))]
    return lines[-1] if lines else f"no answer: {r.stdout[-300:]} {r.stderr[-300:]}"


def multi_results(zk, base, fail_last):
    t = zk.transaction()
    for i in range(1000):
        t.create(f"{base}/m{i}", b"x")
    if fail_last:
        t.check(base, 99)
    return [type(r).__name__ if isinstance(r, Exception) else "ok" for r in t.commit()]


def run(c, name, server, classpath):
    zk = KazooClient(hosts=server.hosts, timeout=30)
    zk.start(timeout=15)
    fill_children(server.port, FITS, 0)
    c.equal(len(zk.get_children("/wide/c0")), FITS, f"{name}: kazoo gets all {FITS} children")
    c.equal(java_children(classpath, server.hosts, "/wide/c0"), f"CHILDREN {FITS}",
            f"{name}: the Java client gets all {FITS} children (a reply just under jute.maxbuffer)")
    fill_children(server.port, PAST, FITS)
    kids = zk.get_children("/wide/c0")
    c.check(len(kids) == PAST and len(set(kids)) == PAST, f"{name}: kazoo gets all {PAST} children, once each")
    c.equal(java_children(classpath, server.hosts, "/wide/c0"), "ERROR CONNECTIONLOSS",
            f"{name}: the Java client refuses a reply above its jute.maxbuffer")

    value = os.urandom(1_000_000)
    zk.create("/mb", value)
    c.check(zk.get("/mb")[0] == value, f"{name}: a 1 MB value round-trips")
    try:
        zk.set("/mb", b"y" * (1 << 20))
        outcome = "set"
    except ConnectionLoss:
        outcome = "ConnectionLoss"
    except Exception as e:  # noqa: BLE001 - the outcome is compared, whatever it is
        outcome = type(e).__name__
    c.equal(outcome, "ConnectionLoss", f"{name}: a request above jute.maxbuffer closes the connection")
    c.check(support.wait_until(lambda: zk.connected, 30), f"{name}: kazoo reconnects")
    c.check(zk.get("/mb")[0] == value, f"{name}: and the value is unchanged")

    zk.create("/multi")
    results = multi_results(zk, "/multi", fail_last=True)
    c.equal(results, ["RolledBackError"] * 1000 + ["BadVersionError"],
            f"{name}: a multi of 1,001 ops whose last fails applies none")
    c.equal(zk.get_children("/multi"), [], f"{name}: nothing of it is in the tree")
    c.equal(multi_results(zk, "/multi", fail_last=False), ["ok"] * 1000, f"{name}: a multi of 1,000 creates")
    c.equal(len(zk.get_children("/multi")), 1000, f"{name}: all 1,000 are in the tree")
    c.equal(zk.get("/multi")[1].cversion, 1000, f"{name}: the parent's cversion counts them")
    zk.stop()
    zk.close()
    c.check(server.alive(), f"{name}: the server runs on")


def main():
    c = support.Checks("large")
    classpath = support.compile_java(tempfile.mkdtemp(prefix="warden-large-java-"),
                                     support.java_classpath("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar",
                                                            "slf4j-nop.jar"), "WideChildren.java")
    cfg = "forceSync=no\n"
    if support.with_reference():
        with support.start_zookeeper(extra_cfg=cfg) as zk:
            run(c, "ZooKeeper", zk, classpath)
    with support.start_warden(cfg) as w:
        run(c, "Warden", w, classpath)
    c.finish()


if __name__ == "__main__":
    main()
