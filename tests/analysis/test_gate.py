"""compare --fail-on's rule (analysis/gate.py): 1 where a row's verdict is slower and its interval lies
below -T, 125 where a row has no verdict, 0 otherwise; the threshold's refusals."""
import math

import pytest

from atsdbench.analysis import gate
from atsdbench.errors import EXIT_NO_VERDICT, EXIT_SLOWER, UsageError


def _row(speedup, low, high, p=0.001, significant=True, withheld=False):
    return {"speedup_pct": speedup, "ci_low_pct": low, "ci_high_pct": high, "p_value": p,
            "significant": significant, "verdict_withheld": withheld}


@pytest.mark.parametrize("text,value", [("5%", 5.0), ("5", 5.0), (" 2.5% ", 2.5), ("0", 0.0)])
def test_threshold_reads_percent(text, value):
    assert gate.threshold(text) == value


@pytest.mark.parametrize("text,said", [("five", "is not a slowdown in percent"), ("-1%", "from 0% up to"),
                                       ("100", "from 0% up to"), ("nan", "from 0% up to")])
def test_threshold_refuses(text, said):
    with pytest.raises(UsageError, match=said):
        gate.threshold(text)


def test_slower_beyond_the_threshold_fails():
    assert gate.status([_row(-9, -12, -6)], 5) == EXIT_SLOWER
    assert gate.status([_row(3, 1, 5), _row(-9, -12, -6)], 5) == EXIT_SLOWER


def test_slower_but_not_beyond_it_passes():
    assert gate.status([_row(-6, -9, -3)], 5) == 0  # the CI does not exclude -5%
    assert gate.status([_row(-9, -12, -6, p=0.03, significant=False)], 5) == 0  # Holm said n.s.
    assert gate.status([_row(8, 5, 11)], 5) == 0


def test_a_row_without_a_verdict_skips():
    nan = math.nan
    assert gate.status([_row(1, -1, 3), _row(-9, -12, -6, withheld=True)], 5) == EXIT_NO_VERDICT
    assert gate.status([_row(1, nan, nan, p=nan, significant=False)], 5) == EXIT_NO_VERDICT
    assert gate.status([], 5) == EXIT_NO_VERDICT
    # a proven slowdown still fails where another row has no verdict
    assert gate.status([_row(-9, -12, -6), _row(1, nan, nan, p=nan)], 5) == EXIT_SLOWER
    assert "git bisect's skip" in gate.reason([], 5)
