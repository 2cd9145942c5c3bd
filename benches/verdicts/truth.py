#!/usr/bin/env python3
"""The capacity a server of known shape has at an SLO, analytically: what a sweep's answer
is held to (benches/verdicts/sweep.sh).

- Constant service D on N slots under constant arrivals (D/D/N): no request waits below
  N / D, and above it the queue grows without bound, so the capacity at any SLO above D is
  N / D exactly.
- Exponential service of mean D on N slots under Poisson arrivals (M/M/N): the response time
  is the Erlang-C wait plus an exponential service, whose tail has a closed form; the
  capacity at `p99 < L` is the rate at which P(T > L) = 0.01, found by bisection.

Usage: truth.py SLOTS SERVICE_MS constant|exponential P99_LIMIT_MS -> requests per second.
"""
import math
import sys


def erlang_c(c, a):
    """The probability that an arrival waits, M/M/c with offered load a = lambda / mu."""
    term, total = 1.0, 1.0
    for k in range(1, c):
        term *= a / k
        total += term
    last = term * a / c / (1 - a / c)
    return last / (total + last)


def tail(c, mu, lam, t):
    """P(T > t): the response time (wait + service) of M/M/c."""
    p_wait = erlang_c(c, lam / mu)
    theta = c * mu - lam
    service = math.exp(-mu * t)
    if abs(theta - mu) < 1e-9:
        both = math.exp(-mu * t) * (1 + mu * t)
    else:
        both = (theta * math.exp(-mu * t) - mu * math.exp(-theta * t)) / (theta - mu)
    return (1 - p_wait) * service + p_wait * both


def capacity(slots, service_ms, kind, p99_ms):
    mu = 1000.0 / service_ms
    top = slots * mu
    if kind == "constant":
        return top if p99_ms > service_ms else 0.0
    limit = p99_ms / 1000.0
    if tail(slots, mu, 1e-9, limit) > 0.01:
        return 0.0
    lo, hi = 0.0, top * (1 - 1e-9)
    for _ in range(200):
        mid = (lo + hi) / 2
        if tail(slots, mu, mid, limit) <= 0.01:
            lo = mid
        else:
            hi = mid
    return lo


if __name__ == "__main__":
    n, d, kind, limit = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    print(f"{capacity(n, d, kind, limit):.1f}")
