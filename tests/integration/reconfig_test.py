"""Dynamic reconfiguration (opcode 16), driven by kazoo's reconfig() on a 3-member ensemble with
reconfigEnabled=true and a super digest, as ZooKeeper 3.5+ answers it: /zookeeper/config as
ZooKeeper writes it (server.N lines, then version=<hex>; the node's version -1) and a getConfig
watch that fires on change; the refusals in ZooKeeper's order and codes (NoAuth without write
permission on /zookeeper/config, BadVersion for a stale fromConfig, BadArguments for member
lists that do not parse or leave one voter, NewConfigNoQuorum when the new voters are not
synchronised); then every kind of change between members that exist: remove a follower, add it
back as an observer, make it a participant again, remove the leader (the rest elect one and
writes go on), a non-incremental member list, and a member restarted from its old zoo.cfg that
rejoins the configuration in force; growing to 5 with two new machines and shrinking back, each
member writing zoo.cfg.dynamic.<version> as ZooKeeper does; zkCli.sh's config and reconfig; the Java
client's ZooKeeperAdmin and Curator's reconfig and getConfig; the warden command line's config and
reconfig.
Writes made between the changes are all there at the end. Then, with skipACL=yes, a session
without any auth reads and writes another's node and reconfigures; last, on Warden and on
ZooKeeper 3.8 alike, the C++ client follows a reconfig that removes its member, and a member
given another client address listens there at once (its old sessions go on)."""
import base64
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import socket
import threading
import time

from kazoo.client import KazooClient
from kazoo.security import make_digest_acl
from kazoo.exceptions import (BadArgumentsError, BadVersionError, ConnectionLoss, NewConfigNoQuorumError,
                              NoAuthError)

import support
import zkproto as zp
from support import wait_until
from ensemble import Ensemble, Member, mode_of

c = support.Checks("reconfig")


def members_of(text):
    """{id: role} of a configuration text, and its version."""
    roles, version = {}, None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.startswith("server."):
            roles[int(key[7:])] = value.split(";")[0].split(":")[3] if value.count(":") >= 3 else "participant"
        elif key == "version":
            version = value
    return roles, version


def line_of(member, role):
    return (f"server.{member.id}=127.0.0.1:{member.quorum_port}:{member.election_port}:{role};"
            f"127.0.0.1:{member.client_port}")


def new_member(ens, sid, extra=""):
    """A server outside the ensemble, started from a zoo.cfg naming the members and itself (as a
    user starts a machine to add) with `extra` settings, and counted among ens.members so that it
    is stopped."""
    m = Member(ens, sid)
    os.makedirs(os.path.join(m.dir, "data"))
    with open(os.path.join(m.dir, "data", "myid"), "w") as f:
        f.write(f"{sid}\n")
    lines = [line_of(x, "participant") for x in ens.members + [m]]
    with open(m.cfg, "w") as f:
        f.write(f"tickTime={ens.tick_ms}\ninitLimit={ens.init_limit}\nsyncLimit={ens.sync_limit}\n"
                f"dataDir={m.dir}/data\n4lw.commands.whitelist=*\nadmin.enableServer=false\nreconfigEnabled=true\n"
                + extra + "\n".join(lines) + "\n")
    ens.members.append(m)
    m.start()
    return m


def expect(exc, fn, what):
    """`fn` (a refusal, which changes nothing) must raise `exc`. A lost connection (a slow
    sanitizer build's member may miss syncLimit and the ensemble elect again; the last CI's
    TSan run did) is no answer: the call is made again, at most 5 times within 30 s."""
    deadline = time.time() + 30
    for attempt in range(5):
        try:
            fn()
            c.check(False, f"{what}: no error")
        except exc:
            c.check(True, what)
        except ConnectionLoss as e:
            if attempt < 4 and time.time() < deadline:
                print(f"{what}: ConnectionLoss, asking again", flush=True)
                time.sleep(0.5)
                continue
            c.check(False, f"{what}: {type(e).__name__}: {e}")
        except Exception as e:  # noqa: BLE001 - any other error is a failed check, named
            c.check(False, f"{what}: {type(e).__name__}: {e}")
        return


def main():
    java_cp = support.compile_java(tempfile.mkdtemp(prefix="warden-reconfig-java-"), support.java_classpath(
        "curator-client.jar", "curator-framework.jar", "zookeeper.jar", "zookeeper-jute.jar", "guava.jar",
        "slf4j-api.jar", "slf4j-nop.jar"), "ReconfigClients.java")
    digest = base64.b64encode(hashlib.sha1(b"super:secret").digest()).decode()
    cfg = f"reconfigEnabled=true\nzookeeper.DigestAuthenticationProvider.superDigest=super:{digest}\n"
    with Ensemble(3, extra_cfg=cfg) as ens:
        ens.start()
        admin = KazooClient(hosts=ens.connect_string, auth_data=[("digest", "super:secret")])
        admin.start(timeout=15)
        data, stat = admin.get("/zookeeper/config")
        roles, version = members_of(data.decode())
        c.equal(roles, {1: "participant", 2: "participant", 3: "participant"}, "getConfig names the members")
        # As ZooKeeper's first leader versions it (ZOOKEEPER-1783): its epoch's first zxid.
        c.check(version != "0" and version.endswith("00000000"),
                f"the files' configuration gets the first leader's epoch as its version ({version})")
        static_version = version
        c.equal(stat.version, -1, "/zookeeper/config's version is -1, as ZooKeeper's")

        # Refusals.
        plain = KazooClient(hosts=ens.connect_string)
        plain.start(timeout=15)
        expect(NoAuthError, lambda: plain.reconfig(joining=None, leaving="3", new_members=None),
               "a session without write permission on /zookeeper/config gets NoAuth")
        expect(BadVersionError, lambda: admin.reconfig(joining=None, leaving="3", new_members=None, from_config=12345),
               "a stale fromConfig gets BadVersion")
        expect(BadArgumentsError, lambda: admin.reconfig(joining=None, leaving="x\x01", new_members=None),
               "a leaving id that is not a number gets BadArguments")
        expect(BadArgumentsError, lambda: admin.reconfig(joining="server.9=nonsense", leaving=None, new_members=None),
               "a joining line that does not parse gets BadArguments")
        expect(BadArgumentsError, lambda: admin.reconfig(joining="server.9=127.0.0.1:1:2", leaving=None,
                                                         new_members=None),
               "a joiner without a client address gets BadArguments")
        expect(BadArgumentsError, lambda: admin.reconfig(joining=None, leaving="2,3", new_members=None),
               "leaving one voter (standaloneEnabled) gets BadArguments")
        two = ens.members[1]
        expect(BadArgumentsError, lambda: admin.reconfig(
            joining=f"server.7=127.0.0.1:{two.quorum_port}:{support.free_port()}:participant;127.0.0.1:1", leaving=None,
            new_members=None), "a joiner on a member's address gets BadArguments")
        p = [support.free_port() for _ in range(6)]
        far = (f"{line_of(ens.members[0], 'participant')},server.8=127.0.0.1:{p[0]}:{p[1]}:participant;127.0.0.1:{p[2]},"
               f"server.9=127.0.0.1:{p[3]}:{p[4]}:participant;127.0.0.1:{p[5]}")
        expect(NewConfigNoQuorumError, lambda: admin.reconfig(joining=None, leaving=None, new_members=far),
               "new voters that are not synchronised get NewConfigNoQuorum")
        c.equal(members_of(admin.get("/zookeeper/config")[0].decode())[1], static_version,
                "a refused reconfig changes nothing")

        fired = threading.Event()
        admin.get("/zookeeper/config", watch=lambda event: fired.set())
        written = []

        def write():
            path = admin.create("/rc-", b"x", sequence=True)
            written.append(path)

        write()
        leader = ens.leader()
        follower = next(m for m in ens.members if m is not leader)
        # Remove a follower.
        data, stat = admin.reconfig(joining=None, leaving=str(follower.id), new_members=None)
        roles, version = members_of(data.decode())
        c.equal(sorted(roles), sorted(m.id for m in ens.members if m is not follower),
                "removing a follower leaves the other two")
        c.equal(version, format(stat.mzxid, "x"), "the version is the reconfig's zxid")
        c.check(fired.wait(10), "a getConfig watch fires on the change")
        write()
        # Back as an observer, then a participant again.
        data, _ = admin.reconfig(joining=line_of(follower, "observer"), leaving=None, new_members=None)
        c.equal(members_of(data.decode())[0].get(follower.id), "observer", "the removed member is back as an observer")
        c.check(wait_until(lambda: follower.mode() == "observer", 20), f"server {follower.id} observes")
        write()
        data, _ = admin.reconfig(joining=line_of(follower, "participant"), leaving=None, new_members=None)
        c.equal(members_of(data.decode())[0].get(follower.id), "participant", "and a participant again")
        c.check(wait_until(lambda: follower.mode() == "follower", 20), f"server {follower.id} follows again")
        write()
        # Remove the leader: the others elect one, and writes go on.
        data, _ = admin.reconfig(joining=None, leaving=str(leader.id), new_members=None)
        c.check(leader.id not in members_of(data.decode())[0], "the leader is removed")
        rest = [m for m in ens.members if m is not leader]
        c.check(wait_until(lambda: any(m.mode() == "leader" for m in rest), 20), "one of the rest leads")
        c.check(wait_until(lambda: leader.mode() != "leader", 20), "the removed leader no longer leads")
        write()
        # The whole list at once (non-incremental), everyone a participant.
        data, _ = admin.reconfig(joining=None, leaving=None,
                                 new_members="\n".join(line_of(m, "participant") for m in ens.members))
        c.equal(sorted(members_of(data.decode())[0]), [1, 2, 3], "a non-incremental list restores all three")
        write()
        # Grow 3 to 5 with two new machines, then shrink back to 3.
        first_three = list(ens.members)
        four, five = new_member(ens, 4), new_member(ens, 5)
        data, _ = admin.reconfig(joining=f"{line_of(four, 'participant')},{line_of(five, 'participant')}", leaving=None,
                                 new_members=None)
        c.equal(sorted(members_of(data.decode())[0]), [1, 2, 3, 4, 5], "two new servers join")
        for m in (four, five):
            c.check(wait_until(lambda: m.mode() in ("follower", "leader"), 30), f"new server {m.id} follows")
        write()
        grown = KazooClient(hosts=four.hosts)
        grown.start(timeout=15)
        grown.sync("/")
        c.equal(len([p for p in grown.get_children("/") if p.startswith("rc-")]), len(written),
                "a new server serves what was written before it joined")
        grown.stop()
        grown.close()
        data, _ = admin.reconfig(joining=None, leaving="4,5", new_members=None)
        c.equal(sorted(members_of(data.decode())[0]), [1, 2, 3], "and the ensemble shrinks back to three")
        in_force = members_of(data.decode())[1]
        write()
        # Each member wrote the configuration as ZooKeeper does: zoo.cfg.dynamic.<version>,
        # named by zoo.cfg's dynamicConfigFile, its server.N lines gone from zoo.cfg.
        for m in first_three:
            dynamic = f"{m.cfg}.dynamic.{in_force}"
            c.check(wait_until(lambda: os.path.exists(dynamic), 10), f"server {m.id} wrote {os.path.basename(dynamic)}")

            def static_names_it():
                static = pathlib.Path(m.cfg).read_text()
                return f"dynamicConfigFile={dynamic}" in static and "\nserver." not in static

            # The member writes the dynamic file first, then zoo.cfg (as ZooKeeper does): wait
            # for the second as well.
            c.check(wait_until(static_names_it, 10), f"server {m.id}'s zoo.cfg names it:\n{pathlib.Path(m.cfg).read_text()}")
            if os.path.exists(dynamic):
                with open(dynamic) as f:
                    c.equal(sorted(members_of(f.read())[0]), [1, 2, 3], f"server {m.id}'s dynamic file lists the members")
        # A member restarted from its old zoo.cfg joins the configuration in force.
        again = ens.members[0]
        again.kill()
        again.start()
        ens.wait_serving([again], 60)
        probe = KazooClient(hosts=again.hosts)
        probe.start(timeout=15)
        c.equal(members_of(probe.get("/zookeeper/config")[0].decode())[1], in_force,
                "a restarted member serves the configuration in force")
        probe.sync("/")
        c.equal(sorted("/" + p for p in probe.get_children("/") if p.startswith("rc-")), sorted(written),
                "every write made between the changes is there")
        probe.stop()
        probe.close()
        # zkCli.sh's config and reconfig, as ZooKeeper's users type them.
        lead = ens.leader()
        other = next(m for m in first_three if m is not lead)
        out = support.run_zkcli(lead.hosts, f"""config
reconfig -remove {other.id}
addauth digest super:secret
reconfig -remove {other.id}
reconfig -v 1 -add {line_of(other, 'participant')}
reconfig -add {line_of(other, 'participant')}
config
""")
        lines = out.splitlines()
        configs = [i for i, line in enumerate(lines) if line.startswith("version=")]
        c.check(len(configs) == 4 and lines[configs[0]] == f"version={in_force}",
                f"zkCli's config prints the configuration:\n{out[-3000:]}")
        c.check("Insufficient permission : " in lines, "zkCli's reconfig without the super user: NoAuth")
        c.equal(lines.count("Committed new configuration:"), 2, "zkCli's reconfig -remove and -add commit")
        c.check("version No is not valid : " in lines, "zkCli's reconfig -v with a stale version: BadVersion")
        if configs:
            last = "\n".join(lines[configs[-1] - 3:configs[-1] + 1])
            c.equal(sorted(members_of(last)[0]), [1, 2, 3], "zkCli's last config lists the three again")
        # The Java client's ZooKeeperAdmin and Curator, each removing a follower and adding it back.
        lead = ens.leader()
        other = next(m for m in first_three if m is not lead)
        out = subprocess.run(["java", "-Xmx128m", "-cp", java_cp, "ReconfigClients", lead.hosts, "secret", str(other.id),
                              line_of(other, "participant")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=180).stdout
        got = {tuple(line.split(" ", 2)[:2]): line.split(" ", 2)[2] for line in out.splitlines()
               if line.startswith(("JAVA ", "CURATOR ")) and line.count(" ") >= 2}
        rest = ",".join(str(m.id) for m in first_three if m is not other)
        for client in ("JAVA", "CURATOR"):
            c.check(got.get((client, "CONFIG"), "").startswith("version="), f"{client}'s getConfig:\n{out[-2000:]}")
            c.equal(got.get((client, "REMOVED")), rest, f"{client}'s reconfig removes server {other.id}")
            c.equal(got.get((client, "ADDED")), "1,2,3", f"{client}'s reconfig adds it back")
        # Warden's own command line: config and reconfig (the C++ client library's calls).
        cli = os.environ.get("WARDEN_CLI", os.path.join(os.path.dirname(os.environ["WARDEN_SERVER"]), "..", "recipes",
                                                        "warden"))

        def warden(*args):
            r = subprocess.run([cli, "--server", lead.hosts, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=60)
            return r.returncode, r.stdout

        lead = ens.leader()
        other = next(m for m in first_three if m is not lead)
        rc, out = warden("config")
        c.check(rc == 0 and sorted(members_of(out)[0]) == [1, 2, 3], f"warden config prints the members: {rc} {out}")
        rc, out = warden("reconfig", "-remove", str(other.id))
        c.check(rc == 1 and "Insufficient permission : /zookeeper/config" in out,
                f"warden reconfig without the super user: NoAuth, as zkCli words it: {rc} {out}")
        rc, out = warden("--auth", "digest:super:secret", "reconfig", "-remove", str(other.id))
        c.check(rc == 0 and out.startswith("Committed new configuration:") and other.id not in members_of(out)[0],
                f"warden reconfig -remove: {rc} {out}")
        rc, out = warden("--auth", "digest:super:secret", "reconfig", "-v", "1", "-add", line_of(other, "participant"))
        c.check(rc == 1 and "version No is not valid" in out, f"warden reconfig -v with a stale version: {rc} {out}")
        rc, out = warden("--auth", "digest:super:secret", "reconfig", "-add", line_of(other, "participant"))
        c.check(rc == 0 and sorted(members_of(out)[0]) == [1, 2, 3], f"warden reconfig -add: {rc} {out}")
        rc, out = warden("reconfig")
        c.check(rc == 2 and "reconfig needs" in out, f"warden reconfig without a change is a usage error: {rc} {out}")
        plain.stop()
        plain.close()
        admin.stop()
        admin.close()
    shutil.rmtree(java_cp.split(":")[0], ignore_errors=True)
    skip_acl()
    client_follows(digest)
    grow_from_one()
    c.finish()


def grow_from_one():
    """standaloneEnabled=false: one server is an ensemble of one (it leads), and grows: a server
    started with the members' lines and its own follows the leader from outside the
    configuration, so `reconfig -add` of it as a participant commits at once; then a third. The
    first one SIGKILLed, the two others go on. On Warden, and on ZooKeeper 3.8 the same way."""
    for name in support.compared_servers():
        work = tempfile.mkdtemp(prefix="warden-grow-")
        ports = {i: (support.free_port(), support.free_port(), support.free_port()) for i in (1, 2, 3)}
        procs = {}

        def line(i):
            client, quorum, election = ports[i]
            return f"server.{i}=127.0.0.1:{quorum}:{election}:participant;127.0.0.1:{client}"

        def start(i, members):
            d = os.path.join(work, str(i))
            cfg = support.member_files(
                d, i, f"tickTime=200\ninitLimit=10\nsyncLimit={support.sync_limit()}\ndataDir={d}/data\n4lw.commands.whitelist=*\n"
                      f"admin.enableServer=false\nreconfigEnabled=true\nstandaloneEnabled=false\nskipACL=yes\n" +
                      "".join(line(m) + "\n" for m in members))
            cmd = ([os.environ["WARDEN_SERVER"], cfg] if name == "Warden" else
                   ["java", "-Xmx256m", "-cp", support.ZK_CLASSPATH, "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                    cfg])
            procs[i] = subprocess.Popen(cmd, stdout=open(os.path.join(d, "server.log"), "w"), stderr=subprocess.STDOUT)

        def mode(i):
            return mode_of(ports[i][0])

        def add(k, i):
            for _ in range(100):
                try:
                    return k.reconfig(joining=line(i), leaving=None, new_members=None)[0].decode()
                except NewConfigNoQuorumError:
                    time.sleep(0.2)
            return ""

        try:
            start(1, [1])
            c.check(wait_until(lambda: mode(1) == "leader", 60), f"{name}: one server with standaloneEnabled=false leads")
            k = KazooClient(hosts=f"127.0.0.1:{ports[1][0]}")
            k.start(timeout=30)
            k.create("/grown", b"from one")
            start(2, [1, 2])
            c.check(wait_until(lambda: mode(2) == "follower", 60),
                    f"{name}: a server started with itself in its file follows before it is added ({mode(2)!r})")
            data = add(k, 2)
            c.equal(sorted(members_of(data)[0]), [1, 2], f"{name}: reconfig -add of it commits")
            start(3, [1, 2, 3])
            c.check(wait_until(lambda: mode(3) == "follower", 60), f"{name}: a third follows before it is added")
            c.equal(sorted(members_of(add(k, 3))[0]), [1, 2, 3], f"{name}: and is added")
            k.stop()
            k.close()
            procs[1].kill()
            procs[1].wait()
            k2 = KazooClient(hosts=f"127.0.0.1:{ports[2][0]},127.0.0.1:{ports[3][0]}")
            k2.start(timeout=30)
            k2.set("/grown", b"without the first")
            c.equal(k2.get("/grown")[0], b"without the first", f"{name}: the first one killed, the two others write")
            k2.stop()
            k2.close()
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.terminate()
                    p.wait()
            shutil.rmtree(work, ignore_errors=True)


RECIPES_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.environ["WARDEN_SERVER"])), "tests", "recipes",
                             "warden-recipes-tests")


def client_follows(digest):
    """Our C++ client follows the member list (tests/recipes/recipes_test.cpp's "[follow]" test):
    connected to one member that a reconfig removes, it moves on with its session. On Warden, and
    on ZooKeeper 3.8 run the same way, the reference."""
    ensembles = [("Warden", lambda: Ensemble(3, extra_cfg=f"reconfigEnabled=true\n"
                                                        f"DigestAuthenticationProvider.superDigest=super:{digest}\n"))]
    if support.with_reference():
        ensembles.append(("ZooKeeper 3.8", lambda: support.ZkEnsemble(
            3, 500, 256, jvm_flags=[f"-Dzookeeper.DigestAuthenticationProvider.superDigest=super:{digest}"],
            extra_cfg="reconfigEnabled=true\n")))
    for name, make in ensembles:
        ens = make()
        try:
            if name == "Warden":
                # clientPort beside the members' lines, agreeing with them, as many zoo.cfg files have it
                for m in ens.members:
                    m.rewrite_cfg(f"clientPort={m.client_port}\nclientPortAddress=127.0.0.1\n", ())
            ens.start()
            first = ens.members[0]
            port = first.client_port if hasattr(first, "client_port") else first["client_port"]
            r = subprocess.run([RECIPES_TESTS, "[follow]"], capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, WARDEN_TEST_HOSTS=f"127.0.0.1:{port}"))
            c.check(r.returncode == 0 and "All tests passed" in r.stdout,
                    f"{name}: the C++ client follows a reconfig off its member\n{r.stdout[-3000:]}{r.stderr[-1000:]}")
            client_address_change(name, ens)
        finally:
            ens.stop()


def client_address_change(name, ens):
    """A reconfig that gives a member another client address (127.0.0.2 and a new port): the
    member listens there at once, no longer on the old one, and the session made on the old one
    goes on."""
    def attr(m, key):
        return getattr(m, key) if hasattr(m, key) else m[key]

    m, other = ens.members[1], ens.members[0]
    old = KazooClient(hosts=f"127.0.0.1:{attr(m, 'client_port')}")
    old.start(timeout=15)
    admin = KazooClient(hosts=f"127.0.0.1:{attr(other, 'client_port')}", auth_data=[("digest", "super:secret")])
    admin.start(timeout=15)
    port = support.free_port()
    line = (f"server.{attr(m, 'id')}=127.0.0.1:{attr(m, 'quorum_port')}:{attr(m, 'election_port')}:participant;"
            f"127.0.0.2:{port}")
    data, _ = admin.reconfig(joining=line, leaving=None, new_members=None)
    c.check(line in data.decode(), f"{name}: the configuration names the member's new client address")

    def session_on(host, p):
        try:
            sock = socket.create_connection((host, p), timeout=2)
            zp.Session(p, sock=sock).sock.close()
            return True
        except (OSError, RuntimeError):
            return False

    c.check(wait_until(lambda: session_on("127.0.0.2", port), 15),
            f"{name}: the member takes new sessions on its new client address")
    c.check(not session_on("127.0.0.1", attr(m, "client_port")), f"{name}: and no longer on the old one")
    old.create("/moved-address", b"x")
    c.equal(admin.get("/moved-address")[0], b"x", f"{name}: a session made on the old address goes on")
    admin.delete("/moved-address")
    if name == "Warden":
        # As ZooKeeper's editStaticConfig, the static clientPort and clientPortAddress went when the
        # member's line came to name its client address: restarted, it serves where the line says.
        with open(m.cfg) as f:
            static = f.read()
        c.check(not re.search(r"^clientPort(Address)?=", static, re.M),
                f"{name}: the static clientPort and clientPortAddress are gone ({static!r})")
        m.terminate()
        m.start()
        c.check(wait_until(lambda: session_on("127.0.0.2", port), 30),
                f"{name}: restarted, the member serves on its new client address\n{m.log()[-2000:]}")
        # An address it cannot bind (another process listens there): logged, the current one kept.
        taken = support.fresh_socket(listen=True)
        taken.listen(1)
        busy = taken.getsockname()[1]
        bad = line.replace(f"127.0.0.2:{port}", f"127.0.0.1:{busy}")
        admin.reconfig(joining=bad, leaving=None, new_members=None)
        c.check(wait_until(lambda: "cannot be bound" in m.log(), 15),
                f"{name}: a client address the member cannot bind is logged")
        c.check(session_on("127.0.0.2", port), f"{name}: and the member keeps taking sessions where it was")
        taken.close()
    for k in (old, admin):
        k.stop()
        k.close()


def skip_acl():
    """skipACL=yes (ZooKeeper's zookeeper.skipACL): a session without any auth may reconfig, and
    read and write a node whose ACL names someone else."""
    with Ensemble(3, extra_cfg="reconfigEnabled=true\nskipACL=yes\n") as ens:
        ens.start()
        owner = KazooClient(hosts=ens.connect_string, auth_data=[("digest", "alice:secret")])
        owner.start(timeout=15)
        owner.create("/mine", b"s", acl=[make_digest_acl("alice", "secret", all=True)])
        plain = KazooClient(hosts=ens.connect_string)
        plain.start(timeout=15)
        c.equal(plain.get("/mine")[0], b"s", "skipACL: a stranger reads a node whose ACL names alice")
        plain.set("/mine", b"t")
        # Another session may be on a member that has not applied the write yet: ZooKeeper
        # promises it only after a sync (its reads are sequentially consistent, per session).
        owner.sync("/mine")
        c.equal(owner.get("/mine")[0], b"t", "skipACL: a stranger writes it")
        gone = ens.members[2].id
        data, _ = plain.reconfig(joining=None, leaving=str(gone), new_members=None)
        c.equal(sorted(members_of(data.decode())[0]), sorted(m.id for m in ens.members[:2]),
                "skipACL: a session without the super user reconfigures")
        for k in (plain, owner):
            k.stop()
            k.close()


if __name__ == "__main__":
    main()
