#!/usr/bin/env bash
# Which cache for this workload: the same catalogue workload against Varnish, nginx, HAProxy
# and Squid (servers/run.sh, equivalent setups of one cache size), ROUNDS runs each, the
# servers alternated within each round (A B C D, A B C D, ...) so that drift falls on all of
# them; each run starts its server afresh and warms it with the same load. Then each cache is
# compared with Varnish: its own hit ratio, what it sends to the origin, its CPU per request,
# the latency. The recipe of docs/servers.md.
#
#   bash benches/caches/which-cache.sh [ROUNDS] [SERVERS]
#   defaults: 5 rounds, "varnish nginx haproxy squid"; run files kept in $OUT (a new
#   temporary directory by default). Workload: WORKLOAD (default below), CACHE_MB (32).
set -euo pipefail
rounds=${1:-5}
servers=${2:-varnish nginx haproxy squid}
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../peers/lib.sh
source "$top/benches/peers/lib.sh"
cargo build --release -q -p vload --manifest-path "$top/Cargo.toml"
vload=$top/target/release/vload
export VLOAD=$vload CACHE_MB=${CACHE_MB:-32}
out=${OUT:-$(mktemp -d /tmp/vload-which-cache-XXXXXX)}
mkdir -p "$out"
workload=${WORKLOAD:--r 2000 -d 10s --warmup 10s --catalogue 20000 --popularity zipf:0.8 --object-size 4k --cache-size ${CACHE_MB}M}
host_info
for s in $servers; do
    case $s in
        varnish) varnishd -V 2>&1 | head -1 ;;
        nginx) nginx -v 2>&1 ;;
        haproxy) haproxy -v | head -1 ;;
        squid) squid -v | head -1 ;;
    esac
done
echo "workload: $workload, a cache of ${CACHE_MB} MB each; run files in $out"
for round in $(seq "$rounds"); do
    for s in $servers; do
        # shellcheck disable=SC2016,SC2086 # the inner shell expands; WORKLOAD is split on purpose
        bash "$top/servers/run.sh" "$s" bash -c '"$VLOAD" attack '"$workload"' --no-progress --quiet \
            --label "$0" --server-stats "$SERVER_STATS" --watch-pid "$SERVER_PID" \
            -o "$1" "$SERVER_URL"' "$s" "$out/$s-$round.json"
        echo "round $round: $s done"
    done
done
first=${servers%% *}
for s in $servers; do
    [[ $s == "$first" ]] && continue
    echo
    echo "== $first (A) against $s (B)"
    "$vload" compare "$out/$first"-*.json -- "$out/$s"-*.json || true
done
