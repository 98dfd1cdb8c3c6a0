#!/usr/bin/env python3
"""Choosing run's --runs/--gap defaults from real A/A pairs, and the canary as a covariate.

Measure (`--measure DIR`): FILES default runs (`atsdbench run --runs 8 --gap 20s`, 1G, 5 rounds, the other options
at their defaults) one after the other, each file kept in DIR with a log of start and end times.  About 150 s a
file on a 2-core VM; keep the machine otherwise idle.

Analyse (`DIR`): every design below is cut out of those files (the first k sub-runs, or every other one for a
40 s gap; the first r rounds of each), so each design is measured on the same machine states:

  1x5        1 process x 5 rounds, the within-run verdict (`compare --unit round`)
  2x5@20 ... k sub-runs x r rounds, starts 20 s (or 40 s) apart, the sub-run the unit (what `--runs k` gives)

Pairs: two files of one design are an A/A pair when they are two or more files apart in the series, so the
end of one and the start of the other are >= 60 s apart, as a reboot between kernels would space them.
Reported per design:

  wall s       a side, from the samples' round_t (first round's start to the last round's end; process
               start-up not included)
  A/A pairs    pairs with any stride significant after Holm (the real `atsdbench compare`), of all
               pairs (not independent: each file is in several), and of disjoint pairs (0,2), (1,3),
               (4,6), ... (independent), with a 95% Clopper-Pearson interval on the disjoint rate
  MDE %        median mde_pct compare printed (80% power, Holm's first step)

Canary (`--canary`): per stride, on sub-run means of log rates, log rate = side + slope x log canary
(the canary's compute loop, its pointer chase, or both), the slope from within-side variation (ordinary
least squares with one intercept per side), the side difference tested with the residual variance and
n - 2 - covariates df, its standard error including the slope's estimation; Holm across strides as
compare does; MDE from the same se and df (detectable.mde_pct).  Beside it the same model without a covariate
(Student's t on sub-run means), so the two differ only by the canary.  Also how much of the variance of
sub-run means within a file, and of file means between files, the canary explains.

  scripts/bench_defaults.py --measure /tmp/aa --files 16
  scripts/bench_defaults.py /tmp/aa --canary
"""
import argparse
import glob
import math
import os
import subprocess
import sys
import time
from statistics import median

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from atsdbench.analysis import compare as comparison, detectable, multiplicity, stats  # noqa: E402
from atsdbench.data import results  # noqa: E402

# key: (sub-run indices out of 8, rounds a sub-run, gap s)
DESIGNS = {
    "1x5": ((0,), 5, 0),
    "2x5@20": ((0, 1), 5, 20),
    "3x5@20": ((0, 1, 2), 5, 20),
    "3x3@20": ((0, 1, 2), 3, 20),
    "4x3@20": ((0, 1, 2, 3), 3, 20),
    "4x5@20": ((0, 1, 2, 3), 5, 20),
    "5x3@20": ((0, 1, 2, 3, 4), 3, 20),
    "5x5@20": ((0, 1, 2, 3, 4), 5, 20),
    "8x3@20": (tuple(range(8)), 3, 20),
    "8x5@20": (tuple(range(8)), 5, 20),
    "3x5@40": ((0, 2, 4), 5, 40),
    "4x5@40": ((0, 2, 4, 6), 5, 40),
}
CANARIES = {"none": (), "compute": ("canary_compute_ns",), "chase": ("canary_chase_ns",),
            "both": ("canary_compute_ns", "canary_chase_ns")}


def measure(out, files, runs, gap):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "log"), "a") as log:
        for k in range(files):
            path = os.path.join(out, f"run{k:02d}.json")
            t0 = time.time()
            p = subprocess.run([sys.executable, "-m", "atsdbench", "run", "--runs", str(runs), "--gap", gap,
                                "-o", path], capture_output=True, text=True)
            log.write(f"{k:02d} start {t0:.3f} end {time.time():.3f} rc={p.returncode}\n")
            log.flush()
            print(f"file {k + 1}/{files}: rc {p.returncode}, {time.time() - t0:.0f} s", flush=True)


def cut(result, runs, rounds):
    """The design's part of one file: sub-runs `runs` (renumbered 0..), the first `rounds` measured rounds of
    each, with their warm-up rounds."""
    keep = []
    for new, k in enumerate(runs):
        recs = [s for s in result.records if s.get("run", 0) == k]
        measured = set(sorted({s["round"] for s in recs if not s["warmup"]})[:rounds])
        warmup_rounds = {s["round"] for s in recs} - {s["round"] for s in recs if not s["warmup"]}
        keep += [dict(s, run=new) for s in recs if s["round"] in measured | warmup_rounds]
    config = dict(result.config, runs=len(runs), rounds=rounds)
    return results.Result(result.host, config, keep, result.complete, result.started, result.finished, result.path)


def wall(result):
    t = {}
    for s in result.records:
        if not s["warmup"]:
            t.setdefault((s.get("run", 0), s["round"]), []).append(s["round_t"])
    starts = sorted(min(v) for v in t.values())
    steps = np.diff(starts)
    one_round = float(np.median(steps[steps < 5])) if np.any(steps < 5) else 0.0
    return max(starts) - min(starts) + one_round


def clopper_pearson(k, n, confidence=0.95):
    from scipy import stats as sps

    a = 1 - confidence
    low = 0.0 if k == 0 else sps.beta.ppf(a / 2, k, n - k + 1)
    high = 1.0 if k == n else sps.beta.ppf(1 - a / 2, k + 1, n - k)
    return low, high


def pairs_of(n):
    all_pairs = [(i, j) for i in range(n) for j in range(i + 2, n)]
    disjoint = [(b + o, b + o + 2) for b in range(0, n - 3, 4) for o in (0, 1)]
    return all_pairs, disjoint


def design_table(files):
    rows = []
    all_pairs, disjoint = pairs_of(len(files))
    for key, (runs, rounds, gap) in DESIGNS.items():
        sides = [cut(r, runs, rounds) for r in files]
        unit = "round" if len(runs) == 1 else "run"  # the within-session verdict: compare withholds it by default
        hit, mdes = {}, []
        for i, j in all_pairs:
            cmp = comparison.compare([sides[i], sides[j]], unit=unit)
            hit[(i, j)] = any(r["significant"] for r in cmp.rows)
            mdes += [r["mde_pct"] for r in cmp.rows if not math.isnan(r["mde_pct"])]
        k_all, k_dis = sum(hit.values()), sum(hit[p] for p in disjoint)
        lo, hi = clopper_pearson(k_dis, len(disjoint))
        rows.append([key, f"{median(wall(s) for s in sides):.0f}", f"{k_all}/{len(all_pairs)} = "
                     f"{100 * k_all / len(all_pairs):.0f}%", f"{k_dis}/{len(disjoint)} ({100 * lo:.0f}-{100 * hi:.0f}%)",
                     f"{median(mdes):.1f}" if mdes else "-"])
    return ["design", "wall s", "A/A, all pairs", "A/A, disjoint (95% CI)", "MDE %"], rows


# ---- replicate sessions: several default runs a side, at different times ----

def sessions(files, spacing=60.0):
    """Every sub-run of the series as a one-process run of its own (what a default `run` is), in time order,
    thinned to starts >= `spacing` apart: the sessions a user would make with one run per boot."""
    out = []
    for r in files:
        for part in r.sub_runs():
            t = r.started + min(s["round_t"] for s in part.records)
            one = results.Result(part.host, dict(part.config, runs=1), [dict(s, run=0) for s in part.records],
                                 True, path=f"{os.path.basename(r.path)}#{part.sub_run}")
            out.append((t, one))
    out.sort(key=lambda x: x[0])
    kept = []
    for t, one in out:
        if not kept or t - kept[-1][0] >= spacing:
            kept.append((t, one))
    return [one for _, one in kept]


def session_table(files, spacing=60.0):
    runs = sessions(files, spacing)
    rows = []
    for k in (2, 3, 5):
        for order in ("alternating", "sequential"):
            hit, mdes, wins = [], [], []
            for w in range(len(runs) - 2 * k + 1):
                window = runs[w:w + 2 * k]
                a, b = (window[0::2], window[1::2]) if order == "alternating" else (window[:k], window[k:])
                cmp = comparison.compare([a, b])
                hit.append(any(r["significant"] for r in cmp.rows))
                mdes += [r["mde_pct"] for r in cmp.rows if not math.isnan(r["mde_pct"])]
                wins.append(w)
            disjoint = [h for w, h in zip(wins, hit) if w % (2 * k) == 0]
            lo, hi = clopper_pearson(sum(disjoint), len(disjoint))
            rows.append([f"{k} runs a side, {order}", f"{sum(hit)}/{len(hit)} = {100 * sum(hit) / len(hit):.0f}%",
                         f"{sum(disjoint)}/{len(disjoint)} ({100 * lo:.0f}-{100 * hi:.0f}%)",
                         f"{median(mdes):.1f}" if mdes else "-"])
    head = ["design (one 5-round process a run, runs >= %g s apart)" % spacing, "A/A, all windows",
            "A/A, disjoint windows (95% CI)", "MDE %"]
    return head, rows, len(runs)


# ---- the canary as a covariate ----

def sub_run_means(result, stride):
    """(log rate, {canary: log ns}) per sub-run: the mean over its measured rounds of the round's mean GB/s
    (compare's sub-run observation), and the mean log canary of the same rounds."""
    out = {}
    for s in result.records:
        if s["warmup"]:
            continue
        if s["stride_bytes"] == stride:
            out.setdefault(s.get("run", 0), {}).setdefault(s["round"], []).append(s)
    y, cov = [], {c: [] for c in ("canary_compute_ns", "canary_chase_ns")}
    for run in sorted(out):
        rounds = out[run]
        y.append(math.log(np.mean([np.mean([s["gbps"] for s in v]) for v in rounds.values()])))
        for c in cov:
            cov[c].append(np.mean([math.log(v[0][c]) for v in rounds.values()]))
    return np.array(y), {c: np.array(v) for c, v in cov.items()}


def ancova(ya, ca, yb, cb):
    """Side difference (b - a) adjusted for covariates: OLS with an intercept per side; returns d, se, df."""
    n_a, n_b = len(ya), len(yb)
    y = np.concatenate([ya, yb])
    side = np.r_[np.zeros(n_a), np.ones(n_b)]
    cols = [np.ones_like(y), side] + [np.concatenate([a, b]) for a, b in zip(ca, cb)]
    x = np.column_stack(cols)
    df = len(y) - x.shape[1]
    if df < 1:
        return math.nan, math.nan, 0
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    s2 = resid @ resid / df
    xtx_inv = np.linalg.pinv(x.T @ x)
    return float(beta[1]), float(math.sqrt(s2 * xtx_inv[1, 1])), df


def canary_table(files, confidence=95.0):
    from scipy import special

    strides = files[0].config["strides"]
    all_pairs, disjoint = pairs_of(len(files))
    rows = []
    for key in ("3x5@20", "4x5@20", "5x5@20", "8x3@20", "8x5@20"):
        runs, rounds, _ = DESIGNS[key]
        means = [{s: sub_run_means(cut(r, runs, rounds), s) for s in strides} for r in files]
        for name, used in CANARIES.items():
            hit, mdes = {}, []
            for i, j in all_pairs:
                ps, rows_mde = [], []
                for s in strides:
                    (ya, ca), (yb, cb) = means[i][s], means[j][s]
                    d, se, df = ancova(ya, [ca[c] for c in used], yb, [cb[c] for c in used])
                    t = abs(d) / se if se > 0 else math.inf
                    ps.append(float(2 * special.stdtr(df, -t)) if df > 0 else math.nan)
                    rows_mde.append((se, df))
                adjusted = multiplicity.adjust(ps, "holm")
                hit[(i, j)] = bool(np.any(np.asarray(adjusted) < stats.alpha(confidence)))
                mdes += [detectable.mde_pct(se, df, confidence, len(strides)) for se, df in rows_mde]
            k_all, k_dis = sum(hit.values()), sum(hit[p] for p in disjoint)
            rows.append([key, name, f"{k_all}/{len(all_pairs)} = {100 * k_all / len(all_pairs):.0f}%",
                         f"{k_dis}/{len(disjoint)}", f"{np.nanmedian(mdes):.1f}"])
    return ["design", "covariate", "A/A, all pairs", "A/A, disjoint", "MDE %"], rows


def explained(files):
    """Share of variance the canaries explain (both, OLS): of sub-run means within a file (one intercept per
    file), and of file means between files; per stride."""
    out = []
    for s in files[0].config["strides"]:
        ys, cs, groups = [], [], []
        for g, r in enumerate(files):
            y, c = sub_run_means(r, s)
            ys.append(y)
            cs.append(np.column_stack([c["canary_compute_ns"], c["canary_chase_ns"]]))
            groups += [g] * len(y)
        y, c, groups = np.concatenate(ys), np.vstack(cs), np.array(groups)
        dummies = (groups[:, None] == np.arange(len(files))[None, :]).astype(float)

        def ss(x):
            beta, *_ = np.linalg.lstsq(x, y, rcond=None)
            r = y - x @ beta
            return r @ r

        within = 1 - ss(np.column_stack([dummies, c])) / ss(dummies)
        fy = np.array([v.mean() for v in ys])
        fc = np.array([v.mean(axis=0) for v in cs])
        xb = np.column_stack([np.ones(len(fy)), fc])
        beta, *_ = np.linalg.lstsq(xb, fy, rcond=None)
        rb = fy - xb @ beta
        between = 1 - (rb @ rb) / ((fy - fy.mean()) @ (fy - fy.mean()))
        sd_within = math.sqrt(ss(dummies) / (len(y) - len(files)))
        sd_between = float(np.std(fy, ddof=1))
        out.append([f"{s >> 10}K" if s < 1 << 20 else f"{s >> 20}M", f"{100 * sd_within:.1f}",
                    f"{100 * within:.0f}%", f"{100 * sd_between:.1f}", f"{100 * between:.0f}%"])
    return ["stride", "SD sub-run means in a file %", "explained", "SD file means %", "explained"], out


# ---- simulation with the slow drift measured here ----
# the noise simulator's noise (tests/support/noise_sim.py: pass, round, an 8 s drift, a per-process effect sP;
# strides correlated 0.7) plus the slow host drift the series above measured: a random walk on the log scale
# whose variance grows SLOW_C per second (0.04 %^2/s: the 1M variogram, 4.9% SD of a difference at 10 min, 8.5%
# at 30 min; 64K's is about half), shared by the strides.  A session is one process of 5 rounds; sessions
# SESSION_S apart.

SLOW_C = 0.04e-4  # (log units)^2 per second
SESSION_S = 60.0


def _session_designs():
    # key: (label, sessions a side, alternating?, sub-runs a session, gap between sub-runs)
    return {"1f-5x5@20": ("one --runs 5 --gap 20s file a side, 60 s apart", 1, False, 5, 20.0),
            "3alt": ("3 runs a side, alternating", 3, True, 1, 0.0),
            "3seq": ("3 runs a side, one side after the other", 3, False, 1, 0.0),
            "5alt": ("5 runs a side, alternating", 5, True, 1, 0.0),
            "5seq": ("5 runs a side, one side after the other", 5, False, 1, 0.0)}


def _simulate_design(task):
    import warnings

    from _support import noise_sim as sim

    seed, key, sp, reps = task
    label, k, alternating, runs, gap = _session_designs()[key]
    rng = np.random.default_rng(np.random.SeedSequence([seed, list(_session_designs()).index(key), int(sp * 10)]))
    aa = covered = with_ci = power = rows_change = 0
    mdes = []
    span = sim.schedule(runs, 5, gap)[1] + SESSION_S  # one session's start to the next one's
    for kind, change in (("aa", 0.0), ("change", 0.10)):
        for _ in range(reps):
            n = 2 * k
            steps = rng.standard_normal(n) * math.sqrt(SLOW_C * span)
            slow = np.cumsum(steps)
            order = [i % 2 for i in range(n)] if alternating else [i // k for i in range(n)]
            sides = [[], []]
            for i, side in enumerate(order):
                c = math.expm1(slow[i] + (math.log1p(change) if side else 0.0))
                sides[side].append(sim.simulate_side(rng, runs, 5, gap, sp / 100, 0.0, c, "AB"[side],
                                                     f"boot-{i}"))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cmp = comparison.compare([sides[0] if k > 1 else sides[0][0], sides[1] if k > 1 else sides[1][0]],
                                         unit="run" if k == 1 else "auto")
            for r in cmp.rows:
                if math.isfinite(r["ci_low_pct"]):
                    with_ci += 1
                    covered += r["ci_low_pct"] <= 100 * change <= r["ci_high_pct"]
                if math.isfinite(r["mde_pct"]):
                    mdes.append(r["mde_pct"])
                if kind == "change":
                    rows_change += 1
                    power += bool(r["significant"]) and r["speedup_pct"] > 0
            if kind == "aa":
                aa += any(r["significant"] for r in cmp.rows)
    return [label, sp, f"{100 * aa / reps:.1f}", f"{100 * covered / with_ci:.1f}" if with_ci else "-",
            f"{100 * power / rows_change:.1f}", f"{median(mdes):.1f}" if mdes else "-"]


def simulate(reps, seed, sps=(0, 3), jobs=1):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _support import noise_sim as sim

    rows = sim.map_cells(_simulate_design, [(seed, key, sp, reps) for key in _session_designs() for sp in sps], jobs)
    return ["design", "sP %", "A/A %", "coverage %", "power at +10% %", "MDE %"], rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", help="a folder of files from --measure, to analyse")
    ap.add_argument("--measure", metavar="DIR", help="measure the series into DIR")
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--gap", default="20s")
    ap.add_argument("--canary", action="store_true", help="also evaluate the canary as a covariate")
    ap.add_argument("--simulate", action="store_true", help="simulate the session designs with the slow drift")
    ap.add_argument("--reps", type=int, default=100, help="--simulate: A/A and +10%% pairs a design")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    a = ap.parse_args(argv)
    if a.simulate:
        from tabulate import tabulate

        head, rows = simulate(a.reps, a.seed, jobs=a.jobs)
        print(tabulate(rows, headers=head, tablefmt="github"))
        return 0
    if a.measure:
        measure(a.measure, a.files, a.runs, a.gap)
        return 0
    if not a.dir:
        ap.error("give a folder to analyse, or --measure DIR")
    from tabulate import tabulate

    files = [results.load(p) for p in sorted(glob.glob(os.path.join(a.dir, "run*.json")))]
    files = [f for f in files if f.complete and len(f.sub_runs()) == a.runs]
    print(f"{len(files)} files of {a.runs} sub-runs in {a.dir}; pairs >= 2 files apart (>= 60 s)\n")
    head, rows = design_table(files)
    print(tabulate(rows, headers=head, tablefmt="github"))
    print()
    head, rows, n = session_table(files)
    print(f"{n} sessions (sub-runs >= 60 s apart, each taken as one default run); sides of a window alternate "
          "(ABAB, one run per boot) or follow each other (AAABBB); the run the unit (replicate files)\n")
    print(tabulate(rows, headers=head, tablefmt="github"))
    if a.canary:
        print()
        head, rows = canary_table(files)
        print(tabulate(rows, headers=head, tablefmt="github"))
        print()
        head, rows = explained(files)
        print(tabulate(rows, headers=head, tablefmt="github"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
