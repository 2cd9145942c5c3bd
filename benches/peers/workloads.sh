#!/usr/bin/env bash
# What the workload costs vload: client CPU a request of a target list, a catalogue and a mix
# against the plain URL, closed loop, one client thread, the same build and server, in
# interleaved rounds (plain, list, catalogue, mix, plain, ...). Each workload's CPU a request
# over the plain URL's of the same round; the median and spread of the rounds. The server is
# nginx (one worker, `return 200` for every path), or with `varnish` varnishd with
# vcl/catalogue.vcl in front of `vload origin` (the catalogue's objects cached after the
# first request; the plain URL and the lists' paths too).
#   bash benches/peers/workloads.sh [nginx|varnish] [CONNECTIONS] [SECONDS] [ROUNDS] [VLOAD]
#   defaults: nginx, "10 50 1000", 4 s, 3 rounds, target/release/vload (built if missing).
#   A level rRATE is an open loop at RATE requests a second: below what the server carries,
#   every workload runs in the same regime (one send, one recv, about one wait a request), so
#   the figures show the workload's own cost without the closed loop's swings (a closed loop's
#   CPU a request falls as throughput rises and more responses are read a wait, and the
#   machine moves its throughput by a third between rounds here).
# The list: 10,000 paths (/w/0 .. /w/9999); the catalogue: --catalogue 100000 (zipf 0.8,
# 1-byte objects through varnish, so the transfer is not what is compared); the mix: two
# lists of 5,000 paths, weights 3:1. Each round runs the workloads in another order (a
# rotation), so none always follows another. PIN=1 puts the server on CPU 0 and vload on
# CPU 1 (taskset): steadier figures on a shared machine, the same ratios. RESULTS=FILE keeps
# every round's figures (workload, connections, round, requests, seconds, user, system, RSS).
set -euo pipefail
server=${1:-nginx}; levels=${2:-10 50 1000}; secs=${3:-4}; rounds=${4:-3}
source "$(dirname "$0")/lib.sh"
vload=${5:-$top/target/release/vload}
[[ -x $vload ]] || cargo build --release -q -p vload -p vload-origin --manifest-path "$top/Cargo.toml"
for tool in /usr/bin/time python3; do command -v $tool >/dev/null || { echo "needs $tool" >&2; exit 2; }; done
host_info
echo "vload: $vload ($("$vload" --version)); server: $server; pinned: ${PIN:-0}"
for i in $(seq 0 9999); do echo "/w/$i"; done > "$tmp/list.txt"
for i in $(seq 0 4999); do echo "/a/$i"; done > "$tmp/a.txt"
for i in $(seq 0 4999); do echo "/b/$i"; done > "$tmp/b.txt"
port=18097
on_server=() on_client=()
if [[ ${PIN:-0} == 1 ]]; then on_server=(taskset -c 0); on_client=(taskset -c 1); export SERVER_CPU=0; fi
case $server in
  nginx)
    start_nginx "$port"
    url="http://127.0.0.1:$port/" ;;
  varnish)
    command -v varnishd >/dev/null || { echo "needs varnishd (apt-get install -y varnish)" >&2; exit 2; }
    [[ -x $top/target/release/vload-origin ]] || cargo build --release -q -p vload-origin --manifest-path "$top/Cargo.toml"
    "${on_server[@]}" "$top/target/release/vload-origin" --listen 127.0.0.1:18098 --threads 1 >/dev/null & pids+=($!)
    wait_port 18098
    sed 's/\.port = "8081"/.port = "18098"/' "$top/vcl/catalogue.vcl" > "$tmp/catalogue.vcl"
    # varnishd compiles the VCL and keeps its working directory as its own unprivileged user.
    chmod 755 "$tmp"; chmod 644 "$tmp/catalogue.vcl"
    "${on_server[@]}" varnishd -F -f "$tmp/catalogue.vcl" -a "127.0.0.1:$port" -n "$tmp/varnish" -s malloc,256m \
        -p thread_pools=1 > "$tmp/varnishd.log" 2>&1 & pids+=($!)
    for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "varnishd did not start:" >&2; cat "$tmp/varnishd.log" >&2; exit 1; }
    url="http://127.0.0.1:$port/" ;;
  *) echo "usage: workloads.sh [nginx|varnish] [CONNECTIONS] [SECONDS] [ROUNDS] [VLOAD]" >&2; exit 2 ;;
esac
declare -A extra=(
  [plain]=""
  [list]="--urls $tmp/list.txt"
  [catalogue]="--catalogue 100000 --object-size 1"
  [mix]="--mix $tmp/a.txt:3,$tmp/b.txt:1"
)
# round WORKLOAD CONNECTIONS: one attack, closed loop at CONNECTIONS, or an open loop at RATE
# requests a second for rRATE (up to 100 connections); prints "REQUESTS SECONDS USER_S
# SYSTEM_S RSS_KB".
round() {
    rm -f "$tmp/run.json"
    local load=(-c "$2")
    [[ $2 == r* ]] && load=(-r "${2#r}" --max-connections 100)
    # shellcheck disable=SC2086
    "${on_client[@]}" /usr/bin/time -f "%U %S %M" -o "$tmp/time" "$vload" attack -t 1 "${load[@]}" -d "${secs}s" \
        --no-progress -o "$tmp/run.json" ${extra[$1]} "$url" > /dev/null 2> "$tmp/err" || true
    [[ -s $tmp/run.json ]] || { echo "workloads.sh: $1 at $2 connections wrote no run file:" >&2; cat "$tmp/err" >&2; exit 1; }
    python3 -c "
import json, sys; r = json.load(open(sys.argv[1])); w = r['window']
t = r['totals']
if t['errors'] or not t['status_codes'] or any(not c.startswith('2') for c in t['status_codes']):
    sys.exit('not every request got a 2xx: %s %s' % (t['status_codes'], list(t['errors'])))
print(r['totals']['completed'], w['measured_s'] + w['wait_s'], *open(sys.argv[2]).read().split('\n')[-2].split())" "$tmp/run.json" "$tmp/time"
}
# Warm the cache (varnish) and the page cache, unmeasured.
for w in plain list catalogue mix; do secs=2 round "$w" 50 > /dev/null; done
: > "$tmp/results"
for c in $levels; do
  order=(plain list catalogue mix)
  for r in $(seq "$rounds"); do
    for w in "${order[@]}"; do
      echo "$w $c $r $(round "$w" "$c")" >> "$tmp/results"
    done
    order=("${order[@]:1}" "${order[0]}")
  done
done
[[ -z ${RESULTS:-} ]] || cp "$tmp/results" "$RESULTS"
python3 - "$tmp/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    w, c, r, n, took, u, s, rss = line.split()
    n = max(int(n), 1)
    runs[(w, c, int(r))] = (n / float(took), (float(u) + float(s)) * 1e6 / n, float(u) * 1e6 / n, int(rss))
med = statistics.median
key = lambda c: (c.startswith("r"), int(c.lstrip("r")))
levels = sorted({c for _, c, _ in runs}, key=key); rounds = sorted({r for _, _, r in runs})
shown = lambda c: f"{int(c[1:]):,}/s" if c.startswith("r") else f"{int(c):,}"
print("| connections (or rate) | workload | req/s | CPU µs/req | user µs/req | peak RSS MB | CPU / plain URL's, median [min, max] | user / plain URL's |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for c in levels:
    for w in ("plain", "list", "catalogue", "mix"):
        xs = [runs[(w, c, r)] for r in rounds]
        ratios = [runs[(w, c, r)][1] / runs[("plain", c, r)][1] for r in rounds]
        users = [runs[(w, c, r)][2] / runs[("plain", c, r)][2] for r in rounds]
        print(f"| {shown(c)} | {w} | {med(x[0] for x in xs):,.0f} | {med(x[1] for x in xs):.2f} | "
              f"{med(x[2] for x in xs):.2f} | {med(x[3] for x in xs) / 1024:.1f} | "
              f"{med(ratios):.3f}x [{min(ratios):.3f}, {max(ratios):.3f}] | {med(users):.3f}x |")
PY
