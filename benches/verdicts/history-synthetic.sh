#!/usr/bin/env bash
# How often `vload history` finds a step at its commit, and how often it cries wolf, on
# seeded synthetic histories (#47): 100 commits x 3 runs, p50 steps of +3%, +5% and +10% at
# c025, c050, c075; the runs' noise drawn from this machine's measured spread
# (benches/verdicts/history-noise.txt, written by history-real.sh), then normal noise twice
# as wide. Beside it, the same series judged Perfherder's way (t-test against the previous
# commit) and github-action-benchmark's (one result against the last, above a ratio).
#
# Usage: benches/verdicts/history-synthetic.sh [HISTORIES] [SEED]   (default 100, 47)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
histories=${1:-100}
seed=${2:-47}
cargo build --release -q -p vload-history --example synthetic --manifest-path "$top/Cargo.toml"
bin="$top/target/release/examples/synthetic"
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(uname -r)"
"$bin" "$top/benches/verdicts/history-noise.txt" "$histories" "$seed"
echo
"$bin" 0.02 "$histories" "$seed"
