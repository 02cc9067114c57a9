"""Limits, each pushed past and then the server shown healthy: a connection that never sends
its ConnectRequest (closed after zookeeper.nio.sessionlessCnxnTimeout, as ZooKeeper 3.8 closes
it), maxClientCnxns per client address (as ZooKeeper 3.8 enforces it, checked against it), globalOutstandingLimit (reading pauses while
too much is in flight and resumes; nothing is lost or reordered), and clients that read large
replies slowly or not for a while (reading from them pauses: the server's memory stays bounded
and each gets every reply). And a server, or a member of 3, out of descriptors: its ports pause
between tries to accept instead of spinning, and take what waited once descriptors are free."""
import os
import resource
import shutil
import socket
import subprocess
import tempfile
import threading
import time

from kazoo.client import KazooClient

import support
from support import wait_until
from ensemble import Ensemble, four_letter
from zkproto import OPEN_ACL, Session, frame, jacl, jbool, jbuf, jint, jstr, read_frame

CREATE, GET_DATA = 1, 4


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0



def per_address_limit(c, server, name):
    sessions = [Session(server.port) for _ in range(3)]
    c.check(not support.handshake_ok(server.port), f"{name}: a fourth connection from 127.0.0.1 is refused")
    sessions.pop().close()
    c.check(wait_until(lambda: support.handshake_ok(server.port), 10),
            f"{name}: once one closes, a new connection is served")
    for s in sessions:
        c.equal(s.call(3, jstr("/") + jbool(False))[0], 0, f"{name}: the sessions already open go on")
        s.close()


def closed_within(sock, seconds):
    """True once the server closed `sock` (EOF) within `seconds`."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except (socket.timeout, OSError) as e:
        return not isinstance(e, socket.timeout)


def sessionless(c, server, name):
    """A connection that never sends its ConnectRequest is closed after
    zookeeper.nio.sessionlessCnxnTimeout (1000 ms here); one that did is not."""
    silent = socket.create_connection(("127.0.0.1", server.port))
    talking = Session(server.port)
    t0 = time.time()
    c.check(closed_within(silent, 15), f"{name}: a connection that says nothing is closed")
    c.check(time.time() - t0 < 10, f"{name}: within a few ticks of the timeout ({time.time() - t0:.1f} s)")
    c.equal(talking.call(3, jstr("/") + jbool(False))[0], 0, f"{name}: a connection with a session goes on")
    talking.close()
    silent.close()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_descriptors(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def out_of_descriptors(c, w, admin):
    """The server runs out of descriptors while clients keep connecting (its limit lowered to what
    it holds plus a few, by prlimit): the client port and the AdminServer's pause between tries
    instead of spinning, say so once, and take the connections that waited once descriptors are
    free again (ZooKeeper's accept thread pauses 10 ms after such a failure too)."""
    pid = w.proc.pid
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    limit = open_descriptors(pid) + 6
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, hard))
    held = [socket.create_connection(("127.0.0.1", w.port)) for _ in range(10)]
    c.check(wait_until(lambda: open_descriptors(pid) >= limit, 10),
            f"the server's descriptors reach the limit ({open_descriptors(pid)} of {limit})")
    # Completed by the kernel, waiting in the ports' queues: the server cannot take them now.
    waiting = socket.create_connection(("127.0.0.1", admin))
    waiting.sendall(b"GET /commands/ruok HTTP/1.1\r\nHost: warden\r\nConnection: close\r\n\r\n")
    time.sleep(0.5)
    before = cpu_seconds(pid)
    time.sleep(2)
    used = cpu_seconds(pid) - before
    c.check(used < 0.5, f"out of descriptors, the server does not spin ({used:.2f} s of CPU in 2 s)")
    lines = w.log().splitlines()
    client_port = [x for x in lines if "cannot accept a connection: Too many open files" in x and "AdminServer" not in x]
    admin_port = [x for x in lines if "AdminServer: cannot accept a connection: Too many open files" in x]
    c.check(len(client_port) == 1, f"the client port says it cannot accept once, not per try ({len(client_port)})")
    c.check(1 <= len(admin_port) <= 4, f"the AdminServer says so at most once a second ({len(admin_port)} in ~3 s)")
    for s in held:
        s.close()
    waiting.settimeout(10)
    reply = b""
    try:
        while chunk := waiting.recv(4096):
            reply += chunk
    except OSError:
        pass
    waiting.close()
    c.check(reply.startswith(b"HTTP/1.1 200"), f"with descriptors free, the AdminServer answers: {reply[:40]!r}")
    c.check(support.handshake_ok(w.port), "and the client port takes a session")
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))


def member_out_of_descriptors(c):
    """The same on a member of 3 for its election port: no spin, one line a second, and the member
    still follows once descriptors are free."""
    with Ensemble(3) as ens:
        ens.start()
        leader = ens.leader()
        m = next(x for x in ens.members if x is not leader)
        pid = m.proc.pid
        soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        limit = open_descriptors(pid) + 6
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (limit, hard))
        held = [socket.create_connection(("127.0.0.1", m.client_port)) for _ in range(10)]
        c.check(wait_until(lambda: open_descriptors(pid) >= limit, 10), "the member's descriptors reach the limit")
        waiting = socket.create_connection(("127.0.0.1", m.election_port))
        time.sleep(0.5)
        before = cpu_seconds(pid)
        time.sleep(2)
        used = cpu_seconds(pid) - before
        c.check(used < 0.5, f"out of descriptors, the member does not spin ({used:.2f} s of CPU in 2 s)")
        said = m.log().count("cannot accept a peer connection on the election port: Too many open files")
        c.check(1 <= said <= 4, f"the member says so at most once a second ({said} in ~3 s)")
        for x in held + [waiting]:
            x.close()
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
        k = KazooClient(hosts=f"127.0.0.1:{leader.client_port}")
        k.start(timeout=15)
        k.create("/after-descriptors", b"x")
        k.stop()
        k.close()
        k = KazooClient(hosts=f"127.0.0.1:{m.client_port}")
        k.start(timeout=15)
        k.sync("/")
        c.check(k.exists("/after-descriptors") is not None, "the member follows on: it has a write made after")
        k.stop()
        k.close()


def main():
    c = support.Checks("limits")
    member_out_of_descriptors(c)

    admin = support.free_port()
    with support.start_warden(f"admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort={admin}\n") as w:
        out_of_descriptors(c, w, admin)

    # zookeeper.nio.sessionlessCnxnTimeout (ZooKeeper reads zoo.cfg's nio.* as that property).
    cfg = "nio.sessionlessCnxnTimeout=1000\ntickTime=500\n"
    if support.with_reference():
        with support.start_zookeeper(extra_cfg=cfg) as zk:
            sessionless(c, zk, "ZooKeeper")
    with support.start_warden(cfg + "4lw.commands.whitelist=mntr\n") as w:
        sessionless(c, w, "Warden")
        mntr = four_letter(w.port, "mntr")
        c.check("zk_sessionless_connections_expired\t1\n" in mntr,
                f"Warden counts it in sessionless_connections_expired: {mntr[-300:]!r}")
        c.check("no ConnectRequest within 1000 ms" in w.log(), "Warden logs the close")
    work = tempfile.mkdtemp(prefix="warden-limits-")
    for value in ("soon", "0", "-5"):
        path = os.path.join(work, "bad.cfg")
        with open(path, "w") as f:
            f.write(f"dataDir={work}/d\nclientPort=0\nzookeeper.nio.sessionlessCnxnTimeout={value}\n")
        r = subprocess.run([os.environ["WARDEN_SERVER"], path], capture_output=True, text=True, timeout=30)
        c.check(r.returncode == 2 and f"bad.cfg:3: zookeeper.nio.sessionlessCnxnTimeout={value}" in r.stderr,
                f"a bad sessionlessCnxnTimeout ({value}) stops the start naming the line: {r.stderr.strip()!r}")
    shutil.rmtree(work, ignore_errors=True)

    # maxClientCnxns: ZooKeeper 3.8 and Warden alike.
    with support.start_zookeeper(extra_cfg="maxClientCnxns=3\n") as zk:
        per_address_limit(c, zk, "ZooKeeper")
    with support.start_warden("maxClientCnxns=3\n") as w:
        per_address_limit(c, w, "Warden")
        c.check("too many connections from 127.0.0.1: max is 3" in w.log(), "Warden logs the refusal")

    # globalOutstandingLimit: 3000 pipelined creates against a limit of 5.
    with support.start_warden("globalOutstandingLimit=5\n") as w:
        s = Session(w.port)
        n = 3000
        body = [frame(jint(i + 1) + jint(CREATE) + jstr(f"/p{i}") + jbuf(b"v") + jacl(OPEN_ACL) + jint(0))
                for i in range(n)]
        sender = threading.Thread(target=lambda: s.sock.sendall(b"".join(body)))
        sender.start()
        replies = []
        for _ in range(n):
            f = read_frame(s.sock)
            if f is None:
                break
            replies.append((int.from_bytes(f[0:4], "big", signed=True), int.from_bytes(f[12:16], "big", signed=True)))
        sender.join(timeout=60)
        c.equal(len(replies), n, "every pipelined create is answered")
        c.check(replies == [(i + 1, 0) for i in range(n)], "in order, all successful")
        c.check("throttling:" in w.log() and "globalOutstandingLimit=5" in w.log(), "reading paused past the limit")
        zk = KazooClient(hosts=w.hosts)
        zk.start(timeout=10)
        c.equal(len([k for k in zk.get_children("/") if k.startswith("p")]), n, "the tree holds all of them")
        zk.stop()
        s.sock.close()

    # Clients that ask for large replies and read them slowly, or not at all for a while: the
    # server takes no further request from a connection while its replies wait unsent, so its
    # memory stays about a few MiB per connection whatever they asked, and each gets every reply.
    with support.start_warden() as w:
        zk = KazooClient(hosts=w.hosts)
        zk.start(timeout=10)
        value = os.urandom(900_000)
        zk.create("/big", value)
        zk.get("/big")
        before = rss_mib(w.proc.pid)
        clients, asked = 6, 120  # 648 MB of replies asked for, 108 MB a connection
        slow = [Session(w.port) for _ in range(clients)]
        for s in slow:
            s.sock.settimeout(60)
            s.sock.sendall(b"".join(frame(jint(x) + jint(GET_DATA) + jstr("/big") + jbool(False))
                                    for x in range(1, asked + 1)))
        peak = [0.0]
        sampling = [True]

        def sample():
            while sampling[0]:
                peak[0] = max(peak[0], rss_mib(w.proc.pid) - before)
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        time.sleep(1.5)  # nobody reads
        c.equal(zk.get("/big")[0], value, "another client is served while they do not read")
        got = [[] for _ in range(clients)]

        def read_slowly(i):
            sock, buf = slow[i].sock, b""
            try:
                while len(got[i]) < asked:
                    chunk = sock.recv(256 * 1024)
                    if not chunk:
                        return
                    buf += chunk
                    while len(buf) >= 4 and len(buf) >= 4 + int.from_bytes(buf[:4], "big"):
                        n = int.from_bytes(buf[:4], "big")
                        f, buf = buf[4:4 + n], buf[4 + n:]
                        xid = int.from_bytes(f[0:4], "big", signed=True)
                        err = int.from_bytes(f[12:16], "big", signed=True)
                        size = int.from_bytes(f[16:20], "big", signed=True)
                        got[i].append((xid, err, size, f[20:20 + size] == value))
                    time.sleep(0.002)
            except OSError:
                return

        readers = [threading.Thread(target=read_slowly, args=(i,)) for i in range(clients)]
        for t in readers:
            t.start()
        for t in readers:
            t.join(timeout=120)
        sampling[0] = False
        sampler.join()
        for i in range(clients):
            c.check(got[i] == [(x, 0, len(value), True) for x in range(1, asked + 1)],
                    f"slow client {i} gets all {asked} replies, in order and whole ({len(got[i])} came)")
        # Unbounded, the server would hold the 648 MB; held back, a few MiB a connection plus what
        # the allocator keeps (AddressSanitizer's quarantine alone keeps up to 256 MiB freed).
        c.check(peak[0] < 400, f"the server's memory stayed bounded (grew at most {peak[0]:.0f} MiB for "
                               f"{clients * asked * len(value) >> 20} MiB asked)")
        c.check(w.alive(), "the server runs on")
        c.check("wait unread" not in w.log(), "no connection was closed for it")
        zk.stop()
        for s in slow:
            s.sock.close()
    c.finish()


if __name__ == "__main__":
    main()
