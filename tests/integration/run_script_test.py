"""scripts/run, the README's first command, as a new user meets it: on a machine where only
what scripts/run installs is present, it must build the server and serve.

CI cannot see this directly, since scripts/test installs everything first. So this test runs
scripts/run itself (its own build directory, a configuration on port 0) and then checks what
that build needed: every header the compiler read is traced to its Debian package, and none may
come from a package only the tests install (the ZooKeeper C client, Catch2, ...). The build
directory must hold no test target, and scripts/run's package list none of the test packages."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import support

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def lib_array(name):
    out = subprocess.run(["bash", "-c", f'source "{ROOT}/scripts/lib.sh"; echo "${{{name}[@]}}"'],
                         stdout=subprocess.PIPE, text=True, check=True)
    return out.stdout.split()


def packages_of(files):
    """Debian package of each file (dpkg -S), for the files some package owns."""
    owners = {}
    files = sorted(files)
    for i in range(0, len(files), 200):
        r = subprocess.run(["dpkg", "-S", *files[i:i + 200]], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
        for line in r.stdout.splitlines():
            pkgs, _, path = line.partition(": ")
            for p in pkgs.split(", "):
                owners.setdefault(path, set()).add(p.split(":")[0])
    return owners


def main():
    c = support.Checks("run_script")
    run_pkgs = set(lib_array("RUN_PACKAGES"))
    test_only = (set(lib_array("CLIENT_PACKAGES")) | set(lib_array("FUZZ_PACKAGES")) |
                 set(lib_array("BUILD_PACKAGES"))) - run_pkgs
    c.check("catch2" in test_only and "libzookeeper-mt-dev" in test_only, "the test packages are known")
    c.equal(sorted(run_pkgs & test_only), [], "scripts/run installs none of the test packages")

    work = tempfile.mkdtemp(prefix="run-script-")
    # A build directory beside build/, made afresh: ccache (CCACHE_BASEDIR, the checkout) then
    # finds what the plain build compiled, as it does for a second build on a user's machine.
    # Outside the checkout, the generated headers' absolute paths missed the cache and this test
    # compiled the server cold (376 s of CI's 2-core run).
    build = os.path.join(ROOT, "build-run-script")
    shutil.rmtree(build, ignore_errors=True)
    cfg = os.path.join(work, "zoo.cfg")
    with open(cfg, "w") as f:
        f.write(f"tickTime=2000\ndataDir={work}/data\nclientPort=0\nadmin.enableServer=false\nclientPortAddress=127.0.0.1\n")
    env = dict(os.environ, BUILD_DIR=build, CI="true", CCACHE_NOHASHDIR="1")
    log_path = os.path.join(work, "run.log")
    proc = subprocess.Popen([os.path.join(ROOT, "scripts", "run"), cfg], stdout=subprocess.PIPE,
                            stderr=open(log_path, "w"), stdin=subprocess.DEVNULL, env=env, text=True)
    try:
        port = None
        deadline = time.time() + 900
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            m = re.match(r"warden-server listening on 127\.0\.0\.1:(\d+)$", line.strip())
            if m:
                port = int(m.group(1))
                break
        c.check(port is not None, f"scripts/run built and started a server (log: {open(log_path).read()[-2000:]!r})")
        if port:
            c.check(support.handshake_ok(port), "the server scripts/run started serves sessions")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # scripts/run execs the server: this is its PID
            proc.wait(timeout=30)

    if os.path.isdir(build):
        ninja = open(os.path.join(build, "build.ninja")).read()
        c.check("c_client_test" not in ninja and "warden-unit-tests" not in ninja,
                "scripts/run's build is configured without the tests")
        cache = open(os.path.join(build, "CMakeCache.txt")).read()
        c.check("Catch2_DIR" not in cache, "scripts/run's configuration never looks for Catch2")
        deps = subprocess.run(["ninja", "-C", build, "-t", "deps"], stdout=subprocess.PIPE, text=True,
                              check=True).stdout
        headers = {l.strip() for l in deps.splitlines() if l.startswith("    /usr/")}
        c.check(len(headers) > 50, f"the build's header list was read ({len(headers)} system headers)")
        owners = packages_of(headers)
        offending = sorted({(p, h) for h, ps in owners.items() for p in ps if p in test_only})
        c.equal(offending[:5], [], "the server's build reads no header of a package only the tests install")
        sources = set(re.findall(r"^build \S+\.o: \S+ (\S+)", ninja, re.M))
        c.check(sources and all("/tests/" not in s for s in sources), "no test source is compiled by scripts/run")
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(build, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
