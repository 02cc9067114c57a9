"""A planted bug must be caught: warden-sim with --plant BUG reports a failing seed (exit 1, a
'seed N FAILED: ...' line) within the given number of seeds. A crash or a clean pass fails.
Arguments: SIM BUG SEEDS VOTERS [more warden-sim options, e.g. --spares 2 --reconfig]."""
import re
import subprocess
import sys


def main():
    sim, plant, seeds, voters, more = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
    r = subprocess.run([sim, "--seeds", seeds, "--voters", voters, "--plant", plant, "--stop"] + more,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    failing = re.findall(r"^seed (\d+) FAILED: (.*)$", r.stdout, re.M)
    caught = r.returncode == 1 and bool(failing)
    if caught:
        print(f"plant {plant} caught at seed {failing[0][0]}: {failing[0][1]}")
    else:
        print(f"plant {plant} NOT caught within {seeds} seeds (exit {r.returncode}):\n{r.stdout[-2000:]}")
    print(f"plant_{plant}: {1 if caught else 0} passed, {0 if caught else 1} failed")
    sys.exit(0 if caught else 1)


if __name__ == "__main__":
    main()
