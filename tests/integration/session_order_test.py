"""A session that mixes reads and writes keeps its own order under load (issue 26, point 6).

Eight sessions, each with 64 requests in flight (90% getData, 10% setData), speak the protocol
from one thread. Each session writes its own node with a counter; every getData of its own node
must return the value of the session's last setData before it (never an older one, never a
later one), every reply must come back in request order, and every setData's version must be
the session's count of writes. A quarter of the reads are of other sessions' nodes, and now and
then a sync comes between (it and all after it wait for the session's writes). Run on a
standalone server and on a 3-member ensemble with the sessions spread over every member (a
follower forwards its writes and answers its reads at their point in the commit order), and on
ZooKeeper 3.8 standalone, the reference.

Behaviour only, bounded in count and time: WARDEN_ORDER_REQUESTS per session (3,000 default)."""
import os
import selectors
import socket
import struct
import time

import support
import zkproto as zp
from ensemble import Ensemble

c = support.Checks("session_order")
SESSIONS, DEPTH = 8, 64
REQUESTS = int(os.environ.get("WARDEN_ORDER_REQUESTS", "3000"))


class Driver:
    """One session per port in `ports` order (wrapping), each kept `DEPTH` requests deep."""

    def __init__(self, ports, seed):
        self.sel = selectors.DefaultSelector()
        self.socks, self.bufs = [], []
        self.state = []
        self.rng = seed
        self.refusals = 0
        for i in range(SESSIONS):
            s = self.connect(ports[i % len(ports)])
            s.setblocking(False)
            self.socks.append(s)
            self.bufs.append(b"")
            self.sel.register(s, selectors.EVENT_READ, i)
            # sent: xid -> (kind, expected value or None); writes: the session's count of writes.
            self.state.append({"xid": 0, "sent": {}, "next_reply": 1, "writes": 0, "issued": 0, "done": 0})
        self.errors = []

    def connect(self, port):
        """A new session on `port`. A member that is not serving closes the connection (a client
        then tries again): a few tries, each counted, over at most 20 s."""
        deadline = time.time() + 20
        while True:
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(zp.frame(zp.connect_request(30000)))
            if zp.read_frame(s) is not None:
                return s
            s.close()
            self.refusals += 1
            print(f"the server on port {port} closed a new session's connection (not serving?)", flush=True)
            if time.time() > deadline:
                raise RuntimeError(f"the server on port {port} refused new sessions for 20 s")
            time.sleep(0.25)

    def next_random(self):
        self.rng = (self.rng * 6364136223846793005 + 1442695040888963407) & ((1 << 64) - 1)
        return self.rng >> 33

    def issue(self, i):
        st = self.state[i]
        out = []
        while st["issued"] - st["done"] < DEPTH and st["issued"] < REQUESTS:
            st["xid"] += 1
            x = st["xid"]
            roll = self.next_random() % 100
            own = f"/order/s{i}"
            if roll < 10:
                st["writes"] += 1
                body = zp.jstr(own) + zp.jbuf(str(st["writes"]).encode()) + zp.jint(-1)
                st["sent"][x] = ("write", st["writes"])
                op = zp.SET_DATA
            elif roll < 12:
                body, op = zp.jstr(own), zp.SYNC
                st["sent"][x] = ("other", None)
            elif roll < 35:
                other = f"/order/s{self.next_random() % SESSIONS}"
                body, op = zp.jstr(other) + zp.jbool(False), zp.GET_DATA
                st["sent"][x] = ("read", st["writes"] if other == own else None)
            else:
                body, op = zp.jstr(own) + zp.jbool(False), zp.GET_DATA
                st["sent"][x] = ("read", st["writes"])
            out.append(zp.frame(struct.pack(">ii", x, op) + body))
            st["issued"] += 1
        if out:
            s = self.socks[i]
            s.setblocking(True)
            s.sendall(b"".join(out))
            s.setblocking(False)

    def on_frame(self, i, f):
        st = self.state[i]
        xid, _zxid, err = struct.unpack_from(">iqi", f)
        if xid < 0:
            return
        if xid != st["next_reply"]:
            self.errors.append(f"session {i}: reply to xid {xid} where {st['next_reply']} was next")
        st["next_reply"] = xid + 1
        kind, want = st["sent"].pop(xid, (None, None))
        st["done"] += 1
        if err != 0:
            self.errors.append(f"session {i}: xid {xid} ({kind}) failed with {err}")
            return
        r = zp.Reader(f[16:])
        if kind == "read":
            data = r.buf()
            version = r.stat()["version"]
            if want is not None and (data != str(want).encode() or version != want):
                self.errors.append(f"session {i}: read xid {xid} saw {data!r} (version {version}), "
                                   f"its own last write before it was {want}")
        elif kind == "write":
            version = r.stat()["version"]
            if version != want:
                self.errors.append(f"session {i}: write xid {xid} made version {version}, expected {want}")

    def run(self, deadline):
        for i in range(SESSIONS):
            self.issue(i)
        while any(st["done"] < REQUESTS for st in self.state) and time.time() < deadline:
            for key, _ in self.sel.select(timeout=0.5):
                i = key.data
                try:
                    data = self.socks[i].recv(1 << 18)
                except BlockingIOError:
                    continue
                if not data:
                    self.errors.append(f"session {i}: the server closed the connection")
                    self.sel.unregister(self.socks[i])
                    self.state[i]["done"] = REQUESTS
                    continue
                buf = self.bufs[i] + data
                while len(buf) >= 4:
                    n = struct.unpack_from(">i", buf)[0]
                    if len(buf) < 4 + n:
                        break
                    self.on_frame(i, buf[4:4 + n])
                    buf = buf[4 + n:]
                self.bufs[i] = buf
                self.issue(i)
        return [st["done"] for st in self.state]

    def close(self):
        for s in self.socks:
            s.close()


def prepare(port):
    s = zp.Session(port)
    s.call(zp.CREATE, zp.jstr("/order") + zp.jbuf(b"") + zp.jacl(zp.OPEN_ACL) + zp.jint(0))
    for i in range(SESSIONS):
        s.call(zp.CREATE, zp.jstr(f"/order/s{i}") + zp.jbuf(b"0") + zp.jacl(zp.OPEN_ACL) + zp.jint(0))
    s.close()


def drive(ports, where, seed):
    d = Driver(ports, seed)
    try:
        done = d.run(time.time() + 180)
    finally:
        d.close()
    c.check(all(n == REQUESTS for n in done), f"{where}: every session had its {REQUESTS} replies ({done})")
    c.check(not d.errors, f"{where}: every reply in order and every read at its session's point "
            f"({len(d.errors)} wrong; first: {d.errors[:3]})")
    return d.refusals


def standalone(_work):
    with support.start_warden() as w:
        prepare(w.port)
        drive([w.port], "standalone", 1)


def zookeeper(_work):
    """The same load on ZooKeeper 3.8, the reference: it keeps a session's order the same way."""
    if not support.with_reference():
        return
    with support.start_zookeeper(extended_types=False, extra_cfg="maxClientCnxns=0\n") as zk:
        prepare(zk.port)
        drive([zk.port], "ZooKeeper 3.8 standalone", 1)


def ensemble(_work):
    with Ensemble(3).start() as ens:
        ports = [m.client_port for m in ens.members]
        prepare(ports[0])
        if drive(ports, "3 members, sessions on each", 2):
            # Not a failure of order, but a member that stopped serving under no fault: show why.
            for m in ens.members:
                print(f"--- server {m.id}, the end of its log:\n{m.log()[-3000:]}", flush=True)


c.run_parts([standalone, ensemble, zookeeper], "warden-order-")
