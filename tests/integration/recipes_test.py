"""The client library, its recipes and the `warden` command line against a standalone Warden, a
3-member Warden ensemble and Apache ZooKeeper 3.8, each: the library's own tests
(tests/recipes/recipes_test.cpp); `warden lock` as scripts use it (mutual exclusion of several
processes with fencing tokens that strictly increase, CMD's exit status, --timeout (75, CMD not
run), SIGTERM passed on to CMD, a SIGKILLed holder's lock passing on only once its session
expired, a session that expires under a running CMD (CMD gets SIGTERM, warden fails), Curator's
InterProcessMutex and `warden lock` on one path never holding it together, elect, register and
members); Curator's read-write lock, semaphore, double barrier and atomic counter beside Warden's
on the same paths; and (standalone and ZooKeeper) warden's zkCli-like commands beside zkCli.sh's
output. Then bad arguments and an unreachable server."""
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
CONTENDER = os.path.join(BUILD, "tests", "recipes", "warden-recipe-contender")


def library_tests(hosts, what, kind="warden"):
    print(f"{what}: the client library's tests", flush=True)
    env = dict(os.environ, WARDEN_TEST_HOSTS=hosts, WARDEN_TEST_SERVER_KIND=kind)
    try:
        r = subprocess.run([RECIPES_TESTS, "--durations", "yes"], env=env,
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


def ls(hosts, path, tries=5):
    """`warden ls PATH`'s output, the command run again (up to `tries` times, a second apart) when
    it fails to reach the ensemble (TSan once made one call of a loaded run print nothing); what
    it printed on the last failure otherwise, so a check shows why."""
    for _ in range(tries):
        r = warden(hosts, "ls", path)
        if r.returncode == 0:
            return r.stdout.strip()
        time.sleep(1)
    return f"(warden ls failed {tries} times, exit {r.returncode}: {r.stderr.strip()[-300:]})"


def children(hosts, path):
    """PATH's children as `warden ls` prints them ([a, b]); [] when it has none or is gone."""
    out = warden(hosts, "ls", path).stdout.strip()
    return [x for x in out.strip("[]").split(", ") if x] if out.startswith("[") else []


def process_gone(pid, timeout):
    """True once `pid` has exited (gone, or a zombie nobody reaped yet) within `timeout` seconds."""
    deadline = time.time() + timeout
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        if time.time() >= deadline:
            return False
        time.sleep(0.05)


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
    # The lock's parent is a container: the server may have swept it, empty, already (every
    # znode.container.checkIntervalMs, as ZooKeeper's ContainerManager does). Gone is as empty.
    left = ls(hosts, "/cli/mutex")
    c.check(left == "[]" or "Node does not exist: /cli/mutex" in left, f"{what}: no node left behind ({left!r})")
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
    # ---- a lost session stops CMD's whole process group: SIGTERM, then SIGKILL after --grace
    bg_pid, ready3 = f"{work}/bg-pid", f"{work}/ready3"
    p = subprocess.Popen([WARDEN, "--server", hosts, "--session-timeout-ms", "4000", "lock", "--grace", "1",
                          "/cli/group", "--", "sh", "-c",
                          f'trap "" TERM; sleep 600 & echo $! > "{bg_pid}"; echo up > "{ready3}"; wait'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    c.check(wait_file(ready3) and wait_file(bg_pid), f"{what}: CMD and its background child run")
    bg = int(open(bg_pid).read())
    os.kill(p.pid, signal.SIGSTOP)  # warden alone: its session expires; CMD's group ignores SIGTERM
    time.sleep(9)
    os.kill(p.pid, signal.SIGCONT)
    try:
        rc = p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        rc = None
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    c.equal(rc, 70, f"{what}: warden exits 70 once the session under CMD was lost")
    c.check(process_gone(bg, 10), f"{what}: and CMD's background child is gone too (SIGKILL after --grace)")
    if not process_gone(bg, 0):
        os.kill(bg, signal.SIGKILL)
    # ---- SIGTERM or SIGINT while waiting for the lock: the request is withdrawn, CMD never runs
    held4 = f"{work}/held4"
    holder = popen_lock(hosts, "/cli/wait", "--", "sh", "-c", f'echo x > "{held4}"; sleep 6')
    c.check(wait_file(held4), f"{what}: a holder holds /cli/wait")
    for sig, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        ran = f"{work}/ran-{int(sig)}"
        w = popen_lock(hosts, "/cli/wait", "--", "touch", ran)
        deadline = time.time() + 20
        while len(children(hosts, "/cli/wait")) < 2 and time.time() < deadline:
            time.sleep(0.05)
        os.kill(w.pid, sig)
        try:
            rc = w.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        c.equal(rc, code, f"{what}: {sig.name} while waiting: warden exits {code}")
        c.check(not os.path.exists(ran), f"{what}: {sig.name} while waiting: CMD did not run")
        c.equal(len(children(hosts, "/cli/wait")), 1, f"{what}: {sig.name} while waiting: its node was withdrawn")
        if rc is None:
            w.kill()
            w.wait()
    c.equal(holder.wait(timeout=30), 0, f"{what}: the holder of /cli/wait ends normally")
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


def raw_line(f):
    """One line from a pipe, read byte by byte from its descriptor: a buffered readline may
    take more than the line, which communicate() (reading the descriptor) then never sees; a
    contender that printed everything at once lost its result that way in CI."""
    got = b""
    while not got.endswith(b"\n"):
        ch = os.read(f.fileno(), 1)
        if not ch:
            break
        got += ch
    return got.decode(errors="replace")


def interop_tests(hosts, what, classpath):
    """Curator's recipes in JVMs and Warden's in C++ processes on the same paths: each side's
    holders mark a directory, and finds no holder of the other side where there may be none."""
    print(f"{what}: Curator's and Warden's recipes on one path", flush=True)
    work = tempfile.mkdtemp(prefix="warden-interop-")

    def java(*args):
        return subprocess.Popen(["java", "-Xmx128m", "-cp", classpath, "RecipeContender", hosts, *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def cpp(*args):
        return subprocess.Popen([CONTENDER, hosts, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def contest(procs, label, go_dir):
        """Waits until every contender is READY, lets them all go at once, checks each one's result."""
        for kind, p in procs:
            line = raw_line(p.stdout).strip()
            c.equal(line, "READY", f"{what}: {label}: a {kind} contender connected")
        with open(os.path.join(go_dir, "go"), "w"):
            pass
        outs = []
        for kind, p in procs:
            try:
                out, err = p.communicate(timeout=240)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                err += " (killed after 240 s)"
            outs.append(out)
            last = out.strip().splitlines()[-1] if out.strip() else ""
            # The exit status too (a negative one names the signal).
            c.equal(last, "DONE VIOLATIONS 0", f"{what}: {label}: a {kind} contender saw no holder where none may be "
                                               f"(exit status {p.returncode}) {err.strip()[-500:]}")
        return outs

    def fresh_dir(name):
        d = os.path.join(work, name)
        os.mkdir(d)
        return d

    d = fresh_dir("rw")
    contest([("Curator writer", java("write", "/interop/rw", "8", d)),
            ("Curator reader", java("read", "/interop/rw", "8", d)),
            ("Warden writer", cpp("write", "/interop/rw", "8", d)),
            ("Warden reader", cpp("read", "/interop/rw", "8", d)),
            ("Warden reader", cpp("read", "/interop/rw", "8", d))], "read-write lock", d)
    d = fresh_dir("sem")
    contest([("Curator", java("semaphore", "/interop/sem", "2", "8", d)),
            ("Curator", java("semaphore", "/interop/sem", "2", "8", d)),
            ("Warden", cpp("semaphore", "/interop/sem", "2", "8", d)),
            ("Warden", cpp("semaphore", "/interop/sem", "2", "8", d))], "semaphore of 2 leases", d)
    d = fresh_dir("barrier")
    contest([("Curator", java("barrier", "/interop/barrier", "4", d)),
            ("Curator", java("barrier", "/interop/barrier", "4", d)),
            ("Warden", cpp("barrier", "/interop/barrier", "4", d)),
            ("Warden", cpp("barrier", "/interop/barrier", "4", d))], "double barrier of 4", d)
    d = fresh_dir("counter")
    contest([("Curator", java("counter", "/interop/counter", "30", d)),
            ("Curator", java("counter", "/interop/counter", "30", d)),
            ("Warden", cpp("counter", "/interop/counter", "30", d)),
            ("Warden", cpp("counter", "/interop/counter", "30", d))], "counter", d)
    out = contest([("Warden", cpp("counter", "/interop/counter", "0", d))], "counter read", d)[0]
    c.check("VALUE 120\n" in out, f"{what}: Curator's DistributedAtomicLong and Warden's Counter count together "
                                  f"(120 increments): {out!r}")


ZKCLI_SCRIPT = """\
create /P data1
create /P again
create /P/missing/c x
create -s /P/s- s
create -s /P/s- s
create -c /P/cont
create /P/cont/kid k
create -t 100000 /P/ttl t
get /P
get -s /P
set /P d2
set -v 9 /P d3
set -v 1 /P d3
stat /P
stat /P/none
ls /P
ls -R /P
ls -s /P
getAcl /P
sync /P
delete -v 9 /P/cont/kid
delete /P/none
delete /P/cont
create /P/w w
get -w /P/w
set /P/w w2
create /P/locked x
setAcl /P/locked world:anyone:r
getAcl /P/locked
set /P/locked nope
create /P/locked/c x
setAcl /P/ro world:anyone:r
deleteall /P/cont
ls /P
"""
NOISE = re.compile(r"^(SLF4J:|Connecting to |Welcome to ZooKeeper!|JLine support|WATCHER::|"
                   r"WatchedEvent state:SyncConnected type:None path:null|$)")


def normalised(lines, prefix):
    """zkCli's or warden's lines, the noise of a zkCli start left out, zxids and times made equal."""
    out = []
    for line in lines:
        if NOISE.match(line):
            continue
        line = line.replace(prefix, "/P")
        line = re.sub(r"0x[0-9a-f]+", "0xZ", line)
        line = re.sub(r"^(ctime|mtime) = .*", r"\1 = T", line)
        out.append(line)
    return out


def zkcli_comparison(hosts, what):
    """The same script through zkCli.sh and through warden, one command per process, on two
    subtrees of one server: the same lines (results and zkCli's error messages), zxids and times
    aside. `get -w` runs in the background until the next command has fired its watch."""
    print(f"{what}: warden's commands beside zkCli's", flush=True)
    zk_prefix, w_prefix = "/zkcli-ref", "/warden-cli"
    ref = support.run_zkcli(hosts, ZKCLI_SCRIPT.replace("/P", zk_prefix))
    ours = []
    pending = None
    for line in ZKCLI_SCRIPT.splitlines():
        args = line.replace("/P", w_prefix).split()
        if args[:2] == ["get", "-w"]:
            pending = subprocess.Popen([WARDEN, "--server", hosts, *args], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
            ours.append(pending.stdout.readline().rstrip("\n"))  # the data: the watch is set
            continue
        r = warden(hosts, *args)
        ours += (r.stdout + r.stderr).splitlines()
        c.equal(r.returncode, 1 if r.stderr else 0, f"{what}: warden {line}: exit 0, or 1 with a message")
        if pending:
            out, err = pending.communicate(timeout=30)
            ours += (out + err).splitlines()
            pending = None
    want, got = normalised(ref.splitlines(), zk_prefix), normalised(ours, w_prefix)
    # zkCli prints a watch event from its event thread, so in its output the event may come
    # after the next command's result: events are compared as a list of their own, the rest in order.
    want_events, got_events = ([l for l in x if l.startswith("WatchedEvent ")] for x in (want, got))
    c.equal(got_events, want_events, f"{what}: the same watch events as zkCli's")
    want, got = ([l for l in x if not l.startswith("WatchedEvent ")] for x in (want, got))
    c.equal(len(got), len(want), f"{what}: as many lines as zkCli's")
    for i, (g, w) in enumerate(zip(got, want)):
        c.equal(g, w, f"{what}: line {i + 1} as zkCli's")
    # Beyond zkCli: watch (a persistent watch, one event printed).
    watcher = subprocess.Popen([WARDEN, "--server", hosts, "watch", f"{w_prefix}/w"], stdout=subprocess.PIPE, text=True)
    fired = ""
    for _ in range(50):  # the watch is set once warden has connected: set until it has fired
        warden(hosts, "set", f"{w_prefix}/w", "again")
        try:
            fired = watcher.communicate(timeout=0.2)[0]
            break
        except subprocess.TimeoutExpired:
            pass
    c.equal(fired, f"WatchedEvent state:SyncConnected type:NodeDataChanged path:{w_prefix}/w\n",
            f"{what}: warden watch prints the event")
    if watcher.poll() is None:
        watcher.kill()
        watcher.wait()
    c.equal(warden(hosts, "addauth", "digest", "alice:secret").returncode, 0, f"{what}: addauth")
    c.equal(warden(hosts, "deleteall", w_prefix).returncode, 0, f"{what}: deleteall of the whole subtree")
    c.equal(warden(hosts, "stat", w_prefix).stderr, f"Node does not exist: {w_prefix}\n", f"{what}: gone")


# ---- arguments and an unreachable server
for bad in (["lock", "/x"], ["lock", "/x", "--timeout", "soon", "--", "true"], ["lock", "x", "--", "true"],
            ["nosuch"], [], ["ls"], ["--server", "h:0", "ls", "/"], ["--timeout-ms", "7", "ls", "/"],
            ["elect", "/x"], ["register", "/x", "a/b", "--", "true"], ["register", "/x", "--", "true"],
            ["members"], ["members", "/x", "--watch", "--", "true"], ["ls", "/", "--data"], ["--server"],
            ["get", "/x", "extra"], ["setAcl", "/x", "garbage"], ["lock", "/x", "--grace", "soon", "--", "true"],
            ["lock", "/x", "--grace", "-1", "--", "true"], ["elect", "/x", "--grace", "", "--", "true"],
            ["ls", "/", "--grace", "1"]):
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


def standalone():
    with support.start_warden() as w:
        library_tests(w.hosts, "Warden standalone")
        cli_tests(w.hosts, "Warden standalone", cp)
        interop_tests(w.hosts, "Warden standalone", cp)
        zkcli_comparison(w.hosts, "Warden standalone")


def ensemble():
    with Ensemble(3, tick_ms=500) as ens:
        ens.start()
        library_tests(ens.connect_string, "Warden 3-member ensemble")
        cli_tests(ens.connect_string, "Warden 3-member ensemble", cp)
        interop_tests(ens.connect_string, "Warden 3-member ensemble", cp)
        c.equal(ens.stop_cleanly(), [], "ensemble members exit cleanly")


def zookeeper():
    with support.start_zookeeper() as zk:
        library_tests(zk.hosts, "ZooKeeper 3.8", kind="zookeeper")
        cli_tests(zk.hosts, "ZooKeeper 3.8", cp)
        interop_tests(zk.hosts, "ZooKeeper 3.8", cp)
        zkcli_comparison(zk.hosts, "ZooKeeper 3.8")


# The servers are tested side by side, each on its own paths and processes: the tests mostly
# wait for sessions to expire (4 s each), so one after the other they took six minutes, the
# longest test of the suite. The same tests on ZooKeeper show that the expectations are
# ZooKeeper's (left out on the sanitizer runs, WARDEN_NO_REFERENCE=1: they check Warden, and the
# plain run has compared).
support.run_concurrently(c, [standalone, ensemble] + ([zookeeper] if support.with_reference() else []))
c.finish()
