"""Every opcode of the client protocol beyond the classic ones, sent by hand to ZooKeeper 3.8 and
to Warden in the same run: multiRead, getEphemerals, getAllChildrenNumber, whoAmI, addWatch
(persistent and recursive), checkWatches, removeWatches, setWatches2, sasl, reconfig and
getConfig, plus bad records for each. Every reply (error code and decoded body) and every watch
event must be the same once zxids, times and session ids are normalised."""
import struct

import support
from zkproto import (ADD_WATCH, AUTH, CHECK_WATCHES, CLOSE_SESSION, PING, SET_WATCHES, CREATE, DELETE, EXISTS, GET_ALL_CHILDREN_NUMBER, GET_CHILDREN,
                     GET_DATA, GET_EPHEMERALS, MULTI_READ, OPEN_ACL, RECONFIG, REMOVE_WATCHES, SASL, SET_DATA,
                     SET_WATCHES2, WHO_AM_I, Normaliser, Session, decode, jacl, jbool, jbuf, jint, jlong, jstr, jvec)


def create(path, data=b"", flags=0):
    return CREATE, jstr(path) + jbuf(data) + jacl(OPEN_ACL) + jint(flags)


def set_data(path, data, version=-1):
    return SET_DATA, jstr(path) + jbuf(data) + jint(version)


def path_watch(op, path, watch=False):
    return op, jstr(path) + jbool(watch)


def multi_read(ops):
    body = b""
    for op, path, watch in ops:
        body += jint(op) + jbool(False) + jint(-1) + jstr(path) + jbool(watch)
    return MULTI_READ, body + jint(-1) + jbool(True) + jint(-1)


def script(port):
    """Runs the same steps against the server on `port`; returns the normalised transcript."""
    norm = Normaliser()
    a, b, c, d = (Session(port) for _ in range(4))
    names = {a.session_id: "A", b.session_id: "B", c.session_id: "C", d.session_id: "D"}
    out = []

    def step(label, s, req):
        op, body = req
        reply = s.call(op, body)
        if reply is None:
            out.append((label, "connection closed"))
            return
        err, _zxid, payload = reply
        out.append((label, decode(op, err, payload, norm)))

    def events(label):
        # A round trip on each watching session: events sent before it have arrived.
        for name, s in (("B", b), ("C", c), ("D", d)):
            s.call(*path_watch(EXISTS, "/"))
            out.append((label, name, s.take_events()))

    step("create /r", a, create("/r", b"root"))
    for kid in ("a", "b"):
        step(f"create /r/{kid}", a, create(f"/r/{kid}", kid.encode()))
    step("create ephemeral /r/e1", a, create("/r/e1", b"", 1))
    step("create ephemeral /r/e2", a, create("/r/e2", b"", 1))
    step("create ephemeral /other-e", a, create("/other-e", b"", 1))
    step("create ephemeral of B", b, create("/r/eb", b"", 1))
    for prefix in ("/", "", "  /  ", "/r", "/r/e", "/nothing"):
        step(f"getEphemerals {prefix!r}", a, (GET_EPHEMERALS, jstr(prefix)))
    step("getEphemerals of B", b, (GET_EPHEMERALS, jstr("/")))
    step("getEphemerals of C (none)", c, (GET_EPHEMERALS, jstr("/")))
    for path in ("/", "/r", "/r/a", "/missing"):
        step(f"getAllChildrenNumber {path}", a, (GET_ALL_CHILDREN_NUMBER, jstr(path)))
    step("whoAmI", a, (WHO_AM_I, b""))
    step("addauth digest", a, (AUTH, jint(0) + jstr("digest") + jbuf(b"alice:secret")))
    step("whoAmI after addauth", a, (WHO_AM_I, b""))
    step("multiRead", a, multi_read([(GET_DATA, "/r", False), (GET_CHILDREN, "/r", False),
                                     (GET_DATA, "/missing", False), (GET_CHILDREN, "/r/a", False),
                                     (GET_DATA, "/r/a", False)]))
    step("multiRead empty", a, multi_read([]))
    step("multiRead holding a create", a,
         (MULTI_READ, jint(CREATE) + jbool(False) + jint(-1) + create("/x")[1] + jint(-1) + jbool(True) + jint(-1)))
    step("multiRead cut short", a, (MULTI_READ, jint(GET_DATA) + jbool(False)))
    step("multiRead with a watch", d, multi_read([(GET_DATA, "/r/b", True)]))
    step("setData /r/b", a, set_data("/r/b", b"b2"))
    events("after setData /r/b (multiRead watch)")

    step("addWatch recursive /r (B)", b, (ADD_WATCH, jstr("/r") + jint(1)))
    step("addWatch persistent /r (C)", c, (ADD_WATCH, jstr("/r") + jint(0)))
    step("addWatch bad mode", c, (ADD_WATCH, jstr("/r") + jint(7)))
    step("create /r/a/x", a, create("/r/a/x", b"x"))
    events("after create /r/a/x")
    step("setData /r/a", a, set_data("/r/a", b"a2"))
    events("after setData /r/a")
    step("setData /r", a, set_data("/r", b"root2"))
    events("after setData /r")
    step("create /r/c", a, create("/r/c"))
    events("after create /r/c")
    step("delete /r/a/x", a, (DELETE, jstr("/r/a/x") + jint(-1)))
    events("after delete /r/a/x")

    for label, s, path, typ in (("C data /r", c, "/r", 2), ("C children /r", c, "/r", 1), ("C any /r", c, "/r", 3),
                                ("C any /zz", c, "/zz", 3), ("B data /r", b, "/r", 2),
                                ("B data /r/a (below)", b, "/r/a", 2), ("D data /r", d, "/r", 2),
                                ("C bad type", c, "/r", 9)):
        step(f"checkWatches {label}", s, (CHECK_WATCHES, jstr(path) + jint(typ)))
    step("removeWatches C children /r", c, (REMOVE_WATCHES, jstr("/r") + jint(1)))
    step("checkWatches C children /r after", c, (CHECK_WATCHES, jstr("/r") + jint(1)))
    step("checkWatches C data /r after", c, (CHECK_WATCHES, jstr("/r") + jint(2)))
    step("create /r/d", a, create("/r/d"))
    events("after create /r/d (C's child side removed)")
    step("setData /r again", a, set_data("/r", b"root3"))
    events("after setData /r again (C's data side stays)")
    step("removeWatches C any /r", c, (REMOVE_WATCHES, jstr("/r") + jint(3)))
    step("removeWatches C any /r again", c, (REMOVE_WATCHES, jstr("/r") + jint(3)))
    step("getData watch /r/b (D)", d, path_watch(GET_DATA, "/r/b", True))
    step("removeWatches D data /r/b", d, (REMOVE_WATCHES, jstr("/r/b") + jint(2)))
    step("removeWatches D data /r/b again", d, (REMOVE_WATCHES, jstr("/r/b") + jint(2)))
    step("removeWatches bad record", d, (REMOVE_WATCHES, jstr("/r/b")))
    step("setData /r/b again", a, set_data("/r/b", b"b3"))
    events("after setData /r/b again (nothing watches it)")

    step("setWatches2 (D)", d, (SET_WATCHES2, jlong(0) + jvec([], jstr) + jvec(["/nope"], jstr) + jvec([], jstr) +
                                 jvec(["/r/b"], jstr) + jvec(["/r/a"], jstr)))
    step("setData /r/b third", a, set_data("/r/b", b"b4"))
    step("create /r/a/y", a, create("/r/a/y"))
    step("create /nope", a, create("/nope"))
    events("after setWatches2")

    step("sasl", a, (SASL, jbuf(b"token")))
    step("after sasl the session lives", a, path_watch(EXISTS, "/r"))
    step("reconfig", a, (RECONFIG, jstr("") + jstr("") + jstr("server.1=127.0.0.1:1:2") + jlong(-1)))
    step("getConfig", a, path_watch(GET_DATA, "/zookeeper/config"))
    for s in (a, b, c, d):
        s.close()
    return out


def special_headers(port):
    """The reply header (xid, error, whether its zxid is 0) to each special packet, sent by hand
    with the xid a library uses and with an ordinary one: auth (go-zookeeper sends an ordinary xid
    and waits for it), setWatches, ping, sasl and closeSession."""
    import socket
    from zkproto import frame, read_frame
    out = []

    def reply(s, xid, op, body=b""):
        s.sock.sendall(frame(struct.pack(">ii", xid, op) + body))
        while True:
            f = read_frame(s.sock)
            if f is None:
                return "closed"
            rxid, zxid, err = struct.unpack(">iqi", f[:16])
            if rxid != -1:  # a watch event is not the reply
                return rxid, err, zxid == 0

    auth_ok = AUTH, jint(0) + jstr("digest") + jbuf(b"user:pw")
    set_watches = SET_WATCHES, jlong(0) + jvec(["/a"], jstr) + jvec([], jstr) + jvec([], jstr)
    for label, xid, (op, body) in [("auth digest", -4, auth_ok), ("auth digest", 7, auth_ok),
                                   ("setWatches", -8, set_watches), ("setWatches", 21, set_watches),
                                   ("ping", -2, (PING, b"")), ("ping", 9, (PING, b"")),
                                   ("sasl", 13, (SASL, jbuf(b"")))]:
        s = Session(port)
        try:
            s.sock.settimeout(10)
            out.append((f"{label} with xid {xid}", reply(s, xid, op, body)))
        except (OSError, socket.timeout) as e:
            out.append((f"{label} with xid {xid}", f"no reply: {type(e).__name__}"))
        s.sock.close()
    for xid in (-4, 11):
        s = Session(port)
        out.append((f"auth of an unknown scheme with xid {xid}",
                    reply(s, xid, AUTH, jint(0) + jstr("nosuchscheme") + jbuf(b"x"))))
        s.sock.close()
    s = Session(port)
    out.append(("closeSession with xid 15", reply(s, 15, CLOSE_SESSION)))
    s.sock.close()
    return out


# ZooKeeper 3.8's checkWatches answers for any session's watch on the path, not the caller's
# own (its WatchManager.containsWatcher; 3.9 checks the caller's). Warden answers as 3.9 does.
# For these steps the test checks both: 3.8's answer, and the caller's truth from Warden.
ZK38_CHECK_WATCHES_BUG = {
    "checkWatches D data /r": ((0, ""), (-121, "")),
    "checkWatches C children /r after": ((0, ""), (-121, "")),
}


def main():
    c = support.Checks("opcodes")
    zk = support.start_zookeeper()
    try:
        want = script(zk.port)
        want_headers = special_headers(zk.port)
    finally:
        zk.stop()
    with support.start_warden() as w:
        got = script(w.port)
        got_headers = special_headers(w.port)
    for g, z in zip(got_headers, want_headers):
        c.equal(g, z, f"the reply header to {z[0]} as ZooKeeper 3.8's")
    c.equal(len(got_headers), len(want_headers), "a header for every special packet")
    c.equal(len(got), len(want), "the transcripts have the same number of steps")
    for g, z in zip(got, want):
        if z[0] in ZK38_CHECK_WATCHES_BUG:
            zk_answer, own_answer = ZK38_CHECK_WATCHES_BUG[z[0]]
            c.equal(z[1], zk_answer, f"step {z[0]!r}: ZooKeeper 3.8 answers as it does")
            c.equal(g[1], own_answer, f"step {z[0]!r}: Warden answers for the caller's own watches")
            continue
        c.equal(g, z, f"step {z[0]!r}")
    c.finish()


if __name__ == "__main__":
    main()
