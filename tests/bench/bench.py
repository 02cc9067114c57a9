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


def loadgen(binary, port, op, args, seconds):
    out = subprocess.run([binary, "--port", str(port), "--op", op, "--seconds", str(seconds),
                          "--connections", str(args.connections), "--depth", str(args.depth),
                          "--threads", str(args.threads), "--max-ops", str(args.max_ops)],
                         capture_output=True, text=True, timeout=seconds * 10 + 60)
    if out.returncode != 0:
        raise RuntimeError(f"loadgen failed: {out.stderr}")
    return dict(kv.split("=") for kv in out.stdout.split())


def measure(binary, server, op, args):
    loadgen(binary, server.port, op, args, args.warmup)  # JIT, caches, first allocations
    before = cpu_of(server.proc.pid)
    r = loadgen(binary, server.port, op, args, args.seconds)
    server_cpu = cpu_of(server.proc.pid) - before
    ops = int(r["ops"])
    return {
        "ops_s": float(r["ops_per_s"]),
        "p50": int(r["p50_us"]), "p99": int(r["p99_us"]), "p999": int(r["p999_us"]),
        "cpu_us": server_cpu / ops * 1e6 if ops else 0.0,
        "client_cpu_us": float(r["client_cpu_s"]) / ops * 1e6 if ops else 0.0,
        "errors": int(r["errors"]),
    }


def table(title, ops, results):
    print(f"\n### {title}\n")
    print("| op | server | ops/s | p50 us | p99 us | p999 us | server CPU us/req | loadgen CPU us/req | errors |")
    print("|" + "---|" * 9)
    for op in ops:
        for s in ("zk", "warden"):
            r = results[(s, op)]
            name = "ZooKeeper 3.8" if s == "zk" else "Warden"
            print(f"| {op} | {name} | {r['ops_s']:.0f} | {r['p50']} | {r['p99']} | {r['p999']} | "
                  f"{r['cpu_us']:.1f} | {r['client_cpu_us']:.2f} | {r['errors']} |")
    print("\nWarden against ZooKeeper (throughput: higher is better; p99 and CPU: lower is better)\n")
    print("| op | throughput x | p99 x | server CPU/req x |")
    print("|---|---|---|---|")
    for op in ops:
        z, w = results[("zk", op)], results[("warden", op)]
        tput = w["ops_s"] / z["ops_s"] if z["ops_s"] else float("nan")
        p99 = w["p99"] / z["p99"] if z["p99"] else float("nan")
        cpu = w["cpu_us"] / z["cpu_us"] if z["cpu_us"] else float("nan")
        print(f"| {op} | {tput:.2f} | {p99:.2f} | {cpu:.2f} |")


def run_mode(args, ops, sync):
    results = {}
    flag = "" if sync else "forceSync=no\n"
    with support.start_zookeeper(extended_types=False, extra_cfg="maxClientCnxns=0\n" + flag,
                                 heap_mb=args.zk_heap_mb) as zk:
        for op in ops:
            results[("zk", op)] = measure(args.loadgen, zk, op, args)
    with support.start_warden(flag) as w:
        for op in ops:
            results[("warden", op)] = measure(args.loadgen, w, op, args)
    return results


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
            return support.start_warden(cfg, workdir=workdir)

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
    # Apache ZooKeeper's zkServer.sh starts the JVM with -Xmx${ZK_SERVER_HEAP}m, 1000 by default
    # (zkEnv.sh); Debian's launcher passes no -Xmx at all (the JVM then allows a quarter of RAM).
    p.add_argument("--zk-heap-mb", type=int, default=1000, help="ZooKeeper's JVM heap limit")
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
    if args.znodes > 0:
        size_run(args)


if __name__ == "__main__":
    main()
