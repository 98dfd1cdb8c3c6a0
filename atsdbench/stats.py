"""Statistics, pure: no I/O.  Everything comes from numpy/scipy.

The unit of replication is the round (one fresh allocation): a round's passes are averaged into
one observation, so confidence intervals reflect the between-allocation noise a second run of
the same kernel would meet.  `unit="pass"` treats every pass as an observation (ministat-style).
"""
import math

import numpy as np

CONFIDENCES = (80.0, 90.0, 95.0, 98.0, 99.0, 99.5)
TESTS = ("welch", "student", "mannwhitney")


def cv_pct(values):
    values = np.asarray(values, dtype=float)
    if len(values) < 2 or values.mean() == 0:
        return math.nan
    return float(values.std(ddof=1) / values.mean() * 100)


def measured(frame):
    return frame[~frame["warmup"]]


def observations(frame, stride, unit="round", metric="mean"):
    """The observations of one stride (GB/s): one per round, or one per pass."""
    rows = frame[(frame["stride_bytes"] == stride) & ~frame["warmup"]]
    if unit == "pass":
        return rows["gbps"].to_numpy(dtype=float)
    grouped = rows.groupby("round")["gbps"]
    return (grouped.mean() if metric == "mean" else grouped.median()).to_numpy(dtype=float)


def effective_unit(frame, unit):
    """Rounds, unless a stride has fewer than two rounds: then passes (and the caller warns)."""
    if unit == "round" and measured(frame).groupby("stride_bytes")["round"].nunique().min() < 2:
        return "pass"
    return unit


def stride_summary(frame):
    """Per stride: what `run` prints.  Within-round CV is the mean CV of a round's passes;
    between-round CV is the CV of the round means: the two spreads a user must tell apart."""
    rows = []
    m = measured(frame)
    for stride, group in m.groupby("stride_bytes"):
        rounds = group.groupby("round")["gbps"]
        round_means = rounds.mean().to_numpy()
        within = [cv_pct(g) for _, g in rounds]
        within = [w for w in within if not math.isnan(w)]
        row = {"stride_bytes": int(stride), "rounds": int(rounds.ngroups), "passes": int(len(group)),
               "median": float(group["gbps"].median()), "min": float(group["gbps"].min()),
               "max": float(group["gbps"].max()), "mean": float(group["gbps"].mean()),
               "within_cv": float(np.mean(within)) if within else math.nan,
               "between_cv": cv_pct(round_means), "us_per_call": float(group["us_per_call"].median())}
        if "gpu_touch_ns" in group and group["gpu_touch_ns"].notna().any():
            row["gpu_touch_ms"] = float(group["gpu_touch_ns"].median() / 1e6)
        for col in ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_max_us"):
            if col in group and group[col].notna().any():
                row[col] = float(group[col].median())
        row.update(per_call_counters(frame, stride))
        rows.append(row)
    return rows


def per_call_counters(frame, stride):
    """Counter columns per mprotect call; tracepoint counts come from traced (warm-up) passes."""
    out = {}
    rows = frame[frame["stride_bytes"] == stride]
    timed = rows[~rows["traced"]] if "traced" in rows else rows
    if "ipis" in rows and timed["ipis"].notna().any():
        t = timed[timed["ipis"].notna()]
        out["ipis_per_call"] = float(t["ipis"].sum() / t["calls"].sum())
    traced = rows[rows["traced"]] if "traced" in rows else rows.iloc[0:0]
    if "flushes" in rows and len(traced) and traced["flushes"].notna().any():
        t = traced[traced["flushes"].notna()]
        flushes = t["flushes"].sum()
        out["flushes_per_call"] = float(flushes / t["calls"].sum())
        if "full_flushes" in t:
            out["full_flush_share"] = float(t["full_flushes"].sum() / flushes) if flushes else math.nan
    return out


def describe(values):
    """N, min, max, median, mean, stddev, CV% of one set of observations."""
    v = np.asarray(values, dtype=float)
    n = len(v)
    sd = float(v.std(ddof=1)) if n > 1 else math.nan
    return {"n": n, "min": float(v.min()), "max": float(v.max()), "median": float(np.median(v)),
            "mean": float(v.mean()), "stddev": sd, "cv": cv_pct(v)}


def t_quantile(confidence, df):
    from scipy import special  # scipy.special, not scipy.stats: a tenth of the import time

    return float(special.stdtrit(df, 1 - (1 - confidence / 100) / 2))


# ministat's table was typed from a printed one: seven entries of its "99.5" column differ from the
# true quantile in the last digits.  Its output is what users paste, so these misprints are kept
# (checked against Debian's ministat 20150715 by tests/test_ministat.py).
_MINISTAT_ERRATA = {(1, 99.5): 318.313, (7, 99.5): 4.782, (8, 99.5): 4.499, (9, 99.5): 4.296,
                    (10, 99.5): 4.143, (11, 99.5): 4.024, (12, 99.5): 3.929}


def ministat_t(confidence, df):
    """ministat's t table, derived: two-sided quantiles rounded to 3 decimals, df > 100 read as
    infinity (the normal quantile), and its '99.5' column holding the 99.8% two-sided value."""
    if (df, confidence) in _MINISTAT_ERRATA:
        return _MINISTAT_ERRATA[(df, confidence)]
    tail = 0.001 if confidence == 99.5 else (1 - confidence / 100) / 2
    if df > 100:
        # The normal quantile from the standard library (Wichura's AS241): to 3 decimals it is
        # scipy's ndtri, without the 0.4 s import that would make `stat` slower than ministat.
        from statistics import NormalDist

        return round(NormalDist().inv_cdf(1 - tail), 3)
    from scipy import special

    return round(float(special.stdtrit(df, 1 - tail)), 3)


def difference(base, new, test="welch", confidence=95.0, seed=0):
    """Compare two sets of observations.  Returns speedup % (new/base - 1), its CI, p, significance.

    welch/student: means; the CI of the difference of means (Welch's or pooled-s Student's t)
    divided by the baseline mean, as ministat reports it.  mannwhitney: medians; p from the
    Mann-Whitney U test, the CI of median(new)/median(base) - 1 from a percentile bootstrap."""
    from scipy import stats

    a, b = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    alpha = 1 - confidence / 100
    out = {"n_base": len(a), "n_new": len(b), "test": test, "confidence": confidence}
    if test == "mannwhitney":
        mb, mn = float(np.median(a)), float(np.median(b))
        out.update(base=mb, new=mn, speedup_pct=(mn / mb - 1) * 100)
    else:
        ma, mn = float(a.mean()), float(b.mean())
        out.update(base=ma, new=mn, speedup_pct=(mn / ma - 1) * 100)
    if len(a) < 2 or len(b) < 2:
        out.update(ci_low_pct=math.nan, ci_high_pct=math.nan, p_value=math.nan, significant=False,
                   why="fewer than 2 observations")
        return out
    if test == "mannwhitney":
        p = float(stats.mannwhitneyu(b, a, alternative="two-sided").pvalue)
        if np.all(a == a[0]) and np.all(b == b[0]):
            lo = hi = out["speedup_pct"]
        else:
            res = stats.bootstrap((a, b), lambda x, y, axis=-1: np.median(y, axis=axis) / np.median(x, axis=axis) - 1,
                                  confidence_level=confidence / 100, n_resamples=4999, method="percentile",
                                  vectorized=True, rng=np.random.default_rng(seed))
            lo, hi = res.confidence_interval.low * 100, res.confidence_interval.high * 100
        out.update(ci_low_pct=float(lo), ci_high_pct=float(hi), p_value=p,
                   significant=bool(p < alpha and (lo > 0 or hi < 0)))
        return out
    d = out["new"] - out["base"]
    va, vb, na, nb = a.var(ddof=1), b.var(ddof=1), len(a), len(b)
    if test == "student":
        df = na + nb - 2
        pooled = math.sqrt(((na - 1) * va + (nb - 1) * vb) / df)
        se = pooled * math.sqrt(1 / na + 1 / nb)
        out["pooled_s"] = pooled
    else:
        se = math.sqrt(va / na + vb / nb)
        df = (va / na + vb / nb) ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1)) if se else na + nb - 2
    if se == 0:
        p = 1.0 if d == 0 else 0.0
        half = 0.0
    else:
        p = float(2 * stats.t.sf(abs(d) / se, df))
        half = t_quantile(confidence, df) * se
    out.update(diff=d, half=half, df=df, p_value=p,
               ci_low_pct=(d - half) / out["base"] * 100, ci_high_pct=(d + half) / out["base"] * 100,
               significant=bool(abs(d) > half))
    return out


def interval(values, metric="mean", confidence=95.0, seed=0):
    """(centre, low, high) of one set of observations: t-interval of the mean, or a percentile
    bootstrap of the median; low/high are NaN with fewer than two observations."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    centre = float(v.mean() if metric == "mean" else np.median(v))
    if len(v) < 2 or np.all(v == v[0]):
        return centre, (math.nan if len(v) < 2 else centre), (math.nan if len(v) < 2 else centre)
    if metric == "mean":
        half = t_quantile(confidence, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
        return centre, centre - half, centre + half
    res = stats.bootstrap((v,), np.median, confidence_level=confidence / 100, n_resamples=4999,
                          method="percentile", rng=np.random.default_rng(seed))
    return centre, float(res.confidence_interval.low), float(res.confidence_interval.high)
