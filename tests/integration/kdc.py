"""A private MIT Kerberos KDC for tests: its own realm, on a loopback port chosen at run time,
its database, principals and keytabs made with kdb5_util and kadmin.local, started as a child
process and stopped by its PID. Everything lives in one directory; `env` is what a process
(Warden, the JVM, kinit, kazoo) needs to use it: KRB5_CONFIG, and for the KDC KRB5_KDC_PROFILE."""
import os
import shutil
import signal
import subprocess
import time

import support

REALM = "WARDEN.TEST"


class Kdc:
    def __init__(self, work):
        self.work = work
        os.makedirs(work, exist_ok=True)
        self.port = support.free_port()
        self.krb5_conf = os.path.join(work, "krb5.conf")
        kdc_conf = os.path.join(work, "kdc.conf")
        with open(self.krb5_conf, "w") as f:
            f.write(f"[libdefaults]\n default_realm = {REALM}\n dns_lookup_kdc = false\n dns_lookup_realm = false\n"
                    " rdns = false\n udp_preference_limit = 1\n ignore_acceptor_hostname = false\n"
                    f"[realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{self.port}\n }}\n"
                    f"[domain_realm]\n localhost = {REALM}\n")
        with open(kdc_conf, "w") as f:
            f.write(f"[kdcdefaults]\n kdc_ports = {self.port}\n kdc_tcp_ports = {self.port}\n"
                    f"[realms]\n {REALM} = {{\n  database_name = {work}/principal\n"
                    f"  key_stash_file = {work}/stash\n  acl_file = {work}/kadm5.acl\n"
                    "  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n }\n"
                    f"[logging]\n kdc = FILE:{work}/kdc.log\n")
        open(os.path.join(work, "kadm5.acl"), "w").close()
        self.env = dict(os.environ, KRB5_CONFIG=self.krb5_conf, KRB5_KDC_PROFILE=kdc_conf,
                        KRB5CCNAME=f"FILE:{work}/ccache", KRB5RCACHETYPE="none")
        subprocess.run(["kdb5_util", "create", "-s", "-r", REALM, "-P", "master-secret"], env=self.env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
        self.proc = subprocess.Popen(["krb5kdc", "-n", "-r", REALM], env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(work, "kdc.err"), "w"))
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                import socket
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("the KDC did not start: " + open(os.path.join(work, "kdc.err")).read())

    def principal(self, name, keytab=None, password=None):
        """Adds NAME@REALM (with a random key, or `password`); writes its keys to `keytab`."""
        full = f"{name}@{REALM}"
        how = f"-pw {password}" if password else "-randkey"
        self.kadmin(f"addprinc {how} {full}")
        if keytab:
            self.kadmin(f"ktadd -k {keytab} {full}" if not password else f"ktadd -norandkey -k {keytab} {full}")
        return full

    def kadmin(self, query):
        subprocess.run(["kadmin.local", "-r", REALM, "-q", query], env=self.env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=60)

    def kinit(self, principal, keytab, ccache):
        subprocess.run(["kinit", "-kt", keytab, "-c", ccache, principal], env=self.env, check=True, timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.work, ignore_errors=True)
