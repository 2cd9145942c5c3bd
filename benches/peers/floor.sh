#!/usr/bin/env bash
# The floor a client can reach on this host, beside wrk and vload, closed loop on nginx (one
# worker, 11-byte body), one client thread each, interleaved rounds. floor/floor.c is the
# least a client can do a request (send a fixed request, find the response's end, time it),
# once over epoll and once over io_uring (a send linked to its recv, completions reaped in
# batches): what is left is the kernel's cost of a request on loopback, which no client cuts.
# "server busy" is nginx's worker's CPU time over the time the client measured its requests
# in (nginx is idle outside it): near 1.00 the server, not the client, bounds req/s, and no
# client can get much more out of it.
#   bash benches/peers/floor.sh [CONNECTIONS] [SECONDS] [ROUNDS]
#   defaults: "10 50 1000", 4 s, 3 rounds (median). Needs gcc and liburing
#   (apt-get install -y gcc liburing-dev), wrk and nginx.
set -euo pipefail
levels=${1:-10 50 1000}; secs=${2:-4}; rounds=${3:-3}
source "$(dirname "$0")/lib.sh"
for tool in wrk nginx gcc /usr/bin/time; do command -v $tool >/dev/null || { echo "needs $tool (see run.sh)" >&2; exit 2; }; done
[[ -e /usr/include/liburing.h ]] || { echo "needs liburing (apt-get install -y liburing-dev)" >&2; exit 2; }
gcc -O2 -Wall -o "$tmp/floor" "$top/benches/peers/floor/floor.c" -luring
cargo build --release -q -p vload --manifest-path "$top/Cargo.toml"
host_info
echo "floor: $(gcc --version | head -1), liburing $(dpkg-query -W -f '${Version}' liburing-dev 2>/dev/null || echo '?')"
port=18095
start_nginx "$port"
url="http://127.0.0.1:$port/"
# nginx's one worker, the master's only child: its CPU ticks are read around each round.
master=${pids[-1]}
worker=$({ cat "/proc/$master/task/$master/children" 2>/dev/null || pgrep -P "$master"; } | awk '{print $1; exit}')
[[ -n $worker ]] || { echo "floor.sh: found no nginx worker under PID $master" >&2; exit 1; }
ticks() { awk '{print $14 + $15}' "/proc/$worker/stat"; }
: > "$tmp/results"
# Runs a round's command, noting nginx's CPU nanoseconds during it in $tmp/busy.
busy() {
    local c0 status=0
    c0=$(ticks)
    "$@" || status=$?
    echo "$(( ($(ticks) - c0) * 1000000000 / $(getconf CLK_TCK) ))" > "$tmp/busy"
    return $status
}
# record TOOL CONNECTIONS REQUESTS SECONDS [USER SYSTEM]: one row, CPU from $tmp/time unless
# given, nginx's share from $tmp/busy.
record() {
    [[ -n ${3:-} && -n ${4:-} ]] || { echo "floor.sh: $1 at $2 connections gave no result" >&2; exit 1; }
    local u=${5:-} s=${6:-}
    [[ -n $u ]] || read -r u s < "$tmp/time"
    echo "$1 $2 $3 $4 $u $s $(cat "$tmp/busy")" >> "$tmp/results"
}
for c in $levels; do
  for _ in $(seq "$rounds"); do
    busy /usr/bin/time -f "%U %S" -o "$tmp/time" wrk -t1 -c"$c" -d"${secs}s" "$url" > "$tmp/out" 2>&1 || true
    # wrk's "N requests in 4.00s": the requests and the time they took.
    record wrk "$c" $(awk '/requests in/ {sub(/s,$/, "", $4); print $1, $4}' "$tmp/out")
    busy vload_round "$top/target/release/vload" "$c" "$secs" "$url" > "$tmp/out"
    read -r n took u s _ < "$tmp/out"
    record vload "$c" "$n" "$took" "$u" "$s"
    for mode in epoll uring; do
      busy /usr/bin/time -f "%U %S" -o "$tmp/time" "$tmp/floor" "$mode" "$port" "$c" "$secs" > "$tmp/out"
      read -r n took _ < "$tmp/out"
      record "floor-$mode" "$c" "$n" "$took"
    done
  done
done
python3 - "$tmp/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tool, c, n, took, u, s, server = line.split()
    n = int(float(n))
    rows.setdefault((int(c), tool), []).append(
        (n / float(took), (float(u) + float(s)) * 1e6 / max(n, 1), float(u) * 1e6 / max(n, 1),
         int(server) / 1e9 / float(took)))
print("| connections | client | req/s | x wrk | CPU µs/req | x wrk | of it user µs/req | server busy |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for c in sorted({c for c, _ in rows}):
    w = rows[(c, "wrk")]
    wr, wc = statistics.median(r[0] for r in w), statistics.median(r[1] for r in w)
    for tool in ("wrk", "vload", "floor-epoll", "floor-uring"):
        rs = rows[(c, tool)]
        r, cpu, user, server = (statistics.median(x[k] for x in rs) for k in range(4))
        print(f"| {c:,} | {tool} | {r:,.0f} | {r / wr:.2f}x | {cpu:.2f} | {cpu / wc:.2f}x | {user:.2f} | {server:.2f} |")
# The goal's figure: vload's CPU per request over the epoll floor's in the same round, the
# median and the spread of the rounds, with user and system time per request of each.
print()
print("| connections | vload / floor-epoll CPU, median [min, max] | vload user, system µs/req | floor user, system µs/req |")
print("| ---: | ---: | ---: | ---: |")
for c in sorted({c for c, _ in rows}):
    v, f = rows[(c, "vload")], rows[(c, "floor-epoll")]
    ratios = [a[1] / b[1] for a, b in zip(v, f)]
    med = lambda xs: statistics.median(xs)
    vu, fu = med(x[2] for x in v), med(x[2] for x in f)
    vs, fs = med(x[1] - x[2] for x in v), med(x[1] - x[2] for x in f)
    print(f"| {c:,} | {med(ratios):.2f}x [{min(ratios):.2f}, {max(ratios):.2f}] | {vu:.2f}, {vs:.2f} | {fu:.2f}, {fs:.2f} |")
PY
