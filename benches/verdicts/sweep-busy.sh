#!/usr/bin/env bash
# How often a sweep on an ordinary 2-core VM answers, and rightly, against a server of known
# capacity (#45): vload's origin with 6 slots of 4 ms (1,500/s, benches/verdicts/truth.py),
# swept from 1,000/s, quiet and beside `stress-ng --cpu 4`. A MACHINE-BUSY step stops the
# sweep only when the lateness changed what was offered (requests unsent, or sends late by a
# quarter of the SLO's bound; a CLIENT-BOUND one always does); the table counts the sweeps that gave no answer, answered above the truth (wrong), or answered
# within 10% below it.
#
# Usage: benches/verdicts/sweep-busy.sh [RUNS]   (default 3 a condition)
set -euo pipefail
source "$(dirname "$0")/../peers/lib.sh"
runs=${1:-3}
cargo build --release -q -p vload -p vload-origin --manifest-path "$top/Cargo.toml"
vload="$top/target/release/vload"
command -v stress-ng >/dev/null || { echo "needs stress-ng (apt-get install -y stress-ng)" >&2; exit 2; }
port=18700
truth=$(python3 "$top/benches/verdicts/truth.py" 6 4 constant 30)
host_info
echo "sweep --rates 1000..1600/100 --stage 8s --warmup 1s --slo 'p99<30ms,errors<1%' --find-max; truth $truth/s"
printf '%-8s %4s %26s %9s %s\n' "machine" "run" "bracket [met, missed)" "error" "verdict (stopped by)"
declare -A tally
for condition in quiet loaded; do
    for run in $(seq "$runs"); do
        port=$((port + 1))
        start_origin "$port" --threads 1 --concurrency 6 --delay 4ms --service constant
        origin=${pids[-1]}
        stress=
        if [[ $condition == loaded ]]; then
            stress-ng --cpu 4 --timeout 300s >/dev/null 2>&1 & stress=$!; pids+=("$stress")
            sleep 2
        fi
        out="$tmp/busy-$condition-$run.json"
        "$vload" sweep "http://127.0.0.1:$port/" --rates 1000..1600/100 --stage 8s --warmup 1s \
            --slo 'p99<30ms,errors<1%' --find-max --no-progress -o "$out" >/dev/null 2>&1 || true
        kill "$origin" 2>/dev/null || true
        if [[ -n $stress ]]; then kill "$stress" 2>/dev/null || true; fi
        word=$(python3 - "$out" "$truth" "$condition" "$run" <<'PY'
import json, sys
path, truth, condition, run = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    v = json.load(open(path))["sweep"]["verdict"]
except Exception as e:
    print(f"{condition:<8} {run:>4} {'(no file)':>26}", file=sys.stderr); print("none"); sys.exit(0)
met, missed = v.get("max_rate_per_s"), v.get("first_failing_per_s")
bracket = f"[{met or 0:,.0f}, {missed:,.0f})" if missed else f">= {met or 0:,.0f}"
if not met:
    word = "none"
elif met > truth:
    word = "above"
elif met >= 0.9 * truth:
    word = "right"
else:
    word = "low"
error = (met - truth) / truth * 100 if met else float("nan")
print(f"{condition:<8} {run:>4} {bracket:>26} {error:>+8.1f}% {word} ({v['stopped_by']})", file=sys.stderr)
print(word)
PY
        )
        tally[$condition-$word]=$(( ${tally[$condition-$word]:-0} + 1 ))
    done
done
echo
printf '%-8s %6s %6s %6s %6s\n' machine right low above none
for condition in quiet loaded; do
    printf '%-8s %6s %6s %6s %6s\n' "$condition" "${tally[$condition-right]:-0}" \
        "${tally[$condition-low]:-0}" "${tally[$condition-above]:-0}" "${tally[$condition-none]:-0}"
done
