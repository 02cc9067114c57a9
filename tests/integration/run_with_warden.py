"""Starts Warden, runs the given command with the server's HOST:PORT appended, stops Warden.
Fails when the command fails or the server died under it."""
import subprocess
import sys

import support

with support.start_warden() as w:
    rc = subprocess.run(sys.argv[1:] + [w.hosts], timeout=300).returncode
    if not w.alive():
        print("warden-server died during the test:\n" + w.log())
        rc = rc or 1
sys.exit(rc)
