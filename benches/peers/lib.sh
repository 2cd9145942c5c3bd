# Sourced by the peer scripts: the repository root, a scratch directory, cleanup of every
# process a script starts (by PID), the fd limit raised to the hard limit, and the targets.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tmp=$(mktemp -d); pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# wait_port PORT: until something accepts on 127.0.0.1:PORT (5 s at most).
wait_port() {
    for _ in $(seq 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing listens on 127.0.0.1:$1" >&2; exit 1
}

# nginx_on PORT LISTEN_OPTIONS SERVER_DIRECTIVES: one worker, a fixed 11-byte body, access
# log off, listening on 127.0.0.1:PORT with the options given; on CPU $SERVER_CPU when set.
nginx_on() {
    command -v nginx >/dev/null || { echo "needs nginx (apt-get install -y nginx)" >&2; exit 2; }
    cat > "$tmp/nginx-$1.conf" <<CONF
worker_processes 1; daemon off; pid $tmp/nginx-$1.pid; error_log $tmp/error-$1.log;
worker_rlimit_nofile $(ulimit -n);
events { worker_connections 65536; }
http { access_log off; keepalive_requests 100000000;
  client_body_temp_path $tmp; proxy_temp_path $tmp; fastcgi_temp_path $tmp; uwsgi_temp_path $tmp; scgi_temp_path $tmp;
  server { listen 127.0.0.1:$1 $2 backlog=65535; $3
    location / { default_type text/plain; return 200 "Hello World"; } } }
CONF
    local pin=()
    [[ -z ${SERVER_CPU:-} ]] || pin=(taskset -c "$SERVER_CPU")
    "${pin[@]}" nginx -c "$tmp/nginx-$1.conf" & pids+=($!)
    wait_port "$1"
}

# start_nginx PORT: plain HTTP/1.1.
start_nginx() { nginx_on "$1" "" ""; }

# start_origin PORT [ARGS...]: vload-origin, one thread unless ARGS say otherwise.
start_origin() {
    local port=$1; shift
    [[ $# -gt 0 ]] || set -- --threads 1
    "$top/target/release/vload-origin" --listen "127.0.0.1:$port" "$@" >/dev/null & pids+=($!)
    wait_port "$port"
}

# host_info: what a table was measured on, printed above it, so that a table from another
# host can be told apart: CPU model and count, kernel, date, and the version of each tool.
host_info() {
    local cpu
    cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
    echo "host: ${cpu:-unknown CPU}, $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r), $(date -u +%Y-%m-%d)"
    # Some tools exit non-zero from their version flag (wrk -v): never fatal here.
    ver() { { "$@" 2>&1 || true; } | head -1; }
    local versions=("vload $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?') ($(ver rustc --version | awk '{print $1, $2}'))")
    command -v wrk >/dev/null && versions+=("wrk $(ver wrk -v | awk '{print $2}')")
    command -v h2load >/dev/null && versions+=("h2load $(ver h2load --version | awk '{print $2}')")
    command -v nginx >/dev/null && versions+=("$(ver nginx -v | sed 's/.*: //')")
    command -v oha >/dev/null && versions+=("oha $(ver oha --version | awk '{print $2}')")
    # vegeta built from its module (run.sh) reports no version of its own: the module's.
    command -v vegeta >/dev/null && versions+=("vegeta $({ go version -m "$(command -v vegeta)" 2>/dev/null || true; } | awk '$1 == "mod" {print $3}')")
    local IFS=','
    echo "tools: ${versions[*]}" | sed 's/,/, /g'
}

# start_nginx_tls PORT: TLS 1.3 (a fresh self-signed certificate) and HTTP/2 on the same
# port: https://127.0.0.1:PORT/ answers h1 and h2 (ALPN).
start_nginx_tls() {
    command -v openssl >/dev/null || { echo "needs openssl" >&2; exit 2; }
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj /CN=127.0.0.1 -addext basicConstraints=critical,CA:FALSE \
        -addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
    nginx_on "$1" "ssl http2" \
        "ssl_certificate $tmp/cert.pem; ssl_certificate_key $tmp/key.pem; ssl_protocols TLSv1.3;"
}

# vload_round BINARY CONNECTIONS SECONDS URL: one closed-loop round of a vload binary, one
# thread, under /usr/bin/time; prints "REQUESTS SECONDS USER_S SYSTEM_S PEAK_RSS_KB" (SECONDS:
# the measured window and the wait for the last responses). Fails with a line when no run
# file was written, so a round never reports the number of the round before; call it as
# `out=$(vload_round ...)`, or as a plain command with its output redirected (floor.sh, through
# `busy`, which returns its status), so that `set -e` stops the script there.
# CONNECTIONS may be rRATE instead: an open loop at RATE requests a second (up to 1,000
# connections), e.g. r60000.
vload_round() {
    rm -f "$tmp/run.json"
    local load=(-c "$2")
    [[ $2 == r* ]] && load=(-r "${2#r}" --max-connections 1000)
    # VLOAD_ARGS: more attack flags (split on spaces), e.g. a workload: --catalogue 100000.
    # shellcheck disable=SC2086
    /usr/bin/time -f "%U %S %M" -o "$tmp/vload-time" "$1" attack -t 1 "${load[@]}" -d "${3}s" \
        --no-progress ${VLOAD_ARGS:-} -o "$tmp/run.json" "$4" > /dev/null 2>&1 || true
    [[ -s $tmp/run.json ]] || { echo "$(basename "$0"): vload at ${load[*]} wrote no run file" >&2; return 1; }
    python3 -c "
import json, sys; r = json.load(open(sys.argv[1])); w = r['window']
print(r['totals']['completed'], w['measured_s'] + w['wait_s'], *sys.argv[2:])" "$tmp/run.json" $(cat "$tmp/vload-time")
}
