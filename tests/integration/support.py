"""Starting and stopping the servers the integration tests talk to.

Warden comes from WARDEN_SERVER (set by CTest); Apache ZooKeeper 3.8 from Debian's package is
the reference. Both listen on loopback only, on ports chosen at run time, and are stopped by
the PID this module started.
"""
import atexit
import concurrent.futures
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
import time

ZK_CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar"
ZKCLI = "/usr/share/zookeeper/bin/zkCli.sh"
JAVA_LIBS = "/usr/share/java"


_ports_given = set()
_port_choice = random.Random()  # its own, so a test seeding `random` does not fix the ports


def fresh_socket(listen=False):
    """A socket bound to a loopback port this process has not been given before (listening,
    if asked). The kernel may hand one port to two probes in a row (a probe closes its socket
    before the server binds the port), and an ensemble's members once got the same port twice
    in CI."""
    for _ in range(1000):
        s = socket.socket()
        if listen:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        if port not in _ports_given:
            _ports_given.add(port)
            if listen:
                s.listen(16)
            return s
        s.close()
    raise RuntimeError("no fresh loopback port in 1000 tries")


def _below_ephemeral_range():
    """The ports from 20000 up to the kernel's ephemeral range, or None when that range starts
    too low to leave room. A port there is never handed to an outgoing connection, so a server
    killed and restarted by a fault test finds its ports still free: a port the kernel chose
    for `bind(0)` is also one it may give any `connect()` meanwhile (CI once saw a restarted
    member fail with "Address already in use" on its quorum port)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return (20000, low) if low - 20000 >= 2000 else None


_CLAIMS = os.path.join(tempfile.gettempdir(), "warden-test-ports")
_claimed = []


def _release_claims():
    for path in _claimed:
        try:
            os.unlink(path)
        except OSError:
            pass


def _claim(port):
    """Reserves `port` against the other test processes on this machine: ctest runs two
    tests at once, each picks ports at random from one span, and a port probed free by both
    went to whichever bound it first (CI saw a member fail with "Address already in use" on
    its election port). A claim is a file named by the port holding its owner's pid; one whose
    owner is gone is taken over. Claims go when this process exits."""
    os.makedirs(_CLAIMS, exist_ok=True)
    path = os.path.join(_CLAIMS, str(port))
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                with open(path) as f:
                    owner = int(f.read().strip() or "0")
                if owner > 0:
                    os.kill(owner, 0)
                    return False  # its owner is alive
            except ProcessLookupError:
                pass
            except (OSError, ValueError):
                return False  # being written, or unreadable: leave it
            try:
                os.unlink(path)
            except OSError:
                return False
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        if not _claimed:
            atexit.register(_release_claims)
        _claimed.append(path)
        return True
    return False


def free_port():
    """A loopback port free now, never given before in this process nor claimed by another
    test process (see `_claim`) and, where the machine allows, outside the ephemeral range
    (see `_below_ephemeral_range`)."""
    span = _below_ephemeral_range()
    if span is not None:
        for _ in range(1000):
            port = _port_choice.randrange(*span)
            if port in _ports_given or not _claim(port):
                continue
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            finally:
                s.close()
            _ports_given.add(port)
            return port
    with fresh_socket() as s:
        return s.getsockname()[1]


def handshake_ok(port):
    """True when the server on `port` answers a ZooKeeper connect request (then closes it)."""
    req = struct.pack(">iqiqi", 0, 0, 30000, 0, 16) + b"\0" * 16 + b"\0"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(struct.pack(">i", len(req)) + req)
            got = b""
            while len(got) < 4 + 36:
                chunk = s.recv(64)
                if not chunk:
                    return False
                got += chunk
            # Close the session we opened, so it does not linger until it expires.
            sid = struct.unpack(">q", got[12:20])[0]
            close = struct.pack(">ii", 1, -11)
            s.sendall(struct.pack(">i", len(close)) + close)
            return sid != 0
    except OSError:
        return False


def wait_until_serving(port, proc, what, timeout=60):
    """Waits for a completed handshake: ZooKeeper opens its port before it serves sessions."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before serving")
        if handshake_ok(port):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not serve sessions on {port} within {timeout}s")


class Server:
    def __init__(self, proc, port, workdir, log_path, keep=False):
        self.proc, self.port, self.workdir, self.log_path, self.keep = proc, port, workdir, log_path, keep

    @property
    def hosts(self):
        return f"127.0.0.1:{self.port}"

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start_warden(extra_cfg="", use_file=True, workdir=None, secure=False):
    """Starts warden-server on port 0 and reads the address it prints. With `workdir`, runs on
    that directory (its data from an earlier run) and leaves it in place when stopped. With
    `secure`, the configuration has a secureClientPort: its port (the second line) is `sport`."""
    binary = os.environ.get("WARDEN_SERVER")
    if not binary:
        raise RuntimeError("WARDEN_SERVER is not set (run through ctest)")
    keep = workdir is not None
    workdir = workdir or tempfile.mkdtemp(prefix="warden-it-")
    log_path = os.path.join(workdir, "server.log")
    if use_file:
        cfg = os.path.join(workdir, "zoo.cfg")
        with open(cfg, "w") as f:
            # No AdminServer unless a test asks (its default port, 8080, is a fixed one).
            f.write(f"tickTime=2000\ndataDir={workdir}/data\nclientPort=0\nclientPortAddress=127.0.0.1\n"
                    f"admin.enableServer=false\n{extra_cfg}")
        args = [binary, cfg]
    else:
        args = [binary, "--standalone", "--port", "0", "--data-dir", workdir + "/data"]
    log = open(log_path, "a")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline()
    m = re.match(r"warden-server listening on 127\.0\.0\.1:(\d+)$", line.strip())
    if not m:
        proc.kill()
        raise RuntimeError(f"warden-server did not announce its address: {line!r}\n{open(log_path).read()}")
    s = Server(proc, int(m.group(1)), workdir, log_path, keep)
    if secure:
        line = proc.stdout.readline()
        m = re.match(r"warden-server listening for TLS on 127\.0\.0\.1:(\d+)$", line.strip())
        if not m:
            s.stop()
            raise RuntimeError(f"warden-server did not announce its TLS port: {line!r}")
        s.sport = int(m.group(1))
    return s


def start_zookeeper(extended_types=True, extra_cfg="", workdir=None, heap_mb=512, jvm_flags=(), classpath=None):
    """Starts Apache ZooKeeper 3.8 standalone on a probed free loopback port. With `workdir`,
    runs on that directory and leaves it in place when stopped. Tests keep the JVM's heap at
    512 MiB; the benchmark gives ZooKeeper its own launcher's default (1000 MiB)."""
    keep = workdir is not None
    workdir = workdir or tempfile.mkdtemp(prefix="zk-ref-")
    port = free_port()
    cfg = os.path.join(workdir, "zoo.cfg")
    with open(cfg, "w") as f:
        f.write(f"tickTime=2000\ndataDir={workdir}/data\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
                f"admin.enableServer=false\n{extra_cfg}")
    log_path = os.path.join(workdir, "zk.log")
    props = (["-Dzookeeper.extendedTypesEnabled=true"] if extended_types else []) + list(jvm_flags)
    proc = subprocess.Popen(["java", f"-Xmx{heap_mb}m", *props, "-cp", classpath or ZK_CLASSPATH,
                             "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg],
                            stdout=open(log_path, "a"), stderr=subprocess.STDOUT)
    wait_until_serving(port, proc, "ZooKeeper")
    return Server(proc, port, workdir, log_path, keep)


def member_files(d, sid, cfg_text):
    """An ensemble member's folder `d`: data/myid holding `sid`, and zoo.cfg with `cfg_text` (its
    path is returned)."""
    os.makedirs(os.path.join(d, "data"))
    with open(os.path.join(d, "data", "myid"), "w") as f:
        f.write(f"{sid}\n")
    cfg = os.path.join(d, "zoo.cfg")
    with open(cfg, "w") as f:
        f.write(cfg_text)
    return cfg


class ZkEnsemble:
    """Apache ZooKeeper 3.8 as `n` QuorumPeerMain processes on loopback (initLimit=10,
    syncLimit=5): the reference for ensemble behaviour and the benchmarks' other side. Members
    are dicts (id, client_port, cfg, dir, proc); each one's dataDir is `dir`/data."""

    def __init__(self, n, tick_ms, heap_mb, jvm_flags=(), extra_cfg="", admin=False, classpath=None):
        """`extra_cfg` ends each zoo.cfg; with reconfigEnabled=true in it, the server lines carry
        their client addresses (ZooKeeper 3.5+'s form, which a reconfig's joining line repeats).
        `admin`: each member's AdminServer on 127.0.0.1 and a free port of its own (its
        `admin_port`; Debian's ZooKeeper needs servlet-api.jar on its class path for it)."""
        self.dir = tempfile.mkdtemp(prefix="zk-ens-")
        self.jvm_flags = list(jvm_flags)
        self.classpath = classpath or (ZK_CLASSPATH + ":" + java_classpath("servlet-api.jar") if admin
                                       else ZK_CLASSPATH)
        self.members = []
        ports = [(free_port(), free_port(), free_port()) for _ in range(n)]
        dynamic = "reconfigEnabled=true" in extra_cfg
        lines = "".join(f"server.{i + 1}=127.0.0.1:{q}:{e}" + (f";127.0.0.1:{c}" if dynamic else "") + "\n"
                        for i, (c, q, e) in enumerate(ports))
        for i, (client, _, _) in enumerate(ports):
            d = os.path.join(self.dir, str(i + 1))
            admin_port = free_port() if admin else None
            admin_cfg = (f"admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort={admin_port}\n"
                         if admin else "admin.enableServer=false\n")
            cfg = member_files(d, i + 1, f"tickTime={tick_ms}\ninitLimit=10\nsyncLimit=5\ndataDir={d}/data\n"
                                         f"clientPort={client}\nclientPortAddress=127.0.0.1\n{admin_cfg}"
                                         f"maxClientCnxns=0\n4lw.commands.whitelist=*\n{extra_cfg}\n{lines}")
            self.members.append(dict(id=i + 1, client_port=client, quorum_port=ports[i][1], election_port=ports[i][2],
                                     cfg=cfg, dir=d, proc=None, heap=heap_mb, admin_port=admin_port))

    def start_member(self, m):
        m["proc"] = subprocess.Popen(["java", f"-Xmx{m['heap']}m", *self.jvm_flags, "-cp", self.classpath,
                                      "org.apache.zookeeper.server.quorum.QuorumPeerMain", m["cfg"]],
                                     stdout=open(os.path.join(m["dir"], "zk.log"), "a"), stderr=subprocess.STDOUT)

    def start(self):
        for m in self.members:
            self.start_member(m)
        for m in self.members:
            wait_until_serving(m["client_port"], m["proc"], f"ZooKeeper {m['id']}", timeout=120)
        return self

    def stop(self, keep=False):
        for m in self.members:
            if m["proc"] and m["proc"].poll() is None:
                m["proc"].terminate()
                m["proc"].wait()
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)


def run_zkcli(hosts, script, timeout=120):
    """Runs a zkCli.sh script (one command a line) against `hosts`; returns what it printed
    (zkCli prints results on stdout and errors on stderr: both count)."""
    r = subprocess.run([ZKCLI, "-server", hosts], input=script, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return r.stdout


def rss_kib(pid):
    """A process's resident memory now, in KiB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


_sanitized = None


def sanitized():
    """True when WARDEN_SERVER is an AddressSanitizer or ThreadSanitizer build (scripts/test's
    second and third passes): such a member runs several times slower, and two tests share the
    machine's two cores."""
    global _sanitized
    if _sanitized is None:
        out = subprocess.run(["ldd", os.environ["WARDEN_SERVER"]], capture_output=True, text=True).stdout
        _sanitized = any(lib in out for lib in ("libtsan", "libasan"))
    return _sanitized


def sync_limit():
    """syncLimit (in ticks) of the tests' ensembles: 5 (1 s at 200 ms), 15 on a sanitized build.
    There a leader held up for more than 1 s (1 MB writes under ThreadSanitizer while another
    test runs) lost its followers and the ensemble elected mid-test, with f1c90d0 as with later
    builds. ZooKeeper's sample configuration allows 5 ticks of 2 s."""
    return 15 if sanitized() else 5


def answer_timeout_s():
    """How long a test waits for one four-letter answer or one request of a probe: 1 s, 3 s on a
    sanitized build (a ThreadSanitizer leader missed 1 s while another test ran)."""
    return 3.0 if sanitized() else 1.0


def with_reference():
    """False when WARDEN_NO_REFERENCE=1 (scripts/test's sanitizer runs): a test then checks
    Warden against its own expectations and leaves out starting ZooKeeper to compare."""
    return os.environ.get("WARDEN_NO_REFERENCE") != "1"


def compared_servers():
    """The servers a comparison runs: ZooKeeper 3.8 and Warden, or Warden alone."""
    return ("ZooKeeper", "Warden") if with_reference() else ("Warden",)


def concurrently(calls):
    """Runs {key: function} at once, each on a thread of its own; {key: what it returned}. For
    independent client runs that each wait out a timeout when refused (a test then waits for the
    longest, not for the sum)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(calls))) as pool:
        futures = {k: pool.submit(f) for k, f in calls.items()}
        return {k: f.result() for k, f in futures.items()}


def zkcli_lines(hosts, script, jvm_flags, keep, env=None):
    """zkCli.sh run with `jvm_flags` (CLIENT_JVMFLAGS: TLS or SASL properties): the lines of its
    output that start with one of `keep`, stripped."""
    env = dict(env or os.environ, CLIENT_JVMFLAGS=" ".join(jvm_flags))
    r = subprocess.run([ZKCLI, "-server", hosts], input=script, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=120, env=env)
    return [line.strip() for line in r.stdout.splitlines() if line.strip().startswith(keep)]


def curator_lines(hosts, jvm_flags, classpath, env=None):
    """CuratorTls (tests/integration/java, compiled into `classpath`) with `jvm_flags`: a node
    created, a mutex taken and released, one line each, or FAILED."""
    r = subprocess.run(["java", "-Xmx128m", *jvm_flags, "-cp", classpath, "CuratorTls", hosts], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120, env=env)
    return [line for line in r.stdout.splitlines() if re.match(r"CREATED|LOCKED|RELEASED|FAILED", line)]


def java_classpath(*jars):
    return ":".join(os.path.join(JAVA_LIBS, j) for j in jars)


def compile_java(workdir, classpath, *sources):
    """Compiles tests/integration/java/SOURCE.java files into `workdir`; returns the class path
    with them first."""
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run(["javac", "-d", workdir, "-cp", classpath, *(os.path.join(here, "java", s) for s in sources)],
                   check=True, timeout=300)
    return workdir + ":" + classpath


def wait_until(cond, timeout=10.0, step=0.02):
    """True once cond() holds, polled every `step` seconds for at most `timeout`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


def run_concurrently(checks, parts, timeout=900):
    """Runs each of `parts` (functions of no arguments) in a thread of its own and waits for all
    (each within `timeout` seconds); an exception in one is a failed check naming it, and the
    others go on."""
    def guarded(part):
        try:
            part()
        except Exception:  # a failure to report, not to lose in a thread
            checks.check(False, f"{part.__name__} raised:\n{traceback.format_exc()}")

    threads = [threading.Thread(target=guarded, args=(p,), name=p.__name__, daemon=True) for p in parts]
    for t in threads:
        t.start()
    deadline = time.time() + timeout
    for t in threads:
        t.join(max(0, deadline - time.time()))
        checks.check(not t.is_alive(), f"{t.name} finished within {timeout} s")


class Checks:
    """Counts checks and prints the closing line CI reads: 'N passed, N failed'."""

    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0
        self._lock = threading.Lock()

    def check(self, cond, what):
        with self._lock:  # run_concurrently's threads check at once
            if cond:
                self.passed += 1
            else:
                self.failed += 1
                print(f"FAILED: {what}", flush=True)

    def equal(self, got, want, what):
        self.check(got == want, f"{what}: got {got!r}, want {want!r}")

    def run_parts(self, parts, prefix, each_fresh=False):
        """Runs each part(work) in a temporary directory (one for all, or a fresh one each with
        `each_fresh`), removed afterwards, then finish()es."""
        work = None
        try:
            for part in parts:
                if work is None or each_fresh:
                    if work:
                        shutil.rmtree(work, ignore_errors=True)
                    work = tempfile.mkdtemp(prefix=prefix)
                print(f"{self.name}: {part.__name__}", flush=True)
                part(work)
        finally:
            if work:
                shutil.rmtree(work, ignore_errors=True)
        self.finish()

    def finish(self):
        print(f"{self.name}: {self.passed} passed, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed or not self.passed else 0)


def admin_port(log_text):
    """The AdminServer's port, from the line Warden logs when it listens."""
    m = re.search(r"AdminServer on 127\.0\.0\.1:(\d+)/", log_text)
    return int(m.group(1)) if m else None


def metrics_port(log_text):
    """The Prometheus endpoint's port, from the line Warden logs when it listens."""
    m = re.search(r"Prometheus metrics on 127\.0\.0\.1:(\d+)/metrics", log_text)
    return int(m.group(1)) if m else None


class Prometheus:
    """Debian's Prometheus scraping `targets` ("host:port" of /metrics) every `interval` seconds,
    on a free loopback port, its data in `work`; stopped (by its PID) on exit."""

    def __init__(self, work, targets, interval=1):
        import json
        self.port = free_port()
        conf = os.path.join(work, "prometheus.yml")
        with open(conf, "w") as f:
            f.write(f"global:\n  scrape_interval: {interval}s\n  evaluation_interval: {interval}s\nscrape_configs:\n"
                    f"  - job_name: warden\n    static_configs:\n      - targets: {json.dumps(targets)}\n")
        self.proc = subprocess.Popen(["prometheus", f"--config.file={conf}", f"--storage.tsdb.path={work}/tsdb",
                                      f"--web.listen-address=127.0.0.1:{self.port}"], stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(work, "prometheus.log"), "w"))

    def query(self, q):
        import json
        import urllib.parse
        import urllib.request
        url = f"http://127.0.0.1:{self.port}/api/v1/query?query={urllib.parse.quote(q)}"
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.load(r)["data"]["result"]
        except OSError:
            return []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
