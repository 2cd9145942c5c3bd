#!/usr/bin/env bash
# What a workload adds to vload's own work a request, counted rather than timed: user-space
# instructions a request (valgrind's callgrind, which counts instructions whatever else the
# machine does) and system calls a request (strace -c), for the plain URL, a 10,000-line
# target list, --catalogue 100000 and a mix of two lists, closed loop at 50 connections on
# nginx. Each count is a marginal one: the run of N2 requests less the run of N1, over
# N2 - N1, so that what a run does once (reading a list, preparing it, the cache model at the
# end) cancels out. The kernel's share of a request (its send, recv and wait) is the same
# for every workload when its system calls are; what differs is the user-space work counted
# here.
#   bash benches/peers/workload-cost.sh [N1] [N2] [VLOAD]     defaults: 20000 60000
# Needs valgrind, strace and nginx.
set -euo pipefail
n1=${1:-20000}; n2=${2:-60000}
source "$(dirname "$0")/lib.sh"
vload=${3:-$top/target/release/vload}
[[ -x $vload ]] || cargo build --release -q -p vload --manifest-path "$top/Cargo.toml"
for tool in valgrind strace nginx python3; do command -v $tool >/dev/null || { echo "needs $tool" >&2; exit 2; }; done
host_info
echo "vload: $vload ($("$vload" --version)); valgrind $(valgrind --version); N1 $n1, N2 $n2"
for i in $(seq 0 9999); do echo "/w/$i"; done > "$tmp/list.txt"
for i in $(seq 0 4999); do echo "/a/$i"; done > "$tmp/a.txt"
for i in $(seq 0 4999); do echo "/b/$i"; done > "$tmp/b.txt"
port=18099
start_nginx "$port"
url="http://127.0.0.1:$port/"
declare -A extra=(
  [plain]=""
  [list]="--urls $tmp/list.txt"
  [catalogue]="--catalogue 100000 --object-size 1"
  [mix]="--mix $tmp/a.txt:3,$tmp/b.txt:1"
)
: > "$tmp/counts"
for w in plain list catalogue mix; do
  for n in "$n1" "$n2"; do
    # shellcheck disable=SC2086
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$vload" attack -t 1 -c 50 -n "$n" \
        --no-progress ${extra[$w]} "$url" > "$tmp/cg" 2>&1
    instructions=$(awk '/Collected :/ {print $4}' "$tmp/cg" | tr -d ,)
    # shellcheck disable=SC2086
    strace -f -c -o "$tmp/st" "$vload" attack -t 1 -c 50 -n "$n" --no-progress ${extra[$w]} "$url" > /dev/null 2>&1
    calls=$(awk '$NF == "total" {print $(NF-2)}' "$tmp/st")
    echo "$w $n $instructions $calls" >> "$tmp/counts"
  done
done
python3 - "$tmp/counts" "$n1" "$n2" <<'PY'
import sys
counts = {}
for line in open(sys.argv[1]):
    w, n, i, c = line.split()
    counts[(w, int(n))] = (int(i), int(c))
n1, n2 = int(sys.argv[2]), int(sys.argv[3])
per = {w: tuple((counts[(w, n2)][k] - counts[(w, n1)][k]) / (n2 - n1) for k in (0, 1))
       for w in ("plain", "list", "catalogue", "mix")}
print("| workload | user-space instructions a request | over the plain URL's | system calls a request |")
print("| --- | ---: | ---: | ---: |")
for w, (i, c) in per.items():
    print(f"| {w} | {i:,.0f} | {i / per['plain'][0]:.3f}x (+{i - per['plain'][0]:,.0f}) | {c:.2f} |")
PY
