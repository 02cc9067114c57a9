"""`warden-server import-zookeeper` and `export-zookeeper` against a real Apache ZooKeeper 3.8.

A ZooKeeper started by the test is filled through its own clients (kazoo, zkCli.sh, the raw
protocol for containers and TTL nodes): thousands of nodes of every kind, ACLs of the world,
auth, digest and ip schemes, quotas, sequential counters, deep paths, binary data up to 1 MB,
multis that succeed and fail, sessions closed and sessions alive with their ephemerals. It runs
three times, writing plain, gzip and snappy snapshots into one directory (snapCount low, so that
snapshots are taken mid-way and are fuzzy), and is stopped the last time with SIGKILL, so that
the log's tail matters. Then:

- the directory is imported, and Warden serves every node with the data, Stat and ACL that the
  same ZooKeeper serves when restarted on its own directory;
- a client that was connected to ZooKeeper when it died reconnects to Warden with its session
  id and password, keeps its ephemerals, and its watch (restored by setWatches) fires;
- importing from each older snapshot (plain, gzip, snappy) or from the logs alone gives the
  same state;
- damaged inputs (a flipped byte in a log, a snapshot cut short, a wrong magic, a garbage epoch
  file, a missing log) are refused with the file, the offset and the reason, and nothing is
  written; a newer snapshot that does not read whole is passed over and told.

The way back: a Warden filled the same way is exported while it serves, and ZooKeeper started on
the export serves every node with the same data, Stat and ACL, the sessions that own ephemerals
included, and finds the snapshot's digest its own."""
import os
import re
import shutil
import struct
import subprocess
import threading
import time

from kazoo.client import KazooClient
from kazoo.security import ACL, Id, make_digest_acl

import support
import zkproto
from ensemble import four_letter

c = support.Checks("migrate-zookeeper")
WARDEN = os.environ.get("WARDEN_SERVER", "")
ZK_CFG = "snapCount=400\nmaxSessionTimeout=120000\nautopurge.purgeInterval=0\n"
DIGEST_ACL = make_digest_acl("user", "secret", read=True, write=True, create=True, delete=True, admin=True)


def run_import(src, dest, log=None, expect_ok=True):
    args = [WARDEN, "import-zookeeper", "--from", src, "--data-dir", dest] + (["--from-log", log] if log else [])
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if expect_ok and r.returncode != 0:
        print(r.stdout, r.stderr)
    return r


def snapshot_dump(data_dir):
    r = subprocess.run([WARDEN, "snapshot-dump", data_dir], capture_output=True, text=True, timeout=300)
    return r.stdout if r.returncode == 0 else "failed: " + r.stderr


def fill(zk, port, part):
    """Writes part `part` (0, 1, 2) of the data, through kazoo and the raw protocol."""
    base = f"/p{part}"
    zk.create(base, b"part %d" % part)
    # thousands of small nodes, some with binary data, in parallel
    for batch in range(6):
        waits = [zk.create_async(f"{base}/n{batch}-{i}", bytes([i % 256]) * (i % 50)) for i in range(200)]
        for w in waits:
            w.get(timeout=30)
    # deep paths, sequential counters, deletes
    zk.create(base + "/deep/" + "/".join(f"d{i}" for i in range(40)), b"deep", makepath=True)
    for i in range(60):
        zk.create(base + "/seq/n-", b"%d" % i, sequence=True, makepath=True)
    for kid in sorted(zk.get_children(base + "/seq"))[::3]:
        zk.delete(base + "/seq/" + kid)
    # ACLs: digest, auth, ip; a setACL; data set several times
    zk.create(base + "/digest", b"d", acl=[DIGEST_ACL])
    zk.create(base + "/auth", b"a", acl=[ACL(31, Id("auth", ""))])
    zk.create(base + "/ip", b"i", acl=[ACL(31, Id("ip", "127.0.0.1"))])
    zk.create(base + "/reacl", b"r")
    zk.set_acls(base + "/reacl", [ACL(1, Id("world", "anyone")), DIGEST_ACL])
    for v in range(5):
        zk.set(base + "/n0-1", b"version %d" % v)
    # large binary data
    zk.create(base + "/big", os.urandom(1_000_000) if part == 0 else bytes(range(256)) * 3000)
    # multis: one that commits, one that fails
    t = zk.transaction()
    t.create(base + "/multi-a", b"a")
    t.set_data(base + "/n0-2", b"from a multi")
    t.delete(base + "/n0-3")
    t.commit()
    t = zk.transaction()
    t.create(base + "/multi-never", b"x")
    t.delete(base + "/absent")
    t.commit()
    # a container with a child, a TTL node (hours: it outlives the test), through the raw protocol
    s = zkproto.Session(port)
    s.call(zkproto.CREATE_CONTAINER, zkproto.jstr(base + "/cont") + zkproto.jbuf(b"c")
           + zkproto.jacl(zkproto.OPEN_ACL) + zkproto.jint(4))
    s.call(zkproto.CREATE, zkproto.jstr(base + "/cont/kid") + zkproto.jbuf(b"k")
           + zkproto.jacl(zkproto.OPEN_ACL) + zkproto.jint(0))
    s.call(zkproto.CREATE_TTL, zkproto.jstr(base + "/ttl") + zkproto.jbuf(b"t")
           + zkproto.jacl(zkproto.OPEN_ACL) + zkproto.jint(5) + zkproto.jlong(4 * 3600 * 1000))
    s.close()
    # a session that ends: its ephemerals go with it (a closeSession in the log)
    gone = KazooClient(hosts=f"127.0.0.1:{port}")
    gone.start(timeout=15)
    gone.create(base + "/gone-eph", b"", ephemeral=True)
    gone.stop()
    gone.close()


def tree(port):
    """Every node but /zookeeper/config: {path: (data, stat, acl)}, read with every credential."""
    zk = KazooClient(hosts=f"127.0.0.1:{port}", timeout=30)
    zk.start(timeout=30)
    zk.add_auth("digest", "user:secret")
    out = {}
    level = ["/"]
    while level:
        gets = [(p, zk.get_async(p), zk.get_acls_async(p), zk.get_children_async(p)) for p in level]
        level = []
        for p, g, a, k in gets:
            data, stat = g.get(timeout=30)
            acl, _ = a.get(timeout=30)
            out[p] = (data, tuple(stat), tuple(sorted((x.perms, x.id.scheme, x.id.id) for x in acl)))
            for kid in k.get(timeout=30):
                full = p.rstrip("/") + "/" + kid
                if full != "/zookeeper/config":
                    level.append(full)
    zk.stop()
    zk.close()
    return out


def compare(got, want, what, at_least=3000):
    differ = [p for p in sorted(set(got) | set(want)) if got.get(p) != want.get(p)]
    for p in differ[:5]:
        print(f"  {p}: Warden {str(got.get(p))[:300]}\n  {' ' * len(p)}  ZooKeeper {str(want.get(p))[:300]}")
    c.check(not differ and len(got) > at_least, f"{what}: {len(got)} nodes, {len(differ)} differ")


def make_zookeeper_data(work):
    """Fills a ZooKeeper in three runs (plain, gzip, snappy snapshots); the last ends by SIGKILL
    with a live client. Returns (ZooKeeper's workdir, the live client, its hosts' Warden port, its
    ephemeral paths, the watch's event list)."""
    zkdir = os.path.join(work, "zk")
    os.makedirs(zkdir)
    warden_port = support.free_port()
    live = events = session_id = None
    for part, method in enumerate(("", "gz", "snappy")):
        flags = [f"-Dzookeeper.snapshot.compression.method={method}"] if method else []
        z = support.start_zookeeper(extra_cfg=ZK_CFG, workdir=zkdir, jvm_flags=flags)
        zk = KazooClient(hosts=z.hosts)
        zk.start(timeout=30)
        zk.add_auth("digest", "user:secret")
        fill(zk, z.port, part)
        if part == 0:
            out = support.run_zkcli(z.hosts, "setquota -n 100 /p0\nsetquota -b 5000000 /p0/deep\n")
            c.check("Exception" not in out, f"zkCli sets quotas ({out.strip()[-200:]})")
        if part == 2:
            # A client that lives on: its hosts are ZooKeeper's address and then Warden's.
            live = KazooClient(hosts=f"{z.hosts},127.0.0.1:{warden_port}", timeout=60, randomize_hosts=False)
            live.start(timeout=30)
            live.create("/live", b"")
            for i in range(3):
                live.create(f"/live/e{i}", b"mine", ephemeral=True)
            live.create("/live/s-", b"", ephemeral=True, sequence=True)
            live.create("/watched", b"before")
            events = []
            live.get("/watched", watch=events.append)
            zk.create("/last", b"written just before the kill")
            session_id = live.client_id[0]
        zk.stop()
        zk.close()
        if part < 2:
            z.stop()
        else:
            z.proc.kill()  # SIGKILL: the log is ended by no one
            z.proc.wait()
    return zkdir, live, session_id, warden_port, events


def round_trip(work):
    zkdir, live, session_id, warden_port, events = make_zookeeper_data(work)
    names = sorted(os.listdir(os.path.join(zkdir, "data", "version-2")))
    c.check(any(n.endswith(".gz") for n in names) and any(n.endswith(".snappy") for n in names)
            and any(re.fullmatch(r"snapshot\.[0-9a-f]+", n) for n in names), f"ZooKeeper wrote all three kinds "
                                                                              f"of snapshot ({names})")
    # As ZooKeeper left it when killed (it is started again on its directory below).
    pristine = os.path.join(work, "pristine")
    shutil.copytree(os.path.join(zkdir, "data"), pristine)
    wdir = os.path.join(work, "warden")
    r = run_import(os.path.join(zkdir, "data"), os.path.join(wdir, "data"))
    c.equal(r.returncode, 0, "the import succeeds")
    print(r.stdout.strip())
    c.check("ZooKeeper's digest agrees" in r.stdout, "and checks ZooKeeper's digest")
    # Warden on the port the live client knows; ZooKeeper again on its own directory, elsewhere.
    with open(os.path.join(wdir, "zoo.cfg"), "w") as f:
        f.write(f"tickTime=2000\ndataDir={wdir}/data\nclientPort={warden_port}\nclientPortAddress=127.0.0.1\n"
                f"admin.enableServer=false\nmaxSessionTimeout=120000\n")
    w = subprocess.Popen([WARDEN, os.path.join(wdir, "zoo.cfg")], stdout=subprocess.PIPE,
                         stderr=open(os.path.join(wdir, "server.log"), "a"), text=True)
    try:
        line = w.stdout.readline()
        c.check("listening on" in line, f"Warden starts on the imported directory ({line.strip()})")
        ok = support.wait_until(lambda: live.connected and live.client_id[0] == session_id, timeout=60)
        c.check(ok, "the live client reconnects to Warden with its ZooKeeper session")
        if ok:
            kids = live.get_children("/live")
            c.check(len(kids) == 4, f"and keeps its ephemerals ({kids})")
            owner = live.exists("/live/e0").ephemeralOwner
            c.equal(owner, session_id, "owned by its session")
        z = support.start_zookeeper(extra_cfg=ZK_CFG, workdir=zkdir)
        try:
            want = tree(z.port)
        finally:
            z.stop()
        got = tree(warden_port)
        compare(got, want, "Warden serves the tree ZooKeeper serves from the same directory")
        c.check(got.get("/last", (None,))[0] == b"written just before the kill", "the log's tail is imported")
        if ok:
            other = KazooClient(hosts=f"127.0.0.1:{warden_port}")
            other.start(timeout=15)
            other.set("/watched", b"after")
            c.check(support.wait_until(lambda: events, timeout=15), f"its watch fires on Warden ({events})")
            other.stop()
            other.close()
    finally:
        live.stop()
        live.close()
        w.terminate()
        w.wait(timeout=30)
    return pristine


def from_each_snapshot(work, src):
    """Import from each older snapshot (newer ones removed) and from the logs alone: the same state."""
    v2 = os.path.join(src, "version-2")
    reference = None
    snaps = sorted((n for n in os.listdir(v2) if n.startswith("snapshot.")),
                   key=lambda n: int(n.split(".")[1], 16), reverse=True)
    kinds = {}
    for n in snaps:
        kinds.setdefault(n.split(".")[2] if n.count(".") == 2 else "plain", n)
    trials = [("newest", None)] + [(k, n) for k, n in kinds.items()] + [("no snapshot", "")]
    for what, keep in trials:
        copy = os.path.join(work, "copy-" + what.replace(" ", "-"))
        shutil.copytree(src, copy + "/zk")
        cv2 = os.path.join(copy, "zk", "version-2")
        if keep is not None:
            z = int(keep.split(".")[1], 16) if keep else -1
            for n in os.listdir(cv2):
                if n.startswith("snapshot.") and (keep == "" or int(n.split(".")[1], 16) >= z and n != keep):
                    os.remove(os.path.join(cv2, n))
        r = run_import(copy + "/zk", copy + "/warden")
        c.equal(r.returncode, 0, f"importing from the {what} snapshot succeeds ({r.stderr.strip()[:300]})")
        dump = snapshot_dump(copy + "/warden")
        dump = re.sub(r"^snapshot at \S+", "snapshot", dump)
        if reference is None:
            reference = dump
        else:
            c.check(dump == reference, f"and gives the same state from the {what} snapshot")
        shutil.rmtree(copy)


def refusals(work, src):
    v2 = os.path.join(src, "version-2")
    logs = sorted((n for n in os.listdir(v2) if n.startswith("log.")), key=lambda n: int(n.split(".")[1], 16))
    snaps = sorted((n for n in os.listdir(v2) if n.startswith("snapshot.")), key=lambda n: int(n.split(".")[1], 16))

    def damaged(what, change, want, refused=True):
        copy = os.path.join(work, "bad")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(src, copy + "/zk")
        change(os.path.join(copy, "zk", "version-2"))
        r = run_import(copy + "/zk", copy + "/warden", expect_ok=not refused)
        text = r.stderr + r.stdout
        if os.environ.get("SHOW"):
            print(what, "=>", text)
        if refused:
            c.check(r.returncode == 1 and re.search(want, text) is not None,
                    f"{what}: refused with a clear line ({text.strip()[:400]!r})")
            c.check(not os.path.exists(copy + "/warden/log"), f"{what}: nothing is written")
        else:
            c.check(r.returncode == 0 and re.search(want, text) is not None, f"{what}: {text.strip()[:400]!r}")
        shutil.rmtree(copy, ignore_errors=True)

    def flip(path, offset):
        with open(path, "r+b") as f:
            f.seek(offset)
            b = f.read(1)
            f.seek(offset)
            f.write(bytes([b[0] ^ 0x5a]))

    newest = snaps[-1]
    newest_zxid = int(newest.split(".")[1], 16)
    # The log that holds the txns after the newest snapshot: the newest starting at or below it.
    needed = [n for n in logs if int(n.split(".")[1], 16) <= newest_zxid + 1][-1]
    damaged("a flipped byte inside a log record",
            lambda d: flip(os.path.join(d, needed), 16 + 12 + 20),
            rf"{needed}: offset 16: a record whose checksum differs")
    damaged("a log with a wrong magic", lambda d: flip(os.path.join(d, needed), 1),
            rf"{needed}: offset 0: not a ZooKeeper transaction log")
    damaged("a log of an unknown version",
            lambda d: open(os.path.join(d, needed), "r+b").write(b"ZKLG\0\0\0\x07"),
            r"unknown transaction log version 7")

    def gap(d):
        # Only the first snapshot, so that every log is replayed; one in the middle gone.
        for n in snaps[1:]:
            os.remove(os.path.join(d, n))
        os.remove(os.path.join(d, logs[len(logs) // 2]))
    damaged(f"a log missing in the middle of {len(logs)}", gap, r"the txns between are in no log")
    def torn_tail(d):
        # A record cut short where the log's zeros begin: its length and part of its bytes.
        path = os.path.join(d, logs[-1])
        with open(path, "r+b") as f:
            at = 16
            while True:
                f.seek(at)
                head = f.read(12)
                if len(head) < 12 or struct.unpack(">qi", head)[1] == 0:
                    break
                at += 12 + struct.unpack(">qi", head)[1] + 1
            f.seek(at)
            f.write(struct.pack(">qi", 12345, 80) + b"\x17" * 30)
    damaged("a last record cut short by a crash", torn_tail, r"note: .*cut short.*left out", refused=False)
    damaged("a garbage acceptedEpoch", lambda d: open(os.path.join(d, "acceptedEpoch"), "w").write("banana\n"),
            r"acceptedEpoch: offset 0: holds \"banana\"")

    def cut(path, keep):
        with open(path, "r+b") as f:
            f.truncate(keep)

    damaged("the newest snapshot cut short (older snapshots and the logs cover it)",
            lambda d: cut(os.path.join(d, newest), 3000),
            rf"passed over .*{re.escape(newest)}", refused=False)

    def only_cut_snapshot(d):
        # The newest snapshot cut short, and the logs before it purged: nothing to import from.
        z = int(newest.split(".")[1], 16)
        for n in os.listdir(d):
            if n.startswith("snapshot.") and n != newest:
                os.remove(os.path.join(d, n))
        keep = max(int(n.split(".")[1], 16) for n in logs if int(n.split(".")[1], 16) <= z + 1)
        for n in logs:
            if int(n.split(".")[1], 16) < keep:
                os.remove(os.path.join(d, n))
        cut(os.path.join(d, newest), 3000)
    damaged("the only snapshot cut short, older logs purged", only_cut_snapshot,
            rf"{re.escape(newest)}: offset \d+.*cut short")
    plain = [n for n in snaps if n.count(".") == 1]
    damaged("a snapshot with a wrong magic (only it, older logs purged)",
            lambda d: [os.remove(os.path.join(d, n)) for n in os.listdir(d) if n.startswith("snapshot.")
                       and n != plain[-1]] + [flip(os.path.join(d, plain[-1]), 0)]
            + [os.remove(os.path.join(d, n)) for n in logs if int(n.split(".")[1], 16) <= 1],
            r"not a ZooKeeper snapshot \(magic")
    damaged("an empty directory", lambda d: [os.remove(os.path.join(d, n)) for n in os.listdir(d)],
            r"no snapshot reads whole")
    r = run_import(os.path.join(work, "absent"), os.path.join(work, "w"), expect_ok=False)
    c.check(r.returncode == 1 and "--from" in r.stderr and "not a directory" in r.stderr,
            f"a --from that is no directory is named ({r.stderr.strip()})")
    r = subprocess.run([WARDEN, "import-zookeeper", "--from"], capture_output=True, text=True, timeout=30)
    c.check(r.returncode == 2 and "usage" in r.stderr, f"a bad command line gets the usage ({r.stderr.strip()})")
    # A store already there is not overwritten.
    target = os.path.join(work, "twice")
    run_import(src, target)
    r = run_import(src, target, expect_ok=False)
    c.check(r.returncode == 1 and "already holds a Warden store" in r.stderr, f"a second import into one "
                                                                                f"directory is refused ({r.stderr.strip()})")


def while_running(work):
    """A ZooKeeper being written to, its logs in a dataLogDir of their own, is imported from what
    it has written whole: a prefix of its acknowledged writes, none torn."""
    zkdir = os.path.join(work, "running")
    os.makedirs(zkdir)
    z = support.start_zookeeper(extra_cfg=ZK_CFG + f"dataLogDir={zkdir}/datalog\n", workdir=zkdir)
    acked = []
    stop = threading.Event()

    def writer():
        zk = KazooClient(hosts=z.hosts)
        zk.start(timeout=30)
        zk.create("/run", b"")
        deadline = time.time() + 60
        for i in range(100000):  # bounded in count and time
            if stop.is_set() or time.time() > deadline:
                break
            zk.create(f"/run/n{i}", b"%d" % i)
            acked.append(i)
        zk.stop()
        zk.close()
    t = threading.Thread(target=writer)
    try:
        t.start()
        support.wait_until(lambda: len(acked) > 500, timeout=30)
        before = len(acked)
        r = run_import(os.path.join(zkdir, "data"), os.path.join(work, "from-running"),
                       log=os.path.join(zkdir, "datalog"))
        after = len(acked)
    finally:
        stop.set()
        t.join()
        z.stop()
    c.equal(r.returncode, 0, f"a ZooKeeper being written to imports (its logs from --from-log) ({r.stderr.strip()})")
    got = sorted(int(m) for m in re.findall(r"^/run/n(\d+) ", snapshot_dump(os.path.join(work, "from-running")),
                                            re.M))
    c.check(got == list(range(len(got))) and before <= len(got) <= after + 1,
            f"with a prefix of its writes: {len(got)} nodes, {before} acknowledged before the import, {after} after")


def start_from_imported(ens):
    """Starts the imported member first and the empty ones once it is in the election (its log
    says it recovered), as docs/operations.md says to: two empty members started before it
    would elect one of themselves and truncate the import away, in ZooKeeper as in Warden."""
    first = ens.members[0]
    first.start()
    ok = support.wait_until(lambda: "recovered up to zxid" in first.log() or not first.alive(), timeout=120)
    c.check(ok and first.alive(), "the imported member loads its state and looks for its ensemble")
    for m in ens.members[1:]:
        m.start()
    ens.wait_serving(ens.members, timeout=120)


def into_ensemble(work, src):
    """Imported into one member, the others started empty: every member serves the state."""
    from ensemble import Ensemble
    ens = Ensemble(3)
    try:
        r = run_import(src, os.path.join(ens.members[0].dir, "data"))
        c.equal(r.returncode, 0, "importing into one member of an ensemble succeeds")
        last = int(re.search(r"state after txn 0x([0-9a-f]+)", r.stdout).group(1), 16)
        start_from_imported(ens)
        trees = []
        for m in ens.members:
            zk = KazooClient(hosts=m.hosts)
            zk.start(timeout=30)
            zk.sync("/")
            zk.stop()
            zk.close()
            # The imported sessions' ephemerals expire on their own clock: left out.
            trees.append({p: v for p, v in tree(m.client_port).items() if not p.startswith("/live")
                          and p != "/"})
        c.check(len(trees[0]) > 3000 and trees[0] == trees[1] == trees[2],
                f"every member serves the imported tree ({[len(t) for t in trees]} nodes)")
        zk = KazooClient(hosts=ens.connect_string)
        zk.start(timeout=30)
        stat = zk.set("/last", b"written on the ensemble")
        c.check(stat.mzxid > last, f"and writes go on above the imported zxid (0x{stat.mzxid:x} > 0x{last:x})")
        zk.stop()
        zk.close()
    finally:
        ens.stop()


def from_zk_ensemble(work):
    """A 3-member ZooKeeper ensemble that changed leaders (epoch 2 and up), stopped: the member
    with the highest zxid is imported with its epochs, and a Warden ensemble started from it
    goes on numbering above them."""
    from ensemble import Ensemble
    zens = support.ZkEnsemble(3, 500, 256)
    try:
        zens.start()
        zk = KazooClient(hosts=",".join(f"127.0.0.1:{m['client_port']}" for m in zens.members))
        zk.start(timeout=60)
        zk.create("/ens", b"")
        for i in range(100):
            zk.create(f"/ens/a{i}", b"%d" % i)
        leader = next(m for m in zens.members if "Mode: leader" in four_letter(m["client_port"], "srvr"))
        leader["proc"].kill()  # a new leader, a new epoch
        leader["proc"].wait()
        zk.retry(zk.create, "/ens/after-failover", b"")
        for i in range(100):
            zk.create(f"/ens/b{i}", b"%d" % i)
        zk.stop()
        zk.close()
    finally:
        zens.stop(keep=True)
    try:
        def last_zxid(m):
            logs = [n for n in os.listdir(os.path.join(m["dir"], "data", "version-2")) if n.startswith("log.")]
            return max(int(n.split(".")[1], 16) for n in logs) if logs else 0
        src = max(zens.members, key=last_zxid)
        v2 = os.path.join(src["dir"], "data", "version-2")
        accepted = int(open(os.path.join(v2, "acceptedEpoch")).read())
        current = int(open(os.path.join(v2, "currentEpoch")).read())
        c.check(current >= 2, f"the ZooKeeper ensemble changed epochs (currentEpoch {current})")
        ens = Ensemble(3)
        try:
            r = run_import(os.path.join(src["dir"], "data"), os.path.join(ens.members[0].dir, "data"))
            c.equal(r.returncode, 0, "a ZooKeeper ensemble member's directory imports")
            if r.returncode != 0:
                return  # counted above (run_import printed why): nothing to start from
            m = re.search(r"state after txn 0x([0-9a-f]+).*epochs (\d+) accepted, (\d+) current", r.stdout)
            c.check(m and (int(m.group(2)), int(m.group(3))) == (accepted, current)
                    and int(m.group(1), 16) >> 32 == current,
                    f"with ZooKeeper's epochs ({accepted}, {current}): {r.stdout.strip()[-200:]}")
            last = int(m.group(1), 16) if m else 0
            start_from_imported(ens)
            zk = KazooClient(hosts=ens.connect_string)
            zk.start(timeout=30)
            kids = zk.get_children("/ens")
            stat = zk.set("/ens", b"on Warden")
            c.check(len(kids) == 201, f"the Warden ensemble serves every node ({len(kids)} under /ens)")
            c.check(stat.mzxid >> 32 > last >> 32, f"and numbers its txns in a later epoch (0x{stat.mzxid:x} after "
                                                    f"0x{last:x})")
            zk.stop()
            zk.close()
        finally:
            ens.stop()
    finally:
        shutil.rmtree(zens.dir, ignore_errors=True)


def older_formats(work):
    """ZooKeeper 3.8 told to write as 3.5 did (no digests, closeSession without its paths): the
    import reads those files too and serves what that ZooKeeper serves."""
    zkdir = os.path.join(work, "older")
    os.makedirs(zkdir)
    flags = ["-Dzookeeper.digest.enabled=false", "-Dzookeeper.closeSessionTxn.enabled=false"]
    z = support.start_zookeeper(extra_cfg=ZK_CFG, workdir=zkdir, jvm_flags=flags)
    zk = KazooClient(hosts=z.hosts)
    zk.start(timeout=30)
    zk.add_auth("digest", "user:secret")
    fill(zk, z.port, 1)
    zk.stop()
    zk.close()
    z.proc.kill()
    z.proc.wait()
    r = run_import(os.path.join(zkdir, "data"), os.path.join(work, "w", "data"))
    c.check(r.returncode == 0 and "digest was not recorded" in r.stdout,
            f"files without digests import ({r.stdout.strip()[-160:]} {r.stderr.strip()})")
    z = support.start_zookeeper(extra_cfg=ZK_CFG, workdir=zkdir, jvm_flags=flags)
    try:
        want = tree(z.port)
    finally:
        z.stop()
    with support.start_warden("", workdir=os.path.join(work, "w")) as w:
        got = tree(w.port)
    compare(got, want, "and Warden serves what that ZooKeeper serves", at_least=1200)


def export(work):
    wdir = os.path.join(work, "warden-src")
    os.makedirs(wdir)
    with support.start_warden("maxSessionTimeout=120000\n", workdir=wdir) as w:
        zk = KazooClient(hosts=w.hosts)
        zk.start(timeout=30)
        zk.add_auth("digest", "user:secret")
        fill(zk, w.port, 0)
        out = support.run_zkcli(w.hosts, "setquota -n 100 /p0\n")
        c.check("Exception" not in out, f"zkCli sets a quota on Warden ({out.strip()[-200:]})")
        live = KazooClient(hosts=w.hosts, timeout=60)
        live.start(timeout=30)
        live.create("/live-eph", b"mine", ephemeral=True)
        want = tree(w.port)
        dest = os.path.join(work, "zk-from-warden")
        r = subprocess.run([WARDEN, "export-zookeeper", "--data-dir", os.path.join(wdir, "data"),
                            "--to", os.path.join(dest, "data")], capture_output=True, text=True, timeout=300)
        c.equal(r.returncode, 0, f"a running Warden exports ({r.stdout.strip()} {r.stderr.strip()})")
        again = subprocess.run([WARDEN, "export-zookeeper", "--data-dir", os.path.join(wdir, "data"),
                                "--to", os.path.join(dest, "data")], capture_output=True, text=True, timeout=300)
        c.check(again.returncode == 1 and "already holds ZooKeeper's files" in again.stderr,
                f"a second export into one directory is refused ({again.stderr.strip()})")
        live.stop()
        live.close()
        zk.stop()
        zk.close()
    # slf4j-simple: ZooKeeper logs at INFO to its output, where the digest check shows.
    z = support.start_zookeeper(extra_cfg=ZK_CFG, workdir=dest, classpath=support.ZK_CLASSPATH + ":" + support.JAVA_LIBS
                                + "/slf4j-simple.jar")
    try:
        got = tree(z.port)
        log = z.log()
    finally:
        z.stop()
    compare(got, want, "ZooKeeper started on the export serves Warden's tree", at_least=1200)
    c.check(got.get("/live-eph", (None, (0,) * 11))[1][7] != 0, "the live session's ephemeral survives in ZooKeeper")
    c.check("digest in the snapshot has digest version of 2" in log and "Digests are not matching" not in log,
            "ZooKeeper reads the snapshot's digest and finds it its own"
            + "".join(l for l in log.splitlines(True) if "igest" in l or "snapshot" in l))
    r = subprocess.run([WARDEN, "export-zookeeper", "--data-dir", os.path.join(work, "nothing"), "--to",
                        os.path.join(work, "x")], capture_output=True, text=True, timeout=60)
    c.check(r.returncode == 1 and r.stderr.startswith("export-zookeeper: "),
            f"exporting a directory without a store is refused ({r.stderr.strip()})")
    r = subprocess.run([WARDEN, "export-zookeeper", "--to"], capture_output=True, text=True, timeout=60)
    c.check(r.returncode == 2 and "usage" in r.stderr, f"a bad command line gets the usage ({r.stderr.strip()})")


def main():
    def everything(work):
        pristine = round_trip(work)
        into_ensemble(work, pristine)
        from_each_snapshot(work, pristine)
        refusals(work, pristine)
    c.run_parts((everything, while_running, older_formats, from_zk_ensemble, export), "warden-migrate-zk-",
                each_fresh=True)


if __name__ == "__main__":
    main()
