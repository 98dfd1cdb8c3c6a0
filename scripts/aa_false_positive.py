#!/usr/bin/env python3
"""A/A test (a benchmark, not a test): how often does `compare` call runs of the same thing different?

Runs 2*PAIRS*REPLICATES separate `atsdbench run` processes of one configuration on this kernel, one
after another, and compares disjoint A/A pairs (Welch on log rates, 95%) three ways: single runs
with the round as the unit (the default for single files), single runs with the pass as the unit
(ministat-style), and, with --replicates N >= 2, groups of N runs per side with the run as the
unit.  An honest compare lands near 5%: per stride unadjusted, and per compare (any of its
strides) after Holm, compare's default.

usage: scripts/aa_false_positive.py [--pairs 10] [--replicates 3] [--size 256M] [--rounds 5] [--reps 4]
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
    ap.add_argument("--processes", action="store_true", help="each round in a fresh process (run --processes)")
    ap.add_argument("--replicates", type=int, default=3, help="runs per side for the --unit run comparison")
    a = ap.parse_args()
    import atsdbench

    tmp = tempfile.mkdtemp()
    paths = []
    per_side = max(1, a.replicates)
    for i in range(2 * a.pairs * per_side):
        path = os.path.join(tmp, f"run{i}.json")
        subprocess.run([sys.executable, "-m", "atsdbench", "run", "--size", a.size, "--rounds", a.rounds, "--reps",
                        a.reps, "--no-trace", "-o", path] + (["--processes"] if a.processes else []),
                       check=True, capture_output=True, cwd=tmp)
        paths.append(path)
    setup = (f"size {a.size}, {a.rounds} rounds x {a.reps} reps{', --processes' if a.processes else ''}, "
             "Welch on log rates, 95%")

    def rate(pairs, unit):
        # Two rates: each stride alone, unadjusted (what one stride's verdict risks), and the whole
        # compare after Holm, compare's default (what "some stride is different" risks).
        called = total = families = 0
        for base, new in pairs:
            frame = atsdbench.compare(base, new, unit=unit, adjust="none")
            called += int(frame["significant"].sum())
            total += len(frame)
            families += int(atsdbench.compare(base, new, unit=unit, adjust="holm")["significant"].any())
        return (f"{called}/{total} strides called different = {100 * called / total:.1f}% unadjusted, "
                f"{families}/{len(pairs)} compares with any stride different after Holm = "
                f"{100 * families / len(pairs):.1f}%")

    singles = [(paths[2 * i], paths[2 * i + 1]) for i in range(len(paths) // 2)]
    print(f"single runs, unit round: {rate(singles, 'round')} ({len(singles)} A/A pairs; {setup})")
    print(f"single runs, unit pass : {rate(singles, 'pass')} ({len(singles)} A/A pairs; {setup})")
    if a.replicates >= 2:
        n = a.replicates
        groups = [",".join(paths[k * n:(k + 1) * n]) for k in range(len(paths) // n)]
        sides = [(groups[2 * i], groups[2 * i + 1]) for i in range(len(groups) // 2)]
        print(f"{n} runs a side, unit run: {rate(sides, 'run')} ({len(sides)} A/A pairs; {setup})")

if __name__ == "__main__":
    main()
