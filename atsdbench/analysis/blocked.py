"""A fleet's verdict with boards as blocks: each board's A/B effect from its own files (compare's rows of
that board alone, its replicate design), then the fleet's effect as the mean of the boards' log ratios
with a t interval on k - 1 df (k boards).  A board's own speed is in both of its sides and cancels in
its ratio, so boards 5-50 times further apart than the kernel's effect do not widen the interval; the
boards' spread of effects, which holds each board's own noise and any real board-to-board difference
in the effect, is the interval's variance.  Why this estimator and not inverse-variance weighting:
scripts/blocked_design.py, docs/benchmarks.md ("Fleets: boards as blocks").  Pure: numpy, scipy.special."""
import dataclasses
import math

import numpy as np

from .stats import alpha

TEST = "blocked-t"
UNIT = "board"
FEWEST = 2  # boards with both sides a fleet verdict needs: the spread of their effects is its variance
EMULATED = "emulated (qemu-tcg)"
TOO_FEW = "too-few-boards"  # fewer than FEWEST boards ran every side: no fleet verdict


@dataclasses.dataclass
class Blocked:
    """compare FLEET: the rows of the fleet (compare's row format, one per cell, stride and new side),
    every board's own Comparison, and what was left out."""
    rows: list
    boards: dict  # board -> its Comparison (compare.compare of its files alone)
    labels: list  # the sides, baseline first
    confidence: float
    adjust: str
    one_sided: dict  # board -> the sides it ran, where it lacks one: named, left out
    stands_out: dict  # (cell, stride_bytes, new label) -> boards whose effect stands out from the others'
    warnings: list
    metric: str = "mean"
    rate: tuple = ("gbps", "GB/s", "GB/s = 10^9 bytes/s")
    ops: list = dataclasses.field(default_factory=lambda: ["mprotect"])

    @property
    def tests_made(self):
        return sum(1 for r in self.rows if not math.isnan(r["p_value"]))

    @property
    def withheld(self):
        """Why the fleet has no verdict at all, as a code render words (TOO_FEW), or None."""
        return TOO_FEW if len(self.boards) < FEWEST else None


def effects(board_rows):
    """{(cell, stride_bytes, new label): [(board, row)]} of every board's rows, boards in their order."""
    out = {}
    for board, rows in board_rows.items():
        for r in rows:
            out.setdefault((r["cell"], r["stride_bytes"], r["new_label"]), []).append((board, r))
    return out


def log_ratio(row):
    return math.log1p(row["speedup_pct"] / 100) if math.isfinite(row["speedup_pct"]) else math.nan


def log_ratio_t(d, confidence=95.0):
    """The one-sample t of per-board log ratios over the last axis (leading axes: independent fleets,
    as the simulation study runs them): mean, se, df = k - 1, two-sided p of no change, low, high."""
    from .paired import one_sample_t

    return one_sample_t(d, confidence)


def fleet_difference(d, confidence=95.0):
    """The blocked estimate from per-board log ratios d: the mean, its t interval on k - 1 df and the
    two-sided p of no change, as percentages of speedup; k < FEWEST: no interval, `why` says so."""
    d = np.asarray(d, dtype=float)
    k = len(d)
    out = {"speedup_pct": (math.exp(d.mean()) - 1) * 100 if k else math.nan, "k": k}
    if k < FEWEST:
        out.update(ci_low_pct=math.nan, ci_high_pct=math.nan, p_value=math.nan, se=math.nan, df=math.nan,
                   why=f"{k} board{'s' * (k != 1)}: a fleet interval needs {FEWEST} or more")
        return out
    r = log_ratio_t(d, confidence)
    out.update(ci_low_pct=(math.exp(float(r["low"])) - 1) * 100, ci_high_pct=(math.exp(float(r["high"])) - 1) * 100,
               p_value=float(r["p"]), se=float(r["se"]), df=float(r["df"]))
    return out


def standing_out(named, confidence=95.0):
    """The boards whose log ratio lies outside the others' prediction interval (t on k - 2 df, the
    level split over the k boards: Bonferroni), for k >= 3 boards.  named: [(board, log ratio)]."""
    from scipy import special

    k = len(named)
    if k < 3:
        return []
    level = alpha(confidence) / k
    out = []
    for i, (board, x) in enumerate(named):
        others = np.array([v for j, (_, v) in enumerate(named) if j != i])
        spread = others.std(ddof=1) * math.sqrt(1 + 1 / len(others))
        gap = abs(x - others.mean())
        if spread > 0:
            p = float(2 * special.stdtr(len(others) - 1, -gap / spread))
        else:
            p = 0.0 if gap > 0 else 1.0
        if p < level:
            out.append(board)
    return out


def blocked(boards, labels, confidence=95.0, adjust="holm", one_sided=None, warnings=None):
    """The fleet's rows from every board's Comparison (each compare.compare of that board's sides, labelled
    by the fleet's side names), with compare's own verdict rule over them (compare.verdicts)."""
    from .compare import verdicts

    rows, outliers = [], {}
    for (cell, stride, new), found in effects({b: c.rows for b, c in boards.items()}).items():
        named = [(b, log_ratio(r)) for b, r in found if math.isfinite(log_ratio(r))]
        d = fleet_difference([x for _, x in named], confidence)
        base = [r["base_gbps"] for _, r in found if r["base_gbps"] > 0]
        base_rate = float(np.exp(np.mean(np.log(base)))) if base else math.nan
        note = d.get("why", "")
        if any(r["note"] == EMULATED for _, r in found):
            d.update(p_value=math.nan, ci_low_pct=math.nan, ci_high_pct=math.nan, se=math.nan)
            note = EMULATED
        row = {"cell": cell, "stride": found[0][1]["stride"], "stride_bytes": stride, "base_label": labels[0],
               "new_label": new, "base_gbps": base_rate, "new_gbps": base_rate * (1 + d["speedup_pct"] / 100),
               "speedup_pct": d["speedup_pct"], "ci_low_pct": d["ci_low_pct"], "ci_high_pct": d["ci_high_pct"],
               "p_value": d["p_value"], "adjust": adjust, "test": TEST, "confidence": confidence, "unit": UNIT,
               "n_base": d["k"], "n_new": d["k"], "note": note, "verdict_withheld": False, "profile_base": "",
               "profile_new": "", "boards": [b for b, _ in named], "_se": d["se"], "_df": d["df"]}
        rows.append(row)
        out = standing_out(named, confidence)
        if out:
            outliers[(cell, stride, new)] = out
    verdicts(rows, adjust, confidence)
    first = next(iter(boards.values()), None)
    result = Blocked(rows, boards, list(labels), confidence, adjust, dict(one_sided or {}), outliers,
                     list(warnings or []))
    if first is not None:
        result.metric, result.rate, result.ops = first.metric, first.rate, first.ops
    return result
