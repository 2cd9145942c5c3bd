#!/usr/bin/env bash
# How often vload's client-health word names the true cause: each scenario, whose cause is
# known by construction, run N times, and the confusion matrix of true cause against the
# word the run file gives.
#
#   quiet        ok             -r 1000 against the origin, nothing else running
#   saturated    client-bound   one thread of hyper's client asked for 400,000/s
#   machine      machine-busy   -r 2000 beside stress-ng --cpu 4 (other processes take the
#                               cores; vload's threads are idle most of the time, so the
#                               word must never be client-bound; ok is right when the load
#                               still went out on time)
#   cap          conn.-capped   -r 1000 on at most 4 connections to a 20 ms server (200/s)
#   slow-accept  server-limited -r 200 to a server whose accept queue is one deep and that
#                               accepts a connection every 100 ms
#
# Usage: benches/verdicts/health.sh [RUNS]   (default 3)
set -euo pipefail
source "$(dirname "$0")/../peers/lib.sh"
runs=${1:-3}
cargo build --release -q -p vload -p vload-origin --manifest-path "$top/Cargo.toml"
vload="$top/target/release/vload"
command -v stress-ng >/dev/null || { echo "needs stress-ng (apt-get install -y stress-ng)" >&2; exit 2; }

slow_accept() {
    python3 - "$1" <<'PY' & pids+=($!)
import socket, sys, threading, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
def serve(c):
    try:
        while c.recv(4096):
            time.sleep(0.05)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    except OSError:
        pass
end = time.time() + 600
while time.time() < end:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
    time.sleep(0.1)
PY
    wait_port "$1"
}

start_origin 18801 --threads 1
start_origin 18802 --threads 1 --delay 20ms
slow_accept 18803

attack() { # NAME ARGS...: one run, its word and its busiest thread's share on stdout
    local name=$1; shift
    local out="$tmp/$name-$RANDOM.json"
    "$vload" attack "$@" --no-progress -o "$out" >/dev/null 2>&1 || true
    python3 - "$out" <<'PY'
import json, sys
try:
    h = json.load(open(sys.argv[1]))["client_health"]
    print(h["verdict"].replace("_", "-"), f'{h["max_thread_busy"]:.2f}', f'{h.get("max_thread_waiting") or 0:.2f}')
except Exception:
    print("no-run-file 0 0")
PY
}

host_info
declare -A matrix
scenarios=(quiet saturated machine cap slow-accept)
words=(ok client-bound machine-busy connection-capped server-limited)
for run in $(seq "$runs"); do
    for s in "${scenarios[@]}"; do
        case $s in
            quiet) r=$(attack $s -r 1000 -d 5s -t 1 http://127.0.0.1:18801/) ;;
            saturated) r=$(attack $s -r 400k -d 5s -t 1 --max-connections 50 --http1-client hyper http://127.0.0.1:18801/) ;;
            machine)
                stress-ng --cpu 4 --timeout 9s >/dev/null 2>&1 & stress=$!
                sleep 1
                r=$(attack $s -r 2000 -d 6s -t 1 http://127.0.0.1:18801/)
                wait "$stress" || true ;;
            cap) r=$(attack $s -r 1000 -d 5s -t 1 --max-connections 4 http://127.0.0.1:18802/) ;;
            slow-accept) r=$(attack $s -r 200 -d 5s -t 1 --timeout 3s http://127.0.0.1:18803/) ;;
        esac
        read -r word busy waiting <<<"$r"
        echo "run $run $s: $word (busiest thread on a CPU $busy, waiting for one $waiting)"
        matrix[$s,$word]=$(( ${matrix[$s,$word]:-0} + 1 ))
    done
done
echo
printf '%-12s' "true cause"
for w in "${words[@]}"; do printf ' %18s' "$w"; done
printf ' %8s\n' "other"
for s in "${scenarios[@]}"; do
    printf '%-12s' "$s"
    other=$runs
    for w in "${words[@]}"; do
        n=${matrix[$s,$w]:-0}; other=$((other - n))
        printf ' %18s' "$n"
    done
    printf ' %8s\n' "$other"
done
