#!/usr/bin/env bash
# How close `vload sweep --find-max` lands to the truth, against servers whose capacity at
# the SLO is known analytically: vload's origin with N slots of service time D on a virtual
# clock (--concurrency N --delay D, constant or exponential), so its capacity is exactly
# N / D (benches/verdicts/truth.py computes the capacity at the SLO; for exponential
# service under Poisson arrivals, M/M/N's closed form). Per shape it prints the truth, the
# sweep's bracket [met, missed) and how far the answer lies below the truth. The answer
# must never lie above the truth, and should lie within 5% below it.
#
# A p99 near its limit cannot be told from one just above it in a short step (an M/M/N queue
# near saturation holds its tail for seconds: 10-second steps put the answer at the truth
# about a third of the time even with the 95% within-run bound), so the exponential shapes
# run steps of STAGE_EXP.
#
# The answer is confirmed by running it again held three times its stage (#58: eight-second
# steps could not see a queue growing slowly at 99% use). SHAPES picks shapes by their
# number in the list below (from 1), e.g. SHAPES="2 6".
#
# Usage: benches/verdicts/sweep.sh [ROUNDS] [STAGE] [STAGE_EXP]   (defaults 1, 10s, 30s)
set -euo pipefail
source "$(dirname "$0")/../peers/lib.sh"
rounds=${1:-1}
stage=${2:-10s}
stage_exp=${3:-30s}
cargo build --release -q -p vload -p vload-origin --manifest-path "$top/Cargo.toml"
vload="$top/target/release/vload"
port=18600

# slots, service ms, service kind, arrival, p99 limit ms
shapes=(
    "1 4 constant constant 30"
    "6 4 constant constant 30"
    "4 1 constant constant 10"
    "32 10 constant constant 60"
    "1 10 exponential poisson 100"
    "8 5 exponential poisson 30"
)

host_info
echo "sweep: --stage $stage ($stage_exp for exponential service) --warmup 2s --find-max --slo 'p99<LIMIT,errors<1%', $rounds round(s) a shape"
printf '%-34s %10s %26s %9s %s\n' "shape" "truth/s" "bracket [met, missed)" "error" "verdict"
if [[ -n ${SHAPES:-} ]]; then
    picked=()
    for n in $SHAPES; do picked+=("${shapes[$((n - 1))]}"); done
    shapes=("${picked[@]}")
fi
above=0
for round in $(seq "$rounds"); do
    for shape in "${shapes[@]}"; do
        read -r slots ms kind arrival limit <<<"$shape"
        port=$((port + 1))
        start_origin "$port" --threads 1 --concurrency "$slots" --delay "${ms}ms" \
            --service "$kind" --seed "$round"
        truth=$(python3 "$top/benches/verdicts/truth.py" "$slots" "$ms" "$kind" "$limit")
        # Steps from half the truth to 30% above it, none at the truth itself; bisection does
        # the rest.
        rates=$(python3 -c "t=$truth; print(','.join(str(round(t*f)) for f in (0.5,0.8,0.9,1.1,1.3)))")
        step=$stage
        [[ $kind == exponential ]] && step=$stage_exp
        out="$tmp/sweep-$round-$port.json"
        "$vload" sweep "http://127.0.0.1:$port/" --rates "$rates" --stage "$step" \
            --warmup 2s --slo "p99<${limit}ms,errors<1%" --find-max --arrival "$arrival" \
            --no-progress -o "$out" >/dev/null 2>"$tmp/err-$port" || true
        kill "${pids[-1]}" 2>/dev/null || true
        python3 - "$out" "$truth" "$slots x ${ms} ms $kind, $arrival" <<'PY'
import json, sys
path, truth, name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
try:
    v = json.load(open(path))["sweep"]["verdict"]
except Exception as e:
    print(f"{name:<34} {truth:>10.1f} {'(no answer: ' + str(e) + ')':>26}")
    sys.exit(0)
met, missed = v.get("max_rate_per_s"), v.get("first_failing_per_s")
bracket = f"[{met or 0:,.0f}, {missed:,.0f})" if missed else f">= {met or 0:,.0f}"
error = (met - truth) / truth * 100 if met else float("nan")
word = "ABOVE TRUTH" if met and met > truth else ("ok" if met and met >= 0.95 * truth else "low")
print(f"{name:<34} {truth:>10.1f} {bracket:>26} {error:>+8.1f}% {word} ({v['stopped_by']})")
PY
    done
done
