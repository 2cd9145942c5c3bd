#!/usr/bin/env bash
# Whether the whole test suite passes on a loaded machine: a fresh clone of HEAD, stress-ng
# beside it, the README's test command run N times in a row, and for each run its exit code,
# its seconds, the failing tests and the load average seen while it ran (sampled every 30 s).
# No test may assert the machine's speed; this is how that rule is checked.
#
# Usage: benches/verdicts/loaded-suite.sh [RUNS] [STRESS ARGS]
#        (default 2 runs beside `stress-ng --cpu 8 --io 4`, which holds a 2-core machine's
#        load average at 10 or more; `--cpu 4 --io 2` reached 10 only a third of the time)
# CARGO_TARGET_DIR may name a build directory to reuse (the clone's own otherwise).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-2}
stress=${2:---cpu 8 --io 4}
command -v stress-ng >/dev/null || { echo "needs stress-ng (apt-get install -y stress-ng)" >&2; exit 2; }

work=$(mktemp -d /tmp/vload-loaded-XXXXXX)
git clone -q "$top" "$work/vload"
cd "$work/vload"
echo "commit $(git rev-parse --short HEAD), $(nproc) cores, stress-ng $stress"
cargo test --workspace --no-run -q 2>/dev/null

# shellcheck disable=SC2086
stress-ng $stress --timeout 3h >/dev/null 2>&1 &
stress_pid=$!
(while sleep 30; do cut -d' ' -f1 /proc/loadavg; done) >"$work/load" &
load_pid=$!
trap 'kill "$stress_pid" "$load_pid" 2>/dev/null || true' EXIT
sleep 60 # let the load average climb before the first run

failed=0
for i in $(seq "$runs"); do
    : >"$work/load"
    start=$(date +%s)
    rc=0
    cargo test --workspace --no-fail-fast >"$work/run-$i.log" 2>&1 || rc=$?
    secs=$(($(date +%s) - start))
    loads=$(tr -d '\0' <"$work/load" | { grep . || true; } | sort -n | sed -n '1p;$p' | paste -sd' ')
    echo "run $i: exit $rc, ${secs} s, load average min/max ${loads:-n/a}"
    grep -E '^test .* FAILED$|^    [a-z_:]+$' "$work/run-$i.log" | sort -u | sed 's/^/  /' || true
    [[ $rc -eq 0 ]] || failed=$((failed + 1))
done
echo "$failed of $runs runs failed; logs in $work"
[[ $failed -eq 0 ]]
