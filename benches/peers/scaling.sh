#!/usr/bin/env bash
# Closed-loop scaling: req/s and client CPU µs per request against connections, vload and
# wrk, one client thread each, on nginx (one worker, 11-byte body) on 127.0.0.1.
#   bash benches/peers/scaling.sh [CONNECTIONS] [SECONDS] [ROUNDS]
#   defaults: "1 10 100 1000 10000", 5 s, 2 rounds (median)
set -euo pipefail
levels=${1:-1 10 100 1000 10000}; secs=${2:-5}; rounds=${3:-2}
source "$(dirname "$0")/lib.sh"
for tool in wrk nginx /usr/bin/time; do command -v $tool >/dev/null || { echo "needs $tool (see run.sh)" >&2; exit 2; }; done
cargo build --release -q -p vload --manifest-path "$top/Cargo.toml"
host_info
port=18098
start_nginx "$port"
url="http://127.0.0.1:$port/"
: > "$tmp/results"
for c in $levels; do
  for _ in $(seq "$rounds"); do
    /usr/bin/time -f "%U %S %M" -o "$tmp/time" wrk -t1 -c"$c" -d"${secs}s" "$url" > "$tmp/out" 2>&1 || true
    read -r u s m < "$tmp/time"
    echo "wrk $c $(awk '/Requests\/sec/ {print $2}' "$tmp/out") $(awk '/requests in/ {print $1}' "$tmp/out") $u $s $m" >> "$tmp/results"
    out=$(vload_round "$top/target/release/vload" "$c" "$secs" "$url")
    read -r n took u s m <<< "$out"
    echo "vload $c $(awk -v n="$n" -v t="$took" 'BEGIN {print n / t}') $n $u $s $m" >> "$tmp/results"
  done
done
python3 - "$tmp/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tool, c, rps, n, u, s, m = line.split()
    rows.setdefault((int(c), tool), []).append((float(rps), float(u) + float(s), int(float(n)), int(m)))
print("| connections | wrk req/s | vload req/s | vload/wrk | wrk CPU µs/req | vload CPU µs/req | wrk RSS MB | vload RSS MB |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for c in sorted({c for c, _ in rows}):
    w, v = rows[(c, "wrk")], rows[(c, "vload")]
    rps = lambda rs: statistics.median(r[0] for r in rs)
    cpu = lambda rs: statistics.median(r[1] * 1e6 / r[2] for r in rs if r[2])
    rss = lambda rs: max(r[3] for r in rs) / 1024
    print(f"| {c:,} | {rps(w):,.0f} | {rps(v):,.0f} | {rps(v)/rps(w):.2f}x | {cpu(w):.2f} | {cpu(v):.2f} | {rss(w):.1f} | {rss(v):.1f} |")
PY
