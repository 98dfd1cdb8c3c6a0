"""Variance components of log rates: a noise profile's estimates, and the comparison of sides of one
process that borrow their between-run variance from one.  Pure: numpy and scipy.special.

From K sub-runs of n_k rounds each (atsdbench calibrate), per (cell, stride): `within`, the pooled
variance of log round means inside a sub-run; `means`, the variance of the sub-run observations;
`between` = means - mean(1/n_k) x within, clamped at 0, its df by Satterthwaite.  A one-process
side's mean then has variance own within / its rounds + between (combine: Welch-Satterthwaite over
estimated terms, a profile used for both sides counted once), and a difference of two sides the sum
of both.  Why a profile holds for its plan only, and what it covers: docs/calibrate.md, docs/compare.md
("Noise profiles: single runs with a verdict")."""
import dataclasses
import math

import numpy as np

from . import detectable, stats

CHECK_LEVEL = 0.01  # two-sided F test: a side's round spread against its profile's within-run variance


def log_round_means(result, stride, cell=None):
    """The log round means of one stride (and cell) of a one-process result, rounds without a rate left out."""
    x = np.log(stats.observations(result.table, stride, "round", "mean", cell))
    return x[np.isfinite(x)]


def run_value(log_means):
    """A run's observation (the log of stats.run_value, compare's run unit) from its log round means."""
    return float(np.log(stats.run_value(np.exp(np.asarray(log_means, dtype=float)))))


def between(means_var, means_df, within_var, within_df, inv_rounds):
    """(between-run component, its Satterthwaite df): means - h x within, clamped at 0 (df nan)."""
    value = means_var - inv_rounds * within_var
    if not value > 0:
        return 0.0, math.nan
    return value, value ** 2 / (means_var ** 2 / means_df + (inv_rounds * within_var) ** 2 / within_df)


def entry(sub_runs):
    """A profile's estimates for one (cell, stride) from each sub-run's log round means; None where
    fewer than 2 sub-runs measured it or no sub-run has 2 rounds."""
    runs = [np.asarray(x, dtype=float) for x in sub_runs if len(x)]
    within_df = sum(len(x) - 1 for x in runs)
    if len(runs) < 2 or within_df < 1:
        return None
    within = float(sum(((x - x.mean()) ** 2).sum() for x in runs) / within_df)
    means = np.array([run_value(x) for x in runs])
    means_var, h = float(means.var(ddof=1)), float(np.mean([1 / len(x) for x in runs]))
    b, b_df = between(means_var, len(runs) - 1, within, within_df, h)
    return {"within_var": within, "within_df": int(within_df), "means_var": means_var, "means_df": len(runs) - 1,
            "inv_rounds": h, "between_var": b, "between_df": None if math.isnan(b_df) else b_df}


def noise_profile_entries(result):
    """Every (cell, stride) entry of a calibration's result file (a --runs file of >= 2 sub-runs),
    and the rounds of each sub-run.  A UsageError where it has fewer than two sub-runs."""
    from ..data import cells
    from ..errors import UsageError

    parts = result.sub_runs()
    if len(parts) < 2:
        raise UsageError(f"{result.name} has one sub-run: its between-run variance cannot be "
                         "estimated")
    labels = cells.labels(result)
    out = []
    for index, label in labels.items():
        for stride in result.config["strides"]:
            e = entry([log_round_means(p, stride, index) for p in parts])
            if e is not None:
                out.append({"cell": label, "stride_bytes": int(stride), **e})
    if not out:
        raise UsageError(f"{result.name}: no stride has the sub-runs and rounds a profile needs")
    rounds = [int(p.measured["round"].nunique()) for p in parts]
    return out, rounds


@dataclasses.dataclass
class Side:
    """One side of a difference: its log centre, N, and the estimated variance terms of its centre
    ((value, df, source)); terms None where its between-run variance is not known."""
    centre: float
    n: int
    terms: list = None
    own_var: float = math.nan
    unlike: bool = False  # its round spread disagrees with its profile's (spread_check)


def side_with_noise_profile(log_means, entry, own, source):
    """A one-process side: its own log round means with its profile's entry (None: no profile).
    Terms: own within / n (df n - 1) + the profile's means - h x within (the between component),
    left out where the profile found none beyond what within-run noise explains."""
    x = np.asarray(log_means, dtype=float)
    n = len(x)
    own_var = float(x.var(ddof=1)) if n > 1 else math.nan
    side = Side(run_value(x) if n else math.nan, n, None, own_var)
    if entry is None or n < 2:
        return side
    side.terms = [(own_var / n, n - 1, ("own", own))]
    b, _ = between(entry["means_var"], entry["means_df"], entry["within_var"], entry["within_df"], entry["inv_rounds"])
    if b > 0:
        side.terms += [(entry["means_var"], entry["means_df"], (source, "means")),
                       (-entry["inv_rounds"] * entry["within_var"], entry["within_df"], (source, "within"))]
    return side


def combine(terms):
    """(variance, df) of a sum of independently estimated variance terms (value, df, source), the df by
    Welch-Satterthwaite: (sum v)^2 / sum(v^2 / df).  Terms of one source (one estimate used on both
    sides) are added before squaring; a value may be negative (a component got by subtraction).
    With positive terms only, that df lies between the smallest term's df and their sum; a term got
    by subtraction can drive it far below every term's own (a small difference of two large mean
    squares: 0.06 for a quiet side and a profile whose between part is barely positive, a t quantile
    beyond any use), so it is floored at the smallest df of the positive terms.
    (nan, nan) where the sum is not positive."""
    by = {}
    for value, df, source in terms:
        total, _ = by.get(source, (0.0, df))
        by[source] = (total + value, df)
    variance = sum(v for v, _ in by.values())
    if not variance > 0:
        return math.nan, math.nan
    df = variance ** 2 / sum(v * v / df for v, df in by.values() if v)
    return variance, max(df, min(d for v, d in by.values() if v > 0))


def spread_check(log_means, entry):
    """(variance ratio, two-sided p) of an F test of a side's round spread against its profile's
    within-run variance; nan where it cannot be tested."""
    from scipy import special

    x = np.asarray(log_means, dtype=float)
    if entry is None or len(x) < 2 or not entry["within_var"] > 0:
        return math.nan, math.nan
    ratio = float(x.var(ddof=1) / entry["within_var"])
    d1, d2 = len(x) - 1, entry["within_df"]
    return ratio, float(min(1.0, 2 * min(special.fdtr(d1, d2, ratio), special.fdtrc(d1, d2, ratio))))


# A profile of few sub-runs, or one whose between-run part swamps its rounds, can give an interval
# that rules nothing out ("[-100.0, +194243617.4]%"): refused, with the reason, where it spans more
# than a factor MAX_SPAN of new/base or rests on fewer than DF_FLOOR degrees of freedom (docs/compare.md,
# "Intervals too wide to read").  The same rule bounds calibrate's Detects.
MAX_SPAN = 10.0
DF_FLOOR = 2.0


def unreadable(log_width, df):
    """Why an interval of log width `log_width` (high - low of log new/base) on `df` degrees of freedom
    is not worth printing, or None."""
    if not df >= DF_FLOOR:
        return f"{df:.2g} df, under {DF_FLOOR:g}: the profile is too thin"
    if not log_width <= math.log(MAX_SPAN):
        return f"the interval spans more than {MAX_SPAN:g}x"
    return None


def difference(base, new, confidence=95.0):
    """two_sample.difference's answer for two Sides: the speedup (ratio of the sides' run observations),
    a t interval with the combined variance and Satterthwaite df, p; `why` where a side's between-run
    variance is unknown."""
    from scipy import special

    out = {"n_base": base.n, "n_new": new.n, "base": math.exp(base.centre), "new": math.exp(new.centre),
           "confidence": confidence}
    d = new.centre - base.centre
    out["speedup_pct"] = (math.exp(d) - 1) * 100
    if base.terms is None or new.terms is None:
        out.update(ci_low_pct=math.nan, ci_high_pct=math.nan, p_value=math.nan, why="no noise profile")
        return out
    variance, df = combine(base.terms + new.terms)
    if math.isnan(variance):
        out.update(ci_low_pct=math.nan, ci_high_pct=math.nan, p_value=math.nan, why="no variance")
        return out
    se = math.sqrt(variance)
    low, high, _ = stats.t_bounds(d, se, df, confidence)
    why = unreadable(high - low, df)
    if why:
        out.update(ci_low_pct=math.nan, ci_high_pct=math.nan, p_value=math.nan, why=why)
        return out
    p = float(2 * special.stdtr(df, -abs(d) / se))
    out.update(ci_low_pct=(math.exp(low) - 1) * 100, ci_high_pct=(math.exp(high) - 1) * 100, p_value=p, se=se,
               df=df)
    return out


def detects(entry, rounds, confidence=95.0, tests=1):
    """The smallest speedup (%, 80% power) a compare of two one-process runs of `rounds` rounds finds,
    each side with a profile like `entry` (separate calibrations, one per kernel), its round spread
    the profile's: what `calibrate` prints."""
    own = entry["within_var"]
    sides = []
    for k in ("a", "b"):
        terms = [(own / rounds, rounds - 1, ("own", k))]
        if entry["between_var"] > 0:
            terms += [(entry["means_var"], entry["means_df"], (k, "means")),
                      (-entry["inv_rounds"] * own, entry["within_df"], (k, "within"))]
        sides += terms
    variance, df = combine(sides)
    if not variance > 0:
        return math.nan
    mde = detectable.mde_pct(math.sqrt(variance), df, confidence, tests)
    # a change past MAX_SPAN-fold, or on too few df, is no figure of what the design detects
    return math.nan if unreadable(math.log1p(mde / 100) if mde > -100 else math.inf, df) else mde
