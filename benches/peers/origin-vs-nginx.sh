#!/usr/bin/env bash
# Is vload-origin fast enough never to be the bottleneck? wrk against it and against
# nginx serving the same 11 bytes, same connections, interleaved rounds.
# Usage: bash benches/peers/origin-vs-nginx.sh [ROUNDS] [SECONDS] [CONNS]
set -euo pipefail
rounds=${1:-3}; secs=${2:-5}; conns=${3:-50}
source "$(dirname "$0")/lib.sh"
command -v wrk >/dev/null || { echo "needs wrk (apt-get install -y wrk)" >&2; exit 2; }
command -v nginx >/dev/null || { echo "needs nginx (apt-get install -y nginx)" >&2; exit 2; }
cargo build --release -q -p vload-origin --manifest-path "$top/Cargo.toml"
host_info
nginx_port=18080; origin_port=18081
start_nginx $nginx_port
# shellcheck disable=SC2086 # ORIGIN_ARGS holds several words
start_origin $origin_port ${ORIGIN_ARGS:---threads 1}
printf "round\ttarget\treq_per_s\n"
for r in $(seq "$rounds"); do
  for t in nginx:$nginx_port origin:$origin_port; do
    rps=$(wrk -t1 -c"$conns" -d"${secs}s" "http://127.0.0.1:${t#*:}/" | awk '/Requests\/sec/ {print $2}')
    printf "%s\t%s\t%s\n" "$r" "${t%%:*}" "$rps"
  done
done
