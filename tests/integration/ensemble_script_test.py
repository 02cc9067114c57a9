"""scripts/ensemble, the README's way to try an ensemble: it builds the server (a build
directory of its own here), starts 3 members with their log lines prefixed by id, prints a
connect string that real clients use, and stops every member on Ctrl-C (SIGINT to its process
group, as a terminal sends it). Bad arguments get the usage and exit 2."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from kazoo.client import KazooClient

from support import Checks, handshake_ok

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "ensemble")
c = Checks("ensemble_script")

for bad in (["4"], ["three"], ["3", "extra"]):
    r = subprocess.run([SCRIPT, *bad], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    c.equal(r.returncode, 2, f"scripts/ensemble {' '.join(bad)} exits 2")
    c.check("usage: scripts/ensemble [3|5]" in r.stderr, f"and prints its usage ({r.stderr!r})")


def members_of(top):
    """PIDs of warden-server processes running a configuration under `top`."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if args and args[0].endswith(b"warden-server") and any(a.startswith(top.encode()) for a in args[1:]):
            pids.append(int(d))
    return pids


work = tempfile.mkdtemp(prefix="ensemble-script-")
# Its build directory sits beside build/ so that ccache finds what the plain build compiled
# (tests/integration/run_script_test.py says why).
build = os.path.join(ROOT, "build-ensemble-script")
shutil.rmtree(build, ignore_errors=True)
env = dict(os.environ, BUILD_DIR=build, CI="true", CCACHE_NOHASHDIR="1", TMPDIR=work)
out_path = os.path.join(work, "out.log")
proc = subprocess.Popen([SCRIPT], stdout=open(out_path, "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                        env=env, start_new_session=True)
try:
    connect, top = None, None
    deadline = time.time() + 900  # a cold build of the server included
    while time.time() < deadline and proc.poll() is None and connect is None:
        text = open(out_path, errors="replace").read()
        m = re.search(r"^connect string: (\S+)$", text, re.M)
        t = re.search(r"^ensemble of 3 in (\S+)$", text, re.M)
        if m and t:
            connect, top = m.group(1), t.group(1)
        time.sleep(0.2)
    c.check(connect is not None, "the connect string is printed")
    hosts = connect.split(",") if connect else []
    c.equal(len(hosts), 3, "three members")
    for h in hosts:
        port = int(h.rsplit(":", 1)[1])
        deadline = time.time() + 60
        while time.time() < deadline and not handshake_ok(port):
            time.sleep(0.1)
        c.check(handshake_ok(port), f"member {h} serves")
    k = KazooClient(hosts=connect, timeout=10.0)
    k.start(timeout=30)
    k.create("/from-the-script", b"x")
    k.sync("/")
    c.equal(k.get("/from-the-script")[0], b"x", "a client writes and reads through the connect string")
    k.stop()
    k.close()
    pids = members_of(top)
    c.equal(len(pids), 3, "three warden-server processes run")
    text = open(out_path, errors="replace").read()
    for i in (1, 2, 3):
        c.check(re.search(rf"^\[server\.{i}\] .*serving", text, re.M) is not None, f"server.{i}'s lines are prefixed")
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
    proc.wait(timeout=60)
    c.equal(proc.returncode, 0, "Ctrl-C ends the script cleanly")
    deadline = time.time() + 20
    while time.time() < deadline and members_of(top):
        time.sleep(0.1)
    c.equal(members_of(top), [], "every member stopped")
finally:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for pid in members_of(work):
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(build, ignore_errors=True)
c.finish()
