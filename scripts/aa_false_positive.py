#!/usr/bin/env python3
"""A/A test (a benchmark, not a test): how often does `compare` call two runs of the same thing different?

Runs 2*PAIRS separate `atsdbench run` processes of one configuration on this kernel, compares them in
disjoint pairs with the default settings (unit round, Welch, 95%), and prints the share of strides
called different.  An honest compare lands near 5%; passes-as-samples lands far above (printed too).

usage: scripts/aa_false_positive.py [--pairs 10] [--size 256M] [--rounds 5] [--reps 4]
"""
import argparse
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--size", default="256M")
    ap.add_argument("--rounds", default="5")
    ap.add_argument("--reps", default="4")
    a = ap.parse_args()
    import atsdbench

    tmp = tempfile.mkdtemp()
    paths = []
    for i in range(2 * a.pairs):
        path = os.path.join(tmp, f"run{i}.json")
        subprocess.run([sys.executable, "-m", "atsdbench", "run", "--size", a.size, "--rounds", a.rounds, "--reps",
                        a.reps, "--no-trace", "-o", path], check=True, capture_output=True)
        paths.append(path)
    for unit in ("round", "pass"):
        called, total = 0, 0
        for i in range(a.pairs):
            frame = atsdbench.compare(paths[2 * i], paths[2 * i + 1], unit=unit)
            called += int(frame["significant"].sum())
            total += len(frame)
        print(f"unit {unit:5}: {called}/{total} strides called different = {100 * called / total:.1f}% "
              f"(size {a.size}, {a.rounds} rounds x {a.reps} reps, {a.pairs} A/A pairs, Welch 95%)")


if __name__ == "__main__":
    main()
