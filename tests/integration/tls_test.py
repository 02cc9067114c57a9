"""TLS on the client port (secureClientPort, client.portUnification, ZooKeeper's ssl.* keys) and
x509 authentication, with certificates made at test time.

The outcomes real clients see (kazoo, the Java client over Netty) are compared with Apache
ZooKeeper 3.8's given the same files: a good certificate, none, one from another CA, an expired
one, plaintext to the TLS port and TLS to the plaintext port, whoAmI's ids and x509 ACLs. Then
what is Warden's own to show: the handshake bound, port unification, a certificate rotated
without a restart, protocols and cipher suites, PKCS12 stores, and the refusals of bad stores
and settings at start."""
import functools
import os
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time

import support
import tls_certs
import zkproto
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_acl

J = support.JAVA_LIBS
NETTY = ["netty-codec.jar", "netty-resolver.jar", "netty-handler.jar", "netty-transport.jar", "netty-buffer.jar",
         "netty-common.jar", "netty-transport-native-epoll.jar"]
# Debian's ZooKeeper leaves Netty's codec out of its class path: its TLS port needs it.
ZK_TLS_CLASSPATH = support.ZK_CLASSPATH + ":" + support.java_classpath("netty-codec.jar", "netty-resolver.jar")
JAVA_CP = support.java_classpath("zookeeper.jar", "zookeeper-jute.jar", *NETTY, "slf4j-api.jar", "slf4j-nop.jar",
                                 "curator-client.jar", "curator-framework.jar", "curator-recipes.jar", "guava.jar")
ALICE = "1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d,CN=alice,OU=Clients,O=Warden Test,C=US"
ROOT = "CN=root,O=Warden Test,C=US"


def tls_cfg(certs, store="pem", extra=""):
    if store == "pem":
        stores = f"ssl.keyStore.location={certs}/server.pem\nssl.trustStore.location={certs}/ca.pem\n"
    else:
        stores = (f"ssl.keyStore.location={certs}/server.p12\nssl.keyStore.password={tls_certs.PASSWORD}\n"
                  f"ssl.trustStore.location={certs}/trust.p12\nssl.trustStore.password={tls_certs.PASSWORD}\n")
    return ("serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
            "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n"
            f"X509AuthenticationProvider.superUser={ROOT}\n" + stores + extra)


class TlsServer(support.Server):
    sport = None


def start_warden(cfg_body, secure=True):
    """Warden on port 0 with `cfg_body` added; reads the plain and TLS addresses it prints."""
    work = tempfile.mkdtemp(prefix="warden-tls-")
    cfg = os.path.join(work, "zoo.cfg")
    with open(cfg, "w") as f:
        f.write(f"tickTime=2000\ndataDir={work}/data\nclientPort=0\nadmin.enableServer=false\nclientPortAddress=127.0.0.1\n")
        if secure:
            f.write("secureClientPort=0\nsecureClientPortAddress=127.0.0.1\n")
        f.write(cfg_body)
    log_path = os.path.join(work, "server.log")
    proc = subprocess.Popen([os.environ["WARDEN_SERVER"], cfg], stdout=subprocess.PIPE,
                            stderr=open(log_path, "a"), text=True)
    lines = [proc.stdout.readline().strip() for _ in range(2 if secure else 1)]
    ports = {}
    for line in lines:
        m = re.match(r"warden-server listening (for TLS )?on 127\.0\.0\.1:(\d+)$", line)
        if not m:
            proc.kill()
            raise RuntimeError(f"warden-server did not announce its ports: {lines}\n{open(log_path).read()}")
        ports["tls" if m.group(1) else "plain"] = int(m.group(2))
    s = TlsServer(proc, ports["plain"], work, log_path)
    s.sport = ports.get("tls")
    return s


def start_zookeeper(cfg_body):
    work = tempfile.mkdtemp(prefix="zk-tls-")
    port, sport = support.free_port(), support.free_port()
    cfg = os.path.join(work, "zoo.cfg")
    with open(cfg, "w") as f:
        f.write(f"tickTime=2000\ndataDir={work}/data\nclientPort={port}\nadmin.enableServer=false\nclientPortAddress=127.0.0.1\n"
                f"secureClientPort={sport}\nsecureClientPortAddress=127.0.0.1\n{cfg_body}")
    log_path = os.path.join(work, "zk.log")
    proc = subprocess.Popen(["java", "-Xmx256m", "-cp", ZK_TLS_CLASSPATH,
                             "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg],
                            stdout=open(log_path, "a"), stderr=subprocess.STDOUT)
    support.wait_until_serving(port, proc, "ZooKeeper")
    s = TlsServer(proc, port, work, log_path)
    s.sport = sport
    return s


def kazoo(port, certs, who="client", tls=True, **kw):
    opts = {}
    if tls:
        opts = dict(use_ssl=True, ca=f"{certs}/ca.pem")
        if who:
            opts.update(certfile=f"{certs}/{who}.crt", keyfile=f"{certs}/{who}.key")
    return KazooClient(hosts=f"127.0.0.1:{port}", timeout=4, connection_retry={"max_tries": 1}, **opts, **kw)


def kazoo_outcome(port, certs, who="client", tls=True):
    """'ok' when a session opens and a write and a read work; else 'failed'. The value spans
    many TLS records each way (the server reads 16 KiB at a time)."""
    zk = kazoo(port, certs, who, tls)
    value = os.urandom(200 * 1024)
    try:
        zk.start(timeout=5)  # a refused client fails at once; a working one connects in well under
        path = zk.create("/tls-", value, sequence=True)
        return "ok" if zk.get(path)[0] == value else "wrong data"
    except Exception:  # noqa: BLE001 - every failure to connect counts as one outcome
        return "failed"
    finally:
        stopper = threading.Thread(target=lambda: (zk.stop(), zk.close()), daemon=True)
        stopper.start()
        stopper.join(10)


def java_tls_props(certs, store="client"):
    return ["-Dzookeeper.client.secure=true", "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
            f"-Dzookeeper.ssl.keyStore.location={certs}/{store}.p12",
            f"-Dzookeeper.ssl.keyStore.password={tls_certs.PASSWORD}",
            f"-Dzookeeper.ssl.trustStore.location={certs}/trust.p12",
            f"-Dzookeeper.ssl.trustStore.password={tls_certs.PASSWORD}"]


def zkcli_tls(port, certs):
    """zkCli.sh with the Java client's TLS properties (CLIENT_JVMFLAGS; its -cp adds Netty's codec,
    which Debian's zkCli class path lacks): what it prints for create, get and whoami."""
    cp = ["-cp", support.ZK_CLASSPATH + ":" + support.java_classpath(*NETTY)]
    return support.zkcli_lines(f"127.0.0.1:{port}", "create /zkcli-tls hi\nget /zkcli-tls\nwhoami\n",
                               cp + java_tls_props(certs), ("Created", "hi", "Auth scheme", "ip:", "x509:"))


def curator_tls(port, certs):
    return support.curator_lines(f"127.0.0.1:{port}", java_tls_props(certs), JAVA_CP)


def java_client(port, certs, store="client", wait_s=15):
    r = subprocess.run(["java", "-Xmx128m", *java_tls_props(certs, store), "-cp", JAVA_CP, "TlsClient", f"127.0.0.1:{port}",
                        "/java-", str(wait_s)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    return [line for line in r.stdout.splitlines() if re.match(r"(NOT )?CONNECTED|CREATE|WHOAMI", line)]


def acl_outcomes(srv, certs):
    """alice makes /owned readable by her certificate alone ('auth' expands to her x509 id);
    then who can read it: alice, the super user's certificate, a plaintext client."""
    out = {}
    zk = kazoo(srv.sport, certs, "client")
    zk.start(timeout=10)
    try:
        zk.create("/owned", b"mine", acl=[make_acl("auth", "", all=True)])
        out["acl"] = [(a.id.scheme, a.id.id, a.perms) for a in zk.get_acls("/owned")[0]]
        out["alice"] = zk.get("/owned")[0].decode()
    finally:
        zk.stop()
        zk.close()
    for who, port, tls in (("super", srv.sport, True), (None, srv.port, False)):
        z = kazoo(port, certs, who, tls)
        z.start(timeout=10)
        try:
            out[who or "plain"] = z.get("/owned")[0].decode()
        except NoAuthError:
            out[who or "plain"] = "NoAuth"
        finally:
            z.stop()
            z.close()
    return out


def compared(c, certs):
    """The same files against both servers: every outcome equal, and the ones Warden must show."""
    results = {}
    starts = {"ZooKeeper": start_zookeeper, "Warden": start_warden}
    for name in support.compared_servers():
        with starts[name](tls_cfg(certs)) as srv:
            # Each client on its own thread: a refused kazoo client waits out its timeout.
            calls = {f"kazoo TLS, certificate {who}": functools.partial(kazoo_outcome, srv.sport, certs, who)
                     for who in ("client", None, "stranger", "expired")}
            calls.update({
                "kazoo plaintext to the TLS port": functools.partial(kazoo_outcome, srv.sport, certs, tls=False),
                "kazoo TLS to the plaintext port": functools.partial(kazoo_outcome, srv.port, certs),
                "kazoo plaintext to the plaintext port": functools.partial(kazoo_outcome, srv.port, certs, tls=False),
                "x509 ACL": functools.partial(acl_outcomes, srv, certs)})
            r = support.concurrently(calls)
            # The JVMs one after another (each start is busy on the CPU).
            r["Java client"] = java_client(srv.sport, certs)
            r["zkCli.sh"] = zkcli_tls(srv.sport, certs)
            r["Curator"] = curator_tls(srv.sport, certs)
            results[name] = r
            print(f"{name}: {r}", flush=True)
            c.check(srv.alive(), f"{name} still runs after the refused clients")
            if name == "Warden":
                log = srv.log()
                for line in ("certificate verify failed", "TLS handshake on a plaintext port",
                             "peer did not return a certificate"):
                    c.check(line in log, f"Warden logs '{line}' for a refused client")
    w = results["Warden"]
    for key, want in results.get("ZooKeeper", {}).items():
        c.equal(w[key], want, f"{key}: Warden as ZooKeeper")
    c.equal(w["kazoo TLS, certificate client"], "ok", "a client with a good certificate works")
    for who in ("None", "stranger", "expired"):
        c.equal(w[f"kazoo TLS, certificate {who}"], "failed", f"certificate {who}: refused under clientAuth=need")
    c.equal(w["Java client"], ["CONNECTED", "CREATE tls", f"WHOAMI ip:127.0.0.1 x509:{ALICE}"],
            "the Java client over Netty: x509 id as ZooKeeper names it")
    c.equal(w["zkCli.sh"], ["Created /zkcli-tls", "hi", "Auth scheme: User", "ip: 127.0.0.1", f"x509: {ALICE}"],
            "zkCli.sh over TLS: create, get, whoami")
    c.equal(w["Curator"], ["CREATED /curator-tls/node", "LOCKED", "RELEASED"], "Curator over TLS: create and a mutex")
    c.equal(w["x509 ACL"], {"acl": [("x509", ALICE, 31)], "alice": "mine", "super": "mine", "plain": "NoAuth"},
            "x509 ACLs and the x509 super user")


def enforced_outcomes(srv, certs):
    """enforce.auth.schemes=digest,x509: what raw sessions get for a read, a ping and a close
    (err, then whether the connection stayed open), without and with an id of those schemes."""
    def tls_socket():
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.load_verify_locations(f"{certs}/ca.pem")
        ctx.load_cert_chain(f"{certs}/client.crt", f"{certs}/client.key")
        return ctx.wrap_socket(socket.create_connection(("127.0.0.1", srv.sport), timeout=10))

    get_root = zkproto.jstr("/") + zkproto.jbool(False)
    out = {}
    for name, op, body in (("read", zkproto.GET_DATA, get_root), ("ping", -2, b""), ("close", -11, b"")):
        out[f"plain {name}"] = zkproto.Session(srv.port).outcome(op, body)
    s = zkproto.Session(srv.port)
    out["digest auth"] = s.call(zkproto.AUTH, zkproto.jint(0) + zkproto.jstr("digest") + zkproto.jbuf(b"u:p"))[0]
    out["digest read"] = s.outcome(zkproto.GET_DATA, get_root)
    out["x509 read"] = zkproto.Session(srv.sport, sock=tls_socket()).outcome(zkproto.GET_DATA, get_root)
    return out


def enforced(c, certs):
    cfg = tls_cfg(certs, extra="enforce.auth.enabled=true\nenforce.auth.schemes=digest, x509\n")
    results = {}
    starts = {"ZooKeeper": start_zookeeper, "Warden": start_warden}
    for name in support.compared_servers():
        with starts[name](cfg) as srv:
            results[name] = enforced_outcomes(srv, certs)
            print(f"{name}: enforced authentication: {results[name]}", flush=True)
    for key, want in results.get("ZooKeeper", {}).items():
        c.equal(results["Warden"][key], want, f"enforce.auth: {key}: Warden as ZooKeeper")
    c.equal(results["Warden"]["plain read"], "-124 closed", "an unauthenticated read: SessionClosedRequireAuth")
    c.equal(results["Warden"]["x509 read"], "0 open", "a client with an x509 id passes")


def cli(*args, env=None):
    """The `warden` command line (the C++ client library); (exit status, stdout, stderr)."""
    r = subprocess.run([os.environ["WARDEN_CLI"], "--timeout-ms", "3000", *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60, env={**os.environ, **(env or {})})
    return r.returncode, r.stdout.strip(), r.stderr.strip()


def our_client(c, certs):
    """The C++ client and the warden command line over TLS: options and environment variables,
    and the failures named as OpenSSL names them."""
    ca, cert, key = f"{certs}/ca.pem", f"{certs}/client.crt", f"{certs}/client.key"
    with start_warden(tls_cfg(certs)) as w:
        hosts = f"127.0.0.1:{w.sport}"
        c.equal(cli("--server", hosts, "--tls-ca", ca, "--tls-cert", cert, "--tls-key", key, "create", "/cli", "v")[0], 0,
                "warden over TLS with options: create")
        env = {"WARDEN_TLS_CA": ca, "WARDEN_TLS_CERT": cert, "WARDEN_TLS_KEY": key}
        c.equal(cli("--server", hosts, "get", "/cli", env=env)[:2], (0, "v"), "warden over TLS from the environment")
        c.equal(cli("--server", f"localhost:{w.sport}", "get", "/cli", env=env)[:2], (0, "v"),
                "the host name checked against the certificate's names (DNS:localhost)")
        # The refused ones at once: each waits out its --timeout-ms.
        refused = support.concurrently({
            "no certificate": functools.partial(cli, "--server", hosts, "--tls-ca", ca, "get", "/cli"),
            "other CA": functools.partial(cli, "--server", hosts, "--tls-ca", f"{certs}/other-ca.pem", "--tls-cert",
                                          cert, "--tls-key", key, "get", "/cli"),
            "plaintext port": functools.partial(cli, "--server", f"127.0.0.1:{w.port}", "get", "/cli", env=env)})
        rc, _, err = refused["no certificate"]
        c.check(rc == 1 and "certificate required" in err, f"no client certificate under clientAuth=need: {err!r}")
        rc, _, err = refused["other CA"]
        c.check(rc == 1 and "certificate verify failed" in err, f"a server the CA does not vouch for: {err!r}")
        rc, _, err = refused["plaintext port"]
        c.check(rc == 1 and "TLS handshake" in err, f"TLS to the plaintext port: {err!r}")
        rc, _, err = cli("--server", hosts, "--tls-ca", f"{certs}/nothing.pem", "get", "/cli")
        c.check(rc == 2 and "cannot be read" in err, f"a missing CA file: {err!r}")
        rc, _, err = cli("--server", hosts, "--tls-ca", ca, "--tls-cert", cert, "--tls-key", f"{certs}/server.key",
                         "get", "/cli")
        c.check(rc == 2 and "cannot be used" in err, f"a key that is not the certificate's: {err!r}")
        c.check(w.alive(), "the server still runs")
    wrong = tls_cfg(certs).replace(f"{certs}/server.pem", f"{certs}/wrongname.pem")
    with start_warden(wrong) as w:
        hosts = f"127.0.0.1:{w.sport}"
        rc, _, err = cli("--server", hosts, "get", "/", env=env)
        c.check(rc == 1 and "certificate verify failed" in err,
                f"a server certificate that names another host is refused: {err!r}")
        c.equal(cli("--server", hosts, "--tls-no-hostname-check", "stat", "/", env=env)[0], 0,
                "--tls-no-hostname-check accepts it")
        c.equal(java_client(w.sport, certs, wait_s=5)[:1], ["NOT CONNECTED none"],
                "the Java client refuses it too (zookeeper.ssl.hostnameVerification defaults to true)")


def handshake_bound(c, certs):
    with start_warden(tls_cfg(certs, extra="ssl.handshakeDetectionTimeoutMillis=1000\n4lw.commands.whitelist=*\n")) as w:
        from ensemble import four_letter

        def outstanding():
            mntr = dict(line.split("\t", 1) for line in four_letter(w.port, "mntr").splitlines() if "\t" in line)
            return int(mntr.get("zk_outstanding_tls_handshake", -1))
        stalled = socket.create_connection(("127.0.0.1", w.sport), timeout=10)
        start = time.time()
        deadline = time.time() + 0.8
        while outstanding() != 1 and time.time() < deadline:
            time.sleep(0.05)
        c.equal(outstanding(), 1, "mntr's outstanding_tls_handshake counts the stalled handshake")
        c.equal(kazoo_outcome(w.sport, certs), "ok", "a client connects while another's handshake stalls")
        stalled.settimeout(10)
        try:
            got = stalled.recv(10)
        except OSError:
            got = b""
        took = time.time() - start
        c.check(got == b"" and took < 6, f"a stalled handshake is dropped after about the bound ({took:.1f} s)")
        c.check("did not finish within 1000 ms" in w.log(), "the dropped handshake is logged")
        c.equal(outstanding(), 0, "and no longer outstanding once dropped")
        stalled.close()
        garbage = socket.create_connection(("127.0.0.1", w.sport), timeout=10)
        garbage.sendall(b"\x16\x03\x01\x00\x05hello")  # a TLS record header, then nonsense
        garbage.settimeout(10)
        try:
            garbage.recv(100)
        except OSError:
            pass
        garbage.close()
        deadline = time.time() + 10
        while True:
            mntr = dict(line.split("\t", 1) for line in four_letter(w.port, "mntr").splitlines() if "\t" in line)
            counts = [int(mntr.get(k, -1)) for k in ("zk_tls_handshake_exceeded", "zk_unsuccessful_handshake",
                                                     "zk_auth_failed_count", "zk_non_mtls_local_conn_count")]
            if counts[1] >= 2 or time.time() > deadline:
                break
            time.sleep(0.2)
        c.equal(counts[:3], [1, 2, 2], "mntr counts the stalled and the garbled handshake (exceeded, unsuccessful, "
                                       "auth failed), as ZooKeeper's Netty factory does")
        c.check(counts[3] >= 1, f"and the plaintext connections from loopback ({counts[3]})")


def python_tls(port, certs, **limits):
    """A TLS connection from Python's ssl with the client certificate; (version, cipher) or the error."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_verify_locations(f"{certs}/ca.pem")
    ctx.load_cert_chain(f"{certs}/client.crt", f"{certs}/client.key")
    for k, v in limits.items():
        setattr(ctx, k, v)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with ctx.wrap_socket(raw) as s:
                s.sendall(b"ruok")  # a four-letter word over TLS, as ZooKeeper's Netty port answers it
                answer = s.recv(16)
                return s.version(), s.cipher()[0], s.getpeercert()["subject"], answer
    except (ssl.SSLError, OSError) as e:
        return ("refused", type(e).__name__)


def s_client(port, certs, *extra):
    """openssl s_client with the client certificate, trusting only the root CA; its output."""
    r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-CAfile", f"{certs}/ca.pem",
                        "-cert", f"{certs}/client.crt", "-key", f"{certs}/client.key", "-tls1_2", "-showcerts",
                        *extra], input="", capture_output=True, text=True, timeout=60)
    return r.stdout + r.stderr


def chain_and_resumption(c, certs):
    """The chain a handshake sends is the key store's certificate with its intermediates, from
    the key store or the trust store, built once at start and without the root (a client that
    trusts only the root verifies it); a new connection gets no session ticket, and a client
    resumes its session by id."""
    for key_store, trust_store, what in (("chained.pem", "ca-and-inter.pem", "the intermediate from the trust store"),
                                         ("chained-full.pem", "ca.pem", "the intermediate from the key store")):
        stores = f"ssl.keyStore.location={certs}/{key_store}\nssl.trustStore.location={certs}/{trust_store}\n"
        cfg = "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n" + stores
        with start_warden(cfg) as w:
            out = s_client(w.sport, certs)
            sent = re.findall(r"^ *\d+ s:(.*)$", out, re.M)
            c.check("Verify return code: 0 (ok)" in out, f"{what}: a client that trusts only the root verifies it")
            c.equal(len(sent), 2, f"{what}: the leaf and the intermediate are sent, not the root: {sent}")
            c.equal(kazoo_outcome(w.sport, certs), "ok", f"{what}: kazoo connects")
    with start_warden(tls_cfg(certs)) as w:
        out = s_client(w.sport, certs, "-reconnect")
        c.check("TLS session ticket:" not in out, "no session ticket is sent")
        reused = len(re.findall(r"^Reused, ", out, re.M))
        c.check(reused >= 4, f"a client resumes its session by id ({reused} of 5 reconnections)")


def idle_memory(c, certs):
    """An idle TLS session holds little: OpenSSL's state, no buffer of its own (Asio's TLS stream
    held two zero-filled 17 KiB buffers and a BIO pair per connection). The bound is checked on a
    plain build only: a sanitizer's redzones and quarantine weigh more than the sessions."""
    n = 300
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_verify_locations(f"{certs}/ca.pem")
    ctx.load_cert_chain(f"{certs}/client.crt", f"{certs}/client.key")
    with start_warden(tls_cfg(certs, extra="maxClientCnxns=0\n")) as w:
        def session():
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", w.sport), timeout=10))
            s.sendall(zkproto.frame(zkproto.connect_request(30000)))
            return s, len(s.recv(64)) > 0
        warm = [session() for _ in range(20)]  # the server's first allocations, caches
        time.sleep(0.3)
        before = support.rss_kib(w.proc.pid)
        held = [session() for _ in range(n)]
        time.sleep(0.3)
        per = (support.rss_kib(w.proc.pid) - before) / n
        c.check(all(ok for _, ok in warm + held), f"{n} TLS sessions open at once")
        if support.with_reference():
            c.check(per < 44, f"an idle TLS session costs the server little memory ({per:.1f} KiB each)")
        for s, _ in warm + held:
            s.close()


def unification_rotation_protocols(c, certs, work):
    # The key store is a copy the test replaces while the server runs.
    live = os.path.join(work, "live.pem")
    shutil.copy(f"{certs}/server.pem", live)
    cfg = tls_cfg(certs, extra="client.portUnification=true\n4lw.commands.whitelist=ruok\n").replace(
        f"{certs}/server.pem", live)
    with start_warden(cfg) as w:
        c.equal(kazoo_outcome(w.port, certs, tls=False), "ok", "portUnification: plaintext on the client port")
        c.equal(kazoo_outcome(w.port, certs), "ok", "portUnification: TLS on the client port")
        c.equal(python_tls(w.port, certs)[3], b"imok", "portUnification: a four-letter word over TLS")
        with socket.create_connection(("127.0.0.1", w.port), timeout=10) as s:
            s.sendall(b"ruok")
            c.equal(s.recv(16), b"imok", "portUnification: a plaintext four-letter word")
        before = python_tls(w.sport, certs)
        c.equal(before[0], "TLSv1.3", "TLS 1.3 by default")
        c.equal(python_tls(w.sport, certs, maximum_version=ssl.TLSVersion.TLSv1_2)[0], "TLSv1.2",
                "TLS 1.2 by default too (ZooKeeper 3.8's Java client speaks only 1.2)")
        # Rotation: the file replaced (as a configuration manager does: write aside, rename).
        kept = kazoo(w.sport, certs)
        kept.start(timeout=10)
        tmp = live + ".new"
        shutil.copy(f"{certs}/server2.pem", tmp)
        os.rename(tmp, live)
        after = python_tls(w.sport, certs)
        cn = dict(x[0] for x in after[2]).get("commonName") if after[0] != "refused" else after
        c.equal(cn, "localhost rotated", "a new connection gets the rotated certificate, without a restart")
        c.equal(kept.get("/")[0], b"", "a session from before the rotation goes on")
        kept.stop()
        kept.close()
        with open(live, "w") as f:
            f.write("-----BEGIN garbage")
        c.equal(dict(x[0] for x in python_tls(w.sport, certs)[2]).get("commonName"), "localhost rotated",
                "a rotation to a broken file keeps the last good certificate")
        c.check("cannot be used, the previous ones stay" in w.log(), "the broken rotation is logged")
    extra = ("ssl.enabledProtocols=TLSv1.3\n", "ssl.ciphersuites=TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384\n")
    with start_warden(tls_cfg(certs, extra=extra[0])) as w:
        c.equal(python_tls(w.sport, certs, maximum_version=ssl.TLSVersion.TLSv1_2)[0], "refused",
                "ssl.enabledProtocols=TLSv1.3 refuses a TLS 1.2 client")
        c.equal(python_tls(w.sport, certs)[0], "TLSv1.3", "and takes a TLS 1.3 one")
    with start_warden(tls_cfg(certs, extra=extra[1])) as w:
        got = python_tls(w.sport, certs)
        c.equal(got[:2], ("TLSv1.2", "ECDHE-RSA-AES256-GCM-SHA384"), "ssl.ciphersuites in Java's names is obeyed")
    with start_warden(tls_cfg(certs, extra="ssl.clientAuth=want\n")) as w:
        c.equal(kazoo_outcome(w.sport, certs, None), "ok", "clientAuth=want: a client without a certificate works")
        c.equal(kazoo_outcome(w.sport, certs, "stranger"), "failed", "clientAuth=want: a bad certificate is refused")
    with start_warden(tls_cfg(certs, extra="ssl.clientAuth=none\n")) as w:
        c.equal(kazoo_outcome(w.sport, certs, None), "ok", "clientAuth=none: no certificate asked")
    with start_warden(tls_cfg(certs, store="p12")) as w:
        c.equal(java_client(w.sport, certs), ["CONNECTED", "CREATE tls", f"WHOAMI ip:127.0.0.1 x509:{ALICE}"],
                "PKCS12 key and trust stores (keytool's), with passwords")
        conf = subprocess.run(["bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{w.port}; printf conf >&3; cat <&3"],
                              stdout=subprocess.PIPE, text=True, timeout=30).stdout
        c.check(f"secureClientPort={w.sport}" in conf or "not in the whitelist" in conf,
                "conf shows the bound secureClientPort")


def refused_at_start(c, certs, work):
    """Bad stores and settings stop the start with the file, the key and the reason."""
    garbage = os.path.join(work, "garbage.p12")
    with open(garbage, "wb") as f:
        f.write(os.urandom(3000))
    cases = [
        ("a JKS trust store", f"ssl.trustStore.location={certs}/trust.jks\n",
         ["ssl.trustStore.location", "keytool -importkeystore", "-deststoretype PKCS12"]),
        ("a wrong PKCS12 password", f"ssl.keyStore.location={certs}/server.p12\nssl.keyStore.password=nope\n",
         ["ssl.keyStore.location", "wrong password"]),
        ("a missing key store", f"ssl.keyStore.location={work}/none.pem\n", ["ssl.keyStore.location", "cannot be read"]),
        ("a garbage key store", f"ssl.keyStore.location={garbage}\n", ["ssl.keyStore.location", "not a PKCS12 store"]),
        ("a key store without a key", f"ssl.keyStore.location={certs}/ca.pem\n", ["holds no private key"]),
        ("a bad clientAuth", "ssl.clientAuth=sometimes\n", ["bad.cfg:", "ssl.clientAuth=sometimes", "need, want or none"]),
        ("an unknown protocol", "ssl.enabledProtocols=TLSv9\n", ["bad.cfg:", "unknown protocol 'TLSv9'"]),
        ("no cipher OpenSSL knows", "ssl.ciphersuites=TLS_NOT_A_SUITE\n", ["ssl.ciphersuites", "names no cipher suite"]),
        ("an unknown factory", "serverCnxnFactory=com.example.Factory\n", ["bad.cfg:", "unknown connection factory"]),
    ]
    for what, extra, wanted in cases:
        cfg = os.path.join(work, "bad.cfg")
        body = tls_cfg(certs, extra=extra)
        # The case's own store replaces the good one (the last line of a key wins, as in ZooKeeper).
        with open(cfg, "w") as f:
            f.write(f"tickTime=2000\ndataDir={work}/bad-data\nclientPort=0\nadmin.enableServer=false\nclientPortAddress=127.0.0.1\n"
                    f"secureClientPort=0\nsecureClientPortAddress=127.0.0.1\n{body}")
        r = subprocess.run([os.environ["WARDEN_SERVER"], cfg], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
        c.equal(r.returncode, 2, f"{what}: the start stops (exit 2, no crash)")
        missing = [w for w in wanted if w not in r.stderr]
        c.check(not missing, f"{what}: the message names {missing}: {r.stderr.strip()!r}")
        c.equal(r.stdout, "", f"{what}: nothing was served")
    cfg = os.path.join(work, "nostore.cfg")
    with open(cfg, "w") as f:
        f.write(f"tickTime=2000\ndataDir={work}/bad-data\nsecureClientPort=0\n")
    r = subprocess.run([os.environ["WARDEN_SERVER"], cfg], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    c.check(r.returncode == 2 and "ssl.keyStore.location" in r.stderr, f"secureClientPort without a key store: "
            f"{r.stderr.strip()!r}")


def main():
    global JAVA_CP
    c = support.Checks("tls")
    work = tempfile.mkdtemp(prefix="tls-it-")
    try:
        certs = tls_certs.make(os.path.join(work, "certs"))
        JAVA_CP = support.compile_java(work, JAVA_CP, "TlsClient.java", "CuratorTls.java")
        compared(c, certs)
        enforced(c, certs)
        our_client(c, certs)
        handshake_bound(c, certs)
        chain_and_resumption(c, certs)
        idle_memory(c, certs)
        unification_rotation_protocols(c, certs, work)
        refused_at_start(c, certs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
