#!/usr/bin/env python3
"""The coverage and power table of docs/compare.md (a simulation, not a test): by N a side, how often
compare's 95% CIs (mean: Welch on log rates; median: Hodges-Lehmann with its exact CI) cover the truth
and how often they find a 10% slowdown at 5% CV between rounds; then the A/A rate over four strides
(any called different), unadjusted and after Holm.

It runs tests/analysis/test_calibration.py's simulators (imported from there); the coverage and A/A
studies with their claimed ranges are scripts/coverage_studies.py's.

usage: scripts/calibration_table.py [--experiments N]   (default 2000 a size)
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "analysis"))

import test_calibration  # noqa: E402
from test_calibration import aa_rates, covered, experiment, rounds, two_sample  # noqa: E402


def power_table():
    """Coverage and power (a 10% slowdown, 5% CV between rounds) by N a side."""
    experiments = test_calibration.EXPERIMENTS
    lines = ["N a side | mean: coverage | mean: power | median: coverage | median: power"]
    for n in range(3, 11):
        row = [str(n)]
        for method in (lambda a, b: two_sample.log_t(a, b, "welch", 95), lambda a, b: two_sample.hodges_lehmann(a, b, 95)):
            rng = np.random.default_rng(50 + n)
            base, new = experiment(rng, rounds, n, n, 1.0)
            r = method(base, new)
            row.append(f"{100 * np.mean(covered(r, 1.0)):.1f}%" if np.isfinite(r["low"]).all() else "no CI")
            cv = np.full(experiments, 0.05)
            r = method(rounds(rng, experiments, n, cv), rounds(rng, experiments, n, cv, 0.9))
            row.append(f"{100 * np.mean(r['p'] < 0.05):.0f}%")
        lines.append(" | ".join(row))
    for shared in (0.0, 0.5):
        rates = aa_rates(seed=40, shared=shared, compares=2 * experiments)
        lines.append(f"A/A over 4 strides (shared round noise {shared:g}), any called different: " + ", ".join(
            f"{m} {a} {100 * v:.1f}%" for (m, a), v in rates.items()))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiments", type=int, default=test_calibration.EXPERIMENTS,
                    help=f"experiments a size (default {test_calibration.EXPERIMENTS}; the A/A twice as many)")
    a = ap.parse_args(argv)
    if a.experiments < 2:
        ap.error("--experiments must be 2 or more")
    test_calibration.EXPERIMENTS = a.experiments  # its helpers read it when called
    print(power_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
