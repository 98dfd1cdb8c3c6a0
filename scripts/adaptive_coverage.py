#!/usr/bin/env python3
"""The coverage table of docs/adaptive.md (a simulation, not a test): how often the interval an adaptive
run stops on (target 1%, 95% nominal, rounds from 5) covers the true mean, against 5 fixed batch means
and a fixed plan of as many rounds, for independent and AR(1) round means.

It runs the simulation tests/measure/test_adaptive.py checks (its helpers, imported from there) with more
replicates.

usage: scripts/adaptive_coverage.py [REPS [SEED]]   (default 4000 replicates, seed 12)
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "measure"))

from test_adaptive import adaptive, ar1_rows, fixed_batches, sequential  # noqa: E402


def coverage_table(reps=4000, seed=12):
    """The table: coverage of the interval an adaptive run stops on, target 1%."""
    rng = np.random.default_rng(seed)
    lines = ["| round means | CV | median rounds, this rule | median rounds, 5 fixed batches | covers, this rule | "
             "covers, 5 fixed batches | fixed plan of as many rounds covers |", "|" + " --- |" * 7]
    for phi in (0.0, 0.5):
        for cv in (1.0, 2.0, 3.0, 5.0):
            x = 1 + cv / 100 * ar1_rows(phi, 400, reps, rng)
            ours, rounds, capped = sequential(x, 1.0, adaptive.half_width)
            theirs, their_rounds, _ = sequential(x, 1.0, fixed_batches)
            n = int(rounds)  # a fixed plan of as many rounds, not stopped on, for reference
            mean, half, _ = adaptive.half_width(x[:, :n])
            fixed = float(np.mean(np.abs(mean - 1) <= half))
            kind = "independent" if phi == 0 else f"AR(1) {phi:g}"
            cap = f" ({100 * capped:.0f}% reached 400)" if capped else ""
            lines.append(f"| {kind} | {cv:g}% | {rounds:.0f}{cap} | {their_rounds:.0f} | "
                         f"{100 * ours:.1f}% | {100 * theirs:.1f}% | {100 * fixed:.1f}% |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reps", nargs="?", type=int, default=4000, help="replicates per row (default 4000)")
    ap.add_argument("seed", nargs="?", type=int, default=12, help="seed (default 12)")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("REPS must be at least 1")
    print(coverage_table(args.reps, args.seed))


if __name__ == "__main__":
    main()
