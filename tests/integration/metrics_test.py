"""Prometheus metrics as ZooKeeper's PrometheusMetricsProvider serves them
(metricsProvider.className, httpHost, httpPort; exportJvmInfo accepted): the text format at
/metrics with ZooKeeper's names for mntr's numbers, as gauges, equal to what mntr says, and the
process metrics; `promtool check metrics` finds nothing but the "_count" suffix of ZooKeeper's
own names (znode_count and the like: dashboards use them as they are). Then a real Prometheus
(Debian's package, on a free loopback port) scrapes a 3-member ensemble under load, and PromQL
queries of the metrics ZooKeeper's dashboard uses return a value from every member."""
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request

from kazoo.client import KazooClient

import support
from ensemble import Ensemble, four_letter

c = support.Checks("metrics")
PROVIDER = "metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider\n"
DASHBOARD = ["znode_count", "watch_count", "ephemerals_count", "approximate_data_size", "num_alive_connections",
             "outstanding_requests", "packets_received", "packets_sent", "avg_latency", "max_latency",
             "min_latency", "uptime", "global_sessions", "open_file_descriptor_count", "max_file_descriptor_count"]
PROCESS = ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
           "process_open_fds", "process_max_fds", "process_start_time_seconds"]


metrics_port = support.metrics_port


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.headers.get("Content-Type", ""), r.read().decode()


def values(text):
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^([a-z_]+) (\S+)$", text, re.M)}


def standalone(work):
    cfg = (PROVIDER + "metricsProvider.httpHost=127.0.0.1\nmetricsProvider.httpPort=0\nmetricsProvider.exportJvmInfo=true\n"
           "4lw.commands.whitelist=mntr\njvm.pause.monitor=true\njvm.pause.sleep.time.ms=100\n"
           "jvm.pause.info-threshold.ms=500\n")
    with support.start_warden(cfg) as w:
        port = metrics_port(w.log())
        c.check(port is not None, "the server logs where /metrics is")
        zk = KazooClient(hosts=w.hosts)
        zk.start(timeout=10)
        for i in range(10):
            zk.create(f"/m{i}", b"x" * 100)
        zk.create("/eph", b"", ephemeral=True)
        fired = []
        zk.get("/m0", watch=fired.append)
        zk.set("/m0", b"y" * 50)
        deadline = time.time() + 10
        while not fired and time.time() < deadline:
            time.sleep(0.05)
        # Reads sent behind the session's own writes wait for them (ZooKeeper's session queues).
        ops = []
        for i in range(20):
            ops += [zk.set_async("/m1", str(i).encode()), zk.get_async("/m1")]
        got = [op.get(timeout=10) for op in ops]
        c.equal([got[2 * i + 1][0] for i in range(20)], [str(i).encode() for i in range(20)],
                "each pipelined read sees the write sent before it")
        # The whole process stopped for a second: the pause monitor sees it.
        w.proc.send_signal(signal.SIGSTOP)
        time.sleep(1.2)
        w.proc.send_signal(signal.SIGCONT)
        # The monitor's thread records the pause once it runs again: on a loaded machine (the
        # tests run two at a time) that may take a while, so wait for it, within a bound.
        deadline = time.time() + 15
        while True:
            mntr = dict(line.split("\t", 1) for line in four_letter(w.port, "mntr").splitlines() if "\t" in line)
            if (float(mntr.get("zk_max_jvm_pause_time_ms", 0)) >= 900 and int(mntr.get("zk_cnt_jvm_pause_time_ms", 0)) >= 5
                    or time.time() > deadline):
                break
            time.sleep(0.2)
        ctype, text = scrape(port)
        mntr = dict(line.split("\t", 1) for line in four_letter(w.port, "mntr").splitlines() if "\t" in line)
        log = w.log()
        zk.stop()
        zk.close()
    c.check(ctype.startswith("text/plain; version=0.0.4"), f"Prometheus's text format: {ctype!r}")
    v = values(text)
    for name in DASHBOARD + PROCESS:
        c.check(name in v, f"/metrics has {name}")
        c.check(re.search(rf"^# TYPE {name} (gauge|counter)$", text, re.M) is not None, f"{name} has a TYPE line")
    for name in ("znode_count", "ephemerals_count", "watch_count", "approximate_data_size"):
        c.equal(v.get(name), float(mntr.get(f"zk_{name}", "nan")), f"{name} is mntr's number (one source)")
    for name in ("fsynctime", "sync_processor_batch_size", "dbinittime", "readlatency", "updatelatency",
                 "snapshottime", "election_time", "quorum_ack_latency"):
        c.check(re.search(rf"^# TYPE {name} summary$", text, re.M) is not None, f"{name} is a summary")
        c.check(re.search(rf'^{name}{{quantile="0.5"}} \S+$', text, re.M) is not None, f"{name} has its median")
        c.equal(v.get(f"{name}_count"), float(mntr.get(f"zk_cnt_{name}", "nan")),
                f"{name}_count is mntr's cnt_{name} (one source)")
    c.check(v.get("updatelatency_count", 0) >= 11 and v.get("readlatency_count", 0) >= 1,
            f"every write and read is in the latency summaries ({v.get('updatelatency_count')}, "
            f"{v.get('readlatency_count')})")
    c.check(re.search(r'^updatelatency\{quantile="0.99"\} \S+$', text, re.M) is not None,
            "updatelatency is an advanced summary (0.5, 0.9, 0.99), as ZooKeeper's")
    c.check(v.get("fsynctime_count", 0) >= 1 and v.get("dbinittime_count") == 1.0,
            f"the log's writes and the start's load are timed ({v.get('fsynctime_count')}, {v.get('dbinittime_count')})")
    c.check("zk_p99_updatelatency" in mntr and "zk_avg_fsynctime" in mntr, "mntr shows the summaries as ZooKeeper's")
    pipeline_metrics(v, text)
    c.check(v.get("jvm_pause_time_ms_count", 0) >= 5 and float(mntr.get("zk_max_jvm_pause_time_ms", 0)) >= 900,
            f"jvm.pause.monitor: the stop is a pause of about a second "
            f"({v.get('jvm_pause_time_ms_count')}, {mntr.get('zk_max_jvm_pause_time_ms')})")
    c.check(re.search(r"detected a pause of this process or its host of about \d+ ms", log) is not None,
            "and it is logged, as over jvm.pause.info-threshold.ms")
    c.check(re.search(r"^# HELP throttled_ops never fed: Warden has no connection or request throttle", text, re.M)
            is not None, "a metric of ZooKeeper's that Warden does not feed says why in its HELP")
    buckets = [float(m.group(2)) for m in re.finditer(r'^warden_log_write_seconds_bucket\{le="([^"]+)"\} (\S+)$',
                                                       text, re.M)]
    c.check(len(buckets) == 16 and buckets == sorted(buckets) and buckets[-1] == v.get("warden_log_write_seconds_count")
            == v.get("fsynctime_count"), f"warden_log_write_seconds is a histogram of every log write: {buckets}")
    c.check(v.get("process_resident_memory_bytes", 0) > 1 << 20, "the resident memory is the process's")
    c.check(abs(v.get("process_start_time_seconds", 0) - time.time()) < 600, "the start time is now-ish")
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    problems = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    others = [p for p in problems if not re.match(r"^[a-z_]+_count non-histogram and non-summary metrics should not "
                                                   r"have \"_count\" suffix$", p) and
              not re.match(r"^[a-z_]+_ms metric names should not contain abbreviated units$", p) and
              not re.match(r'^[a-z_]+ counter metrics should have "_total" suffix$', p)]
    c.equal(others, [], "promtool finds nothing but ZooKeeper's own names (_count gauges, _ms summaries, counters "
                        "without _total, as ZooKeeper types and names them)")
    with open(os.path.join(work, "bad.cfg"), "w") as f:
        f.write(f"dataDir={work}/d\nclientPort=0\nmetricsProvider.httpPort=70000\n")
    r = subprocess.run([os.environ["WARDEN_SERVER"], os.path.join(work, "bad.cfg")], capture_output=True, text=True,
                       timeout=30)
    c.check(r.returncode == 2 and "bad.cfg:3: metricsProvider.httpPort=70000" in r.stderr,
            f"a bad port stops the start: {r.stderr.strip()!r}")


def pipeline_metrics(v, text):
    """ZooKeeper's ServerMetrics beyond mntr's set, fed by the pipeline and the log: the
    numbers the standalone part's session made (12 creates, one getData with a watch, one
    setData that fires it)."""
    per_ns = {(m.group(1), m.group(2), m.group(3)): float(m.group(4)) for m in
              re.finditer(r'^(read|write)_per_namespace_(count|sum)\{key="([^"]+)"\} (\S+)$', text, re.M)}
    # ZooKeeper's DataTree counts: a write's path and data; a read's path, data and a Stat's 68.
    c.equal((per_ns.get(("write", "count", "m0")), per_ns.get(("write", "sum", "m0"))), (2.0, 103.0 + 53.0),
            "write_per_namespace: the create and the setData of /m0, their path and data bytes")
    c.equal((per_ns.get(("read", "count", "m0")), per_ns.get(("read", "sum", "m0"))), (1.0, 3.0 + 100.0 + 68.0),
            "read_per_namespace: the getData of /m0 (path, data, a Stat)")
    c.equal(per_ns.get(("write", "count", "m5")), 1.0, "each namespace has its own summary")
    c.equal((v.get("node_changed_watch_count_count"), v.get("node_changed_watch_count_sum")), (1.0, 1.0),
            "node_changed_watch_count: one event fired one watch")
    c.equal(v.get("node_created_watch_count_count"), 0.0, "no create fired a watch")
    c.equal(v.get("connection_request_count"), 1.0, "connection_request_count: kazoo's one ConnectRequest")
    c.check(v.get("bytes_received_count", 0) > 12 * 100, f"bytes_received_count has the creates' data: {v}")
    c.check(v.get("response_bytes", 0) > 100 and v.get("watch_bytes", 0) > 0,
            "response_bytes and watch_bytes count the replies and the event")
    c.check(v.get("prep_processor_request_queued", 0) >= 14,
            f"every request reached prep (connect, 11 creates, get, set): {v.get('prep_processor_request_queued')}")
    c.check(v.get("prep_process_time_count", 0) >= 12, "every write was timed in prep")
    c.check(v.get("outstanding_changes_queued", 0) >= 12 and
            v.get("outstanding_changes_queued") == v.get("outstanding_changes_removed"),
            "what prep staged was dropped once applied")
    c.check(v.get("sync_processor_request_queued", 0) >= 13 and v.get("sync_processor_queue_size_count", 0) >= 13,
            "each txn was queued for the log (the session's create, 12 writes)")
    c.equal(v.get("sync_processor_queue_and_flush_time_ms_count"), v.get("sync_processor_request_queued"),
            "each queued txn was timed to its write's end")
    c.equal(v.get("commit_count"), v.get("sync_processor_request_queued"), "commit_count: every txn committed")
    c.equal((v.get("startup_txns_loaded_count"), v.get("startup_snap_load_time_count")), (1.0, 1.0),
            "the start's replay is measured once")
    c.check(v.get("propagation_latency_count", 0) >= 13 and v.get("write_final_proc_time_ms_count", 0) >= 13,
            "each commit's apply is timed")
    c.equal(v.get("stale_sessions_expired"), 0.0, "no session expired")
    c.equal(v.get("request_commit_queued"), v.get("commit_count"), "request_commit_queued: every commit applied")
    c.check(v.get("write_commitproc_time_ms_count", 0) >= 32,
            f"write_commitproc_time_ms: each client write, proposed to committed ({v.get('write_commitproc_time_ms_count')})")
    c.check(v.get("read_commitproc_time_ms_count", 0) >= 21,
            f"read_commitproc_time_ms: every read ({v.get('read_commitproc_time_ms_count')})")
    c.check(v.get("requests_in_session_queue_count", 0) >= 1 and v.get("reads_after_write_in_session_queue_sum", 0) >= 1,
            f"the pipelined reads waited behind their session's writes ({v.get('requests_in_session_queue_count')}, "
            f"{v.get('reads_after_write_in_session_queue_sum')})")


def with_prometheus(work):
    extra = PROVIDER + "metricsProvider.httpHost=127.0.0.1\nmetricsProvider.httpPort=0\n"
    with Ensemble(3, extra_cfg=extra) as ens:
        ens.start()
        targets = [f"127.0.0.1:{metrics_port(m.log())}" for m in ens.members]
        c.check(all(not t.endswith(":None") for t in targets), f"every member serves /metrics: {targets}")
        with support.Prometheus(work, targets) as prom:
            zk = KazooClient(hosts=ens.connect_string)
            zk.start(timeout=15)
            deadline, seen, leader_side = time.time() + 40, {}, {}
            n = 0
            while time.time() < deadline:  # writes while Prometheus scrapes, bounded in time
                zk.create(f"/load{n}", b"y" * 50)
                n += 1
                if n % 20 == 0:
                    seen = {q: prom.query(q) for q in ("znode_count", "num_alive_connections",
                                                       "rate(packets_received[10s])", "process_open_fds",
                                                       "fsynctime_count", "election_time_count",
                                                       "rate(updatelatency_sum[10s])", "quorum_size",
                                                       # what ZooKeeper's documented alert rules ask
                                                       "approximate_data_size / 1024 / 1024", "watch_count",
                                                       "increase(election_time_count[5m])",
                                                       "rate(fsynctime_sum[1m])", "rate(snapshottime_sum[5m])",
                                                       "avg_latency", "open_file_descriptor_count")}
                    leader_side = {q: prom.query(q) for q in (
                        "warden_learner_lag_txns", "warden_learner_ack_latency_seconds_count", "learners",
                        "quorum_ack_latency_count > 0")}
                    if all(len(r) == 3 for r in seen.values()) and all(leader_side.values()):
                        break
                time.sleep(0.02)
            zk.stop()
            zk.close()
            for q, result in seen.items():
                c.equal(len(result), 3, f"PromQL {q}: a value from every member ({result})")
            c.equal({q: len(r) for q, r in leader_side.items()},
                    {"warden_learner_lag_txns": 2, "warden_learner_ack_latency_seconds_count": 2, "learners": 1,
                     "quorum_ack_latency_count > 0": 1},
                    "PromQL: the leader reports each follower's lag and ack latency, its learners and quorum acks")
            c.check(all(float(r["value"][1]) >= 1 for r in leader_side["warden_learner_ack_latency_seconds_count"]),
                    f"the followers' acks are timed ({leader_side['warden_learner_ack_latency_seconds_count']})")
            c.check({float(r["value"][1]) for r in seen.get("quorum_size", [])} == {3.0}, "quorum_size is 3 everywhere")
            counts = {float(r["value"][1]) for r in seen.get("znode_count", [])}
            c.check(counts and min(counts) > 10, f"znode_count grows with the load on every member ({counts})")


def zookeeper_types(work):
    """Each metric family's Prometheus type as ZooKeeper 3.8 registers it, on its leader and on a
    follower: a 3-member ZooKeeper ensemble with the test's RecordingMetricsProvider (Debian's
    ZooKeeper has no Prometheus provider; ZooKeeper's own gives a Counter the type counter, a
    Gauge gauge, a Summary summary). Returns {"leader": {name: type}, "follower": {...}}."""
    rec = os.path.join(work, "zk-metrics")
    os.makedirs(rec)
    cp = support.compile_java(os.path.join(work, "classes"), support.ZK_CLASSPATH, "RecordingMetricsProvider.java")
    ens = support.ZkEnsemble(3, 500, 256, classpath=cp,
                             extra_cfg=f"metricsProvider.className=RecordingMetricsProvider\n"
                                       f"metricsProvider.recordDir={rec}\n").start()
    try:
        zk = KazooClient(hosts=",".join(f"127.0.0.1:{m['client_port']}" for m in ens.members))
        zk.start(timeout=30)
        for i in range(10):
            zk.create(f"/types{i}", b"v")
        zk.stop()
        zk.close()
        modes = {}
        for m in ens.members:
            srvr = four_letter(m["client_port"], "srvr") or ""
            modes[m["proc"].pid] = "leader" if "Mode: leader" in srvr else "follower"
        time.sleep(1)
        out = {}
        for pid, mode in modes.items():
            with open(os.path.join(rec, f"metrics-{pid}.txt")) as f:
                out[mode] = dict(line.split() for line in f if line.strip())
        return out
    finally:
        ens.stop()


def types_as_zookeeper(work):
    """Every metric family ZooKeeper 3.8 serves, on the leader and on a follower, is served by
    Warden's member in the same role with the same Prometheus type (dashboards take rate() of a
    counter; leader_uptime only on a leader)."""
    want = zookeeper_types(work)
    c.check(set(want) == {"leader", "follower"} and "leader_uptime" in want.get("leader", {}),
            f"ZooKeeper's leader and followers recorded their metrics ({ {k: len(v) for k, v in want.items()} })")
    extra = PROVIDER + "metricsProvider.httpHost=127.0.0.1\nmetricsProvider.httpPort=0\n"
    with Ensemble(3, extra_cfg=extra) as ens:
        ens.start()
        leader = ens.leader()
        follower = next(m for m in ens.members if m is not leader)
        got = {}
        for mode, m in (("leader", leader), ("follower", follower)):
            _, text = scrape(metrics_port(m.log()))
            got[mode] = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    for mode in ("leader", "follower"):
        zk_types, w_types = want.get(mode, {}), got.get(mode, {})
        missing = sorted(n for n in zk_types if n not in w_types)
        c.equal(missing, [], f"{mode}: every metric family ZooKeeper 3.8 serves is served")
        differ = {n: (w_types[n], t) for n, t in zk_types.items() if n in w_types and w_types[n] != t}
        c.equal(differ, {}, f"{mode}: each family's type is ZooKeeper's (Warden's, ZooKeeper's)")
    c.check("leader_uptime" not in got.get("follower", {}), "leader_uptime only on the leader, as ZooKeeper")


def main():
    if not shutil.which("prometheus") or not shutil.which("promtool"):
        c.check(False, "Debian's prometheus package (prometheus, promtool) is installed (scripts/lib.sh installs it)")
        c.finish()
    c.run_parts((standalone, with_prometheus,
                 lambda work: types_as_zookeeper(work) if support.with_reference() else None), "warden-metrics-", each_fresh=True)


if __name__ == "__main__":
    main()
