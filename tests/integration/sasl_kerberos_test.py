"""SASL Kerberos (GSSAPI) on client connections, with a real MIT KDC started by the test (its
own realm on a loopback port, principals and keytabs from kadmin.local), against Warden and
ZooKeeper 3.8 given the same JAAS Server section (Krb5LoginModule, keyTab, principal): kazoo
with a ticket from kinit, the Java client with a keytab (whoAmI), a client without credentials,
sasl ACLs through 'auth', and kerberos.removeHostFromPrincipal / removeRealmFromPrincipal."""
import os
import re
import shutil
import subprocess
import tempfile
import threading

import kdc as kdc_module
import support
from kazoo.client import KazooClient
from kazoo.security import make_acl

JAVA_CP = support.java_classpath("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar",
                                 "curator-client.jar", "curator-framework.jar", "curator-recipes.jar", "guava.jar")
CFG = "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"


def kazoo_outcome(port, env, ccache):
    """kazoo with GSSAPI and the ticket in `ccache` (None: no ticket); the ACL 'auth' gives."""
    old = os.environ.copy()
    os.environ.update(env)
    os.environ["KRB5CCNAME"] = ccache or "FILE:/nonexistent/ccache"
    zk = KazooClient(hosts=f"localhost:{port}", sasl_options={"mechanism": "GSSAPI"}, timeout=6,
                     connection_retry={"max_tries": 1})
    try:
        zk.start(timeout=10)
        path = zk.create("/krb-", b"x", sequence=True, acl=[make_acl("auth", "", all=True)])
        return [(a.id.scheme, a.id.id) for a in zk.get_acls(path)[0]]
    except Exception as e:  # noqa: BLE001 - the kind of failure is the outcome
        # Without a ticket kazoo fails inside puresasl before it sends a SASL packet; whether
        # start() then reports AuthFailed or its timeout is a race of kazoo's own threads.
        return "failed" if type(e).__name__ in ("AuthFailedError", "KazooTimeoutError") else type(e).__name__
    finally:
        t = threading.Thread(target=lambda: (zk.stop(), zk.close()), daemon=True)
        t.start()
        t.join(10)
        os.environ.clear()
        os.environ.update(old)


def cli_outcome(port, env, ccache):
    """`warden` (the C++ client) with GSSAPI and the ticket in `ccache`: the ACL 'auth' gives."""
    e = {**os.environ, **env, "KRB5CCNAME": ccache, "WARDEN_SASL_MECHANISM": "GSSAPI"}
    path = "/cli-krb"
    out = []
    for args in (["create", path, "v"], ["setAcl", path, "auth::cdrwa"], ["getAcl", path]):
        r = subprocess.run([os.environ["WARDEN_CLI"], "--timeout-ms", "5000", "--server", f"localhost:{port}", *args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60, env=e)
        out.append((r.returncode, r.stdout.strip()))
    return out


def client_flags(kdc, work, principal, keytab):
    """The JVM flags of a Java client (the Java client, zkCli.sh, Curator) logging in from a keytab."""
    jaas = os.path.join(work, f"client-{re.sub('[^a-z]', '', principal)}.conf")
    with open(jaas, "w") as f:
        f.write("Client {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n"
                f'  keyTab="{keytab}"\n  storeKey=true\n  useTicketCache=false\n  principal="{principal}";\n}};\n')
    return [f"-Djava.security.krb5.conf={kdc.krb5_conf}", f"-Djava.security.auth.login.config={jaas}"]


def zkcli_outcome(port, kdc, work, principal, keytab):
    return support.zkcli_lines(f"localhost:{port}", "create /zkcli-krb hi\nget /zkcli-krb\nwhoami\n",
                               client_flags(kdc, work, principal, keytab),
                               ("Created", "hi", "Auth scheme", "ip:", "sasl:"), env=kdc.env)


def curator_outcome(port, kdc, work, principal, keytab):
    return support.curator_lines(f"localhost:{port}", client_flags(kdc, work, principal, keytab), JAVA_CP,
                                 env=kdc.env)


def java_outcome(port, kdc, work, principal, keytab):
    flags = client_flags(kdc, work, principal, keytab)
    r = subprocess.run(["java", "-Xmx128m", *flags, "-cp", JAVA_CP, "TlsClient", f"localhost:{port}",
                        "/java-krb-"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                       env=kdc.env)
    return [line for line in r.stdout.splitlines() if re.match(r"(NOT )?CONNECTED|CREATE|WHOAMI", line)]


def start(name, kdc, jaas, extra=""):
    flags = [f"-Djava.security.krb5.conf={kdc.krb5_conf}", f"-Djava.security.auth.login.config={jaas}"]
    old = os.environ.copy()
    os.environ.update({"KRB5_CONFIG": kdc.krb5_conf, "KRB5RCACHETYPE": "none"})
    try:
        if name == "ZooKeeper":
            return support.start_zookeeper(extra_cfg=CFG + extra, jvm_flags=flags)
        return support.start_warden(CFG + extra + f"jaasConfigFile={jaas}\n")
    finally:
        os.environ.clear()
        os.environ.update(old)


def main():
    c = support.Checks("sasl-kerberos")
    work = tempfile.mkdtemp(prefix="sasl-krb-it-")
    global JAVA_CP
    try:
        JAVA_CP = support.compile_java(work, JAVA_CP, "TlsClient.java", "CuratorTls.java")
        with kdc_module.Kdc(os.path.join(work, "kdc")) as kdc:
            realm = kdc_module.REALM
            server_keytab = os.path.join(work, "server.keytab")
            kdc.principal("zookeeper/localhost", server_keytab)
            alice_keytab = os.path.join(work, "alice.keytab")
            kdc.principal("alice", alice_keytab)
            svc_keytab = os.path.join(work, "svc.keytab")
            kdc.principal("svc/localhost", svc_keytab)
            ccache = f"FILE:{work}/alice.ccache"
            kdc.kinit(f"alice@{realm}", alice_keytab, ccache)
            jaas = os.path.join(work, "server-jaas.conf")
            with open(jaas, "w") as f:
                f.write("Server {\n  com.sun.security.auth.module.Krb5LoginModule required\n  useKeyTab=true\n"
                        f'  keyTab="{server_keytab}"\n  storeKey=true\n  useTicketCache=false\n'
                        f'  principal="zookeeper/localhost@{realm}";\n}};\n')
            results = {}
            for name in support.compared_servers():
                r = {}
                with start(name, kdc, jaas) as srv:
                    r["kazoo alice"] = kazoo_outcome(srv.port, kdc.env, ccache)
                    r["kazoo without a ticket"] = kazoo_outcome(srv.port, kdc.env, None)
                    r["warden alice"] = cli_outcome(srv.port, kdc.env, ccache)
                    r["Java alice"] = java_outcome(srv.port, kdc, work, f"alice@{realm}", alice_keytab)
                    r["Java svc/localhost"] = java_outcome(srv.port, kdc, work, f"svc/localhost@{realm}", svc_keytab)
                    r["zkCli.sh alice"] = zkcli_outcome(srv.port, kdc, work, f"alice@{realm}", alice_keytab)
                    r["Curator alice"] = curator_outcome(srv.port, kdc, work, f"alice@{realm}", alice_keytab)
                    if name == "Warden":
                        c.check(srv.alive(), "Warden still runs")
                with start(name, kdc, jaas, "kerberos.removeHostFromPrincipal=true\n"
                                            "kerberos.removeRealmFromPrincipal=true\n") as srv:
                    r["Java svc/localhost, host and realm removed"] = java_outcome(srv.port, kdc, work,
                                                                                   f"svc/localhost@{realm}",
                                                                                   svc_keytab)
                results[name] = r
                print(f"{name}: {r}", flush=True)
            for key, want in results.get("ZooKeeper", {}).items():
                c.equal(results["Warden"][key], want, f"{key}: Warden as ZooKeeper")
            w = results["Warden"]
            c.equal(w["kazoo alice"], [("sasl", f"alice@{realm}")], "kazoo's Kerberos id in an 'auth' ACL")
            c.equal(w["kazoo without a ticket"], "failed", "a client without a ticket fails")
            c.equal(w["warden alice"][2], (0, f"'sasl,'alice@{realm}\n: cdrwa"),
                    "warden (the C++ client) with GSSAPI: its Kerberos id in an 'auth' ACL")
            c.equal(w["Java alice"], ["CONNECTED", "CREATE tls", f"WHOAMI ip:127.0.0.1 sasl:alice@{realm}"],
                    "the Java client's Kerberos id (in ZooKeeper's order)")
            c.equal(w["Java svc/localhost, host and realm removed"][2:], ["WHOAMI sasl:svc ip:127.0.0.1"],
                    "kerberos.removeHostFromPrincipal and removeRealmFromPrincipal")
            c.equal(w["zkCli.sh alice"], ["Created /zkcli-krb", "hi", "Auth scheme: User", "ip: 127.0.0.1",
                                          f"sasl: alice@{realm}"], "zkCli.sh with Kerberos: create, get, whoami")
            c.equal(w["Curator alice"], ["CREATED /curator-tls/node", "LOCKED", "RELEASED"],
                    "Curator with Kerberos: create and a mutex")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
