"""TLS between members (sslQuorum, ssl.quorum.*, portUnification), with certificates made at
test time: an ensemble on TLS serves; a member whose certificate another CA signed, or that
speaks plaintext to TLS-only members, is refused and logged while the others serve; and a
plaintext ensemble moves to TLS by ZooKeeper's rolling procedure (portUnification on, then
sslQuorum on, then portUnification off, one member at a time) with writes working at every
step. it_fault_secured runs it_fault's 3-member rounds on TLS and SASL (WARDEN_FAULT_TLS=1,
WARDEN_FAULT_SASL=1)."""
import os
import shutil
import tempfile
import time

import tls_certs
from ensemble import Ensemble
from kazoo.client import KazooClient
from support import Checks

c = Checks("tls-quorum")
KEYS = ("sslQuorum", "portUnification", "ssl.quorum.")


def quorum_cfg(certs, ssl_quorum, unification, store="server"):
    return (f"sslQuorum={'true' if ssl_quorum else 'false'}\nportUnification={'true' if unification else 'false'}\n"
            f"ssl.quorum.keyStore.location={certs}/{store}.pem\nssl.quorum.trustStore.location={certs}/ca.pem\n")


def set_cfg(member, extra):
    """The member's zoo.cfg with `extra` in place of its TLS lines."""
    member.rewrite_cfg(extra, KEYS)


def writes_work(hosts, tag, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        zk = KazooClient(hosts=hosts, timeout=5, connection_retry={"max_tries": 1})
        try:
            zk.start(timeout=8)
            path = zk.create(f"/q-{tag}-", b"x", sequence=True)
            return zk.get(path)[0] == b"x"
        except Exception:  # noqa: BLE001 - retried until the deadline
            time.sleep(0.3)
        finally:
            try:
                zk.stop()
                zk.close()
            except Exception:  # noqa: BLE001
                pass
    return False


def on_tls(c, certs):
    with Ensemble(3, extra_cfg=quorum_cfg(certs, True, False)) as ens:
        ens.start()
        c.check(writes_work(ens.connect_string, "tls"), "an ensemble on TLS serves writes")
        c.check(all("members: TLS connections out, TLS only taken in" in m.log() for m in ens.members),
                "every member says its member connections are TLS")
        # Member 3 comes back with a certificate from another CA: the others refuse it.
        third = ens.members[2]
        third.terminate()
        set_cfg(third, quorum_cfg(certs, True, False, store="stranger"))
        third.start()
        time.sleep(3)
        c.check(third.mode() in ("not serving", ""), f"a member with a foreign certificate does not join ({third.mode()})")
        logs = ens.members[0].log() + ens.members[1].log()
        c.check("TLS handshake failed" in logs, "the others log the refused handshake")
        c.check(writes_work(ens.hosts_of(ens.members[:2]), "two"), "the other two serve on")
        # Back with plaintext to TLS-only members: refused as well.
        third.terminate()
        set_cfg(third, "")
        third.start()
        time.sleep(3)
        c.check(third.mode() in ("not serving", ""), "a plaintext member does not join TLS-only members")
        # And with the right certificate it joins.
        third.terminate()
        set_cfg(third, quorum_cfg(certs, True, False))
        third.start()
        ens.wait_serving(ens.members, timeout=60)
        c.check(writes_work(third.hosts, "back"), "with a good certificate it joins again")


def rolling(c, certs):
    with Ensemble(3) as ens:
        ens.start()
        c.check(writes_work(ens.connect_string, "plain"), "a plaintext ensemble serves")
        steps = [("portUnification on", quorum_cfg(certs, False, True)),
                 ("sslQuorum on", quorum_cfg(certs, True, True)),
                 ("portUnification off", quorum_cfg(certs, True, False))]
        for what, extra in steps:
            for m in ens.members:
                m.terminate()
                set_cfg(m, extra)
                m.start()
                others = [o for o in ens.members if o is not m]
                c.check(writes_work(ens.hosts_of(others), "roll", timeout=20),
                        f"{what}, server {m.id} restarting: the others take writes")
                ens.wait_serving(ens.members, timeout=60)
            c.check(writes_work(ens.connect_string, "step"), f"{what} on every member: the ensemble serves")
        c.check(all("members: TLS connections out, TLS only taken in" in m.log() for m in ens.members),
                "after the roll every member is on TLS only")


def main():
    work = tempfile.mkdtemp(prefix="tls-quorum-it-")
    try:
        certs = tls_certs.make(os.path.join(work, "certs"), java_stores=False)
        on_tls(c, certs)
        rolling(c, certs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
