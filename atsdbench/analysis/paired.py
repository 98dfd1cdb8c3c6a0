"""Paired by round (compare --by): the cells of one run, interleaved, so drift cancels.  --metric mean:
paired t on the log round means (the ratio of geometric means, CI exponentiated); --metric median:
the Hodges-Lehmann estimate of the log differences with the CI that inverts the Wilcoxon signed-rank
test, and its p, exact without ties.  Why not a bootstrap: docs/compare.md, "Rules and options"."""
import functools
import math

import numpy as np

from .stats import alpha, t_bounds

PAIRED_TESTS = {"mean": "paired-t", "median": "wilcoxon"}  # compare --by


def one_sample_t(d, confidence=95.0):
    """The one-sample t of differences d over the last axis (leading axes: independent comparisons):
    mean, se, df = n - 1, two-sided p of no change, low, high (on d's scale)."""
    from scipy import special

    d = np.asarray(d, dtype=float)
    n = d.shape[-1]
    mean = d.mean(axis=-1)
    se = d.std(axis=-1, ddof=1) / math.sqrt(n)
    df = np.full_like(mean, n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, np.abs(mean) / se, np.where(mean == 0, 0.0, np.inf))
    low, high, _ = t_bounds(mean, se, df, confidence)
    return {"mean": mean, "se": se, "df": df, "p": 2 * special.stdtr(df, -t), "low": low, "high": high}


def paired_t(base, new, confidence=95.0):
    """Paired t on log rates; the last axis holds the rounds, base[..., r] paired with new[..., r];
    leading axes are independent comparisons.  Returns arrays ratio, low, high (new/base), p, df,
    base, new (geometric means)."""
    x, y = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(new, dtype=float))
    r = one_sample_t(y - x, confidence)
    return {"ratio": np.exp(r["mean"]), "low": np.exp(r["low"]), "high": np.exp(r["high"]), "p": r["p"],
            "df": r["df"], "se": r["se"], "base": np.exp(x.mean(axis=-1)), "new": np.exp(y.mean(axis=-1))}


@functools.lru_cache(maxsize=128)
def signed_rank_null_cdf(n):
    """P(T+ <= t) for t = 0..n(n+1)/2: the exact null distribution of the Wilcoxon signed-rank
    statistic of n differences without ties or zeros, or None where its counts (2^n in all) pass
    float64's exact integers."""
    if n > 52:
        return None
    # The counts are the coefficients of prod_{i=1..n} (1 + q^i): each rank is in T+ or not.
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1
    for i in range(1, n + 1):
        counts[i:] = counts[i:] + counts[:-i].copy()
    return np.cumsum(counts) / 2.0 ** n


def signed_rank_k(n, confidence, exact=True):
    """k: the CI runs from the k-th smallest to the k-th largest of the n(n+1)/2 Walsh averages; 0
    when no outcome of n pairs can reach the confidence level."""
    level = alpha(confidence)
    cdf = signed_rank_null_cdf(n) if exact else None
    if cdf is not None:
        return int(np.count_nonzero(2 * cdf < level))
    from scipy import special

    # Normal approximation with the continuity correction scipy's approximate p uses.
    m = n * (n + 1) / 2
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return max(0, math.floor(m / 2 - 0.5 - float(special.ndtri(1 - level / 2)) * sd) + 1)


def smallest_pairs(confidence):
    """The fewest paired rounds with which a signed-rank test can reach this confidence."""
    n = 1
    while signed_rank_k(n, confidence) == 0:
        n += 1
    return n


def signed_rank(base, new, confidence=95.0):
    """Hodges-Lehmann estimate of the paired log differences (the median of their Walsh averages)
    with the CI and p of the Wilcoxon signed-rank test: exact without ties or zeros, else the
    normal approximation.  Vectorised like paired_t.  Returns arrays ratio, low, high (NaN when
    k = 0), p, base, new (medians), and k, exact (scalars)."""
    from scipy import stats as sps

    a, b = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    d = np.log(b) - np.log(a)
    n = d.shape[-1]
    i, j = np.triu_indices(n)
    walsh = np.sort((d[..., i] + d[..., j]) / 2, axis=-1)
    m = walsh.shape[-1]
    magnitudes = np.sort(np.abs(d), axis=-1)
    ties = bool(np.any(d == 0) or np.any(np.diff(magnitudes, axis=-1) == 0))
    cdf = None if ties else signed_rank_null_cdf(n)
    exact = cdf is not None
    k = signed_rank_k(n, confidence, exact)
    if exact:
        t = np.count_nonzero(walsh > 0, axis=-1)  # = T+, the sum of the ranks of positive differences
        p = np.minimum(1.0, 2 * cdf[np.minimum(t, m - t)])
    else:
        nonzero = np.any(d != 0, axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(nonzero, sps.wilcoxon(np.where(nonzero[..., None], d, 1.0), axis=-1, method="approx",
                                               correction=True).pvalue, 1.0)
    nan = np.full(walsh.shape[:-1], math.nan)
    low, high = (walsh[..., k - 1], walsh[..., m - k]) if k else (nan, nan)
    return {"ratio": np.exp(np.median(walsh, axis=-1)), "low": np.exp(low), "high": np.exp(high), "p": p,
            "base": np.median(a, axis=-1), "new": np.median(b, axis=-1), "k": k, "exact": exact}


def paired_difference(base, new, metric="mean", confidence=95.0):
    """One paired comparison (rates, paired position by position), in difference()'s terms."""
    a, b = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    n = len(a)
    out = {"n_base": n, "n_new": n}
    why = None
    if n < 1:
        why = "no round measured both cells"
    elif np.any(a <= 0) or np.any(b <= 0):
        why = "a rate is zero or negative"
    elif metric == "mean" and n < 2:
        why = "fewer than 2 paired rounds"
    if why:
        centre = np.mean if metric == "mean" else np.median
        out.update(base=float(centre(a)) if n else math.nan, new=float(centre(b)) if n else math.nan)
        out.update(speedup_pct=(out["new"] / out["base"] - 1) * 100, ci_low_pct=math.nan, ci_high_pct=math.nan,
                   p_value=math.nan, why=why)
        return out
    if metric == "median":
        r = signed_rank(a, b, confidence)
        if not r["k"]:
            why = (f"{n} paired rounds cannot reach {confidence:g}% confidence with a signed-rank test; "
                   f"{smallest_pairs(confidence)} could")
    else:
        r = paired_t(a, b, confidence)
    t = paired_t(a, b, confidence) if metric == "median" else r
    out.update(se=float(t["se"]), df=float(t["df"]))  # the paired design's, for the smallest detectable change
    out.update(base=float(r["base"]), new=float(r["new"]), speedup_pct=(float(r["ratio"]) - 1) * 100,
               ci_low_pct=(float(r["low"]) - 1) * 100, ci_high_pct=(float(r["high"]) - 1) * 100,
               p_value=float(r["p"]))
    if why:
        out["why"] = why
    return out
