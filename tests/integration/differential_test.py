"""A seeded random stream of requests from several sessions, sent to ZooKeeper 3.8 and to
Warden in the same run; every reply and every watch event must be the same once zxids, times
and session ids are normalised.

The stream depends on the seed only (never on replies), so a seed replays exactly:
DIFF_SEED=<seed> DIFF_STEPS=<n> reruns a failure, whose seed and step this test prints.
Sessions 0 and 1 set standard watches, session 2 persistent ones (ZooKeeper 3.8 turns a
persistent watch into a one-shot when the same session sets a standard watch on the same path,
which 3.9 fixed and Warden follows; checkWatches is left out for the same reason, and each
path gets one addWatch mode, since 3.8 replaces a path's mode where 3.9 adds to it). check (13)
goes only inside multi: ZooKeeper 3.8 never answers a check sent on its own, Warden does."""
import os
import random

import support
from zkproto import (ADD_WATCH, AUTH, CHECK, CREATE, CREATE2, CREATE_CONTAINER, CREATE_TTL, DELETE, EXISTS,
                     GET_ACL, GET_ALL_CHILDREN_NUMBER, GET_CHILDREN, GET_CHILDREN2, GET_DATA, GET_EPHEMERALS,
                     MULTI, MULTI_READ, OPEN_ACL, REMOVE_WATCHES, SASL, SET_ACL, SET_DATA, SYNC, Normaliser, Session,
                     decode, jacl, jbool, jbuf, jint, jlong, jstr)

PATHS = ["/d", "/d/a", "/d/b", "/d/a/x", "/d/b/y", "/e", "/e/s", "/e/s/t"]
SESSIONS = 3
ACLS = [OPEN_ACL, OPEN_ACL, OPEN_ACL, [(1, "world", "anyone")], [(31, "auth", "")],
        [(31, "digest", "bob:kNobAmu9ovO2YbGiEVIC0rJ5hTo="), (1, "world", "anyone")], [(31, "ip", "127.0.0.1")],
        [(31, "ip", "10.0.0.0/8"), (1, "world", "anyone")], [(31, "nosuch", "x")]]


def create_body(rng, path):
    flags = rng.choice([0, 0, 1, 2, 3, 5, 6])  # persistent, ephemeral, sequential, both, TTL kinds
    data = rng.choice([None, b"", b"v", bytes(rng.randrange(256) for _ in range(rng.randrange(1, 12)))])
    op = rng.choice([CREATE, CREATE, CREATE2, CREATE_CONTAINER])
    if flags in (5, 6):
        op = CREATE_TTL
    body = jstr(path) + jbuf(data) + jacl(rng.choice(ACLS)) + jint(flags)
    if op == CREATE_TTL:
        body += jlong(rng.choice([100000, 0, -5]))  # also bad TTLs
    if op == CREATE_CONTAINER:
        body = jstr(path) + jbuf(data) + jacl(OPEN_ACL) + jint(rng.choice([0, 4]))
    return op, body


def version(rng):
    return rng.choice([-1, -1, 0, 1, 2])


def write_op(rng):
    """One op of a multi: (type, record bytes)."""
    path = rng.choice(PATHS)
    kind = rng.choice(["create", "delete", "set", "check"])
    if kind == "create":
        return create_body(rng, path)
    if kind == "delete":
        return DELETE, jstr(path) + jint(version(rng))
    if kind == "set":
        return SET_DATA, jstr(path) + jbuf(b"m" * rng.randrange(4)) + jint(version(rng))
    return CHECK, jstr(path) + jint(version(rng))


def multi_body(ops, read=False):
    body = b""
    for op, rec in ops:
        body += jint(op) + jbool(False) + jint(-1) + rec
    return body + jint(-1) + jbool(True) + jint(-1)


def request(rng, s):
    """The next request of session `s`: (label, op, body), or ('reconnect', None, None)."""
    path = rng.choice(PATHS)
    watch = s < 2 and rng.random() < 0.4
    kind = rng.choices(
        ["create", "delete", "set", "get", "exists", "children", "children2", "setacl", "getacl", "multi",
         "multiread", "addwatch", "removewatch", "auth", "sync", "ephemerals", "count", "reconnect"],
        weights=[14, 8, 10, 6, 6, 5, 3, 3, 2, 6, 3, 3, 1, 1, 1, 1, 1, 1])[0]
    if kind == "create":
        op, body = create_body(rng, path)
        return f"create {path}", op, body
    if kind == "delete":
        return f"delete {path}", DELETE, jstr(path) + jint(version(rng))
    if kind == "set":
        return f"set {path}", SET_DATA, jstr(path) + jbuf(rng.choice([None, b"", b"new", b"x" * 20])) + jint(version(rng))
    if kind == "get":
        return f"get {path}", GET_DATA, jstr(path) + jbool(watch)
    if kind == "exists":
        return f"exists {path}", EXISTS, jstr(path) + jbool(watch)
    if kind == "children":
        return f"children {path}", GET_CHILDREN, jstr(path) + jbool(watch)
    if kind == "children2":
        return f"children2 {path}", GET_CHILDREN2, jstr(path) + jbool(watch)
    if kind == "setacl":
        return f"setAcl {path}", SET_ACL, jstr(path) + jacl(rng.choice(ACLS)) + jint(rng.choice([-1, -1, 0, 1]))
    if kind == "getacl":
        return f"getAcl {path}", GET_ACL, jstr(path)
    if kind == "multi":
        ops = [write_op(rng) for _ in range(rng.randrange(1, 4))]
        return "multi", MULTI, multi_body(ops)
    if kind == "multiread":
        ops = [(rng.choice([GET_DATA, GET_CHILDREN]), jstr(rng.choice(PATHS)) + jbool(False))
               for _ in range(rng.randrange(1, 4))]
        return "multiRead", MULTI_READ, multi_body(ops)
    if kind == "addwatch" and s == 2:
        # One mode per path: a second mode on the same path replaces the first in 3.8 and joins
        # it in 3.9 (and Warden).
        return f"addWatch {path}", ADD_WATCH, jstr(path) + jint(PATHS.index(path) % 2)
    if kind == "removewatch" and s == 2:
        return f"removeWatches {path}", REMOVE_WATCHES, jstr(path) + jint(3)
    if kind == "auth":
        return "addauth", AUTH, jint(0) + jstr("digest") + jbuf(rng.choice([b"bob:pw", b"carol:pw"]))
    if kind == "sync":
        return f"sync {path}", SYNC, jstr(path)
    if kind == "ephemerals":
        return "getEphemerals", GET_EPHEMERALS, jstr(rng.choice(["/", "/d", "/e/"]))
    if kind == "count":
        return f"getAllChildrenNumber {path}", GET_ALL_CHILDREN_NUMBER, jstr(path)
    if kind == "reconnect":
        return "close and reopen", None, None
    return f"exists {path}", EXISTS, jstr(path) + jbool(False)


def run(port, seed, steps):
    """Sends the stream to the server on `port`; returns one normalised entry per step."""
    rng = random.Random(seed)
    norm = Normaliser()
    sessions = [Session(port) for _ in range(SESSIONS)]
    for s in sessions:
        norm.token("s", s.session_id)
    out = []
    # The first SASL packet of a client configured for SASL: a server without SASL answers OK
    # with no token (a second one differs on purpose: see sasl_test.py).
    for i, s in enumerate(sessions):
        r = s.call(SASL, jbuf(b""))
        out.append((-1, f"session {i}: sasl", "closed" if r is None else decode(SASL, r[0], r[2], norm), []))
    for step in range(steps):
        i = rng.randrange(SESSIONS)
        label, op, body = request(rng, i)
        if op is None:
            sessions[i].close()
            sessions[i] = Session(port)
            norm.token("s", sessions[i].session_id)
            r = sessions[i].call(SASL, jbuf(b""))  # as every connection of a SASL client begins
            reply = ("reopened", "closed" if r is None else decode(SASL, r[0], r[2], norm))
        else:
            r = sessions[i].call(op, body)
            reply = "closed" if r is None else decode(op, r[0], r[2], norm)
        # A round trip on every session: the events this step caused have all arrived.
        events = []
        for s in sessions:
            s.call(EXISTS, jstr("/") + jbool(False))
            events.append(sorted(s.take_events()))
        out.append((step, f"session {i}: {label}", reply, events))
    for s in sessions:
        s.close()
    return out


def main():
    c = support.Checks("differential")
    seed = int(os.environ.get("DIFF_SEED", random.randrange(1 << 30)))
    steps = int(os.environ.get("DIFF_STEPS", "600"))
    print(f"differential test: seed {seed}, {steps} steps (DIFF_SEED={seed} DIFF_STEPS={steps} replays it)",
          flush=True)
    with support.start_zookeeper() as zk:
        want = run(zk.port, seed, steps)
    with support.start_warden("extendedTypesEnabled=true\n") as w:
        got = run(w.port, seed, steps)
        c.check(w.alive(), "Warden is still running")
    c.equal(len(got), len(want), "both ran every step")
    for g, z in zip(got, want):
        if g != z:
            c.equal(g, z, f"seed {seed}, step {z[0]} ({z[1]})")
            print(f"first difference at step {z[0]}: replay with DIFF_SEED={seed} DIFF_STEPS={z[0] + 1}", flush=True)
            break
        c.check(True, "")
    c.finish()


if __name__ == "__main__":
    main()
