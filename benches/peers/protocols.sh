#!/usr/bin/env bash
# HTTP/2 and TLS against the reference clients, same connections and streams, interleaved
# rounds, one client thread each:
#   h2c     h2load -c 4 -m 8 against vload --http2 -c 4 --streams 8, on vload-origin (h2c)
#   h2 TLS  the same on nginx (TLS 1.3, ALPN h2)
#   h1 TLS  wrk -c 50 against vload -c 50 on nginx (TLS 1.3, keep-alive)
#   handshakes  wrk -c 50 -H 'Connection: close' against vload --requests-per-connection 1,
#           a new TLS connection for every request
# Prints req/s, client CPU µs per request (user+sys from /usr/bin/time) and peak RSS.
#   bash benches/peers/protocols.sh [ROUNDS] [SECONDS]     defaults: 3 rounds, 5 s
#   VLOAD=PATH runs that vload binary (another build, to compare two) instead of this tree's.
set -euo pipefail
rounds=${1:-3}; secs=${2:-5}
source "$(dirname "$0")/lib.sh"
for tool in wrk h2load nginx openssl /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install -y wrk nghttp2-client nginx-light openssl time)" >&2; exit 2; }
done
cargo build --release -q -p vload -p vload-origin --manifest-path "$top/Cargo.toml"
host_info
[[ -z ${VLOAD:-} ]] || echo "vload binary: $VLOAD"
start_origin 18111
start_nginx_tls 18112
h2c=http://127.0.0.1:18111/ tls=https://127.0.0.1:18112/
vload=("${VLOAD:-$top/target/release/vload}" attack -t 1 -d "${secs}s" --no-progress -o "$tmp/run.json")

# measure CASE TOOL COMMAND...: appends "case tool req_per_s requests cpu_s rss_kb".
measure() {
    local case=$1 tool=$2; shift 2
    /usr/bin/time -f "%U %S %M" -o "$tmp/time" "$@" > "$tmp/out" 2>&1 || true
    local reqs=0 rps=0 u s m
    case $tool in
        h2load) reqs=$(awk '/^requests:/ {print $8}' "$tmp/out"); rps=$(awk '/^finished in/ {print $4}' "$tmp/out") ;;
        wrk) reqs=$(awk '/requests in/ {print $1}' "$tmp/out"); rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/out") ;;
        vload) read -r reqs rps < <(python3 -c "
import json; r=json.load(open('$tmp/run.json')); w=r['window']; n=r['totals']['completed'] - sum(e['count'] for e in r['totals']['errors'].values())
print(n, n/(w['measured_s']+w['wait_s']))") ;;
    esac
    # /usr/bin/time puts "Command exited with non-zero status" above the figures.
    read -r u s m < <(tail -1 "$tmp/time")
    [[ $(head -1 "$tmp/time") = Command* ]] && { echo "$case $tool: $(head -1 "$tmp/time"):" >&2; tail -3 "$tmp/out" >&2; }
    echo "$case $tool ${rps:-0} ${reqs:-0} $(python3 -c "print($u+$s)") $m" >> "$tmp/results"
}

: > "$tmp/results"
for _ in $(seq "$rounds"); do
    measure "h2c-4x8" h2load h2load -t1 -c4 -m8 -D"$secs" "$h2c"
    measure "h2c-4x8" vload "${vload[@]}" --http2 -c 4 --streams 8 "$h2c"
    measure "h2-tls-4x8" h2load h2load -t1 -c4 -m8 -D"$secs" "$tls"
    measure "h2-tls-4x8" vload "${vload[@]}" --http2 -c 4 --streams 8 --cacert "$tmp/cert.pem" "$tls"
    measure "h1-tls-50" wrk wrk -t1 -c50 -d"${secs}s" "$tls"
    measure "h1-tls-50" vload "${vload[@]}" -c 50 --cacert "$tmp/cert.pem" "$tls"
    measure "handshakes-50" wrk wrk -t1 -c50 -d"${secs}s" -H 'Connection: close' "$tls"
    measure "handshakes-50" vload "${vload[@]}" -c 50 --requests-per-connection 1 --cacert "$tmp/cert.pem" "$tls"
done
echo "$rounds rounds of $secs s, interleaved; one client thread each"
python3 - "$tmp/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    case, tool, rps, reqs, cpu, rss = line.split()
    rows.setdefault(case, {}).setdefault(tool, []).append((float(rps), int(float(reqs)), float(cpu), int(rss)))
med = statistics.median
print("| case | peer | peer req/s | vload req/s | vload/peer | peer CPU µs/req | vload CPU µs/req | CPU vload/peer | peer RSS MB | vload RSS MB |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for case, tools in rows.items():
    peer = next(t for t in tools if t != "vload")
    def stats(rs):
        return (med([r[0] for r in rs]),
                med([r[2] * 1e6 / r[1] for r in rs if r[1] > 0] or [float("nan")]),
                max(r[3] for r in rs) / 1024)
    (pr, pc, pm), (vr, vc, vm) = stats(tools[peer]), stats(tools["vload"])
    print(f"| {case} | {peer} | {pr:,.0f} | {vr:,.0f} | {vr / pr:.2f}x | {pc:.2f} | {vc:.2f} | {vc / pc:.2f}x | {pm:.1f} | {vm:.1f} |")
PY
