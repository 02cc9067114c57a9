"""Dynamic reconfiguration (opcode 16), driven by kazoo's reconfig() on a 3-member ensemble with
reconfigEnabled=true and a super digest, as ZooKeeper 3.5+ answers it: /zookeeper/config as
ZooKeeper writes it (server.N lines, then version=<hex>; the node's version -1) and a getConfig
watch that fires on change; the refusals in ZooKeeper's order and codes (NoAuth without write
permission on /zookeeper/config, BadVersion for a stale fromConfig, BadArguments for member
lists that do not parse or leave one voter, NewConfigNoQuorum when the new voters are not
synchronised); then every kind of change between members that exist: remove a follower, add it
back as an observer, make it a participant again, remove the leader (the rest elect one and
writes go on), a non-incremental member list, and a member restarted from its old zoo.cfg that
rejoins the configuration in force. Writes made between the changes are all there at the end."""
import base64
import hashlib
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import BadArgumentsError, BadVersionError, NewConfigNoQuorumError, NoAuthError

import support
from support import wait_until
from ensemble import Ensemble

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


def expect(exc, fn, what):
    try:
        fn()
        c.check(False, f"{what}: no error")
    except exc:
        c.check(True, what)
    except Exception as e:  # noqa: BLE001 - any other error is a failed check, named
        c.check(False, f"{what}: {type(e).__name__}: {e}")


def main():
    digest = base64.b64encode(hashlib.sha1(b"super:secret").digest()).decode()
    cfg = f"reconfigEnabled=true\nzookeeper.DigestAuthenticationProvider.superDigest=super:{digest}\n"
    with Ensemble(3, extra_cfg=cfg) as ens:
        ens.start()
        admin = KazooClient(hosts=ens.connect_string, auth_data=[("digest", "super:secret")])
        admin.start(timeout=15)
        data, stat = admin.get("/zookeeper/config")
        roles, version = members_of(data.decode())
        c.equal(roles, {1: "participant", 2: "participant", 3: "participant"}, "getConfig names the members")
        c.equal(version, "0", "a static configuration's version is 0")
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
        c.equal(members_of(admin.get("/zookeeper/config")[0].decode())[1], "0", "a refused reconfig changes nothing")

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
        in_force = members_of(data.decode())[1]
        write()
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
        plain.stop()
        plain.close()
        admin.stop()
        admin.close()
    c.finish()


if __name__ == "__main__":
    main()
