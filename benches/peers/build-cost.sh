#!/usr/bin/env bash
# What one build of vload costs a request against another, counted rather than timed:
# user-space instructions a request (valgrind's callgrind) of the plain URL and of
# --catalogue 100000, closed loop at 50 connections on nginx, the builds interleaved round by
# round (old, new, old, new, ...). Each count is a marginal one, the run of N2 requests less
# the run of N1, over N2 - N1, so what a run does once cancels out; what is left still holds a
# run's per-second work (its collector, its timers), which moves with how long valgrind makes
# the run last: hence rounds, and the median of each build's, and their ratio.
#   bash benches/peers/build-cost.sh OLD_VLOAD NEW_VLOAD [ROUNDS] [N1] [N2]
#   defaults: 3 rounds, N1 10000, N2 30000. Needs valgrind and nginx.
set -euo pipefail
old=$1; new=$2; rounds=${3:-3}; n1=${4:-10000}; n2=${5:-30000}
source "$(dirname "$0")/lib.sh"
for tool in valgrind nginx python3; do command -v $tool >/dev/null || { echo "needs $tool" >&2; exit 2; }; done
host_info
echo "old: $old ($("$old" --version)); new: $new ($("$new" --version)); $rounds rounds, N1 $n1, N2 $n2"
port=18096
start_nginx "$port"
url="http://127.0.0.1:$port/"
declare -A extra=([plain]="" [catalogue]="--catalogue 100000 --object-size 1")
: > "$tmp/counts"
for round in $(seq "$rounds"); do
  for build in old new; do
    vload=${!build}
    for w in plain catalogue; do
      for n in "$n1" "$n2"; do
        # shellcheck disable=SC2086
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$vload" attack -t 1 -c 50 -n "$n" \
            --no-progress ${extra[$w]} "$url" > "$tmp/cg" 2>&1
        echo "$round $build $w $n $(awk '/Collected :/ {print $4}' "$tmp/cg" | tr -d ,)" >> "$tmp/counts"
      done
    done
  done
done
python3 - "$tmp/counts" "$n1" "$n2" <<'PY'
import statistics, sys
counts = {}
for line in open(sys.argv[1]):
    r, b, w, n, i = line.split()
    counts[(r, b, w, int(n))] = int(i)
n1, n2 = int(sys.argv[2]), int(sys.argv[3])
rounds = sorted({k[0] for k in counts})
print("| workload | round | old instructions a request | new | new / old |")
print("| --- | ---: | ---: | ---: | ---: |")
for w in ("plain", "catalogue"):
    ratios, olds, news = [], [], []
    for r in rounds:
        per = {b: (counts[(r, b, w, n2)] - counts[(r, b, w, n1)]) / (n2 - n1) for b in ("old", "new")}
        olds.append(per["old"]); news.append(per["new"]); ratios.append(per["new"] / per["old"])
        print(f"| {w} | {r} | {per['old']:,.0f} | {per['new']:,.0f} | {per['new'] / per['old']:.3f}x |")
    print(f"| {w} | median | {statistics.median(olds):,.0f} | {statistics.median(news):,.0f} | "
          f"{statistics.median(news) / statistics.median(olds):.3f}x [{min(ratios):.3f}, {max(ratios):.3f}] |")
PY
