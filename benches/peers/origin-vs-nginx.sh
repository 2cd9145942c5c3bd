#!/usr/bin/env bash
# Is vload-origin fast enough never to be the bottleneck? wrk against it and against
# nginx serving the same 11 bytes, same connections, interleaved rounds.
# Usage: bash benches/peers/origin-vs-nginx.sh [ROUNDS] [SECONDS] [CONNS]
set -euo pipefail
rounds=${1:-3}; secs=${2:-5}; conns=${3:-50}
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v wrk >/dev/null || { echo "needs wrk (apt-get install -y wrk)" >&2; exit 2; }
command -v nginx >/dev/null || { echo "needs nginx (apt-get install -y nginx)" >&2; exit 2; }
cargo build --release -q -p vload-origin --manifest-path "$top/Cargo.toml"
tmp=$(mktemp -d); pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
nginx_port=18080; origin_port=18081
cat > "$tmp/nginx.conf" <<CONF
worker_processes 1; daemon off; pid $tmp/nginx.pid; error_log $tmp/error.log;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000;
  client_body_temp_path $tmp; proxy_temp_path $tmp; fastcgi_temp_path $tmp; uwsgi_temp_path $tmp; scgi_temp_path $tmp;
  server { listen 127.0.0.1:$nginx_port; location / { default_type text/plain; return 200 "Hello World"; } } }
CONF
nginx -c "$tmp/nginx.conf" & pids+=($!)
"$top/target/release/vload-origin" --listen 127.0.0.1:$origin_port ${ORIGIN_ARGS:-} >/dev/null & pids+=($!)
sleep 1
printf "round\ttarget\treq_per_s\n"
for r in $(seq "$rounds"); do
  for t in nginx:$nginx_port origin:$origin_port; do
    rps=$(wrk -t1 -c"$conns" -d"${secs}s" "http://127.0.0.1:${t#*:}/" | awk '/Requests\/sec/ {print $2}')
    printf "%s\t%s\t%s\n" "$r" "${t%%:*}" "$rps"
  done
done
