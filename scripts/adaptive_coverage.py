#!/usr/bin/env python3
"""The coverage tables of docs/adaptive.md (simulations, not tests).

Rounds (the default): how often the interval an adaptive run stops on (target 1%, 95% nominal, rounds
from 5) covers the true mean, against 5 fixed batch means and a fixed plan of as many rounds, for
independent and AR(1) round means.

Sub-runs (`--runs`): `run --until P% --runs M` (5 rounds a sub-run, --gap 20s, --max-time 10m) on the
noise simulator's model of this VM (tests/support/noise_sim.py: pass 3.4%, round 2.8%, drift 4.6% with
an 8 s time constant, per-process sP, strides correlated 0.7), through the real adaptive.RunPolicy: the
sub-runs and wall time it took, how often the interval it stopped on covers each stride's true mean
(against a fixed plan of as many sub-runs), and what the real compare says of two such sides: A/A
(`--unit run`, any of 4 strides after Holm), coverage of the true ratio, power at a true +10%, and the
A/A again with the slow drift scripts/bench_defaults.py measured between sessions (sides 60 s apart),
each beside the same for two fixed plans of the median number of sub-runs.

It runs tests/measure/test_adaptive.py's simulators (imported from there); the stopping rules' coverage
with its claimed ranges is scripts/coverage_studies.py's (until-rounds, until-short, until-sub-runs).

usage: scripts/adaptive_coverage.py [REPS [SEED]]          (default 4000 replicates, seed 12)
       scripts/adaptive_coverage.py --runs [REPS [SEED]]   (default 400 sides and 100 pairs a row, seed 25)
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "measure"))

from _support import noise_sim  # noqa: E402  (the simulator, tests/support/noise_sim.py; test_adaptive imports it)
from test_adaptive import (adaptive, adaptive_side, ar1_rows, fixed_batches, sequential,  # noqa: E402
                           side_coverage, true_mean)


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


# (--runs M, --until P%, sP %): the rows of the sub-run table
RUN_ROWS = [(3, 5.0, 3.0), (5, 5.0, 3.0), (3, 3.0, 3.0), (5, 3.0, 3.0), (5, 5.0, 0.0), (5, 5.0, 5.0)]
ROUNDS, GAP, MAX_TIME = 5, 20.0, 600.0


def fixed_coverage(bench, sides, n, sp, rng):
    """Coverage of the t interval over n sub-runs of a fixed plan (not stopped on), per stride."""
    covered = rows = 0
    for _ in range(sides):
        side = bench.simulate_side(rng, n, ROUNDS, GAP, sp, 0.0)
        p = adaptive.RunPolicy(1.0, 95.0, None, None, n, ROUNDS, GAP)
        p.observe(side.records, 0.0)
        for r in p.rows:
            covered += abs(r["mean_gbps"] - true_mean(bench, r["stride_bytes"], sp)) <= \
                r["half_width_pct"] / 100 * r["mean_gbps"]
            rows += 1
    return covered / rows


def slow_drift():
    """(variance per second, seconds between sessions) of the slow host drift scripts/bench_defaults.py
    measured here: a random walk on the log scale between sessions minutes apart."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_defaults.py")
    spec = importlib.util.spec_from_file_location("bench_defaults", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SLOW_C, module.SESSION_S


def compare_pairs(bench, pairs, side, rng, changes=None, slow=None):
    """(A/A share, coverage of the true ratio, power at +10%) of the real compare of two sides made by
    side(change, label).  slow=(c, s): side B starts s seconds after A ends, and the host has drifted
    by a random walk of variance c a second meanwhile (B's level moved by it, the truth not)."""
    import warnings

    from atsdbench.analysis.compare import compare

    aa = covered = with_ci = hits = tried = 0
    for change in (0.0, bench.TRUE_CHANGE) if changes is None else changes:
        for _ in range(pairs):
            a = side(0.0, "A")
            walk = rng.normal(0.0, math.sqrt(slow[0] * (a.finished + slow[1]))) if slow else 0.0
            b = side(math.expm1(math.log1p(change) + walk), "B")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows = compare([a, b], unit="run").rows  # the sub-run verdict, the unit the rule stops on
            for r in rows:
                if math.isfinite(r["ci_low_pct"]):
                    with_ci += 1
                    covered += r["ci_low_pct"] <= change * 100 <= r["ci_high_pct"]
                if change:
                    tried += 1
                    hits += bool(r["significant"]) and r["speedup_pct"] > 0
            aa += not change and any(r["significant"] for r in rows)
    return aa / pairs, covered / with_ci if with_ci else math.nan, hits / tried if tried else math.nan


def runs_table(reps=400, seed=25):
    bench = noise_sim
    slow = slow_drift()
    lines = ["| `--runs` | `--until` | sP | median sub-runs | median wall s | stopped by time | a side's CI covers | "
             "fixed plan of as many sub-runs | compare: A/A | fixed plans | compare covers | fixed plans | "
             "power at +10% | fixed plans | A/A with the slow drift | fixed plans |", "|" + " --- |" * 16]
    for i, (runs, until, sp_pct) in enumerate(RUN_ROWS):
        sp = sp_pct / 100
        rng = np.random.default_rng(np.random.SeedSequence([seed, i]))
        cover, median_runs, timed, wall = side_coverage(bench, reps, runs, ROUNDS, GAP, sp, until, seed * 100 + i,
                                                        MAX_TIME)
        n = int(round(median_runs))
        fixed = fixed_coverage(bench, reps, n, sp, rng)
        pairs = max(1, reps // 4)
        adaptive_pairs = compare_pairs(bench, pairs, lambda change, label: adaptive_side(
            bench, rng, runs, ROUNDS, GAP, sp, until, MAX_TIME, change, label)[0], rng)
        fixed_pairs = compare_pairs(bench, pairs, lambda change, label: bench.simulate_side(
            rng, n, ROUNDS, GAP, sp, 0.0, change, label, f"boot-{label}"), rng)
        adaptive_slow = compare_pairs(bench, pairs, lambda change, label: adaptive_side(
            bench, rng, runs, ROUNDS, GAP, sp, until, MAX_TIME, change, label)[0], rng, (0.0,), slow)
        fixed_slow = compare_pairs(bench, pairs, lambda change, label: bench.simulate_side(
            rng, n, ROUNDS, GAP, sp, 0.0, change, label, f"boot-{label}"), rng, (0.0,), slow)
        pct = [f"{100 * x:.1f}%" for pair in zip(adaptive_pairs + adaptive_slow[:1], fixed_pairs + fixed_slow[:1])
               for x in pair]
        lines.append(f"| {runs} | {until:g}% | {sp_pct:g}% | {median_runs:g} | {wall:.0f} | {100 * timed:.0f}% | "
                     f"{100 * cover:.1f}% | {100 * fixed:.1f}% | {' | '.join(pct)} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", action="store_true", help="the sub-run table (run --until --runs)")
    ap.add_argument("reps", nargs="?", type=int, default=None,
                    help="replicates per row (default 4000; with --runs sides a row, 400, and a quarter as many pairs)")
    ap.add_argument("seed", nargs="?", type=int, default=None, help="seed (default 12; with --runs 25)")
    args = ap.parse_args(argv)
    if args.reps is not None and args.reps < 1:
        ap.error("REPS must be at least 1")
    if args.runs:
        print(runs_table(args.reps or 400, 25 if args.seed is None else args.seed))
    else:
        print(coverage_table(args.reps or 4000, 12 if args.seed is None else args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
