#!/usr/bin/env bash
# Where vload's CPU a request above the epoll floor's goes (#36): the floor client made like
# vload's epoll loop one difference at a time (FLOOR_LIKE letters, see floor.c: n non-blocking
# calls, t the 1 ms probe timer, T every 4 ms, w epoll_pwait2 with a 10 ms timeout, W with 1 ms, h a second
# thread), all of vload's at once (ntwh), and vload itself; closed loop on nginx (one worker), interleaved rounds.
# Prints each variant's CPU, user and system µs a request and its ratio to the plain floor's
# in the same round (median and range).
#   bash benches/peers/floor-like.sh [CONNECTIONS] [SECONDS] [ROUNDS] [VARIANTS]
#   defaults: 50, 4 s, 5 rounds, "n t w W h ntwh"
set -euo pipefail
c=${1:-50}; secs=${2:-4}; rounds=${3:-5}; variants=${4:-n t w W h ntwh}
source "$(dirname "$0")/lib.sh"
for tool in nginx gcc /usr/bin/time; do command -v $tool >/dev/null || { echo "needs $tool (see run.sh)" >&2; exit 2; }; done
gcc -O2 -Wall -o "$tmp/floor" "$top/benches/peers/floor/floor.c" -luring
cargo build --release -q -p vload --manifest-path "$top/Cargo.toml"
host_info
port=18131
start_nginx "$port"
url="http://127.0.0.1:$port/"
: > "$tmp/results"
for round in $(seq "$rounds"); do
    for v in floor $variants vload; do
        if [[ $v == vload ]]; then
            vload_round "$top/target/release/vload" "$c" "$secs" "$url" > "$tmp/out"
            read -r n took u s _ < "$tmp/out"
        else
            like=$v; [[ $v == floor ]] && like=
            FLOOR_LIKE=$like /usr/bin/time -f "%U %S" -o "$tmp/time" "$tmp/floor" epoll "$port" "$c" "$secs" > "$tmp/out"
            read -r n took _ < "$tmp/out"
            read -r u s < "$tmp/time"
        fi
        echo "$v $round $n $u $s" >> "$tmp/results"
    done
done
python3 - "$tmp/results" "$c" "$variants" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    v, r, n, u, s = line.split()
    n = max(int(float(n)), 1)
    runs[(v, int(r))] = ((float(u) + float(s)) * 1e6 / n, float(u) * 1e6 / n, float(s) * 1e6 / n)
med = statistics.median
rounds = sorted({r for _, r in runs})
print(f"{sys.argv[2]} connections")
print("| client | CPU µs/req | user | system | / floor, median [min, max] |")
print("| --- | ---: | ---: | ---: | ---: |")
for v in ["floor"] + sys.argv[3].split() + ["vload"]:
    xs = [runs[(v, r)] for r in rounds]
    ratios = [runs[(v, r)][0] / runs[("floor", r)][0] for r in rounds]
    name = v if v in ("floor", "vload") else f"floor like {v}"
    print(f"| {name} | {med(x[0] for x in xs):.2f} | {med(x[1] for x in xs):.2f} | {med(x[2] for x in xs):.2f} | "
          f"{med(ratios):.3f}x [{min(ratios):.3f}, {max(ratios):.3f}] |")
PY
