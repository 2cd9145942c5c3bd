#!/usr/bin/env bash
# Starts vload origin and one cache in front of it on loopback, waits until both answer, runs
# a command against them, and tears both down: also when the command fails, and on Ctrl-C.
# The caches' setups are equivalent (servers/*.conf, vcl/catalogue.vcl): the same workload
# against each of them compares the caches, not their settings.
#
#   servers/run.sh SERVER [COMMAND ...]      SERVER: varnish, nginx, haproxy, squid or caddy
#
# caddy is the HTTP/3 terminator (servers/Caddyfile): https on localhost:PORT over TCP and
# UDP, its own CA's certificate (attack with --http3 --insecure), proxied to the origin; it
# keeps no counters of its own (SERVER_STATS is empty).
#
# COMMAND sees:
#   SERVER_URL     http://ADDR/ of the cache
#   SERVER_ADDR    ADDR, its address (for --connect-to)
#   SERVER_STATS   the argument of vload attack --server-stats that reads its counters
#   SERVER_PID     the process started (--watch-pid: its workers are its descendants)
#   ORIGIN_URL     http://127.0.0.1:PORT/ of vload origin
# Without COMMAND it prints them and waits for Ctrl-C.
#
# Environment: VLOAD (the vload binary; default: target/release/vload, built when missing),
# SERVER_LISTEN (the cache's address; default one fixed port each, so that two runs on one
# machine name the same server when compared: varnish 127.0.0.1:6081, nginx :6082, haproxy
# :6083, squid :6084), CACHE_MB (the cache's size, default 256), ORIGIN_THREADS (default 1),
# ORIGIN_ARGS (more origin arguments, split on spaces), SERVER_VCL (varnish's VCL, default
# vcl/catalogue.vcl; varnish is started by vcl/run.sh, which reads VARNISHD_ARGS too),
# NGINX_CACHE_LOCK (nginx's proxy_cache_lock, on or off; default off), NGINX_USE_STALE
# (nginx's proxy_cache_use_stale, e.g. 'error timeout updating http_503'; default off),
# NGINX_BACKGROUND_UPDATE (proxy_cache_background_update, on or off; default off),
# SQUID_POLICY (Squid's memory_replacement_policy: lru, 'heap LFUDA', 'heap GDSF', 'heap LRU';
# default lru).
set -euo pipefail

server=${1:-}
case $server in
    varnish) port=6081 ;;
    nginx) port=6082 ;;
    haproxy) port=6083 ;;
    squid) port=6084 ;;
    caddy) port=6085 ;;
    *)
        echo "usage: servers/run.sh varnish|nginx|haproxy|squid|caddy [COMMAND ...]" >&2
        exit 2
        ;;
esac
shift
root=$(cd "$(dirname "$0")/.." && pwd)
listen=${SERVER_LISTEN:-127.0.0.1:$port}
cache_mb=${CACHE_MB:-256}

if [[ $server == varnish ]]; then
    # vcl/run.sh starts the origin and varnishd; this names what it exports as the others do.
    export VARNISH_LISTEN=$listen VARNISH_MALLOC="${cache_mb}m"
    # shellcheck disable=SC2016 # expanded by the inner shell
    exec "$root/vcl/run.sh" "${SERVER_VCL:-$root/vcl/catalogue.vcl}" bash -c '
        export SERVER_URL=$VARNISH_URL SERVER_ADDR=$VARNISH_ADDR SERVER_PID=$VARNISHD_PID
        export SERVER_STATS="varnish:$VARNISH_NAME"
        if [[ $# -eq 0 ]]; then
            echo "SERVER_URL=$SERVER_URL SERVER_STATS=$SERVER_STATS SERVER_PID=$SERVER_PID ORIGIN_URL=$ORIGIN_URL"
            echo "Ctrl-C stops both."
            while kill -0 "$SERVER_PID" 2>/dev/null; do sleep 1; done
        else
            exec "$@"
        fi' servers/run.sh "$@"
fi

PATH=$PATH:/usr/sbin
if ! command -v "$server" >/dev/null; then
    echo "servers/run.sh: $server not found: install it (apt-get install -y $server)" >&2
    exit 2
fi
vload=${VLOAD:-$root/target/release/vload}
if [[ ! -x $vload ]]; then
    (cd "$root" && cargo build --release --quiet --bin vload)
fi
if [[ ${listen##*:} != 0 ]] && (exec 3<>"/dev/tcp/${listen%:*}/${listen##*:}") 2>/dev/null; then
    echo "servers/run.sh: $listen is in use: stop what listens there, or set SERVER_LISTEN" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/vload-$server.XXXXXX")
# nginx's workers and Squid run as unprivileged users when started as root.
chmod 777 "$work"
origin_pid=
server_pid=
teardown() {
    # Only the processes started here, by PID.
    [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && { wait "$server_pid" 2>/dev/null || true; }
    [[ -n $origin_pid ]] && kill "$origin_pid" 2>/dev/null && { wait "$origin_pid" 2>/dev/null || true; }
    rm -rf "$work"
}
trap teardown EXIT
trap 'exit 130' INT TERM

# shellcheck source=origin.sh
source "$root/servers/origin.sh"
start_origin "$vload" "$work"

conf=$work/$server.conf
case $server in
    haproxy) template=haproxy.cfg ;;
    caddy) template=Caddyfile ;;
    *) template=$server.conf ;;
esac
sed -e "s|@LISTEN@|$listen|g" -e "s|@ORIGIN@|127.0.0.1:$origin_port|g" \
    -e "s|@ORIGIN_HOST@|127.0.0.1|g" -e "s|@ORIGIN_PORT@|$origin_port|g" \
    -e "s|@PORT@|${listen##*:}|g" \
    -e "s|@WORK@|$work|g" -e "s|@CACHE_MB@|$cache_mb|g" \
    -e "s|@CACHE_LOCK@|${NGINX_CACHE_LOCK:-off}|g" \
    -e "s|@USE_STALE@|${NGINX_USE_STALE:-off}|g" \
    -e "s|@BACKGROUND_UPDATE@|${NGINX_BACKGROUND_UPDATE:-off}|g" -e "s|@MEMBER@||g" \
    -e "s|@MEMORY_POLICY@|${SQUID_POLICY:-lru}|g" \
    "$root/servers/$template" >"$conf"
url="http://$listen/"
probe=(--server-stats)
case $server in
    nginx)
        nginx -c "$conf" -g 'daemon off;' >"$work/server.out" 2>&1 &
        stats="nginx:http://$listen/vload-stub-status"
        ;;
    haproxy)
        haproxy -db -f "$conf" >"$work/server.out" 2>&1 &
        stats="haproxy:$work/admin.sock"
        ;;
    squid)
        squid -N -f "$conf" >"$work/server.out" 2>&1 &
        stats="squid:http://$listen"
        ;;
    caddy)
        HOME=$work caddy run --config "$conf" --adapter caddyfile >"$work/server.out" 2>&1 &
        stats=
        url="https://localhost:${listen##*:}/"
        probe=(--http3 --insecure)
        ;;
esac
[[ -n $stats ]] && probe+=("$stats")
server_pid=$!
# Up when its port answers and its counters can be read.
up=
for _ in $(seq 200); do
    kill -0 "$server_pid" 2>/dev/null || break
    if (exec 3<>"/dev/tcp/${listen%:*}/${listen##*:}") 2>/dev/null &&
        "$vload" attack -n 1 --no-progress --quiet "${probe[@]}" -o "$work/up.json" \
            "${url}vload-started" >/dev/null 2>&1; then
        up=1
        break
    fi
    sleep 0.1
done
if [[ -z $up ]]; then
    cat "$work/server.out" "$work"/*.log 2>/dev/null >&2 || true
    echo "servers/run.sh: $server did not answer on $listen" >&2
    exit 1
fi

export SERVER_URL=$url SERVER_ADDR=$listen SERVER_STATS=$stats
export SERVER_PID=$server_pid ORIGIN_URL=$origin_url
if [[ $# -eq 0 ]]; then
    echo "SERVER_URL=$SERVER_URL SERVER_STATS=$SERVER_STATS SERVER_PID=$SERVER_PID ORIGIN_URL=$ORIGIN_URL"
    echo "Ctrl-C stops both."
    while kill -0 "$server_pid" 2>/dev/null; do sleep 1; done
else
    "$@"
fi
