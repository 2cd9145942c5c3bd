#!/usr/bin/env bash
# HTTP/2 over TLS with the server and the client on cores of their own, to see what each
# client costs the server (#36, item 3): nginx (one worker, TLS 1.3, h2) pinned to CPU 0,
# h2load -c 4 -m 8 and vload --http2 -c 4 --streams 8 pinned to CPU 1, interleaved rounds.
# Per client: req/s, its own CPU a request, how often it slept (voluntary context switches
# per 1,000 requests), and nginx's worker's CPU a request over the same run. A client that
# sleeps must be woken by the server's write, and on loopback that wake-up is the server's
# CPU.
#   bash benches/peers/wakeups.sh [ROUNDS] [SECONDS]     defaults: 3 rounds, 5 s
set -euo pipefail
rounds=${1:-3}; secs=${2:-5}
source "$(dirname "$0")/lib.sh"
for tool in h2load nginx openssl taskset /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install -y nghttp2-client nginx openssl util-linux time)" >&2; exit 2; }
done
[[ $(nproc) -ge 2 ]] || { echo "needs two CPUs (one for the server, one for the client)" >&2; exit 2; }
cargo build --release -q -p vload --manifest-path "$top/Cargo.toml"
host_info
start_nginx_tls 18115
master=${pids[-1]}
worker=$({ cat "/proc/$master/task/$master/children" 2>/dev/null || pgrep -P "$master"; } | awk '{print $1; exit}')
[[ -n $worker ]] || { echo "wakeups.sh: found no nginx worker under PID $master" >&2; exit 1; }
taskset -pc 0 "$master" >/dev/null; taskset -pc 0 "$worker" >/dev/null
url=https://127.0.0.1:18115/
ticks() { awk '{print $14 + $15}' "/proc/$worker/stat"; }
: > "$tmp/results"
for round in $(seq "$rounds"); do
    t0=$(ticks)
    /usr/bin/time -f "%U %S %w" -o "$tmp/time" taskset -c 1 \
        h2load -t1 -c4 -m8 -D"$secs" "$url" > "$tmp/out" 2>&1 || true
    n=$(awk '/^requests:/ {print $8}' "$tmp/out")
    echo "h2load $round ${n:-0} $(cat "$tmp/time") $(( $(ticks) - t0 ))" >> "$tmp/results"
    rm -f "$tmp/run.json"
    t0=$(ticks)
    /usr/bin/time -f "%U %S %w" -o "$tmp/time" taskset -c 1 "$top/target/release/vload" attack \
        -t 1 --http2 -c 4 --streams 8 -d "${secs}s" --insecure --no-progress -o "$tmp/run.json" "$url" \
        > /dev/null 2>&1 || true
    [[ -s $tmp/run.json ]] || { echo "wakeups.sh: vload wrote no run file" >&2; exit 1; }
    n=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['totals']['completed'])" "$tmp/run.json")
    echo "vload $round $n $(cat "$tmp/time") $(( $(ticks) - t0 ))" >> "$tmp/results"
done
python3 - "$tmp/results" "$secs" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
secs, hz = float(sys.argv[2]), float(sys.argv[3])
rows = {}
for line in open(sys.argv[1]):
    tool, _, n, u, s, woke, server = line.split()
    n = max(int(n), 1)
    rows.setdefault(tool, []).append((n / secs, (float(u) + float(s)) * 1e6 / n,
                                      int(woke) * 1000 / n, int(server) / hz * 1e6 / n))
med = statistics.median
print("| client | req/s | x h2load | client CPU µs/req | client sleeps / 1,000 req | server CPU µs/req | x h2load |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
h = rows["h2load"]
hr, hs = med(x[0] for x in h), med(x[3] for x in h)
for tool in ("h2load", "vload"):
    xs = rows[tool]
    r, c, w, sv = (med(x[k] for x in xs) for k in range(4))
    print(f"| {tool} | {r:,.0f} | {r / hr:.2f}x | {c:.2f} | {w:.1f} | {sv:.2f} | {sv / hs:.2f}x |")
PY
