#!/usr/bin/env bash
# Why nginx serves vload fewer HTTP/2-over-TLS requests a second than h2load (#36, item 3),
# shown by removing the causes one at a time. nginx (one worker, TLS 1.3, h2) pinned to CPU 0,
# the client pinned to CPU 1, -c 4 with 8 streams each, interleaved rounds of:
#   h2load          the peer
#   vload           vload as it is
#   vload spin      kept awake for 50 µs after each response while requests are in flight
#   vload batch     new requests held back until 8 are queued on the connection, one write
#   vload both      both
# "spin" and "batch" are not vload: they come from benches/peers/h2-cause.patch, applied to
# the commit it was made on in a scratch worktree (built there; the first run takes a few
# minutes). Per client: req/s, the server's CPU a request (/proc/PID/schedstat), the client's
# own CPU a request, its writes a request (perf's syscall count) and how often it slept.
#   bash benches/peers/h2-cause.sh [ROUNDS] [SECONDS]     defaults: 3 rounds, 4 s
set -euo pipefail
rounds=${1:-3}; secs=${2:-4}
base=968cd5c   # the commit h2-cause.patch applies to
source "$(dirname "$0")/lib.sh"
for tool in h2load nginx openssl taskset perf git /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install -y nghttp2-client nginx openssl util-linux linux-perf git time)" >&2; exit 2; }
done
[[ $(nproc) -ge 2 ]] || { echo "needs two CPUs (one for the server, one for the client)" >&2; exit 2; }
perf stat -e syscalls:sys_enter_write true >/dev/null 2>&1 \
    || { echo "h2-cause.sh: perf cannot count syscalls here (needs root or kernel.perf_event_paranoid <= -1)" >&2; exit 2; }
tree=$tmp/experiment
git -C "$top" worktree add -q --detach "$tree" "$base"
trap 'git -C "$top" worktree remove --force "$tree" 2>/dev/null || true; cleanup' EXIT
git -C "$tree" apply "$top/benches/peers/h2-cause.patch"
cargo build --release -q -p vload --manifest-path "$top/Cargo.toml"
CARGO_TARGET_DIR=${H2_CAUSE_TARGET:-$top/target/h2-cause} \
    cargo build --release -q -p vload --manifest-path "$tree/Cargo.toml"
experiment=${H2_CAUSE_TARGET:-$top/target/h2-cause}/release/vload
host_info
start_nginx_tls 18123
master=${pids[-1]}
worker=$({ cat "/proc/$master/task/$master/children" 2>/dev/null || pgrep -P "$master"; } | awk '{print $1; exit}')
[[ -n $worker ]] || { echo "h2-cause.sh: found no nginx worker under PID $master" >&2; exit 1; }
taskset -pc 0 "$master" >/dev/null; taskset -pc 0 "$worker" >/dev/null
url=https://127.0.0.1:18123/
writes=syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg
cpu_ns() { awk '{print $1}' "/proc/$worker/schedstat"; }
measure() {   # measure NAME COMMAND...: one run, its line appended to the results
    local name=$1 t0 n w; shift
    t0=$(cpu_ns)
    perf stat -x, -e "$writes" -o "$tmp/stat" /usr/bin/time -f "%U %S %w" -o "$tmp/time" \
        taskset -c 1 "$@" > "$tmp/out" 2>&1 || true
    if [[ $name == h2load ]]; then
        n=$(awk '/^requests:/ {print $8}' "$tmp/out")
    else
        [[ -s $tmp/run.json ]] || { echo "h2-cause.sh: $name wrote no run file" >&2; exit 1; }
        n=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['totals']['completed'])" "$tmp/run.json")
        rm -f "$tmp/run.json"
    fi
    w=$(awk -F, '!/^#/ && NF > 2 && $1 ~ /^[0-9]+$/ {s += $1} END {print s + 0}' "$tmp/stat")
    echo "$name ${n:-0} $(( $(cpu_ns) - t0 )) $w $(cat "$tmp/time")" >> "$tmp/results"
}
vload_args=(attack -t 1 --http2 -c 4 --streams 8 -d "${secs}s" --timeout 1s --insecure --no-progress -o "$tmp/run.json" "$url")
: > "$tmp/results"
for round in $(seq "$rounds"); do
    measure h2load h2load -t1 -c4 -m8 -D"$secs" "$url"
    measure vload "$top/target/release/vload" "${vload_args[@]}"
    measure "vload_spin" env VLOAD_SPIN_US=50 "$experiment" "${vload_args[@]}"
    measure "vload_batch" env VLOAD_BATCH=8 "$experiment" "${vload_args[@]}"
    measure "vload_both" env VLOAD_SPIN_US=50 VLOAD_BATCH=8 "$experiment" "${vload_args[@]}"
done
python3 - "$tmp/results" "$secs" <<'PY'
import statistics, sys
secs = float(sys.argv[2])
rows = {}
for line in open(sys.argv[1]):
    name, n, ns, w, u, s, woke = line.split()
    n = max(int(n), 1)
    rows.setdefault(name, []).append((n / secs, int(ns) / 1e3 / n, (float(u) + float(s)) * 1e6 / n,
                                      int(w) / n, int(woke) * 1000 / n))
med = statistics.median
base = med(x[0] for x in rows["h2load"])
print("| client | req/s | x h2load (runs) | server CPU µs/req (runs) | client CPU µs/req | client writes / req | client sleeps / 1,000 req |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for name in ("h2load", "vload", "vload_spin", "vload_batch", "vload_both"):
    xs = rows[name]
    r, sv, c, w, z = (med(x[k] for x in xs) for k in range(5))
    lo, hi = min(x[0] for x in xs) / base, max(x[0] for x in xs) / base
    slo, shi = min(x[1] for x in xs), max(x[1] for x in xs)
    print(f"| {name.replace('_', ' ')} | {r:,.0f} | {r / base:.2f}x ({lo:.2f}-{hi:.2f}) | {sv:.2f} ({slo:.2f}-{shi:.2f}) "
          f"| {c:.2f} | {w:.3f} | {z:.1f} |")
PY
