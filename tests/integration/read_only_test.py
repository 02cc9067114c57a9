"""Read-only mode (readonlymode.enabled), as ZooKeeper's: a member of a 3-member ensemble whose
two peers are gone serves kazoo's read-only clients (read_only=True: the ConnectRequest's
readOnly flag) from its own tree: reads answer, writes and sync fail with NotReadOnly, pings
keep the session (one the member already held, as in kazoo's own test, moves to read-only and
back with its id; a new one is handed out: ZooKeeper 3.8 does that only with local sessions,
and without them answers a new read-only session with a NotReadOnly reply header that kazoo
cannot read), `isro` says "ro" (the admin command's read_only is true), and a client that
did not ask for read-only is refused; its peers, without the setting, refuse every client
when alone. Once the peers are back, the member serves read-write
again, says "rw", and the read-only clients (kazoo's, and ZooKeeper's Java client with
canBeReadOnly) find a read-write connection on their own. A bad value
of the key stops the start naming the line."""
import json
import os
import subprocess
import tempfile
import threading
import time
import urllib.request

from kazoo.client import KazooClient
from kazoo.exceptions import NotReadOnlyCallError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KeeperState

import support
from support import wait_until
from ensemble import Ensemble, four_letter

c = support.Checks("read_only")



def isro(member):
    try:
        return four_letter(member.client_port, "isro").strip()
    except OSError:
        return ""


def refused(hosts, read_only, what):
    """Checks that a kazoo client (read-only or not) finds no session at `hosts` within 4 s."""
    client = KazooClient(hosts=hosts, read_only=read_only)
    try:
        client.start(timeout=4)
        c.check(False, what)
    except KazooTimeoutError:
        c.check(True, what)
    client.stop()
    client.close()


def admin_read_only(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/commands/is_read_only", timeout=10) as r:
        return json.loads(r.read().decode()).get("read_only")


def main():
    admin = support.free_port()
    java_cp = support.compile_java(tempfile.mkdtemp(prefix="warden-ro-java-"),
                                   support.java_classpath("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar",
                                                          "slf4j-nop.jar"), "ReadOnlyClient.java")
    cfg = "4lw.commands.whitelist=*\n"
    with Ensemble(3, extra_cfg=cfg) as ens:
        ens.start()
        rw = KazooClient(hosts=ens.connect_string)
        rw.start(timeout=15)
        rw.create("/ro-data", b"v1")
        rw.create("/ro-data/kid", b"k")
        rw.stop()
        rw.close()
        leader = ens.leader()
        alone = next(m for m in ens.members if m is not leader)
        c.equal(isro(alone), "rw", "a member with a quorum says rw")
        alone.rewrite_cfg(f"admin.enableServer=true\nadmin.serverAddress=127.0.0.1\nadmin.serverPort={admin}\n",
                          ("admin.",))
        # Read-only mode as ZooKeeper's users turn it on: -Dreadonlymode.enabled=true in
        # SERVER_JVMFLAGS (zoo.cfg's key is the unit tests').
        alone.terminate()
        os.environ["SERVER_JVMFLAGS"] = "-Xmx512m -Dreadonlymode.enabled=true"
        try:
            alone.start()
        finally:
            del os.environ["SERVER_JVMFLAGS"]
        ens.wait_serving([alone])
        # kazoo's own case: a client with a session on the member when its peers go.
        early = KazooClient(hosts=alone.hosts, read_only=True)
        early.start(timeout=15)
        early_session = early.client_id[0]
        c.equal(early.client_state, KeeperState.CONNECTED, "with a quorum a read-only-capable client is read-write")
        others = [m for m in ens.members if m is not alone]
        for m in others:
            m.kill()
        # Killed one after the other, the peers may still elect between them first: the member
        # can follow one of them (and so not be read-only) until it finds that peer gone too,
        # as a ZooKeeper does. So each view is waited for, and then all three must agree.
        c.check(wait_until(lambda: isro(alone) == "ro", 30), f"alone, the member says ro ({isro(alone)!r})")

        def read_only_everywhere():
            try:
                return (isro(alone) == "ro" and admin_read_only(admin) is True and
                        "Mode: read-only\n" in four_letter(alone.client_port, "srvr"))
            except OSError:
                return False
        c.check(wait_until(read_only_everywhere, 30, step=0.2),
                "isro, the AdminServer's is_read_only (read_only: true) and srvr (Mode: read-only) agree")

        c.check(wait_until(lambda: early.client_state == KeeperState.CONNECTED_RO, 30),
                f"the session already there moves to read-only ({early.client_state})")
        c.equal(early.client_id[0], early_session, "with the same session")
        c.equal(early.get("/ro-data")[0], b"v1", "and reads")

        ro = KazooClient(hosts=alone.hosts, read_only=True)
        ro.start(timeout=15)
        c.equal(ro.client_state, KeeperState.CONNECTED_RO, "a read-only client connects read-only")
        c.equal(ro.get("/ro-data")[0], b"v1", "reads answer from the member's tree")
        c.equal(ro.get_children("/ro-data"), ["kid"], "children too")
        c.check(ro.exists("/nope") is None, "and exists")
        for what, call in (("create", lambda: ro.create("/ro-new", b"x")),
                           ("setData", lambda: ro.set("/ro-data", b"v2")),
                           ("delete", lambda: ro.delete("/ro-data/kid")),
                           ("sync", lambda: ro.sync("/ro-data"))):
            try:
                call()
                c.check(False, f"{what} in read-only mode fails")
            except NotReadOnlyCallError:
                c.check(True, f"{what} in read-only mode fails with NotReadOnly")
        time.sleep(3)  # several ping intervals of kazoo's default 10 s session
        c.equal(ro.client_state, KeeperState.CONNECTED_RO, "pings keep the read-only session")
        c.equal(ro.get("/ro-data/kid")[0], b"k", "and it still reads")

        refused(alone.hosts, False, "a client that did not ask for read-only is refused")

        # ZooKeeper's Java client (canBeReadOnly), given the whole connect string.
        java = subprocess.Popen(["java", "-Xmx128m", "-cp", java_cp, "ReadOnlyClient", ens.connect_string, "/ro-data"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        java_lines = []
        reader = threading.Thread(target=lambda: java_lines.extend(line.strip() for line in java.stdout), daemon=True)
        reader.start()
        c.check(wait_until(lambda: "WAITING" in java_lines or java.poll() is not None, 60),
                f"the Java client reaches its read-only steps: {java_lines}")
        c.equal(java_lines[:3], ["RO", "READ v1", "WRITE NOTREADONLY"],
                "the Java client connects read-only, reads, and is refused a write with NotReadOnly")

        for m in others:
            m.start()
        ens.wait_serving(ens.members)
        c.check(wait_until(lambda: isro(alone) == "rw", 30), "with its peers back, the member says rw again")
        c.check(admin_read_only(admin) is False, "and is_read_only false")
        c.check(wait_until(lambda: ro.client_state == KeeperState.CONNECTED, 60),
                f"the read-only client finds a read-write connection ({ro.client_state})")
        if ro.client_state == KeeperState.CONNECTED:
            ro.create("/ro-after", b"w")
            c.equal(ro.get("/ro-after")[0], b"w", "and writes again")
        ro.stop()
        ro.close()
        try:
            java.wait(timeout=120)
        except subprocess.TimeoutExpired:
            java.kill()
            java.wait()
        reader.join(10)
        c.equal(java_lines[4:], ["RW", "WRITE OK"], "the Java client finds a read-write member by itself and writes "
                                                   f"({java.stderr.read()[-1500:]})")
        c.check(wait_until(lambda: early.client_state == KeeperState.CONNECTED, 60),
                f"the first session is read-write again ({early.client_state})")
        c.equal(early.client_id[0], early_session, "still the same session")
        early.create("/ro-early", b"e", ephemeral=True)
        c.check(early.exists("/ro-early") is not None, "and writes")
        early.stop()
        early.close()
        c.check(alone.alive(), "the member ran throughout")
        # A peer without the setting, alone, refuses read-only clients too.
        last = others[1]
        alone.kill()
        others[0].kill()
        c.check(wait_until(lambda: not support.handshake_ok(last.client_port), 30), "the last peer stops serving")
        refused(last.hosts, True, "a member without readonlymode.enabled refuses a read-only client")
        c.equal(ens.stop_cleanly(), [], "members exit cleanly")

    work = tempfile.mkdtemp(prefix="warden-ro-")
    path = os.path.join(work, "bad.cfg")
    with open(path, "w") as f:
        f.write(f"dataDir={work}/d\nclientPort=0\nreadonlymode.enabled=maybe\n")
    r = subprocess.run([os.environ["WARDEN_SERVER"], path], capture_output=True, text=True, timeout=30)
    c.check(r.returncode == 2 and "bad.cfg:3: readonlymode.enabled=maybe" in r.stderr,
            f"a bad readonlymode.enabled stops the start naming the line: {r.stderr.strip()!r}")
    c.finish()


main()
