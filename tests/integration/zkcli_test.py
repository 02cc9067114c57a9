"""zkCli.sh from Debian's zookeeper package runs one script against Warden and against Apache
ZooKeeper 3.8; the outputs must be the same once zxids, times, session ids and ports are
normalised. Watch notifications print from another thread, so they are compared as a set.
IPv6 ip ACLs are left out: ZooKeeper 3.8 refuses them as invalid, Warden accepts them (as 3.9
does; rules_test.cpp covers them)."""
import re
import sys

import support

SCRIPT = """\
create /t1 data1
create -e /t1/eph e
create -s /t1/seq- s
create -s -e /t1/eseq- es
create -c /cont
create /cont/child c
create -t 100000 /ttl t
create /t1 again
create /missing/child x
get -s /t1
get -w /t1
set /t1 data2
set -v 5 /t1 data3
set -v 1 /t1 data3
stat /t1
stat /nowhere
ls /t1
ls -R /t1
ls -s /t1
ls -w /t1
create /t1/later l
delete -v 9 /t1/seq-0000000001
delete /t1/seq-0000000001
delete /t1
delete /nowhere
getAcl /t1
addauth digest alice:secret
create /secure sec auth:alice:secret:cdrwa
getAcl /secure
setAcl /t1 world:anyone:r
getAcl /t1
set /t1 nope
setAcl /secure digest:alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=:cdrwa,world:anyone:r
getAcl /secure
setAcl -v 7 /secure world:anyone:cdrwa
sync /t1
get /ttl
deleteall /cont
ls /
ls -R /
get /nonexistent
create /bad/ x
create /w w
create -e /w/e1 x
create -e /w/e2 x
create /w/plain p
getEphemerals
getEphemerals /w
getEphemerals /nothing
getAllChildrenNumber /w
getAllChildrenNumber /
getAllChildrenNumber /nowhere
addWatch /w
addWatch -m PERSISTENT_RECURSIVE /w/plain
set /w w2
create /w/k k
set /w/plain p2
create /w/plain/deep d
removewatches /w -c
create /w/k2 k
removewatches /w
removewatches /w
removewatches /w/plain -a
set /w/plain p3
get -w /w/k
removewatches /w/k -d
set /w/k k2
whoami
addauth digest bob:pw
whoami
config
setAcl /w ip:127.0.0.1:cdrwa,ip:10.0.0.0/8:r
getAcl /w
get /w
setAcl /w ip:10.0.0.0/8:cdrwa
get /w
getAcl /w
quit
"""

# Quotas, with enforceQuota=true on both servers: soft limits are only logged, hard ones refuse.
QUOTA_SCRIPT = """\
create /q q
create /q/a 1
setquota -n 3 /q
listquota /q
create /q/b 2
create /q/c 3
listquota /q
set /q/a 12345
listquota /q
delquota -n /q
listquota /q
create /hard h
setquota -N 2 /hard
create /hard/x x
create /hard/y y
listquota /hard
setquota -B 10 /hard
set /hard 0123456789abc
set /hard 0123
listquota /hard
delquota /hard
listquota /hard
create /hard/y y
setquota -n 1 /q/a
setquota -n 1 /
setquota -n 1 /nothing
get /zookeeper/quota/q/zookeeper_limits
get /zookeeper/quota/q/zookeeper_stats
ls -R /zookeeper/quota
quit
"""

NOISE = ("SLF4J:", "JLine support", "Welcome to ZooKeeper", "Connecting to")


def normalise(out):
    hexes = {}

    def hex_token(m):
        return "0x<" + str(hexes.setdefault(m.group(0), len(hexes))) + ">"

    lines, events = [], []
    raw = [l for l in out.splitlines() if l.strip() and not l.startswith(NOISE)]
    for l in raw:
        if l.startswith("WATCHER::"):
            continue
        if l.startswith("WatchedEvent state:Closed"):
            # The client's own close (ZooKeeper 3.6+ queues it in close()): printed or not as its
            # event thread wins or loses the race with zkCli's exit, whichever the server.
            continue
        if l.startswith("WatchedEvent"):
            events.append(l)
            continue
        l = re.sub(r"127\.0\.0\.1:\d+", "<host>", l)
        l = re.sub(r"(ctime|mtime) = .*", r"\1 = <time>", l)
        l = re.sub(r"0x[0-9a-f]+", hex_token, l)
        if l.startswith("[") and l.endswith("]"):  # getEphemerals lists a hash set: order unspecified
            l = "[" + ", ".join(sorted(x for x in l[1:-1].split(", ") if x)) + "]"
        lines.append(l)
    # whoami lists the session's auth ids from a hash set (ZooKeeper's ServerCnxn.authInfo):
    # their order is unspecified, so each list is compared sorted.
    i = 0
    while i < len(lines):
        if lines[i] == "Auth scheme: User":
            j = i + 1
            while j < len(lines) and re.match(r"^(ip|digest|super|world): ", lines[j]):
                j += 1
            lines[i + 1:j] = sorted(lines[i + 1:j])
            i = j
        else:
            i += 1
    return lines, sorted(events)


def compare(checks, name, script, zk_cfg, warden_cfg):
    with support.start_zookeeper(extra_cfg=zk_cfg) as zk:
        want_lines, want_events = normalise(support.run_zkcli(zk.hosts, script))
    with support.start_warden(warden_cfg) as w:
        got_lines, got_events = normalise(support.run_zkcli(w.hosts, script))
        checks.check(w.alive(), f"{name}: warden-server still running after the script")
        log = w.log()
    checks.check(len(want_lines) > 20, f"{name}: ZooKeeper's transcript is substantial ({len(want_lines)} lines)")
    for i in range(max(len(want_lines), len(got_lines))):
        want = want_lines[i] if i < len(want_lines) else "<end>"
        got = got_lines[i] if i < len(got_lines) else "<end>"
        checks.equal(got, want, f"{name}: line {i + 1}")
        if got != want:
            print("--- ZooKeeper 3.8 ---\n" + "\n".join(want_lines))
            print("--- Warden ---\n" + "\n".join(got_lines))
            break
    checks.equal(got_events, want_events, f"{name}: watch notifications")
    return log


def main():
    checks = support.Checks("zkcli")
    compare(checks, "main", SCRIPT, "", "extendedTypesEnabled=true\n")
    log = compare(checks, "quotas", QUOTA_SCRIPT, "enforceQuota=true\n", "enforceQuota=true\n")
    checks.check("Quota exceeded: /q [current count=4, softCountLimit=3]" in log, "a soft quota is logged")
    checks.finish()


if __name__ == "__main__":
    main()
