#!/usr/bin/env bash
# What a crawler costs the human requests, measured through real caches and beside the
# policies' model (#60, docs/caching.md section 11): the same catalogue through varnishd,
# nginx and Squid (its LRU, heap LFUDA and heap GDSF), each started afresh at one cache size
# (servers/run.sh), with a crawler of the tail at each share; each run warmed with the same
# load before it is measured. Prints one markdown table of the human requests' hit ratio
# (from the breakdown by class), then `vload model`'s for the same catalogue.
#
#   bash benches/caches/crawler-table.sh [SHARES] [SERVERS]
#   defaults: "0% 10% 30% 50%", "varnish nginx squid squid:heap-LFUDA squid:heap-GDSF".
#   Workload: OBJECTS (20000), SIZE (1k), CACHE_MB (8), RATE (2000), SECONDS_EACH (20),
#   MODEL_SIZE (the cache size modelled, default 4000obj).
set -euo pipefail
shares=${1:-0% 10% 30% 50%}
servers=${2:-varnish nginx squid squid:heap-LFUDA squid:heap-GDSF}
top=$(cd "$(dirname "$0")/../.." && pwd)
cargo build --release -q -p vload --manifest-path "$top/Cargo.toml"
vload=$top/target/release/vload
export VLOAD=$vload CACHE_MB=${CACHE_MB:-8} VARNISH_MALLOC=${CACHE_MB:-8}m
objects=${OBJECTS:-20000} size=${SIZE:-1k} rate=${RATE:-2000} seconds=${SECONDS_EACH:-20}
out=$(mktemp -d "${TMPDIR:-/tmp}/vload-crawler.XXXXXX")
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(date -u +%F)"
echo "tools: $($vload --version), $(varnishd -V 2>&1 | head -1), $(/usr/sbin/nginx -v 2>&1), $(/usr/sbin/squid -v | head -1)"
echo "workload: --catalogue $objects --object-size $size, $rate/s for ${seconds}s after 10 s of warm-up, caches of $CACHE_MB MB"
echo
header="| cache |"
rule="| --- |"
for c in $shares; do header+=" crawler $c |"; rule+=" ---: |"; done
echo "$header"
echo "$rule"
for s in $servers; do
    server=${s%%:*}
    policy=
    [[ $s == *:* ]] && policy=${s#*:} && policy=${policy//-/ }
    line="| $s |"
    for c in $shares; do
        f=$out/${s//[: ]/-}-${c//[%:]/}.json
        SQUID_POLICY=${policy:-lru} \
            "$top/servers/run.sh" "$server" sh -c "\"$vload\" attack --no-progress --quiet -r $rate \
            -d ${seconds}s --warmup 10s --catalogue $objects --object-size $size --crawler $c \
            -o $f \$SERVER_URL" >/dev/null 2>&1 || { line+=" failed |"; continue; }
        human=$(python3 - "$f" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
groups = {g["name"]: g for b in run.get("breakdowns", []) if b["by"] == "class" for g in b["groups"]}
g = groups.get("human")
if g is None:  # no crawler: every request is the catalogue's own
    c = run["cache"]; hit, miss = c.get("hit", 0), c.get("miss", 0)
else:
    k = g["cache"]; hit, miss = k.get("hit", 0) + k.get("stale", 0), k.get("miss", 0) + k.get("pass", 0)
print(f"{100 * hit / max(hit + miss, 1):.2f}%")
PY
)
        line+=" $human |"
    done
    echo "$line"
done
echo
"$vload" model --catalogue "$objects" --object-size "$size" --cache-size "${MODEL_SIZE:-4000obj}" \
    -r "$rate" --crawler "$(echo "$shares" | tr ' ' ',')"
echo
echo "run files: $out"
