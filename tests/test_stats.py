import math

import numpy as np
import pandas as pd
import pytest

from atsdbench import stats


def sample_with(mean, sd, n=5):
    """n values with exactly this mean and sample standard deviation."""
    z = np.linspace(-1, 1, n)
    z = (z - z.mean()) / z.std(ddof=1)
    return mean + sd * z


def test_student_matches_the_seed_numbers():
    """intel-gfx 2009: 372.32 +/- 99.4189, 15.6787% +/- 4.18662%, pooled s = 68.1679 (ministat)."""
    base, new = sample_with(2374.68, 86.519287), sample_with(2747, 42.522053)
    d = stats.difference(base, new, "student", 95)
    assert d["diff"] == pytest.approx(372.32, abs=1e-9)
    assert d["pooled_s"] == pytest.approx(68.1679, abs=5e-5)
    assert d["half"] == pytest.approx(99.4189, rel=5e-4)  # ministat's t is rounded to 3 decimals
    assert d["speedup_pct"] == pytest.approx(15.6787, abs=5e-5)
    assert (d["ci_high_pct"] - d["speedup_pct"]) == pytest.approx(4.18662, rel=5e-4)
    assert d["significant"] and d["p_value"] < 0.05


def test_welch_uses_welch_df():
    base, new = sample_with(10, 1, 5), sample_with(12, 3, 8)
    d = stats.difference(base, new, "welch", 95)
    va, vb = 1 / 5, 9 / 8
    assert d["df"] == pytest.approx((va + vb) ** 2 / (va ** 2 / 4 + vb ** 2 / 7))
    from scipy import stats as ss

    assert d["p_value"] == pytest.approx(ss.ttest_ind(new, base, equal_var=False).pvalue)


def test_identical_samples_are_no_difference():
    x = [10.0, 11.0, 12.0, 10.5, 11.5]
    for test in stats.TESTS:
        d = stats.difference(x, x, test, 95)
        assert d["speedup_pct"] == 0.0 and not d["significant"]


def test_mannwhitney_is_about_medians():
    base, new = [10, 11, 12, 13, 100], [20, 21, 22, 23, 24]
    d = stats.difference(base, new, "mannwhitney", 95)
    assert d["speedup_pct"] == pytest.approx((22 / 12 - 1) * 100)
    assert d["ci_low_pct"] <= d["speedup_pct"] <= d["ci_high_pct"]


def test_fewer_than_two_observations():
    d = stats.difference([1.0], [2.0, 3.0], "welch")
    assert math.isnan(d["ci_low_pct"]) and not d["significant"] and d["why"]


def test_ministat_t_is_derived_from_scipy():
    from scipy import stats as ss

    assert stats.ministat_t(95, 20) == round(ss.t.ppf(0.975, 20), 3)
    assert stats.ministat_t(99.5, 50) == round(ss.t.ppf(0.999, 50), 3)
    assert stats.ministat_t(90, 1000) == round(ss.norm.ppf(0.95), 3)


def test_summary_separates_within_and_between_round_spread():
    rows = []
    for rnd, level in enumerate([10.0, 20.0, 10.0, 20.0]):
        for rep, jitter in enumerate([-0.1, 0.1]):
            rows.append({"stride_bytes": 65536, "round": rnd, "rep": rep, "warmup": False, "gbps": level + jitter,
                         "us_per_call": 1.0, "calls": 1, "traced": False})
    rows.append({"stride_bytes": 65536, "round": 9, "rep": 0, "warmup": True, "gbps": 1000.0, "us_per_call": 1.0,
                 "calls": 1, "traced": False})
    s = stats.stride_summary(pd.DataFrame(rows))[0]
    assert s["rounds"] == 4 and s["passes"] == 8 and s["max"] < 100  # warm-up excluded
    assert s["between_cv"] > 30 and s["within_cv"] < 2
    obs = stats.observations(pd.DataFrame(rows), 65536)
    assert sorted(obs) == [10.0, 10.0, 20.0, 20.0]
