"""Many clients at once, bounded so that it runs on every change (issue 26's CI share): 2,000
sessions speaking the protocol from one thread that polls their sockets.

- A connection storm: 2,000 ConnectRequests sent at once; every session is created, each with an
  id of its own, none refused (maxClientCnxns=0, as a fleet's servers are configured).
- Watch fan-out: all 2,000 hold a data watch on one node and a child watch on one parent; one
  setData and one create: every session hears each event exactly once.
- Memory: the storm's idle sessions cost the server little each (no read buffer held idle).
- The server raises its soft descriptor limit to the hard one at start, as the JVM does for
  ZooKeeper.
- A leader's death: WARDEN_SCALE_FAILOVER (1,000) sessions spread over a 3-member ensemble by
  warden-loadgen's failover op, the leader SIGKILLed: every session's connection drops, and every
  one re-attaches on a live member (trying them in turn), none expired, none left out.
- An expiry storm: 1,000 sessions own an ephemeral each, watched by the other 1,000; the owners'
  client dies at once (sockets closed, no closeSession): every ephemeral is deleted and every
  watcher hears NodeDeleted exactly once, within the session timeout plus two ticks and a margin
  for a loaded machine; the watchers' sessions, pinging meanwhile, all live on.
- The bench's fan-out measurement (warden-loadgen --op fanout, and --op fanout-floor, its floor
  with no server) hears every notification exactly once, so its figures count what they say.

Behaviour only, never time, beyond the expiry bound the server itself promises."""
import os
import resource
import selectors
import shutil
import socket
import struct
import subprocess
import tempfile
import time

import support
import zkproto as zp

c = support.Checks("scale")
N = int(os.environ.get("WARDEN_SCALE_SESSIONS", "2000"))
TICK_MS = 500
TIMEOUT_MS = 2000  # the session timeout the clients ask for (min 2 ticks, max 20)
NODE_DELETED, NODE_DATA_CHANGED, NODE_CHILDREN_CHANGED = 2, 3, 4


class Swarm:
    """N sessions, one socket each, driven from this thread through one selector."""

    def __init__(self, port, n):
        self.sel = selectors.DefaultSelector()
        self.socks, self.bufs, self.sessions = [], [], [None] * n
        self.events = [[] for _ in range(n)]
        self.replies = [{} for _ in range(n)]
        self.xids = [0] * n
        self.last_ping = time.time()
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(zp.frame(zp.connect_request(TIMEOUT_MS)))  # sent now: the server sees them all at once
            s.setblocking(False)
            self.socks.append(s)
            self.bufs.append(b"")
            self.sel.register(s, selectors.EVENT_READ, i)

    def pump(self, until, deadline):
        """Reads whatever arrives until until() or the deadline; True when until() held. Every
        session still open pings each third of its timeout meanwhile, as a client's does: on a
        loaded machine a phase may take longer than the timeout."""
        while not until():
            left = deadline - time.time()
            if left <= 0:
                return False
            if time.time() - self.last_ping > TIMEOUT_MS / 3000:
                self.ping(key.data for key in list(self.sel.get_map().values()))
            for key, _ in self.sel.select(timeout=min(left, 0.2)):
                i = key.data
                try:
                    data = self.socks[i].recv(1 << 16)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.sel.unregister(self.socks[i])
                    continue
                self.bufs[i] += data
                self._frames(i)
        return True

    def _frames(self, i):
        buf = self.bufs[i]
        while len(buf) >= 4:
            n = struct.unpack_from(">i", buf)[0]
            if len(buf) < 4 + n:
                break
            f, buf = buf[4:4 + n], buf[4 + n:]
            if self.sessions[i] is None:
                r = zp.Reader(f)
                r.int()
                timeout, sid = r.int(), r.long()
                self.sessions[i] = (sid, timeout)
                continue
            xid, _zxid, err = struct.unpack_from(">iqi", f)
            if xid == -1:
                r = zp.Reader(f[16:])
                self.events[i].append((r.int(), r.int(), r.str()))
            elif xid != -2:  # -2: a ping's answer
                self.replies[i][xid] = err
        self.bufs[i] = buf

    def send(self, i, op, body=b""):
        self.xids[i] += 1
        self.socks[i].setblocking(True)
        self.socks[i].sendall(zp.frame(struct.pack(">ii", self.xids[i], op) + body))
        self.socks[i].setblocking(False)
        return self.xids[i]

    def ping(self, members):
        for i in members:
            if self.sessions[i] is None:
                continue  # still connecting
            try:
                self.socks[i].setblocking(True)
                self.socks[i].sendall(zp.frame(struct.pack(">ii", -2, 11)))
                self.socks[i].setblocking(False)
            except OSError:
                pass  # closed by the server: the reads say so
        self.last_ping = time.time()

    def call_all(self, members, op, body_of, what, timeout=60):
        """Sends one request on each member's session and waits for every reply; their errors."""
        sent = {i: self.send(i, op, body_of(i)) for i in members}
        ok = self.pump(lambda: all(sent[i] in self.replies[i] for i in members), time.time() + timeout)
        c.check(ok, f"every session answered {what}")
        return [self.replies[i].get(sent[i]) for i in members]

    def count(self, members, kind, path):
        return [sum(1 for e in self.events[i] if e[0] == kind and e[2] == path) for i in members]

    def close(self):
        for s in self.socks:
            s.close()
        self.sel.close()


def raise_fd_limit(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, need), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def descriptor_limit_raised():
    """Started with a soft descriptor limit below its hard one, the server raises it to the hard
    one, as the JVM does for ZooKeeper."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard <= 256:
        print(f"the hard descriptor limit is {hard}: nothing to raise")
        return
    work = tempfile.mkdtemp(prefix="warden-scale-")
    proc = subprocess.Popen([os.environ["WARDEN_SERVER"], "--standalone", "--port", "0", "--data-dir", work + "/data"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard)))
    try:
        proc.stdout.readline()
        with open(f"/proc/{proc.pid}/limits") as f:
            line = next(ln for ln in f if ln.startswith("Max open files"))
        got = int(line.split()[3])
        c.equal(got, hard, "a server started with 256 descriptors raises its soft limit to the hard one")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


def leader_killed():
    import signal
    from ensemble import Ensemble
    n = int(os.environ.get("WARDEN_SCALE_FAILOVER", "1000"))
    with Ensemble(3, tick_ms=2000, extra_cfg="maxClientCnxns=0").start() as ens:
        ports = ",".join(str(m.client_port) for m in ens.members)
        lg = subprocess.Popen([os.environ["WARDEN_LOADGEN"], "--ports", ports, "--op", "failover", "--connections",
                               str(n), "--seconds", "120"], stdout=subprocess.PIPE, text=True)
        try:
            ready = lg.stdout.readline()
            c.check(ready.startswith("ready"), f"{n} sessions open on 3 members ({ready.strip()!r})")
            leader = ens.leader()
            leader.kill()
            out, _ = lg.communicate(timeout=300)
        finally:
            if lg.poll() is None:
                lg.kill()
                lg.wait()
        r = dict(kv.split("=", 1) for kv in out.split()) if out.startswith("op=failover") else {}
        got = tuple(int(r.get(k, -1)) for k in ("dropped", "reattached", "expired", "failed"))
        c.equal(got, (n, n, 0, 0), f"the leader killed: (dropped, re-attached, expired, not re-attached) "
                                   f"after {r.get('seconds', '?')} s")


def loadgen_fan_out():
    """warden-loadgen's fan-out ops, as scripts/bench runs them, on a few hundred watchers."""
    def run(args):
        out = subprocess.run([os.environ["WARDEN_LOADGEN"], *args, "--connections", "300", "--rounds", "2"],
                             capture_output=True, text=True, timeout=120)
        kv = dict(x.split("=", 1) for x in out.stdout.split() if "=" in x)
        return out.returncode, kv
    with support.start_warden("maxClientCnxns=0\n") as w:
        for kind in ("data", "child"):
            rc, kv = run(["--port", str(w.port), "--op", "fanout", "--fan-kind", kind])
            c.equal((rc, kv.get("watchers"), kv.get("missing"), kv.get("duplicates")), (0, "300", "0", "0"),
                    f"the bench's fan-out ({kind} watches): every notification heard once")
    rc, kv = run(["--op", "fanout-floor"])
    c.equal((rc, kv.get("watchers"), kv.get("missing"), kv.get("duplicates")), (0, "300", "0", "0"),
            "the bench's fan-out floor (no server): every frame heard once")
    c.check(float(kv.get("last_ms_median", "0")) > 0, "the floor's time is measured")
    out = subprocess.run([os.environ["WARDEN_LOADGEN"], "--op", "idle-floor", "--connections", "300",
                          "--session-timeout", "600", "--seconds", "2"], capture_output=True, text=True, timeout=120)
    kv = dict(x.split("=", 1) for x in out.stdout.split() if "=" in x)
    pings, replies = int(kv.get("pings", "0")), int(kv.get("replies", "-1"))
    c.check(out.returncode == 0 and kv.get("lost") == "0" and pings >= 1000 and pings - 300 <= replies <= pings,
            f"the bench's idle floor (no server) answers the pings it is sent ({replies} of {pings}), none lost")


def main():
    descriptor_limit_raised()
    leader_killed()
    loadgen_fan_out()
    limit = raise_fd_limit(N + 512)
    if limit < N + 100:
        print(f"the descriptor limit is {limit}: {N} sessions do not fit")
        c.check(False, "enough descriptors for the test")
        c.finish()
    everyone = range(N)
    with support.start_warden(f"tickTime={TICK_MS}\nmaxClientCnxns=0\n") as w:
        boss = zp.Session(w.port)
        for path in ("/fan", "/kids", "/eph"):
            boss.call(zp.CREATE, zp.jstr(path) + zp.jbuf(b"") + zp.jacl(zp.OPEN_ACL) + zp.jint(0))
        before = support.rss_kib(w.proc.pid)
        swarm = Swarm(w.port, N)
        try:
            ok = swarm.pump(lambda: all(s is not None for s in swarm.sessions), time.time() + 120)
            ids = {s[0] for s in swarm.sessions if s}
            c.check(ok and len(ids) == N and 0 not in ids, f"a storm of {N} connects: {len(ids)} sessions, "
                                                           "each its own")
            c.check(all(s[1] == TIMEOUT_MS for s in swarm.sessions if s), "each with the timeout it asked for")
            # An idle connection holds no read buffer of its own (it once held 64 KiB: 128 MiB
            # for 2,000); the bound leaves room for a sanitizer's redzones.
            per = (support.rss_kib(w.proc.pid) - before) / N
            c.check(per < 24, f"an idle session costs the server little memory ({per:.1f} KiB each)")

            # watch fan-out, data and children
            errs = swarm.call_all(everyone, zp.GET_DATA, lambda i: zp.jstr("/fan") + zp.jbool(True), "getData")
            c.check(all(e == 0 for e in errs), "every data watch is set")
            errs = swarm.call_all(everyone, zp.GET_CHILDREN, lambda i: zp.jstr("/kids") + zp.jbool(True),
                                  "getChildren")
            c.check(all(e == 0 for e in errs), "every child watch is set")
            boss.call(zp.SET_DATA, zp.jstr("/fan") + zp.jbuf(b"changed") + zp.jint(-1))
            boss.call(zp.CREATE, zp.jstr("/kids/k") + zp.jbuf(b"") + zp.jacl(zp.OPEN_ACL) + zp.jint(0))
            done = lambda: (min(swarm.count(everyone, NODE_DATA_CHANGED, "/fan")) >= 1  # noqa: E731
                            and min(swarm.count(everyone, NODE_CHILDREN_CHANGED, "/kids")) >= 1)
            swarm.pump(done, time.time() + 60)
            swarm.pump(lambda: False, time.time() + 1)  # a duplicate would come now
            data = swarm.count(everyone, NODE_DATA_CHANGED, "/fan")
            kids = swarm.count(everyone, NODE_CHILDREN_CHANGED, "/kids")
            c.check(data == [1] * N, f"one setData: every session hears NodeDataChanged exactly once "
                                     f"(min {min(data)}, max {max(data)})")
            c.check(kids == [1] * N, f"one create: every session hears NodeChildrenChanged exactly once "
                                     f"(min {min(kids)}, max {max(kids)})")

            # an expiry storm: owners die at once, watchers hear every delete once
            owners, watchers = range(N // 2), range(N // 2, N)
            errs = swarm.call_all(owners, zp.CREATE, lambda i: zp.jstr(f"/eph/e{i}") + zp.jbuf(b"")
                                  + zp.jacl(zp.OPEN_ACL) + zp.jint(1), "create ephemeral")
            c.check(all(e == 0 for e in errs), "every owner creates its ephemeral")
            errs = swarm.call_all(watchers, zp.EXISTS, lambda i: zp.jstr(f"/eph/e{i - N // 2}") + zp.jbool(True),
                                  "exists")
            c.check(all(e == 0 for e in errs), "every watcher watches one")
            for i in owners:
                swarm.sel.unregister(swarm.socks[i])
                swarm.socks[i].close()
            died = time.time()
            deleted = lambda: all(any(e[0] == NODE_DELETED for e in swarm.events[i]) for i in watchers)  # noqa: E731
            bound = (TIMEOUT_MS + 2 * TICK_MS) / 1000
            margin = 10  # a loaded CI machine's scheduling; the server's own bound is `bound`
            last_ping = 0
            while not deleted() and time.time() - died < bound + margin:
                if time.time() - last_ping > TIMEOUT_MS / 3000:
                    swarm.ping(watchers)
                    last_ping = time.time()
                swarm.pump(deleted, time.time() + 0.2)
            took = time.time() - died
            heard = [sum(1 for e in swarm.events[i] if e[0] == NODE_DELETED) for i in watchers]
            c.check(heard == [1] * len(watchers), f"every watcher hears NodeDeleted exactly once "
                                                  f"(min {min(heard)}, max {max(heard)}) after {took:.1f} s "
                                                  f"(timeout {TIMEOUT_MS} ms, tick {TICK_MS} ms)")
            err, _, body = boss.call(zp.GET_CHILDREN, zp.jstr("/eph") + zp.jbool(False))
            r = zp.Reader(body)
            c.equal((err, r.vec(r.str) if err == 0 else None), (0, []), "every ephemeral of the dead sessions is gone")
            errs = swarm.call_all(watchers, zp.EXISTS, lambda i: zp.jstr("/fan") + zp.jbool(False), "exists after")
            c.check(all(e == 0 for e in errs), "every watcher's session lives on")
        finally:
            swarm.close()
            boss.close()
        # 2,000 connections ended: once the server is quiet, their memory goes back to the system.
        c.check(support.wait_until(lambda: "gave back free memory after" in w.log(), timeout=20, step=0.2),
                "the heap is trimmed once a thousand connections or more have ended")
        c.check(w.alive(), "the server still runs")
    c.finish()


if __name__ == "__main__":
    main()
