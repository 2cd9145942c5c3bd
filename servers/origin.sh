# Sourced by vcl/run.sh and servers/run.sh: starts vload origin on a free loopback port.
#
#   start_origin VLOAD WORK   sets origin_pid, origin_url (http://127.0.0.1:PORT/) and
#                             origin_port; the caller stops origin_pid. ORIGIN_THREADS
#                             (default 1) and ORIGIN_ARGS (split on spaces) are passed on.
start_origin() {
    # The origin prints its URL once listening.
    # shellcheck disable=SC2086 # ORIGIN_ARGS is split on spaces on purpose
    "$1" origin --listen 127.0.0.1:0 --threads "${ORIGIN_THREADS:-1}" ${ORIGIN_ARGS:-} >"$2/origin.out" 2>&1 &
    origin_pid=$!
    for _ in $(seq 100); do
        grep -q "listening on" "$2/origin.out" && break
        kill -0 "$origin_pid" 2>/dev/null || { cat "$2/origin.out" >&2; return 1; }
        sleep 0.05
    done
    origin_url=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$2/origin.out")
    [[ -n $origin_url ]] || { echo "$(basename "$0"): the origin did not start" >&2; return 1; }
    origin_port=${origin_url##*:}
    origin_port=${origin_port%/}
}
