#!/usr/bin/env bash
# A real history (#47): vload's origin with --delay 2ms stands for commits c01-c10, one with
# --delay 2.2ms for c11-c20 (+10% service time), 3 runs a commit, taken in rounds (c01..c20,
# three times) so that a drift of the machine is spread over every commit. One run (round
# 2, c15) has `stress-ng --cpu 4` beside it. `vload history` must name c11 with p50 about
# +10%, keep the busy run out of the statistics, and find nothing else.
#
# It also writes the relative spread of the runs' p50 around their commit's median to
# $NOISE_OUT (default benches/verdicts/history-noise.txt): the noise of this machine that
# benches/verdicts/history-synthetic.sh draws from.
#
# Usage: benches/verdicts/history-real.sh [SECONDS_A_RUN]   (default 3)
set -euo pipefail
source "$(dirname "$0")/../peers/lib.sh"
seconds=${1:-3}
noise_out=${NOISE_OUT:-$top/benches/verdicts/history-noise.txt}
cargo build --release -q -p vload -p vload-origin --manifest-path "$top/Cargo.toml"
vload="$top/target/release/vload"
command -v stress-ng >/dev/null || { echo "needs stress-ng (apt-get install -y stress-ng)" >&2; exit 2; }
host_info
start_origin 18801 --delay 2ms
start_origin 18802 --delay 2.2ms
export VLOAD_HISTORY="$tmp/history.db"
for round in 1 2 3; do
    for i in $(seq 1 20); do
        commit=$(printf 'c%02d' "$i")
        port=$((i <= 10 ? 18801 : 18802))
        stress=
        if [[ $round == 2 && $i == 15 ]]; then
            stress-ng --cpu 4 --timeout 60s >/dev/null 2>&1 & stress=$!; pids+=("$stress")
            sleep 2
        fi
        "$vload" attack -r 500 -c 10 -d "${seconds}s" --warmup 1s --label real-history \
            --commit "$commit" --branch main --history --quiet --no-progress \
            -o "$tmp/$commit-$round.json" "http://127.0.0.1:$port/" 2>&1 | grep 'history:' || true
        if [[ -n $stress ]]; then kill "$stress" 2>/dev/null || true; wait "$stress" 2>/dev/null || true; fi
    done
done
"$vload" history show --last 20
status=0
"$vload" history check --metric p50 || status=$?
echo "history check (newest commit c20, p50): exit $status"
"$vload" history plot -o "$top/docs/history-real.html" >/dev/null 2>&1 || true
python3 - "$tmp" "$noise_out" <<'PY'
import glob, json, os, sqlite3, statistics, sys
tmp, out = sys.argv[1], sys.argv[2]
# The p50 history keeps, read back from its database; the arrivals check from the run files.
db = sqlite3.connect(os.environ["VLOAD_HISTORY"])
# Runs kept out only for their arrivals check are read too, to weigh that check: the noise
# file holds the runs history counts.
rows = db.execute(
    "select r.run_id, r.commit_id, m.value, r.excluded from runs r join metrics m on m.run_id = r.run_id"
    " where m.metric = 'p50' and (r.excluded is null or r.excluded like '%checks: arrivals')").fetchall()
arrivals = {}
for path in glob.glob(os.path.join(tmp, "c*-*.json")):
    run = json.load(open(path))
    checks = {c["name"]: c["verdict"] for c in run.get("checks", [])}
    arrivals[run["run_id"]] = checks.get("arrivals", "unknown")
per = {}
for run_id, commit, value, excluded in rows:
    per.setdefault(commit, []).append((run_id, value, excluded))
devs, by_check = [], {}
for commit, values in per.items():
    counted = [v for _, v, excluded in values if excluded is None]
    if not counted:
        continue
    med = statistics.median(counted)
    for run_id, v, excluded in values:
        d = v / med - 1
        if excluded is None:
            devs.append(d)
        by_check.setdefault(arrivals.get(run_id, "unknown"), []).append(abs(d))
with open(out, "w") as f:
    f.write("# relative deviation of a run's p50 from its commit's median, benches/verdicts/history-real.sh\n")
    for d in sorted(devs):
        f.write(f"{d:.6f}\n")
sd = statistics.pstdev(devs)
print(f"noise: {len(devs)} runs, sd of p50 around its commit's median {sd*100:.2f}% -> {out}")
for verdict, ds in sorted(by_check.items()):
    print(f"  runs whose arrivals check says {verdict}: {len(ds)}, mean |p50 - median of the commit's counted runs| {statistics.mean(ds)*100:.2f}%, max {max(ds)*100:.2f}%")
PY
