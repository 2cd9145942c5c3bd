#!/usr/bin/env bash
# HTTP/2 against HTTP/3 over a lossy, delayed link: Caddy (h2 over TLS and h3 on one port) in
# front of vload origin, both in a network namespace reached through a veth pair whose two
# ends each delay by half the round trip and drop a share of the packets (tc netem), or, on a
# kernel without netem, through benches/netpath.py (two TUN devices joined in user space with
# the same delay and loss). The same open-loop workload (a 50 KB object at a fixed rate) over
# each protocol, for each loss rate; prints latency percentiles, goodput and errors, one row
# each.
#   sudo bash benches/http3-netem.sh [RTT_MS] [LOSSES] [RATE] [SECONDS]
#   defaults: 20 ms, "0 1 5" (percent), 100/s, 20 s. Needs root (ip netns, tc), caddy.
set -euo pipefail
rtt=${1:-20}; losses=${2:-0 1 5}; rate=${3:-100}; secs=${4:-20}
top=$(cd "$(dirname "$0")/.." && pwd)
for tool in ip tc caddy python3; do
    command -v $tool >/dev/null || { echo "needs $tool (apt-get install -y iproute2 caddy)" >&2; exit 2; }
done
[[ $(id -u) == 0 ]] || { echo "needs root: ip netns and tc" >&2; exit 2; }
cargo build --release -q --manifest-path "$top/Cargo.toml" -p vload
vload=$top/target/release/vload
ns=vload-netem-$$; host_if=vnh$$; ns_if=vns$$
tmp=$(mktemp -d); chmod 755 "$tmp"; pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    ip link del "$host_if" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add "$ns"
netem=1
# Probed on the new namespace's loopback, never the host's.
ip netns exec "$ns" tc qdisc add dev lo root netem delay 0ms 2>/dev/null || netem=
if [[ -n $netem ]]; then
    ip link add "$host_if" type veth peer name "$ns_if"
    ip link set "$ns_if" netns "$ns"
    ip addr add 10.77.0.1/24 dev "$host_if"; ip link set "$host_if" up
    ip netns exec "$ns" ip addr add 10.77.0.2/24 dev "$ns_if"
    ip netns exec "$ns" ip link set "$ns_if" up
else
    # No netem in this kernel: the path is benches/netpath.py, two TUN devices joined in user
    # space with the delay and the loss (read from $tmp/loss, a fraction).
    echo 0 > "$tmp/loss"
    mkfifo "$tmp/path.out"
    python3 "$top/benches/netpath.py" "$ns" "$host_if" "$ns_if" 10.77.0.1 10.77.0.2 "$rtt" \
        "$tmp/loss" > "$tmp/path.out" 2>&1 & pids+=($!)
    read -r -t 10 line < "$tmp/path.out" && [[ $line == ready ]] \
        || { echo "the user-space path did not start: $line" >&2; exit 1; }
    cat "$tmp/path.out" > "$tmp/path.log" & pids+=($!)
fi
ip netns exec "$ns" ip link set lo up

# The origin and Caddy in the namespace.
ip netns exec "$ns" "$vload" origin --listen 127.0.0.1:8080 --threads 1 > "$tmp/origin.out" 2>&1 & pids+=($!)
sed -e "s|@PORT@|8443|g" -e "s|@ORIGIN@|127.0.0.1:8080|g" -e "s|@WORK@|$tmp|g" \
    "$top/servers/Caddyfile" > "$tmp/Caddyfile"
HOME=$tmp ip netns exec "$ns" caddy run --config "$tmp/Caddyfile" --adapter caddyfile > "$tmp/caddy.out" 2>&1 & pids+=($!)
for _ in $(seq 100); do
    (exec 3<>/dev/tcp/10.77.0.2/8443) 2>/dev/null && break
    sleep 0.1
done

# shape LOSS: each end delays by half the round trip and drops LOSS percent: tc netem on the
# veth pair, or, on a kernel without netem (CONFIG_NET_SCH_NETEM unset, as on some VMs), the
# user-space path, told the new loss through its file. Both drop packets as they cross the
# path, never in the sender's own stack (an iptables DROP in OUTPUT fails sendmsg with EPERM
# and takes a whole GSO batch).
shape() {
    if [[ -n $netem ]]; then
        local half; half=$(python3 -c "print($rtt / 2)")
        tc qdisc replace dev "$host_if" root netem delay "${half}ms" loss "$1%" limit 100000
        ip netns exec "$ns" tc qdisc replace dev "$ns_if" root netem delay "${half}ms" loss "$1%" limit 100000
        return
    fi
    python3 -c "print($1 / 100)" > "$tmp/loss.new" && mv "$tmp/loss.new" "$tmp/loss"
    sleep 0.3
}

echo "host: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), $(nproc) cores, Linux $(uname -r), $(date -u +%Y-%m-%d)"
link="RTT $rtt ms (netem)"
[[ -n $netem ]] || link="RTT $rtt ms and loss by benches/netpath.py (this kernel has no netem)"
echo "vload $(git -C "$top" rev-parse --short HEAD), $(caddy version | awk '{print "caddy", $1}'); $link; $rate/s of 50 KB for $secs s"
echo
echo "| loss | protocol | p50 | p90 | p99 | goodput MB/s | completed | errors | connections |"
echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for loss in $losses; do
    shape "$loss"
    for proto in h2 h3; do
        flag=--http2; [[ $proto == h3 ]] && flag=--http3
        "$vload" attack "$flag" --insecure --connect-to 10.77.0.2:8443 -r "$rate" -d "${secs}s" \
            --max-connections 64 --timeout 10s --no-progress --quiet -o "$tmp/$proto-$loss.json" \
            "https://localhost:8443/obj?size=50000" || true
        # Percentiles from vload's own summary (the report's JSON form), goodput from bytes.
        "$vload" report --format json "$tmp/$proto-$loss.json" | python3 -c '
import json, sys
s = json.load(sys.stdin)["report"]
loss, proto = sys.argv[1], sys.argv[2]
lat = s["latency"]
ms = [f"{lat[k] / 1e6:.1f} ms" if lat.get(k) is not None else "n/a" for k in ("p50_ns", "p90_ns", "p99_ns")]
good = s["bytes_in"] / max(s["measured_s"] + s["wait_s"], 1e-9) / 1e6
errors = sum(e["count"] for e in s["errors"].values())
name = "HTTP/2" if proto == "h2" else "HTTP/3"
n, conns = s["requests"], s["connections_opened"]
print(f"| {loss}% | {name} | {ms[0]} | {ms[1]} | {ms[2]} | {good:.2f} | {n:,} | {errors:,} | {conns} |")
' "$loss" "$proto"
    done
done
