#!/usr/bin/env bash
# Two vload builds against each other, closed (or open) loop on nginx (one worker, 11-byte
# body), one client thread each, interleaved rounds: req/s, CPU, user and system µs a
# request, peak RSS.
# For measuring one change: build the commit before into another target directory, e.g.
#   git worktree add /tmp/before HEAD~1 && (cd /tmp/before && cargo build --release -p vload)
#   bash benches/peers/versions.sh /tmp/before/target/release/vload target/release/vload "10 50 1000" 6
#   bash benches/peers/versions.sh BEFORE AFTER [CONNECTIONS] [ROUNDS]   (defaults "50", 6; 4 s each)
# A level written rRATE is the open loop at RATE requests a second instead, e.g. "r20000 r60000".
set -euo pipefail
before=$(realpath "${1:?the binary before}"); after=$(realpath "${2:?the binary after}")
levels=${3:-50}; rounds=${4:-6}
source "$(dirname "$0")/lib.sh"
for tool in nginx /usr/bin/time; do command -v $tool >/dev/null || { echo "needs $tool (see run.sh)" >&2; exit 2; }; done
host_info
echo "before: $1, after: $2"
port=18099
start_nginx "$port"
: > "$tmp/results"
for c in $levels; do
  for _ in $(seq "$rounds"); do
    for side in before after; do
      bin=$before; [[ $side == after ]] && bin=$after
      out=$(vload_round "$bin" "$c" 4 "http://127.0.0.1:$port/")
      echo "$side $c $out" >> "$tmp/results"
    done
  done
done
python3 - "$tmp/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    side, c, n, took, u, s, m = line.split()
    n = int(n)
    rows.setdefault((c, side), []).append(
        (n / float(took), (float(u) + float(s)) * 1e6 / n, float(u) * 1e6 / n, float(s) * 1e6 / n, int(m) / 1024))
print("| load | build | req/s | CPU µs/req | user | system | change in CPU | peak RSS MB |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
# Closed-loop levels by connections, then open-loop rates (rRATE) by rate.
order = lambda c: (c.startswith("r"), int(c.lstrip("r")))
name = lambda c: f"{int(c[1:]):,}/s open" if c.startswith("r") else f"{int(c):,} connections"
for c in sorted({c for c, _ in rows}, key=order):
    base = statistics.median(r[1] for r in rows[(c, "before")])
    for side in ("before", "after"):
        rs = rows[(c, side)]
        rps, cpu, user, system = (statistics.median(r[k] for r in rs) for k in range(4))
        print(f"| {name(c)} | {side} | {rps:,.0f} | {cpu:.2f} | {user:.2f} | {system:.2f} | {cpu / base - 1:+.0%} | {max(r[4] for r in rs):.1f} |")
PY
