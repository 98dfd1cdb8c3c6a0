#!/usr/bin/env python3
"""How often `model`'s before/after intervals hold the true change, by seeded simulation.

The sides come from the noise simulator (tests/support/noise_sim.py): the noise measured on this VM
(pass 3.4%, round 2.8%, drift 4.6% with an 8 s time constant, a per-process effect sP, strides
correlated 0.7), real result files of 64K/1M/2M/4M with sub-runs.  Each file gets a flush ceiling of 600
4K pages, so 64K, 1M and 2M (16, 256, 512 pages) are the per-page line and 4M (1024 pages) the whole
flush: all four parameters are defined.  The REAL atsdbench.analysis.model.analyse fits both sides and
their change.

Truths: an A/A pair changes nothing (0%); a +10% pair has every rate 1.1x, so every per-call time is
1/1.1 of the base's: fixed, per-page and whole-flush cost change by -9.09%, the crossover by 0.
Coverage is the share of intervals holding the truth, per parameter, over both kinds of pair.

  design       what each side is, and the unit analyse() is asked for:
  5x5@20       5 sub-runs x 5 rounds, 20 s apart; --unit auto (the runs)
  5x5@20/round the same files, --unit round (their 25 rounds pooled, as model did before)
  1x5/round    one process x 5 rounds, --unit round (auto gives the within-run interval, not a CI)
  mixed        5x5@20 against one process x 5 rounds; --unit auto (the one process is one run)
  8x3@20       8 x 3, 20 s apart; --unit auto

  scripts/model_coverage.py                        # defaults: ~1-2 min on a 2-core VM
  scripts/model_coverage.py --pairs 400 --jobs 2   # tighter numbers
"""
import argparse
import math
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from _support import noise_sim as sim  # noqa: E402  (the simulator: one copy of the noise model)

CEILING = 600  # pages: 4K x 600 = 2.3M, between 2M and 4M
PARAMS = ("fixed_us", "per_page_us", "full_flush_us", "crossover_pages")
TRUTH = {"aa": dict.fromkeys(PARAMS, 0.0),
         "change": {"fixed_us": (1 / 1.1 - 1) * 100, "per_page_us": (1 / 1.1 - 1) * 100,
                    "full_flush_us": (1 / 1.1 - 1) * 100, "crossover_pages": 0.0}}
# key: (label, (runs, rounds, gap) base, (runs, rounds, gap) new, unit)
DESIGNS = {
    "5x5@20": ("5 sub-runs x 5 rounds, 20 s apart", (5, 5, 20.0), (5, 5, 20.0), "auto"),
    "5x5@20/round": ("the same, --unit round", (5, 5, 20.0), (5, 5, 20.0), "round"),
    "1x5/round": ("1 process x 5 rounds, --unit round", (1, 5, 0.0), (1, 5, 0.0), "round"),
    "mixed": ("5 x 5 @20 against 1 process x 5", (5, 5, 20.0), (1, 5, 0.0), "auto"),
    "8x3@20": ("8 x 3, 20 s apart", (8, 3, 20.0), (8, 3, 20.0), "auto"),
}
COLUMNS = ["design", "sP %", "unit", "N a side", "fixed %", "per-page %", "whole flush %", "crossover %",
           "no CI %"]


def side(rng, layout, sp, change, label):
    runs, rounds, gap = layout
    r = sim.simulate_side(rng, runs, rounds, gap, sp, 0.0, change, label, f"boot-{label}")
    r.config["ceiling"] = CEILING
    r.path = f"{label}.json"
    return r.sub_runs()


def cell(task):
    """One row: `pairs` A/A and `pairs` +10% pairs of one design at one sP through model.analyse."""
    import numpy as np

    from atsdbench.analysis import model

    seed, key, sp_pct, pairs, resamples = task
    _, base_layout, new_layout, unit = DESIGNS[key]
    # A design's seed leaves its unit out: 5x5@20/round sees the very files 5x5@20 does.
    ident = [seed, *map(ord, key.split("/")[0]), int(round(sp_pct * 10))]
    rng = np.random.default_rng(np.random.SeedSequence(ident))
    hits, rows, no_ci, sizes, units = dict.fromkeys(PARAMS, 0), dict.fromkeys(PARAMS, 0), 0, set(), set()
    for kind, change in (("aa", 0.0), ("change", sim.TRUE_CHANGE)):
        for k in range(pairs):
            a = side(rng, base_layout, sp_pct / 100, 0.0, "A")
            b = side(rng, new_layout, sp_pct / 100, change, "B")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                analysis = model.analyse([a, b], ["A", "B"], unit=unit, resamples=resamples, seed=k)
            for r in analysis.changes:
                sizes.add(f"{r['n_base']}/{r['n_new']}")
                units.add(r["unit"] or "none")
                if not (math.isfinite(r["ci_low_pct"]) and math.isfinite(r["ci_high_pct"])):
                    no_ci += 1
                    continue
                rows[r["parameter"]] += 1
                hits[r["parameter"]] += r["ci_low_pct"] <= TRUTH[kind][r["parameter"]] <= r["ci_high_pct"]
    out = {"design": DESIGNS[key][0], "sP %": sp_pct, "unit": "/".join(sorted(units)),
           "N a side": ", ".join(sorted(sizes))}
    for p, column in zip(PARAMS, COLUMNS[4:8]):
        out[column] = 100 * hits[p] / rows[p] if rows[p] else math.nan
    out["no CI %"] = 100 * no_ci / (2 * pairs * len(PARAMS))
    return out


def simulate(designs, sps, pairs, seed, resamples=1000, jobs=1):
    return sim.map_cells(cell, [(seed, d, sp, pairs, resamples) for d in designs for sp in sps], jobs)


def table(rows):
    from tabulate import tabulate

    return tabulate([[r[c] for c in COLUMNS] for r in rows], headers=COLUMNS, tablefmt="github",
                    floatfmt=("", ".0f", "", "", ".1f", ".1f", ".1f", ".1f", ".1f"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=100, help="A/A pairs, and as many +10%% pairs, a row")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples a side (model's default 2000)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--designs", default=",".join(DESIGNS), help=f"designs ({', '.join(DESIGNS)})")
    ap.add_argument("--sp", default="0,3,5", help="per-process effects, %% (comma list)")
    a = ap.parse_args(argv)
    designs = [d for d in a.designs.split(",") if d]
    for d in designs:
        if d not in DESIGNS:
            ap.error(f"unknown design {d!r} (designs: {', '.join(DESIGNS)})")
    t0 = time.monotonic()
    rows = simulate(designs, [float(x) for x in a.sp.split(",") if x], a.pairs, a.seed, a.resamples, a.jobs)
    print(table(rows))
    print(f"\n{a.pairs} A/A + {a.pairs} +10% pairs a row, seed {a.seed}, {a.resamples} resamples, 95%; coverage "
          f"of each parameter's change interval; {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
