"""A full disk: the data directory is a small tmpfs (this test mounts it, so it runs as root,
as CI does), part of it taken by a ballast file. The server refuses to write into its reserve
of free space (RocksDB itself must never meet a full disk). Writes fail with an error while reads go on; when space returns writes succeed
again; nothing acknowledged is lost across a restart. Snapshots (every few txns here) fail while
the disk is full and resume once space returns."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from kazoo.client import KazooClient
from kazoo.exceptions import SystemZookeeperError

import support

BIN = os.environ["WARDEN_SERVER"]
VALUE = os.urandom(100_000)  # incompressible: RocksDB compresses what it flushes
MAX_WRITES = 1000  # bounded: the 160 MiB disk, less its ballast and the reserve, fills long before


def start(data_dir, log_path):
    cfg = os.path.join(os.path.dirname(log_path), "zoo.cfg")
    with open(cfg, "w") as f:
        # A snapshot every 5 to 10 txns, so that some are due while the disk is full.
        f.write(f"dataDir={data_dir}\nclientPort=0\nadmin.enableServer=false\nclientPortAddress=127.0.0.1\nsnapCount=10\nsnapTreePercent=0\n")
    p = subprocess.Popen([BIN, cfg], stdout=subprocess.PIPE, stderr=open(log_path, "a"), text=True)
    line = p.stdout.readline().strip()
    if "listening on" not in line:
        raise RuntimeError(f"no address: {line!r} {open(log_path).read()[-2000:]}")
    return p, line.rsplit(" ", 1)[1]


def snapshot_lines(log_path, since):
    with open(log_path, errors="replace") as f:
        f.seek(since)
        text = f.read()
    return (re.findall(r"snapshot at 0x([0-9a-f]+) written", text), re.findall(r"snapshot at 0x[0-9a-f]+ abandoned", text))


def main():
    c = support.Checks("disk_full")
    mnt = tempfile.mkdtemp(prefix="warden-smallfs-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160m", "tmpfs", mnt], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAILED: cannot mount a tmpfs at {mnt} (this test needs root): {r.stderr.strip()}")
        os.rmdir(mnt)
        raise SystemExit(1)
    proc = None
    log_dir = tempfile.mkdtemp(prefix="warden-diskfull-log-")
    log_path = os.path.join(log_dir, "server.log")
    try:
        ballast = os.path.join(mnt, "ballast")
        with open(ballast, "wb") as f:
            f.write(b"\0" * (48 * 1024 * 1024))
        data_dir = os.path.join(mnt, "data")
        proc, hosts = start(data_dir, log_path)
        zk = KazooClient(hosts=hosts, timeout=30)
        zk.start(timeout=10)
        zk.create("/small", b"readable")
        acked, failures = [], 0
        for i in range(MAX_WRITES):
            try:
                zk.create(f"/big-{i}", VALUE)
                acked.append(f"/big-{i}")
            except SystemZookeeperError:
                failures += 1
                if failures >= 15:  # enough txns refused that snapshots fall due meanwhile
                    break
        c.check(failures >= 15, f"writes fail with an error once the disk is full ({len(acked)} succeeded first)")
        c.check(len(acked) > 5, "writes succeeded until then")
        c.equal(zk.get("/small")[0], b"readable", "reads go on while the disk is full")
        c.equal(len(zk.get_children("/")), len(acked) + 2, "the tree holds exactly the acknowledged writes")
        c.check(proc.poll() is None, "the server keeps running")

        # A snapshot falls due every 5 to 10 submitted txns, failed ones included, but one that
        # falls due while the previous is still being written is skipped, and an abandonment is
        # logged after the writer's thread meets the full disk: on a loaded machine 15 refused
        # writes may pass first. More writes, bounded in count and time, until one shows. One of
        # them may be taken (seen once in CI): the store's own files shrink now and then (RocksDB
        # drops a write-ahead log once its memtable is flushed, a finished snapshot replaces the
        # one before), and the space is real. It counts as any acknowledged write (the restart
        # below must keep it), and the disk fills again.
        deadline = time.time() + 30
        written, abandoned = snapshot_lines(log_path, 0)
        refills = 0
        while not abandoned and failures < 300 and refills < 100 and time.time() < deadline:
            try:
                zk.create(f"/refill-{refills}", VALUE)
                acked.append(f"/refill-{refills}")
                refills += 1
            except SystemZookeeperError:
                failures += 1
            time.sleep(0.05)
            written, abandoned = snapshot_lines(log_path, 0)
        c.check(abandoned, f"snapshots were abandoned while the disk was full ({len(abandoned)}; "
                           f"{len(written)} written before; {refills} writes taken meanwhile)")
        os.unlink(ballast)  # space returns
        space_back = os.path.getsize(log_path)
        ok = False
        for attempt in range(20):
            try:
                zk.create("/after-space-returned", b"x")
                ok = True
                break
            except SystemZookeeperError:
                pass
        c.check(ok, "writes succeed again once space returns")
        if ok:
            acked.append("/after-space-returned")
        # Snapshots resume: nothing else commits in between, so the first one is due at the
        # zxid of the failures, and later ones above it.
        for i in range(40):
            zk.create(f"/small-{i}", b"s")
            acked.append(f"/small-{i}")
        deadline = time.time() + 30
        while time.time() < deadline and not snapshot_lines(log_path, space_back)[0]:
            time.sleep(0.2)
        written, _ = snapshot_lines(log_path, space_back)
        c.check(written, f"snapshots are written again once space returns ({len(written)} written)")
        if not written:  # what the server said of its snapshots, for whoever reads the failure
            with open(log_path, errors="replace") as f:
                said = [line for line in f.read().splitlines() if "snapshot" in line or "disk" in line]
            print("the server's snapshot and disk lines, last 30:\n" + "\n".join(said[-30:]), flush=True)
        zk.stop()
        zk.close()
        proc.send_signal(signal.SIGTERM)
        c.equal(proc.wait(timeout=15), 0, "the server stops cleanly")
        proc = None
        check = subprocess.run([BIN, "check", data_dir], capture_output=True, text=True)
        c.equal(check.returncode, 0, f"the log is sound after the full disk: {check.stdout.strip()} {check.stderr.strip()}")
        proc, hosts = start(data_dir, log_path)
        zk = KazooClient(hosts=hosts)
        zk.start(timeout=10)
        present = {"/" + n for n in zk.get_children("/")}
        missing = [p for p in acked if p not in present]
        c.check(not missing, f"every acknowledged write survived a restart (missing {missing[:3]})")
        c.equal(len(present), len(acked) + 2, "and no failed write appeared")
        zk.stop()
        zk.close()
    except BaseException:
        # Whatever went wrong, the server's side of it (a failure seen once in a parallel run,
        # not reproduced since, would have needed this).
        if os.path.exists(log_path):
            print("server log (last 3000 bytes):\n" + open(log_path, errors="replace").read()[-3000:], flush=True)
        raise
    finally:
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=15)
        subprocess.run(["umount", mnt])
        shutil.rmtree(mnt, ignore_errors=True)
        shutil.rmtree(log_dir, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
