"""Comparing result files: options, what the files have in common, and one row per (stride, new file).

Statistics come from stats (pure); rendering is in compare_formats (strings).
"""
import dataclasses

from . import results, stats
from .errors import UsageError
from .units import format_size

COLUMNS = ["stride", "stride_bytes", "base_label", "new_label", "base_gbps", "new_gbps", "speedup_pct", "ci_low_pct",
           "ci_high_pct", "p_value", "significant", "test", "confidence", "unit", "n_base", "n_new"]
# What a file measured; a difference in any of these makes a comparison suspect.  Kernel is not here:
# comparing kernels is the point.
MEASURED = [("config", "size"), ("config", "pages"), ("config", "bystanders"), ("config", "retouch"),
            ("config", "gpu"), ("host", "page_size"), ("host", "arch")]


@dataclasses.dataclass
class Comparison:
    rows: list
    labels: list
    metric: str
    test: str
    confidence: float
    unit: str
    warnings: list
    observations: dict  # (file index, stride) -> observations used

    def frame(self):
        import pandas as pd

        return pd.DataFrame(self.rows, columns=COLUMNS)


UNITS = ("auto", "round", "pass", "run")


def resolve_options(metric=None, test=None, confidence=95, unit="auto"):
    if metric not in (None, "mean", "median"):
        raise UsageError(f"--metric must be mean or median (got {metric!r})")
    if test not in (None,) + stats.TESTS:
        raise UsageError(f"--test must be welch, student or mannwhitney (got {test!r})")
    if test is None:
        test = "mannwhitney" if metric == "median" else "welch"
    if metric is None:
        metric = "median" if test == "mannwhitney" else "mean"
    if (metric == "median") != (test == "mannwhitney"):
        raise UsageError(f"--test {test} does not test the {metric}: use t-tests (welch, student) with --metric mean, "
                         "mannwhitney with --metric median")
    try:
        confidence = float(confidence)
    except (TypeError, ValueError):
        raise UsageError(f"--confidence {confidence!r} is not a number") from None
    if confidence not in stats.CONFIDENCES:
        raise UsageError(f"--confidence must be one of 80, 90, 95, 98, 99, 99.5 (got {confidence:g})")
    if unit not in UNITS:
        raise UsageError(f"--unit must be auto, round, pass or run (got {unit!r})")
    return metric, test, confidence, unit


def load_group(item):
    """One side of a comparison: a Result, a path, a list of them, or 'a.json,b.json' (replicate runs)."""
    if isinstance(item, str) and "," in item:
        item = [p for p in item.split(",") if p]
    items = item if isinstance(item, (list, tuple)) else [item]
    return [results.load(x) for x in items]


def group_observations(group, stride, unit, metric):
    """Observations of one stride over a group of replicate runs."""
    import numpy as np

    if unit == "run":
        per_run = [stats.observations(r.samples, stride, "round", metric) for r in group]
        agg = np.mean if metric == "mean" else np.median
        return np.array([agg(v) for v in per_run if len(v)], dtype=float)
    return np.concatenate([stats.observations(r.samples, stride, unit, metric) for r in group])


def _describe(value):
    return "none" if value is None else format_size(value) if isinstance(value, int) and value >= 4096 else str(value)


def measured_differences(files, names):
    """One warning per setting in which the files differ (not the kernel)."""
    out = []
    for section, key in MEASURED:
        values = [getattr(f, section).get(key) for f in files]
        if len(set(map(repr, values))) > 1:
            listing = ", ".join(f"{_describe(v)} in {n}" for v, n in zip(values, names))
            out.append(f"the files differ in {key}: {listing}")
    return out


def _name(group):
    return ",".join(r.path or "?" for r in group)


def choose_labels(groups, labels=None):
    """The user's labels, else each side's label (its --label or kernel), else file names when those repeat."""
    if labels is not None:
        if len(labels) != len(groups):
            raise UsageError(f"--labels gives {len(labels)} labels for {len(groups)} files")
        return list(labels)
    labels = [g[0].label if isinstance(g, list) else g.label for g in groups]
    if len(set(labels)) < len(labels):
        labels = [_name(g) if isinstance(g, list) else (g.path or f"file {i + 1}") for i, g in enumerate(groups)]
    return labels


def compare(files, metric=None, test=None, confidence=95, unit="auto", labels=None):
    """files: baseline first; each item one run or a group of replicate runs of the same thing."""
    metric, test, confidence, unit = resolve_options(metric, test, confidence, unit)
    if len(files) < 2:
        raise UsageError("compare needs a baseline file and at least one new file")
    groups = [load_group(f) for f in files]
    names = [_name(g) for g in groups]
    labels = choose_labels(groups, labels)
    warnings = measured_differences([g[0] for g in groups], names)
    for g in groups:
        warnings += measured_differences(g, [r.path or "?" for r in g]) if len(g) > 1 else []
    stride_sets = [set.intersection(*(set(r.measured["stride_bytes"].astype(int)) for r in g)) for g in groups]
    common = sorted(set.intersection(*stride_sets))
    for s, name in zip(stride_sets, names):
        for other in sorted(set.union(*stride_sets) - s):
            warnings.append(f"stride {format_size(other)} is missing from {name}: not compared")
    if not common:
        raise UsageError("the files have no stride in common")
    effective = unit
    if unit == "auto":
        effective = "run" if all(len(g) > 1 for g in groups) else "round"
    if unit == "run" and any(len(g) < 2 for g in groups):
        raise UsageError("--unit run needs two or more replicate runs on every side (a.json,b.json,...)")
    if effective == "round" and any(stats.effective_unit(r.samples, "round") == "pass" for g in groups for r in g):
        effective = "pass"
        warnings.append("a file has a single round: passes are the observations, so the CI ignores "
                        "between-round variance")
    elif unit == "pass":
        warnings.append("--unit pass: every pass is an observation; the CI ignores between-round variance")
    obs = {(i, s): group_observations(g, s, effective, metric) for i, g in enumerate(groups) for s in common}
    rows = []
    for s in common:
        for i in range(1, len(groups)):
            d = stats.difference(obs[(0, s)], obs[(i, s)], test, confidence)
            if d.get("why"):
                warnings.append(f"stride {format_size(s)}, {labels[i]}: no CI ({d['why']})")
            rows.append({"stride": format_size(s), "stride_bytes": s, "base_label": labels[0], "new_label": labels[i],
                         "base_gbps": d["base"], "new_gbps": d["new"], "speedup_pct": d["speedup_pct"],
                         "ci_low_pct": d["ci_low_pct"], "ci_high_pct": d["ci_high_pct"], "p_value": d["p_value"],
                         "significant": d["significant"], "test": test, "confidence": confidence,
                         "unit": effective, "n_base": d["n_base"], "n_new": d["n_new"]})
    return Comparison(rows, labels, metric, test, confidence, effective, warnings, obs)


def compare_frame(files, **options):
    return compare(files, **options).frame()
