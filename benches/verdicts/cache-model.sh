#!/usr/bin/env bash
# The cache model against real varnishd: one --catalogue attack per malloc size through
# vcl/catalogue.vcl, then the table of docs/caching.md (vload's and Varnish's hit ratio beside
# an LRU of the same bytes and of as many objects as Varnish held).
#
# Usage: benches/verdicts/cache-model.sh ['4m 8m 16m'] [CATALOGUE FLAGS...]
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
sizes=${1:-4m 8m 16m}
shift || true
flags=("$@")
[[ ${#flags[@]} -gt 0 ]] || flags=(--catalogue 5000 --popularity zipf:0.8 --object-size 4k)
cargo build --release -q -p vload --manifest-path "$top/Cargo.toml"
export VLOAD=$top/target/release/vload
out=$(mktemp -d /tmp/vload-cache-model-XXXXXX)
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $(varnishd -V 2>&1 | head -1)"
echo "vload attack ${flags[*]} -c 4 --warmup 10s -d 10s --cache-size SIZE (malloc SIZE)"
for size in $sizes; do
    VARNISH_MALLOC=$size VARNISH_LISTEN=127.0.0.1:0 bash "$top/vcl/run.sh" "$top/vcl/catalogue.vcl" \
        sh -c "\"\$VLOAD\" attack ${flags[*]} --cache-size $size -c 4 --warmup 10s -d 10s --no-progress --quiet --server-stats varnish:\$VARNISH_NAME -o $out/run-$size.json \$VARNISH_URL" \
        >/dev/null
done
files=()
for size in $sizes; do files+=("$out/run-$size.json"); done
cargo run -q --release -p vload-benches --example cache_table --manifest-path "$top/Cargo.toml" -- "${files[@]}"
