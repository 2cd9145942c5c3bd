#!/usr/bin/env bash
# What variants cost a cache, measured through varnishd beside the model (#60,
# docs/caching.md section 12): the same catalogue with 1, 4 and 16 variants of each object
# (a utm_source parameter; 16:vary an Accept-Language the origin varies on), through
# vcl/catalogue.vcl (every variant a key) and vcl/normalise.vcl (one key an object), each
# run against a varnishd started afresh (vcl/run.sh). Prints one markdown table: the
# measured hit ratio and the model's, keyed and normalised, ROUNDS runs each (mean and
# range; round R uses --seed R).
#
#   bash benches/caches/variants-table.sh [VARIANTS]
#   default: "1 4 16 16:vary". Workload: OBJECTS (5000), RATE (1000), SECONDS_EACH (10),
#   WARMUP (5), CACHE (the --cache-size modelled and VARNISH_MALLOC, default none: 256m),
#   ROUNDS (3).
set -euo pipefail
variants=${1:-1 4 16 16:vary}
top=$(cd "$(dirname "$0")/../.." && pwd)
cargo build --release -q -p vload --manifest-path "$top/Cargo.toml"
vload=$top/target/release/vload
objects=${OBJECTS:-5000} rate=${RATE:-1000} seconds=${SECONDS_EACH:-10} warmup=${WARMUP:-5}
rounds=${ROUNDS:-3}
size_args=()
if [[ -n ${CACHE:-} ]]; then
    size_args=(--cache-size "$CACHE")
    export VARNISH_MALLOC=$CACHE
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/vload-variants.XXXXXX")
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(date -u +%F)"
echo "tools: $($vload --version), $(varnishd -V 2>&1 | head -1)"
echo "workload: --catalogue $objects, $rate/s for ${seconds}s after ${warmup}s of warm-up, ${CACHE:-256m} of malloc, $rounds rounds"
echo
echo "| variants | catalogue.vcl measured | model, keyed | normalise.vcl measured | model, normalised |"
echo "| --- | ---: | ---: | ---: | ---: |"
for v in $variants; do
    line="| $v |"
    for vcl in catalogue normalise; do
        files=()
        for r in $(seq "$rounds"); do
            f=$out/$vcl-${v//:/-}-$r.json
            VARNISH_LISTEN=127.0.0.1:0 "$top/vcl/run.sh" "$top/vcl/$vcl.vcl" sh -c "\"$vload\" attack \
                --no-progress --quiet -r $rate -d ${seconds}s --warmup ${warmup}s \
                --catalogue $objects --variants $v --seed $r ${size_args[*]} -o $f \$VARNISH_URL" \
                >/dev/null 2>&1 && files+=("$f")
        done
        line+=$(python3 - "$vcl" "${files[@]}" <<'PY'
import json, sys
vcl, files = sys.argv[1], sys.argv[2:]
if not files:
    print(" failed | |", end=""); sys.exit()
measured, model = [], []
for f in files:
    run = json.load(open(f))
    c, m = run["cache"], run["cache_model"]
    measured.append(100 * c["hit"] / max(c["hit"] + c["miss"], 1))
    figure = m if vcl == "catalogue" else m["normalised"]
    model.append(100 * (figure.get("lru_hit_ratio") or figure["cold_bound"]))
mean = lambda xs: sum(xs) / len(xs)
print(f" {mean(measured):.2f}% [{min(measured):.2f}, {max(measured):.2f}] | {mean(model):.2f}% |", end="")
PY
)
    done
    echo "$line"
done
echo
echo "run files: $out"
