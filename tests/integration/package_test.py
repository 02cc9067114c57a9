"""The Debian package as an operator meets it: `cpack -G DEB` from this build makes
warden_<version>_<arch>.deb; `dpkg -i` installs /usr/bin/warden-server and /usr/bin/warden,
/etc/warden/zoo.cfg as a conffile and the systemd unit, and makes the `warden` system user and
/var/lib/warden; `systemd-analyze verify` accepts the unit; the unit's ExecStart, run as the
warden user on the package's configuration (its client port swapped for a free one, as a test
must), tells systemd it is ready (Type=notify, READY=1 on NOTIFY_SOCKET) and serves zkCli.sh;
`dpkg -r` keeps the configuration and the data, `dpkg -P` removes them. Needs root (scripts/test
runs as root in CI); the package is purged at the end whatever happened."""
import glob
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import support

c = support.Checks("package")
BUILD = os.path.dirname(os.path.dirname(os.environ["WARDEN_SERVER"]))
UNIT = "/lib/systemd/system/warden.service"


def run(*cmd, timeout=300, **kw):
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, **kw)


def installed():
    return run("dpkg-query", "-W", "-f=${Status}", "warden").stdout.strip()


def project_version():
    cache = open(os.path.join(BUILD, "CMakeCache.txt")).read()
    return re.search(r"^CMAKE_PROJECT_VERSION:STATIC=(.*)$", cache, re.M).group(1)


def serve_as_warden(work):
    """The unit's ExecStart as the warden user (setpriv, so the PID is the server's), with
    NOTIFY_SOCKET: whether it said READY=1, and what zkCli.sh saw."""
    exec_start = re.search(r"^ExecStart=(.*)$", open(UNIT).read(), re.M).group(1).split()
    cfg_in = exec_start[-1]
    port = support.free_port()
    cfg = os.path.join(work, "zoo.cfg")
    text = re.sub(r"(?m)^clientPort=.*$", f"clientPort={port}", open(cfg_in).read())
    text += f"admin.serverAddress=127.0.0.1\nadmin.serverPort={support.free_port()}\n"  # not the fixed 8080
    with open(cfg, "w") as f:
        f.write(text)
    os.chmod(work, 0o755)
    os.chmod(cfg, 0o644)
    notify_path = os.path.join(work, "notify.sock")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    os.chmod(notify_path, 0o777)
    notify.settimeout(30)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    proc = subprocess.Popen(["setpriv", "--reuid=warden", "--regid=warden", "--init-groups", "--",
                             *exec_start[:-1], cfg], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)
    out = {}
    try:
        try:
            out["notify"] = notify.recv(4096).decode()
        except OSError as e:
            out["notify"] = f"nothing ({e})"
        out["zkcli"] = support.run_zkcli(f"127.0.0.1:{port}", "create /pkg hi\nget /pkg\n")
        out["data owner"] = sorted({pwd.getpwuid(os.stat(p).st_uid).pw_name
                                    for p in glob.glob("/var/lib/warden/**", recursive=True)})
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            out["exit"] = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out["exit"] = proc.wait()
        out["log"] = proc.stdout.read()
        notify.close()
    return out


def main():
    if os.geteuid() != 0:
        c.check(False, "the package test installs a package: it must run as root (CI does)")
        c.finish()
    if installed().startswith("install ok"):
        c.check(False, "a warden package is installed already: this test installs and purges its own")
        c.finish()
    work = tempfile.mkdtemp(prefix="warden-deb-")
    try:
        r = run("cpack", "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B", work, timeout=600)
        debs = glob.glob(os.path.join(work, "warden_*.deb"))
        c.check(r.returncode == 0 and len(debs) == 1, f"cpack makes one package: {r.stdout[-1500:]}{r.stderr[-1500:]}")
        if not debs:
            c.finish()
        version = project_version()
        arch = run("dpkg", "--print-architecture").stdout.strip()
        c.equal(os.path.basename(debs[0]), f"warden_{version}_{arch}.deb", "named warden_<version>_<arch>.deb")
        r = run("dpkg", "-i", debs[0])
        c.equal(r.returncode, 0, f"dpkg -i installs it: {r.stderr[-1500:]}")
        c.equal(installed(), "install ok installed", "dpkg knows it as installed")
        for path in ("/usr/bin/warden-server", "/usr/bin/warden", "/etc/warden/zoo.cfg", UNIT):
            c.check(os.path.exists(path), f"it installs {path}")
        conffiles = run("dpkg-query", "-W", "-f=${Conffiles}", "warden").stdout
        c.check("/etc/warden/zoo.cfg" in conffiles, f"/etc/warden/zoo.cfg is a conffile: {conffiles!r}")
        c.check("dataDir=/var/lib/warden" in open("/etc/warden/zoo.cfg").read(), "its dataDir is /var/lib/warden")
        try:
            user = pwd.getpwnam("warden")
            c.check(user.pw_uid < 1000 and user.pw_dir == "/var/lib/warden", "a warden system user, at home in "
                    f"/var/lib/warden ({user.pw_uid}, {user.pw_dir})")
            c.equal(pwd.getpwuid(os.stat("/var/lib/warden").st_uid).pw_name, "warden", "/var/lib/warden is warden's")
        except KeyError:
            c.check(False, "the warden user exists")
        unit = open(UNIT).read()
        for line in ("Type=notify", "User=warden", "Restart=on-failure", "LimitNOFILE="):
            c.check(line in unit, f"the unit has {line}")
        r = run("systemd-analyze", "verify", UNIT)
        c.check(r.returncode == 0 and "warden.service" not in r.stderr, f"systemd-analyze verify: {r.stderr!r}")
        r = run("/usr/bin/warden-server", "--version")
        lines = r.stdout.splitlines()
        c.equal(lines[:1], [f"warden-server {version} (ZooKeeper 3.9 client protocol)"], "--version: the package's version")
        c.check(len(lines) == 3 and re.fullmatch(r"peer protocols \d+( to \d+)?", lines[1]) is not None and
                re.fullmatch(r"data format warden-log-\d+ \(reads warden-log-\d+ to warden-log-\d+\)", lines[2]) is not None,
                f"--version: the peer protocols and the data format: {lines}")
        served = serve_as_warden(work)
        c.check(served["notify"].startswith("READY=1"), f"it tells systemd it is ready: {served['notify']!r}")
        c.check("Created /pkg" in served["zkcli"] and "\nhi\n" in served["zkcli"],
                f"zkCli.sh creates and reads through it: {served['zkcli'][-800:]!r}")
        c.equal(served["data owner"], ["warden"], "what it writes in /var/lib/warden is warden's")
        c.equal(served["exit"], 0, f"SIGTERM stops it cleanly: {served['log'][-1500:]}")
        r = run("dpkg", "-r", "warden")
        c.equal(r.returncode, 0, f"dpkg -r removes it: {r.stderr[-800:]}")
        c.check(not os.path.exists("/usr/bin/warden-server"), "removed: the binaries are gone")
        c.check(os.path.exists("/etc/warden/zoo.cfg"), "removed: the configuration stays")
        c.check(any(os.scandir("/var/lib/warden")), "removed: the data stays")
        r = run("dpkg", "-P", "warden")
        c.equal(r.returncode, 0, f"dpkg -P purges it: {r.stderr[-800:]}")
        c.check(not os.path.exists("/etc/warden/zoo.cfg") and not os.path.exists("/var/lib/warden"),
                "purged: the configuration and the data are gone")
        c.equal(installed(), "", "dpkg has forgotten it")
    finally:
        if installed():
            run("dpkg", "-P", "warden")
        shutil.rmtree(work, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
