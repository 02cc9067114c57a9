"""Logs an operator can keep: warden.log.* in zoo.cfg and --log-* on the command line. A log
file rotated by size with a count kept; JSON lines (every line an object with ts, level, msg);
the level obeyed; the first line states the version, the configuration file and the role, the
next the ports; a line about a session or a connection names the session id and the peer's
address and port; bad values stop the start naming the file, the line and the key (or the
option), and an unwritable log file is named."""
import json
import os
import re
import socket
import struct
import subprocess

import support
import zkproto

c = support.Checks("logging")
BIN = os.environ["WARDEN_SERVER"]


def noisy_connections(port, n):
    """`n` connections that send a malformed connect request: one warning line each."""
    for _ in range(n):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(struct.pack(">i", 3) + b"abc")
            s.settimeout(10)
            try:
                while s.recv(1024):
                    pass
            except OSError:
                pass


def bad_auth(port):
    """A session that sends an auth packet of an unknown scheme: its id and local port."""
    s = zkproto.Session(port)
    s.call(zkproto.AUTH, zkproto.jint(0) + zkproto.jstr("nosuchscheme") + zkproto.jbuf(b"x"))  # AuthFailed
    return s.session_id, s.sock.getsockname()[1]


def rotated_json(work):
    log = os.path.join(work, "warden.log")
    cfg = (f"warden.log.file={log}\nwarden.log.maxFileSize=4KB\nwarden.log.maxFiles=2\nwarden.log.format=json\n"
           "warden.log.level=debug\n")
    w = support.start_warden(cfg)
    try:
        noisy_connections(w.port, 150)
        c.check(w.alive(), "the server serves on while its log rotates")
    finally:
        w.stop()
    files = sorted(f for f in os.listdir(work) if f.startswith("warden"))
    c.equal(files, ["warden.1.log", "warden.2.log", "warden.log"], "rotated by size, two old files kept")
    sizes = [os.path.getsize(os.path.join(work, f)) for f in files]
    c.check(all(s <= 4096 + 600 for s in sizes), f"each file about the size asked for: {sizes}")
    lines = []
    for f in ("warden.2.log", "warden.1.log", "warden.log"):
        lines += open(os.path.join(work, f)).read().splitlines()
    objects = []
    for line in lines:
        try:
            objects.append(json.loads(line))
        except ValueError:
            c.check(False, f"a JSON line: {line!r}")
    c.check(objects and all(set(o) == {"ts", "level", "msg"} for o in objects), "every line has ts, level and msg")
    c.check(all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", o["ts"]) for o in objects),
            "timestamps in ISO 8601, UTC, milliseconds")
    c.check(any("malformed connect request" in o["msg"] and re.search(r"connection from 127\.0\.0\.1:\d+", o["msg"])
                for o in objects), "a connection's line names its peer's address and port")


def first_lines_and_sessions(work):
    cfg_extra = "warden.log.level=info\n"
    w = support.start_warden(cfg_extra, workdir=work)
    try:
        sid, local_port = bad_auth(w.port)
        w.proc.send_signal(15)
        w.proc.wait(timeout=20)
    finally:
        w.stop()
    log = open(w.log_path).read().splitlines()
    c.check(len(log) >= 2 and re.search(r"warden-server \d+\.\d+\.\d+ \(pid \d+\) starting from .*zoo\.cfg: standalone",
                                        log[0]) is not None, f"the first line: version, file, role: {log[:1]}")
    c.check(len(log) >= 2 and f"serving clients on 127.0.0.1:{w.port}" in log[1], f"the second: the ports: {log[1:2]}")
    want = f"authentication failed for session 0x{sid:x} from 127.0.0.1:{local_port}: scheme 'nosuchscheme'"
    c.check(any(want in line for line in log), f"a session's line names the session and its peer: {want!r}")


def level_from_command_line(work):
    data = os.path.join(work, "data")
    p = subprocess.Popen([BIN, "--standalone", "--port", "0", "--data-dir", data, "--log-level", "warn"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    port = int(line.rsplit(":", 1)[1])
    noisy_connections(port, 1)
    p.terminate()
    _, err = p.communicate(timeout=20)
    c.check("malformed connect request" in err, "--log-level warn: warnings are logged")
    c.check("starting from" not in err and "serving clients" not in err, "--log-level warn: info lines are not")


def refused(work):
    cases = [("warden.log.level=loud\n", ["bad.cfg:5: warden.log.level=loud", "trace, debug, info, warn, error"]),
             ("warden.log.maxFileSize=12XB\n", ["bad.cfg:5: warden.log.maxFileSize=12XB", "KB, MB or GB"]),
             ("warden.log.maxFileSize=0\n", ["warden.log.maxFileSize=0"]),
             ("warden.log.maxFiles=-3\n", ["warden.log.maxFiles=-3", "0 to 10000"]),
             ("warden.log.format=xml\n", ["warden.log.format=xml", "text or json"]),
             ("warden.log.file=\n", ["warden.log.file=", "names no file"]),
             # under a regular file: no directory can be made there
             (f"warden.log.file={work}/bad.cfg/x.log\n", ["warden.log.file", "cannot be written"]),
             ("warden.log.level=\x01\xff\n", ["bad.cfg:5:"])]
    for extra, wanted in cases:
        cfg = os.path.join(work, "bad.cfg")
        with open(cfg, "w", errors="surrogateescape") as f:
            f.write(f"tickTime=2000\ndataDir={work}/d\nclientPort=0\nclientPortAddress=127.0.0.1\n{extra}")
        r = subprocess.run([BIN, cfg], capture_output=True, text=True, errors="replace", timeout=30)
        c.equal(r.returncode, 2, f"{extra.strip()!r}: the start stops (exit 2)")
        missing = [x for x in wanted if x not in r.stderr]
        c.check(not missing, f"{extra.strip()!r}: the message names {missing}: {r.stderr.strip()!r}")
    for args, wanted in ((["--log-format", "yaml"], "--log-format yaml: must be text or json"),
                         (["--log-level"], "--log-level needs a value")):
        r = subprocess.run([BIN, "--standalone", "--port", "0", "--data-dir", f"{work}/d", *args], capture_output=True,
                           text=True, timeout=30)
        c.check(r.returncode == 2 and wanted in r.stderr, f"{args}: {r.stderr.strip()!r}")
    r = subprocess.run([BIN, "--help"], capture_output=True, text=True, timeout=30)
    c.check(all(o in r.stdout for o in ("--log-level", "--log-file", "--log-format", "--version")),
            "--help lists the log options and --version")


def main():
    c.run_parts((rotated_json, first_lines_and_sessions, level_from_command_line, refused), "warden-log-",
                each_fresh=True)


if __name__ == "__main__":
    main()
