"""The benchmark matrix, Warden and Apache ZooKeeper 3.8 side by side in one run.

Both are standalone on loopback, each writing its transaction log to a temporary directory,
in two modes: "nosync" (forceSync=no on both: the log is written but not fsynced) for every
operation, and "durable" (both defaults: every write group fsynced before its reply) for the
writes. For each cell the same load (warden-loadgen: pipelined, pre-encoded requests) runs
against each server after a warm-up; the tables show throughput, latency percentiles, the
server's CPU time per request (from /proc) and the load generator's own CPU, with ratios.
This is a benchmark, not a test: nothing here passes or fails on timing.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import support  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def loadgen(binary, port, op, args, seconds, extra=()):
    """`port`: one port, or a list (an ensemble: connections spread over its members)."""
    where = ["--ports", ",".join(map(str, port))] if isinstance(port, list) else ["--port", str(port)]
    out = subprocess.run([binary, *where, "--op", op, "--seconds", str(seconds),
                          "--connections", str(args.connections), "--depth", str(args.depth),
                          "--threads", str(args.threads), "--max-ops", str(args.max_ops), *extra],
                         capture_output=True, text=True, timeout=seconds * 10 + 60)
    if out.returncode != 0:
        raise RuntimeError(f"loadgen failed: {out.stderr}")
    return dict(kv.split("=") for kv in out.stdout.split())


def measure(binary, server, op, args, port=None, extra=()):
    port = port or server.port
    loadgen(binary, port, op, args, args.warmup, extra)  # JIT, caches, first allocations
    before = cpu_of(server.proc.pid)
    r = loadgen(binary, port, op, args, args.seconds, extra)
    server_cpu = cpu_of(server.proc.pid) - before
    ops = int(r["ops"])
    return {
        "ops_s": float(r["ops_per_s"]),
        "p50": int(r["p50_us"]), "p99": int(r["p99_us"]), "p999": int(r["p999_us"]),
        "cpu_us": server_cpu / ops * 1e6 if ops else 0.0,
        "client_cpu_us": float(r["client_cpu_s"]) / ops * 1e6 if ops else 0.0,
        "errors": int(r["errors"]),
    }


SERVER_NAMES = {"zk": "ZooKeeper 3.8", "warden": "Warden", "before": "Warden before (--before)"}


def servers(args):
    """The servers each cell runs on: ZooKeeper, this build, and with --before another build."""
    return ("zk", "warden") + (("before",) if args.before else ())


class Binary:
    """Runs the Warden servers started inside it from `path` (--before), WARDEN_SERVER after."""

    def __init__(self, path):
        self.path, self.saved = path, None

    def __enter__(self):
        if self.path:
            self.saved = os.environ["WARDEN_SERVER"]
            os.environ["WARDEN_SERVER"] = self.path

    def __exit__(self, *exc):
        if self.saved:
            os.environ["WARDEN_SERVER"] = self.saved


def ratios(title, ops, results, num, den):
    print(f"\n{title} (throughput: higher is better; p99 and CPU: lower is better)\n")
    print("| op | throughput x | p99 x | server CPU/req x |")
    print("|---|---|---|---|")
    for op in ops:
        z, w = results[(den, op)], results[(num, op)]
        tput = w["ops_s"] / z["ops_s"] if z["ops_s"] else float("nan")
        p99 = w["p99"] / z["p99"] if z["p99"] else float("nan")
        cpu = w["cpu_us"] / z["cpu_us"] if z["cpu_us"] else float("nan")
        print(f"| {op} | {tput:.2f} | {p99:.2f} | {cpu:.2f} |")


def table(title, ops, results):
    print(f"\n### {title}\n")
    print("| op | server | ops/s | p50 us | p99 us | p999 us | server CPU us/req | loadgen CPU us/req | errors |")
    print("|" + "---|" * 9)
    names = [n for n in SERVER_NAMES if any(k[0] == n for k in results)]
    for op in ops:
        for s in names:
            r = results[(s, op)]
            print(f"| {op} | {SERVER_NAMES[s]} | {r['ops_s']:.0f} | {r['p50']} | {r['p99']} | {r['p999']} | "
                  f"{r['cpu_us']:.1f} | {r['client_cpu_us']:.2f} | {r['errors']} |")
    ratios("Warden against ZooKeeper", ops, results, "warden", "zk")
    if "before" in names:
        ratios("Warden against the build before (--before), same run", ops, results, "warden", "before")


def run_mode(args, ops, sync):
    results = {}
    flag = "" if sync else "forceSync=no\n"
    with support.start_zookeeper(extended_types=False, extra_cfg="maxClientCnxns=0\n" + flag,
                                 heap_mb=args.zk_heap_mb) as zk:
        for op in ops:
            results[("zk", op)] = measure(args.loadgen, zk, op, args)
    for name in servers(args)[1:]:
        with Binary(args.before if name == "before" else None), support.start_warden(flag) as w:
            for op in ops:
                results[(name, op)] = measure(args.loadgen, w, op, args)
    return results


def tls_run(args):
    """TLS on the client port, the same certificates for both (RSA 2048, a CA of the run's own):
    reads and writes through ZooKeeper's Netty TLS port and Warden's; Warden's CPU per request
    over TLS against its plaintext figure; args.tls_connections TLS sessions opened at once."""
    import resource
    import tempfile

    import tls_certs
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # both servers inherit it
    certs = tls_certs.make(tempfile.mkdtemp(prefix="bench-tls-"), java_stores=False, ec=args.tls_ec)
    tls_args = ["--tls-ca", f"{certs}/ca.pem", "--tls-cert", f"{certs}/client.crt", "--tls-key", f"{certs}/client.key"]
    cfg = ("maxClientCnxns=0\nforceSync=no\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
           f"ssl.keyStore.location={certs}/server.pem\nssl.trustStore.location={certs}/ca.pem\n")
    ops = ["get", "set"]
    results, storms = {}, {}
    storm_args = argparse.Namespace(**{**vars(args), "connections": args.tls_connections})
    zk_secure = support.free_port()
    zk_cp = support.ZK_CLASSPATH + ":" + support.java_classpath("netty-codec.jar", "netty-resolver.jar")
    with support.start_zookeeper(extended_types=False, extra_cfg=cfg + f"secureClientPort={zk_secure}\n"
                                 "secureClientPortAddress=127.0.0.1\n", heap_mb=args.zk_heap_mb, classpath=zk_cp) as zk:
        for op in ops:
            results[("zk", op)] = measure(args.loadgen, zk, op, args, zk_secure, tls_args)
        if args.tls_connections:
            storms["zk"] = loadgen(args.loadgen, zk_secure, "connect", storm_args, 1, tls_args)
    with support.start_warden(cfg + "secureClientPort=0\nsecureClientPortAddress=127.0.0.1\n", secure=True) as w:
        for op in ops:
            results[("warden", op)] = measure(args.loadgen, w, op, args, w.sport, tls_args)
            results[("warden plaintext", op)] = measure(args.loadgen, w, op, args)
        if args.tls_connections:
            storms["warden"] = loadgen(args.loadgen, w.sport, "connect", storm_args, 1, tls_args)
    key = "ECDSA P-256" if args.tls_ec else "RSA 2048"
    print(f"\n### TLS on the client port (fsync off on both; TLS 1.2, {key}, the same certificates)\n")
    print("| op | server | ops/s | p50 us | p99 us | server CPU us/req | loadgen CPU us/req | errors |")
    print("|" + "---|" * 8)
    for op in ops:
        for s in ("zk", "warden", "warden plaintext"):
            r = results[(s, op)]
            name = {"zk": "ZooKeeper (TLS)", "warden": "Warden (TLS)", "warden plaintext": "Warden (plaintext)"}[s]
            print(f"| {op} | {name} | {r['ops_s']:.0f} | {r['p50']} | {r['p99']} | {r['cpu_us']:.2f} | "
                  f"{r['client_cpu_us']:.2f} | {r['errors']} |")
    for op in ops:
        z, w, p = results[("zk", op)], results[("warden", op)], results[("warden plaintext", op)]
        print(f"\n{op}: Warden/ZooKeeper over TLS x{w['ops_s'] / z['ops_s']:.2f} ops/s; Warden's CPU per request "
              f"over TLS x{w['cpu_us'] / p['cpu_us']:.2f} its plaintext figure" if z["ops_s"] and p["cpu_us"] else "")
    if not args.tls_connections:
        return
    print(f"\n{args.tls_connections} TLS sessions opened at once (TCP, TLS handshake, session): ZooKeeper "
          f"{storms['zk']['seconds']} s ({storms['zk']['established']} established, {storms['zk']['failed']} failed), "
          f"Warden {storms['warden']['seconds']} s ({storms['warden']['established']} established, "
          f"{storms['warden']['failed']} failed): x{float(storms['warden']['seconds']) / float(storms['zk']['seconds']):.2f}; "
          f"loadgen CPU {storms['zk']['client_cpu_s']} s and {storms['warden']['client_cpu_s']} s")


class Observer:
    """What watches a server in production: Debian's Prometheus scraping its /metrics every
    second (Warden only: ZooKeeper's Debian package has no Prometheus provider), and a poller
    asking its AdminServer for monitor every second."""

    def __init__(self, admin_port, metrics_port=None):
        import tempfile
        import threading
        import urllib.request
        self.work = tempfile.mkdtemp(prefix="bench-observed-")
        self.prom = support.Prometheus(self.work, [f"127.0.0.1:{metrics_port}"]) if metrics_port else None
        self.stop = threading.Event()
        self.polls = 0

        def poll():
            while not self.stop.wait(1.0):
                with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/commands/monitor", timeout=5) as r:
                    r.read()
                self.polls += 1
        self.thread = threading.Thread(target=poll, daemon=True)
        self.thread.start()

    def scrapes(self):
        if not self.prom:
            return 0
        r = self.prom.query('count_over_time(up{job="warden"}[1h])')
        return int(float(r[0]["value"][1])) if r else 0

    def close(self):
        import shutil
        self.stop.set()
        self.thread.join()
        if self.prom:
            self.prom.__exit__()
        shutil.rmtree(self.work, ignore_errors=True)


def observed_run(args):
    """Issue 23's cost: throughput with a Prometheus scrape every second and the AdminServer
    polled every second, against the same server in the same run without them; rounds
    alternate (plain, observed), every other round in the other order, so that drift falls on
    both. ZooKeeper's cost of its
    AdminServer being polled is measured the same way, for comparison."""
    import statistics
    import time
    ops = [o for o in args.observed_ops.split(",") if o]
    admin = "admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort={}\n"
    results = {}

    def rounds(server, admin_port, metrics_port, name):
        def alone(op):
            results.setdefault((name, op, False), []).append(measure(args.loadgen, server, op, args)["ops_s"])

        def observed(op):
            obs = Observer(admin_port, metrics_port)
            try:
                time.sleep(2)  # Prometheus up and scraping before the load starts
                before = (obs.scrapes(), obs.polls)
                r = measure(args.loadgen, server, op, args)["ops_s"]
                results.setdefault((name, op, True), []).append(r)
                results.setdefault((name, "watched"), []).append((obs.scrapes() - before[0], obs.polls - before[1]))
            finally:
                obs.close()

        for op in ops:
            # Every other round observed first: with one order, the second cell of a round read
            # lower for both servers (get: Warden 0.75-0.89, ZooKeeper 0.85-0.98 of the first).
            for i in range(args.observed_rounds):
                for step in ((alone, observed) if i % 2 == 0 else (observed, alone)):
                    step(op)

    def cost_per_call(pid, url, calls=50):
        """The server's CPU for one answer to `url` (ms), over `calls` calls on the idle server:
        the cost of being watched without the noise of a throughput cell."""
        import urllib.request
        before = cpu_of(pid)
        for _ in range(calls):
            with urllib.request.urlopen(url, timeout=10) as r:
                r.read()
        return (cpu_of(pid) - before) / calls * 1000

    costs = {}
    zk_admin = support.free_port()
    cp = support.ZK_CLASSPATH + ":" + support.java_classpath("servlet-api.jar")
    with support.start_zookeeper(extended_types=False, extra_cfg="forceSync=no\n" + admin.format(zk_admin),
                                 heap_mb=args.zk_heap_mb, classpath=cp) as zk:
        rounds(zk, zk_admin, None, "zk")
        costs["zk"] = (cost_per_call(zk.proc.pid, f"http://127.0.0.1:{zk_admin}/commands/monitor"), None)
    cfg = ("forceSync=no\n" + admin.format(0) + "metricsProvider.className=org.apache.zookeeper.metrics.prometheus."
           "PrometheusMetricsProvider\nmetricsProvider.httpHost=127.0.0.1\nmetricsProvider.httpPort=0\n")
    with support.start_warden(cfg) as w:
        rounds(w, support.admin_port(w.log()), support.metrics_port(w.log()), "warden")
        costs["warden"] = (cost_per_call(w.proc.pid, f"http://127.0.0.1:{support.admin_port(w.log())}/commands/monitor"),
                           cost_per_call(w.proc.pid, f"http://127.0.0.1:{support.metrics_port(w.log())}/metrics"))
    print(f"\n### Observed: a Prometheus scrape and an AdminServer monitor poll every second (fsync off; "
          f"{args.observed_rounds} rounds of each, alternating; median ops/s)\n")
    print("| op | server | ops/s alone | ops/s observed | observed / alone |")
    print("|---|---|---|---|---|")
    for op in ops:
        for name, label in (("zk", "ZooKeeper 3.8 (AdminServer polled)"), ("warden", "Warden (scraped and polled)")):
            alone = statistics.median(results[(name, op, False)])
            seen = statistics.median(results[(name, op, True)])
            print(f"| {op} | {label} | {alone:.0f} | {seen:.0f} | {seen / alone:.3f} |")
    for name in ("zk", "warden"):
        print(f"{name}: scrapes and polls during each observed cell: {results[(name, 'watched')]}")
    poll, scrape = costs["warden"]
    print(f"\nServer CPU per answer, idle server, 50 calls each: Warden monitor {poll:.2f} ms, /metrics {scrape:.2f} ms "
          f"(one of each a second: {(poll + scrape) / 10:.3f}% of a core); ZooKeeper monitor {costs['zk'][0]:.2f} ms")


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def du_mib(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total / (1 << 20)


def count_snapshots(name, workdir, server):
    if name == "zk":
        d = os.path.join(workdir, "data", "version-2")
        return len([f for f in os.listdir(d) if f.startswith("snapshot.")]) if os.path.isdir(d) else 0
    return server.log().count(" written: ")


def size_run(args):
    """Loads N znodes of 100 bytes (durable, defaults: snapshots every snapCount=100000 txns
    on both), then measures RSS, disk use, the time from process start to the first served
    request after a clean stop (defaults again: the newest snapshot plus the log after it),
    and the p99 of writes with snapshots of that tree running (snapCount=50000) against none
    (snapCount=100000000)."""
    import shutil
    import tempfile
    import time
    out = {}
    for name in ("zk", "warden"):
        workdir = tempfile.mkdtemp(prefix=f"bench-size-{name}-")

        def starter(snap_count=None):
            cfg = f"snapCount={snap_count}\n" if snap_count else ""
            if name == "zk":
                return support.start_zookeeper(extended_types=False, extra_cfg="maxClientCnxns=0\n" + cfg,
                                               workdir=workdir, heap_mb=args.zk_heap_mb)
            # The snapshotting cell measures writes with snapshots of the tree running at
            # ZooKeeper's cadence: Warden's own rule (snapTreePercent) would take fewer.
            return support.start_warden(cfg + ("snapTreePercent=0\n" if snap_count else ""), workdir=workdir)

        try:
            server = starter()
            subprocess.run([args.loadgen, "--port", str(server.port), "--op", "create", "--seconds", "600",
                            "--connections", "16", "--depth", "32", "--max-ops", str(args.znodes),
                            "--value-size", "100"], check=True, capture_output=True, timeout=900)
            time.sleep(2)  # let background work settle before reading memory
            rss = rss_mib(server.proc.pid)
            server.stop()
            disk = du_mib(workdir)
            t0 = time.time()
            server = starter()  # returns once a session handshake succeeded
            restart = time.time() - t0
            server.stop()
            server = starter(100_000_000)
            quiet = loadgen(args.loadgen, server.port, "set", args, args.seconds)
            server.stop()
            server = starter(50_000)
            before = count_snapshots(name, workdir, server)
            busy = loadgen(args.loadgen, server.port, "set", args, args.seconds)
            time.sleep(1)
            snaps = count_snapshots(name, workdir, server) - before
            server.stop()
            out[name] = dict(rss=rss, disk=disk, restart=restart, quiet=quiet, busy=busy, snaps=snaps)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n### {args.znodes} znodes of 100 bytes, durable (defaults on both)\n")
    print("| server | RSS MiB | disk MiB | restart s (start to first served request) |")
    print("|---|---|---|---|")
    for name in ("zk", "warden"):
        r = out[name]
        print(f"| {'ZooKeeper 3.8' if name == 'zk' else 'Warden'} | {r['rss']:.0f} | {r['disk']:.0f} | {r['restart']:.2f} |")
    z, w = out["zk"], out["warden"]
    print(f"\nWarden against ZooKeeper: RSS x{w['rss'] / z['rss']:.2f}, disk x{w['disk'] / z['disk']:.2f}, "
          f"restart x{w['restart'] / z['restart']:.2f} (lower is better)")
    print(f"\n### set on the {args.znodes}-znode tree, without and with snapshots running (snapCount=50000)\n")
    print("| server | ops/s quiet | p99 us quiet | p999 us quiet | ops/s snapshotting | p99 us snapshotting | "
          "p999 us snapshotting | snapshots written |")
    print("|---|---|---|---|---|---|---|---|")
    for name in ("zk", "warden"):
        r = out[name]
        q, b = r["quiet"], r["busy"]
        print(f"| {'ZooKeeper 3.8' if name == 'zk' else 'Warden'} | {float(q['ops_per_s']):.0f} | {q['p99_us']} | "
              f"{q['p999_us']} | {float(b['ops_per_s']):.0f} | {b['p99_us']} | {b['p999_us']} | {r['snaps']} |")


def import_run(args):
    """A ZooKeeper directory of N znodes of 100 bytes (loaded through ZooKeeper, then stopped
    cleanly: its snapshots plus the log after the newest) moved to Warden: the time from the
    import's start to a serving Warden against ZooKeeper's own start on a copy of the same
    directory, and the import's peak memory against Warden's RSS serving the tree. Each is
    measured --import-rounds times on fresh copies; the best of each counts (the machine's noise
    only ever adds)."""
    import shutil
    import tempfile
    import time
    work = tempfile.mkdtemp(prefix="bench-import-")
    zk_starts, imports, starts, peaks, zk_rss, warden_rss = [], [], [], [], 0, 0
    try:
        zkdir = os.path.join(work, "zk")
        os.makedirs(zkdir)
        zk = support.start_zookeeper(extended_types=False, extra_cfg="maxClientCnxns=0\n", workdir=zkdir,
                                     heap_mb=args.zk_heap_mb)
        subprocess.run([args.loadgen, "--port", str(zk.port), "--op", "create", "--seconds", "900",
                        "--connections", "16", "--depth", "32", "--max-ops", str(args.import_znodes),
                        "--value-size", "100"], check=True, capture_output=True, timeout=1200)
        zk.stop()
        source = os.path.join(work, "source")
        shutil.move(os.path.join(zkdir, "data"), source)
        # A process of its own whose only child is the import: its peak RSS is the import's.
        probe = ("import resource, subprocess, sys\n"
                 "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
                 "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
                 "sys.stderr.write(r.stdout + r.stderr)\n")
        for _ in range(args.import_rounds):
            # ZooKeeper's start writes a snapshot into its directory: each start gets a fresh copy.
            shutil.rmtree(os.path.join(zkdir, "data"), ignore_errors=True)
            shutil.copytree(source, os.path.join(zkdir, "data"))
            t0 = time.time()
            zk = support.start_zookeeper(extended_types=False, extra_cfg="maxClientCnxns=0\n", workdir=zkdir,
                                         heap_mb=args.zk_heap_mb)
            zk_starts.append(time.time() - t0)
            zk_rss = rss_mib(zk.proc.pid)
            zk.stop()
            wdir = os.path.join(work, "warden")
            shutil.rmtree(wdir, ignore_errors=True)
            os.makedirs(wdir)
            t0 = time.time()
            r = subprocess.run([sys.executable, "-c", probe, os.environ["WARDEN_SERVER"], "import-zookeeper",
                                "--from", source, "--data-dir", os.path.join(wdir, "data")],
                               capture_output=True, text=True, timeout=1200)
            imports.append(time.time() - t0)
            rc, peak_kib = (int(x) for x in r.stdout.split())
            if rc != 0:
                raise RuntimeError(f"import failed: {r.stderr}")
            peaks.append(peak_kib / 1024)
            t0 = time.time()
            w = support.start_warden("", workdir=wdir)
            starts.append(time.time() - t0)
            time.sleep(2)
            warden_rss = rss_mib(w.proc.pid)
            w.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seq = lambda xs: ", ".join(f"{x:.2f}" for x in xs)  # noqa: E731
    print(f"\n### moving a ZooKeeper directory of {args.import_znodes} znodes of 100 bytes "
          f"(best of {args.import_rounds}; every round in brackets)\n")
    print("| | seconds | memory MiB |")
    print("|---|---|---|")
    print(f"| ZooKeeper 3.8 starting on its directory (to its first served request) | {min(zk_starts):.2f} "
          f"({seq(zk_starts)}) | {zk_rss:.0f} (RSS serving) |")
    print(f"| import-zookeeper | {min(imports):.2f} ({seq(imports)}) | {max(peaks):.0f} (peak RSS) |")
    print(f"| Warden starting on the import (to its first served request) | {min(starts):.2f} ({seq(starts)}) | "
          f"{warden_rss:.0f} (RSS serving) |")
    total = min(imports) + min(starts)
    print(f"\nimport + start against ZooKeeper's start: x{total / min(zk_starts):.2f} (target at most 0.5); "
          f"import peak against Warden serving: x{max(peaks) / warden_rss:.2f} (target at most 1.25)")


class WardenEnsemble:
    """The same shape over tests/integration/ensemble.py (maxClientCnxns=0, as ZkEnsemble)."""

    def __init__(self, n, tick_ms, extra_cfg=""):
        import ensemble
        self.e = ensemble.Ensemble(n, tick_ms=tick_ms, extra_cfg="maxClientCnxns=0\n" + extra_cfg)
        self.members = [dict(id=m.id, client_port=m.client_port, quorum_port=m.quorum_port,
                             election_port=m.election_port, member=m, proc=None) for m in self.e.members]

    def start_member(self, m):
        m["member"].start()
        m["proc"] = m["member"].proc

    def start(self):
        for m in self.members:
            self.start_member(m)
        self.e.wait_serving(self.e.members, timeout=120)
        return self

    def stop(self):
        self.e.stop()


def leader_of(ens):
    import ensemble
    for _ in range(600):
        for m in ens.members:
            if m["proc"].poll() is None and ensemble.mode_of(m["client_port"]) == "leader":
                return m
        import time
        time.sleep(0.05)
    raise RuntimeError("no leader")


def first_write_after(ports, deadline_s=60):
    """Seconds until a new session on one of `ports` gets a create acknowledged."""
    import time
    import zkproto as zp
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline_s:
        for port in ports:
            try:
                s = zp.Session(port, timeout_ms=4000)
                s.sock.settimeout(2)
                r = s.call(zp.CREATE, zp.jstr("/failover-") + zp.jbuf(b"") + zp.jacl(zp.OPEN_ACL) + zp.jint(2))
                s.sock.close()
                if r is not None and r[0] == 0:
                    return time.monotonic() - t0
            except (OSError, RuntimeError, Exception):
                pass
        time.sleep(0.01)
    return float("nan")


def ensemble_run(args, ops):
    """3 members each, durable (fsync on both), connections spread over every member: each op's
    throughput, p99 and CPU per request (all members), each member's RSS, and fail-over (SIGKILL
    of the leader to the first acknowledged write after it)."""
    import signal
    import time
    results, rss, failover = {}, {}, {}
    for name in servers(args):
        with Binary(args.before if name == "before" else None):
            ens = (support.ZkEnsemble(3, args.ensemble_tick_ms, args.zk_heap_mb) if name == "zk"
                   else WardenEnsemble(3, args.ensemble_tick_ms)).start()
        try:
            ports = [m["client_port"] for m in ens.members]
            # Memory with the same tree on both: a fixed number of znodes, then RSS 2 s later.
            subprocess.run([args.loadgen, "--ports", ",".join(map(str, ports)), "--op", "create", "--seconds", "600",
                            "--connections", "16", "--depth", "32", "--max-ops", str(args.ensemble_znodes),
                            "--value-size", "100"], check=True, capture_output=True, timeout=900)
            time.sleep(2)
            rss[name] = [rss_mib(m["proc"].pid) for m in ens.members]
            for op in ops:
                loadgen(args.loadgen, ports, op, args, args.warmup)
                before = sum(cpu_of(m["proc"].pid) for m in ens.members)
                r = loadgen(args.loadgen, ports, op, args, args.seconds)
                cpu = sum(cpu_of(m["proc"].pid) for m in ens.members) - before
                n = int(r["ops"])
                results[(name, op)] = {"ops_s": float(r["ops_per_s"]), "p50": int(r["p50_us"]),
                                       "p99": int(r["p99_us"]), "p999": int(r["p999_us"]),
                                       "cpu_us": cpu / n * 1e6 if n else 0.0,
                                       "client_cpu_us": float(r["client_cpu_s"]) / n * 1e6 if n else 0.0,
                                       "errors": int(r["errors"])}
            times = []
            for _ in range(args.failover_rounds):
                leader = leader_of(ens)
                survivors = [m["client_port"] for m in ens.members if m is not leader]
                leader["proc"].send_signal(signal.SIGKILL)
                leader["proc"].wait()
                times.append(first_write_after(survivors))
                with Binary(args.before if name == "before" else None):
                    ens.start_member(leader)
                support.wait_until_serving(leader["client_port"], leader["proc"], "the restarted leader", timeout=120)
                time.sleep(1)
            failover[name] = times
        finally:
            ens.stop()
    table(f"3-member ensembles, durable on both, {args.connections} sessions spread over the members "
          f"(tickTime={args.ensemble_tick_ms} on both)", ops, results)
    print(f"\n| server | member RSS MiB ({args.ensemble_znodes} znodes of 100 bytes) | fail-over s (each round) "
          "| median |")
    print("|---|---|---|---|")
    med = {}
    for name in servers(args):
        t = sorted(failover[name])
        med[name] = t[len(t) // 2] if t else float("nan")
        print(f"| {SERVER_NAMES[name]} | {', '.join(f'{x:.0f}' for x in rss[name])} | "
              f"{', '.join(f'{x:.3f}' for x in failover[name])} | {med[name]:.3f} |")
    print(f"\nWarden against ZooKeeper: member RSS x{max(rss['warden']) / max(rss['zk']):.3f} (largest member), "
          f"fail-over x{med['warden'] / med['zk']:.2f} (median; lower is better)")
    if args.before:
        print(f"Warden against the build before: member RSS x{max(rss['warden']) / max(rss['before']):.3f}, "
              f"fail-over x{med['warden'] / med['before']:.2f}")


class Writers:
    """`n` threads, each a session doing one 100-byte setData of its own node at a time, on the
    members' client ports in turn (a lost connection: a new session on the next port); the time
    of every acknowledged write is kept, for the gaps between them."""

    def __init__(self, ports, n):
        import threading
        self.ports, self.acks, self.errors = list(ports), [], 0
        self.stop_flag = threading.Event()
        setup = self.session(0)
        import zkproto as zp
        for i in range(n):
            setup.call(zp.CREATE, zp.jstr(f"/w{i}") + zp.jbuf(b"") + zp.jacl(zp.OPEN_ACL) + zp.jint(0))
        setup.sock.close()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(n)]
        for t in self.threads:
            t.start()

    def session(self, i):
        import zkproto as zp
        s = zp.Session(self.ports[i % len(self.ports)], timeout_ms=10000)
        s.sock.settimeout(10)
        return s

    def run(self, i):
        import time
        import zkproto as zp
        body = zp.jstr(f"/w{i}") + zp.jbuf(b"x" * 100) + zp.jint(-1)
        s, turn = None, i
        while not self.stop_flag.is_set():
            try:
                if s is None:
                    s = self.session(turn)
                r = s.call(zp.SET_DATA, body)
                if r is None:
                    raise OSError("closed")
                if r[0] == 0:
                    self.acks.append(time.monotonic())
                else:
                    self.errors += 1
            except Exception:  # any lost connection or refused session: the next member
                if s is not None:
                    s.sock.close()
                s, turn = None, turn + 1
                time.sleep(0.005)
        if s is not None:
            s.sock.close()

    def longest_gap(self, t0, t1):
        """The longest time without an acknowledged write that overlaps [t0, t1]."""
        acks = sorted(self.acks)
        best = 0.0
        for a, b in zip(acks, acks[1:]):
            if b >= t0 and a <= t1:
                best = max(best, b - a)
        return best

    def close(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(timeout=30)


def reconfig_run(args):
    """Issue 24, point 7: 3-member ensembles with reconfigEnabled=true and skipACL=yes on both,
    under --reconfig-writers sessions of synchronous setData: how long a reconfig takes to commit
    (a follower removed, then added back; kazoo's reconfig on a follower, from sending it to its
    reply) and the longest gap in acknowledged writes while the leader is removed (then added
    back). Correctness: tests/integration/reconfig_test.py and fault_test.py."""
    import statistics
    import time
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException
    cfg = "reconfigEnabled=true\nskipACL=yes\n"
    results = {}

    def line(m):
        return (f"server.{m['id']}=127.0.0.1:{m['quorum_port']}:{m['election_port']}:participant;"
                f"127.0.0.1:{m['client_port']}")

    refused = {"zk": 0, "warden": 0}

    def timed(name, k, want, **change):
        """Seconds the reconfig took; a refused one (say NewConfigNoQuorum while the member syncs)
        is counted and tried again, for at most 60 s, and only the one that committed is timed.
        The configuration it answers must name the members `want`."""
        deadline = time.monotonic() + 60
        while True:
            t = time.monotonic()
            try:
                data, _ = k.reconfig(joining=change.get("joining"), leaving=change.get("leaving"), new_members=None)
                took = time.monotonic() - t
                got = sorted(int(x.split("=")[0][len("server."):]) for x in data.decode().splitlines()
                             if x.startswith("server."))
                if got != sorted(want):
                    raise RuntimeError(f"{name}: the reconfig {change} answered members {got}, not {sorted(want)}")
                return took
            except KazooException:
                refused[name] += 1
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    for name in ("zk", "warden"):
        ens = (support.ZkEnsemble(3, args.ensemble_tick_ms, args.zk_heap_mb, extra_cfg=cfg) if name == "zk"
               else WardenEnsemble(3, args.ensemble_tick_ms, cfg)).start()
        writers = None
        try:
            writers = Writers([m["client_port"] for m in ens.members], args.reconfig_writers)
            time.sleep(args.warmup)
            commits, gaps = [], []
            for _ in range(args.reconfig_rounds):
                leader = leader_of(ens)
                follower = next(m for m in ens.members if m is not leader)
                other = next(m for m in ens.members if m is not leader and m is not follower)
                k = KazooClient(hosts=f"127.0.0.1:{other['client_port']}", timeout=10)
                k.start(timeout=30)
                ids = [m["id"] for m in ens.members]
                commits.append(timed(name, k, [i for i in ids if i != follower["id"]], leaving=str(follower["id"])))
                time.sleep(0.5)
                commits.append(timed(name, k, ids, joining=line(follower)))
                time.sleep(1)
                # The leader removed: writes stop until the others lead on.
                before = len(writers.acks)
                t0 = time.monotonic()
                timed(name, k, [i for i in ids if i != leader["id"]], leaving=str(leader["id"]))
                t1 = time.monotonic()
                while time.monotonic() - t1 < 30 and not (
                        len(writers.acks) > before and writers.acks[-1] > t1 + 1):
                    time.sleep(0.05)
                gaps.append(writers.longest_gap(t0, time.monotonic()))
                timed(name, k, ids, joining=line(leader))
                k.stop()
                k.close()
                time.sleep(1)
            results[name] = dict(commits=commits, gaps=gaps, writes=len(writers.acks), errors=writers.errors,
                                 refused=refused[name])
        finally:
            if writers:
                writers.close()
            ens.stop()
    print(f"\n### Reconfiguration under write load: 3 members, reconfigEnabled and skipACL on both, "
          f"{args.reconfig_writers} sessions of synchronous setData, tickTime={args.ensemble_tick_ms}\n")
    print("| server | reconfig commit s (each: remove a follower, add it back) | median | "
          "longest write gap s while the leader is removed (each round) | median | writes acknowledged | "
          "reconfigs refused and tried again |")
    print("|---|---|---|---|---|---|---|")
    med = {}
    for name in ("zk", "warden"):
        r = results[name]
        med[name] = (statistics.median(r["commits"]), statistics.median(r["gaps"]))
        print(f"| {'ZooKeeper 3.8' if name == 'zk' else 'Warden'} | {', '.join(f'{x:.3f}' for x in r['commits'])} | "
              f"{med[name][0]:.3f} | {', '.join(f'{x:.3f}' for x in r['gaps'])} | {med[name][1]:.3f} | "
              f"{r['writes']} ({r['errors']} refused) | {r['refused']} |")
    print(f"\nreconfig, Warden against ZooKeeper: commit time x{med['warden'][0] / med['zk'][0]:.2f}, "
          f"longest write gap while the leader is removed x{med['warden'][1] / med['zk'][1]:.2f} "
          "(medians; target at most 0.5 each)")


def session_mix_run(args):
    """Issue 26, point 6: sessions that mix reads and writes (90% getData, 10% setData), each with
    many requests in flight, standalone (fsync off, then durable) and on 3-member ensembles
    (durable): ZooKeeper and Warden in the same run. Every read is answered at its session's
    point in the apply order (tests/integration/session_order_test.py checks the values)."""
    import copy
    a = copy.copy(args)
    a.connections, a.depth = args.mix_sessions, args.mix_depth
    results = {}
    for sync in (False, True):
        r = run_mode(a, ["mix"], sync)
        results[("zk", "standalone, " + ("durable" if sync else "forceSync=no"))] = r[("zk", "mix")]
        results[("warden", "standalone, " + ("durable" if sync else "forceSync=no"))] = r[("warden", "mix")]
    for name in ("zk", "warden"):
        ens = (support.ZkEnsemble(3, args.ensemble_tick_ms, args.zk_heap_mb) if name == "zk"
               else WardenEnsemble(3, args.ensemble_tick_ms)).start()
        try:
            ports = [m["client_port"] for m in ens.members]
            loadgen(a.loadgen, ports, "mix", a, a.warmup)
            before = sum(cpu_of(m["proc"].pid) for m in ens.members)
            r = loadgen(a.loadgen, ports, "mix", a, a.seconds)
            cpu = sum(cpu_of(m["proc"].pid) for m in ens.members) - before
            n = int(r["ops"])
            results[(name, "3 members, durable")] = {
                "ops_s": float(r["ops_per_s"]), "p50": int(r["p50_us"]), "p99": int(r["p99_us"]),
                "p999": int(r["p999_us"]), "cpu_us": cpu / n * 1e6 if n else 0.0,
                "client_cpu_us": float(r["client_cpu_s"]) / n * 1e6 if n else 0.0, "errors": int(r["errors"])}
        finally:
            ens.stop()
    cells = ["standalone, forceSync=no", "standalone, durable", "3 members, durable"]
    table(f"Sessions mixing reads and writes: {a.connections} sessions x {a.depth} in flight, "
          "90% getData / 10% setData (the op column names the setting)", cells, results)
    worst = min(results[("warden", x)]["ops_s"] / results[("zk", x)]["ops_s"] for x in cells)
    print(f"\nmixed sessions, Warden against ZooKeeper: lowest throughput ratio x{worst:.2f} (target at least 5)")


# ZooKeeper keeps its last 500 committed txns in memory (zookeeper.commitLogCount) for syncs:
# 500 MB of 1 MB setData, and at its default 1000 MiB heap it dies of OutOfMemoryError within
# seconds of the 1 MB setData cell. The large-reads run gives it this much heap instead.
LARGE_ZK_HEAP_MB = 4000


def large_run(args):
    """Issue 26, point 4: large reads and wide nodes on one standalone server, forceSync=no on
    both, jute.maxbuffer raised to --large-max-buffer on both servers and the load generator:
    getChildren of one node with --wide-children children, setData and getData of 1 MB values,
    multi of --multi-ops setData. Correctness: tests/integration/large_test.py."""
    import copy
    mb = args.large_max_buffer
    cells = [("children", f"getChildren of {args.wide_children:,} children", 4, 2, 2_000_000, ["--prefix", "/wide"]),
             ("set", "setData of 1 MB", 8, 4, 3_000, ["--value-size", "1000000", "--prefix", "/mb"]),
             ("get", "getData of 1 MB", 8, 4, 2_000_000, ["--value-size", "1000000", "--prefix", "/mb"]),
             ("multi", f"multi of {args.multi_ops} setData", 8, 4, 20_000,
              ["--multi-ops", str(args.multi_ops), "--prefix", "/multi"])]
    results = {}
    fill = ["--op", "create", "--connections", "1", "--depth", "64", "--seconds", "900", "--prefix", "/wide",
            "--max-ops", str(args.wide_children), "--value-size", "10"]
    for name in ("zk", "warden"):
        server = (support.start_zookeeper(extended_types=False, heap_mb=max(args.zk_heap_mb, LARGE_ZK_HEAP_MB),
                                          extra_cfg="maxClientCnxns=0\nforceSync=no\n",
                                          jvm_flags=[f"-Djute.maxbuffer={mb}"]) if name == "zk"
                  else support.start_warden(f"forceSync=no\njute.maxbuffer={mb}\n"))
        with server:
            subprocess.run([args.loadgen, "--port", str(server.port), *fill], check=True, capture_output=True,
                           timeout=1200)
            for op, label, conns, depth, max_ops, extra in cells:
                a = copy.copy(args)
                a.connections, a.depth, a.max_ops = conns, depth, max_ops
                results[(name, label)] = measure(args.loadgen, server, op, a,
                                                 extra=["--max-buffer", str(mb), *extra])
            results[(name, "rss")] = rss_mib(server.proc.pid)
    labels = [c[1] for c in cells]
    table(f"Large reads and wide nodes, standalone, forceSync=no, jute.maxbuffer={mb} on both; "
          "sessions x in flight: 4 x 2 for getChildren, 8 x 4 for the others", labels, results)
    print(f"\nRSS at the end (MiB): ZooKeeper {results[('zk', 'rss')]:.0f} (its heap limit raised to "
          f"{max(args.zk_heap_mb, LARGE_ZK_HEAP_MB)} MiB: at 1000 it dies of OutOfMemoryError in the 1 MB setData "
          f"cell), Warden {results[('warden', 'rss')]:.0f}")


def fanout_run(args):
    """Issue 26, point 1: N sessions each holding a data watch on one node (then a child watch
    on one parent), one change: the time from sending the write to the last notification, and
    the notifications' p50/p99, median of --fanout-rounds rounds; durable (defaults) on both,
    maxClientCnxns=0, a fresh server for each N (a session left behind would weigh on the next)."""
    counts = [int(x) for x in args.fanout_watchers.split(",") if x]
    # Each process (server, loadgen) holds a descriptor per watcher: the limit is raised for this
    # process and what it starts (root may raise the hard limit too), or the larger counts skipped.
    limit = raise_descriptor_limit(max(counts) + 5000)
    if limit < max(counts) + 5000:
        print(f"\nfan-out: the descriptor limit is {limit} and cannot be raised; counts above {limit - 5000} skipped")
        counts = [n for n in counts if n + 5000 <= limit]
    rows = {}
    for n in counts:
        for name in ("zk", "warden"):
            starter = ((lambda: support.start_zookeeper(extended_types=False, extra_cfg="maxClientCnxns=0\n",
                                                        heap_mb=args.zk_heap_mb))
                       if name == "zk" else (lambda: support.start_warden("maxClientCnxns=0\n")))
            with starter() as server:
                for kind in ("data", "child"):
                    out = subprocess.run([args.loadgen, "--port", str(server.port), "--op", "fanout", "--connections",
                                          str(n), "--rounds", str(args.fanout_rounds), "--fan-kind", kind],
                                         capture_output=True, text=True, timeout=900)
                    if out.returncode != 0 and "missing" not in out.stdout:
                        raise RuntimeError(f"fanout loadgen failed: {out.stderr}")
                    rows[(n, kind, name)] = dict(kv.split("=", 1) for kv in out.stdout.split())
        # The machine's floor: the same frames to n loopback sockets from as many threads as
        # Warden's fan-out uses (its FanOutSender, no server around it), heard the same way.
        out = subprocess.run([args.loadgen, "--op", "fanout-floor", "--connections", str(n), "--rounds",
                              str(args.fanout_rounds)],
                             capture_output=True, text=True, timeout=900)
        if out.returncode != 0:
            raise RuntimeError(f"fanout-floor loadgen failed: {out.stderr}")
        rows[(n, "data", "floor")] = dict(kv.split("=", 1) for kv in out.stdout.split())
    threads = rows[(counts[0], "data", "floor")]["threads"] if counts else "?"
    names = {"zk": "ZooKeeper 3.8", "warden": "Warden", "floor": f"no server: a bare sender, {threads} thread(s)"}
    print(f"\n### Watch fan-out: one change, N watchers (durable on both, median of {args.fanout_rounds} rounds)\n")
    print("| watchers | watch | server | first / last notification ms | p50 us | p99 us | per watcher us | "
          "missing | duplicates | loadgen CPU s (all rounds) |")
    print("|" + "---|" * 10)
    for n in counts:
        for kind in ("data", "child"):
            for name in ("zk", "warden", "floor"):
                if (n, kind, name) not in rows:
                    continue
                r = rows[(n, kind, name)]
                print(f"| {n} | {kind} | {names[name]} | "
                      f"{float(r['first_ms_median']):.1f} / {float(r['last_ms_median']):.1f} | {r['p50_us']} | "
                      f"{r['p99_us']} | "
                      f"{float(r['per_watcher_us']):.2f} | {r['missing']} | {r['duplicates']} | {r['client_cpu_s']} |")
    print("\n| watchers | watch | last notification x | p99 x | the bare sender's last notification x |")
    print("|---|---|---|---|---|")
    for n in counts:
        floor = float(rows[(n, "data", "floor")]["last_ms_median"])
        for kind in ("data", "child"):
            z, w = rows[(n, kind, "zk")], rows[(n, kind, "warden")]
            print(f"| {n} | {kind} | {float(w['last_ms_median']) / float(z['last_ms_median']):.2f} | "
                  f"{int(w['p99_us']) / max(1, int(z['p99_us'])):.2f} | {floor / float(z['last_ms_median']):.2f} |")
    print("\n(x: against ZooKeeper's figure in the same run. The bare sender is this machine's floor for the part: "
          "no server, only the notifications' send(2) calls on loopback, whose kernel work includes the receiver's "
          "side, and the same reader.)")


def raise_descriptor_limit(need):
    """Raises this process's descriptor limit (inherited by the servers and loadgens it starts)
    to `need` where it may; returns the limit in force."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        if soft < need:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, max(hard, need)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def idle_run(args):
    """Issue 26, point 3: --idle-sessions sessions (timeout --idle-timeout-ms, tickTime 2000,
    durable defaults) each holding an ephemeral and pinging every third of its timeout, spread
    evenly: the server's CPU over --idle-seconds and its RSS, against ZooKeeper's. Then the
    --idle-vanish of them in one loadgen process die at once (SIGKILL: their connections close,
    their sessions expire): the time from the kill to the last NodeDeleted on a session holding
    an exists watch on each of their ephemerals (target: the timeout plus two ticks), and the
    p99 of a getData load (4 sessions x 4) meanwhile against its quiet p99 (target at most 2x).
    The session count is bounded by this process's descriptor limit (one per connection in the
    server). Correctness of expiry at scale: it_scale."""
    import signal
    import time
    limit = raise_descriptor_limit(args.idle_sessions + 1000)
    n = min(args.idle_sessions, limit - 1000)
    vanish = min(args.idle_vanish, n)
    tick = 2000
    rows = {}

    def ready(proc, what):
        line = proc.stdout.readline()
        if not line.startswith("ready"):
            proc.kill()
            raise RuntimeError(f"{what} loadgen did not get ready ({line!r})")

    for name in ("zk", "warden"):
        cfg = f"maxClientCnxns=0\ntickTime={tick}\n"
        server = (support.start_zookeeper(extended_types=False, extra_cfg=cfg, heap_mb=args.zk_heap_mb)
                  if name == "zk" else support.start_warden(cfg))
        with server:
            fresh = rss_mib(server.proc.pid)
            common = [args.loadgen, "--port", str(server.port), "--op", "idle", "--prefix", "/idle",
                      "--session-timeout", str(args.idle_timeout_ms), "--seconds", "3600"]
            dying = subprocess.Popen([*common, "--connections", str(vanish)], stdout=subprocess.PIPE, text=True)
            ready(dying, "the vanishing sessions'")
            staying = None
            if n > vanish:
                staying = subprocess.Popen([*common, "--connections", str(n - vanish), "--index-from", str(vanish)],
                                           stdout=subprocess.PIPE, text=True)
                ready(staying, "the staying sessions'")
            time.sleep(args.idle_timeout_ms / 1000)  # every session pinged at least twice
            cpu0, t0 = cpu_of(server.proc.pid), time.monotonic()
            time.sleep(args.idle_seconds)
            cpu = (cpu_of(server.proc.pid) - cpu0) / (time.monotonic() - t0)
            rss = rss_mib(server.proc.pid)
            watcher = subprocess.Popen([args.loadgen, "--port", str(server.port), "--op", "watch-gone", "--prefix",
                                        "/idle", "--connections", str(vanish), "--seconds", "300"],
                                       stdout=subprocess.PIPE, text=True)
            ready(watcher, "the watcher")
            get = [args.loadgen, "--port", str(server.port), "--op", "get", "--connections", "4", "--depth", "4",
                   "--prefix", "/idle-load", "--max-ops", "100000000"]
            quiet = dict(kv.split("=") for kv in subprocess.run(
                [*get, "--seconds", str(args.seconds)], check=True, capture_output=True, text=True,
                timeout=600).stdout.split())
            busy = subprocess.Popen([*get, "--seconds", "600"], stdout=subprocess.PIPE, text=True)
            time.sleep(1)
            killed = time.monotonic()
            dying.kill()
            dying.wait()
            gone = dict(kv.split("=") for kv in watcher.communicate(timeout=400)[0].split() if "=" in kv)
            busy.send_signal(signal.SIGTERM)
            during = dict(kv.split("=") for kv in busy.communicate(timeout=120)[0].split())
            if staying:
                staying.send_signal(signal.SIGTERM)
                staying.communicate(timeout=120)
            rows[name] = dict(fresh=fresh, cpu=cpu, rss=rss, deleted=int(gone["deleted"]),
                              existing=int(gone["existing"]), duplicates=int(gone["duplicates"]),
                              last=float(gone["last_s"]) - killed if float(gone["last_s"]) else float("nan"),
                              first=float(gone["first_s"]) - killed if float(gone["first_s"]) else float("nan"),
                              quiet=int(quiet["p99_us"]), during=int(during["p99_us"]))
    # The machine's floor: the same pings answered by a bare responder (one receive and one
    # send per ping, nothing else), its CPU over the same seconds.
    out = subprocess.run([args.loadgen, "--op", "idle-floor", "--connections", str(n), "--session-timeout",
                          str(args.idle_timeout_ms), "--seconds", str(args.idle_seconds)],
                         capture_output=True, text=True, timeout=args.idle_seconds + 600)
    if out.returncode != 0:
        raise RuntimeError(f"idle-floor loadgen failed: {out.stderr}")
    floor = dict(kv.split("=", 1) for kv in out.stdout.split())
    floor_cpu = float(floor["responder_cpu_s"]) / float(floor["seconds"])
    print(f"\n### {n:,} idle sessions (timeout {args.idle_timeout_ms} ms, tickTime {tick}), each with an ephemeral; "
          f"then {vanish:,} of them vanish at once\n")
    if n < args.idle_sessions:
        print(f"(asked for {args.idle_sessions:,}: this process may hold {limit:,} descriptors, and the server one "
              "per connection)\n")
    print("| server | CPU while idle, cores | RSS MiB (fresh) | first / last NodeDeleted after the kill, s | "
          "deleted / watched | duplicates | get p99 quiet us | get p99 during the expiry us |")
    print("|---|---|---|---|---|---|---|---|")
    for name in ("zk", "warden"):
        r = rows[name]
        print(f"| {'ZooKeeper 3.8' if name == 'zk' else 'Warden'} | {r['cpu']:.3f} | {r['rss']:.0f} ({r['fresh']:.0f}) | "
              f"{r['first']:.2f} / {r['last']:.2f} | {r['deleted']} / {r['existing']} | {r['duplicates']} | "
              f"{r['quiet']} | {r['during']} |")
    print(f"| no server: a bare responder | {floor_cpu:.3f} | | | | | | |")
    w, z = rows["warden"], rows["zk"]
    bound = (args.idle_timeout_ms + 2 * tick) / 1000
    print(f"\nWarden against ZooKeeper while idle: CPU x{w['cpu'] / z['cpu']:.2f} (target at most 0.2), RSS "
          f"x{w['rss'] / z['rss']:.2f} (target at most 0.25); Warden's last NodeDeleted {w['last']:.2f} s after the "
          f"kill (bound: timeout + two ticks = {bound:.0f} s), its get p99 meanwhile x{w['during'] / w['quiet']:.2f} "
          f"of quiet (target at most 2; ZooKeeper's x{z['during'] / z['quiet']:.2f}). The bare responder (no server: "
          f"one receive and one send per ping on loopback, where the send also runs the client's receive) takes "
          f"x{floor_cpu / z['cpu']:.2f} of ZooKeeper's CPU: this machine's floor for the ratio")


def storm_run(args):
    """Issue 26, point 2. A connection storm: --storm-sessions clients connect at once (TCP, the
    handshake, a session each: a txn), a fresh standalone server each round, durable on both:
    the time until the last is established, and how many were not. Then a leader's death: as
    many sessions spread over a 3-member ensemble (timeout 30 s), the leader SIGKILLed: the
    time from the first dropped connection to the last session re-attached on a live member
    (each tries the members in turn, every 50 ms), and how many the ensemble called expired."""
    import signal
    import time
    n = args.storm_sessions
    if raise_descriptor_limit(n + 5000) < n + 5000:
        print(f"\nconnection storm: the descriptor limit is below {n + 5000}; skipped")
        return
    storms = {"zk": [], "warden": []}
    for _ in range(args.storm_rounds):
        for name in ("zk", "warden"):
            starter = (support.start_zookeeper(extended_types=False, extra_cfg="maxClientCnxns=0\n",
                                               heap_mb=args.zk_heap_mb)
                       if name == "zk" else support.start_warden("maxClientCnxns=0\n"))
            with starter as server:
                out = subprocess.run([args.loadgen, "--port", str(server.port), "--op", "connect", "--connections",
                                      str(n)], capture_output=True, text=True, timeout=600)
                if out.returncode != 0:
                    raise RuntimeError(f"connect loadgen failed: {out.stderr}")
                storms[name].append(dict(kv.split("=", 1) for kv in out.stdout.split()))
    fails = {}
    for name in ("zk", "warden"):
        ens = (support.ZkEnsemble(3, args.ensemble_tick_ms, args.zk_heap_mb) if name == "zk"
               else WardenEnsemble(3, args.ensemble_tick_ms)).start()
        try:
            ports = [m["client_port"] for m in ens.members]
            lg = subprocess.Popen([args.loadgen, "--ports", ",".join(map(str, ports)), "--op", "failover",
                                   "--connections", str(n), "--seconds", "120"], stdout=subprocess.PIPE, text=True)
            ready = lg.stdout.readline()
            if not ready.startswith("ready"):
                lg.wait()
                raise RuntimeError(f"failover loadgen did not get its sessions ready ({ready!r})")
            time.sleep(1)
            leader = leader_of(ens)
            leader["proc"].send_signal(signal.SIGKILL)
            leader["proc"].wait()
            out, _ = lg.communicate(timeout=300)
            fails[name] = dict(kv.split("=", 1) for kv in out.split())
        finally:
            ens.stop()
    print(f"\n### Connection storm: {n} clients at once, standalone, durable on both ({args.storm_rounds} rounds)\n")
    print("| server | seconds to the last session (each round) | established | not established | loadgen CPU s |")
    print("|---|---|---|---|---|")
    med = {}
    for name in ("zk", "warden"):
        secs = [float(r["seconds"]) for r in storms[name]]
        med[name] = sorted(secs)[len(secs) // 2]
        print(f"| {'ZooKeeper 3.8' if name == 'zk' else 'Warden'} | {', '.join(f'{x:.2f}' for x in secs)} | "
              f"{', '.join(r['established'] for r in storms[name])} | {', '.join(r['failed'] for r in storms[name])} | "
              f"{', '.join(r['client_cpu_s'] for r in storms[name])} |")
    print(f"\nstorm, Warden against ZooKeeper: x{med['warden'] / med['zk']:.2f} (median; target at most 0.33; a round "
          "whose sessions were not all established ran to the loadgen's 120 s bound)")
    print(f"\n### The leader of 3 members killed under {n} sessions (timeout 30 s, tickTime={args.ensemble_tick_ms})\n")
    print("| server | seconds, first drop to last re-attach | dropped | re-attached | expired | not re-attached in "
          "120 s | attempts | loadgen CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for name in ("zk", "warden"):
        r = fails[name]
        print(f"| {'ZooKeeper 3.8' if name == 'zk' else 'Warden'} | {float(r['seconds']):.2f} | {r['dropped']} | "
              f"{r['reattached']} | {r['expired']} | {r['failed']} | {r['attempts']} | {r['client_cpu_s']} |")
    z, w = float(fails["zk"]["seconds"]), float(fails["warden"]["seconds"])
    print(f"\nre-attach after the leader's death, Warden against ZooKeeper: x{w / z if z else float('nan'):.2f}; "
          f"expired: Warden {fails['warden']['expired']} (target 0), ZooKeeper {fails['zk']['expired']}")


def churn_run(args):
    """Issue 26, point 3's memory half: a server holding --churn-live znodes of 100 bytes (RSS
    3 s later: fresh) takes --churn-znodes more and has them all deleted; its RSS is then read
    every 5 s for a minute. Durable on both; ZooKeeper the same way, for reference."""
    import time
    rows = {}
    for name in ("zk", "warden"):
        starter = (support.start_zookeeper(extended_types=False, heap_mb=args.zk_heap_mb) if name == "zk"
                   else support.start_warden())
        with starter as server:
            def run(op, n, prefix):
                out = subprocess.run([args.loadgen, "--port", str(server.port), "--op", op, "--seconds", "900",
                                      "--connections", "16", "--depth", "32", "--max-ops", str(n), "--value-size",
                                      "100", "--prefix", prefix], capture_output=True, text=True, timeout=1200)
                if out.returncode != 0:
                    raise RuntimeError(f"loadgen {op} failed: {out.stderr}")
            run("create", args.churn_live, "/live")
            time.sleep(3)
            fresh = rss_mib(server.proc.pid)
            run("create", args.churn_znodes, "/churn")
            full = rss_mib(server.proc.pid)
            run("delete", 2 * args.churn_znodes, "/churn")
            samples = []
            for _ in range(12):
                time.sleep(5)
                samples.append(rss_mib(server.proc.pid))
            rows[name] = dict(fresh=fresh, full=full, samples=samples)
    print(f"\n### Memory after churn: {args.churn_live} znodes live, {args.churn_znodes} more created and deleted "
          "(durable on both)\n")
    print("| server | RSS MiB fresh | with the churn | after the deletes, every 5 s for a minute | after a minute "
          "against fresh |")
    print("|---|---|---|---|---|")
    for name in ("zk", "warden"):
        r = rows[name]
        print(f"| {'ZooKeeper 3.8' if name == 'zk' else 'Warden'} | {r['fresh']:.0f} | {r['full']:.0f} | "
              f"{', '.join(f'{x:.0f}' for x in r['samples'])} | x{r['samples'][-1] / r['fresh']:.2f} |")
    w = rows["warden"]
    print(f"\nWarden after a minute: x{w['samples'][-1] / w['fresh']:.2f} of its fresh RSS (target at most 1.5); "
          f"RSS against ZooKeeper's after a minute: x{w['samples'][-1] / rows['zk']['samples'][-1]:.2f}")


def kill_and_wipe(m, name):
    """SIGKILLs ensemble member `m` (of a ZkEnsemble when `name` is zk, else a WardenEnsemble)
    and empties its data directory but for its myid."""
    import shutil
    import signal
    m["proc"].send_signal(signal.SIGKILL)
    m["proc"].wait()
    data = os.path.join(m["dir"] if name == "zk" else m["member"].dir, "data")
    for entry in os.listdir(data):
        if entry != "myid":
            path = os.path.join(data, entry)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def join_run(args):
    """A follower wiped but for its myid rejoins a 3-member ensemble whose log holds --join-mb
    setData of 1 MB (defaults on both: fsync, snapCount 100000): seconds from its start to its
    first client handshake (it serves once synchronised), and the leader's peak RSS."""
    import time
    took, peak = {}, {}
    for name in ("zk", "warden"):
        ens = (support.ZkEnsemble(3, args.ensemble_tick_ms, args.zk_heap_mb) if name == "zk"
               else WardenEnsemble(3, args.ensemble_tick_ms)).start()
        try:
            ports = [m["client_port"] for m in ens.members]
            subprocess.run([args.loadgen, "--ports", str(ports[0]), "--op", "set", "--seconds", "600",
                            "--connections", "1", "--depth", "4", "--max-ops", str(args.join_mb),
                            "--value-size", "1000000"], check=True, capture_output=True, timeout=900)
            leader = leader_of(ens)
            m = next(x for x in ens.members if x is not leader)
            kill_and_wipe(m, name)
            t0 = time.monotonic()
            ens.start_member(m)
            support.wait_until_serving(m["client_port"], m["proc"], "the wiped member", timeout=300)
            took[name] = time.monotonic() - t0
            with open(f"/proc/{leader['proc'].pid}/status") as f:
                peak[name] = next(int(x.split()[1]) // 1024 for x in f if x.startswith("VmHWM:"))
        finally:
            ens.stop()
    print(f"\n### a wiped follower rejoins a 3-member ensemble holding {args.join_mb} setData of 1 MB\n")
    print("| server | seconds to serve again | leader's peak RSS MiB |")
    print("|---|---|---|")
    for name in ("zk", "warden"):
        print(f"| {'ZooKeeper 3.8' if name == 'zk' else 'Warden'} | {took[name]:.2f} | {peak[name]} |")
    print(f"\nWarden against ZooKeeper: rejoin x{took['warden'] / took['zk']:.2f} (lower is better)")


def big_join_run(args):
    """Issue 26, point 5: a follower wiped but for its myid rejoins a 3-member ensemble holding
    --big-join-znodes znodes (100-byte values; durable defaults on both) while a write load
    (setData, --big-join-load sessions x 4 in flight) runs on the other two members: seconds from
    its start until it serves, and the load's p99 meanwhile against the same load's p99 before
    (quiet). ZooKeeper's leader sends the member a SNAP of its tree. The joined member's znode
    count (mntr) is checked against the leader's. Correctness of joins under load: it_sync."""
    import signal
    import time
    from ensemble import four_letter

    def znodes(port):
        for line in four_letter(port, "mntr", timeout=30).splitlines():
            if line.startswith("zk_znode_count"):
                return int(line.split()[1])
        return -1

    rows = {}
    for name in ("zk", "warden"):
        ens = (support.ZkEnsemble(3, args.ensemble_tick_ms, args.zk_heap_mb) if name == "zk"
               else WardenEnsemble(3, args.ensemble_tick_ms, "4lw.commands.whitelist=*")).start()
        try:
            leader = leader_of(ens)
            others = [m for m in ens.members if m is not leader]
            subprocess.run([args.loadgen, "--ports", str(leader["client_port"]), "--op", "create", "--seconds", "1800",
                            "--connections", "8", "--depth", "64", "--max-ops", str(args.big_join_znodes),
                            "--prefix", "/big"], check=True, capture_output=True, timeout=3600)
            m = others[0]
            serving = [leader["client_port"], others[1]["client_port"]]
            load = ["--ports", ",".join(map(str, serving)), "--op", "set", "--connections", str(args.big_join_load),
                    "--depth", "4", "--prefix", "/join-load", "--max-ops", "100000000"]
            quiet = dict(kv.split("=") for kv in subprocess.run(
                [args.loadgen, *load, "--seconds", str(args.seconds)], check=True, capture_output=True, text=True,
                timeout=600).stdout.split())
            kill_and_wipe(m, name)
            busy = subprocess.Popen([args.loadgen, *load, "--seconds", "900"], stdout=subprocess.PIPE, text=True)
            time.sleep(1)  # the load is on before the member starts
            t0 = time.monotonic()
            ens.start_member(m)
            support.wait_until_serving(m["client_port"], m["proc"], "the wiped member", timeout=900)
            took = time.monotonic() - t0
            busy.send_signal(signal.SIGTERM)
            out, _ = busy.communicate(timeout=120)
            during = dict(kv.split("=") for kv in out.split())
            rows[name] = dict(took=took, quiet=int(quiet["p99_us"]), during=int(during["p99_us"]),
                              ops=int(during["ops"]), errors=int(during["errors"]),
                              joined=znodes(m["client_port"]), leader=znodes(leader["client_port"]))
        finally:
            ens.stop()
    print(f"\n### a wiped follower joins a 3-member ensemble holding {args.big_join_znodes:,} znodes, "
          f"under a setData load ({args.big_join_load} sessions x 4) on the other two\n")
    print("| server | seconds to serve | write p99 quiet us | write p99 while it joined us | writes meanwhile | "
          "errors | znodes: joined member / leader |")
    print("|---|---|---|---|---|---|---|")
    for name in ("zk", "warden"):
        r = rows[name]
        print(f"| {'ZooKeeper 3.8' if name == 'zk' else 'Warden'} | {r['took']:.2f} | {r['quiet']} | {r['during']} | "
              f"{r['ops']} | {r['errors']} | {r['joined']} / {r['leader']} |")
    w, z = rows["warden"], rows["zk"]
    print(f"\nWarden against ZooKeeper: join x{w['took'] / z['took']:.2f} (target at most 0.33); Warden's write p99 "
          f"while joining x{w['during'] / w['quiet']:.2f} of its quiet p99 (target at most 2), ZooKeeper's "
          f"x{z['during'] / z['quiet']:.2f}")


def lock_run(args):
    """Lock hand-off on one standalone Warden, durable and then with forceSync=no: Warden's Mutex
    (warden-lockbench) against Curator's InterProcessMutex (LockBench.java) with 1, 8 and 32
    contenders, each with a session of its own; acquisitions per second and hand-off latency (a
    release to the next holder's acquire)."""
    import tempfile
    from curator_test import JARS
    classes = tempfile.mkdtemp(prefix="bench-lock-")
    cp = support.java_classpath(*JARS)
    subprocess.run(["javac", "-d", classes, "-cp", cp, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                    "LockBench.java")], check=True, timeout=300)
    lockbench = os.path.join(os.path.dirname(args.loadgen), "warden-lockbench")
    for label, cfg in (("durable (defaults)", ""), ("forceSync=no", "forceSync=no\n")):
        rows = []
        with support.start_warden(extra_cfg=cfg) as w:
            for n in [int(x) for x in args.lock_contenders.split(",") if x]:
                out = {}
                for name, cmd in (("warden", [lockbench, w.hosts, f"/bench-lock/w{n}", str(n), str(args.seconds)]),
                                  ("curator", ["java", "-Xmx512m", "-cp", classes + ":" + cp, "LockBench", w.hosts,
                                               f"/bench-lock/c{n}", str(n), str(args.seconds)])):
                    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                    if r.returncode != 0:
                        raise RuntimeError(f"{name} lock bench failed: {r.stderr[-2000:]}")
                    out[name] = dict(kv.split("=") for kv in r.stdout.split())
                rows.append((n, out))
            r = subprocess.run([lockbench, w.hosts, "/bench-lock/floor", "floor", "300"], capture_output=True,
                               text=True, timeout=600)
            if r.returncode != 0:
                raise RuntimeError(f"lock floor run failed: {r.stderr[-2000:]}")
            floor = dict(kv.split("=") for kv in r.stdout.split())
        print(f"\n### lock hand-off on one Warden, {label}, {args.seconds:g} s per cell\n")
        print("| contenders | Mutex acq/s | Curator acq/s | Mutex hand-off p50 / p99 us | "
              "Curator hand-off p50 / p99 us | p50 x |")
        print("|---|---|---|---|---|---|")
        for n, out in rows:
            w, cur = out["warden"], out["curator"]
            ratio = (float(w["handoff_p50_us"]) / float(cur["handoff_p50_us"]) if float(cur["handoff_p50_us"])
                     else float("nan"))
            print(f"| {n} | {float(w['per_s']):.0f} | {float(cur['per_s']):.0f} | {w['handoff_p50_us']} / "
                  f"{w['handoff_p99_us']} | {cur['handoff_p50_us']} / {cur['handoff_p99_us']} | {ratio:.2f} |")
        print(f"\nThe floor (one holder, one waiter queued, {floor['rounds']} rounds): the holder's release "
              f"(its delete's round trip) p50 {floor['release_p50_us']} us, the hand-off p50 "
              f"{floor['handoff_p50_us']} us.")


def first_run(args):
    """scripts/run as a new user meets it: a fresh copy of the committed tree, every package
    installed, no compiler cache (CCACHE_DISABLE), from the command until the server answers
    a ZooKeeper handshake on its client port. ZooKeeper has nothing to compare: it comes built."""
    import shutil
    import tempfile
    import time
    root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    times = []
    for _ in range(args.first_run_rounds):
        work = tempfile.mkdtemp(prefix="bench-first-run-")
        tree = os.path.join(work, "warden")
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", root, tree], check=True)
        port = support.free_port()
        cfg = os.path.join(work, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write(f"tickTime=2000\ndataDir={work}/data\nclientPort={port}\nclientPortAddress=127.0.0.1\n")
        env = {**os.environ, "CCACHE_DISABLE": "1"}
        env.pop("BUILD_DIR", None)  # scripts/bench's own: the copy builds where a user's would
        log = open(os.path.join(work, "run.log"), "w")
        start = time.monotonic()
        proc = subprocess.Popen([os.path.join(tree, "scripts", "run"), cfg], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env)
        served = None
        try:
            while time.monotonic() - start < args.first_run_limit_s and proc.poll() is None:
                if support.handshake_ok(port):
                    served = time.monotonic() - start
                    break
                time.sleep(0.25)
        finally:
            proc.terminate()  # scripts/run execs the server: this PID is it once it serves
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
        if served is None:
            sys.exit(f"first run: the server did not answer within {args.first_run_limit_s} s; see {work}/run.log")
        times.append(served)
        shutil.rmtree(work, ignore_errors=True)
    times.sort()
    print(f"\n### scripts/run on a fresh copy, no compiler cache: until it serves ({os.cpu_count()} cores)\n")
    print("| rounds | median s | each |\n|---|---|---|")
    print(f"| {len(times)} | {times[len(times) // 2]:.0f} | {', '.join(f'{t:.0f}' for t in times)} |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--loadgen", required=True)
    p.add_argument("--ops", default="create,set,get,exists,mix")
    p.add_argument("--durable-ops", default="create,set")
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--depth", type=int, default=32)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-ops", type=int, default=20_000_000)
    p.add_argument("--znodes", type=int, default=1_000_000, help="for the size run; 0 skips it")
    p.add_argument("--import-znodes", type=int, default=1_000_000,
                   help="the ZooKeeper directory import-zookeeper moves (0 skips it)")
    p.add_argument("--import-rounds", type=int, default=3, help="rounds of the import run (the best counts)")
    p.add_argument("--ensemble-ops", default="create,set,get,mix",
                   help="the 3-member run's ops (empty skips it)")
    p.add_argument("--ensemble-tick-ms", type=int, default=2000, help="tickTime of both ensembles")
    p.add_argument("--failover-rounds", type=int, default=3)
    p.add_argument("--ensemble-znodes", type=int, default=200_000, help="the tree both ensembles hold for RSS")
    p.add_argument("--reconfig-rounds", type=int, default=3, help="rounds of the reconfig run (0 skips it)")
    p.add_argument("--reconfig-writers", type=int, default=8, help="the reconfig run's writing sessions")
    p.add_argument("--lock-contenders", default="1,8,32", help="the lock hand-off run's contenders (empty skips it)")
    # Apache ZooKeeper's zkServer.sh starts the JVM with -Xmx${ZK_SERVER_HEAP}m, 1000 by default
    # (zkEnv.sh); Debian's launcher passes no -Xmx at all (the JVM then allows a quarter of RAM).
    p.add_argument("--zk-heap-mb", type=int, default=1000, help="ZooKeeper's JVM heap limit")
    p.add_argument("--big-join-znodes", type=int, default=1_000_000,
                   help="the big-tree join run's znodes (0 skips it)")
    p.add_argument("--big-join-load", type=int, default=4, help="sessions of the write load during the big join")
    p.add_argument("--join-mb", type=int, default=200, help="the rejoin run's log, in 1 MB setData (0 skips it)")
    p.add_argument("--tls", type=int, default=1, help="the TLS run (0 skips it)")
    p.add_argument("--tls-connections", type=int, default=5000, help="TLS sessions opened at once (0 skips the storm)")
    p.add_argument("--tls-ec", type=int, default=1, help="ECDSA P-256 certificates (0: RSA 2048)")
    p.add_argument("--fanout-watchers", default="1000,10000,50000", help="the fan-out run's watcher counts (empty skips it)")
    p.add_argument("--fanout-rounds", type=int, default=5, help="rounds of each fan-out cell (the median counts)")
    p.add_argument("--storm-sessions", type=int, default=10000, help="the storm and failover runs' sessions (0 skips)")
    p.add_argument("--storm-rounds", type=int, default=3, help="rounds of the connection storm (the median counts)")
    p.add_argument("--idle-sessions", type=int, default=100_000,
                   help="the idle run's sessions, as many as the descriptor limit allows (0 skips it)")
    p.add_argument("--idle-vanish", type=int, default=10_000, help="the idle sessions that vanish at once")
    p.add_argument("--idle-timeout-ms", type=int, default=10_000, help="the idle sessions' timeout")
    p.add_argument("--idle-seconds", type=float, default=30, help="how long the idle server's CPU is measured")
    p.add_argument("--churn-znodes", type=int, default=1_000_000, help="the churn run's created and deleted znodes (0 skips)")
    p.add_argument("--churn-live", type=int, default=200_000, help="the churn run's live tree")
    p.add_argument("--wide-children", type=int, default=1_000_000,
                   help="the large-reads run's children of one node (0 skips the run)")
    p.add_argument("--large-max-buffer", type=int, default=64 << 20, help="jute.maxbuffer in the large-reads run")
    p.add_argument("--multi-ops", type=int, default=1000, help="ops in each multi of the large-reads run")
    p.add_argument("--mix-sessions", type=int, default=8, help="the mixed-session run's sessions (0 skips it)")
    p.add_argument("--mix-depth", type=int, default=64, help="requests each mixed session keeps in flight")
    p.add_argument("--observed-ops", default="get,set,mix", help="the observed run's ops (empty skips it)")
    p.add_argument("--observed-rounds", type=int, default=3, help="rounds of each, plain and observed")
    p.add_argument("--before", default="",
                   help="another warden-server binary (a build before a change): the standalone and "
                        "3-member runs measure it too, in the same run, with its ratios")
    p.add_argument("--first-run-rounds", type=int, default=1,
                   help="rounds of scripts/run from a fresh copy with no compiler cache (0 skips it)")
    p.add_argument("--first-run-limit-s", type=float, default=1200, help="how long one such round may take")
    args = p.parse_args()
    ops = [o for o in args.ops.split(",") if o]
    durable_ops = [o for o in args.durable_ops.split(",") if o]
    print(f"load: {args.connections} sessions x {args.depth} in flight, {args.threads} load thread(s), "
          f"{args.seconds:g} s per cell after {args.warmup:g} s warm-up; ZooKeeper's JVM: -Xmx{args.zk_heap_mb}m "
          f"(its zkServer.sh default is 1000)")
    if ops:
        table("fsync off on both (forceSync=no): the log is written, not synced", ops, run_mode(args, ops, False))
    if durable_ops:
        table("durable on both (defaults: fsync before every reply)", durable_ops, run_mode(args, durable_ops, True))
    ensemble_ops = [o for o in args.ensemble_ops.split(",") if o]
    if ensemble_ops:
        ensemble_run(args, ensemble_ops)
    if args.reconfig_rounds > 0:
        reconfig_run(args)
    if args.fanout_watchers:
        fanout_run(args)
    if args.storm_sessions > 0:
        storm_run(args)
    if args.idle_sessions > 0:
        idle_run(args)
    if args.churn_znodes > 0:
        churn_run(args)
    if args.mix_sessions > 0:
        session_mix_run(args)
    if args.wide_children > 0:
        large_run(args)
    if args.tls:
        tls_run(args)
    if args.observed_ops:
        observed_run(args)
    if args.join_mb > 0:
        join_run(args)
    if args.big_join_znodes > 0:
        big_join_run(args)
    if args.lock_contenders:
        lock_run(args)
    if args.znodes > 0:
        size_run(args)
    if args.import_znodes > 0:
        import_run(args)
    if args.first_run_rounds > 0:
        first_run(args)


if __name__ == "__main__":
    main()
