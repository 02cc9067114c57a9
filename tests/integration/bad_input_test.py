"""Bad input on the client port, sent over real sockets to Warden and to ZooKeeper 3.8 alike:
garbage, truncated frames, negative and oversized lengths, unknown opcodes, requests before
the handshake. What each server does (reply with an error code, or close that connection) must
be the same, and afterwards Warden still serves its other clients and has lost nothing."""
import os
import random
import socket
import struct

from kazoo.client import KazooClient

import support
from zkproto import connect_request, frame, jstr, read_frame


def outcome(port, payload, handshake=False, half_close=False):
    """Sends `payload` (raw bytes) and reports what the server did: the error codes of the
    replies it sent, then 'closed' if it closed the connection, or 'open'."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    seen = []
    try:
        if handshake:
            s.sendall(frame(connect_request()))
            resp = read_frame(s)
            seen.append("connected" if resp and len(resp) >= 36 else "no-handshake")
        s.sendall(payload)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        while True:
            try:
                f = read_frame(s)
            except socket.timeout:
                seen.append("open")
                break
            if f is None:
                seen.append("closed")
                break
            xid, _zxid, err = struct.unpack(">iqi", f[:16]) if len(f) >= 16 else (0, 0, 0)
            seen.append(f"err {err}")
            s.settimeout(1.5)
    finally:
        s.close()
    return seen


def attacks():
    rnd = random.Random(7)  # seeded: the same garbage every run
    garbage = bytes(rnd.randrange(256) for _ in range(64))
    get_data = struct.pack(">ii", 1, 4) + jstr("/kept") + b"\0"
    return [
        ("random garbage instead of a handshake", dict(payload=garbage)),
        ("a short frame instead of a handshake", dict(payload=frame(b"\x01\x02\x03"))),
        ("a request before the handshake", dict(payload=frame(get_data))),
        ("a truncated frame, then EOF", dict(payload=struct.pack(">i", 100) + b"x" * 10, half_close=True)),
        ("a negative length", dict(payload=struct.pack(">i", -5) + b"x" * 8)),
        ("a length above jute.maxbuffer", dict(payload=struct.pack(">i", 0x7FFFFFF0) + b"x" * 8)),
        ("a negative length after the handshake", dict(payload=struct.pack(">i", -1), handshake=True)),
        ("an unknown opcode", dict(payload=frame(struct.pack(">ii", 5, 999) + jstr("/x")), handshake=True)),
        ("a truncated record", dict(payload=frame(struct.pack(">ii", 5, 1) + struct.pack(">i", 50)), handshake=True)),
        ("a frame with no header", dict(payload=frame(b"\x01\x02"), handshake=True)),
        ("random garbage after the handshake", dict(payload=frame(garbage), handshake=True)),
    ]


def main():
    c = support.Checks("bad_input")
    with support.start_zookeeper() as zk:
        reference = {name: outcome(zk.port, **kw) for name, kw in attacks()}
    with support.start_warden() as w:
        client = KazooClient(hosts=w.hosts)
        client.start(timeout=10)
        client.create("/kept", b"precious")
        for name, kw in attacks():
            got = outcome(w.port, **kw)
            c.equal(got, reference[name], f"{name}: same handling as ZooKeeper")
            c.equal(client.get("/kept")[0], b"precious", f"after {name}: data intact, other client served")
        client.stop()
        c.check(w.alive(), "the server is still running")
        log = w.log()
        c.check("jute.maxbuffer" in log, "an oversized frame leaves a log line")
        c.check("unknown opcode" in log, "an unknown opcode leaves a log line")
    c.finish()


if __name__ == "__main__":
    main()
