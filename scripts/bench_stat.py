#!/usr/bin/env python3
"""Benchmark (not a test): `atsdbench stat -A a b` against Debian's `ministat -A a b`.

Two files of 10^6 normal values each; both commands run RUNS times, alternating, whole process
each time (start-up included); prints the median wall time and the median CPU time (user + sys) of
each, both ratios side by side (target: wall <= 0.7), the load average around the runs, and checks
the outputs are identical.  stat reads its files in parallel threads and ministat on one CPU, so on
a busy machine the wall ratio drifts toward the CPU ratio.

usage: scripts/bench_stat.py [--runs 7] [--n 1000000]
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--n", type=int, default=1_000_000)
    a = ap.parse_args()
    ministat = shutil.which("ministat")
    if not ministat:
        sys.exit("bench_stat: Debian's ministat is not installed (apt-get install ministat)")
    import numpy as np

    tmp = tempfile.mkdtemp()
    rng = np.random.default_rng(1)
    files = []
    for name, mean in (("a", 100.0), ("b", 100.02)):
        path = os.path.join(tmp, name)
        np.savetxt(path, rng.normal(mean, 10, a.n), fmt="%.6f")
        files.append(path)
    commands = {"ministat": ["ministat", "-A", *files],
                "atsdbench stat": [sys.executable, "-m", "atsdbench", "stat", "-A", *files]}
    times = {k: [] for k in commands}
    cpu = {k: [] for k in commands}
    outputs = {}
    load = os.getloadavg()[0]
    for i in range(a.runs):
        for name in (list(commands) if i % 2 else list(commands)[::-1]):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            p = subprocess.run(commands[name], capture_output=True, check=True, cwd=tmp,
                               executable=ministat if name == "ministat" else None)
            times[name].append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
            outputs[name] = p.stdout
    same = outputs["ministat"] == outputs["atsdbench stat"]
    wall = {k: statistics.median(v) for k, v in times.items()}
    used = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"2 files x {a.n} values, {a.runs} runs each, alternating; medians per run (start-up included); "
          f"load average {load:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"{'':18} {'wall':>9} {'CPU':>9}")
    for name in ("ministat", "atsdbench stat"):
        print(f"{name + ' -A':18} {wall[name] * 1000:6.1f} ms {used[name] * 1000:6.1f} ms")
    print(f"{'ratio':18} {wall['atsdbench stat'] / wall['ministat']:8.2f}x "
          f"{used['atsdbench stat'] / used['ministat']:8.2f}x   (target: wall <= 0.7); outputs identical: {same}")


if __name__ == "__main__":
    main()
