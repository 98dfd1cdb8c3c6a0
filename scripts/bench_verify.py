#!/usr/bin/env python3
"""Benchmark (not a test): what `run --verify` costs per checked call, by op.

For each op: verify passes over a region (every call checked from every other allowed CPU, the
handshakes and the checkers' faults included), against timed passes of the same op and stride over
the same region (the call alone).  Prints, per op, the median µs per checked call, the median µs of
the call alone, and the held share (checks whose checker held the translation during the call).
Run it on a quiet machine: figures taken while other work shares the CPUs say more about that work.

usage: scripts/bench_verify.py [--size 64M] [--stride 64K] [--passes 5] [--quick]
"""
import argparse
import os
import statistics
import sys


def measure(size, stride, passes, ops=("mprotect", "madvise", "munmap")):
    """{op: {"checked_us", "call_us", "held", "stale", "checks"}} (medians over passes)."""
    from atsdbench.measure import core

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("bench_verify: one CPU allowed: nothing to check from")
    core.pin_self(cpus[0])
    out = {}
    try:
        for op in ops:
            checked, alone, held, stale, checks = [], [], 0, 0, 0
            with core.Region(size, 2 << 20) as region:
                for _ in range(passes):
                    region.restore(True, op)
                    ns, _ = region.timed_pass(stride, op=op)
                    alone.append(ns / 1e3 / (size // stride))
                    region.restore(True, op)
                    with core.Verifier(cpus) as verifier:
                        c = verifier.pass_(region, stride, op, [cpus[0]])
                    checked.append(c["ns"] / 1e3 / c["calls"])
                    held, stale, checks = held + c["held"], stale + c["stale"], checks + c["checks"]
            out[op] = {"checked_us": statistics.median(checked), "call_us": statistics.median(alone),
                       "held": held / checks if checks else 0.0, "stale": stale, "checks": checks}
    finally:
        os.sched_setaffinity(0, cpus)
    return out


def main(argv=None):
    from atsdbench.units import parse_size

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="64M")
    ap.add_argument("--stride", default="64K")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="4M, one pass: a check that it runs, no figure")
    a = ap.parse_args(argv)
    size, passes = (4 << 20, 1) if a.quick else (parse_size(a.size), a.passes)
    stride = parse_size(a.stride, "--stride")
    found = measure(size, stride, passes)
    print(f"verify cost per checked call, {size >> 20}M at {a.stride}, median of {passes} pass(es); "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'op':10} {'checked µs/call':>16} {'call alone µs':>14} {'held':>7} {'stale':>6}")
    for op, f in found.items():
        print(f"{op:10} {f['checked_us']:16.1f} {f['call_us']:14.1f} {100 * f['held']:6.1f}% {f['stale']:6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
