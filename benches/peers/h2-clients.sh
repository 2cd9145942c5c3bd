#!/usr/bin/env bash
# vload's two HTTP/2 clients against h2load, same connections and streams (4 x 8), one
# client thread each, interleaved rounds: h2c on vload-origin and TLS 1.3 on nginx. On h2c
# also the `h2` crate alone, without hyper (benches/examples/h2_direct.rs).
# Prints req/s and client CPU µs per request (user and system from /usr/bin/time).
#   bash benches/peers/h2-clients.sh [ROUNDS] [SECONDS]     defaults: 3 rounds, 4 s
set -euo pipefail
rounds=${1:-3}; secs=${2:-4}
source "$(dirname "$0")/lib.sh"
for tool in h2load nginx openssl /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install -y nghttp2-client nginx-light openssl time)" >&2; exit 2; }
done
cargo build --release -q -p vload -p vload-origin --manifest-path "$top/Cargo.toml"
cargo build --release -q -p vload-benches --example h2_direct --manifest-path "$top/Cargo.toml"
host_info
start_origin 18111
start_nginx_tls 18112
: > "$tmp/results"
# run CASE TOOL COMMAND...: appends "case tool requests user sys".
run() {
    local case=$1 tool=$2; shift 2
    /usr/bin/time -f "%U %S" -o "$tmp/time" "$@" > "$tmp/out" 2>&1 || true
    local n
    case $tool in
        h2load) n=$(awk '/^requests:/ {print $8}' "$tmp/out") ;;
        h2-crate) n=$(tail -1 "$tmp/out") ;;
        *) n=$(python3 -c "import json; print(json.load(open('$tmp/run.json'))['totals']['status_codes'].get('200', 0))" 2>/dev/null || echo 0) ;;
    esac
    echo "$case $tool ${n:-0} $(tail -1 "$tmp/time")" >> "$tmp/results"
}
for _ in $(seq "$rounds"); do
    for target in "h2c http://127.0.0.1:18111/" "tls https://127.0.0.1:18112/"; do
        read -r case url <<< "$target"
        run "$case" h2load h2load -t1 -c4 -m8 -D"$secs" "$url"
        [[ $case = h2c ]] && run "$case" h2-crate "$top/target/release/examples/h2_direct" 127.0.0.1:18111 4 8 "$secs"
        tls=(); [[ $case = tls ]] && tls=(--cacert "$tmp/cert.pem")
        for client in lean hyper; do
            rm -f "$tmp/run.json"
            run "$case" "vload-$client" "$top/target/release/vload" attack -t 1 -d "${secs}s" --no-progress \
                --http2 --http2-client "$client" -c 4 --streams 8 "${tls[@]}" -o "$tmp/run.json" "$url"
        done
    done
done
echo "$rounds rounds of $secs s, interleaved; one client thread each; medians"
python3 - "$tmp/results" "$secs" <<'PY'
import statistics, sys
secs = float(sys.argv[2])
rows = {}
for line in open(sys.argv[1]):
    case, tool, n, user, sys_ = line.split()
    rows.setdefault((case, tool), []).append((int(n), float(user), float(sys_)))
med = statistics.median
print("| case | client | req/s | CPU µs/req | user µs/req | system µs/req |")
print("| --- | --- | ---: | ---: | ---: | ---: |")
for (case, tool), rs in rows.items():
    rs = [r for r in rs if r[0] > 0]
    if not rs:
        print(f"| {case} | {tool} | failed | | | |"); continue
    print(f"| {case} | {tool} | {med(r[0] / secs for r in rs):,.0f} | {med((r[1] + r[2]) * 1e6 / r[0] for r in rs):.2f} | "
          f"{med(r[1] * 1e6 / r[0] for r in rs):.2f} | {med(r[2] * 1e6 / r[0] for r in rs):.2f} |")
PY
