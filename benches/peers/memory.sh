#!/usr/bin/env bash
# vload's peak RSS against run length at one open-loop rate: 10 s against 120 s.
#   bash benches/peers/memory.sh [RATE] [SHORT_S] [LONG_S]   (defaults 20000, 10, 120)
set -euo pipefail
rate=${1:-20000}; short=${2:-10}; long=${3:-120}
source "$(dirname "$0")/lib.sh"
cargo build --release -q -p vload -p vload-origin --manifest-path "$top/Cargo.toml"
host_info
start_origin 18097
echo "| rate | run length | peak RSS MB | connections opened | requests |"
echo "| ---: | ---: | ---: | ---: | ---: |"
for secs in "$short" "$long"; do
  /usr/bin/time -f "%M" -o "$tmp/time" "$top/target/release/vload" attack -t 1 -r "$rate" -d "${secs}s" \
      --no-progress -o "$tmp/run.json" http://127.0.0.1:18097/ > /dev/null 2>&1
  python3 -c "
import json; r=json.load(open('$tmp/run.json')); t=r['totals']
print(f\"| {$rate:,}/s | {$secs} s | {int(open('$tmp/time').read())/1024:.1f} | {t['connections_opened']:,} | {t['completed']:,} |\")"
done
