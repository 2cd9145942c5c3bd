#!/usr/bin/env bash
# How often a run's self-checks are wrong, against origins whose truth is known by
# construction. The test suite runs each scenario two or three times and tolerates one miss;
# the error rates themselves are measured here, N runs of each.
#
#   poisson    -r 2000 --arrival poisson, seeds 1..N: the gaps are exponential by
#              construction, so a failed `arrivals` check (p <= 0.01) is a false alarm
#              unless the run names the machine or vload as paused (then it is right)
#   constant   -c 10 -d 6s against an origin with a constant 2 ms delay: a failed
#              `stationarity:p50` or `stationarity:throughput` is a false alarm
#   slowing    -c 10 -d 6s against an origin whose delay ramps 1 ms -> 20 ms over the run:
#              a passed `stationarity:p50` is a miss
#
# Usage: benches/verdicts/selfcheck.sh [RUNS]   (default 10)
set -euo pipefail
source "$(dirname "$0")/../peers/lib.sh"
runs=${1:-10}
cargo build --release -q -p vload -p vload-origin --manifest-path "$top/Cargo.toml"
vload="$top/target/release/vload"

start_origin 18811 --threads 1
start_origin 18812 --threads 1 --delay 2ms

verdicts() { # RUN_FILE CHECK...: each check's verdict, and whether the run names a pause
    python3 - "$@" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("no-run-file"); sys.exit()
checks = {c["name"]: c["verdict"] for c in r["checks"]}
paused = r["client_health"]["verdict"] in ("machine_busy", "client_bound")
print(*[checks.get(n, "absent") for n in sys.argv[2:]], "paused" if paused else "-")
PY
}

host_info
declare -A count
for run in $(seq "$runs"); do
    out="$tmp/poisson-$run.json"
    "$vload" attack -r 2000 --arrival poisson --seed "$run" -d 5s -t 1 --no-progress -o "$out" \
        http://127.0.0.1:18811/ > /dev/null 2>&1 || true
    read -r arrivals paused <<<"$(verdicts "$out" arrivals)"
    echo "run $run poisson: arrivals $arrivals ($paused)"
    [[ $arrivals == fail && $paused == - ]] && count[poisson]=$(( ${count[poisson]:-0} + 1 ))

    out="$tmp/constant-$run.json"
    "$vload" attack -c 10 -d 6s -t 1 --no-progress -o "$out" http://127.0.0.1:18812/ > /dev/null 2>&1 || true
    read -r p50 tput _ <<<"$(verdicts "$out" stationarity:p50 stationarity:throughput)"
    echo "run $run constant: stationarity p50 $p50, throughput $tput"
    [[ $p50 == fail || $tput == fail ]] && count[constant]=$(( ${count[constant]:-0} + 1 ))

    # A fresh origin each run: the ramp counts from its first request.
    port=$((18820 + run))
    start_origin "$port" --threads 1 --delay 1ms..20ms --delay-over 6s
    out="$tmp/slowing-$run.json"
    "$vload" attack -c 10 -d 6s -t 1 --no-progress -o "$out" "http://127.0.0.1:$port/" > /dev/null 2>&1 || true
    read -r p50 _ <<<"$(verdicts "$out" stationarity:p50)"
    echo "run $run slowing: stationarity p50 $p50"
    [[ $p50 != fail ]] && count[slowing]=$(( ${count[slowing]:-0} + 1 ))
done
echo
echo "poisson   false alarms (arrivals failed, no pause named): ${count[poisson]:-0} of $runs"
echo "constant  false alarms (stationarity failed):             ${count[constant]:-0} of $runs"
echo "slowing   misses (stationarity:p50 not failed):           ${count[slowing]:-0} of $runs"
