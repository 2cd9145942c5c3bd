#!/usr/bin/env bash
# Peak RSS of two vload builds holding CONNECTIONS connections to nginx, closed loop, one
# client thread, interleaved rounds; the median of each, and per connection above the
# 10-connection run of the same build.
#   bash benches/peers/connections-memory.sh A B [CONNECTIONS] [SECONDS] [ROUNDS]
#   defaults: 10000 connections, 3 s, 3 rounds. A and B are vload binaries.
set -euo pipefail
a=$1; b=$2; conns=${3:-10000}; secs=${4:-3}; rounds=${5:-3}
source "$(dirname "$0")/lib.sh"
host_info
echo "A: $a; B: $b; $conns connections, $secs s, $rounds rounds"
start_nginx 18131
rss() { # BINARY CONNECTIONS: peak RSS in kB and requests completed
    /usr/bin/time -f "%M" -o "$tmp/time" "$1" attack -t 1 -c "$2" -d "${secs}s" --no-progress \
        -o "$tmp/run.json" http://127.0.0.1:18131/ > /dev/null 2>&1 || true
    echo "$(tail -1 "$tmp/time") $(python3 -c "import json; print(json.load(open('$tmp/run.json'))['totals']['completed'])")"
}
: > "$tmp/results"
for _ in $(seq "$rounds"); do
    for build in A B; do
        bin=$a; [[ $build == B ]] && bin=$b
        for c in 10 "$conns"; do echo "$build $c $(rss "$bin" "$c")" >> "$tmp/results"; done
    done
done
python3 - "$tmp/results" "$conns" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
big = sys.argv[2]
print("| build | connections | peak RSS MB, median [min, max] | KB a connection above 10 | requests |")
print("| --- | ---: | ---: | ---: | ---: |")
for build in "AB":
    for c in ("10", big):
        r = [int(x[2]) for x in rows if x[0] == build and x[1] == c]
        n = statistics.median(int(x[3]) for x in rows if x[0] == build and x[1] == c)
        base = statistics.median(int(x[2]) for x in rows if x[0] == build and x[1] == "10")
        per = (statistics.median(r) - base) / (int(c) - 10) if c != "10" else 0
        print(f"| {build} | {int(c):,} | {statistics.median(r)/1024:.1f} [{min(r)/1024:.1f}, {max(r)/1024:.1f}] | {per:.2f} | {n:,.0f} |")
PY
