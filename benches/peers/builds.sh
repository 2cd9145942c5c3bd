#!/usr/bin/env bash
# Two vload builds against each other, before and after a change: closed loop on nginx (one
# worker, 11-byte body), one client thread, interleaved rounds (A, B, floor, A, B, floor, ...),
# CPU a request from /usr/bin/time. Prints each build's medians and B / A per round (median
# and spread), and each build over the epoll floor client of the same round.
#   bash benches/peers/builds.sh A_BINARY B_BINARY [CONNECTIONS] [SECONDS] [ROUNDS]
#   defaults: "10 50 1000", 4 s, 5 rounds. Needs wrk's peers' setup: nginx, gcc, liburing-dev.
#   VLOAD_ARGS adds attack flags to both builds' runs, e.g. VLOAD_ARGS='--catalogue 100000
#   --object-size 1' for a catalogue workload (nginx answers every path).
# A build of another commit: git worktree add /tmp/a COMMIT && cargo build --release
# --manifest-path /tmp/a/Cargo.toml -p vload (the binary is /tmp/a/target/release/vload).
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: builds.sh A_BINARY B_BINARY [CONNECTIONS] [SECONDS] [ROUNDS]" >&2; exit 2; }
a=$(realpath "$1"); b=$(realpath "$2")
levels=${3:-10 50 1000}; secs=${4:-4}; rounds=${5:-5}
source "$(dirname "$0")/lib.sh"
for tool in nginx gcc /usr/bin/time; do command -v $tool >/dev/null || { echo "needs $tool (see run.sh)" >&2; exit 2; }; done
gcc -O2 -Wall -o "$tmp/floor" "$top/benches/peers/floor/floor.c" -luring
host_info
echo "A: $a ($("$a" --version)), B: $b ($("$b" --version))"
port=18096
start_nginx "$port"
url="http://127.0.0.1:$port/"
: > "$tmp/results"
for c in $levels; do
  for round in $(seq "$rounds"); do
    for which in A B; do
      bin=$a; [[ $which == B ]] && bin=$b
      vload_round "$bin" "$c" "$secs" "$url" > "$tmp/out"
      read -r n took u s _ < "$tmp/out"
      echo "$which $c $round $n $took $u $s" >> "$tmp/results"
    done
    /usr/bin/time -f "%U %S" -o "$tmp/time" "$tmp/floor" epoll "$port" "$c" "$secs" > "$tmp/out"
    read -r n took _ < "$tmp/out"
    echo "floor $c $round $n $took $(cat "$tmp/time")" >> "$tmp/results"
  done
done
python3 - "$tmp/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    who, c, r, n, took, u, s = line.split()
    n = max(int(float(n)), 1)
    runs[(who, int(c), int(r))] = (n / float(took), (float(u) + float(s)) * 1e6 / n, float(u) * 1e6 / n)
med = statistics.median
print("| connections | build | req/s | CPU µs/req | user µs/req | / floor CPU, median [min, max] |")
print("| ---: | --- | ---: | ---: | ---: | ---: |")
levels = sorted({c for _, c, _ in runs})
rounds = sorted({r for _, _, r in runs})
for c in levels:
    for who in ("A", "B", "floor"):
        xs = [runs[(who, c, r)] for r in rounds]
        ratios = [runs[(who, c, r)][1] / runs[("floor", c, r)][1] for r in rounds]
        print(f"| {c:,} | {who} | {med(x[0] for x in xs):,.0f} | {med(x[1] for x in xs):.2f} | "
              f"{med(x[2] for x in xs):.2f} | {med(ratios):.3f}x [{min(ratios):.3f}, {max(ratios):.3f}] |")
print()
print("| connections | B / A CPU a request, median [min, max] of the rounds |")
print("| ---: | ---: |")
for c in levels:
    ratios = [runs[("B", c, r)][1] / runs[("A", c, r)][1] for r in rounds]
    print(f"| {c:,} | {med(ratios):.3f}x [{min(ratios):.3f}, {max(ratios):.3f}] |")
PY
