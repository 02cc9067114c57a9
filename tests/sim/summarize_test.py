"""scripts/simulate's summary (summarize.py) over real warden-sim output: counts the seeds and
passes a clean run; names a run that printed no summary and a failing seed, and fails then."""
import pathlib
import subprocess
import sys
import tempfile

sim = sys.argv[1]
here = pathlib.Path(__file__).parent
checks = []
with tempfile.TemporaryDirectory() as d:
    out = pathlib.Path(d)
    (out / "3-0-1.txt").write_text(subprocess.run([sim, "--seeds", "3", "--first", "1"], capture_output=True,
                                                  text=True, timeout=300).stdout)
    r = subprocess.run([sys.executable, str(here / "summarize.py"), d], capture_output=True, text=True)
    checks.append((r.returncode == 0 and "3 passed, 0 failed" in r.stdout, f"a clean run sums up:\n{r.stdout}"))
    (out / "5-1-9.txt").write_text("\x00garbage\nseed 12 FAILED: t=1ms step=2: planted\n")
    r = subprocess.run([sys.executable, str(here / "summarize.py"), d], capture_output=True, text=True)
    checks.append((r.returncode == 1 and "FAILED seed 12 (5 voters, 1 observers)" in r.stdout
                   and "--seed 12 --voters 5 --observers 1" in r.stdout and "5-1-9.txt printed no summary" in r.stdout,
                   f"a failing seed and a broken run are named:\n{r.stdout}"))
    (out / "3-0r-7.txt").write_text("seed 44 FAILED: t=1ms step=2: planted\n")
    r = subprocess.run([sys.executable, str(here / "summarize.py"), d], capture_output=True, text=True)
    checks.append((r.returncode == 1 and "--seed 44 --voters 3 --observers 0 --spares 2 --reconfig" in r.stdout,
                   f"a reconfig run's seed replays with its options:\n{r.stdout}"))
    (out / "3-0rw-8.txt").write_text("seed 45 FAILED: t=1ms step=2: planted\n")
    (out / "5-1w-2.txt").write_text(subprocess.run([sim, "--seeds", "2", "--first", "2", "--voters", "5", "--observers",
                                                    "1", "--wipes"], capture_output=True, text=True, timeout=300).stdout)
    r = subprocess.run([sys.executable, str(here / "summarize.py"), d], capture_output=True, text=True)
    checks.append((r.returncode == 1 and "--seed 45 --voters 3 --observers 0 --spares 2 --reconfig --wipes" in r.stdout
                   and "5 voters, 1w observers: 2 seeds" in r.stdout and "disks wiped" in r.stdout,
                   f"a run with wiped disks sums up, and its seed replays with --wipes:\n{r.stdout}"))
    (out / "3-0d-9.txt").write_text(subprocess.run([sim, "--seeds", "2", "--first", "9", "--disk-faults"],
                                                   capture_output=True, text=True, timeout=300).stdout)
    (out / "5-0d-3.txt").write_text("seed 46 FAILED: t=1ms step=2: planted\n")
    r = subprocess.run([sys.executable, str(here / "summarize.py"), d], capture_output=True, text=True)
    checks.append((r.returncode == 1 and "--seed 46 --voters 5 --observers 0 --disk-faults" in r.stdout
                   and "3 voters, 0d observers: 2 seeds" in r.stdout and "synced writes lost" in r.stdout,
                   f"a run with every disk fault sums up, and its seed replays with --disk-faults:\n{r.stdout}"))
for ok, what in checks:
    if not ok:
        print("FAILED:", what)
passed = sum(ok for ok, _ in checks)
print(f"summarize: {passed} passed, {len(checks) - passed} failed")
sys.exit(0 if passed == len(checks) else 1)
