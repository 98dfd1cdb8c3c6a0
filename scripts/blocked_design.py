#!/usr/bin/env python3
"""The blocked design of compare FLEET (a simulation study, not a test): A/A false-positive rate, CI
coverage and the smallest detectable change of a fleet's verdict, where the boards' speeds differ
5-50 times the kernel's effect, four ways:

  exchangeable: every board's A files against every board's B files, Welch's t on the files' log rates
                (what compare FILES does with replicate lists that mix boards);
  blocked-t:    each board's log ratio (its B files' mean log rate - its A files'), then their mean with
                a t interval on k - 1 df (analysis/blocked.py, what compare FLEET does);
  inverse-var:  the same per-board ratios weighted by 1 / (their own Welch variance + a DerSimonian-Laird
                between-board component), a normal interval (the usual random-effects meta-analysis);
  one board:    the first board's files alone, Welch's t (what one board of the fleet says by itself).

The files' noise is the project's noise model (tests/support/noise_sim.py): `--pool` files of one
process x 5 rounds (sP 3%, a per-boot effect 2%: each LAVA job is a boot of its own) are simulated whole
and reduced by compare's own path (analysis/compare.group_observations, unit run) at the 2M stride; each
fleet then draws its files' noise from that pool.  Board offsets are normal on the log scale with an sd
of 5 or 50 times the kernel effect; the last two rows give the effect itself a board-to-board sd of
half of it.
A board that ran one side only (`one-sided` rows) adds its files to the exchangeable design's side and is
left out of the blocked ones, as compare FLEET leaves it out.  Seeded: the same arguments print the same
table.  95% confidence, one stride (no Holm).

usage: scripts/blocked_design.py [--reps 4000] [--pool 400] [--files 2] [--effect 2] [--seed 56]
                                 [--boards 2,3,4,8]
"""
import argparse
import math

import numpy as np

import _support  # noqa: F401  (puts tests/support on sys.path)
from noise_sim import STRIDES, simulate_side

STRIDE = STRIDES[2]  # 2M
CONFIDENCE = 95.0


def file_noise(rng, pool):
    """The log-rate noise of `pool` simulated files (one process x 5 rounds each, its own boot), through
    compare's reduction of a replicate file to one observation; centred."""
    from atsdbench.analysis.compare import group_observations

    values = []
    for i in range(pool):
        side = simulate_side(rng, runs=1, rounds=5, gap=0.0, sp=0.03, boot=0.02, label="A", boot_id=f"b{i}")
        values.append(math.log(float(group_observations([side], STRIDE, "run", "mean")[0])))
    values = np.array(values)
    return values - values.mean()


def draw_fleets(rng, noise, reps, k, files, ratio, effect, change, tau, one_sided):
    """Log rates of `reps` fleets: a (reps, k, files) array per side, and the one-sided boards' A files
    (reps, one_sided * files)."""
    offsets = rng.normal(0.0, ratio * effect, (reps, k, 1))
    board_change = math.log1p(change) + (rng.normal(0.0, tau, (reps, k, 1)) if tau else 0.0)
    a = offsets + rng.choice(noise, (reps, k, files))
    b = offsets + board_change + rng.choice(noise, (reps, k, files))
    extra = rng.normal(0.0, ratio * effect, (reps, one_sided, 1)) + rng.choice(noise, (reps, one_sided, files))
    return a, b, extra.reshape(reps, one_sided * files)


def exchangeable(a, b, extra):
    """Welch's t on log rates over every file of a side, boards mixed: (log ratio, se, df, p)."""
    from atsdbench.analysis.two_sample import log_t

    reps = a.shape[0]
    xa = np.concatenate([a.reshape(reps, -1), extra], axis=1)
    r = log_t(np.exp(xa), np.exp(b.reshape(reps, -1)), "welch", CONFIDENCE)
    return np.log(r["ratio"]), r["se"], r["df"], r["p"]


def blocked_t(a, b):
    """The mean of the boards' log ratios, t on k - 1 df (analysis/blocked.log_ratio_t)."""
    from atsdbench.analysis.blocked import log_ratio_t

    r = log_ratio_t(b.mean(axis=-1) - a.mean(axis=-1), CONFIDENCE)
    return r["mean"], r["se"], r["df"], r["p"]


def inverse_variance(a, b):
    """DerSimonian-Laird random effects over the boards' log ratios, each with its own Welch variance; a
    normal interval (df = inf)."""
    from scipy import special

    n = a.shape[-1]
    d = b.mean(axis=-1) - a.mean(axis=-1)
    v = a.var(axis=-1, ddof=1) / n + b.var(axis=-1, ddof=1) / n
    v = np.maximum(v, 1e-12)
    w = 1 / v
    k = d.shape[-1]
    fixed = (w * d).sum(-1) / w.sum(-1)
    q = (w * (d - fixed[:, None]) ** 2).sum(-1)
    tau2 = np.maximum(0.0, (q - (k - 1)) / (w.sum(-1) - (w ** 2).sum(-1) / w.sum(-1)))
    ws = 1 / (v + tau2[:, None])
    m = (ws * d).sum(-1) / ws.sum(-1)
    se = 1 / np.sqrt(ws.sum(-1))
    p = 2 * special.ndtr(-np.abs(m) / se)
    return m, se, np.full_like(m, np.inf), p


def one_board(a, b):
    """The first board alone, Welch's t on its own files: what the fleet is measured against."""
    from atsdbench.analysis.two_sample import log_t

    r = log_t(np.exp(a[:, 0]), np.exp(b[:, 0]), "welch", CONFIDENCE)
    return np.log(r["ratio"]), r["se"], r["df"], r["p"]


METHODS = {"exchangeable": exchangeable, "blocked-t": blocked_t, "inverse-var": inverse_variance,
           "one board": one_board}


def measures(method, a, b, extra, change):
    """(rejections, coverage of the true log change, the smallest detectable change % of the median
    fleet)."""
    from atsdbench.analysis.detectable import mde_pct
    from atsdbench.analysis.stats import t_quantile

    m, se, df, p = METHODS[method](a, b, extra) if method == "exchangeable" else METHODS[method](a, b)
    half = np.where(np.isinf(df), 1.959963984540054, t_quantile(CONFIDENCE, np.where(np.isinf(df), 1e6, df))) * se
    truth = math.log1p(change)
    covered = np.mean(np.abs(m - truth) <= half)
    # the design's typical fleet: its median standard error and df
    mde = mde_pct(float(np.median(se)), float(min(np.median(df), 1e6)), CONFIDENCE)
    return float(np.mean(p < 0.05)), float(covered), mde


def cell(rng, noise, reps, k, files, ratio, effect, tau, one_sided):
    """One row: per method, A/A false positives, then at +effect coverage, power and the median MDE."""
    out = {}
    aa = draw_fleets(rng, noise, reps, k, files, ratio, effect, 0.0, tau, one_sided)
    ab = draw_fleets(rng, noise, reps, k, files, ratio, effect, effect, tau, one_sided)
    for method in METHODS:
        fp, _, _ = measures(method, *aa, 0.0)
        power, covered, mde = measures(method, *ab, effect)
        out[method] = (fp, covered, power, mde)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=4000, help="simulated fleets per row and change")
    ap.add_argument("--pool", type=int, default=400, help="files simulated whole for the file noise")
    ap.add_argument("--files", type=int, default=2, help="files (boots) a side per board")
    ap.add_argument("--effect", type=float, default=2.0, help="the kernel's effect, percent")
    ap.add_argument("--seed", type=int, default=56)
    ap.add_argument("--boards", default="2,3,4,8", help="fleet sizes (boards with both sides)")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    noise = file_noise(rng, a.pool)
    effect = a.effect / 100
    print(f"file noise (noise_sim, 1 process x 5 rounds, sP 3%, boot 2%, 2M): sd {noise.std(ddof=1):.2%} over "
          f"{a.pool} files;\n{a.files} files a side per board; kernel effect {a.effect:g}%; {a.reps} fleets a "
          f"row; seed {a.seed}")
    print("each design: A/A false positives / coverage at +effect / smallest change detected (80%)")
    print("| boards | board sd / effect | effect's board sd | one-sided boards | "
          + " | ".join(METHODS) + " |")
    print("|---|---|---|---|" + "---|" * len(METHODS))
    rows = [(k, ratio, 0.0, 0) for ratio in (5, 50) for k in map(int, a.boards.split(","))]
    rows += [(4, 5, 0.0, 1), (4, 50, 0.0, 1), (4, 5, effect / 2, 0), (8, 5, effect / 2, 0)]
    for k, ratio, tau, one_sided in rows:
        found = cell(rng, noise, a.reps, k, a.files, ratio, effect, tau, one_sided)
        shown = [f"{fp:.1%} / {covered:.1%} / {mde:.0f}%" for fp, covered, _, mde in found.values()]
        print(f"| {k} | {ratio}x | {tau:.0%} | {one_sided} | " + " | ".join(shown) + " |")

if __name__ == "__main__":
    main()
