"""SASL between members (quorum.auth.enableSasl, learnerRequireSasl, serverRequireSasl, the JAAS
QuorumServer and QuorumLearner sections), with DIGEST-MD5 and with Kerberos from a private KDC
(tests/integration/kdc.py): an ensemble that requires SASL serves; a member with a wrong
password, without SASL, or with a principal of a host that is not a member's does not join and
is logged while the others serve; it joins once its credentials are right; a plaintext ensemble
moves to required SASL by ZooKeeper's rolling procedure (enableSasl, then learnerRequireSasl,
then serverRequireSasl, one member at a time) with writes working at every step; bad settings
stop the start with the file, the key and the reason. it_fault_secured runs it_fault's 3-member
rounds with quorum SASL and TLS (WARDEN_FAULT_SASL=1, WARDEN_FAULT_TLS=1)."""
import os
import shutil
import socket
import struct
import subprocess
import time

import kdc as kdc_module
from ensemble import Ensemble
from support import Checks
from tls_quorum_test import writes_work

c = Checks("sasl-quorum")
KEYS = ("quorum.auth.", "jaasConfigFile")


def digest_jaas(path, learner_password="secret"):
    with open(path, "w") as f:
        f.write('QuorumServer {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n'
                '  user_test="secret"\n  user_other="pw2";\n};\n'
                'QuorumLearner {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n'
                f'  username="test"\n  password="{learner_password}";\n}};\n')
    return path


def kerberos_jaas(path, keytab, principal, learner_keytab=None, learner_principal=None):
    def section(name, kt, p):
        return (f'{name} {{\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n'
                f'  keyTab="{kt}"\n  storeKey=true\n  useTicketCache=false\n  principal="{p}";\n}};\n')
    with open(path, "w") as f:
        f.write(section("QuorumServer", keytab, principal) +
                section("QuorumLearner", learner_keytab or keytab, learner_principal or principal))
    return path


def sasl_cfg(jaas, enable=True, learner=True, server=True, extra=""):
    if jaas is None:
        return ""
    b = lambda v: "true" if v else "false"  # noqa: E731
    return (f"jaasConfigFile={jaas}\nquorum.auth.enableSasl={b(enable)}\nquorum.auth.learnerRequireSasl={b(learner)}\n"
            f"quorum.auth.serverRequireSasl={b(server)}\n{extra}")


def set_cfg(member, extra):
    """The member's zoo.cfg with `extra` in place of its SASL lines."""
    member.rewrite_cfg(extra, KEYS)


def restart(member, extra):
    """Stops the member (it must exit 0: a sanitizer's report would not), starts it with `extra`."""
    rc = member.terminate()
    c.check(rc in (0, None), f"server {member.id} exits cleanly when stopped ({rc})")
    set_cfg(member, extra)
    member.start()


def kept_out(ens, third, what, log_line):
    """Member 3 (just restarted) does not join; the others log why and serve on."""
    time.sleep(4)
    c.check(third.mode() in ("not serving", ""), f"{what}: it does not join ({third.mode()!r})")
    logs = ens.members[0].log() + ens.members[1].log()
    c.check(log_line in logs, f"{what}: the others log '{log_line}'")
    c.check(writes_work(ens.hosts_of(ens.members[:2]), "two"), f"{what}: the other two serve on")


def digest(work):
    good = digest_jaas(os.path.join(work, "quorum-jaas.conf"))
    wrong = digest_jaas(os.path.join(work, "wrong-jaas.conf"), learner_password="nope")
    with Ensemble(3, extra_cfg=sasl_cfg(good)) as ens:
        ens.start()
        c.check(writes_work(ens.connect_string, "sasl"), "DIGEST-MD5: an ensemble requiring SASL serves writes")
        c.check(all("authenticated as test" in m.log() for m in ens.members),
                "every member logs the learners it authenticated (as test)")
        third = ens.members[2]
        restart(third, sasl_cfg(wrong))
        kept_out(ens, third, "a wrong password", "SASL authentication failed")
        restart(third, "")
        kept_out(ens, third, "no SASL at all", "quorum.auth.serverRequireSasl is true")
        garbage_frames(ens.members[0], sender=3)
        restart(third, sasl_cfg(good))
        ens.wait_serving(ens.members, timeout=60)
        c.check(writes_work(third.hosts, "back"), "with the right password it joins again")
        c.equal(ens.stop_cleanly(), [], "DIGEST-MD5: the members exit cleanly")


def garbage_frames(member, sender):
    """Garbage where a member expects SASL (a hello that passes, then bad auth frames): each
    connection is closed, the member serves on."""
    hello = b"WRDP" + struct.pack(">Iqq", 1, sender, member.id)
    auth = lambda body: struct.pack(">I", 0x80000000 | len(body)) + body  # noqa: E731
    cases = {"an empty auth frame": struct.pack(">I", 0x80000000),
             "an auth frame above 64 KiB": struct.pack(">I", 0x80000000 | (1 << 20)),
             "an unknown status": auth(b"\x07abc"),
             "random bytes for a token": auth(b"\x00" + os.urandom(300)),
             "a truncated frame": auth(b"\x00" + b"x" * 50)[:20],
             "a message before authenticating": struct.pack(">I", 4) + b"abcd",
             "random bytes after the hello": os.urandom(200)}
    for what, data in cases.items():
        with socket.create_connection(("127.0.0.1", member.quorum_port), timeout=10) as s:
            s.sendall(hello + data)
            s.settimeout(8)
            got = b""
            try:
                while True:  # a refusal may come first (status 2); then the close
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    got += chunk
                closed = True
            except OSError:
                closed = False
        c.check(closed, f"{what}: the member closes the connection")
    c.check(member.alive() and writes_work(member.hosts, "garbage"), "after the garbage the member serves on")


def rolling(work):
    jaas = digest_jaas(os.path.join(work, "roll-jaas.conf"))
    with Ensemble(3) as ens:
        ens.start()
        c.check(writes_work(ens.connect_string, "plain"), "an ensemble without SASL serves")
        steps = [("enableSasl on", sasl_cfg(jaas, True, False, False)),
                 ("learnerRequireSasl on", sasl_cfg(jaas, True, True, False)),
                 ("serverRequireSasl on", sasl_cfg(jaas, True, True, True))]
        for what, extra in steps:
            for m in ens.members:
                restart(m, extra)
                others = [o for o in ens.members if o is not m]
                c.check(writes_work(ens.hosts_of(others), "roll", timeout=20),
                        f"{what}, server {m.id} restarting: the others take writes")
                ens.wait_serving(ens.members, timeout=60)
            c.check(writes_work(ens.connect_string, "step"), f"{what} on every member: the ensemble serves")
        logs = "".join(m.log() for m in ens.members)
        c.check("has quorum.auth.enableSasl=false" in logs,
                "during the roll, members without SASL answered the ones with it, who went on")
        c.equal(ens.stop_cleanly(), [], "after the roll the members exit cleanly")


def kerberos(work):
    with kdc_module.Kdc(os.path.join(work, "kdc")) as kdc:
        os.environ.update({"KRB5_CONFIG": kdc.krb5_conf, "KRB5RCACHETYPE": "none"})
        keytab, stranger_keytab = os.path.join(work, "quorum.keytab"), os.path.join(work, "stranger.keytab")
        # Members are configured at 127.0.0.1: that is the host of their principal, and _HOST's.
        principal = kdc.principal("zkquorum/127.0.0.1", keytab)
        stranger = kdc.principal("zkquorum/elsewhere", stranger_keytab)
        extra = f"quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST@{kdc_module.REALM}\n"
        jaas = kerberos_jaas(os.path.join(work, "krb-jaas.conf"), keytab, principal)
        with Ensemble(3, extra_cfg=sasl_cfg(jaas, extra=extra)) as ens:
            ens.start()
            c.check(writes_work(ens.connect_string, "krb"), "Kerberos: an ensemble requiring SASL serves writes")
            c.check(all(f"authenticated as {principal}" in m.log() for m in ens.members),
                    "every member logs the learners' principal")
            third = ens.members[2]
            restart(third, sasl_cfg(kerberos_jaas(os.path.join(work, "stranger-jaas.conf"), keytab, principal,
                                                  stranger_keytab, stranger), extra=extra))
            kept_out(ens, third, "a principal of a host that is not a member's", "is not of a member's host")
            restart(third, sasl_cfg(jaas, extra=extra))
            ens.wait_serving(ens.members, timeout=60)
            c.check(writes_work(third.hosts, "krb-back"), "with the members' principal it joins again")
            c.equal(ens.stop_cleanly(), [], "Kerberos: the members exit cleanly")


def refused_at_start(work):
    good = digest_jaas(os.path.join(work, "start-jaas.conf"))
    only_server = os.path.join(work, "server-only.conf")
    with open(only_server, "w") as f:
        f.write('QuorumServer {\n  org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b";\n};\n')
    no_password = os.path.join(work, "no-password.conf")
    with open(no_password, "w") as f:
        f.write('QuorumServer {\n  org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b";\n};\n'
                'QuorumLearner {\n  org.apache.zookeeper.server.auth.DigestLoginModule required username="a";\n};\n')
    cases = [
        ("serverRequireSasl without enableSasl", sasl_cfg(good, False, False, True),
         ["quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.serverRequireSasl"]),
        ("serverRequireSasl without learnerRequireSasl", sasl_cfg(good, True, False, True),
         ["quorum.auth.learnerRequireSasl is disabled"]),
        ("a bad boolean", "quorum.auth.enableSasl=yes please\n", ["zoo.cfg:", "quorum.auth.enableSasl", "true or false"]),
        ("a bad service principal", sasl_cfg(good, extra="quorum.auth.kerberos.servicePrincipal=zkquorum@REALM\n"),
         ["quorum.auth.kerberos.servicePrincipal", "service/host"]),
        ("no JAAS file", "quorum.auth.enableSasl=true\n", ["quorum.auth.enableSasl=true needs a JAAS file"]),
        ("no QuorumLearner section", sasl_cfg(only_server), [only_server, "has no QuorumLearner section"]),
        ("a learner without a password", sasl_cfg(no_password), [no_password, "QuorumLearner", "username and password"]),
        ("garbage for a JAAS file", sasl_cfg(os.path.join(work, "garbage.conf")), ["garbage.conf"]),
    ]
    with open(os.path.join(work, "garbage.conf"), "wb") as f:
        f.write(os.urandom(500))
    ens = Ensemble(3)
    m = ens.members[0]
    try:
        for what, extra, wanted in cases:
            set_cfg(m, extra)
            r = subprocess.run([os.environ["WARDEN_SERVER"], m.cfg], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=60)
            c.equal(r.returncode, 2, f"{what}: the start stops (exit 2, no crash)")
            missing = [w for w in wanted if w not in r.stderr]
            c.check(not missing, f"{what}: the message names {missing}: {r.stderr.strip()!r}")
    finally:
        shutil.rmtree(ens.dir, ignore_errors=True)


def main():
    c.run_parts((refused_at_start, digest, rolling, kerberos), "sasl-quorum-it-")


if __name__ == "__main__":
    main()
