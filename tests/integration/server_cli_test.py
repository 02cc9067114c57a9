"""The warden-server binary itself: --help, both ways of starting, a clean stop on SIGTERM, and
clear errors for bad command lines and bad configuration files (naming file, line and key)."""
import os
import signal
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

    # The configuration scripts/run starts with.
    conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "conf", "zoo.cfg")
    p = subprocess.Popen([BIN, conf], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline().strip()
        c.check(line.startswith("warden-server listening on 127.0.0.1:"), f"conf/zoo.cfg starts a server: {line!r}")
        if line.startswith("warden-server listening on"):
            zk = KazooClient(hosts=line.rsplit(" ", 1)[1])
            zk.start(timeout=10)
            c.check(zk.exists("/zookeeper") is not None, "and it serves")
            zk.stop()
            # It asked glibc for huge pages by running itself again, under the same PID.
            with open(f"/proc/{p.pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            c.check(any(e.startswith(b"GLIBC_TUNABLES=") and b"glibc.malloc.hugetlb=1" in e for e in env),
                    "the server runs with glibc.malloc.hugetlb=1")
    finally:
        p.send_signal(signal.SIGTERM)
        c.equal(p.wait(timeout=15), 0, "and stops cleanly")

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

    d = tempfile.mkdtemp(prefix="warden-cfg-")
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
