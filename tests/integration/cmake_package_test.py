"""The client library as another project uses it: `cmake --install` of this build into a fresh
prefix, then the README's C++ example built by a project of its own with find_package(Warden)
and Warden::client, and run against a Warden server. The example is taken from the README
itself, so the README cannot drift from what builds."""
import os
import re
import subprocess
import tempfile

import support

c = support.Checks("cmake_package")
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.path.dirname(os.path.dirname(os.environ["WARDEN_SERVER"]))
version = re.search(r"^CMAKE_PROJECT_VERSION:STATIC=(.*)$", open(os.path.join(BUILD, "CMakeCache.txt")).read(), re.M).group(1)
major_minor = ".".join(version.split(".")[:2])

readme = open(os.path.join(ROOT, "README.md")).read()
section = readme[readme.index("## The C++ client library"):]
m = re.search(r"```cpp\n(.*?)```", section, re.S)
c.check(m is not None, "the README has the C++ example")
work = tempfile.mkdtemp(prefix="warden-package-")
prefix = os.path.join(work, "prefix")
r = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], capture_output=True, text=True, timeout=300)
c.equal(r.returncode, 0, f"cmake --install works: {r.stderr[-2000:]}")
c.check(os.path.exists(os.path.join(prefix, "lib", "cmake", "Warden", "WardenConfig.cmake")), "it installs the package")
for part in (("bin", "warden-server"), ("bin", "warden"), ("share", "warden", "zoo.cfg")):
    c.check(os.path.exists(os.path.join(prefix, *part)), f"it installs {'/'.join(part)}")
c.check("/etc/warden" not in r.stdout and "systemd" not in r.stdout,
        "the Debian package's own files (/etc, the unit) stay out of a plain install")
app = os.path.join(work, "app")
os.makedirs(app)
with open(os.path.join(app, "main.cpp"), "w") as f:
    f.write(m.group(1))
with open(os.path.join(app, "CMakeLists.txt"), "w") as f:
    f.write("cmake_minimum_required(VERSION 3.20)\nproject(app CXX)\nset(CMAKE_CXX_STANDARD 20)\n"
            f"find_package(Warden {major_minor} REQUIRED)\nmessage(STATUS \"Warden_VERSION=${{Warden_VERSION}}\")\n"
            "add_executable(app main.cpp)\ntarget_link_libraries(app Warden::client)\n")
r = subprocess.run(["cmake", "-S", app, "-B", os.path.join(app, "build"), "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}"],
                   capture_output=True, text=True, timeout=300)
c.equal(r.returncode, 0, f"find_package(Warden {major_minor}) configures: {r.stdout[-1500:]}{r.stderr[-1500:]}")
c.check(f"Warden_VERSION={version}\n" in r.stdout, f"the package's version is the project's, {version}: {r.stdout[-600:]}")
# A version it is not: refused by the package's version file, naming what it has.
other = os.path.join(work, "other")
os.makedirs(other)
with open(os.path.join(other, "CMakeLists.txt"), "w") as f:
    f.write("cmake_minimum_required(VERSION 3.20)\nproject(other CXX)\nfind_package(Warden 9.0 REQUIRED)\n")
r = subprocess.run(["cmake", "-S", other, "-B", os.path.join(other, "build"), "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}"],
                   capture_output=True, text=True, timeout=300)
c.check(r.returncode != 0 and version in r.stderr, f"find_package(Warden 9.0) is refused, naming {version}: {r.stderr[-800:]}")
r = subprocess.run(["cmake", "--build", os.path.join(app, "build")], capture_output=True, text=True, timeout=600)
c.equal(r.returncode, 0, f"the README example builds against Warden::client: {r.stdout[-3000:]}")
with support.start_warden() as w:
    r = subprocess.run([os.path.join(app, "build", "app"), w.hosts], capture_output=True, text=True, timeout=60)
    c.equal(r.returncode, 0, f"the example runs: {r.stderr}")
    c.check("config: v=2" in r.stdout, f"it writes and reads ({r.stdout!r})")
    c.check(re.search(r"holding the lock with fencing token \d+", r.stdout) is not None, "it takes the lock")
c.finish()
