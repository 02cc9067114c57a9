"""The warden-server binary itself: --help, both ways of starting, a clean stop on SIGTERM, and
clear errors for bad command lines and bad configuration files (naming file, line and key)."""
import os
import re
import signal
import socket
import subprocess
import tempfile

from kazoo.client import KazooClient

import support

BIN = os.environ["WARDEN_SERVER"]


def run(args, timeout=20):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout)


def main():
    c = support.Checks("server_cli")
    h = run(["--help"])
    c.equal(h.returncode, 0, "--help exits 0")
    for opt in ("--standalone", "--port", "--data-dir", "--host", "--tick-time"):
        c.check(opt in h.stdout, f"--help lists {opt}")

    for use_file in (True, False):
        w = support.start_warden(use_file=use_file)
        zk = KazooClient(hosts=w.hosts)
        zk.start(timeout=10)
        zk.create("/started", b"x")
        c.equal(zk.get("/started")[0], b"x", f"serves when started {'from a file' if use_file else 'with --standalone'}")
        zk.stop()
        w.proc.send_signal(signal.SIGTERM)
        c.equal(w.proc.wait(timeout=15), 0, "SIGTERM stops the server with exit code 0")
        c.check("stopped" in w.log(), "and a log line says it stopped")
        w.stop()

    # The configuration scripts/run starts with: ZooKeeper's address, so clients' defaults find
    # it. Tests never bind 2181, so it runs here as it is but for the port and the data.
    conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "conf", "zoo.cfg")
    text = open(conf).read()
    c.check(re.search(r"^clientPort=2181$", text, re.M) is not None, "conf/zoo.cfg sets clientPort=2181")
    c.check(re.search(r"^clientPortAddress=127\.0\.0\.1$", text, re.M) is not None,
            "conf/zoo.cfg listens on 127.0.0.1")
    d = tempfile.mkdtemp(prefix="warden-cfg-")
    local = os.path.join(d, "zoo.cfg")
    with open(local, "w") as f:
        f.write(re.sub(r"^dataDir=.*$", f"dataDir={d}/data",
                       re.sub(r"^clientPort=2181$", "clientPort=0", text, flags=re.M), flags=re.M) +
                "admin.enableServer=false\n")  # nor its AdminServer's 8080
    p = subprocess.Popen([BIN, local], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline().strip()
        c.check(line.startswith("warden-server listening on 127.0.0.1:"), f"conf/zoo.cfg starts a server: {line!r}")
        if line.startswith("warden-server listening on"):
            zk = KazooClient(hosts=line.rsplit(" ", 1)[1])
            zk.start(timeout=10)
            c.check(zk.exists("/zookeeper") is not None, "and it serves")
            zk.stop()
            # It no longer runs itself again with glibc.malloc.hugetlb=1: huge pages in the heap
            # made a TLS storm after a write load 1.5x slower (direct compaction at page faults)
            # and gained nothing measurable (docs/architecture.md).
            with open(f"/proc/{p.pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            c.check(not any(b"glibc.malloc.hugetlb" in e for e in env), "the server leaves glibc's heap tunables alone")
    finally:
        p.send_signal(signal.SIGTERM)
        c.equal(p.wait(timeout=15), 0, "and stops cleanly")

    # A client port someone else holds: one line naming the address, the port, the key, the
    # file and what to change, and a non-zero exit.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        taken = os.path.join(d, "taken.cfg")
        with open(taken, "w") as f:
            f.write(f"tickTime=2000\ndataDir={d}/taken\nclientPortAddress=127.0.0.1\nclientPort={port}\nadmin.enableServer=false\n")
        r = run([taken])
        # The log's start line (version, file, role), then the error's one line.
        lines = [line for line in r.stderr.strip().splitlines() if " starting from " not in line]
        c.check(r.returncode != 0, f"a taken port stops the start (exit {r.returncode})")
        c.equal(len(lines), 1, f"with one line besides the start line: {lines}")
        msg = lines[-1] if lines else ""
        for part in (f"{taken}:4", f"127.0.0.1:{port}", f"clientPort={port}", "already in use",
                     f"set clientPort in {taken} to a free port"):
            c.check(part in msg, f"the line names {part!r}: {msg!r}")
        r = run(["--standalone", "--port", str(port), "--data-dir", os.path.join(d, "taken2")])
        c.check(r.returncode != 0 and f"127.0.0.1:{port}" in r.stderr and "pass another --port" in r.stderr,
                f"--port on a taken port says so: {r.stderr.strip()!r}")

    bad_args = [
        ([], "usage"),
        (["--bogus"], "unknown option --bogus"),
        (["--standalone", "--port", "0"], "dataDir is not set"),
        (["--standalone", "--port", "x1", "--data-dir", "/tmp"], "--port needs a port number"),
        (["--standalone", "--port", "99999", "--data-dir", "/tmp"], "--port needs a port number"),
        (["/nonexistent/zoo.cfg"], "/nonexistent/zoo.cfg: cannot be read"),
        (["a.cfg", "b.cfg"], "more than one configuration file"),
        (["--standalone", "--port", "0", "--data-dir", "/tmp", "--host", "not-an-ip"], "is not an IP address"),
    ]
    for args, message in bad_args:
        r = run(args)
        c.check(r.returncode != 0, f"{args}: refused")
        c.check(message in r.stderr, f"{args}: says {message!r} (got {r.stderr.strip()!r})")

    cases = [
        ("dataDir=/tmp\nclientPort=0\nthis is not a setting\n", "bad.cfg:3: expected key=value"),
        ("dataDir=/tmp\nclientPort=zero\n", "bad.cfg:2: clientPort=zero: not a whole number"),
        ("dataDir=/tmp\nclientPort=0\nserver.1=host-only\n", "bad.cfg:3: server.1=host-only"),
        ("\x00\xff\xfe garbage\n\x01=\x02\n", "bad.cfg:1"),
    ]
    for text, message in cases:
        path = os.path.join(d, "bad.cfg")
        with open(path, "w", encoding="latin-1") as f:
            f.write(text)
        r = run([path])
        c.check(r.returncode != 0, f"config {text!r}: the start stops")
        c.check(message in r.stderr, f"config {text!r}: says {message!r} (got {r.stderr.strip()!r})")

    # The server id comes from dataDir/myid: it is the top byte of every session id, and
    # four-letter conf shows it. Without a myid, 1 (as ZooKeeper's standalone server).
    for myid, byte in (("7\n", 7), (None, 1)):
        workdir = tempfile.mkdtemp(prefix="warden-myid-")
        os.makedirs(os.path.join(workdir, "data"))
        if myid is not None:
            with open(os.path.join(workdir, "data", "myid"), "w") as f:
                f.write(myid)
        ids = []
        for _ in range(2):  # and again after a restart on the same directory
            w = support.start_warden("4lw.commands.whitelist=*\n", workdir=workdir)
            zk = KazooClient(hosts=w.hosts)
            zk.start(timeout=10)
            ids.append(zk.client_id[0])
            zk.stop()
            zk.close()
            with socket.create_connection(("127.0.0.1", w.port), timeout=5) as s4:
                s4.sendall(b"conf")
                conf_text = s4.makefile().read()
            w.stop()
        c.equal([i >> 56 for i in ids], [byte, byte], f"myid {myid!r}: session ids carry server id {byte}")
        c.check(ids[1] > ids[0], "a restart hands out higher ids")
        c.check(f"serverId={byte if myid else 0}" in conf_text, f"conf shows serverId ({myid!r})")
    for text, message in (("abc\n", "'abc' is not a server id"), ("", "cannot be read, or is empty"),
                          ("300\n", "'300' is not a server id"), ("\x00\xff\n", "is not a server id")):
        workdir = tempfile.mkdtemp(prefix="warden-myid-")
        os.makedirs(os.path.join(workdir, "data"))
        with open(os.path.join(workdir, "data", "myid"), "w", encoding="latin-1") as f:
            f.write(text)
        cfg = os.path.join(workdir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write(f"dataDir={workdir}/data\nclientPort=0\nadmin.enableServer=false\nclientPortAddress=127.0.0.1\n")
        r = run([cfg])
        c.check(r.returncode != 0 and f"{workdir}/data/myid:1: " in r.stderr and message in r.stderr,
                f"myid {text!r}: the start stops naming the file and the reason ({r.stderr.strip()!r})")

    # An unknown key is a warning, not an error, as in ZooKeeper.
    w = support.start_warden("someFutureKey=1\n")
    c.check(w.alive(), "started despite an unknown key")
    w.proc.send_signal(signal.SIGTERM)
    w.proc.wait(timeout=15)
    c.check("unknown key 'someFutureKey' ignored" in w.log(), "an unknown key is logged as a warning")
    w.stop()
    c.finish()


if __name__ == "__main__":
    main()
