#!/usr/bin/env bash
# Open loop against vegeta and oha -q (when installed): all asked for the same constant rate on the same target (nginx,
# one worker, 11-byte body). Prints what each achieved: the rate it actually sent at, its
# latency p50/p99, and for vload the dispatch lag p99 and late sends (how far behind its own
# schedule it fell). vegeta reports no schedule lag; its achieved "rate" falling short of the
# asked rate, or its latency exploding, is how it shows it cannot keep up. Then vload's
# closed loop at 1, 2 and 3 connections: the same work at a comparable throughput.
#   bash benches/peers/open-loop.sh [RATES] [SECONDS] [MAX_CONNECTIONS]
#   defaults: "50000 100000 150000", 10 s, 1000
set -euo pipefail
rates=${1:-50000 100000 150000}; secs=${2:-10}; maxc=${3:-1000}
source "$(dirname "$0")/lib.sh"
export PATH="$PATH:$HOME/go/bin"
for tool in vegeta nginx; do command -v $tool >/dev/null || { echo "needs $tool (see run.sh)" >&2; exit 2; }; done
cargo build --release -q -p vload --manifest-path "$top/Cargo.toml"
host_info
port=18099
start_nginx "$port"
url="http://127.0.0.1:$port/"
echo "| tool | asked req/s | sent req/s | p50 | p99 | dispatch lag p99 | late sends (>1 ms) | client CPU µs/request |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for rate in $rates; do
    echo "GET $url" | GOMAXPROCS=1 /usr/bin/time -f "%U %S" -o "$tmp/time" vegeta attack -rate="$rate" \
        -duration="${secs}s" -max-workers="$maxc" > "$tmp/v.bin" 2>/dev/null || true
    vegeta report -type=json "$tmp/v.bin" > "$tmp/v.json"
    read -r user sys < "$tmp/time"
    python3 - "$tmp/v.json" "$rate" "$user" "$sys" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); l = d["latencies"]
cpu = (float(sys.argv[3]) + float(sys.argv[4])) * 1e6 / max(d["requests"], 1)
print(f"| vegeta | {int(sys.argv[2]):,} | {d['rate']:,.0f} | {l['50th']/1e3:,.0f} µs | {l['99th']/1e3:,.0f} µs | n/a | n/a | {cpu:.2f} |")
PY
    if command -v oha >/dev/null; then
        # oha's open loop: -q RATE with --latency-correction (latency from the intended send).
        /usr/bin/time -f "%U %S" -o "$tmp/time" oha --no-tui --output-format json --worker-threads 1 \
            -q "$rate" --latency-correction -c "$maxc" -z "${secs}s" "$url" > "$tmp/o.json" 2>/dev/null || true
        read -r user sys < <(tail -1 "$tmp/time")
        python3 - "$tmp/o.json" "$rate" "$user" "$sys" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); s = d["summary"]; l = d["latencyPercentiles"]
n = sum(d.get("statusCodeDistribution", {}).values())
cpu = (float(sys.argv[3]) + float(sys.argv[4])) * 1e6 / max(n, 1)
us = lambda v: "n/a" if v is None else f"{v * 1e6:,.0f} µs"
print(f"| oha -q | {int(sys.argv[2]):,} | {s['requestsPerSec']:,.0f} | {us(l.get('p50'))} | {us(l.get('p99'))} | n/a | n/a | {cpu:.2f} |")
PY
    fi
    /usr/bin/time -f "%U %S" -o "$tmp/time" "$top/target/release/vload" attack -t 1 -r "$rate" -d "${secs}s" \
        --max-connections "$maxc" --no-progress -o "$tmp/run.json" "$url" > /dev/null 2>&1 || true
    read -r user sys < "$tmp/time"
    "$top/target/release/vload" report --format json "$tmp/run.json" > "$tmp/rep.json"
    python3 - "$tmp/rep.json" "$rate" "$user" "$sys" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["report"]
q = r["latency"]
lag = r["health"].get("dispatch_lag_p99_ns")
sent = r["rate_per_s"]
cpu = (float(sys.argv[3]) + float(sys.argv[4])) * 1e6 / max(r["requests"], 1)
fmt = lambda ns: "n/a" if ns is None else f"{ns/1e3:,.0f} µs"
print(f"| vload | {int(sys.argv[2]):,} | {sent:,.0f} | {fmt(q.get('p50_ns'))} | {fmt(q.get('p99_ns'))} | {fmt(lag)} | {r['late_sends']:,} | {cpu:.2f} |")
PY
done
# The closed loop at a comparable throughput, the reference of "open-loop CPU per request
# within 1.3x of the closed loop": its throughput is what one, two, three connections get
# (it has no rate to set), so the rows bracket the asked rates rather than match them.
echo
echo "| vload closed loop | connections | sent req/s | p50 | client CPU µs/request |"
echo "| --- | ---: | ---: | ---: | ---: |"
for c in 1 2 3; do
    /usr/bin/time -f "%U %S" -o "$tmp/time" "$top/target/release/vload" attack -t 1 -c "$c" -d "${secs}s" \
        --no-progress -o "$tmp/run.json" "$url" > /dev/null 2>&1 || true
    read -r user sys < "$tmp/time"
    "$top/target/release/vload" report --format json "$tmp/run.json" > "$tmp/rep.json"
    python3 - "$tmp/rep.json" "$c" "$user" "$sys" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["report"]
cpu = (float(sys.argv[3]) + float(sys.argv[4])) * 1e6 / max(r["requests"], 1)
p50 = r["latency"].get("p50_ns")
print(f"| vload -c {sys.argv[2]} | {sys.argv[2]} | {r['rate_per_s']:,.0f} | {'n/a' if p50 is None else f'{p50/1e3:,.0f} µs'} | {cpu:.2f} |")
PY
done
