#!/usr/bin/env bash
# HTTP/3: vload against oha (built with its http3 feature from crates.io) on the same server,
# same connections and streams, one client thread each, interleaved rounds (vload, oha, then
# oha, vload, ...); req/s and client CPU a request from /usr/bin/time. The server is
# `vload origin --http3` on CPU 0 (and Caddy from Debian when installed), the clients on CPU 1.
#   bash benches/peers/http3.sh [LEVELS] [SECONDS] [ROUNDS]
#   defaults: "4x4 16x1 1x1" (connections x streams), 5 s, 5 rounds.
# OHA=/path/to/oha skips the build (cargo install oha --features http3, into target/peers).
# BASE=/path/to/another/vload adds that build to every round (a build before a change), and
# prints this build's CPU a request over it.
set -euo pipefail
levels=${1:-4x4 16x1 1x1}; secs=${2:-5}; rounds=${3:-5}
source "$(dirname "$0")/lib.sh"
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install -y time)" >&2; exit 2; }
cargo build --release -q --manifest-path "$top/Cargo.toml" -p vload
vload=$top/target/release/vload
oha=${OHA:-$top/target/peers/oha-h3/bin/oha}
if [[ ! -x $oha ]]; then
    cargo install -q oha --features http3 --locked --root "$top/target/peers/oha-h3"
fi
host_info
echo "oha: $("$oha" --version) (features: http3), one worker thread"

# origin PORT: vload's own HTTP/3 origin, one thread, on CPU 0.
port=18443
taskset -c 0 "$vload" origin --http3 --threads 1 --listen "127.0.0.1:$port" > "$tmp/origin.log" & pids+=($!)
wait_port "$port"
targets=("origin https://127.0.0.1:$port/")
if command -v caddy >/dev/null; then
    cport=18444
    cat > "$tmp/Caddyfile" <<CADDY
{
    admin off
    auto_https disable_redirects
    skip_install_trust
    storage file_system $tmp/caddy
    log {
        level ERROR
    }
}
https://localhost:$cport {
    tls internal
    respond "Hello World"
}
CADDY
    HOME=$tmp taskset -c 0 caddy run --config "$tmp/Caddyfile" --adapter caddyfile > "$tmp/caddy.log" 2>&1 & pids+=($!)
    wait_port "$cport"
    # Caddy answers QUIC only with a server name (SNI), which an IP URL does not send.
    targets+=("caddy https://localhost:$cport/")
fi

# vload_h3 C S URL: "REQUESTS SECONDS CPU_S" (base_h3: the same with $BASE)
base_h3() { vload=$BASE vload_h3 "$@"; }
vload_h3() {
    taskset -c 1 /usr/bin/time -f "%U %S" -o "$tmp/time" "$vload" attack --http3 --insecure \
        --threads 1 -c "$1" --streams "$2" -d "${secs}s" --no-progress --quiet -o "$tmp/run.json" "$3"
    python3 - "$tmp/run.json" "$tmp/time" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); u, s = map(float, open(sys.argv[2]).read().split()[-2:])
ok = sum(r["totals"]["status_codes"].values())
print(ok, r["window"]["measured_s"] + r["window"]["wait_s"], u + s)
PY
}

# oha_h3 C S URL: "REQUESTS SECONDS CPU_S"
oha_h3() {
    taskset -c 1 /usr/bin/time -f "%U %S" -o "$tmp/time" "$oha" --http-version 3 --insecure \
        --worker-threads 1 -c "$1" -p "$2" -z "${secs}s" --no-tui --output-format json "$3" > "$tmp/oha.json"
    python3 - "$tmp/oha.json" "$tmp/time" "$secs" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); u, s = map(float, open(sys.argv[2]).read().split()[-2:])
ok = sum(d["statusCodeDistribution"].values())
# oha waits for its connections to close after -z (against Caddy, its 30 s idle timeout):
# its total then counts that wait; the window asked for is the fair divisor.
print(ok, min(d["summary"]["total"], float(sys.argv[3])), u + s)
PY
}

: > "$tmp/results"
for target in "${targets[@]}"; do
    read -r name url <<< "$target"
    for level in $levels; do
        c=${level%x*}; s=${level#*x}
        for round in $(seq "$rounds"); do
            order=(vload oha); (( round % 2 == 0 )) && order=(oha vload)
            [[ -n ${BASE-} ]] && order+=(base)
            for tool in "${order[@]}"; do
                read -r n took cpu < <("${tool}_h3" "$c" "$s" "$url")
                echo "$name $level $round $tool $n $took $cpu" >> "$tmp/results"
            done
        done
    done
done

python3 - "$tmp/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, level, r, tool, n, took, cpu = line.split()
    n = max(int(n), 1)
    runs[(name, level, int(r), tool)] = (n / float(took), float(cpu) * 1e6 / n)
med = statistics.median
print("| server | connections x streams | tool | req/s | CPU µs/req | vload / oha req/s | vload / oha CPU a request |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
for name, level in sorted({(k[0], k[1]) for k in runs}, key=lambda k: (k[0], k[1])):
    rounds = sorted({k[2] for k in runs if k[:2] == (name, level)})
    for tool in ("vload", "oha"):
        xs = [runs[(name, level, r, tool)] for r in rounds]
        rate = [runs[(name, level, r, "vload")][0] / runs[(name, level, r, "oha")][0] for r in rounds]
        cpu = [runs[(name, level, r, "vload")][1] / runs[(name, level, r, "oha")][1] for r in rounds]
        ratios = ("", "") if tool == "oha" else (
            f"{med(rate):.2f}x [{min(rate):.2f}, {max(rate):.2f}]",
            f"{med(cpu):.2f}x [{min(cpu):.2f}, {max(cpu):.2f}]")
        print(f"| {name} | {level} | {tool} | {med(x[0] for x in xs):,.0f} | {med(x[1] for x in xs):.1f} | {ratios[0]} | {ratios[1]} |")
    if any(k[3] == "base" for k in runs):
        xs = [runs[(name, level, r, "base")] for r in rounds]
        cpu = [runs[(name, level, r, "vload")][1] / runs[(name, level, r, "base")][1] for r in rounds]
        print(f"| {name} | {level} | base | {med(x[0] for x in xs):,.0f} | {med(x[1] for x in xs):.1f} | "
              f"vload / base CPU a request: | {med(cpu):.2f}x [{min(cpu):.2f}, {max(cpu):.2f}] |")
PY
