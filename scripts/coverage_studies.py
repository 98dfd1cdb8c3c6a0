#!/usr/bin/env python3
"""The coverage and A/A studies of atsdbench's intervals (seeded simulations, not tests): does each
95% interval hold the truth about 95% of the time, and is an A/A called different about 5% of the
time, for compare's two-sample tests, compare --by's paired ones, model's bootstrap intervals, a
noise profile's side, and --until's stopping rules?

Each study prints one line: its name, its figures, the range docs/benchmarks.md claims for them, and
"inside" or "OUTSIDE".  The exit status is 1 where a figure at full size is outside its range; with
--scale below 1 (fewer experiments: the smoke test's) the ranges are no claim and nothing fails.
The simulators are the tests' (tests/analysis/test_calibration.py's rounds and runs, the noise
simulator tests/support/noise_sim.py, tests/measure/test_adaptive.py's AR(1) rounds), imported from
there.  Figures with their date: docs/benchmarks.md#coverage-studies.

usage: scripts/coverage_studies.py [--scale F] [--only NAME[,NAME...]] [--list]
"""
import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
for folder in ("analysis", "measure"):
    sys.path.insert(0, os.path.join(HERE, "..", "tests", folder))

from _support import noise_sim  # noqa: E402  (tests/support/noise_sim.py)

import test_adaptive as adaptive_sims  # noqa: E402
import test_calibration as calibration  # noqa: E402
from atsdbench.analysis import model, multiplicity, noise, paired, two_sample  # noqa: E402


def scaled(n, scale, least=20):
    return max(least, int(round(n * scale)))


def within(value, low, high):
    return low <= value <= high


# --- compare: two samples (files or rounds), log t and Hodges-Lehmann ------------------------------

def _calibration(scale):
    calibration.EXPERIMENTS = scaled(2000, scale)  # the helpers read it when called


def mean_ci(scale):
    _calibration(scale)
    covers = [calibration.coverage(lambda a, b, t=test: two_sample.log_t(a, b, t, 95), structure,
                                   calibration.SIZES_MEAN, seed=10 + i, ratio=ratio)
              for structure in (calibration.rounds, calibration.runs) for test in ("welch", "student")
              for i, ratio in enumerate(calibration.TRUTHS)]
    return f"coverage {min(covers):.1%}-{max(covers):.1%} over 12 cases", "93-97% each", \
        all(within(c, 0.93, 0.97) for c in covers)


def mean_ci_unequal_spread(scale):
    """Welch's reason to exist: one side steady (2% CV), the other noisy (13%); the truth is the ratio
    of geometric means (less the small bias pass noise adds to the noisy side's mean)."""
    _calibration(scale)
    k, rounds, passes = calibration.EXPERIMENTS, calibration.rounds, calibration.PASSES
    rng = np.random.default_rng(7)
    hits = total = 0
    for n_base, n_new in calibration.SIZES_MEAN:
        base = rounds(rng, k, n_base, np.full(k, 0.02))
        new = rounds(rng, k, n_new, np.full(k, 0.13), 2.0)
        bias = np.exp((np.log1p(0.13) ** 2 - np.log1p(0.02) ** 2) / 25 / 2 * (1 - 1 / passes))
        hits += int(calibration.covered(two_sample.log_t(base, new, "welch", 95), 2.0 * bias).sum())
        total += k
    return f"coverage {hits / total:.1%}", "93-97%", within(hits / total, 0.93, 0.97)


def median_ci(scale):
    _calibration(scale)
    covers = [calibration.coverage(lambda a, b: two_sample.hodges_lehmann(a, b, 95), structure,
                                   calibration.SIZES_MEDIAN, seed=20 + i, ratio=ratio)
              for structure in (calibration.rounds, calibration.runs)
              for i, ratio in enumerate(calibration.TRUTHS)]
    return f"coverage {min(covers):.1%}-{max(covers):.1%} over 6 cases", "93-97% each", \
        all(within(c, 0.93, 0.97) for c in covers)


def aa_holm(scale):
    """A/A over four strides: Student's t exact (Holm ~5%), Welch and the median test conservative,
    strides sharing a round's luck more conservative still; unadjusted, 3x as often."""
    _calibration(scale)
    compares = scaled(4000, scale)
    independent = calibration.aa_rates(seed=40, shared=0.0, compares=compares)
    shared = calibration.aa_rates(seed=41, shared=0.5, compares=compares)
    holm = [rates[m, "holm"] for rates in (independent, shared) for m in calibration.METHODS]
    none = [rates[m, "none"] for rates in (independent, shared) for m in calibration.METHODS]
    ok = within(independent["student", "holm"], 0.04, 0.06) and all(within(h, 0.02, 0.06) for h in holm) \
        and min(none) > 0.1
    return (f"after Holm {min(holm):.1%}-{max(holm):.1%} (Student, independent strides "
            f"{independent['student', 'holm']:.1%}); unadjusted {min(none):.1%}-{max(none):.1%}",
            "Holm 2-6% (Student 4-6%), unadjusted > 10%", ok)


# --- compare --by: the cells of one run, paired ----------------------------------------------------

def paired_t(scale):
    """95% of paired CIs hold the true ratio; Welch on the same rounds sees the shared luck as noise."""
    k = scaled(2000, scale)
    rng = np.random.default_rng(10)
    hits = total = 0
    widths = []
    for ratio in (0.7, 1.0, 1.3):
        for n in range(3, 11):
            base, new = noise_sim.paired_cells(rng, n, ratio, k)
            r = paired.paired_t(base, new, 95)
            hits += int(((r["low"] <= ratio) & (ratio <= r["high"])).sum())
            total += k
            w = two_sample.log_t(base, new, "welch", 95)
            widths.append(np.median(np.log(r["high"] / r["low"]) / np.log(w["high"] / w["low"])))
    return (f"coverage {hits / total:.1%}, width against Welch's at most {max(widths):.2f}",
            "coverage 94-96%, width < 0.5 of Welch's", within(hits / total, 0.94, 0.96) and max(widths) < 0.5)


def median_bootstrap_short(scale):
    """Why --metric median takes no paired bootstrap: its percentile CI of the median difference
    covers short of 95% at 8-10 rounds."""
    import inspect

    from scipy import stats as sps

    seed = "rng" if "rng" in inspect.signature(sps.bootstrap).parameters else "random_state"  # scipy 1.15
    rng = np.random.default_rng(12)
    cover = []
    for n in (8, 10):
        base, new = noise_sim.paired_cells(rng, n, 1.0, scaled(600, scale))
        d = np.log(new) - np.log(base)
        ci = sps.bootstrap((d,), np.median, axis=-1, vectorized=True, n_resamples=999, method="percentile",
                           **{seed: np.random.default_rng(5)}).confidence_interval
        cover.append(float(((ci.low <= 0) & (0 <= ci.high)).mean()))
    return f"coverage {np.mean(cover):.1%}", "below 94%", np.mean(cover) < 0.94


def within_run_aa(scale):
    """An A/A inside one run over 4 strides: each stride's paired t ~5%, Holm's compare <= 5%."""
    rng = np.random.default_rng(13)
    k = scaled(4000, scale)
    p = np.stack([paired.paired_t(*noise_sim.paired_cells(rng, 5, 1.0, k), 95)["p"] for _ in range(4)], axis=-1)
    each = float((p < 0.05).mean())
    holm = float(np.mean([(multiplicity.holm(row) < 0.05).any() for row in p]))
    return f"a stride {each:.1%}, after Holm {holm:.1%}", "a stride 4-6%, Holm 3-6%", \
        within(each, 0.04, 0.06) and within(holm, 0.03, 0.06)


# --- model: bootstrap t intervals of the cost fit, and of a before/after change --------------------

def _model_coverage(rounds, sims, rng):
    pages = np.array([1, 16, 32, 64.0])
    whole = np.array([False, False, False, True])
    truth = np.array([9.6, 1.5, 13.0, (13.0 - 9.6) / 1.5])
    mean = np.array([9.6 + 1.5, 9.6 + 24, 9.6 + 48, 13.0])
    hits = np.zeros(4)
    for _ in range(sims):
        units = mean * rng.normal(1, 0.04, (rounds, 1)) * rng.normal(1, 0.02, (rounds, 4))
        point = model.estimate(units.mean(axis=0), pages, whole)[0]
        draws = model.bootstrap(units, pages, whole, rng, 1000)
        for k in range(4):
            low, high = model.t_interval(point[k], draws[:, k], rounds - 1, 95)
            hits[k] += low <= truth[k] <= high
    return hits / sims


def model_interval(scale):
    """Percentile intervals would cover 73% (3 rounds) and 84% (5); the t x bootstrap-SE ones 95%."""
    covers = np.concatenate([_model_coverage(rounds, scaled(300, scale), np.random.default_rng(rounds))
                             for rounds in (3, 5)])
    return f"coverage {covers.min():.1%}-{covers.max():.1%} (4 parameters, 3 and 5 rounds)", \
        "91.5-98.5% each", bool(np.all((covers >= 0.915) & (covers <= 0.985)))


def model_change(scale):
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "analysis"))
    from test_model import M, make

    sims = scaled(250, scale)
    hits = np.zeros(4)
    truth_a = {65536: 11.1, M: 33.6, 2 * M: 57.6, 4 * M: 13.0}
    truth_b = {65536: 10.1, M: 31.1, 2 * M: 53.5, 4 * M: 12.0}
    expected = np.array([8.7 / 9.6, 1.4 / 1.5, 12.0 / 13.0, ((12.0 - 8.7) / 1.4) / ((13.0 - 9.6) / 1.5)]) - 1
    for i in range(sims):
        a = make(truth_a, rounds=4, reps=1, page=65536, noise=0.05, seed=2 * i, size=1 << 30)
        b = make(truth_b, rounds=6, reps=1, page=65536, noise=0.02, seed=2 * i + 1, size=1 << 30)
        ma = model.side_models([a], "a", resamples=1000, side=0, seed=i)[0]
        mb = model.side_models([b], "b", resamples=1000, side=1, seed=i)[0]
        for k, row in enumerate(model.change(ma, mb)):
            hits[k] += row["ci_low_pct"] <= expected[k] * 100 <= row["ci_high_pct"]
    covers = hits / sims
    return f"coverage {covers.min():.1%}-{covers.max():.1%} (4 parameters)", "90-99% each", \
        bool(np.all((covers >= 0.9) & (covers <= 0.99)))


# --- a noise profile's side (compare of single runs with calibrate's between-run variance) ---------

def _profiled(rng, between_sd, within_sd, rounds, runs):
    """A profile entry of `runs` sub-runs, and a side of one process, from the same components."""
    cal = [rng.normal(rng.normal(0, between_sd), within_sd, rounds) for _ in range(runs)]
    side = rng.normal(rng.normal(0, between_sd), within_sd, rounds)
    return noise.entry(cal), side


def noise_profile(scale):
    """Two sides of one process each, each with its own profile: the CI of their ratio (1) covers."""
    covers = []
    for between_sd, runs in ((0.05, 8), (0.02, 8), (0.05, 5)):
        rng = np.random.default_rng(25)
        covered = made = 0
        for _ in range(scaled(1500, scale)):
            ea, a = _profiled(rng, between_sd, 0.04, 5, runs)
            eb, b = _profiled(rng, between_sd, 0.04, 5, runs)
            d = noise.difference(noise.side_with_noise_profile(a, ea, 0, "pa"),
                                 noise.side_with_noise_profile(b, eb, 1, "pb"))
            made += 1
            covered += d["ci_low_pct"] <= 0 <= d["ci_high_pct"]
        covers.append(covered / made)
    return f"coverage {min(covers):.1%}-{max(covers):.1%} (3 between-run levels)", "92-98% each", \
        all(within(c, 0.92, 0.98) for c in covers)


# --- --until: what stopping on precision costs -----------------------------------------------------

def until_rounds(scale):
    """Round means at 5% CV, a 1% target: stopped on, our interval keeps its coverage (independent and
    lag-1 0.5 rounds) where five fixed batch means lose it (they stop early on lucky narrow ones)."""
    figures, ok = [], True
    for phi, cap, least, between in ((0.0, 300, 0.92, (80, 120)), (0.5, 500, 0.88, (220, 300))):
        x = 1 + 0.05 * adaptive_sims.ar1_rows(phi, cap, scaled(1500, scale), np.random.default_rng(10))
        ours, rounds, capped = adaptive_sims.sequential(x, 1.0, adaptive_sims.adaptive.half_width)
        theirs, their_rounds, _ = adaptive_sims.sequential(x, 1.0, adaptive_sims.fixed_batches)
        figures.append(f"lag-1 {phi:g}: {ours:.1%} in {rounds:.0f} rounds against fixed batches' {theirs:.1%}")
        ok &= ours >= least and theirs <= 0.82 and capped < 0.02 and within(rounds, *between) \
            and their_rounds < rounds
    return "; ".join(figures), "ours >= 92% (88% at lag-1 0.5), fixed batches <= 82%", ok


def until_short(scale):
    x = 1 + 0.02 * adaptive_sims.ar1_rows(0.0, 120, scaled(3000, scale), np.random.default_rng(11))
    cover, rounds, _ = adaptive_sims.sequential(x, 1.0, adaptive_sims.adaptive.half_width)
    return f"coverage {cover:.1%} in {rounds:.0f} rounds", "90-95% in 12-22 rounds", \
        within(cover, 0.9, 0.95) and within(rounds, 12, 22)


def until_sub_runs(scale):
    """--until 5% --runs 3 on the noise simulator through the real RunPolicy: the t interval over
    sub-run means still covers after stopping on it."""
    cover, median_runs, timed, _ = adaptive_sims.side_coverage(noise_sim, scaled(150, scale, 5), 3, 5, 20.0,
                                                               0.03, 5.0, seed=31, max_time=300.0)
    return f"coverage {cover:.1%}, {median_runs:.0f} sub-runs (median), {timed:.0%} stopped by time", \
        "88-99% in 5-12 sub-runs, under 10% by time", \
        within(cover, 0.88, 0.99) and within(median_runs, 5, 12) and timed < 0.1


STUDIES = {"mean-ci": mean_ci, "mean-ci-unequal-spread": mean_ci_unequal_spread, "median-ci": median_ci,
           "aa-holm": aa_holm, "paired-t": paired_t, "median-bootstrap-short": median_bootstrap_short,
           "within-run-aa": within_run_aa, "model-interval": model_interval, "model-change": model_change,
           "noise-profile": noise_profile, "until-rounds": until_rounds, "until-short": until_short,
           "until-sub-runs": until_sub_runs}


def line(name, figures, claim, ok, seconds, claimed):
    verdict = ("inside" if ok else "OUTSIDE") if claimed else "few trials: no claim"
    return f"{name}: {figures} | claimed {claim} | {verdict} ({seconds:.0f} s)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="experiments, as a share of the study's (default 1)")
    ap.add_argument("--only", help="the studies to run, comma-separated (default all; --list names them)")
    ap.add_argument("--list", action="store_true", help="name the studies and stop")
    a = ap.parse_args(argv)
    if a.list:
        print("\n".join(STUDIES))
        return 0
    names = a.only.split(",") if a.only else list(STUDIES)
    unknown = [n for n in names if n not in STUDIES]
    if unknown or not a.scale > 0 or not math.isfinite(a.scale):
        print(f"coverage_studies: {'no study ' + ', '.join(unknown) if unknown else '--scale must be above 0'}"
              " (--list names the studies)", file=sys.stderr)
        return 2
    claimed, outside = a.scale >= 1, 0
    for name in names:
        start = time.monotonic()
        figures, claim, ok = STUDIES[name](a.scale)
        print(line(name, figures, claim, ok, time.monotonic() - start, claimed), flush=True)
        outside += claimed and not ok
    return 1 if outside else 0


if __name__ == "__main__":
    sys.exit(main())
