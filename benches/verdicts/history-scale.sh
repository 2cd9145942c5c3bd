#!/usr/bin/env bash
# The history store at scale (#47): one real one-minute run (vload's origin, 1,000/s), added
# 10,000 times as distinct runs (each `add` timed), a 500-commit series checked (timed), the
# database's size; then 4 concurrent `vload history add` processes on one database, as the
# shards of one attack would run them.
#
# Usage: benches/verdicts/history-scale.sh [RUNS]   (default 10000)
set -euo pipefail
source "$(dirname "$0")/../peers/lib.sh"
runs=${1:-10000}
cargo build --release -q -p vload -p vload-origin --manifest-path "$top/Cargo.toml"
cargo build --release -q -p vload-history --example scale --manifest-path "$top/Cargo.toml"
vload="$top/target/release/vload"
host_info
start_origin 18811
"$vload" attack -r 1000 -c 10 -d 60s --quiet --no-progress -o "$tmp/minute.json" http://127.0.0.1:18811/
"$top/target/release/examples/scale" "$tmp/minute.json" "$tmp/scale.db" "$runs"
# The command itself, process start and all.
start=$(date +%s.%N)
"$vload" history check --db "$tmp/scale.db" --series b >/dev/null || true
end=$(date +%s.%N)
printf 'vload history check --series b (500 commits, 1,500 runs): %.2f s\n' "$(echo "$end - $start" | bc)"
# Concurrent adders: 4 processes, 50 shards' files each, one database.
python3 - "$tmp" <<'PY'
import json, sys, os
tmp = sys.argv[1]
run = json.load(open(os.path.join(tmp, "minute.json")))
for p in range(4):
    os.makedirs(os.path.join(tmp, f"p{p}"), exist_ok=True)
    for i in range(50):
        run["run_id"] = f"shard-{p}-{i}"
        json.dump(run, open(os.path.join(tmp, f"p{p}", f"{i}.json"), "w"))
PY
start=$(date +%s.%N)
for p in 0 1 2 3; do
    "$vload" history add --db "$tmp/shards.db" "$tmp/p$p"/*.json >/dev/null 2>&1 & pids+=($!)
done
status=0
for p in "${pids[@]: -4}"; do wait "$p" || status=$?; done
end=$(date +%s.%N)
stored=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from runs').fetchone()[0])" "$tmp/shards.db")
printf 'concurrent add: 4 processes x 50 files: %s stored of 200, exit %s, %.1f s\n' "$stored" "$status" "$(echo "$end - $start" | bc)"
