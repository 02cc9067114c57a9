"""Clients configured for SASL against a server that offers none (Warden, and ZooKeeper 3.8
without SASL configured, side by side): they must fail with AUTH_FAILED and never hang.

ZooKeeper answers every SASL packet with OK and no token. The Java client fails on the missing
token at once; kazoo sends again and again until ZooKeeper expires its session (about the
session timeout), and an earlier Warden answered each resend and kept the session alive for
ever. Warden gives ZooKeeper's answer to the first packet and AUTH_FAILED, closing the
connection, to a second: both clients fail, kazoo within one round trip."""
import os
import subprocess
import tempfile
import threading
import time

import support
from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError
from kazoo.handlers.threading import KazooTimeoutError

HERE = os.path.dirname(os.path.abspath(__file__))
JARS = ["zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar"]
KAZOO_TIMEOUT = 6.0  # the session timeout kazoo asks for; ZooKeeper gives up after about it


def kazoo_outcome(hosts, mechanism, **options):
    """Starts a kazoo client with SASL; returns (what happened, seconds it took)."""
    states = []
    zk = KazooClient(hosts=hosts, timeout=KAZOO_TIMEOUT, connection_retry={"max_tries": 0},
                     sasl_options={"mechanism": mechanism, **options})
    zk.add_listener(states.append)
    start = time.time()
    outcome = "no failure"
    try:
        zk.start(timeout=30)
        # kazoo reports CONNECTED before its SASL exchange ends; the failure comes as LOST.
        deadline = time.time() + 30
        while time.time() < deadline and "LOST" not in states:
            time.sleep(0.05)
        if "LOST" in states:
            outcome = "lost"
    except AuthFailedError:
        outcome = "auth failed"
    except KazooTimeoutError:
        # start() gives up at once when the connection thread failed before it was ever live
        # (GSSAPI without Kerberos credentials, a race inside kazoo): a failure all the same,
        # the client state below says whether it stopped.
        outcome = "auth failed"
    except Exception as e:  # noqa: BLE001 - any other error is a wrong outcome, reported as such
        outcome = f"{type(e).__name__}: {e}"
    took = time.time() - start
    # A client still in its SASL loop would not stop: never wait on it for long.
    stopper = threading.Thread(target=lambda: (zk.stop(), zk.close()), daemon=True)
    stopper.start()
    stopper.join(10)
    # kazoo stops its connection loop for good after AUTH_FAILED; its state says so.
    return outcome, zk.client_state, took


def still_serves(hosts):
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=20)
    try:
        path = zk.create("/after-sasl-", b"x", sequence=True)
        return zk.get(path)[0] == b"x"
    finally:
        zk.stop()
        zk.close()


def java_outcome(cp, hosts, jaas):
    r = subprocess.run(["java", "-Xmx128m", f"-Djava.security.auth.login.config={jaas}", "-cp", cp, "SaslClient",
                        hosts, "20"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    return r.stdout.strip().splitlines()


def has_gssapi():
    try:
        import kerberos  # noqa: F401 - puresasl's GSSAPI mechanism needs it
        return True
    except ImportError:
        return False


def main():
    c = support.Checks("sasl")
    work = tempfile.mkdtemp(prefix="sasl-it-")
    cp = support.java_classpath(*JARS)
    subprocess.run(["javac", "-d", work, "-cp", cp, os.path.join(HERE, "java", "SaslClient.java")], check=True,
                   timeout=300)
    cp = work + ":" + cp
    jaas = os.path.join(work, "jaas.conf")
    with open(jaas, "w") as f:
        f.write('Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n'
                '  username="bob"\n  password="secret";\n};\n')
    mechanisms = [("DIGEST-MD5", {"username": "bob", "password": "secret"})]
    if has_gssapi():
        # No Kerberos here: puresasl fails before it sends a token, on both servers alike.
        mechanisms.append(("GSSAPI", {}))
    else:
        print("GSSAPI: python3-kerberos is not installed, so kazoo cannot ask for it; DIGEST-MD5 only", flush=True)

    results = {}
    with support.start_zookeeper() as zk, support.start_warden() as w:
        for name, srv in (("ZooKeeper", zk), ("Warden", w)):
            for mech, opts in mechanisms:
                outcome, state, took = kazoo_outcome(srv.hosts, mech, **opts)
                print(f"{name}: kazoo {mech}: {outcome}, client {state}, {took:.2f} s", flush=True)
                # How the failure surfaced (LOST or an exception from start) depends on timing.
                results[(name, "kazoo", mech)] = ("failed" if outcome in ("lost", "auth failed") else outcome, state)
                c.check(outcome in ("lost", "auth failed") and state == "CLOSED",
                        f"{name}: kazoo with {mech} fails and stops ({outcome}, {state})")
                # How fast is the server's doing only where the exchange reaches it: GSSAPI without
                # Kerberos credentials fails inside kazoo before its first SASL packet, and how long
                # kazoo's start() then takes is a race of its own threads (up to its 30 s timeout
                # on a loaded machine, with either server).
                if name == "Warden" and mech != "GSSAPI":
                    c.check(took < 5, f"Warden: kazoo with {mech} fails within one round trip, not at expiry "
                                      f"({took:.2f} s)")
            lines = java_outcome(cp, srv.hosts, jaas)
            print(f"{name}: Java client: {lines}", flush=True)
            results[(name, "java")] = lines[-1] if lines else ""
            c.equal(lines[-1] if lines else "", "DONE AuthFailed", f"{name}: the Java client is told AuthFailed")
            c.check(still_serves(srv.hosts), f"{name}: serves other clients afterwards")
        c.check(w.alive(), "Warden is still running")
    for key in [k for k in results if k[0] == "Warden"]:
        zk_key = ("ZooKeeper",) + key[1:]
        c.equal(results[key], results[zk_key], f"Warden ends {key[1:]} as ZooKeeper does")
    c.finish()


if __name__ == "__main__":
    main()
