"""SASL DIGEST-MD5 on client connections, against Warden and ZooKeeper 3.8 given the same JAAS
file (its Server section's DigestLoginModule users): kazoo and the Java client with good and
bad credentials, whoAmI's ids, sasl ACLs and the super user, garbage and truncated SASL
packets, sessionRequireClientSASLAuth. Then Warden's own: where the JAAS file is found
(SERVER_JVMFLAGS, java.env, its jaasConfigFile key) and bad JAAS files refused at start."""
import os
import re
import shutil
import subprocess
import tempfile
import threading

import support
import zkproto
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.protocol.states import KeeperState
from kazoo.security import make_acl

JAVA_CP = support.java_classpath("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar",
                                 "curator-client.jar", "curator-framework.jar", "curator-recipes.jar", "guava.jar")
SERVER_JAAS = """Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_super="adminsecret"
       user_bob="bobsecret";
};
"""
SASL_CFG = ("authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"
            "superUser=super\n")


def kazoo(srv, user=None, password=None):
    opts = {"sasl_options": {"mechanism": "DIGEST-MD5", "username": user, "password": password}} if user else {}
    return KazooClient(hosts=srv.hosts, timeout=6, connection_retry={"max_tries": 1}, **opts)


def stopped(zk):
    t = threading.Thread(target=lambda: (zk.stop(), zk.close()), daemon=True)
    t.start()
    t.join(10)


def kazoo_outcome(srv, user, password):
    """'ok' or the kind of failure. A timeout is tried once more, on either server: a loaded
    machine (ZooKeeper's JVM beside other tests) can outlast kazoo's connect timeout before the
    server answers at all; a server that never answers times out twice."""
    for attempt in range(2):
        zk = kazoo(srv, user, password)
        try:
            zk.start(timeout=10)
            zk.get("/")
            return "ok"
        except Exception as e:  # noqa: BLE001 - the kind of failure is the outcome
            outcome = type(e).__name__
            # kazoo's start() wakes when the handshake is answered, SASL runs after it on
            # kazoo's thread, and a refusal clears the connected state: when that thread wins,
            # start() finds the client not connected and calls it a time-out (CI saw it twice in
            # a row on a loaded machine). The client's state says what the server did.
            if outcome == "KazooTimeoutError" and zk.client_state == KeeperState.AUTH_FAILED:
                outcome = "AuthFailedError"
        finally:
            stopped(zk)
        if outcome != "KazooTimeoutError":
            break
    return outcome


def client_jaas(work, user, password):
    """A JAAS file with a DIGEST-MD5 Client section, as the Java client, zkCli.sh and Curator take it."""
    jaas = os.path.join(work, f"client-{user}-{password}.conf")
    with open(jaas, "w") as f:
        f.write(f'Client {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n'
                f'  username="{user}"\n  password="{password}";\n}};\n')
    return jaas


def zkcli_outcome(srv, work, user, password):
    flags = [f"-Djava.security.auth.login.config={client_jaas(work, user, password)}"]
    return support.zkcli_lines(srv.hosts, "create /zkcli-sasl hi\nget /zkcli-sasl\nwhoami\n", flags,
                               ("Created", "hi", "Auth scheme", "ip:", "sasl:", "Node already exists"))


def curator_outcome(srv, work, user, password):
    return support.curator_lines(srv.hosts, [f"-Djava.security.auth.login.config={client_jaas(work, user, password)}"],
                                 JAVA_CP)


def java_outcome(srv, work, user, password):
    jaas = client_jaas(work, user, password)
    r = subprocess.run(["java", "-Xmx128m", f"-Djava.security.auth.login.config={jaas}", "-cp", JAVA_CP, "TlsClient",
                        srv.hosts, "/java-sasl-"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=120)
    return [line for line in r.stdout.splitlines() if re.match(r"(NOT )?CONNECTED|CREATE|WHOAMI", line)]


def acl_outcomes(srv):
    out = {}
    zk = kazoo(srv, "bob", "bobsecret")
    zk.start(timeout=10)
    try:
        zk.create("/bobs", b"mine", acl=[make_acl("sasl", "bob", all=True)])
        zk.create("/bobs-auth", b"mine", acl=[make_acl("auth", "", all=True)])
        out["acl"] = [(a.id.scheme, a.id.id, a.perms) for a in zk.get_acls("/bobs-auth")[0]]
        out["bob"] = zk.get("/bobs")[0].decode()
    finally:
        stopped(zk)
    for who, cred in (("super", "adminsecret"), (None, None)):
        z = kazoo(srv, who, cred)
        z.start(timeout=10)
        try:
            out[who or "anonymous"] = z.get("/bobs")[0].decode()
        except NoAuthError:
            out[who or "anonymous"] = "NoAuth"
        finally:
            stopped(z)
    return out


def raw_sasl(srv, body):
    """A SASL packet with `body` on a fresh session: (error code or 'closed', then open/closed)."""
    s = zkproto.Session(srv.port)
    try:
        return s.outcome(zkproto.SASL, body)
    finally:
        s.sock.close()


def cli(srv, *args, password="bobsecret"):
    """The `warden` command line (the C++ client) with SASL DIGEST-MD5 as bob."""
    env = dict(os.environ, WARDEN_SASL_MECHANISM="DIGEST-MD5", WARDEN_SASL_USER="bob", WARDEN_SASL_PASSWORD=password)
    r = subprocess.run([os.environ["WARDEN_CLI"], "--timeout-ms", "5000", "--server", srv.hosts, *args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60, env=env)
    return r.returncode, r.stdout.strip(), "AuthFailed" in r.stderr


def reattached_ids(srv):
    """kazoo authenticates as bob; the same session re-attached on a new connection without
    SASL: its ids there (ZooKeeper keeps SASL ids per connection, not per session)."""
    zk = kazoo(srv, "bob", "bobsecret")
    zk.start(timeout=10)
    session_id, passwd = zk.client_id
    again = zkproto.Session(srv.port, session_id=session_id, passwd=passwd)
    try:
        return {"same session": again.session_id == session_id, "ids": again.who_am_i()}
    finally:
        again.sock.close()
        stopped(zk)


def outcomes(srv, work):
    r = {}
    r["re-attached without SASL"] = reattached_ids(srv)
    r["warden create"] = cli(srv, "create", "/cli-sasl", "v")
    r["warden setAcl"] = cli(srv, "setAcl", "/cli-sasl", "sasl:bob:cdrwa")
    r["warden get"] = cli(srv, "get", "/cli-sasl")
    r["warden wrong password"] = cli(srv, "get", "/cli-sasl", password="wrong")
    for user, pw in (("bob", "bobsecret"), ("bob", "wrong"), ("nobody", "x")):
        r[f"kazoo {user}/{pw}"] = kazoo_outcome(srv, user, pw)
    r["Java bob"] = java_outcome(srv, work, "bob", "bobsecret")
    r["Java wrong password"] = java_outcome(srv, work, "bob", "wrong")[:1]
    r["zkCli.sh bob"] = zkcli_outcome(srv, work, "bob", "bobsecret")
    r["Curator bob"] = curator_outcome(srv, work, "bob", "bobsecret")
    r["Curator wrong password"] = curator_outcome(srv, work, "bob", "wrong")[:1]
    r["ACLs"] = acl_outcomes(srv)
    r["garbage token"] = raw_sasl(srv, zkproto.jbuf(os.urandom(200)))
    r["garbage second token"] = raw_sasl(srv, zkproto.jbuf(b""))  # a first step: the challenge, open
    r["truncated packet"] = raw_sasl(srv, zkproto.jint(1000) + b"abc")
    return r


def compared(c, work):
    jaas = os.path.join(work, "server-jaas.conf")
    with open(jaas, "w") as f:
        f.write(SERVER_JAAS)
    results = {}
    if support.with_reference():
        zk = support.start_zookeeper(extra_cfg=SASL_CFG, jvm_flags=[f"-Djava.security.auth.login.config={jaas}"])
        with zk:
            results["ZooKeeper"] = outcomes(zk, work)
    with support.start_warden(SASL_CFG + f"jaasConfigFile={jaas}\n") as w:
        results["Warden"] = outcomes(w, work)
        c.check(w.alive(), "Warden still runs after garbage SASL packets")
        c.check("failed to SASL authenticate" in w.log(), "a failed authentication is logged")
    for name, r in results.items():
        print(f"{name}: {r}", flush=True)
    w = results["Warden"]
    for key, want in results.get("ZooKeeper", {}).items():
        c.equal(w[key], want, f"{key}: Warden as ZooKeeper")
    c.equal(w["kazoo bob/bobsecret"], "ok", "DIGEST-MD5 with the right password")
    c.equal(w["kazoo bob/wrong"], "AuthFailedError", "a wrong password fails")
    c.equal(w["re-attached without SASL"], {"same session": True, "ids": ["ip:127.0.0.1"]},
            "a session re-attached on a connection without SASL has no sasl id there")
    c.equal(w["warden get"], (0, "v", False), "warden (the C++ client) with DIGEST-MD5 reads a sasl:bob node")
    c.equal(w["warden wrong password"], (1, "", True), "warden with a wrong password: AuthFailed, exit 1")
    c.equal(w["Java bob"], ["CONNECTED", "CREATE tls", "WHOAMI sasl:bob ip:127.0.0.1"],
            "the Java client's sasl id (in ZooKeeper's order)")
    c.equal(w["ACLs"], {"acl": [("sasl", "bob", 31)], "bob": "mine", "super": "mine", "anonymous": "NoAuth"},
            "sasl ACLs, 'auth' expanded to the sasl id, and zookeeper.superUser")
    c.equal(w["zkCli.sh bob"], ["Created /zkcli-sasl", "hi", "Auth scheme: User", "sasl: bob", "ip: 127.0.0.1"],
            "zkCli.sh with a JAAS Client section: create, get, whoami with the sasl id")
    c.equal(w["Curator bob"], ["CREATED /curator-tls/node", "LOCKED", "RELEASED"],
            "Curator with DIGEST-MD5: create and a mutex")
    c.check(w["Curator wrong password"][:1] != ["CREATED /curator-tls/node"], "Curator with a wrong password fails")


def no_session(outcome):
    return "no session" if outcome in ("ConnectionLoss", "KazooTimeoutError") else outcome


def required(c, work):
    """sessionRequireClientSASLAuth=true: a session without SASL gets SessionClosedRequireAuth;
    one with a failed SASL exchange too (not AuthFailed)."""
    jaas = os.path.join(work, "server-jaas.conf")
    cfg = SASL_CFG + "sessionRequireClientSASLAuth=true\n"
    results = {}
    get_root = zkproto.jstr("/") + zkproto.jbool(False)
    for name in support.compared_servers():
        srv = (support.start_zookeeper(extra_cfg=cfg, jvm_flags=[f"-Djava.security.auth.login.config={jaas}"])
               if name == "ZooKeeper" else support.start_warden(cfg + f"jaasConfigFile={jaas}\n"))
        with srv:
            s = zkproto.Session(srv.port)
            got = s.call(zkproto.GET_DATA, get_root)
            results[name] = {"plain read": got[0] if got else "closed",
                             "kazoo bob": kazoo_outcome(srv, "bob", "bobsecret"),
                             # Dropped by the server: kazoo reports the lost connection, or on a
                             # loaded machine its own timeout; either way no session.
                             "kazoo wrong": no_session(kazoo_outcome(srv, "bob", "wrong"))}
            s.sock.close()
        print(f"{name}: sessionRequireClientSASLAuth: {results[name]}", flush=True)
    if "ZooKeeper" in results:
        c.equal(results["Warden"], results["ZooKeeper"], "sessionRequireClientSASLAuth: Warden as ZooKeeper")
    c.equal(results["Warden"]["plain read"], -124, "a session without SASL: SessionClosedRequireAuth")


def found_and_refused(c, work):
    jaas = os.path.join(work, "server-jaas.conf")
    # SERVER_JVMFLAGS, as a ZooKeeper user exports it for zkServer.sh.
    env = dict(os.environ, SERVER_JVMFLAGS=f"-Xmx1g -Djava.security.auth.login.config={jaas} -Dx=y")
    old = os.environ.copy()
    os.environ.update(env)
    try:
        with support.start_warden(SASL_CFG) as w:
            c.equal(kazoo_outcome(w, "bob", "bobsecret"), "ok", "the JAAS file from SERVER_JVMFLAGS")
    finally:
        os.environ.clear()
        os.environ.update(old)
    # java.env beside zoo.cfg, as ZooKeeper's zkEnv.sh sources it.
    conf_dir = tempfile.mkdtemp(prefix="warden-javaenv-", dir=work)
    with open(os.path.join(conf_dir, "java.env"), "w") as f:
        f.write(f'# set by the operator\nSERVER_JVMFLAGS="-Djava.security.auth.login.config={jaas}"\n')
    with support.start_warden(SASL_CFG, workdir=conf_dir) as w:
        c.equal(kazoo_outcome(w, "bob", "bobsecret"), "ok", "the JAAS file from java.env beside zoo.cfg")
    path_placeholder = jaas  # any readable file stands in for a keytab here
    bad = [
        ("a section never closed", "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n",
         ["bad-jaas.conf:3", "expected"]),
        ("a bad flag", "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule always user_a=\"b\";\n};\n",
         ["bad-jaas.conf:2", "must be required"]),
        ("no users", "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required;\n};\n",
         ["has no DigestLoginModule"]),
        ("an unclosed quote", "Server {\n  x required user_a=\"b;\n};\n", ["bad-jaas.conf:2", "never closed"]),
        ("binary garbage", "\x00\x01Server\x7f{", ["bad-jaas.conf:1"]),
        ("Kerberos without a principal",
         "Server {\n  com.sun.security.auth.module.Krb5LoginModule required keyTab=\"k\";\n};\n",
         ["bad-jaas.conf:2", "Krb5LoginModule needs keyTab and principal"]),
        ("Kerberos with a keytab that is not there",
         "Server {\n  com.sun.security.auth.module.Krb5LoginModule required keyTab=\"/nonexistent.keytab\"\n"
         "  principal=\"zookeeper/localhost@X\";\n};\n", ["/nonexistent.keytab cannot be read"]),
        ("Kerberos with a principal that names no host",
         f"Server {{\n  com.sun.security.auth.module.Krb5LoginModule required keyTab=\"{path_placeholder}\"\n"
         "  principal=\"zookeeper@X\";\n};\n", ["is not service/host@REALM"]),
    ]
    for what, text, wanted in bad:
        path = os.path.join(work, "bad-jaas.conf")
        with open(path, "w") as f:
            f.write(text)
        cfg = os.path.join(work, "bad.cfg")
        with open(cfg, "w") as f:
            f.write(f"tickTime=2000\ndataDir={work}/bad-data\nclientPort=0\nadmin.enableServer=false\nclientPortAddress=127.0.0.1\n"
                    f"jaasConfigFile={path}\n")
        r = subprocess.run([os.environ["WARDEN_SERVER"], cfg], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
        missing = [x for x in wanted if x not in r.stderr]
        c.check(r.returncode == 2 and not missing and r.stdout == "",
                f"{what}: refused at start naming {missing or wanted}: {r.returncode} {r.stderr.strip()!r}")
    cfg = os.path.join(work, "nosasl.cfg")
    with open(cfg, "w") as f:
        f.write(f"tickTime=2000\ndataDir={work}/bad-data\nclientPort=0\nadmin.enableServer=false\nsessionRequireClientSASLAuth=true\n")
    r = subprocess.run([os.environ["WARDEN_SERVER"], cfg], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60, env={k: v for k, v in os.environ.items() if k not in ("SERVER_JVMFLAGS", "JVMFLAGS")})
    c.check(r.returncode == 2 and "asks for sasl" in r.stderr, f"SASL required with no JAAS file: {r.stderr.strip()!r}")


def main():
    c = support.Checks("sasl-digest")
    work = tempfile.mkdtemp(prefix="sasl-digest-it-")
    global JAVA_CP
    try:
        JAVA_CP = support.compile_java(work, JAVA_CP, "TlsClient.java", "CuratorTls.java")
        compared(c, work)
        required(c, work)
        found_and_refused(c, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
