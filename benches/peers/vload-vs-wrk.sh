#!/usr/bin/env bash
# vload against wrk: same target, same connections, same duration, interleaved rounds.
# Prints req/s, client CPU µs per request (user+sys from /usr/bin/time) and peak RSS.
# Usage: bash benches/peers/vload-vs-wrk.sh [ROUNDS] [SECONDS] [CONNS] [TARGET: nginx|origin]
set -euo pipefail
rounds=${1:-3}; secs=${2:-5}; conns=${3:-50}; target=${4:-nginx}
source "$(dirname "$0")/lib.sh"
for tool in wrk nginx /usr/bin/time; do command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install -y wrk nginx time)" >&2; exit 2; }; done
cargo build --release -q -p vload -p vload-origin --manifest-path "$top/Cargo.toml"
host_info
port=18090
if [ "$target" = nginx ]; then start_nginx $port; else start_origin $port; fi
url="http://127.0.0.1:$port/"
measure() { # name, command...
  local name=$1; shift
  /usr/bin/time -f "%U %S %M" -o "$tmp/time" "$@" > "$tmp/out" 2>/dev/null || true
  local reqs rps
  if [ "$name" = wrk ]; then
    reqs=$(awk '/requests in/ {print $1}' "$tmp/out"); rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/out")
  else
    reqs=$(python3 -c "import json;print(json.load(open('$tmp/run.json'))['totals']['completed'])")
    rps=$(python3 -c "import json;r=json.load(open('$tmp/run.json'));w=r['window'];print(round(r['totals']['completed']/(w['measured_s']+w['wait_s']),1))")
  fi
  read -r user sys rss < "$tmp/time"
  python3 -c "print('\t'.join(['$name', '$rps', '%.2f' % (($user+$sys)*1e6/$reqs), '%.1f' % ($rss/1024)]))"
}
printf "tool\treq_per_s\tcpu_us_per_req\tpeak_rss_mb\n"
for r in $(seq "$rounds"); do
  measure wrk wrk -t1 -c"$conns" -d"${secs}s" "$url"
  measure vload "$top/target/release/vload" attack -t 1 -c "$conns" -d "${secs}s" --no-progress -o "$tmp/run.json" "$url"
done
