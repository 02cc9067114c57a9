"""scripts/faults and matrix.py refuse garbage with a message naming it, before any work."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
failed = 0


def refused(cmd, env, says):
    global failed
    r = subprocess.run(cmd, env=dict(os.environ, **env), capture_output=True, text=True, timeout=60)
    ok = r.returncode == 2 and says in r.stderr
    print(f"{'ok' if ok else 'FAILED'}: {' '.join(cmd)} {env}: exit {r.returncode}, {r.stderr.strip()!r}")
    failed += not ok


script = [os.path.join(ROOT, "scripts", "faults")]
refused(script, {"ROUNDS": "many"}, "ROUNDS must be a positive number, not 'many'")
refused(script, {"ROUNDS": "0"}, "ROUNDS must be a positive number, not '0'")
refused(script, {"SYSTEM": "etcd"}, "SYSTEM must be warden, zookeeper or both, not 'etcd'")
refused(script, {"SEED": "-3"}, "SEED must be a number, not '-3'")
matrix = ["/usr/bin/python3", os.path.join(ROOT, "tests", "faults", "matrix.py")]
refused(matrix + ["--rounds", "0"], {}, "--rounds must be at least 1, not 0")
refused(matrix + ["--rounds", "x"], {}, "invalid int value: 'x'")
refused(matrix + ["--system", "etcd"], {}, "invalid choice: 'etcd'")
refused(matrix + ["--damage", "melt wal@-10"], {}, "--damage takes 'KIND wal@-N'")
refused(matrix + ["--damage", "truncate wal@10"], {}, "not 'truncate wal@10'")
refused(matrix + ["--damage", "zero MANIFEST@-1"], {}, "--damage takes")
refused(matrix + ["--damage", "truncate wal@-0"], {}, "--damage takes")
refused(matrix + ["--damage", ""], {}, "--damage takes")
refused(matrix + ["--damage", "truncate wal@-8192", "--system", "both"], {}, "it takes --system warden")
sys.exit(1 if failed else 0)
