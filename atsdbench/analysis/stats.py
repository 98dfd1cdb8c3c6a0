"""Observations and intervals, pure (numpy; scipy where a quantile needs it): what a result's passes
give per stride at a unit of replication, the summaries run and show print, and the t and bootstrap
intervals every estimate here uses.  The tests built on them are two_sample.py (files against each
other) and paired.py (cells of one run); power.py says what a design detects, multiplicity.py adjusts
a table's p values.

The unit of replication is the round (one fresh allocation): a round's passes are averaged into
one observation, so confidence intervals reflect the between-allocation noise a second run of
the same kernel would meet.  `unit="pass"` treats every pass as an observation (ministat-style).
"""
import math

import numpy as np

CONFIDENCES = (80.0, 90.0, 95.0, 98.0, 99.0, 99.5)


def cv_pct(values):
    values = np.asarray(values, dtype=float)
    if len(values) < 2 or values.mean() == 0:
        return math.nan
    return float(values.std(ddof=1) / values.mean() * 100)


def measured(table):
    """The passes that are not warm-up, of a result's table (data/columns.Columns)."""
    return table.rows(~np.asarray(table["warmup"], dtype=bool))


def observations(table, stride, unit="round", metric="mean", cell=None, column="gbps"):
    """The observations of one stride (GB/s, or the rate `column` names), of one cell where the file
    has cells: one per round, or one per pass."""
    return observations_by_stride(table, unit, metric, cell, column).get(stride, np.empty(0))


def observations_by_stride(table, unit="round", metric="mean", cell=None, column="gbps"):
    """{stride: its observations} (as `observations`) of every stride, in one pass over the table (a
    result's, data/columns.Columns)."""
    if column not in table:  # a rate this file does not have: no observation
        return {}
    # numpy on the columns read, not pandas on a copy of a frame: a compare of two small files calls
    # this some twenty times (pandas: 3 ms each), and a copy of a 10^6-pass file's columns is 74 MB
    keep = ~np.asarray(table["warmup"], dtype=bool)
    if cell is not None and "cell" in table:
        keep &= np.asarray(table["cell"] == cell, dtype=bool)
    values = np.asarray(table[column], dtype=float)
    rounds = np.asarray(table["round"]) if unit != "pass" else None
    out = {}
    for s, here in _by_stride(np.asarray(table["stride_bytes"]), keep):
        # a stride's passes in file order: a round's mean sums them in the order they were measured
        out[int(s)] = values[here] if unit == "pass" else group_values(rounds[here], values[here], metric)[1]
    return out


def _by_stride(strides, keep):
    """(stride, the mask of its passes among `keep`) in stride order; a pass without a stride is in
    none.  Masks over the whole columns, not copies of the passes kept: 13 MiB less at 10^6 passes."""
    left = keep & ~np.isnan(strides) if strides.dtype.kind == "f" else keep.copy()
    found = []
    while left.any():
        s = strides[int(np.argmax(left))]
        left &= strides != s
        found.append(s)
    for s in sorted(found):
        yield s, keep & (strides == s)


def group_values(keys, values, metric="mean"):
    """(the distinct keys, sorted; per key the mean, or the median, of its values) as pandas' groupby
    gives them: a key that is NaN is in no group, a value that is NaN is left out, a key whose values
    are all NaN gets NaN.  A key's values are summed in the order given (pandas compensates its sums:
    a mean may differ from its in the last bit)."""
    keys, values, starts = _grouped(keys, values)
    return keys[starts], _per_group(values, starts, metric)


def mean_by_rows(keys, values, keep=None):
    """(the distinct rows of the key columns, sorted, as a 2-D array; per row the mean of its values):
    pandas' groupby of several keys and its mean, over the passes `keep` (a mask; default all).
    keys: one 1-D array a key, a value a pass.  A pass with a NaN key is in no group, a NaN value is
    left out, a group whose values are all NaN gets NaN.  Each key is coded on its own and the codes
    are combined into one integer a pass: 1-D sorts only (a 2-D unique of 10^6 passes takes model's
    peak past 300 MiB)."""
    values = np.asarray(values, dtype=float)
    keep = np.ones(len(values), dtype=bool) if keep is None else keep.copy()
    for k in keys:
        if k.dtype.kind == "f":
            keep &= ~np.isnan(k)
    if not keep.any():
        return np.empty((0, len(keys))), np.empty(0)
    codes, found = np.zeros(int(keep.sum()), dtype=np.int64), []
    for k in keys:
        distinct, inverse = np.unique(k[keep], return_inverse=True)
        codes = codes * len(distinct) + inverse.reshape(-1)  # below the product of the keys' counts
        found.append(distinct)
    groups, index = np.unique(codes, return_inverse=True)
    values = values[keep]
    valid = ~np.isnan(values)
    index = index.reshape(-1)[valid]
    with np.errstate(invalid="ignore"):
        means = np.bincount(index, weights=values[valid], minlength=len(groups)) / \
            np.bincount(index, minlength=len(groups))
    rows = np.empty((len(groups), len(keys)))
    for j in range(len(keys) - 1, -1, -1):  # the codes taken apart, last key first
        rows[:, j] = found[j][groups % len(found[j])]
        groups = groups // len(found[j])
    return rows, means


def _per_group(values, starts, metric):
    """The mean (median) of each group of _grouped's values."""
    if not len(values):
        return np.empty(0)
    if metric == "mean":
        valid = ~np.isnan(values)
        sums = np.add.reduceat(np.where(valid, values, 0.0), starts)
        counts = np.add.reduceat(valid.astype(np.int64), starts)
        with np.errstate(invalid="ignore"):
            return sums / counts
    # each group's values sorted (NaN last), its median from the middle one or two of those that are not NaN
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(values)]))
    values = values[np.lexsort((values, group))]
    counts = np.add.reduceat((~np.isnan(values)).astype(np.int64), starts)
    low, high = starts + np.maximum(counts - 1, 0) // 2, starts + counts // 2
    return np.where(counts > 0, (values[low] + values[np.minimum(high, len(values) - 1)]) / 2, np.nan)


def _grouped(keys, values):
    """(keys, values) without NaN keys, stably sorted by key, and where each key's run starts."""
    keys, values = np.asarray(keys), np.asarray(values, dtype=float)
    if keys.dtype.kind == "f":
        known = ~np.isnan(keys)
        keys, values = keys[known], values[known]
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    return keys, values, np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.empty(0, int)


def nan_reduce(f, values):
    """f (np.median, np.mean, min, max) of the values that are not NaN, as a float; NaN where none is
    (pandas' skipna, without numpy's warning of an empty slice)."""
    values = values[~np.isnan(values)]
    return float(f(values)) if len(values) else math.nan


def run_value(round_values, metric="mean"):
    """One replicate run's (or --runs sub-run's) observation: the mean (median) of its round means
    (medians).  compare's run unit and `run --until --runs`'s stopping rule both use this one."""
    return float(np.mean(round_values) if metric == "mean" else np.median(round_values))


def effective_unit(table, unit):
    """Rounds, unless a stride has fewer than two rounds: then passes (and the caller warns).  A
    stride at a time, by masks: grouping 10^6 passes takes 57 MiB under tracemalloc, this 6."""
    if unit != "round":
        return unit
    rounds = np.asarray(table["round"])
    for _, here in _by_stride(np.asarray(table["stride_bytes"]), ~np.asarray(table["warmup"], dtype=bool)):
        r = rounds[here]
        if r.dtype.kind == "f":
            r = r[~np.isnan(r)]
        if not len(r) or r.min() == r.max():  # fewer than two distinct rounds
            return "pass"
    return unit


def stride_summary(table):
    """Per stride: what `run` prints.  Within-round CV is the mean CV of a round's passes;
    between-round CV is the CV of the round means: the two spreads a user must tell apart."""
    rows = []
    # numpy on the columns read: pandas' grouping sorts a copy of what it is given (74 MB a 10^6-pass
    # file) and takes 14 ms for a small file's four strides
    keep = ~np.asarray(table["warmup"], dtype=bool)
    num = {c: np.asarray(table[c], dtype=float) for c in ("gbps", "us_per_call", "gpu_touch_ns", "device_touch_ns",
                                                       "lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_max_us")
           if c in table}
    for stride, here in _by_stride(np.asarray(table["stride_bytes"]), keep):
        gbps = num["gbps"][here]
        _, by_round, starts = _grouped(np.asarray(table["round"])[here], gbps)
        round_means, within = _per_group(by_round, starts, "mean"), _within_cv(by_round, starts)
        row = {"stride_bytes": int(stride), "rounds": len(round_means), "passes": int(here.sum()),
               "median": nan_reduce(np.median, gbps), "min": nan_reduce(np.min, gbps),
               "max": nan_reduce(np.max, gbps), "mean": nan_reduce(np.mean, gbps),
               "within_cv": float(np.mean(within)) if len(within) else math.nan,
               "between_cv": cv_pct(round_means), "us_per_call": nan_reduce(np.median, num["us_per_call"][here])}
        if "gpu_touch_ns" in num and not np.isnan(num["gpu_touch_ns"][here]).all():
            row["gpu_touch_ms"] = nan_reduce(np.median, num["gpu_touch_ns"][here]) / 1e6
        if "device_touch_ns" in num and not np.isnan(num["device_touch_ns"][here]).all():
            row["device_touch_ms"] = nan_reduce(np.median, num["device_touch_ns"][here]) / 1e6
        for c in ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_max_us"):
            if c in num and not np.isnan(num[c][here]).all():
                row[c] = nan_reduce(np.median, num[c][here])
        row.update(per_call_counters(table, stride))
        rows.append(row)
    return rows


# --device hmm: the mmu notifier's invalidate starts and the driver's callbacks, counted from kprobe events
DEVICE_COUNTERS = ("notifier_starts", "device_invalidates")


POWER_COUNTERS = ("tlbie", "tlbie_global", "tlbie_full", "tlbie_fixup", "tlbia", "h_remove", "h_bulk_remove",
                  "h_protect", "h_enter", "h_clear_mod", "h_clear_ref")


def _within_cv(values, starts):
    """cv_pct of each group of _grouped's values (a round's passes), those that are a number."""
    if not len(values):
        return np.empty(0)
    counts = np.diff(np.r_[starts, len(values)])
    means = np.add.reduceat(values, starts) / counts
    squares = np.add.reduceat((values - np.repeat(means, counts)) ** 2, starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        cv = np.sqrt(squares / (counts - 1)) / means * 100
    cv = cv[(counts > 1) & (means != 0)]
    return cv[~np.isnan(cv)]


def per_call_counters(table, stride):
    """Counter columns per mprotect call: IPIs from the timed passes (warm-ups left out, as from the
    rates), tracepoint counts from the traced (warm-up) passes.  A count is its passes' sum over
    their calls (analysis/counts.py's side value too)."""
    out = {}
    rows = np.asarray(table["stride_bytes"] == stride, dtype=bool)
    traced = np.asarray(table["traced"], dtype=bool) if "traced" in table else None
    timed = rows & ~np.asarray(table["warmup"], dtype=bool) if "warmup" in table else rows
    timed = timed & ~traced if traced is not None else timed
    traced = rows & traced if traced is not None else np.zeros_like(rows)
    calls = np.asarray(table["calls"])

    def per_call(column, passes):
        """(the column's sum over the passes that have it, per call of those passes), or None."""
        values = np.asarray(table[column])
        if values.dtype.kind == "f":
            passes = passes & ~np.isnan(values)
        if not passes.any():
            return None
        total = values[passes].sum()
        return total, float(total / _sum(calls[passes])), passes

    if "ipis" in table and (got := per_call("ipis", timed)):
        out["ipis_per_call"] = got[1]
    if "flushes" in table and (got := per_call("flushes", traced)):
        flushes, out["flushes_per_call"], passes = got
        if "full_flushes" in table:
            out["full_flush_share"] = float(_sum(np.asarray(table["full_flushes"])[passes]) / flushes) if flushes \
                else math.nan
    for col in POWER_COUNTERS + DEVICE_COUNTERS:  # POWER's instructions and hypervisor calls (tlbie.py), --device's
        if col in table and (got := per_call(col, traced)):
            out[f"{col}_per_call"] = got[1]
    return out


def _sum(values):
    """pandas' sum: NaN left out."""
    return values[~np.isnan(values)].sum() if values.dtype.kind == "f" else values.sum()


def describe(values):
    """N, min, max, median, mean, stddev, CV% of one set of observations."""
    v = np.asarray(values, dtype=float)
    n = len(v)
    sd = float(v.std(ddof=1)) if n > 1 else math.nan
    return {"n": n, "min": float(v.min()), "max": float(v.max()), "median": float(np.median(v)),
            "mean": float(v.mean()), "stddev": sd, "cv": cv_pct(v)}


def t_quantile(confidence, df):
    """The two-sided critical value t(1 - alpha/2, df); df may be an array (Welch's df per comparison)."""
    from scipy import special  # scipy.special, not scipy.stats: a tenth of the import time

    q = special.stdtrit(df, 1 - alpha(confidence) / 2)
    return float(q) if np.ndim(q) == 0 else q


def t_bounds(centre, se, df, confidence=95.0):
    """(low, high, half_width) of centre +- t(df) x se: every t interval here (one sample, Welch,
    paired, batch means, a bootstrap's standard error) is this with its own se and df.  Arrays broadcast."""
    half = t_quantile(confidence, df) * se
    return centre - half, centre + half, half


def t_interval(values, confidence=95.0, centre=None):
    """(mean, low, high, half_width) of the t interval of the mean of `values` (the last axis; leading
    axes are independent samples), around `centre` where given (default: the mean) with the spread of
    `values`; low, high and half_width are NaN with fewer than two values, the mean with none."""
    v = np.asarray(values, dtype=float)
    n = v.shape[-1]
    mean = v.mean(axis=-1) if n else np.full(v.shape[:-1], math.nan)
    if v.ndim == 1:
        mean = float(mean)
    if centre is None:
        centre = mean
    if n < 2:
        nan = math.nan if np.ndim(mean) == 0 else np.full(np.shape(mean), math.nan)
        return mean, nan, nan, nan
    sd = v.std(axis=-1, ddof=1)
    low, high, half = t_bounds(centre, (float(sd) if v.ndim == 1 else sd) / math.sqrt(n), n - 1, confidence)
    return mean, low, high, half


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


def alpha(confidence):
    # (100 - 95) / 100 is exactly 0.05; 1 - 0.95 is not, and exact tails are compared with it.
    return (100 - float(confidence)) / 100


# What one chunk of bootstrap resamples may hold (the picks and the values picked): model's 2000
# resamples of 10^6 passes at once take 10 GB, plot's 4999 of its rounds 6 GB.  8 MiB: nanmean's
# temporaries take about twice the chunk again, and with columnar loading a chunk of 32 MiB is a
# third of model's peak at 10^6 passes; the draws are the same whatever the chunk.
CHUNK_BYTES = 8 << 20


def chunk_rows(n, columns=1, budget=CHUNK_BYTES):
    """Resamples per chunk for a bootstrap of `n` units of `columns` values each, within `budget` bytes.
    Chunks draw from one generator in turn, so the resamples, and all that follows, do not depend on it."""
    return max(1, budget // max(1, n * (columns + 1) * 8))


def interval(values, metric="mean", confidence=95.0, seed=0):
    """(centre, low, high) of one set of observations: t-interval of the mean, or a percentile
    bootstrap of the median; low/high are NaN with fewer than two observations."""
    v = np.asarray(values, dtype=float)
    centre = float(v.mean() if metric == "mean" else np.median(v))
    if len(v) < 2 or np.all(v == v[0]):
        return centre, (math.nan if len(v) < 2 else centre), (math.nan if len(v) < 2 else centre)
    if metric == "mean":
        return t_interval(v, confidence)[:3]
    low, high = percentile_bootstrap(v, np.median, confidence, 4999, seed)
    return centre, low, high


def percentile_bootstrap(v, statistic, confidence, n_resamples, seed):
    """(low, high): scipy.stats.bootstrap's percentile interval of one sample, step for step (its
    draws from default_rng(seed), the statistic of each resample, its linear quantile), held equal to
    it by tests/analysis/test_stats.py (to the last bit with scipy 1.17's quantile).  Not scipy's own
    only for its import: scipy.stats is 60 MiB resident, a fifth of plot's peak at 10^6 passes a
    side.  The resamples are drawn a chunk at a time (chunk_rows), which draws the same numbers as
    all at once."""
    v = np.asarray(v, dtype=float)
    rng, n = np.random.default_rng(seed), len(v)
    batch, theta = chunk_rows(n), []
    for k in range(0, n_resamples, batch):
        picks = rng.integers(0, n, size=(min(batch, n_resamples - k), n), dtype=np.int64)
        theta.append(statistic(v[..., picks], axis=-1))
        del picks
    theta = np.sort(np.concatenate(theta))
    alpha = np.asarray((1 - confidence / 100) / 2)
    p = np.stack((alpha, 1 - alpha))
    # scipy.stats.quantile(method="linear") as scipy 1.17 computes it (Hyndman-Fan 7)
    jg = p * len(theta) + (1 - p)
    j = jg // 1 - 1
    g = np.where(j < 0, 0.0, jg % 1)
    lo_i = np.clip(j, 0, len(theta) - 1).astype(np.int64)
    hi_i = np.clip(jg // 1, 0, len(theta) - 1).astype(np.int64)
    q = (1 - g) * theta[lo_i] + g * theta[hi_i]
    return float(q[0]), float(q[1])


def disturbed(records):
    """(disturbed, recorded): timed passes whose measuring thread was preempted, ran less than 90% of
    the pass or lost time to steal, of those that recorded it (files that recorded none: 0, 0)."""
    from ..data.columns import as_columns, flag

    cols = as_columns(records)
    flagged = cols.present("disturbed") & ~flag(cols, "warmup")
    return int((flag(cols, "disturbed") & flagged).sum()), int(flagged.sum())
