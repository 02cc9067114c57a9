"""The client library, its Mutex and the `warden` command line against a standalone Warden, a
3-member Warden ensemble and Apache ZooKeeper 3.8: the library's own tests
(tests/recipes/recipes_test.cpp) on each; then `warden lock` as scripts use it: mutual exclusion
of several processes with fencing tokens that strictly increase, CMD's exit status, --timeout
(75, CMD not run), SIGTERM passed on to CMD, a SIGKILLed holder's lock passing on only once its
session expired, a session that expires under a running CMD (CMD gets SIGTERM, warden fails),
Curator's InterProcessMutex and `warden lock` on one path never holding it together, and bad
arguments and an unreachable server."""
import os
import re
import signal
import subprocess
import tempfile
import time

import support
from ensemble import Ensemble
from curator_test import compile_contender

c = support.Checks("recipes")
BUILD = os.path.dirname(os.path.dirname(os.environ["WARDEN_SERVER"]))
WARDEN = os.path.join(BUILD, "recipes", "warden")
RECIPES_TESTS = os.path.join(BUILD, "tests", "recipes", "warden-recipes-tests")


def library_tests(hosts, what):
    print(f"{what}: the client library's tests", flush=True)
    try:
        r = subprocess.run([RECIPES_TESTS, "--durations", "yes"], env=dict(os.environ, WARDEN_TEST_HOSTS=hosts),
                           capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired as e:
        c.check(False, f"{what}: the client library's tests did not finish in 240 s:\n{(e.stdout or b'')[-3000:]}")
        return
    ok = r.returncode == 0 and "All tests passed" in r.stdout
    c.check(ok, f"{what}: the client library's tests pass\n{r.stdout[-3000:]}{r.stderr[-2000:]}")


def warden(hosts, *args, **kw):
    return subprocess.run([WARDEN, "--server", hosts, *args], capture_output=True, text=True,
                          timeout=kw.pop("timeout", 120), **kw)


def popen_lock(hosts, *args, session_ms=None, **kw):
    pre = ["--session-timeout-ms", str(session_ms)] if session_ms else []
    return subprocess.Popen([WARDEN, "--server", hosts, *pre, "lock", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, **kw)


def wait_file(path, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return True
        time.sleep(0.02)
    return False


def cli_tests(hosts, what, classpath):
    print(f"{what}: warden lock, elect, register, members", flush=True)
    work = tempfile.mkdtemp(prefix="warden-lock-")
    marker, viol, tokens = f"{work}/marker", f"{work}/violations", f"{work}/tokens"
    body = (f'mkdir "{marker}" 2>/dev/null || echo V >> "{viol}"; echo "$WARDEN_FENCING_TOKEN" >> "{tokens}"; '
            f'sleep 0.02; rmdir "{marker}"')
    # ---- mutual exclusion among processes, tokens strictly increasing
    loop = f'for i in 1 2 3 4; do "{WARDEN}" --server "{hosts}" lock /cli/mutex -- sh -c \'{body}\' || exit 1; done'
    procs = [subprocess.Popen(["sh", "-c", loop]) for _ in range(5)]
    codes = [p.wait(timeout=300) for p in procs]
    c.equal(codes, [0] * 5, f"{what}: every warden lock run exits 0")
    c.check(not os.path.exists(viol), f"{what}: never two holders at once")
    toks = [int(x) for x in open(tokens).read().split()]
    c.equal(len(toks), 20, f"{what}: 20 acquisitions")
    c.check(all(b > a for a, b in zip(toks, toks[1:])), f"{what}: fencing tokens strictly increase ({toks[:5]}...)")
    c.equal(warden(hosts, "ls", "/cli/mutex").stdout.strip(), "[]", f"{what}: no node left behind")
    # ---- CMD's status
    c.equal(warden(hosts, "lock", "/cli/status", "--", "sh", "-c", "exit 7").returncode, 7,
            f"{what}: warden lock exits with CMD's status")
    # ---- --timeout: 75 and CMD not run
    held = f"{work}/held"
    holder = popen_lock(hosts, "/cli/busy", "--", "sh", "-c", f'echo $WARDEN_FENCING_TOKEN > "{held}"; sleep 3')
    c.check(wait_file(held), f"{what}: the holder runs")
    ran = f"{work}/ran"
    t0 = time.time()
    r = warden(hosts, "lock", "/cli/busy", "--timeout", "0.5", "--", "touch", ran)
    c.equal(r.returncode, 75, f"{what}: not acquired within --timeout: 75")
    c.check(not os.path.exists(ran), f"{what}: and CMD did not run")
    c.check(time.time() - t0 < 10, f"{what}: within about the timeout")
    c.equal(holder.wait(timeout=30), 0, f"{what}: the holder ends normally")
    # ---- SIGTERM goes on to CMD; the lock is released when it ends
    got = f"{work}/got-term"
    ready = f"{work}/ready"
    p = popen_lock(hosts, "/cli/term", "--", "sh", "-c",
                   f'trap \'echo term > "{got}"; exit 9\' TERM; echo up > "{ready}"; sleep 30 & wait')
    c.check(wait_file(ready), f"{what}: CMD runs under the lock")
    os.kill(p.pid, signal.SIGTERM)
    c.equal(p.wait(timeout=30), 9, f"{what}: SIGTERM reached CMD, whose status warden returns")
    c.check(os.path.exists(got), f"{what}: CMD got the SIGTERM")
    c.equal(warden(hosts, "lock", "/cli/term", "--timeout", "5", "--", "true").returncode, 0,
            f"{what}: the lock is free again")
    # ---- a SIGKILLed holder: the lock passes on once its session expired, not before
    held2 = f"{work}/held2"
    k = popen_lock(hosts, "/cli/killed", "--", "sh", "-c", f'echo x > "{held2}"; sleep 60', session_ms=4000)
    c.check(wait_file(held2), f"{what}: the holder to kill holds")
    os.killpg(k.pid, signal.SIGKILL)
    k.wait()
    t0 = time.time()
    r = warden(hosts, "lock", "/cli/killed", "--timeout", "30", "--", "true")
    waited = time.time() - t0
    c.equal(r.returncode, 0, f"{what}: the waiter gets the lock of the killed holder")
    c.check(2.5 < waited < 20, f"{what}: only once the session expired ({waited:.1f}s after the kill, timeout 4 s)")
    # ---- the session expires while CMD runs: CMD gets SIGTERM, warden fails
    got2, ready2 = f"{work}/got-term2", f"{work}/ready2"
    p = popen_lock(hosts, "/cli/expire", "--", "sh", "-c",
                   f'trap \'echo term > "{got2}"; exit 0\' TERM; echo up > "{ready2}"; sleep 60 & wait',
                   session_ms=4000)
    c.check(wait_file(ready2), f"{what}: CMD runs before the pause")
    os.kill(p.pid, signal.SIGSTOP)  # warden alone: its session expires, CMD runs on
    time.sleep(9)
    os.kill(p.pid, signal.SIGCONT)
    rc = p.wait(timeout=60)
    c.check(rc not in (0, None), f"{what}: warden exits non-zero when its session expired under CMD ({rc})")
    c.check(wait_file(got2, 10), f"{what}: CMD got SIGTERM")
    # ---- Curator's InterProcessMutex and warden lock on one path never hold it together
    jmarker = f"{work}/jmarker"
    jbody = (f'mkdir "{jmarker}" 2>/dev/null || echo V >> "{viol}"; sleep 0.01; rmdir "{jmarker}" 2>/dev/null')
    jloop = f'for i in $(seq 10); do "{WARDEN}" --server "{hosts}" lock /cli/interop -- sh -c \'{jbody}\' || exit 1; done'
    java = [subprocess.Popen(["java", "-Xmx128m", "-cp", classpath, "LockContender", hosts, "/cli/interop", "10",
                              jmarker], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    shells = [subprocess.Popen(["sh", "-c", jloop]) for _ in range(2)]
    c.equal([s.wait(timeout=300) for s in shells], [0, 0], f"{what}: warden lock loops beside Curator finish")
    for j in java:
        out, _ = j.communicate(timeout=300)
        c.equal(out.strip().splitlines()[-1] if out.strip() else "", "DONE 10 VIOLATIONS 0",
                f"{what}: Curator never found warden's holder inside")
    c.check(not os.path.exists(viol), f"{what}: warden never found Curator's holder inside")
    # ---- node names as Curator's; warden elect: the next candidate leads once the leader died
    lead_a, lead_b = f"{work}/lead-a", f"{work}/lead-b"
    a = popen_lock(hosts, "/cli/election", "--", "sh", "-c", f'echo a > "{lead_a}"; sleep 60', session_ms=4000)
    c.check(wait_file(lead_a), f"{what}: a lock holder runs")
    kids = warden(hosts, "ls", "/cli/election").stdout
    c.check(re.fullmatch(r"\[_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}\]\n", kids)
            is not None, f"{what}: a lock node is named as Curator's InterProcessMutex names it ({kids!r})")
    a.send_signal(signal.SIGTERM)
    a.wait(timeout=30)
    e1 = subprocess.Popen([WARDEN, "--server", hosts, "--session-timeout-ms", "4000", "elect", "/cli/elected", "--",
                           "sh", "-c", f'echo a > "{lead_a}.2"; sleep 60'], start_new_session=True)
    c.check(wait_file(lead_a + ".2"), f"{what}: warden elect runs CMD while it leads")
    kids = warden(hosts, "ls", "/cli/elected").stdout
    c.check(re.search(r"_c_[0-9a-f-]{36}-latch-\d{10}", kids) is not None,
            f"{what}: an election node is named as Curator's LeaderLatch names it ({kids!r})")
    e2 = subprocess.Popen([WARDEN, "--server", hosts, "elect", "/cli/elected", "--", "sh", "-c",
                           f'echo b > "{lead_b}"'], start_new_session=True)
    time.sleep(1.5)
    c.check(not os.path.exists(lead_b), f"{what}: the second candidate does not run while the first leads")
    os.killpg(e1.pid, signal.SIGKILL)
    e1.wait()
    c.check(wait_file(lead_b, 30), f"{what}: the second candidate leads once the first one's session expired")
    c.equal(e2.wait(timeout=30), 0, f"{what}: and exits with its command's status")
    # ---- the registry: members join and leave, a watcher sees both
    watcher = subprocess.Popen([WARDEN, "--server", hosts, "members", "/cli/svc", "--watch"], stdout=subprocess.PIPE,
                               text=True, start_new_session=True)
    time.sleep(1)
    r1 = subprocess.Popen([WARDEN, "--server", hosts, "register", "/cli/svc", "alpha", "--data", "10.0.0.1:80", "--",
                           "sleep", "2"])
    r2 = subprocess.Popen([WARDEN, "--server", hosts, "register", "/cli/svc", "beta", "--", "sleep", "4"])
    time.sleep(1)
    c.equal(warden(hosts, "members", "/cli/svc").stdout, "alpha\nbeta\n", f"{what}: members lists both, sorted")
    c.equal(warden(hosts, "get", "/cli/svc/alpha").stdout, "10.0.0.1:80\n", f"{what}: with the member's data")
    c.equal([r1.wait(timeout=30), r2.wait(timeout=30)], [0, 0], f"{what}: register exits with its command's status")
    time.sleep(1)
    os.killpg(watcher.pid, signal.SIGTERM)
    lines = watcher.communicate(timeout=30)[0].split()
    c.equal(sorted(lines), ["+alpha", "+beta", "-alpha", "-beta"], f"{what}: the watcher saw each join and leave")
    c.check(lines.index("+alpha") < lines.index("-alpha") and lines.index("+beta") < lines.index("-beta"),
            f"{what}: joins before leaves ({lines})")
    c.equal(warden(hosts, "members", "/cli/svc").stdout, "", f"{what}: nobody is left")


# ---- arguments and an unreachable server
for bad in (["lock", "/x"], ["lock", "/x", "--timeout", "soon", "--", "true"], ["lock", "x", "--", "true"],
            ["nosuch"], [], ["ls"], ["--server", "h:0", "ls", "/"], ["--timeout-ms", "7", "ls", "/"],
            ["elect", "/x"], ["register", "/x", "a/b", "--", "true"], ["register", "/x", "--", "true"],
            ["members"], ["members", "/x", "--watch", "--", "true"], ["ls", "/", "--data"], ["--server"],
            ["get", "/x", "extra"], ["setAcl", "/x", "garbage"]):
    r = subprocess.run([WARDEN, *bad], capture_output=True, text=True, timeout=30)
    c.equal(r.returncode, 2, f"warden {' '.join(bad)}: exit 2")
    c.check("usage: warden" in r.stderr, f"warden {' '.join(bad)}: prints the usage")
t0 = time.time()
r = subprocess.run([WARDEN, "--server", f"127.0.0.1:{support.free_port()}", "--timeout-ms", "1000", "ls", "/"],
                   capture_output=True, text=True, timeout=60)
c.equal(r.returncode, 1, "an unreachable server: exit 1")
c.check("cannot reach" in r.stderr and time.time() - t0 < 10, f"with a clear message, quickly: {r.stderr!r}")

classes = tempfile.mkdtemp(prefix="recipes-classes-")
cp = compile_contender(classes)
with support.start_warden() as w:
    library_tests(w.hosts, "Warden standalone")
    cli_tests(w.hosts, "Warden standalone", cp)
with Ensemble(3, tick_ms=500) as ens:
    ens.start()
    library_tests(ens.connect_string, "Warden 3-member ensemble")
    c.equal(ens.stop_cleanly(), [], "ensemble members exit cleanly")
with support.start_zookeeper() as zk:
    library_tests(zk.hosts, "ZooKeeper 3.8")
    cli_tests(zk.hosts, "ZooKeeper 3.8", cp)
c.finish()
