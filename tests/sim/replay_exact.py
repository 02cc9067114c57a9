"""A seed replays exactly: two runs of warden-sim --seed S --verbose print the same trace, step
for step, and another seed prints another. Bad arguments print the usage and exit 2."""
import subprocess
import sys


def trace(sim, seed, voters):
    r = subprocess.run([sim, "--seed", str(seed), "--voters", voters, "--verbose"], stdout=subprocess.PIPE,
                       text=True, timeout=600)
    return r.returncode, r.stdout


def main():
    sim, voters = sys.argv[1], sys.argv[2]
    a, b, other = trace(sim, 4242, voters), trace(sim, 4242, voters), trace(sim, 4243, voters)
    lines = a[1].count("\n")
    ok = [a == b, a[1] != other[1], lines > 1000]
    print(f"seed 4242 ({voters} voters): {lines} trace lines; identical on replay: {ok[0]}; "
          f"another seed differs: {ok[1]}")
    for bad in (["--voters", "4", "--seeds", "1"], ["--seeds", "x"], ["--plant", "nosuch", "--seed", "1"],
                ["--seed", "1", "--seeds", "2"], ["--verbose", "--seeds", "2"], ["--bogus"], []):
        r = subprocess.run([sim, *bad], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        good = r.returncode == 2 and "usage:" in r.stderr
        if not good:
            print(f"bad arguments {bad}: exit {r.returncode}, stderr {r.stderr.strip()!r}")
        ok.append(good)
    print(f"replay_exact: {sum(ok)} passed, {len(ok) - sum(ok)} failed")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
