#!/usr/bin/env bash
# Starts vload-origin and varnishd with one of these VCL files on loopback ports, waits until
# both answer, runs a command against them, and tears both down: also when the command
# fails, and on Ctrl-C.
#
#   vcl/run.sh VCL [COMMAND ...]
#
# The VCL's backend port (8081) is replaced by the origin's. COMMAND sees:
#   VARNISH_URL    http://127.0.0.1:PORT/ of varnishd
#   VARNISH_ADDR   127.0.0.1:PORT of varnishd (for --connect-to)
#   VARNISH_NAME   varnishd's private -n directory (for varnishstat -n, --server-stats varnish:NAME)
#   VARNISHD_PID   the varnishd started (its worker process is a child: --watch-pid counts both)
#   ORIGIN_URL     http://127.0.0.1:PORT/ of vload-origin
# Without COMMAND it prints them and waits for Ctrl-C.
#
# Environment: VLOAD (the vload binary; default: target/release/vload, built when missing),
# VARNISH_LISTEN (varnishd's address, default 127.0.0.1:6081, Varnish's own port: one fixed
# address, so two runs on one machine name the same server when compared; 127.0.0.1:0 takes a
# free port), VARNISH_MALLOC (cache size, default 256m), ORIGIN_THREADS (default 1), ORIGIN_ARGS (more
# origin arguments, split on spaces, e.g. ORIGIN_ARGS='--delay 5ms'), VARNISHD_ARGS (more
# varnishd arguments, split on spaces, e.g. VARNISHD_ARGS='-p thread_pools=4 -t 120': the
# server settings a comparison is about).
set -euo pipefail

if [[ $# -lt 1 || ! -f $1 ]]; then
    echo "usage: vcl/run.sh VCL [COMMAND ...]   (VCL: a file such as vcl/hello.vcl)" >&2
    exit 2
fi
vcl=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
vload=${VLOAD:-$root/target/release/vload}
if [[ ! -x $vload ]]; then
    (cd "$root" && cargo build --release --quiet --bin vload)
fi
command -v varnishd >/dev/null || {
    echo "vcl/run.sh: varnishd not found: install Varnish (apt-get install -y varnish)" >&2
    exit 2
}

work=$(mktemp -d "${TMPDIR:-/tmp}/vload-varnish.XXXXXX")
# varnishd compiles the VCL as its own unprivileged user.
chmod 755 "$work"
origin_pid=
varnish_pid=
teardown() {
    # Only the processes started here, by PID.
    [[ -n $varnish_pid ]] && kill "$varnish_pid" 2>/dev/null && { wait "$varnish_pid" 2>/dev/null || true; }
    [[ -n $origin_pid ]] && kill "$origin_pid" 2>/dev/null && { wait "$origin_pid" 2>/dev/null || true; }
    rm -rf "$work"
}
trap teardown EXIT
trap 'exit 130' INT TERM

# shellcheck source=../servers/origin.sh
source "$root/servers/origin.sh"
start_origin "$vload" "$work"

sed "s/\.port = \"8081\"/.port = \"$origin_port\"/" "$vcl" >"$work/$(basename "$vcl")"
# busy_stats_rate: busy workers add their counts to varnishstat's every thread_stats_rate
# (10) requests; without it a keep-alive connection's counts appear only when it closes, and
# snapshots taken during an attack are stale.
read -r -a extra <<<"${VARNISHD_ARGS:-}"
listen=${VARNISH_LISTEN:-127.0.0.1:6081}
if [[ ${listen##*:} != 0 ]] && (exec 3<>"/dev/tcp/${listen%:*}/${listen##*:}") 2>/dev/null; then
    echo "vcl/run.sh: $listen is in use: stop what listens there, or set VARNISH_LISTEN (127.0.0.1:0 takes a free port)" >&2
    exit 1
fi
varnishd -F -n "$work/varnish" -a "$listen" -f "$work/$(basename "$vcl")" \
    -s "malloc,${VARNISH_MALLOC:-256m}" -p feature=+busy_stats_rate "${extra[@]}" >"$work/varnishd.out" 2>&1 &
varnish_pid=$!
port=
for _ in $(seq 200); do
    kill -0 "$varnish_pid" 2>/dev/null || { cat "$work/varnishd.out" >&2; exit 1; }
    port=$(varnishadm -n "$work/varnish" debug.listen_address 2>/dev/null | awk 'NR==1 {print $3}') || true
    [[ -n $port ]] && break
    sleep 0.05
done
[[ -n $port ]] || { cat "$work/varnishd.out" >&2; echo "vcl/run.sh: varnishd did not answer" >&2; exit 1; }

export VARNISH_URL="http://127.0.0.1:$port/" VARNISH_ADDR="127.0.0.1:$port" VARNISH_NAME="$work/varnish"
export VARNISHD_PID=$varnish_pid ORIGIN_URL=$origin_url
if [[ $# -eq 0 ]]; then
    echo "VARNISH_URL=$VARNISH_URL VARNISH_ADDR=$VARNISH_ADDR VARNISH_NAME=$VARNISH_NAME VARNISHD_PID=$VARNISHD_PID ORIGIN_URL=$ORIGIN_URL"
    echo "Ctrl-C stops both."
    while kill -0 "$varnish_pid" 2>/dev/null; do sleep 1; done
else
    "$@"
fi
