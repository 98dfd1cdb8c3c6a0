"""Round means as a time series, pure: autocorrelation, drift, and a CI of the mean that survives it.

Rounds taken one after another share the machine's state, so their means are positively
autocorrelated and the ordinary t interval is too narrow.  From ROBUST_MIN_ROUNDS = 20 rounds the
CI is **batch means**: the rounds in time order cut into BATCHES consecutive batches, the t interval
with BATCHES-1 df over their means; below that the t interval is kept and `t_ci_note` says what it
assumes.  Why batch means and not Newey-West, what they absorb and what no estimator inside a run
sees (drift slower than a run): docs/methodology.md#drift-and-autocorrelation.  Callers import this
module lazily (numpy/scipy).
"""
import math

import numpy as np

from .stats import t_interval

BATCHES = 5
ROBUST_MIN_ROUNDS = 20
LAG1_LEVEL = 0.05
METHODS = {"t": "t interval over rounds (assumes independent rounds)",
           "batch-means": f"t interval over {BATCHES} batch means of consecutive rounds (absorbs short-range "
                          "autocorrelation, not drift slower than the run)"}


def _series(x, times=None):
    """x as a float array in time order (sorted by `times` when given)."""
    x = np.asarray(x, dtype=float).ravel()
    if not np.all(np.isfinite(x)):
        raise ValueError("the series has values that are not finite")
    if times is None:
        return x
    t = np.asarray(times, dtype=float).ravel()
    if len(t) != len(x):
        raise ValueError(f"{len(t)} times for {len(x)} values")
    if not np.all(np.isfinite(t)):
        raise ValueError("the times have values that are not finite")
    return x[np.argsort(t, kind="stable")]


def acf(x, max_lag):
    """Sample autocorrelation r_0..r_max_lag (the usual biased estimator: lag-k cross products
    summed over n-k pairs, divided by the sum of squares over n).  NaN for lags >= n, and for every
    lag when the series is constant."""
    x = _series(x)
    out = np.full(int(max_lag) + 1, math.nan)
    d = x - x.mean() if len(x) else x
    ss = float(d @ d)
    if ss == 0 or not len(x):
        return out
    top = min(int(max_lag), len(x) - 1)
    full = np.correlate(d, d, mode="full")[len(x) - 1:]
    out[:top + 1] = full[:top + 1] / ss
    return out


def lag1(x):
    """Lag-1 autocorrelation as a float; None when undefined (fewer than 3 values, or constant)."""
    x = _series(x)
    if len(x) < 3:
        return None
    r = acf(x, 1)[1]
    return None if math.isnan(r) else float(r)


def acf_by_time(x, times, edges):
    """Autocorrelation by time separation: for each bin [edges[k], edges[k+1]) of |t_j - t_i|,
    the mean of (x_i - m)(x_j - m) over the pairs in it, divided by the variance (ddof 0).
    Returns (correlation, pairs, mean separation) per bin; NaN where a bin has no pairs."""
    t = np.asarray(times, dtype=float).ravel()
    x = _series(x, t)
    t = np.sort(t)
    edges = np.asarray(edges, dtype=float)
    bins = len(edges) - 1
    sums, counts, dts = np.zeros(bins), np.zeros(bins, dtype=np.int64), np.zeros(bins)
    d = x - x.mean() if len(x) else x
    var = float(d @ d) / len(x) if len(x) else 0.0
    for k in range(1, len(x)):
        dt = t[k:] - t[:-k]
        if dt.min() >= edges[-1]:
            break  # t is sorted, so separations only grow with k
        idx = np.searchsorted(edges, dt, side="right") - 1
        keep = (idx >= 0) & (idx < bins)
        idx = idx[keep]
        sums += np.bincount(idx, (d[k:] * d[:-k])[keep], minlength=bins)
        counts += np.bincount(idx, minlength=bins)
        dts += np.bincount(idx, dt[keep], minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = sums / counts / var if var > 0 else np.full(bins, math.nan)
        corr = np.where(counts > 0, corr, math.nan)
        mean_dt = np.where(counts > 0, dts / counts, math.nan)
    return corr, counts, mean_dt


def block_inflation(x, block):
    """How much more block means vary than independent values predict: var(means of consecutive
    non-overlapping blocks of `block` values) / (var(values) / block).  About 1 for independent
    values, above 1 under positive autocorrelation.  A remainder shorter than a block at the end is
    left out.  None with fewer than two blocks or constant values."""
    x = _series(x)
    block = int(block)
    if block < 1:
        raise ValueError("block must be at least 1")
    nb = len(x) // block
    if nb < 2:
        return None
    x = x[:nb * block]
    v = float(x.var(ddof=1))
    if v == 0:
        return None
    means = x.reshape(nb, block).mean(axis=1)
    return float(means.var(ddof=1) / (v / block))


def batch_means(x, times=None, batches=BATCHES):
    """Means of `batches` consecutive batches of x in time order (sizes differ by at most one)."""
    x = _series(x, times)
    if len(x) < batches:
        raise ValueError(f"{len(x)} values cannot make {batches} batches")
    return np.array([b.mean() for b in np.array_split(x, batches)])


def mean_ci(x, confidence=95.0, times=None):
    """(mean, low, high, method) of a series taken in time order (`times` sorts it when given).
    method is "t" below ROBUST_MIN_ROUNDS values (t interval over the values; NaN bounds with
    fewer than two) and "batch-means" from there on (see the module docstring)."""
    x = _series(x, times)
    if not len(x):
        return math.nan, math.nan, math.nan, "t"
    centre = float(x.mean())
    if len(x) < ROBUST_MIN_ROUNDS:
        return (centre, *t_interval(x, confidence)[1:3], "t")
    return (centre, *t_interval(batch_means(x), confidence, centre)[1:3], "batch-means")


def t_ci_note(n):
    """The warning that goes with a t interval: None from ROBUST_MIN_ROUNDS rounds on."""
    if n >= ROBUST_MIN_ROUNDS:
        return None
    return (f"with {n} rounds (fewer than {ROBUST_MIN_ROUNDS}) the CI is the t interval, which assumes "
            "independent rounds: rounds taken close together drift together, so space them out")


def lag1_threshold(n, level=LAG1_LEVEL):
    """The lag-1 autocorrelation that n independent normal values exceed with probability `level`.

    Normal approximation with Moran's small-sample moments of r1, mean -1/n and variance
    (n-2)^2 / (n^2 (n-1)).  Bartlett's large-sample bound z/sqrt(n) ignores both corrections and
    warns too rarely below ~50 rounds (1-2% instead of 5% at n = 10-20); with Moran's moments the
    false-warning rate is 5-6% from n = 4 (checked by simulation in the tests).  None for n < 3."""
    if n < 3:
        return None
    from scipy import special

    z = float(special.ndtri(1 - level))
    return -1 / n + z * math.sqrt((n - 2) ** 2 / (n ** 2 * (n - 1)))


def warn_if_autocorrelated(lag1, n, level=LAG1_LEVEL, tests=1):
    """A one-line warning when `lag1` (of n round means) is significantly positive at `level`
    (one-sided, Bonferroni over the `tests` series tested together: compare passes every side's series
    of every stride), else None.  None/NaN lag1 or too
    few rounds: None (nothing can be said)."""
    if lag1 is None or (isinstance(lag1, float) and math.isnan(lag1)):
        return None
    threshold = lag1_threshold(n, level / max(1, int(tests)))
    if threshold is None or lag1 <= threshold:
        return None
    return (f"round means are autocorrelated (lag-1 {lag1:.2f} over {n} rounds; independent rounds "
            f"exceed {threshold:.2f} {100 * level:g}% of the time): consecutive rounds share the "
            "machine's state, so the CI is too narrow for what another run will meet; space the rounds "
            "out in time or take more of them")


def round_lag1(records):
    """Lag-1 autocorrelation of each stride's (and cell's) round means in time order: high values
    say the rounds shared the machine's state, so their spread understates a rerun's."""
    from ..data.columns import as_columns, timed

    cols = as_columns(records)
    mask, gbps = timed(cols, "gbps")
    if not mask.any():
        return []
    cell = cols.get("cell")
    cell = np.zeros(int(mask.sum()), dtype=np.int64) if cell is None else \
        np.where(cols.present("cell")[mask], cell[mask], 0).astype(np.int64)
    stride, rnd = (cols.get(k)[mask].astype(np.int64) for k in ("stride_bytes", "round"))
    gbps = gbps.astype(np.float64)
    out = []
    for c, s in sorted(set(zip(cell.tolist(), stride.tolist()))):
        at = (cell == c) & (stride == s)
        found, index = np.unique(rnd[at], return_inverse=True)
        # sums in file order, as adding the values one by one did
        means = (np.bincount(index, weights=gbps[at]) / np.bincount(index)).tolist()
        cell_, stride_ = c, s
        r1 = lag1(means)
        out.append({"cell": cell_, "stride_bytes": stride_, "rounds": len(means),
                    "lag1": None if r1 is None else round(float(r1), 4)})
    return out
