#!/usr/bin/env bash
# Runs the fuzz target for a bounded time over a copy of the corpus (so that what it learns
# does not land in the repository): run_fuzz.sh FUZZER CORPUS_DIR [libFuzzer options...]
# FUZZ_SECONDS (default 60) bounds the run. Exits non-zero on any finding.
set -euo pipefail
fuzzer=$1
corpus=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$corpus"/* "$work"/
mkdir -p "$work/artifacts"
# Leaks inside libraries (tests/lsan.supp says which, and why) are not findings.
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")/.." && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
set +e
"$fuzzer" -max_total_time="${FUZZ_SECONDS:-60}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$@" "$work" 2>&1 | tail -n 40
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  for f in "$work"/artifacts/*; do
    [ -e "$f" ] && { echo "finding: $f"; od -A x -t x1z "$f" | head -n 20; }
  done
fi
exit "$status"
