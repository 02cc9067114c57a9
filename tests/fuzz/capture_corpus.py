"""Captures the fuzz corpus: what real clients send on the client port. A relay between the
clients and a Warden server records each connection's client-to-server bytes into one file of
tests/fuzz/corpus/ (a file is a whole conversation: handshake, then frames).

Run by hand when the clients or the protocol change (WARDEN_SERVER must name the binary):
    WARDEN_SERVER=build/server/warden-server /usr/bin/python3 tests/fuzz/capture_corpus.py
Clients: kazoo (CRUD, watches, a transaction, a lock), zkCli.sh (the zkCli test's scripts,
Java client), the C client (via the c_client_test binary when BUILD_DIR names a build)."""
import hashlib
import os
import socket
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import support  # noqa: E402
import zkcli_test  # noqa: E402

CORPUS = os.path.join(HERE, "corpus")


class Relay:
    def __init__(self, target_port):
        self.target = target_port
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.captured = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            record = bytearray()
            self.captured.append(record)
            threading.Thread(target=self.pump, args=(client, server, record), daemon=True).start()
            threading.Thread(target=self.pump, args=(server, client, None), daemon=True).start()

    @staticmethod
    def pump(src, dst, record):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if record is not None:
                    record.extend(data)
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def kazoo_session(hosts):
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=hosts)
    zk.start(timeout=10)
    zk.ensure_path("/corpus/a")
    zk.create("/corpus/e", b"eph", ephemeral=True)
    zk.create("/corpus/s-", b"", sequence=True)
    zk.get("/corpus/a", watch=lambda e: None)
    zk.get_children("/corpus", watch=lambda e: None)
    zk.set("/corpus/a", b"x" * 300)
    t = zk.transaction()
    t.create("/corpus/t", b"t")
    t.check("/corpus/a", 1)
    t.set_data("/corpus/a", b"y")
    t.delete("/corpus/t")
    t.commit()
    lock = zk.Lock("/corpus/lock", "me")
    with lock:
        zk.exists("/corpus/lock")
    zk.add_auth("digest", "user:pw")
    zk.get_acls("/corpus/a")
    zk.delete("/corpus", recursive=True)
    zk.stop()


def main():
    os.makedirs(CORPUS, exist_ok=True)
    with support.start_warden("extendedTypesEnabled=true\n4lw.commands.whitelist=*\n") as w:
        relay = Relay(w.port)
        hosts = f"127.0.0.1:{relay.port}"
        kazoo_session(hosts)
        support.run_zkcli(hosts, zkcli_test.SCRIPT)
        support.run_zkcli(hosts, zkcli_test.QUOTA_SCRIPT)
        c_test = os.path.join(os.environ.get("BUILD_DIR", "build"), "tests", "integration", "c_client_test")
        if os.path.exists(c_test):
            subprocess.run([c_test, hosts], capture_output=True, timeout=120)
        for word in ("ruok", "stat", "mntr"):
            s = socket.create_connection(("127.0.0.1", relay.port))
            s.sendall(word.encode())
            s.shutdown(socket.SHUT_WR)
            while s.recv(4096):
                pass
            s.close()
        relay.listener.close()
    written = 0
    for record in relay.captured:
        if not record:
            continue
        name = hashlib.sha1(bytes(record)).hexdigest()[:16]
        with open(os.path.join(CORPUS, name), "wb") as f:
            f.write(record)
        written += 1
    print(f"{written} conversations written to {CORPUS}")


if __name__ == "__main__":
    main()
