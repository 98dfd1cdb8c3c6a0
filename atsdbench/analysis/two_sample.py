"""Two sides against each other (compare of files): t on log rates (Welch's, Student's) and the
Hodges-Lehmann shift with the Mann-Whitney test, each with its interval and p, in difference().
Pure: numpy, scipy.special (scipy.stats only for the tied Mann-Whitney p)."""
import functools
import math

import numpy as np

from .stats import alpha, t_bounds

TESTS = ("welch", "student", "mannwhitney")


def log_t(base, new, test="welch", confidence=95.0):
    """Welch's or Student's t on log rates; the last axis holds one side's observations, leading
    axes are independent comparisons (the calibration tests run thousands at once).

    A speedup is a ratio: the difference of mean logs is the log of the ratio of geometric means,
    and its t-interval, exponentiated, is an asymmetric CI of that ratio.  Dividing a CI of the
    difference by the sample baseline (ministat's %) ignores the baseline's own error.
    Student's pooled s accepts one side with a single observation: that side then adds no variance
    of its own, and the other side's spread is assumed to hold for it (replicates on one side only).
    Returns arrays: ratio, low, high (new/base), p, df, base, new (geometric means)."""
    from scipy import special

    x, y = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(new, dtype=float))
    na, nb = x.shape[-1], y.shape[-1]
    mx, my = x.mean(axis=-1), y.mean(axis=-1)
    d = my - mx
    va = x.var(axis=-1, ddof=1) if na > 1 else np.zeros_like(mx)
    vb = y.var(axis=-1, ddof=1) if nb > 1 else np.zeros_like(my)
    if test == "student":
        df = np.full_like(d, na + nb - 2)
        se = np.sqrt(((na - 1) * va + (nb - 1) * vb) / df * (1 / na + 1 / nb))
    else:
        wa, wb = va / na, vb / nb
        se = np.sqrt(wa + wb)
        with np.errstate(divide="ignore", invalid="ignore"):
            df = np.where(se > 0, (wa + wb) ** 2 / (wa ** 2 / (na - 1) + wb ** 2 / (nb - 1)), na + nb - 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, np.abs(d) / se, np.where(d == 0, 0.0, np.inf))
    p = 2 * special.stdtr(df, -t)
    low, high, _ = t_bounds(d, se, df, confidence)
    return {"ratio": np.exp(d), "low": np.exp(low), "high": np.exp(high), "p": p, "df": df,
            "base": np.exp(mx), "new": np.exp(my), "se": se}


@functools.lru_cache(maxsize=256)
def u_null_cdf(m, n):
    """P(U <= u) for u = 0..m*n: the exact null distribution of the Mann-Whitney U of samples of
    m and n without ties, or None where its counts pass float64's exact integers (2^53)."""
    if math.comb(m + n, m) > 2 ** 53:
        return None
    small, large = min(m, n), max(m, n)
    # The counts are the coefficients of the Gaussian binomial [m+n choose m]_q =
    # prod_{i=1..small} (1 - q^(large+i)) / (1 - q^i), truncated past q^(m*n) where it ends.
    c = np.zeros(m * n + 1)
    c[0] = 1
    for i in range(1, small + 1):
        c[large + i:] = c[large + i:] - c[:len(c) - large - i]
        for r in range(i):
            c[r::i] = np.cumsum(c[r::i])
    return np.cumsum(c) / math.comb(m + n, m)


def hl_rank(m, n, confidence, exact=True):
    """k: the CI of the Hodges-Lehmann shift runs from the k-th smallest to the k-th largest of the
    m*n pairwise differences; 0 when no outcome of m against n can reach the confidence level."""
    level = alpha(confidence)
    cdf = u_null_cdf(m, n) if exact else None
    if cdf is not None:
        return int(np.count_nonzero(2 * cdf < level))
    from scipy import special

    # Normal approximation with the continuity correction scipy's asymptotic p uses.
    sd = math.sqrt(m * n * (m + n + 1) / 12)
    return max(0, math.floor(m * n / 2 - 0.5 - float(special.ndtri(1 - level / 2)) * sd) + 1)


def smallest_n(confidence):
    """The fewest observations a side with which a median difference can reach this confidence."""
    n = 1
    while hl_rank(n, n, confidence) == 0:
        n += 1
    return n


def hodges_lehmann(base, new, confidence=95.0):
    """Hodges-Lehmann shift of log rates (the median of all log(new_j / base_i)) with the CI that
    inverts the Mann-Whitney test: exact when there are no ties, else the normal approximation.
    Vectorised like log_t.  Returns arrays ratio, low, high (NaN when k = 0), p, base, new (medians),
    and k, exact (scalars)."""
    a, b = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    x, y = np.log(a), np.log(b)
    m, n = x.shape[-1], y.shape[-1]
    diffs = np.sort((y[..., None, :] - x[..., :, None]).reshape(*x.shape[:-1], m * n), axis=-1)
    pooled = np.sort(np.concatenate([x, y], axis=-1), axis=-1)
    ties = bool(np.any(np.diff(pooled, axis=-1) == 0))
    cdf = None if ties else u_null_cdf(m, n)
    exact = cdf is not None
    k = hl_rank(m, n, confidence, exact)
    if exact:
        u = np.count_nonzero(diffs > 0, axis=-1)
        p = np.minimum(1.0, 2 * cdf[np.minimum(u, m * n - u)])
    else:  # scipy.stats only here: 60 MiB resident, which plot's medians need not carry
        from scipy import stats

        p = stats.mannwhitneyu(y, x, axis=-1, method="asymptotic").pvalue
    nan = np.full(diffs.shape[:-1], math.nan)
    low, high = (diffs[..., k - 1], diffs[..., m * n - k]) if k else (nan, nan)
    return {"ratio": np.exp(np.median(diffs, axis=-1)), "low": np.exp(low), "high": np.exp(high), "p": p,
            "base": np.median(a, axis=-1), "new": np.median(b, axis=-1), "k": k, "exact": exact}


def _too_few(a, b, test):
    if min(len(a), len(b)) < 1:
        return "no observations"
    if test == "welch" and min(len(a), len(b)) < 2:
        return "fewer than 2 observations"
    if test == "student" and len(a) + len(b) < 3:
        return "fewer than 2 observations"
    if np.any(a <= 0) or np.any(b <= 0):
        return "a rate is zero or negative"
    return None


def difference(base, new, test="welch", confidence=95.0):
    """Compare two sets of observations (rates).  Returns the speedup % (new/base - 1), its CI,
    the raw p and whether p < 1 - confidence, and `why` when there is no CI.

    welch/student: t on log rates (log_t); speedup = ratio of geometric means - 1.
    mannwhitney: Hodges-Lehmann shift of log rates with the exact Mann-Whitney CI and p; speedup =
    median of the pairwise ratios - 1.  When too few observations can never reach the level, `why`
    says so and names the smallest N a side that could."""
    a, b = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    out = {"n_base": len(a), "n_new": len(b), "test": test, "confidence": confidence}
    why = _too_few(a, b, test)
    if why:
        centre = np.median if test == "mannwhitney" else np.mean
        out.update(base=float(centre(a)) if len(a) else math.nan, new=float(centre(b)) if len(b) else math.nan)
        out.update(speedup_pct=(out["new"] / out["base"] - 1) * 100, ci_low_pct=math.nan, ci_high_pct=math.nan,
                   p_value=math.nan, significant=False, why=why)
        return out
    if len(a) > 1 or len(b) > 1:  # the t design's standard error, for the smallest detectable change
        out["se"] = float(log_t(a, b, "student" if test == "mannwhitney" else test, confidence)["se"])
    if test == "mannwhitney":
        r = hodges_lehmann(a, b, confidence)
        if not r["k"]:
            need = smallest_n(confidence)
            why = (f"{len(a)} vs {len(b)} observations cannot reach {confidence:g}% confidence with a median test; "
                   f"{need} a side could")
        out["exact"] = r["exact"]
    else:
        r = log_t(a, b, test, confidence)
        out["df"] = float(r["df"])
        out["se"] = float(r["se"])
    p = float(r["p"])
    out.update(base=float(r["base"]), new=float(r["new"]), speedup_pct=(float(r["ratio"]) - 1) * 100,
               ci_low_pct=(float(r["low"]) - 1) * 100, ci_high_pct=(float(r["high"]) - 1) * 100, p_value=p,
               significant=bool(p < alpha(confidence)))
    if why:
        out["why"] = why
    return out
