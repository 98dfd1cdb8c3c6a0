"""A table's p values adjusted together: Holm's step-down, so its verdicts hold for the whole family at
the confidence level (compare --adjust holm), or each alone (--adjust none)."""
import math

import numpy as np

ADJUSTMENTS = ("holm", "none")


def holm(p_values):
    """Holm's step-down adjustment; NaN p-values (no test made) stay NaN and do not count."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, math.nan)
    made = ~np.isnan(p)
    m = int(made.sum())
    if m:
        order = np.argsort(p[made], kind="stable")
        adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[made][order]))
        values = np.empty(m)
        values[order] = adjusted
        out[made] = values
    return out


def adjust(p_values, method="holm"):
    p = np.asarray(p_values, dtype=float)
    return holm(p) if method == "holm" else p.copy()
