#!/usr/bin/env python3
"""Verdicts across runs and boots: what each run design costs a side and what its compare says.

Simulation (the default): the noise simulator (tests/support/noise_sim.py; its docstring gives the
model, measured on this VM: shared/notes/noise-levels.md), with an optional per-boot effect (one boot a
side).

Each simulated side is an atsdbench.data.results.Result with the real sample schema (round, rep, order,
stride_bytes, warmup, ns, seconds, calls, gbps, us_per_call, round_t and, with sub-runs, `run`; rounds
numbered across sub-runs, one warm-up round and one warm-up pass a round; config runs/gap, host boot_id),
and the REAL atsdbench.analysis.compare.compare is run on A/A pairs and on pairs whose new side is truly
10% faster at every stride (independent draws).  Per design, sP and boot effect it reports:

  wall s      a side, from the schedule: (runs - 1) x max(gap, one sub-run) + one sub-run, a sub-run being
              its rounds plus a warm-up round, 1.5 s each;
  A/A         compares in which any stride is significant after Holm (95%);
  no CI       rows without a CI (compare gave no verdict), A/A and +10% pairs;
  coverage    rows whose CI holds the true ratio (1 or 1.1), of those with a CI, both kinds of pair;
  power       rows of the +10% pairs significant and positive (per stride);
  MDE         the median mde_pct of the rows (compare's smallest change detectable with 80% power).

Every cell of the table has its own seeds (SeedSequence of --seed and the cell), so a number does not
depend on --jobs nor on which cells were asked for.

  scripts/bench_verdict.py                       # defaults: ~2-3 min on a 2-core VM
  scripts/bench_verdict.py --reps 400 --jobs 2   # tighter numbers
  scripts/bench_verdict.py --reps 4 --designs 1x5 --sp 3 --boot 0   # seconds (tests)

Real mode (`--real`, measures this machine; never run by the tests): for one design, K A/A pairs of
`python -m atsdbench run --size 256M --strides 64K,1M,2M,4M --rounds R --runs M --gap G -o FILE`, the two
sides of a pair and consecutive pairs at least --spacing seconds apart (default 60: a reboot would space
them at least that), each pair compared with `python -m atsdbench compare A B --format json`; prints the
measured wall time a side, the A/A rate (any stride after Holm) and the median mde_pct.

  scripts/bench_verdict.py --real --design 5x5@20 --pairs 10 --spacing 60

A placement level (`--pl PCT`): each sub-run holds K regions and its round i uses region i mod K
(designs ending /K4: `run --placements 4`; the others one region, whose effect is then per-process).
`--real --files N --placements K --rounds R --pairs P` measures replicate files instead: 2 x N x P runs
alternating A, B, A, B, --spacing apart; P compares of N files a side, and each (A_i, B_i) once more as
one file a side with `--unit round` forced (docs/methodology.md#what-placements-inside-a-file-do-to-the-verdict).

  scripts/bench_verdict.py --designs 1x16,1x16/K4,4x16@20,4x16@20/K4 --sp 0,7 --boot 0 --pl 0,14
  scripts/bench_verdict.py --real --files 4 --pairs 5 --rounds 16 --placements 4 --spacing 10

Profiled designs (1x5+PK): each side one process, its between-run variance from a noise profile of its
kernel (analysis/noise.py).  Simulated, each kernel gets its own calibration (K sub-runs x 5 rounds, 150 s
apart, at another time than the side, through the real estimator and the real compare --noise-profile);
`calibrate s` is that calibration's wall time, once per kernel and plan.  --real calibrates once (one
kernel here), then measures the pairs against that profile.

The simulated drift (8 s) is gone within a sub-run gap, so it cannot tell a 20 s gap from 150 s; the
real host drifts over minutes.  `--from-runs DIR` measures the profiled design on real sub-runs already
measured (the --runs 8 --gap 20s files of scripts/bench_defaults.py --measure DIR, one boot, ~150 s a
file): a side is sub-run 0 of file k, its profile `--calibration` before (file k-1: 8 sub-runs 20 s
apart), after (file k's sub-runs 1-7) or spread[:K:STEP] (sub-run 0 of K files STEP apart before k:
sub-runs ~150 x STEP s apart), each side of a pair labelled its own kernel so each gets its own profile;
pairs two or more files apart.  Prints the A/A rate, the rows whose CI holds 0, the rows the spread
check withheld and the median mde_pct.

  scripts/bench_verdict.py --from-runs /tmp/aa --calibration spread
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from statistics import median

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import _support  # noqa: E402,F401  tests/support on sys.path: the noise simulator's one loader for scripts
from noise_sim import (CALIBRATION_GAP, TRUE_CHANGE, calibration, map_cells, schedule,  # noqa: E402
                       simulate_side)

# key: (label, runs, rounds, gap in s; 0 = back to back)
DESIGNS = {
    "1x5": ("1 process x 5 rounds (--unit round)", 1, 5, 0.0),
    "5x5@20": ("5 sub-runs x 5 rounds, 20 s apart", 5, 5, 20.0),
    "8x3@20": ("8 x 3, 20 s apart", 8, 3, 20.0),
    "5x5@0": ("5 x 5 back to back", 5, 5, 0.0),
    "3x5@20": ("3 x 5, 20 s apart", 3, 5, 20.0),
    # one process a side, its between-run variance from a noise profile of its kernel (atsdbench calibrate:
    # K sub-runs x 5 rounds, 150 s apart, each kernel calibrated on its own, at another time)
    "1x5+P5": ("1 x 5 + profile of 5 x 5 @ 150 s", 1, 5, 0.0),
    "1x5+P8": ("1 x 5 + profile of 8 x 5 @ 150 s", 1, 5, 0.0),
    "1x5+P12": ("1 x 5 + profile of 12 x 5 @ 150 s", 1, 5, 0.0),
    # the placement level (--pl): K regions a process, round r on region r mod K (run --placements K)
    "1x16": ("1 x 16 rounds, 1 placement (--unit round)", 1, 16, 0.0),
    "1x16/K4": ("1 x 16 rounds over 4 placements (--unit round)", 1, 16, 0.0),
    "4x16@20": ("4 x 16, 20 s apart, 1 placement each", 4, 16, 20.0),
    "4x16@20/K4": ("4 x 16, 20 s apart, 4 placements each", 4, 16, 20.0),
}
PLACEMENTS = {"1x16/K4": 4, "4x16@20/K4": 4}  # design -> run --placements (the others: 1)
PROFILED = {"1x5+P5": 5, "1x5+P8": 8, "1x5+P12": 12}  # design -> the calibration's sub-runs
COLUMNS = ["design", "sP %", "boot %", "place %", "wall s", "calibrate s", "A/A %", "no CI %", "coverage %", "power %",
           "MDE %"]


def _cell(task):
    """One cell of the table: `reps` A/A pairs and `reps` +10% pairs through compare."""
    import warnings

    import numpy as np

    from atsdbench.analysis.compare import compare

    seed, key, sp_pct, boot_pct, reps, pl_pct = (tuple(task) + (0.0,))[:6]
    _, runs, rounds, gap = DESIGNS[key]
    ident = [seed, list(DESIGNS).index(key), int(round(sp_pct * 10)), int(round(boot_pct * 10))]
    ident += [int(round(pl_pct * 10))] if pl_pct else []  # cells without a placement level keep their seeds
    rng = np.random.default_rng(np.random.SeedSequence(ident))
    sp, boot, pl, k = sp_pct / 100, boot_pct / 100, pl_pct / 100, PLACEMENTS.get(key, 1)
    aa_any = rows_ci = covered = no_ci = rows = power_hits = power_rows = 0
    mdes = []
    for kind, change in (("aa", 0.0), ("change", TRUE_CHANGE)):
        for _ in range(reps):
            a = simulate_side(rng, runs, rounds, gap, sp, boot, 0.0, "A", "boot-a", pl, k)
            b = simulate_side(rng, runs, rounds, gap, sp, boot, change, "B", "boot-b", pl, k)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if key in PROFILED:  # each kernel its own calibration: K - 1 df of between-run variance a side
                    found = [calibration(rng, PROFILED[key], rounds, sp, boot, c, side)
                             for c, side in ((0.0, "A"), (change, "B"))]
                    cmp = compare([a, b], noise_profiles=found)
                else:
                    # One file a side gets no verdict by default (one session: the drift between sessions is
                    # not in it): what it would say is its within-session verdict, --unit round or run.  This
                    # simulation has no drift slower than 8 s (scripts/bench_defaults.py --simulate adds it).
                    cmp = compare([a, b], unit="round" if runs == 1 else "run")
            truth = change * 100
            for r in cmp.rows:
                rows += 1
                if math.isfinite(r["ci_low_pct"]) and math.isfinite(r["ci_high_pct"]):
                    rows_ci += 1
                    covered += r["ci_low_pct"] <= truth <= r["ci_high_pct"]
                else:
                    no_ci += 1
                if math.isfinite(r.get("mde_pct", math.nan)):
                    mdes.append(r["mde_pct"])
                if kind == "change":
                    power_rows += 1
                    power_hits += bool(r["significant"]) and r["speedup_pct"] > 0
            if kind == "aa":
                aa_any += any(bool(r["significant"]) for r in cmp.rows)
    label = DESIGNS[key][0]
    calibrate = schedule(PROFILED[key], rounds, CALIBRATION_GAP)[1] if key in PROFILED else 0.0
    return {"design": label, "sP %": sp_pct, "boot %": boot_pct, "place %": pl_pct, "wall s": schedule(runs, rounds, gap)[1],
            "calibrate s": calibrate,
            "A/A %": 100 * aa_any / reps, "no CI %": 100 * no_ci / rows if rows else math.nan,
            "coverage %": 100 * covered / rows_ci if rows_ci else math.nan,
            "power %": 100 * power_hits / power_rows if power_rows else math.nan,
            "MDE %": float(median(mdes)) if mdes else math.nan}


def simulate(designs, sps, boots, reps, seed, jobs=1, pls=(0.0,)):
    return map_cells(_cell, [(seed, d, sp, b, reps, pl) for d in designs for sp in sps for b in boots
                             for pl in pls], jobs)


def table(rows):
    from tabulate import tabulate

    return tabulate([[r[c] for c in COLUMNS] for r in rows], headers=COLUMNS, tablefmt="github",
                    floatfmt=("", ".0f", ".0f", ".0f", ".0f", ".0f", ".1f", ".1f", ".1f", ".1f", ".1f"))


# ---- --real: A/A pairs measured on this machine ----

def real(key, pairs, spacing, size, strides, out_dir=None):
    _, runs, rounds, gap = DESIGNS[key]
    tmp = out_dir or tempfile.mkdtemp(prefix="bench_verdict-")
    walls, any_sig, mdes, last_end, withheld, made = [], 0, [], None, 0, 0
    extra = ["--unit", "round"] if runs == 1 else []  # without a profile: the within-run verdict, as simulated
    if key in PROFILED:  # one kernel here: one calibration serves both sides of every A/A pair
        found = os.path.join(tmp, "profile.json")
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-m", "atsdbench", "calibrate", "--size", size, "--strides", strides,
                        "--rounds", str(rounds), "--runs", str(PROFILED[key]), "--gap", f"{CALIBRATION_GAP:g}s",
                        "--no-trace", "-o", found], check=True, capture_output=True)
        last_end = time.monotonic()
        print(f"calibrated in {last_end - t0:.0f} s: {found}", flush=True)
        extra = ["--noise-profile", found, "--no-noise-profile"]

    def side(name):
        nonlocal last_end
        if last_end is not None:
            wait = last_end + spacing - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        path = os.path.join(tmp, name)
        cmd = [sys.executable, "-m", "atsdbench", "run", "--size", size, "--strides", strides, "--rounds",
               str(rounds), "--runs", str(runs), "--gap", f"{gap if gap else 0:g}s", "--no-trace", "-o", path]
        t0 = time.monotonic()
        subprocess.run(cmd, check=True, capture_output=True)
        last_end = time.monotonic()
        walls.append(last_end - t0)
        return path

    for k in range(pairs):
        a, b = side(f"pair{k}-a.json"), side(f"pair{k}-b.json")
        p = subprocess.run([sys.executable, "-m", "atsdbench", "compare", a, b, "--format", "json", *extra],
                           check=True, capture_output=True, text=True)
        rows = json.loads(p.stdout)
        hit = [r["stride"] for r in rows if r.get("significant")]
        withheld += sum(1 for r in rows if r.get("verdict_withheld"))
        made += len(rows)
        any_sig += bool(hit)
        mdes += [r["mde_pct"] for r in rows if r.get("mde_pct") is not None]
        print(f"pair {k + 1}/{pairs}: {'different at ' + ', '.join(hit) if hit else 'no difference'}; "
              f"walls {walls[-2]:.0f} s, {walls[-1]:.0f} s", flush=True)
    print(f"\n{DESIGNS[key][0]} (--rounds {rounds} --runs {runs} --gap {gap:g}s), {pairs} A/A pairs, sides >= "
          f"{spacing:g} s apart; files in {tmp}")
    print(f"wall a side: median {median(walls):.0f} s (min {min(walls):.0f}, max {max(walls):.0f})")
    print(f"A/A, any stride significant after Holm: {any_sig}/{pairs} = {100 * any_sig / pairs:.0f}%")
    print(f"median mde_pct: {median(mdes):.1f}%" if mdes else "median mde_pct: none (no row had one)")
    if key in PROFILED:
        print(f"rows without a verdict (round spread unlike the profile's): {withheld}/{made}")


def real_files(pairs, per_side, placements, rounds, spacing, size, strides, out_dir=None):
    """Replicate files a side, alternating A, B, A, B ... (the design compare's verdict rests on), each
    `run --placements K --rounds R`: per group of PER_SIDE files a side one A/A compare of the sets
    (run as the unit), and every (A_i, B_i) pair once more as a single file a side with the round as
    the unit forced (what one file a side would say if its rounds, which rotate over K placements,
    stood for the files).  The files stay in the folder for a second look."""
    tmp = out_dir or tempfile.mkdtemp(prefix="bench_verdict-files-")
    os.makedirs(tmp, exist_ok=True)
    walls, last_end, names = [], None, {"a": [], "b": []}
    for k in range(pairs * per_side):
        for side in "ab":
            if last_end is not None:
                wait = last_end + spacing - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            path = os.path.join(tmp, f"{side}{k}.json")
            cmd = [sys.executable, "-m", "atsdbench", "run", "--size", size, "--strides", strides, "--rounds",
                   str(rounds), "--placements", str(placements), "--no-trace", "-o", path]
            t0 = time.monotonic()
            subprocess.run(cmd, check=True, capture_output=True, cwd=tmp)
            last_end = time.monotonic()
            walls.append(last_end - t0)
            names[side].append(path)
        print(f"file pair {k + 1}/{pairs * per_side}: {walls[-2]:.1f} s, {walls[-1]:.1f} s", flush=True)

    def verdicts(a, b, extra=()):
        p = subprocess.run([sys.executable, "-m", "atsdbench", "compare", a, b, "--format", "json", *extra],
                           check=True, capture_output=True, text=True, cwd=tmp)
        rows = json.loads(p.stdout)
        return ([r["stride"] for r in rows if r.get("significant")],
                [r["mde_pct"] for r in rows if r.get("mde_pct") is not None], len(rows))

    def report(title, results):
        hits = sum(1 for h, _, _ in results if h)
        rows = sum(n for _, _, n in results)
        sig_rows = sum(len(h) for h, _, _ in results)
        mdes = [m for _, ms, _ in results for m in ms]
        print(f"{title}: A/A any stride after Holm {hits}/{len(results)}; rows significant {sig_rows}/{rows}; "
              + (f"median mde_pct {median(mdes):.1f}% (range {min(mdes):.1f}-{max(mdes):.1f})" if mdes
                 else "no row had an mde"), flush=True)

    sets = []
    for g in range(pairs):
        cut = slice(g * per_side, (g + 1) * per_side)
        sets.append(verdicts(",".join(names["a"][cut]), ",".join(names["b"][cut])))
    singles = [verdicts(a, b, ["--unit", "round"]) for a, b in zip(names["a"], names["b"])]
    print(f"\nrun --size {size} --strides {strides} --rounds {rounds} --placements {placements}; files "
          f">= {spacing:g} s apart, alternating; in {tmp}")
    print(f"wall a file: median {median(walls):.1f} s (min {min(walls):.1f}, max {max(walls):.1f})")
    report(f"{per_side} files a side (unit run), {pairs} compares", sets)
    report(f"1 file a side, --unit round forced, {len(singles)} compares", singles)


# ---- --from-runs: the profiled design on real sub-runs measured already ----

CALIBRATIONS = {
    "before": "the file before the side's: 8 sub-runs 20 s apart, measured just before it (calibrate, then run)",
    "after": "the side's own file's sub-runs 1-7 (run, then calibrate at once)",
    "spread": "sub-run 0 of each of the 8 files before the side's: 8 sub-runs ~150 s apart (17 min)",
}  # and spread:K:STEP, sub-run 0 of K files STEP apart before the side's (K sub-runs ~150 x STEP s apart)


def _spread(calibration):
    """(K, STEP) of a spread calibration, or None."""
    if calibration == "spread":
        return 8, 1
    if calibration.startswith("spread:"):
        k, step = calibration.split(":")[1:]
        return int(k), int(step)
    return None


def _describe_calibration(calibration):
    if _spread(calibration) and calibration != "spread":
        k, step = _spread(calibration)
        return f"sub-run 0 of {k} files {step} apart before the side's: {k} sub-runs ~{150 * step} s apart"
    return CALIBRATIONS[calibration]


def _relabel(result, kernel, records=None, runs=None):
    """A copy of `result` (or of `records` of it) as if measured on kernel `kernel`: an A/A pair of two
    'kernels' whose profiles are told apart, as a real compare of two kernels tells them."""
    from atsdbench.data.results import Result

    records = result.records if records is None else records
    config = dict(result.config, runs=runs if runs is not None else result.config.get("runs", 1))
    return Result(dict(result.host, kernel_release=kernel), config, records, result.complete, result.started,
                  result.finished, result.path)


def from_runs(folder, calibration="before", spacing=2):
    """Real A/A pairs of one process a side with a profile each, cut out of the --runs files of
    scripts/bench_defaults.py --measure (one boot; files ~150 s apart): a side is sub-run 0 of file k
    (one process, its own allocations), its profile one of CALIBRATIONS; pairs two or more files apart
    (sides >= 60 s apart).  The real compare with the real profile estimator, Holm over the strides."""
    import glob
    import warnings

    from atsdbench.analysis import noise
    from atsdbench.analysis.compare import compare
    from atsdbench.data import noise_profile, results

    files = sorted(glob.glob(os.path.join(folder, "run*.json")))
    loaded = [results.load(f) for f in files]
    parts = [r.sub_runs() for r in loaded]

    def single(k, kernel):
        recs = [{x: v for x, v in rec.items() if x != "run"} for rec in parts[k][0].records]
        return _relabel(loaded[k], kernel, recs, runs=1)

    def made(k, kernel):
        if calibration == "before":
            if k < 1:
                return None
            cal = _relabel(loaded[k - 1], kernel)
        elif calibration == "after":
            cal = _relabel(loaded[k], kernel, [r for r in loaded[k].records if r.get("run", 0) > 0], runs=7)
        else:
            count, step = _spread(calibration)
            if k < count * step:
                return None
            recs = []
            for n, j in enumerate(range(k - count * step, k, step)):
                recs += [dict(r, run=n) for r in parts[j][0].records]
            cal = _relabel(loaded[k - 1], kernel, recs, runs=count)
        entries, per_run = noise.noise_profile_entries(cal)
        data = noise_profile.build(cal.host, cal.config, entries, True, per_run, when=cal.started or 0.0)
        return noise_profile.NoiseProfile(data, f"{os.path.basename(files[k])}-{calibration}-{kernel}")

    pairs = [(i, j) for i in range(len(files)) for j in range(i + spacing, len(files))]
    any_sig = rows = covered = withheld = 0
    mdes, used = [], 0
    for i, j in pairs:
        pa, pb = made(i, "A"), made(j, "B")
        if pa is None or pb is None:
            continue
        used += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cmp = compare([single(i, "A"), single(j, "B")], noise_profiles=[pa, pb])
        any_sig += any(r["significant"] for r in cmp.rows)
        for r in cmp.rows:
            rows += 1
            if math.isfinite(r["ci_low_pct"]):
                covered += r["ci_low_pct"] <= 0 <= r["ci_high_pct"]
                mdes.append(r["mde_pct"])
            else:
                withheld += 1
    print(f"one process a side + a profile each ({_describe_calibration(calibration)}); {used} A/A pairs >= {spacing} "
          f"files apart of {len(files)} files in {folder} (not independent: each file is in several)")
    print(f"A/A, any stride significant after Holm: {any_sig}/{used} = {100 * any_sig / used:.0f}%")
    print(f"rows whose CI holds 0: {covered}/{rows - withheld} = {100 * covered / max(1, rows - withheld):.1f}%; "
          f"rows without a verdict (spread unlike the profile): {withheld}/{rows}")
    print(f"median mde_pct: {median(mdes):.1f}%" if mdes else "median mde_pct: none")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=60, help="simulated A/A pairs, and as many +10%% pairs, a cell")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes for the simulation")
    ap.add_argument("--designs", default=",".join(DESIGNS), help=f"designs ({', '.join(DESIGNS)})")
    ap.add_argument("--sp", default="0,3,5", help="per-process effects, %% (comma list)")
    ap.add_argument("--boot", default="0,2", help="per-boot effects, %% (comma list)")
    ap.add_argument("--pl", default="0", help="per-placement (region) effects, %% (comma list); designs /K4 "
                    "rotate over 4 placements a process, the others hold one")
    ap.add_argument("--real", action="store_true", help="measure real A/A pairs here instead of simulating")
    ap.add_argument("--design", default="1x5", help="--real: the design to measure")
    ap.add_argument("--pairs", type=int, default=10, help="--real: A/A pairs")
    ap.add_argument("--spacing", type=float, default=60.0, help="--real: seconds between consecutive runs")
    ap.add_argument("--size", default="256M", help="--real: run --size")
    ap.add_argument("--strides", default="64K,1M,2M,4M", help="--real: run --strides")
    ap.add_argument("--files", type=int, default=0, metavar="N", help="--real: N replicate files a side, "
                    "alternating, each run --placements K --rounds R (and each A_i, B_i as one file a side)")
    ap.add_argument("--placements", type=int, default=4, metavar="K", help="--real --files: run --placements")
    ap.add_argument("--rounds", type=int, default=16, metavar="R", help="--real --files: run --rounds")
    ap.add_argument("--out-dir", default=None, help="--real --files: keep the files here")
    ap.add_argument("--from-runs", default=None, metavar="DIR", help="the profiled design's real A/A, cut out of "
                    "the --runs 8 files of scripts/bench_defaults.py --measure DIR")
    ap.add_argument("--calibration", default="before", help=f"--from-runs: {', '.join(CALIBRATIONS)}")
    a = ap.parse_args(argv)
    designs = [d for d in a.designs.split(",") if d]
    for d in designs + [a.design]:
        if d not in DESIGNS:
            ap.error(f"unknown design {d!r} (designs: {', '.join(DESIGNS)})")
    if a.real and a.files:
        real_files(a.pairs, a.files, a.placements, a.rounds, a.spacing, a.size, a.strides, a.out_dir)
        return 0
    if a.real:
        real(a.design, a.pairs, a.spacing, a.size, a.strides)
        return 0
    if a.from_runs:
        if a.calibration not in CALIBRATIONS and not a.calibration.startswith("spread:"):
            ap.error(f"unknown calibration {a.calibration!r} ({', '.join(CALIBRATIONS)})")
        from_runs(a.from_runs, a.calibration)
        return 0
    sps = [float(x) for x in a.sp.split(",") if x]
    boots = [float(x) for x in a.boot.split(",") if x]
    t0 = time.monotonic()
    pls = [float(x) for x in a.pl.split(",") if x]
    rows = simulate(designs, sps, boots, a.reps, a.seed, a.jobs, pls)
    print(table(rows))
    print(f"\n{a.reps} A/A + {a.reps} +10% pairs a cell, seed {a.seed}, 4 strides, Holm, 95%; "
          f"{time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
