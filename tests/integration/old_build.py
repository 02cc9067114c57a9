"""An earlier Warden build's server, built from this project's own history, for the upgrade test
(it_rolling_upgrade) and for a person rolling by hand (scripts/rolling-upgrade).

The commit comes from WARDEN_UPGRADE_FROM, else UPGRADE_FROM below: the oldest build the
current one must replace one member at a time (docs/operations.md, "Upgrades"). Its sources are
taken with `git archive` into the build directory, configured without tests, and only
warden-server is built, unoptimised (the test needs its protocol, not its speed): about two
minutes from nothing on two cores, seconds again from the compiler cache (scripts/lib.sh's
ccache settings, whose base directory holds the copy). A shallow clone fetches its history
first (`git fetch --unshallow`). WARDEN_OLD_SERVER names a server binary to use instead.
"""
import os
import shutil
import subprocess

# f1c90d0: main when issue 48 began, warden-server 0.1.0, peer protocol 2, data format 3.
UPGRADE_FROM = "f1c90d0"

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def upgrade_from():
    return os.environ.get("WARDEN_UPGRADE_FROM") or UPGRADE_FROM


def server(build_dir, log=print):
    """The path of the earlier build's warden-server, built under `build_dir` when missing.
    Raises RuntimeError, saying what to do, when it cannot be had."""
    given = os.environ.get("WARDEN_OLD_SERVER")
    if given:
        if not os.access(given, os.X_OK):
            raise RuntimeError(f"WARDEN_OLD_SERVER={given} is not an executable")
        return given
    commit = upgrade_from()

    def find():
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
                              capture_output=True, text=True)

    r = find()
    shallow = subprocess.run(["git", "-C", ROOT, "rev-parse", "--is-shallow-repository"], capture_output=True,
                             text=True).stdout.strip() == "true"
    if r.returncode != 0 and shallow:  # a shallow clone: its history is one fetch away
        log(f"{commit} is not in this shallow clone: fetching its history")
        subprocess.run(["git", "-C", ROOT, "fetch", "--quiet", "--unshallow"], stdin=subprocess.DEVNULL,
                       timeout=600)
        r = find()
    if r.returncode != 0:
        raise RuntimeError(f"commit {commit} is not in this clone's history (a shallow clone?): "
                           f"`git fetch --unshallow`, or set WARDEN_OLD_SERVER to a server of that build")
    full = r.stdout.strip()
    where = os.path.join(build_dir, f"upgrade-from-{full[:12]}")
    binary = os.path.join(where, "build", "server", "warden-server")
    if os.access(binary, os.X_OK):
        return binary
    src = os.path.join(where, "src")
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(src)
    archive = subprocess.Popen(["git", "-C", ROOT, "archive", full], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", src], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise RuntimeError(f"git archive {full} failed")
    env = dict(os.environ, CCACHE_BASEDIR=src, CCACHE_NOHASHDIR="1",
               CCACHE_DIR=os.environ.get("CCACHE_DIR", os.path.expanduser("~/.cache/ccache")))
    log(f"building warden-server at {commit} in {where} (unoptimised, its server only)")
    out = os.path.join(where, "build.log")
    with open(out, "w") as f:
        for cmd in (["cmake", "-S", src, "-B", os.path.join(where, "build"), "-G", "Ninja",
                     "-DCMAKE_BUILD_TYPE=Debug", "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g0", "-DWARDEN_TESTS=OFF"],
                    ["ninja", "-C", os.path.join(where, "build"), "warden-server"]):
            if subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env).returncode != 0:
                with open(out) as g:
                    raise RuntimeError(f"building {commit} failed ({' '.join(cmd[:2])}):\n{g.read()[-3000:]}")
    return binary
