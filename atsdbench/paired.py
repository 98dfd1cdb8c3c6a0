"""`compare FILE --by AXIS`: the cells of one run against each other, paired by round.

The cells of a round ran one after another, interleaved in a shuffled order, each with its own
fresh region: whatever moved the machine between rounds, or between runs, moved them alike.  So
each round gives one difference per stride (log rate of the new cell minus log rate of the base
cell) and the test is on those differences: the drift cancels instead of widening the CI.  Every
cell is compared with the cell holding the first value of the axis, the other axes held equal.

--metric mean: paired t on the log round means (the ratio of geometric means, CI exponentiated).
--metric median: Hodges-Lehmann estimate of the differences of log round medians (the median of
their Walsh averages) with the CI that inverts the Wilcoxon signed-rank test, and its p: exact
without ties.  A percentile bootstrap of the median difference was tried first and measured short
of its level at the usual 6-15 rounds (92-94% for 95%, percentile and BCa; tests/test_axes.py keeps it),
and it could disagree with the signed-rank p; the inverted test covers at least its level by
construction and never contradicts its own p.
"""
import functools
import math

import numpy as np

from . import cells, comparison, results, stats
from .errors import UsageError
from .units import format_size

TESTS = {"mean": "paired-t", "median": "wilcoxon"}


def paired_t(base, new, confidence=95.0):
    """Paired t on log rates; the last axis holds the rounds, base[..., r] paired with new[..., r];
    leading axes are independent comparisons.  Returns arrays ratio, low, high (new/base), p, df,
    base, new (geometric means)."""
    from scipy import special

    x, y = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(new, dtype=float))
    d = y - x
    n = d.shape[-1]
    mean = d.mean(axis=-1)
    se = d.std(axis=-1, ddof=1) / math.sqrt(n)
    df = np.full_like(mean, n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, np.abs(mean) / se, np.where(mean == 0, 0.0, np.inf))
    p = 2 * special.stdtr(df, -t)
    half = special.stdtrit(df, 1 - stats.alpha(confidence) / 2) * se
    return {"ratio": np.exp(mean), "low": np.exp(mean - half), "high": np.exp(mean + half), "p": p, "df": df,
            "base": np.exp(x.mean(axis=-1)), "new": np.exp(y.mean(axis=-1))}


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
    level = stats.alpha(confidence)
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


def difference(base, new, metric="mean", confidence=95.0):
    """One paired comparison (rates, paired position by position), in stats.difference's terms."""
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
    out.update(base=float(r["base"]), new=float(r["new"]), speedup_pct=(float(r["ratio"]) - 1) * 100,
               ci_low_pct=(float(r["low"]) - 1) * 100, ci_high_pct=(float(r["high"]) - 1) * 100,
               p_value=float(r["p"]))
    if why:
        out["why"] = why
    return out


def _value_label(axis, values, position):
    """"bystanders=1"; where the value repeats in the axis (an A/A), its position too: "bystanders=0 #2"."""
    text = f"{axis}={cells.value_text(values[position])}"
    return text + f" #{position + 1}" if values.count(values[position]) > 1 else text


def _check(files, axis, test, unit, adjust):
    if len(files) != 1:
        raise UsageError(f"--by compares the cells of one file with each other: give one file (got {len(files)})")
    item = files[0]
    if (isinstance(item, str) and "," in item) or (isinstance(item, (list, tuple)) and len(item) != 1):
        raise UsageError("--by takes one result file, not replicate runs (a.json,b.json)")
    if test is not None:
        raise UsageError(f"--test {test} is for files compared with each other; --by pairs rounds: paired t for "
                         "--metric mean, Wilcoxon signed-rank for --metric median")
    if unit not in ("auto", "round"):
        raise UsageError(f"--by pairs rounds: --unit {unit} does not apply (leave it out, or give round)")
    if adjust not in stats.ADJUSTMENTS:
        raise UsageError(f"--adjust must be holm or none (got {adjust!r})")
    return item[0] if isinstance(item, (list, tuple)) else item


def _axes(result, axis):
    from .plan import AXES

    name = result.path or "the file"
    axes = result.config.get("axes") or {}
    if not axes or "cell" not in result.samples:
        raise UsageError(f"{name} has no axes: it measured one configuration (measure several side by side with "
                         "e.g. run --bystanders 0,1, then compare --by bystanders)")
    if axis not in axes:
        if axis not in AXES:
            raise UsageError(f"--by {axis!r} is not an axis (axes: {', '.join(AXES)})")
        raise UsageError(f"{name} has no axis {axis} (its axes: {', '.join(axes)})")
    return axes


def round_values(frame, cell, stride, metric):
    """{round: the mean (or median) of that round's measured passes} of one cell and stride."""
    rows = frame[(frame["cell"] == cell) & (frame["stride_bytes"] == stride) & ~frame["warmup"]]
    grouped = rows.groupby("round")["gbps"]
    values = grouped.mean() if metric == "mean" else grouped.median()
    return {int(r): float(v) for r, v in values.items()}


def compare_by(files, axis, metric=None, test=None, confidence=95, unit="auto", labels=None, adjust="holm"):
    """Every cell of one file against the cell with the first value of `axis` (the other axes held
    equal), paired by round.  Returns a comparison.Comparison (paired=True) for compare's renderers;
    one test per (other axes, stride, value), Holm across all of them with adjust="holm"."""
    item = _check(files, axis, test, unit, adjust)
    metric, _, confidence, _ = comparison.resolve_options(metric, None, confidence, "auto")
    result = item if isinstance(item, results.Result) else results.load(item)
    axes = _axes(result, axis)
    values = list(axes[axis])
    value_labels = [_value_label(axis, values, j) for j in range(len(values))]
    if labels is not None:
        if len(labels) != len(values):
            raise UsageError(f"--labels gives {len(labels)} labels for the {len(values)} values of {axis}")
        value_labels = list(labels)
    others = [a for a in axes if a != axis]
    groups = {}  # other axes' positions -> {position on `axis`: cell index}
    for index, pos in cells.positions(result.config).items():
        if axis in pos and all(a in pos for a in others):
            groups.setdefault(tuple(pos[a] for a in others), {})[pos[axis]] = index
    frame = result.samples
    measured_cells = set(int(c) for c in stats.measured(frame)["cell"].dropna().unique())
    strides = sorted(int(s) for s in stats.measured(frame)["stride_bytes"].unique())
    test_name = TESTS[metric]
    rows, obs, pairs, notes, unpaired, warnings = [], {}, {}, {}, {}, []
    for key in sorted(groups):
        members = groups[key]
        group = " ".join(_value_label(a, list(axes[a]), p) for a, p in zip(others, key))
        where = f" of {group}" if group else ""
        if 0 not in members or members[0] not in measured_cells:
            warnings.append(f"the {value_labels[0]} cell{where} has no measured pass: nothing to compare with")
            continue
        for stride in strides:
            base = round_values(frame, members[0], stride, metric)
            obs[(0, group, stride)] = np.array(list(base.values()))
            for j in range(1, len(values)):
                if j in members and members[j] in measured_cells:
                    new = round_values(frame, members[j], stride, metric)
                else:  # a row all the same, so every table keeps one column group per value
                    new = {}
                    if stride == strides[0]:
                        warnings.append(f"the {value_labels[j]} cell{where} has no measured pass: not compared")
                common = sorted(set(base) & set(new))
                lost = len(set(base) ^ set(new)) if new else 0
                if lost:
                    unpaired.setdefault((value_labels[j], lost), []).append(comparison.where(group, stride))
                a, b = np.array([base[r] for r in common]), np.array([new[r] for r in common])
                obs[(j, group, stride)] = np.array(list(new.values()))
                pairs[(j, group, stride)] = (a, b)
                d = difference(a, b, metric, confidence)
                if not len(common):  # nothing paired (an interrupted run), but a cell's own passes still show
                    centre = np.mean if metric == "mean" else np.median
                    d["base"] = float(centre(list(base.values()))) if base else math.nan
                    d["new"] = float(centre(list(new.values()))) if new else math.nan
                if d.get("why"):
                    notes.setdefault((value_labels[j], d["why"]), []).append(comparison.where(group, stride))
                rows.append({"cell": group, "stride": format_size(stride), "stride_bytes": stride,
                             "base_label": value_labels[0], "new_label": value_labels[j], "base_gbps": d["base"],
                             "new_gbps": d["new"], "speedup_pct": d["speedup_pct"], "ci_low_pct": d["ci_low_pct"],
                             "ci_high_pct": d["ci_high_pct"], "p_value": d["p_value"], "adjust": adjust,
                             "test": test_name, "confidence": confidence, "unit": "round", "n_base": d["n_base"],
                             "n_new": d["n_new"], "note": d.get("why", "")})
    if not rows:
        raise UsageError(f"{result.path or 'the file'}: no cell of {axis} beyond the first has a measured pass "
                         "to compare")
    adjusted = stats.adjust([r["p_value"] for r in rows], adjust)
    for r, p in zip(rows, adjusted):
        r["p_adjusted"] = float(p)
        r["significant"] = bool(p < stats.alpha(confidence))  # False for NaN: no test made
    for (label, lost), places in unpaired.items():
        warnings.append(f"{'strides' if len(places) > 1 else 'stride'} {', '.join(places)}, {label}: {lost} "
                        f"round{'s' if lost > 1 else ''} measured one cell only (interrupted?): left out of the pairs")
    for (label, why), places in notes.items():
        warnings.append(f"{'strides' if len(places) > 1 else 'stride'} {', '.join(places)}, {label}: no CI ({why})")
    return comparison.Comparison(rows, value_labels, metric, test_name, confidence, "round", warnings, obs, adjust,
                                 paired=True, pairs=pairs, by=axis)
