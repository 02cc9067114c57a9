"""Certificates for the TLS tests, made at test time with the openssl command line (and Java's
keytool for the stores only Java writes): a CA, the server's key store, clients' certificates
(one a super user's, one from another CA, one expired), a server certificate from an
intermediate CA, in PEM and PKCS12, and the same trust
store as PEM, PKCS12 and JKS. Every store's password is PASSWORD."""
import os
import subprocess

PASSWORD = "secret"
CLIENT_SUBJECT = "/C=US/O=Warden Test/OU=Clients/CN=alice/emailAddress=alice@example.com"
SUPER_SUBJECT = "/C=US/O=Warden Test/CN=root"


def _run(*args, cwd):
    subprocess.run(list(args), cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)


KEY_ALGORITHM = ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
EC_P256 = ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]


def _key(d, name):
    _run("openssl", "genpkey", *KEY_ALGORITHM, "-out", f"{name}.key", cwd=d)


def _ca(d, name, subject):
    _key(d, name)
    _run("openssl", "req", "-x509", "-new", "-key", f"{name}.key", "-out", f"{name}.pem", "-days", "30",
         "-subj", subject, "-addext", "basicConstraints=critical,CA:true", "-addext", "keyUsage=keyCertSign,cRLSign",
         cwd=d)


def _intermediate(d, name, subject, ca):
    """A CA whose certificate `ca` signed."""
    _key(d, name)
    _run("openssl", "req", "-new", "-key", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=d)
    with open(os.path.join(d, f"{name}.ext"), "w") as f:
        f.write("basicConstraints=critical,CA:true\nkeyUsage=keyCertSign,cRLSign\n")
    _run("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
         "-CAcreateserial", "-out", f"{name}.pem", "-days", "30", "-extfile", f"{name}.ext", cwd=d)


def _signed(d, name, subject, ca, san="IP:127.0.0.1,DNS:localhost"):
    _key(d, name)
    _run("openssl", "req", "-new", "-key", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=d)
    with open(os.path.join(d, f"{name}.ext"), "w") as f:
        f.write(f"subjectAltName={san}\nbasicConstraints=CA:false\n"
                "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n")
    _run("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
         "-CAcreateserial", "-out", f"{name}.crt", "-days", "30", "-extfile", f"{name}.ext", cwd=d)
    _stores(d, name)


def _stores(d, name):
    """NAME.pem (key and certificate: a PEM key store) and NAME.p12 (PKCS12)."""
    with open(os.path.join(d, f"{name}.pem"), "w") as out:
        for part in (f"{name}.key", f"{name}.crt"):
            with open(os.path.join(d, part)) as f:
                out.write(f.read())
    _run("openssl", "pkcs12", "-export", "-in", f"{name}.crt", "-inkey", f"{name}.key", "-out", f"{name}.p12",
         "-name", name, "-passout", f"pass:{PASSWORD}", cwd=d)


def _expired(d, name, subject, ca):
    """Signed by `ca`, valid only in 2020: `openssl ca` is the command that sets both dates."""
    _key(d, name)
    _run("openssl", "req", "-new", "-key", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=d)
    os.makedirs(os.path.join(d, "ca-db"), exist_ok=True)
    open(os.path.join(d, "ca-db", "index.txt"), "w").close()
    with open(os.path.join(d, "ca-db", "serial"), "w") as f:
        f.write("1000\n")
    with open(os.path.join(d, "ca.cnf"), "w") as f:
        f.write("[ca]\ndefault_ca=d\n[d]\ndatabase=ca-db/index.txt\nnew_certs_dir=ca-db\nserial=ca-db/serial\n"
                "default_md=sha256\npolicy=p\nunique_subject=no\n[p]\ncommonName=supplied\n")
    _run("openssl", "ca", "-batch", "-config", "ca.cnf", "-cert", f"{ca}.pem", "-keyfile", f"{ca}.key",
         "-startdate", "20200101000000Z", "-enddate", "20200102000000Z", "-notext", "-in", f"{name}.csr",
         "-out", f"{name}.crt", cwd=d)
    _stores(d, name)


def _keytool_trust(d, ca, out, store_type):
    _run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", f"{ca}.pem", "-keystore", out,
         "-storetype", store_type, "-storepass", PASSWORD, cwd=d)


def make(d, java_stores=True, ec=False):
    """Writes everything into directory `d`; returns it. `ec`: ECDSA P-256 keys instead of RSA
    2048 (a handshake's signatures cost a fraction: the benchmark's connection storm)."""
    global KEY_ALGORITHM
    KEY_ALGORITHM = EC_P256 if ec else ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
    os.makedirs(d, exist_ok=True)
    _ca(d, "ca", "/O=Warden Test/CN=Warden Test CA")
    _ca(d, "other-ca", "/O=Elsewhere/CN=Another CA")
    _signed(d, "server", "/O=Warden Test/CN=localhost", "ca")
    _signed(d, "server2", "/O=Warden Test/CN=localhost rotated", "ca")
    _signed(d, "client", CLIENT_SUBJECT, "ca")
    _signed(d, "super", SUPER_SUBJECT, "ca")
    _signed(d, "stranger", "/O=Elsewhere/CN=mallory", "other-ca")
    _signed(d, "wrongname", "/O=Warden Test/CN=elsewhere", "ca", san="DNS:elsewhere.example")
    _expired(d, "expired", "/O=Warden Test/CN=old", "ca")
    # A server certificate from an intermediate CA: chained.pem holds the key and the leaf only,
    # chained-full.pem the intermediate too; ca-and-inter.pem trusts both CAs.
    _intermediate(d, "inter-ca", "/O=Warden Test/CN=Warden Test Intermediate CA", "ca")
    _signed(d, "chained", "/O=Warden Test/CN=localhost chained", "inter-ca")
    with open(os.path.join(d, "chained-full.pem"), "w") as out:
        for part in ("chained.key", "chained.crt", "inter-ca.pem"):
            with open(os.path.join(d, part)) as f:
                out.write(f.read())
    with open(os.path.join(d, "ca-and-inter.pem"), "w") as out:
        for part in ("ca.pem", "inter-ca.pem"):
            with open(os.path.join(d, part)) as f:
                out.write(f.read())
    if java_stores:
        _keytool_trust(d, "ca", "trust.p12", "PKCS12")
        _keytool_trust(d, "ca", "trust.jks", "JKS")
    return d
