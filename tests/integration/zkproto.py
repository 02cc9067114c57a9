"""The ZooKeeper client protocol spoken by hand, for tests that need requests no client library
sends (every opcode, bad input) and want to see the exact error codes and events.

Encoders build jute records; `Reader` decodes them; `Session` opens a session over a socket,
sends one request at a time and collects the watch events that arrive before each reply."""
import socket
import struct


def frame(b):
    return struct.pack(">i", len(b)) + b


def connect_request(timeout_ms=30000, session_id=0, passwd=b"\0" * 16, last_zxid=0):
    return struct.pack(">iqiq", 0, last_zxid, timeout_ms, session_id) + jbuf(passwd) + b"\0"


def jint(v):
    return struct.pack(">i", v)


def jlong(v):
    return struct.pack(">q", v)


def jbool(v):
    return b"\1" if v else b"\0"


def jbuf(b):
    return jint(-1) if b is None else jint(len(b)) + b


def jstr(s):
    return jbuf(s.encode())


def jvec(items, enc):
    return jint(len(items)) + b"".join(enc(i) for i in items)


def jacl(acl):
    """acl: [(perms, scheme, id)]"""
    return jvec(acl, lambda a: jint(a[0]) + jstr(a[1]) + jstr(a[2]))


OPEN_ACL = [(31, "world", "anyone")]

CREATE, DELETE, EXISTS, GET_DATA, SET_DATA, GET_ACL, SET_ACL, GET_CHILDREN, SYNC = 1, 2, 3, 4, 5, 6, 7, 8, 9
GET_CHILDREN2, CHECK, MULTI, CREATE2, RECONFIG, CHECK_WATCHES, REMOVE_WATCHES = 12, 13, 14, 15, 16, 17, 18
CREATE_CONTAINER, CREATE_TTL, MULTI_READ = 19, 21, 22
AUTH, SET_WATCHES, SASL, GET_EPHEMERALS, GET_ALL_CHILDREN_NUMBER, SET_WATCHES2, ADD_WATCH, WHO_AM_I = (
    100, 101, 102, 103, 104, 105, 106, 107)
PING, CLOSE_SESSION = 11, -11


def read_frame(sock):
    def exact(n):
        d = b""
        while len(d) < n:
            chunk = sock.recv(n - len(d))
            if not chunk:
                return None
            d += chunk
        return d
    hdr = exact(4)
    if hdr is None:
        return None
    return exact(struct.unpack(">i", hdr)[0])


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def int(self):
        v = struct.unpack_from(">i", self.d, self.p)[0]
        self.p += 4
        return v

    def long(self):
        v = struct.unpack_from(">q", self.d, self.p)[0]
        self.p += 8
        return v

    def bool(self):
        v = self.d[self.p] != 0
        self.p += 1
        return v

    def buf(self):
        n = self.int()
        if n < 0:
            return None
        v = self.d[self.p:self.p + n]
        self.p += n
        return v

    def str(self):
        b = self.buf()
        return None if b is None else b.decode("utf-8", "replace")

    def vec(self, item):
        n = self.int()
        return None if n < 0 else [item() for _ in range(n)]

    def stat(self):
        names = ("czxid", "mzxid", "ctime", "mtime", "version", "cversion", "aversion", "ephemeralOwner",
                 "dataLength", "numChildren", "pzxid")
        kinds = ("long", "long", "long", "long", "int", "int", "int", "long", "int", "int", "long")
        return {n: getattr(self, k)() for n, k in zip(names, kinds)}

    def done(self):
        return self.p >= len(self.d)


class Normaliser:
    """Maps zxids and session ids to tokens in order of first appearance, and times to 'T', so
    that two servers' transcripts compare."""

    def __init__(self):
        self.tokens = {}

    def token(self, kind, value):
        if value in (0, -1):
            return value
        key = (kind, value)
        if key not in self.tokens:
            self.tokens[key] = f"{kind}{sum(1 for k in self.tokens if k[0] == kind)}"
        return self.tokens[key]

    def stat(self, s):
        s = dict(s)
        for k in ("czxid", "mzxid", "pzxid"):
            s[k] = self.token("z", s[k])
        s["ctime"] = s["mtime"] = "T"
        s["ephemeralOwner"] = self.token("s", s["ephemeralOwner"])
        return tuple(sorted(s.items()))


def decode(op, err, body, norm):
    """A reply's body as comparable values: stats normalised, unordered lists sorted."""
    if (err != 0 and op != MULTI_READ) or not body:
        return (err, body.hex() if body else "")
    r = Reader(body)
    if op == CREATE:
        return (err, r.str())
    if op in (CREATE2, CREATE_CONTAINER, CREATE_TTL):
        return (err, r.str(), norm.stat(r.stat()))
    if op in (SET_DATA, EXISTS, SET_ACL):
        return (err, norm.stat(r.stat()))
    if op == GET_DATA:
        return (err, r.buf(), norm.stat(r.stat()))
    if op == GET_ACL:
        return (err, r.vec(lambda: (r.int(), r.str(), r.str())), norm.stat(r.stat()))
    if op == GET_CHILDREN:
        return (err, sorted(r.vec(r.str)))  # the order of children is unspecified
    if op == GET_CHILDREN2:
        return (err, sorted(r.vec(r.str)), norm.stat(r.stat()))
    if op == SYNC:
        return (err, r.str())
    if op == MULTI:
        results = []
        while True:
            t, done, e = r.int(), r.bool(), r.int()
            if done:
                break
            if t == CREATE:
                results.append((t, e, r.str()))
            elif t in (CREATE2, CREATE_CONTAINER, CREATE_TTL):
                results.append((t, e, r.str(), norm.stat(r.stat())))
            elif t == SET_DATA:
                results.append((t, e, norm.stat(r.stat())))
            elif t == -1:
                results.append((t, e, r.int()))
            else:
                results.append((t, e))
        return (err, results)
    if op == GET_EPHEMERALS:
        return (err, sorted(r.vec(r.str)))  # ZooKeeper keeps them in a hash set
    if op == GET_ALL_CHILDREN_NUMBER:
        return (err, r.int())
    if op == WHO_AM_I:
        return (err, sorted(r.vec(lambda: (r.str(), r.str()))))  # ZooKeeper keeps them in a hash set
    if op == MULTI_READ:
        results = []
        while True:
            t, done, e = r.int(), r.bool(), r.int()
            if done:
                break
            if t == GET_DATA:
                results.append((t, e, r.buf(), norm.stat(r.stat())))
            elif t == GET_CHILDREN:
                results.append((t, e, sorted(r.vec(r.str))))
            else:
                results.append((t, e, r.int()))
        return (err, results)
    return (err, body.hex())


class Session:
    """One session on its own connection. call() returns (err, zxid, body bytes) and keeps the
    watch events that came before the reply in `events` as (type, state, path)."""

    def __init__(self, port, timeout_ms=30000, sock=None, session_id=0, passwd=b"\0" * 16):
        """`sock`: a connected socket to use (a TLS one, say) instead of a new one to `port`.
        `session_id` and `passwd`: re-attach that session instead of opening one."""
        self.sock = sock or socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.sendall(frame(connect_request(timeout_ms, session_id, passwd)))
        resp = read_frame(self.sock)
        if resp is None:
            raise RuntimeError("the server closed the connection during the handshake")
        r = Reader(resp)
        r.int()
        self.timeout, self.session_id, self.passwd = r.int(), r.long(), r.buf()
        self.xid = 0
        self.events = []

    def send(self, op, body=b""):
        self.xid += 1
        self.sock.sendall(frame(struct.pack(">ii", self.xid, op) + body))
        return self.xid

    def receive(self, xid):
        """Reads frames until the reply to `xid`; None when the server closed the connection."""
        while True:
            f = read_frame(self.sock)
            if f is None:
                return None
            rxid, zxid, err = struct.unpack(">iqi", f[:16])
            if rxid == -1:
                r = Reader(f[16:])
                self.events.append((r.int(), r.int(), r.str()))
                continue
            if rxid == xid or rxid == -4:  # -4: an auth reply
                return err, zxid, f[16:]

    def call(self, op, body=b""):
        return self.receive(self.send(op, body))

    def outcome(self, op, body=b"", wait=3):
        """'ERR open' or 'ERR closed': a request's error code, then whether the server kept the
        connection (nothing more comes within `wait` seconds) or closed it; 'closed' when the
        connection closed before a reply."""
        got = self.call(op, body)
        if got is None:
            return "closed"
        try:
            self.sock.settimeout(wait)
            still = self.sock.recv(1) != b""
        except socket.timeout:
            still = True
        except OSError:
            still = False
        return f"{got[0]} {'open' if still else 'closed'}"

    def who_am_i(self):
        """whoAmI's ids as ["scheme:id", ...] (None when the connection closed)."""
        got = self.call(WHO_AM_I)
        if got is None:
            return None
        r = Reader(got[2])
        return [f"{r.str()}:{r.str()}" for _ in range(r.int())]

    def take_events(self):
        e, self.events = self.events, []
        return e

    def close(self):
        try:
            self.call(-11)
        except OSError:
            pass
        self.sock.close()
