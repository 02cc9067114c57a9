"""A seed replays exactly: two runs of warden-sim --seed S --verbose print the same trace, step
for step, and another seed prints another."""
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
    print(f"replay_exact: {sum(ok)} passed, {len(ok) - sum(ok)} failed")
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
