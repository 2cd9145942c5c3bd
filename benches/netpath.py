#!/usr/bin/env python3
"""A network path in user space, for kernels without netem (tc's delay and loss).

Two TUN devices, HOST_IF here and NS_IF moved into the network namespace NETNS, joined by
this process: every IP packet from one side is written to the other after half the round
trip, and a share of them (LOSS_FILE's number, a fraction, read again whenever the file
changes) is dropped, in each direction, so TCP and QUIC alike see a round trip of RTT_MS and
that loss, packet by packet, as netem would make them. Packets keep their order (one delay
for all). Prints "ready" once both ends are up; on SIGTERM prints what it relayed and
dropped, and the devices go with it.

    netpath.py NETNS HOST_IF NS_IF HOST_ADDR NS_ADDR RTT_MS LOSS_FILE [SEED]

Its own cost is in every figure: a round trip through it with no delay is measured by the
bench's first row (0% loss) against the same row with RTT 0.
"""

import collections
import fcntl
import os
import random
import select
import signal
import struct
import subprocess
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def run(*args):
    subprocess.run(args, check=True)


def loss_of(path):
    try:
        return float(open(path).read().strip() or 0)
    except (OSError, ValueError):
        return 0.0


def main():
    if len(sys.argv) < 8:
        sys.exit(__doc__)
    netns, host_if, ns_if, host_addr, ns_addr, rtt_ms, loss_file = sys.argv[1:8]
    rng = random.Random(int(sys.argv[8]) if len(sys.argv) > 8 else 1)
    half = float(rtt_ms) / 2000.0
    a, b = tun(host_if), tun(ns_if)
    run("ip", "addr", "add", f"{host_addr}/24", "dev", host_if)
    run("ip", "link", "set", host_if, "up")
    run("ip", "link", "set", ns_if, "netns", netns)
    run("ip", "netns", "exec", netns, "ip", "addr", "add", f"{ns_addr}/24", "dev", ns_if)
    run("ip", "netns", "exec", netns, "ip", "link", "set", ns_if, "up")
    counts = {"relayed": 0, "dropped": 0}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    print("ready", flush=True)
    # One queue a direction: (when due, packet), in order, as the delay is the same for all.
    queues = {a: collections.deque(), b: collections.deque()}
    other = {a: b, b: a}
    loss, stamp, checked = 0.0, None, 0.0
    while not stop:
        now = time.monotonic()
        if now - checked > 0.1:
            checked = now
            try:
                mtime = os.stat(loss_file).st_mtime_ns
            except OSError:
                mtime = None
            if mtime != stamp:
                stamp, loss = mtime, loss_of(loss_file)
        heads = [q[0][0] for q in queues.values() if q]
        wait = max(0.0, min(heads) - now) if heads else 0.1
        try:
            ready, _, _ = select.select([a, b], [], [], min(wait, 0.1))
        except InterruptedError:
            continue
        now = time.monotonic()
        for fd in ready:
            for _ in range(256):
                try:
                    packet = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if loss and rng.random() < loss:
                    counts["dropped"] += 1
                    continue
                queues[other[fd]].append((now + half, packet))
        now = time.monotonic()
        for out, queue in queues.items():
            while queue and queue[0][0] <= now:
                _, packet = queue.popleft()
                try:
                    os.write(out, packet)
                    counts["relayed"] += 1
                except OSError:
                    counts["dropped"] += 1
    print(f"relayed {counts['relayed']}, dropped {counts['dropped']}", flush=True)


if __name__ == "__main__":
    main()
