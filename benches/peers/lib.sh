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

# start_nginx PORT: one worker, a fixed 11-byte body, access log off.
start_nginx() {
    command -v nginx >/dev/null || { echo "needs nginx (apt-get install -y nginx)" >&2; exit 2; }
    cat > "$tmp/nginx-$1.conf" <<CONF
worker_processes 1; daemon off; pid $tmp/nginx-$1.pid; error_log $tmp/error-$1.log;
worker_rlimit_nofile $(ulimit -n);
events { worker_connections 65536; }
http { access_log off; keepalive_requests 100000000;
  client_body_temp_path $tmp; proxy_temp_path $tmp; fastcgi_temp_path $tmp; uwsgi_temp_path $tmp; scgi_temp_path $tmp;
  server { listen 127.0.0.1:$1 backlog=65535; location / { default_type text/plain; return 200 "Hello World"; } } }
CONF
    nginx -c "$tmp/nginx-$1.conf" & pids+=($!)
    wait_port "$1"
}

# start_origin PORT [ARGS...]: vload-origin, one thread unless ARGS say otherwise.
start_origin() {
    local port=$1; shift
    [[ $# -gt 0 ]] || set -- --threads 1
    "$top/target/release/vload-origin" --listen "127.0.0.1:$port" "$@" >/dev/null & pids+=($!)
    wait_port "$port"
}
