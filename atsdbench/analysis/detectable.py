"""What a design detects: the smallest change a test finds with 80% power, quoted beside every verdict
(compare's Detects column, calibrate's, run's and show's notes)."""
import math

from .stats import alpha, t_quantile

POWER = 80.0  # the power every "smallest detectable change" is quoted at


RANK_EFFICIENCY = 3 / math.pi  # Mann-Whitney's and Wilcoxon's efficiency against t on normal data


def mde_pct(se, df, confidence=95.0, tests=1, power=POWER, rank=False):
    """The smallest speedup (percent) a two-sided test of this design detects with `power`% power:
    (t at 1 - alpha/2 + t at power) x se on the log scale, exponentiated; alpha is split over `tests`
    (Holm's first step, so the figure holds for every comparison of the table).  A rank test needs
    1/efficiency times the observations of t (normal theory); nan without a variance."""
    if not (se > 0 and df > 0 and math.isfinite(se)):
        return math.nan
    a = alpha(confidence) / max(1, tests)
    # t_quantile(c) is the 1 - alpha(c)/2 quantile: c = 100(1 - a) for the test, 2 x power - 100 for power
    delta = (float(t_quantile(100 * (1 - a), df)) + float(t_quantile(2 * power - 100, df))) * se
    if rank:
        delta /= math.sqrt(RANK_EFFICIENCY)
    return (math.exp(delta) - 1) * 100
