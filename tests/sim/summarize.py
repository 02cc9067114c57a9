"""Sums the outputs of many warden-sim --seeds runs (one file each, named VOTERS-OBSERVERS-FIRST.txt,
OBSERVERS with an "r" for runs with two spare servers and reconfigs, --spares 2 --reconfig, and a
"w" for runs with stores wiped or damaged, --wipes, or a "d" for runs with every disk fault,
--disk-faults)
per ensemble and in all, and lists every failing seed with the command that replays it. Exits 1
when a seed failed or a run printed no summary (it crashed)."""
import collections
import pathlib
import re
import sys

SUMMARY = re.compile(
    r"^(\d+) seeds \(.*\) in (\d+) s \(.*\): (\d+) steps, (\d+) txns committed, (\d+) writes acknowledged, "
    r"(\d+) leaders established; faults: (\d+) crashes, (\d+) partitions, (\d+) network changes, "
    r"(\d+) disk changes(?:, (\d+) disks wiped)?(?:, (\d+) stores damaged)?"
    r"(?:, (\d+) writes failed, (\d+) writes torn, (\d+) synced writes lost, (\d+) opens with failed reads)?; (\d+) calm stretches checked, the longest wait for a commit in one (\d+) ms"
    r"(?:; (\d+) servers upgraded)?$", re.M)
FIELDS = ["seeds", "seconds", "steps", "committed", "acked", "leaders", "crashes", "partitions",
          "network", "disks", "wipes", "damaged", "failed_writes", "torn", "lost_writes", "failed_reads", "calm",
          "longest_ms", "upgrades"]
FAULTS = ["crashes", "partitions", "network", "disks", "wipes", "damaged", "failed_writes", "torn", "lost_writes",
          "failed_reads"]


def main(folder):
    totals = collections.defaultdict(lambda: collections.Counter())
    failures, broken = [], []
    for f in sorted(pathlib.Path(folder).glob("*.txt")):
        voters, observers, _ = f.stem.split("-")
        text = f.read_text(errors="replace")
        for seed, why in re.findall(r"^seed (\d+) FAILED: (.*)$", text, re.M):
            failures.append((voters, observers, seed, why))
        m = SUMMARY.search(text)
        if not m:
            broken.append((f.name, text[-500:]))
            continue
        t = totals[(voters, observers)]
        for name, value in zip(FIELDS, m.groups()):
            value = int(value or 0)
            t[name] = max(t[name], value) if name == "longest_ms" else t[name] + value
    for voters, observers, seed, why in failures:
        shape = (f"--observers {observers.rstrip('rwdm')}" + (" --spares 2 --reconfig" if "r" in observers else "") +
                 (" --wipes" if "w" in observers else "") + (" --disk-faults" if "d" in observers else "") +
                 (" --mixed-versions" if "m" in observers else ""))
        print(f"FAILED seed {seed} ({voters} voters, {observers} observers): {why}\n"
              f"  replay: build/tests/sim/warden-sim --seed {seed} --voters {voters} {shape} --verbose")
    for name, tail in broken:
        print(f"run {name} printed no summary (a crash?):\n{tail}")
    grand = collections.Counter()
    for (voters, observers), t in sorted(totals.items()):
        rate = t["seeds"] / t["seconds"] if t["seconds"] else 0
        print(f"{voters} voters, {observers} observers: {t['seeds']} seeds, {rate:.1f} seeds/s per process; "
              f"{t['steps']} steps, {t['committed']} txns committed, {t['acked']} writes acknowledged, "
              f"{t['leaders']} leaders established; {t['crashes']} crashes, {t['partitions']} partitions, "
              f"{t['network']} network changes, {t['disks']} disk changes, {t['wipes']} disks wiped, {t['damaged']} stores damaged, "
              f"{t['failed_writes']} writes failed, {t['torn']} writes torn, {t['lost_writes']} synced writes lost, "
              f"{t['failed_reads']} opens with failed reads; "
              f"{t['calm']} calm stretches, "
              f"longest wait for a commit {t['longest_ms']} ms" +
              (f"; {t['upgrades']} servers upgraded" if t["upgrades"] else ""))
        for name in FIELDS:
            grand[name] = max(grand[name], t[name]) if name == "longest_ms" else grand[name] + t[name]
    print(f"all: {grand['seeds']} seeds, {len(failures)} failed; {grand['leaders']} leaders established, "
          f"{grand['committed']} txns committed, {sum(grand[k] for k in FAULTS)} "
          f"faults, {grand['calm']} calm stretches (longest wait {grand['longest_ms']} ms)")
    print(f"{grand['seeds'] - len(failures)} passed, {len(failures)} failed")
    return 1 if failures or broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
