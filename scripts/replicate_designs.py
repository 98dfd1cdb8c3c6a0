#!/usr/bin/env python3
"""Replicate designs, balanced and not: how often the REAL compare calls an A/A different, and how
often its CI holds a true +10% change, when the sides hold different numbers of replicate files.

Simulation only (nothing is measured): the noise simulator (tests/support/noise_sim.py; its docstring
gives the model, measured on this VM: shared/notes/noise-levels.md).  A side of k files is k
processes of `rounds` rounds, --gap apart (the files a side, one boot a side), cut into k Results as
k files would load; each design compares sides of k_base and k_new files with compare's defaults
(unit: the file, --unit run; Welch's t where both sides are replicated, Student's where one is a
single file): the test each design makes where compare gives it.
Two noise settings: the same per-process effect on both sides (sP), and the new side's twice the
base's (a host loaded while one side ran: the spread one side shows is not the other's).

Per design and setting:

  A/A any %     A/A compares with any stride significant after Holm (95%);
  A/A stride %  strides significant, unadjusted (each stride's own test);
  coverage %    rows of the +10% pairs whose CI holds +10%;
  verdict %     rows to which compare's default (no --unit) gives a verdict at all: it withholds it
                where the design cannot hold its level (analysis/compare.py's unbalanced).

Every cell has its own seeds (SeedSequence of --seed and the cell): its numbers do not depend on
--jobs nor on which cells were asked for.

  scripts/replicate_designs.py                      # defaults: about a minute on a 2-core VM
  scripts/replicate_designs.py --reps 3 --designs 1v3,3v3   # seconds (the test)
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import _support  # noqa: E402,F401  tests/support on sys.path: the noise simulator's one loader for scripts
from noise_sim import TRUE_CHANGE, map_cells, simulate_side  # noqa: E402

# key: (files on the base side, files on the new side)
DESIGNS = {"1v3": (1, 3), "3v1": (3, 1), "1v5": (1, 5), "5v1": (5, 1), "2v5": (2, 5), "5v2": (5, 2),
           "3v3": (3, 3), "5v5": (5, 5), "2v2": (2, 2), "3v5": (3, 5), "5v3": (5, 3)}
COLUMNS = ["design", "sP base %", "sP new %", "A/A any %", "A/A stride %", "coverage %", "verdict %"]
ROUNDS, GAP = 5, 60.0  # a file's rounds; its files a minute apart (the drift, 8 s, is gone by then)


def _side(rng, files, sp, change, label):
    """One side: `files` processes as `files` loaded Results (a single file: the Result itself)."""
    whole = simulate_side(rng, files, ROUNDS, GAP, sp, 0.0, change, label, f"boot-{label}")
    return whole.sub_runs() if files > 1 else [whole]


def _cell(task):
    import warnings

    import numpy as np

    from atsdbench.analysis.compare import compare

    seed, key, sp_base, sp_new, reps = task
    n_base, n_new = DESIGNS[key]
    ident = [seed, list(DESIGNS).index(key), int(round(sp_base * 10)), int(round(sp_new * 10))]
    rng = np.random.default_rng(np.random.SeedSequence(ident))
    any_hits = stride_hits = strides = covered = with_ci = rows = verdicts = 0
    for change in (0.0, TRUE_CHANGE):
        for _ in range(reps):
            a = _side(rng, n_base, sp_base / 100, 0.0, "A")
            b = _side(rng, n_new, sp_new / 100, change, "B")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # the design's own test, asked for (--unit run), which compare's default withholds where
                # the short side is too short; and the default's rows, to count the verdicts it gives
                cmp = compare([a, b], unit="run")
                raw = compare([a, b], unit="run", adjust="none") if change == 0.0 else None
                given = compare([a, b])
            for r in given.rows:
                rows += 1
                verdicts += not r["verdict_withheld"] and not math.isnan(r["p_value"])
            for r in cmp.rows:
                if change and math.isfinite(r["ci_low_pct"]):
                    with_ci += 1
                    covered += r["ci_low_pct"] <= 100 * change <= r["ci_high_pct"]
            if raw is not None:
                any_hits += any(bool(r["significant"]) for r in cmp.rows)
                strides += len(raw.rows)
                # each stride's own test, with or without compare's verdict: what the design's t risks
                stride_hits += sum(r["p_value"] < 0.05 for r in raw.rows)
    return {"design": f"{n_base} vs {n_new} files", "sP base %": sp_base, "sP new %": sp_new,
            "A/A any %": 100 * any_hits / reps, "A/A stride %": 100 * stride_hits / strides if strides else math.nan,
            "coverage %": 100 * covered / with_ci if with_ci else math.nan, "verdict %": 100 * verdicts / rows}


def simulate(designs, settings, reps, seed, jobs=1):
    return map_cells(_cell, [(seed, d, b, n, reps) for d in designs for b, n in settings], jobs)


def table(rows):
    from tabulate import tabulate

    return tabulate([[r[c] for c in COLUMNS] for r in rows], headers=COLUMNS, tablefmt="github",
                    floatfmt=("", ".0f", ".0f", ".1f", ".1f", ".1f", ".0f"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=200, help="simulated A/A pairs, and as many +10%% pairs, a cell")
    ap.add_argument("--seed", type=int, default=57)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes for the simulation")
    ap.add_argument("--designs", default=",".join(DESIGNS), help=f"designs ({', '.join(DESIGNS)})")
    ap.add_argument("--sp", default="3:3,3:6", help="per-process effects base:new, %% (comma list)")
    a = ap.parse_args(argv)
    designs = [d for d in a.designs.split(",") if d]
    for d in designs:
        if d not in DESIGNS:
            ap.error(f"unknown design {d!r} (designs: {', '.join(DESIGNS)})")
    try:
        settings = [tuple(float(x) for x in s.split(":")) for s in a.sp.split(",") if s]
    except ValueError:
        ap.error(f"--sp {a.sp!r}: base:new pairs of percentages")
    if any(len(s) != 2 for s in settings):
        ap.error(f"--sp {a.sp!r}: base:new pairs of percentages")
    t0 = time.monotonic()
    rows = simulate(designs, settings, a.reps, a.seed, a.jobs)
    print(table(rows))
    print(f"\n{a.reps} A/A + {a.reps} +10% pairs a cell, seed {a.seed}, {ROUNDS} rounds a file, 4 strides, "
          f"Holm, 95%; {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
