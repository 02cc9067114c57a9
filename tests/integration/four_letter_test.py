"""Four-letter words on the client port, against ZooKeeper 3.8 and Warden in one run: the same
client state (a session with data, child and exist watches and an ephemeral node) on both, then
every word with `4lw.commands.whitelist=*`. Values differ (times, ids, counters), so each answer
is compared in shape: the same lines and keys in the same order, the same kinds of value.
Then: the default whitelist refuses as ZooKeeper does, an unknown word and a cut word get the
connection closed, and Debian's zktop parses Warden's `stat` with its own code."""
import os
import re
import socket
import sys

from kazoo.client import KazooClient

import support

WORDS = ["ruok", "srvr", "stat", "conf", "cons", "envi", "mntr", "wchs", "wchc", "wchp", "dump", "isro", "dirs",
         "crst", "srst"]


def ask(port, word):
    """Sends `word` as ZooKeeper's nc examples do, and reads until the server closes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(word.encode())
        s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            d = s.recv(65536)
            if not d:
                return out.decode()
            out += d
    finally:
        s.close()


def shape(text):
    """Replaces what legitimately differs between servers by placeholders."""
    text = re.sub(r"Zookeeper version: .*", "Zookeeper version: <v>", text)
    text = re.sub(r"(zk_version\t|zookeeper\.version=).*", r"\1<v>", text)
    text = re.sub(r"[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d \w+ \d{4}", "<date>", text)
    text = re.sub(r"/127\.0\.0\.1:\d+", "<peer>", text)
    text = re.sub(r"0x[0-9a-f]+", "<hex>", text)
    text = re.sub(r"=/\S*", "=<path>", text)
    text = re.sub(r"\d+\.\d+", "<num>", text)
    return re.sub(r"\d+", "<num>", text)


def setup(hosts):
    zk = KazooClient(hosts=hosts)
    zk.start(timeout=15)
    zk.create("/x", b"abc")
    zk.create("/x/e", b"", ephemeral=True)
    zk.get("/x", watch=lambda e: None)
    zk.get_children("/x", watch=lambda e: None)
    zk.exists("/nope", watch=lambda e: None)
    return zk


def answers(server):
    zk = setup(server.hosts)
    try:
        return {w: ask(server.port, w) for w in WORDS}
    finally:
        zk.stop()


def zktop_view(hosts):
    """Runs zktop's own parser (Debian's zktop: /usr/lib/python3/dist-packages/zktop.py) on a
    server's `stat`, as its UI does for each server."""
    saved = sys.argv
    sys.argv = ["zktop", "--servers", hosts, "--timeout", "5"]
    try:
        import zktop
    finally:
        sys.argv = saved
    return zktop.ZKServer(hosts, 0)


def main():
    c = support.Checks("four_letter")
    with support.start_zookeeper(extra_cfg="4lw.commands.whitelist=*\n") as zk_server:
        want = answers(zk_server)
    with support.start_warden("4lw.commands.whitelist=*\n") as w:
        zk = setup(w.hosts)
        view = zktop_view(w.hosts)
        c.check(not view.unavailable, "zktop reads Warden's stat")
        c.equal(getattr(view, "mode", None), "standalone", "zktop sees the mode")
        c.check(view.version.startswith("3."), f"zktop reads a version ({view.version!r})")
        c.equal(len(view.sessions), 2, "zktop lists the client and its own connection")
        c.check(any(s.recved != "0" for s in view.sessions), "zktop parses per-connection counters")
        c.check(int(view.node_count) >= 6, f"zktop reads the node count ({view.node_count})")
        c.equal(len([view.min_latency, view.avg_latency, view.max_latency]), 3, "zktop splits the latencies")
        mntr = dict(line.split("\t", 1) for line in ask(w.port, "mntr").splitlines())
        c.equal(mntr.get("zk_ephemerals_count"), "1", "mntr counts the ephemeral node")
        c.equal(mntr.get("zk_watch_count"), "3", "mntr counts data, child and exist watches")
        c.equal(mntr.get("zk_server_state"), "standalone", "mntr names the mode")
        got = {word: ask(w.port, word) for word in WORDS}
        zk.stop()
        c.check(w.alive(), "the server serves on after every word")
    # The version line as ZooKeeper writes it ("3.8.0-..., built on 2024-12-29 17:54 UTC"): the
    # exporters and go-zookeeper's FLWSrvr key on the build time's form.
    built_on = re.compile(r"Zookeeper version: [^,\n]+, built on (\d{4}-\d\d-\d\d \d\d:\d\d) UTC\n")
    for word in ("srvr", "stat"):
        zm, wm = built_on.match(want[word]), built_on.match(got[word])
        c.check(zm is not None, f"{word}: ZooKeeper's version line has the form looked for: {want[word][:90]!r}")
        c.check(wm is not None, f"{word}: Warden's version line has ZooKeeper's form: {got[word][:90]!r}")
    for word in WORDS:
        g, z = got[word], want[word]
        if word == "mntr":
            # Warden reports ZooKeeper's main keys, not its hundred internal counters.
            gk = [l.split("\t")[0] for l in g.splitlines()]
            zk_keys = {l.split("\t")[0] for l in z.splitlines()}
            c.check(len(gk) >= 15 and set(gk) <= zk_keys, f"mntr: every key is one of ZooKeeper's: {gk}")
            c.check(all(re.fullmatch(r"zk_\w+\t\S.*", l) for l in g.splitlines()), "mntr: key<TAB>value lines")
        elif word == "envi":
            # The JVM's properties have no counterpart; the form does.
            c.equal(g.splitlines()[0], "Environment:", "envi: its heading")
            c.check(all(re.fullmatch(r"[\w.]+=.*", l) for l in g.splitlines()[1:]), "envi: key=value lines")
        elif word in ("stat", "cons", "wchc", "wchp"):
            # One line per connection, session or path, in no particular order.
            c.equal(sorted(shape(g).splitlines()), sorted(shape(z).splitlines()), f"{word}: the same shape")
        elif word == "dump":
            # ZooKeeper also lists its empty expiry buckets, and groups connections by idle
            # expiry, which Warden does not have: the bucket headings are left out.
            def sets(t):
                return [l for l in shape(t).splitlines() if not re.fullmatch(r"<num> expire at <date>:", l)]
            c.equal(sets(g), sets(z), "dump: the same sessions, ephemerals and connections")
        else:
            c.equal(shape(g), shape(z), f"{word}: the same shape")
    with support.start_zookeeper() as zk_server, support.start_warden() as w:
        for word in ("stat", "ruok", "mntr"):
            c.equal(ask(w.port, word), ask(zk_server.port, word), f"default whitelist: {word} refused alike")
        c.equal(shape(ask(w.port, "srvr")), shape(ask(zk_server.port, "srvr")), "default whitelist: srvr served")
        for junk in ("abcd", "ru", "RUOK"):
            c.equal(ask(w.port, junk), ask(zk_server.port, junk), f"{junk!r}: the connection closes, nothing said")
        c.check(support.handshake_ok(w.port), "the server still serves sessions")
    c.finish()


if __name__ == "__main__":
    main()
