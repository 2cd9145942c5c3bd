#!/usr/bin/env bash
# Starts a two-tier cache on loopback: vload origin, a shield varnishd in front of it
# (vcl/tier-shield.vcl) and an edge varnishd in front of the shield (vcl/tier-edge.vcl); waits
# until all three answer, runs a command against the edge, and tears all down: also when the
# command fails, and on Ctrl-C.
#
#   vcl/run-tiers.sh [COMMAND ...]
#
# COMMAND sees:
#   EDGE_URL, SHIELD_URL   http://127.0.0.1:PORT/ of each varnishd (free ports)
#   EDGE_NAME, SHIELD_NAME each varnishd's -n directory (--server-stats varnish:NAME)
#   ORIGIN_URL             http://127.0.0.1:PORT/ of vload origin
# Without COMMAND it prints them and waits for Ctrl-C.
#
# EDGE=nginx makes the edge nginx (servers/nginx.conf, adding its own Cache-Status member;
# EDGE_NAME is then its stub_status URL, --server-stats nginx:$EDGE_NAME).
#
# Environment: VLOAD (the vload binary; default: target/release/vload, built when missing),
# EDGE_MALLOC and SHIELD_MALLOC (each cache's size, default 256m: a smaller edge evicts what the
# shield still holds, which is when a shield earns its keep), ORIGIN_THREADS, ORIGIN_ARGS (as
# vcl/run.sh).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
vload=${VLOAD:-$root/target/release/vload}
if [[ ! -x $vload ]]; then
    (cd "$root" && cargo build --release --quiet --bin vload)
fi
command -v varnishd >/dev/null || {
    echo "vcl/run-tiers.sh: varnishd not found: install Varnish (apt-get install -y varnish)" >&2
    exit 2
}

work=$(mktemp -d "${TMPDIR:-/tmp}/vload-tiers.XXXXXX")
chmod 755 "$work"
pids=()
teardown() {
    # Only the processes started here, by PID, the edge first.
    local i
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill "${pids[$i]}" 2>/dev/null && { wait "${pids[$i]}" 2>/dev/null || true; }
    done
    rm -rf "$work"
}
trap teardown EXIT
trap 'exit 130' INT TERM

# shellcheck source=../servers/origin.sh
source "$root/servers/origin.sh"
start_origin "$vload" "$work"
pids+=("$origin_pid")

# start_varnish TIER BACKEND_PORT MALLOC: sets port to the tier's listen port.
start_varnish() {
    local tier=$1 backend=$2 malloc=$3 pid
    sed "s/\.port = \"8081\"/.port = \"$backend\"/" "$root/vcl/tier-$tier.vcl" >"$work/tier-$tier.vcl"
    varnishd -F -n "$work/$tier" -a 127.0.0.1:0 -f "$work/tier-$tier.vcl" \
        -s "malloc,$malloc" -p feature=+busy_stats_rate >"$work/$tier.out" 2>&1 &
    pid=$!
    pids+=("$pid")
    port=
    for _ in $(seq 200); do
        kill -0 "$pid" 2>/dev/null || { cat "$work/$tier.out" >&2; exit 1; }
        port=$(varnishadm -n "$work/$tier" debug.listen_address 2>/dev/null | awk 'NR==1 {print $3}') || true
        [[ -n $port ]] && return 0
        sleep 0.05
    done
    cat "$work/$tier.out" >&2
    echo "vcl/run-tiers.sh: the $tier varnishd did not answer" >&2
    exit 1
}

# start_nginx BACKEND_PORT SIZE: nginx as the edge (sizes as varnishd's: 2m, 256m); sets port.
start_nginx() {
    local backend=$1 size=$2 mb pid
    PATH=$PATH:/usr/sbin
    command -v nginx >/dev/null || {
        echo "vcl/run-tiers.sh: nginx not found: install it (apt-get install -y nginx)" >&2
        exit 2
    }
    mb=${size%[mM]}
    [[ $size == *[gG] ]] && mb=$((${size%[gG]} * 1024))
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    mkdir -p "$work/nginx"
    chmod 777 "$work/nginx"
    sed -e "s|@LISTEN@|127.0.0.1:$port|g" -e "s|@ORIGIN@|127.0.0.1:$backend|g" \
        -e "s|@WORK@|$work/nginx|g" -e "s|@CACHE_MB@|$mb|g" -e "s|@CACHE_LOCK@|off|g" \
        -e "s|@USE_STALE@|off|g" -e "s|@BACKGROUND_UPDATE@|off|g" -e "s|@MEMBER@|edge|g" \
        "$root/servers/nginx.conf" >"$work/nginx/nginx.conf"
    nginx -c "$work/nginx/nginx.conf" -g 'daemon off;' >"$work/nginx.out" 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 200); do
        kill -0 "$pid" 2>/dev/null || { cat "$work/nginx.out" >&2; exit 1; }
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "vcl/run-tiers.sh: the nginx edge did not answer" >&2
    exit 1
}

start_varnish shield "$origin_port" "${SHIELD_MALLOC:-256m}"
shield_port=$port
if [[ ${EDGE:-varnish} == nginx ]]; then
    start_nginx "$shield_port" "${EDGE_MALLOC:-256m}"
    export EDGE_URL="http://127.0.0.1:$port/" EDGE_NAME="http://127.0.0.1:$port/vload-stub-status"
else
    start_varnish edge "$shield_port" "${EDGE_MALLOC:-256m}"
    export EDGE_URL="http://127.0.0.1:$port/" EDGE_NAME="$work/edge"
fi
export SHIELD_URL="http://127.0.0.1:$shield_port/" SHIELD_NAME="$work/shield"
export ORIGIN_URL=$origin_url
if [[ $# -eq 0 ]]; then
    echo "EDGE_URL=$EDGE_URL EDGE_NAME=$EDGE_NAME SHIELD_URL=$SHIELD_URL SHIELD_NAME=$SHIELD_NAME ORIGIN_URL=$ORIGIN_URL"
    echo "Ctrl-C stops all three."
    while kill -0 "${pids[-1]}" 2>/dev/null; do sleep 1; done
else
    "$@"
fi
