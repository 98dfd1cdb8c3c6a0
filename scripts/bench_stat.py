#!/usr/bin/env python3
"""Benchmark (not a test): `atsdbench stat -A a b` against Debian's `ministat -A a b`.

Two files of 10^6 normal values each; both commands run RUNS times, alternating, whole process
each time (start-up included); prints the median wall time of each and the ratio (target <= 1.0),
and checks the outputs are identical.

usage: scripts/bench_stat.py [--runs 7] [--n 1000000]
"""
import argparse
import os
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
    outputs = {}
    for i in range(a.runs):
        for name in (list(commands) if i % 2 else list(commands)[::-1]):
            t0 = time.perf_counter()
            p = subprocess.run(commands[name], capture_output=True, check=True, cwd=tmp,
                               executable=ministat if name == "ministat" else None)
            times[name].append(time.perf_counter() - t0)
            outputs[name] = p.stdout
    same = outputs["ministat"] == outputs["atsdbench stat"]
    m, ours = statistics.median(times["ministat"]), statistics.median(times["atsdbench stat"])
    print(f"2 files x {a.n} values, {a.runs} runs each, alternating; median wall time (start-up included)")
    print(f"ministat -A        {m * 1000:8.1f} ms")
    print(f"atsdbench stat -A  {ours * 1000:8.1f} ms")
    print(f"ratio atsdbench/ministat: {ours / m:.2f}x (target <= 1.0); outputs identical: {same}")


if __name__ == "__main__":
    main()
