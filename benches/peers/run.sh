#!/usr/bin/env bash
# The peer comparison harness: vload against wrk, h2load, oha, vegeta and hey on the same
# target, with the same connections and duration, interleaved, several rounds. Prints one
# table per target: tool, median req/s, client CPU µs per request (user+sys from
# /usr/bin/time), peak RSS, and req/s as a ratio to vload's.
#
#   bash benches/peers/run.sh [ROUNDS] [SECONDS] [CONNECTIONS] [TARGETS] [TOOLS]
#   defaults: 3 rounds, 5 s, 50 connections, "nginx origin", "wrk h2load oha vegeta hey vload"
#
# Every tool runs one client thread where it has the option (wrk -t1, h2load -t1, vload -t 1,
# hey and vegeta by GOMAXPROCS=1, oha --worker-threads 1), so that
# on a small machine the target gets the other cores. Missing tools are installed:
# wrk and h2load from Debian (apt-get), oha with cargo install, vegeta and hey with go install.
# SKIP_INSTALL=1 runs only what is found. Targets: nginx (one worker, a fixed 11-byte body,
# access log off) and vload-origin (one thread), both on 127.0.0.1.
set -euo pipefail
rounds=${1:-3}; secs=${2:-5}; conns=${3:-50}
targets=${4:-nginx origin}; tools=${5:-wrk h2load oha vegeta hey vload}
source "$(dirname "$0")/lib.sh"
export PATH="$PATH:$HOME/go/bin:$HOME/.cargo/bin"

have() { command -v "$1" >/dev/null 2>&1; }
install() { # tool
    [[ ${SKIP_INSTALL:-0} = 1 ]] && return 1
    local sudo=; [[ $(id -u) -eq 0 ]] || sudo=sudo
    case $1 in
        wrk) $sudo apt-get install -y -qq wrk >/dev/null ;;
        h2load) $sudo apt-get install -y -qq nghttp2-client >/dev/null ;;
        nginx) $sudo apt-get install -y -qq nginx-light >/dev/null || $sudo apt-get install -y -qq nginx >/dev/null ;;
        time) $sudo apt-get install -y -qq time >/dev/null ;;
        oha) cargo install --locked --quiet oha ;;
        vegeta) go install github.com/tsenart/vegeta/v12@v12.12.0 2>/dev/null || (
                    # Some proxies refuse the module list that `go install` reads; build it
                    # from a throwaway module instead.
                    dir=$(mktemp -d); cd "$dir" && go mod init vegeta-build >/dev/null 2>&1 &&
                    go get github.com/tsenart/vegeta/v12@v12.12.0 >/dev/null 2>&1 &&
                    mkdir -p "$HOME/go/bin" && go build -o "$HOME/go/bin/vegeta" github.com/tsenart/vegeta/v12
                    rc=$?; rm -rf "$dir"; exit $rc) ;;
        hey) go install github.com/rakyll/hey@latest ;;
    esac
}
need() { have "$1" || install "$1" >&2 || true; have "$1"; }

need time || { echo "needs /usr/bin/time" >&2; exit 2; }
available=()
for tool in $tools; do
    if [[ $tool = vload ]] || need "$tool"; then available+=("$tool"); else echo "skipping $tool: not installed" >&2; fi
done
cargo build --release -q -p vload -p vload-origin --manifest-path "$top/Cargo.toml"
host_info


start_target() { # name port
    if [[ $1 = nginx ]]; then need nginx || true; start_nginx "$2"; else start_origin "$2"; fi
}

# One measurement: prints "tool req_per_s requests user sys rss_kb".
measure() { # tool url
    local tool=$1 url=$2 out=$tmp/out reqs rps
    local t=(/usr/bin/time -f "%U %S %M" -o "$tmp/time")
    case $tool in
        wrk) "${t[@]}" wrk -t1 -c"$conns" -d"${secs}s" "$url" >"$out" 2>&1 || true
             reqs=$(awk '/requests in/ {print $1}' "$out"); rps=$(awk '/Requests\/sec/ {print $2}' "$out") ;;
        h2load) "${t[@]}" h2load --h1 -t1 -c"$conns" -D"$secs" "$url" >"$out" 2>&1 || true
             reqs=$(awk '/^requests:/ {print $8}' "$out"); rps=$(awk '/^finished in/ {print $4}' "$out") ;;
        oha) "${t[@]}" oha --no-tui --output-format json --worker-threads 1 -c "$conns" -z "${secs}s" "$url" >"$out" 2>/dev/null || true
             read -r reqs rps < <(python3 -c "
import json; d=json.load(open('$out')); s=d['summary']
n=sum(d.get('statusCodeDistribution',{}).values()); print(n, s['requestsPerSec'])") ;;
        vegeta) echo "GET $url" | GOMAXPROCS=1 "${t[@]}" vegeta attack -rate=0 -max-workers="$conns" \
                    -workers="$conns" -duration="${secs}s" >"$tmp/vegeta.bin" 2>/dev/null || true
             vegeta report -type=json "$tmp/vegeta.bin" >"$out"
             read -r reqs rps < <(python3 -c "
import json; d=json.load(open('$out')); print(d['requests'], d['throughput'])") ;;
        hey) GOMAXPROCS=1 "${t[@]}" hey -z "${secs}s" -c "$conns" "$url" >"$out" 2>&1 || true
             reqs=$(awk '/\[[0-9]+\][[:space:]]+[0-9]+ responses/ {s+=$2} END {print s+0}' "$out")
             rps=$(awk '/Requests\/sec/ {print $2}' "$out") ;;
        vload) "${t[@]}" "$top/target/release/vload" attack -t 1 -c "$conns" -d "${secs}s" \
                    --no-progress -o "$tmp/run.json" "$url" >/dev/null 2>&1 || true
             read -r reqs rps < <(python3 -c "
import json; r=json.load(open('$tmp/run.json')); w=r['window']; n=r['totals']['completed']
print(n, n/(w['measured_s']+w['wait_s']))") ;;
    esac
    read -r user sys rss < "$tmp/time"
    echo "$tool ${rps:-0} ${reqs:-0} $user $sys $rss"
}

port=18090
for target in $targets; do
    port=$((port + 1))
    start_target "$target" "$port"
    url="http://127.0.0.1:$port/"
    : > "$tmp/results"
    for _ in $(seq "$rounds"); do
        for tool in "${available[@]}"; do
            measure "$tool" "$url" >> "$tmp/results"
            sleep 1
        done
    done
    kill "${pids[-1]}" 2>/dev/null || true
    wait "${pids[-1]}" 2>/dev/null || true
    echo "target: $target ($url), $conns connections, $secs s, $rounds rounds interleaved"
    python3 - "$tmp/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tool, rps, reqs, user, sys_, rss = line.split()
    rows.setdefault(tool, []).append((float(rps), int(float(reqs)), float(user) + float(sys_), int(rss)))
def med(xs): return statistics.median(xs)
base = med([r[0] for r in rows.get("vload", [(1, 1, 1, 1)])])
print("| tool | req/s (median) | client CPU µs/request | peak RSS MB | req/s vs vload |")
print("| --- | ---: | ---: | ---: | ---: |")
for tool, rs in sorted(rows.items(), key=lambda kv: -med([r[0] for r in kv[1]])):
    rps = med([r[0] for r in rs])
    cpu = med([c * 1e6 / n for (_, n, c, _) in rs if n > 0] or [float("nan")])
    rss = max(r[3] for r in rs) / 1024
    print(f"| {tool} | {rps:,.0f} | {cpu:.2f} | {rss:.1f} | {rps / base:.2f}x |")
PY
    echo
done
