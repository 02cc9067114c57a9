"""A Warden ensemble of real processes on loopback, for the ensemble and fault tests.

Each member gets its own directory (zoo.cfg, data/myid, server.log) and three ports probed
free at run time. Members are started, SIGKILLed, SIGSTOPped, continued and restarted by the
PID this module started, and nothing else.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from support import free_port, fresh_socket, handshake_ok, member_files
from support import answer_timeout_s, sync_limit as support_sync_limit


def four_letter(port, word, timeout=3):
    """A four-letter word's answer, or '' when the member does not answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(word.encode())
            out = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return out.decode(errors="replace")
                out += chunk
    except OSError:
        return ""


def mode_of(port):
    """'leader', 'follower', 'observer', 'not serving' or '' (down or stopped)."""
    text = four_letter(port, "srvr", timeout=answer_timeout_s())
    if "not currently serving" in text:
        return "not serving"
    for line in text.splitlines():
        if line.startswith("Mode: "):
            return line[6:]
    return ""


class Member:
    def __init__(self, ens, sid, observer=False):
        self.ens, self.id, self.observer = ens, sid, observer
        self.dir = os.path.join(ens.dir, str(sid))
        self.client_port, self.quorum_port, self.election_port = free_port(), free_port(), free_port()
        self.proc = None

    @property
    def cfg(self):
        return os.path.join(self.dir, "zoo.cfg")

    @property
    def hosts(self):
        return f"127.0.0.1:{self.client_port}"

    def rewrite_cfg(self, extra, drop):
        """Rewrites zoo.cfg without its lines that start with any of `drop` (a tuple), and with
        `extra` at the end (a member restarted with other settings)."""
        with open(self.cfg) as f:
            lines = [line for line in f.read().splitlines() if not line.startswith(drop)]
        with open(self.cfg, "w") as f:
            f.write("\n".join(lines) + "\n" + extra)

    def wipe(self):
        """Empties the member's data directory but for myid (a replaced disk). Stopped first."""
        data = os.path.join(self.dir, "data")
        for name in os.listdir(data):
            if name != "myid":
                p = os.path.join(data, name)
                shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)

    def log(self):
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def start(self, env=None, binary=None):
        """Starts the member; `env`: variables added to this process's environment for it;
        `binary`: another build's server (the upgrade test's), else WARDEN_SERVER."""
        binary = binary or os.environ["WARDEN_SERVER"]
        log = open(os.path.join(self.dir, "server.log"), "a")
        self.proc = subprocess.Popen([binary, self.cfg], stdout=log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, **env) if env else None)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def terminate(self):
        """Stops a running member with SIGTERM; returns its exit status (None: it was not running,
        or it did not stop within 30 s and was killed)."""
        if not self.alive():
            return None
        self.proc.send_signal(signal.SIGCONT)
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def mode(self):
        return mode_of(self.client_port) if self.alive() else ""

    def newest_durable_snapshot(self):
        """The zxid of the newest snapshot the member's log says is durable (0: none)."""
        return max((int(z, 16) for z in re.findall(r"snapshot at 0x([0-9a-f]+) written: durable", self.log())),
                   default=0)

    def last_zxid(self):
        """The last zxid the member says it processed (srvr's Zxid), or 0 when it does not answer."""
        m = re.search(r"^Zxid: 0x([0-9a-f]+)$", four_letter(self.client_port, "srvr"), re.M)
        return int(m.group(1), 16) if m else 0


class Ensemble:
    """With `proxied`, each member's configuration reaches the others through a PeerProxy
    (self.proxy), so that a test can partition them."""

    def __init__(self, n, observers=0, tick_ms=200, init_limit=10, sync_limit=None, extra_cfg="", proxied=False):
        self.dir = tempfile.mkdtemp(prefix="warden-ens-")
        self.tick_ms, self.init_limit = tick_ms, init_limit
        self.sync_limit = sync_limit or support_sync_limit()
        self.members = [Member(self, i + 1) for i in range(n)]
        self.members += [Member(self, n + i + 1, observer=True) for i in range(observers)]
        self.proxy = PeerProxy() if proxied else None
        for me in self.members:
            lines = []
            for m in self.members:
                role = ":observer" if m.observer else ""
                q, e = m.quorum_port, m.election_port
                if self.proxy and m is not me:
                    q = self.proxy.add(me.id, m.id, "quorum", q)
                    e = self.proxy.add(me.id, m.id, "election", e)
                lines.append(f"server.{m.id}=127.0.0.1:{q}:{e}{role};127.0.0.1:{m.client_port}")
            member_files(me.dir, me.id, f"tickTime={tick_ms}\ninitLimit={init_limit}\nsyncLimit={self.sync_limit}\n"
                                        f"dataDir={me.dir}/data\n4lw.commands.whitelist=*\nadmin.enableServer=false\n"
                                        f"{'peerType=observer' if me.observer else ''}\n{extra_cfg}\n" +
                         "\n".join(lines) + "\n")

    @property
    def connect_string(self):
        return ",".join(m.hosts for m in self.members)

    def hosts_of(self, members):
        return ",".join(m.hosts for m in members)

    def start(self, wait=True, timeout=60, binary=None):
        for m in self.members:
            m.start(binary=binary)
        if wait:
            self.wait_serving(self.members, timeout)
        return self

    def wait_serving(self, members, timeout=60):
        """Waits until each of `members` completes a client handshake (it serves)."""
        deadline = time.time() + timeout
        for m in members:
            while not handshake_ok(m.client_port):
                if not m.alive():
                    raise RuntimeError(f"server {m.id} exited with {m.proc.returncode}:\n{m.log()[-3000:]}")
                if time.time() > deadline:
                    raise RuntimeError(f"server {m.id} does not serve after {timeout}s:\n{m.log()[-3000:]}")
                time.sleep(0.05)

    def leader(self, timeout=30):
        """The member that says it leads (waits for one)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            for m in self.members:
                if m.alive() and m.mode() == "leader":
                    return m
            time.sleep(0.05)
        raise RuntimeError("no leader within %ss:\n%s" % (timeout, "\n".join(
            f"--- server {m.id}\n{m.log()[-2000:]}" for m in self.members)))

    def settle_bound_s(self):
        """How soon after a heal (every member up, the network whole) a leader must be established and
        a write committed: the simulator's bound (tests/sim: initLimit, then two vote rounds with the
        wait for a better vote; the core ticks ten times a tickTime, votes go out every 2 subticks
        and a decision waits 1) from this ensemble's zoo.cfg, plus one answer's allowance
        (support.answer_timeout_s: 1 s, 3 s on a sanitizer build) for what real processes add: a
        restarted member opening its log, fsyncs, the probe's own connection. ZooKeeper's leader
        alone may wait initLimit * tickTime at each of three steps."""
        subtick_ms = self.tick_ms / 10
        election_ms = self.init_limit * self.tick_ms + 2 * (2 + 1 + 1) * subtick_ms
        return election_ms / 1000 + answer_timeout_s()

    def stop_cleanly(self):
        """SIGTERM to every running member; the ones that did not exit with 0 (a sanitizer's
        report ends a process with another status), as (id, status, log tail)."""
        bad = []
        for m in self.members:
            if m.alive():
                rc = m.terminate()
                if rc != 0:
                    bad.append((m.id, rc, m.log()[-1500:]))
        return bad

    def stop(self, keep=False):
        for m in self.members:
            m.terminate()
        if self.proxy:
            self.proxy.stop()
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            # What the members said is all CI keeps of a failure: show the end of each log.
            for m in self.members:
                print(f"--- server {m.id} ({m.dir}), the end of its log:\n{m.log()[-4000:]}",
                      file=sys.stderr, flush=True)
        self.stop(keep=exc[0] is not None)


class PeerProxy:
    """Sits between members on their peer ports, one listener per (from, to, port), so a test
    can cut members apart while their clients still reach them (a partition). A cut pair's
    connections are closed and new ones are closed at once; heal() lets them through again."""

    def __init__(self):
        import threading
        self.lock = threading.Lock()
        self.cut_pairs = set()
        self.links = {}  # (src, dst, kind) -> (listen socket, target port)
        self.conns = {}  # (src, dst) -> sockets of live connections
        self.stopping = False
        self.delays = {}  # (src, dst) -> seconds each chunk waits before it is passed on

    def delay(self, src, dst, seconds):
        """Peer traffic from src to dst arrives `seconds` late (0: on time)."""
        with self.lock:
            self.delays[(src, dst)] = seconds

    def add(self, src, dst, kind, target_port):
        import threading
        ls = fresh_socket(listen=True)  # never a port probed for a member
        self.links[(src, dst, kind)] = (ls, target_port)
        threading.Thread(target=self._accept, args=(ls, src, dst, target_port), daemon=True).start()
        return ls.getsockname()[1]

    def _accept(self, ls, src, dst, target_port):
        import threading
        while not self.stopping:
            try:
                a, _ = ls.accept()
            except OSError:
                return
            with self.lock:
                blocked = (src, dst) in self.cut_pairs
            if blocked:
                a.close()
                continue
            try:
                b = socket.create_connection(("127.0.0.1", target_port), timeout=2)
                b.settimeout(None)
            except OSError:
                a.close()
                continue
            with self.lock:
                self.conns.setdefault((src, dst), []).extend([a, b])
            for x, y, pair in ((a, b, (src, dst)), (b, a, None)):
                threading.Thread(target=self._pump, args=(x, y, pair), daemon=True).start()

    def _pump(self, x, y, pair):
        try:
            while True:
                data = x.recv(65536)
                if not data:
                    break
                late = self.delays.get(pair, 0) if pair else 0
                if late:
                    time.sleep(late)
                y.sendall(data)
        except OSError:
            pass
        for s in (x, y):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def cut(self, group_a, group_b):
        """No peer traffic between any member of group_a and any of group_b, either way."""
        with self.lock:
            for a in group_a:
                for b in group_b:
                    self.cut_pairs |= {(a, b), (b, a)}
            doomed = [s for pair, socks in self.conns.items() if pair in self.cut_pairs for s in socks]
            for pair in list(self.conns):
                if pair in self.cut_pairs:
                    del self.conns[pair]
        for s in doomed:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def heal(self):
        with self.lock:
            self.cut_pairs.clear()

    def stop(self):
        self.stopping = True
        for ls, _ in self.links.values():
            ls.close()
