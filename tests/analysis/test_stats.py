import math

import numpy as np
import pandas as pd
import pytest

from atsdbench.analysis import detectable, multiplicity, stats, two_sample
from atsdbench.data.columns import Columns
from conftest import table_of


def sample_with(mean, sd, n=5):
    """n values with exactly this mean and sample standard deviation."""
    z = np.linspace(-1, 1, n)
    z = (z - z.mean()) / z.std(ddof=1)
    return mean + sd * z


def test_ministat_format_keeps_the_seed_numbers():
    """intel-gfx 2009: 372.32 +/- 99.4189, 15.6787% +/- 4.18662%, pooled s = 68.1679 (ministat): the
    `ministat` format prints ministat's own difference / baseline, never the log-scale ratio."""
    from atsdbench import ministat

    base, new = sample_with(2374.68, 86.519287), sample_with(2747, 42.522053)
    lines = ministat.relative(ministat.Dataset("b", new), ministat.Dataset("a", base), 95)
    assert lines[1].split()[0] == "372.32" and lines[2].split()[0] == "15.6787%"
    assert "pooled s = 68.1679" in lines[3]
    d = two_sample.difference(base, new, "student", 95)
    assert d["speedup_pct"] != pytest.approx(15.6787, abs=1e-3)  # the ratio of geometric means


@pytest.mark.parametrize("test", ["welch", "student"])
def test_log_t_is_scipys_t_test_on_log_rates(test):
    from scipy import stats as ss

    base, new = sample_with(10, 1, 5), sample_with(12, 3, 8)
    d = two_sample.difference(base, new, test, 95)
    x, y = np.log(base), np.log(new)
    ref = ss.ttest_ind(y, x, equal_var=test == "student")
    assert d["p_value"] == pytest.approx(ref.pvalue)
    ci = ref.confidence_interval(0.95)
    assert d["ci_low_pct"] == pytest.approx((math.exp(ci.low) - 1) * 100)
    assert d["ci_high_pct"] == pytest.approx((math.exp(ci.high) - 1) * 100)
    ratio = math.exp(y.mean() - x.mean())
    assert d["speedup_pct"] == pytest.approx((ratio - 1) * 100)
    assert d["new"] / d["base"] == pytest.approx(ratio)  # the columns are geometric means
    # a ratio's CI is asymmetric around the estimate in %, symmetric in log
    assert math.log1p(d["ci_high_pct"] / 100) - math.log(ratio) == pytest.approx(
        math.log(ratio) - math.log1p(d["ci_low_pct"] / 100))
    if test == "welch":
        va, vb = x.var(ddof=1) / 5, y.var(ddof=1) / 8
        assert d["df"] == pytest.approx((va + vb) ** 2 / (va ** 2 / 4 + vb ** 2 / 7))


def test_t_verdict_and_ci_agree():
    rng = np.random.default_rng(3)
    for _ in range(200):
        a, b = rng.lognormal(0, 0.1, 4), rng.lognormal(0.1, 0.1, 6)
        d = two_sample.difference(a, b, "welch", 95)
        assert d["significant"] == (d["ci_low_pct"] > 0 or d["ci_high_pct"] < 0)


def test_student_with_one_run_on_one_side_uses_the_other_sides_spread():
    a, b = [10.0, 11.0, 12.5], [14.0]
    d = two_sample.difference(a, b, "student", 95)
    from scipy import stats as ss

    x = np.log(a)
    se = x.std(ddof=1) * math.sqrt(1 / 3 + 1)
    t = (math.log(14) - x.mean()) / se
    assert d["df"] == 2 and d["p_value"] == pytest.approx(2 * ss.t.sf(abs(t), 2))
    assert two_sample.difference(a, b, "welch")["why"] == "fewer than 2 observations"
    assert two_sample.difference([1.0], [2.0], "student")["why"]


def test_identical_samples_are_no_difference():
    x = [10.0, 11.0, 12.0, 10.5, 11.5]
    for test in two_sample.TESTS:
        d = two_sample.difference(x, x, test, 95)
        assert d["speedup_pct"] == pytest.approx(0.0, abs=1e-12) and not d["significant"]
        assert d["p_value"] == pytest.approx(1.0)


def test_constant_samples_are_exact():
    d = two_sample.difference([10.0, 10.0, 10.0], [12.0, 12.0], "welch")
    assert d["significant"] and d["ci_low_pct"] == pytest.approx(20) == d["ci_high_pct"]


def test_hodges_lehmann_is_the_median_of_pairwise_ratios():
    base, new = [10, 11, 12, 13, 100], [20, 21, 22, 23, 24]
    d = two_sample.difference(base, new, "mannwhitney", 95)
    ratios = [n / b for b in base for n in new]
    assert d["speedup_pct"] == pytest.approx((np.median(ratios) - 1) * 100)
    assert d["base"] == 12 and d["new"] == 22  # the columns stay the medians
    # exact CI, 5 vs 5 at 95%: from the 3rd smallest to the 3rd largest pairwise ratio
    srt = sorted(ratios)
    assert two_sample.hl_rank(5, 5, 95) == 3
    assert d["ci_low_pct"] == pytest.approx((srt[2] - 1) * 100) and d["ci_high_pct"] == pytest.approx(
        (srt[-3] - 1) * 100)


@pytest.mark.parametrize("m,n", [(1, 6), (3, 3), (4, 5), (7, 2), (8, 8), (12, 9)])
def test_exact_null_distribution_matches_scipy(m, n):
    from scipy import stats as ss

    rng = np.random.default_rng(m * 100 + n)
    for _ in range(25):
        x, y = rng.lognormal(0, 0.1, m), rng.lognormal(0.05, 0.1, n)
        r = two_sample.hodges_lehmann(x, y)
        assert r["exact"] and r["p"] == pytest.approx(ss.mannwhitneyu(y, x, method="exact").pvalue, abs=1e-12)
        d = two_sample.difference(x, y, "mannwhitney")
        if r["k"]:  # the CI excludes no shift exactly when p < alpha: one test, two views
            assert d["significant"] == (d["ci_low_pct"] > 0 or d["ci_high_pct"] < 0)
    assert two_sample.u_null_cdf(m, n)[-1] == pytest.approx(1.0)


def test_ties_fall_back_to_the_normal_approximation():
    from scipy import stats as ss

    base, new = [10.0, 10.0, 11.0, 12.0, 12.0, 13.0], [12.0, 13.0, 14.0, 14.0, 15.0, 16.0]
    r = two_sample.hodges_lehmann(base, new)
    assert not r["exact"] and r["p"] == pytest.approx(ss.mannwhitneyu(new, base, method="asymptotic").pvalue)
    assert r["k"] == two_sample.hl_rank(6, 6, 95, exact=False) > 0


def test_median_with_too_few_observations_says_so_and_names_the_smallest_n():
    """3 vs 3: the smallest two-sided Mann-Whitney p is 2/20 = 0.1, so 95% is out of reach."""
    d = two_sample.difference([1.0, 1.1, 1.2], [2.0, 2.1, 2.2], "mannwhitney", 95)
    assert d["p_value"] == pytest.approx(0.1) and not d["significant"]
    assert math.isnan(d["ci_low_pct"]) and "4 a side could" in d["why"] and "3 vs 3" in d["why"]
    assert two_sample.smallest_n(95) == 4 and two_sample.smallest_n(80) == 3 and two_sample.smallest_n(99) == 5
    d = two_sample.difference([1.0, 1.1, 1.2, 1.3], [2.0, 2.1, 2.2, 2.3], "mannwhitney", 95)
    assert d["significant"] and not d.get("why")


def test_holm():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 -> 0.06 (monotone)
    assert list(multiplicity.holm([0.01, 0.04, 0.03, 0.005])) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    out = multiplicity.holm([0.02, math.nan, 0.5])  # no test made: not counted, stays NaN
    assert out[0] == pytest.approx(0.04) and math.isnan(out[1]) and out[2] == pytest.approx(0.5)
    assert list(multiplicity.holm([0.9, 0.8])) == [1.0, 1.0]  # 0.8 * 2 caps at 1, and the next may not be smaller
    assert list(multiplicity.adjust([0.01, 0.04], "none")) == [0.01, 0.04]


def test_fewer_than_two_observations():
    d = two_sample.difference([1.0], [2.0, 3.0], "welch")
    assert math.isnan(d["ci_low_pct"]) and not d["significant"] and d["why"]
    d = two_sample.difference([1.0, 0.0], [2.0, 3.0], "welch")
    assert "zero or negative" in d["why"]


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
    s = stats.stride_summary(Columns.from_records(rows))[0]
    assert s["rounds"] == 4 and s["passes"] == 8 and s["max"] < 100  # warm-up excluded
    assert s["between_cv"] > 30 and s["within_cv"] < 2
    obs = stats.observations(Columns.from_records(rows), 65536)
    assert sorted(obs) == [10.0, 10.0, 20.0, 20.0]


@pytest.mark.parametrize("n", [5, 8])
def test_smallest_detectable_change_is_detected_80_percent_of_the_time(n):
    """Seeded simulation: a true change of exactly mde_pct (from the population's standard error) is
    found significant in about 80% of Student's t tests, and a table of 4 (Holm) asks for more."""
    import math

    rng = np.random.default_rng(25 + n)
    sigma = 0.05
    se, df = sigma * math.sqrt(2 / n), 2 * n - 2
    mde = detectable.mde_pct(se, df, 95)
    delta = math.log1p(mde / 100)
    a = np.exp(rng.normal(0, sigma, (20000, n)))
    b = np.exp(rng.normal(delta, sigma, (20000, n)))
    power = (two_sample.log_t(a, b, "student", 95)["p"] < 0.05).mean()
    assert 0.78 <= power <= 0.82
    assert detectable.mde_pct(se, df, 95, tests=4) > mde and detectable.mde_pct(se, df, 95, rank=True) > mde
    assert math.isnan(detectable.mde_pct(0.0, df)) and math.isnan(detectable.mde_pct(se, 0))


def _grouped_unit(frame, unit):
    """effective_unit as it was written first: a pandas groupby of every measured pass."""
    if unit == "round" and frame[~frame["warmup"]].groupby("stride_bytes")["round"].nunique().min() < 2:
        return "pass"
    return unit


def test_effective_unit_is_the_grouped_rule_without_its_copies():
    """A stride at a time by masks gives what grouping every pass gave (gaps, NaN strides and rounds,
    warm-up passes), and tracemalloc's peak over 10^6 passes stays under 10 bytes a pass (the groupby
    took 60)."""
    import tracemalloc

    rng = np.random.default_rng(1)
    for i in range(120):
        n = int(rng.integers(1, 30))
        frame = pd.DataFrame({"warmup": rng.random(n) < 0.3,
                              "stride_bytes": (rng.choice([1.0, 2.0, 3.0, np.nan], n) if i % 2
                                               else rng.choice([1, 2, 3], n)),
                              "round": rng.choice([0.0, 1.0, np.nan], n) if i % 3 == 0 else rng.integers(0, 2, n)})
        assert stats.effective_unit(table_of(frame), "round") == _grouped_unit(frame, "round"), frame
    n = 10**6
    table = table_of({"warmup": np.zeros(n, dtype=bool), "stride_bytes": np.arange(n) % 4 * 65536,
                                 "round": np.arange(n) // 16})
    tracemalloc.start()
    try:
        assert stats.effective_unit(table, "round") == "round"
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * n, peak / n


def test_the_percentile_bootstrap_is_scipys():
    """stats.percentile_bootstrap is scipy.stats.bootstrap(method="percentile") without its import:
    the same draws, statistic and quantile, so plot's intervals are what scipy gave."""
    import inspect

    import numpy as np
    from scipy import stats as sps

    from atsdbench.analysis import stats

    name = "rng" if "rng" in inspect.signature(sps.bootstrap).parameters else "random_state"
    data = np.random.default_rng(7)
    for case in range(60):
        n = int(data.integers(2, 40))
        v = data.lognormal(3, 0.2, n) if case % 3 else data.integers(1, 5, n).astype(float)  # ties too
        confidence = float(data.choice(stats.CONFIDENCES))
        seed = int(data.integers(0, 1000))
        resamples = int(data.integers(1, 3000))
        res = sps.bootstrap((v,), np.median, confidence_level=confidence / 100, n_resamples=resamples,
                            batch=stats.chunk_rows(n), method="percentile", **{name: np.random.default_rng(seed)})
        got = stats.percentile_bootstrap(v, np.median, confidence, resamples, seed)
        # the same draws and statistics: equal to the last bit with scipy 1.17's quantile, to rounding
        # with an older scipy's (np.percentile's arithmetic)
        want = (float(res.confidence_interval.low), float(res.confidence_interval.high))
        assert got == pytest.approx(want, rel=1e-12, abs=0), (case, n)


def test_a_median_interval_does_not_import_scipy_stats():
    import subprocess
    import sys

    code = ("import sys; from atsdbench.analysis import stats; stats.interval([1.0, 2.0, 3.5, 2.5], 'median'); "
            "print('scipy.stats' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_group_values_are_pandas_groupby():
    """group_values (observations' round means and medians, a stride's summary) gives what pandas'
    groupby gave before it: NaN keys in no group, NaN values left out, all-NaN groups NaN, keys sorted,
    medians equal and means to the last bit (pandas sums with Kahan's compensation, numpy in order);
    and the within-round CV is each group's cv_pct."""
    import pandas as pd

    rng = np.random.default_rng(29)
    for _ in range(60):
        n = int(rng.integers(0, 40))
        keys = rng.integers(0, int(rng.integers(1, 6)), n).astype(float)
        keys[rng.random(n) < 0.1] = np.nan
        values = rng.normal(10, 3, n)
        values[rng.random(n) < (0.2 if rng.random() < 0.8 else 1)] = np.nan
        for metric in ("mean", "median"):
            got_keys, got = stats.group_values(keys, values, metric)
            grouped = pd.Series(values).groupby(keys)
            want = grouped.mean() if metric == "mean" else grouped.median()
            assert list(got_keys) == list(want.index)
            np.testing.assert_allclose(got, want.to_numpy(), rtol=0 if metric == "median" else 1e-15)
        cvs = [stats.cv_pct(g) for _, g in pd.Series(values).groupby(keys)]
        np.testing.assert_allclose(stats._within_cv(*stats._grouped(keys, values)[1:]), [c for c in cvs if not np.isnan(c)], rtol=1e-13)
