"""Curator (Debian's libcurator-recipes-java) on Warden: InterProcessMutex contended by three JVM
processes with mutual exclusion checked through a file only a holder may create, the lock of a
holder killed with SIGKILL passing on once its session expires, and a CuratorCache (built by
Curator 5 on a persistent recursive watch) seeing every change below its root."""
import os
import subprocess
import tempfile
import time

import support

JARS = ["curator-client.jar", "curator-framework.jar", "curator-recipes.jar", "zookeeper.jar",
        "zookeeper-jute.jar", "guava.jar", "slf4j-api.jar", "slf4j-nop.jar"]
HERE = os.path.dirname(os.path.abspath(__file__))


def compile_contender(out_dir):
    cp = support.java_classpath(*JARS)
    subprocess.run(["javac", "-d", out_dir, "-cp", cp, os.path.join(HERE, "java", "LockContender.java"),
                    os.path.join(HERE, "java", "CacheWatcher.java"),
                    os.path.join(HERE, "java", "RecipeContender.java")], check=True, timeout=300)
    return out_dir + ":" + cp


def java(cp, *args):
    return subprocess.Popen(["java", "-Xmx128m", "-cp", cp, "LockContender", *args], stdout=subprocess.PIPE,
                            text=True)


def main():
    c = support.Checks("curator")
    classes = tempfile.mkdtemp(prefix="curator-classes-")
    cp = compile_contender(classes)
    with support.start_warden() as w:
        marker = os.path.join(classes, "holder.marker")
        procs = [java(cp, w.hosts, "/locks/shared", "20", marker) for _ in range(3)]
        for p in procs:
            out, _ = p.communicate(timeout=300)
            c.equal(out.strip().splitlines()[-1] if out.strip() else "", "DONE 20 VIOLATIONS 0",
                    "a contender finished all rounds with no second holder")

        holder = java(cp, w.hosts, "/locks/killed", "hold")
        try:
            c.equal(holder.stdout.readline().strip(), "HOLDING", "the first process holds the lock")
            waiter = java(cp, w.hosts, "/locks/killed", "wait")
            c.equal(waiter.stdout.readline().strip(), "WAITING", "the second process waits")
            time.sleep(1)
            c.check(waiter.poll() is None, "the waiter does not get the lock while the holder lives")
            holder.kill()  # SIGKILL: no clean close, the session must expire
            holder.wait()
            out, _ = waiter.communicate(timeout=90)
            line = out.strip().splitlines()[-1] if out.strip() else ""
            c.check(line.startswith("ACQUIRED"), f"the lock passes on after the session expires: {line!r}")
            if line.startswith("ACQUIRED"):
                waited = int(line.split()[1])
                c.check(waited >= 3000, f"not before the 4 s session expired (waited {waited} ms)")
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()
        cache = subprocess.run(["java", "-Xmx128m", "-cp", cp, "CacheWatcher", w.hosts, "/cached"],
                               capture_output=True, text=True, timeout=120)
        c.equal(cache.stdout.strip().splitlines(),
                ["CREATED /cached/a 1", "CHANGED /cached/a 2", "CREATED /cached/a/b 3", "CHANGED /cached/a/b 4",
                 "DELETED /cached/a/b", "DELETED /cached/a", "CACHED 1", "DONE"],
                "CuratorCache sees every change below its root through one persistent recursive watch")
        c.check(w.alive(), "the server is still running")
    c.finish()


if __name__ == "__main__":
    main()
