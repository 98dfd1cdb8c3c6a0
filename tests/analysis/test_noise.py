"""analysis/noise: a profile's variance components, their Satterthwaite combination, the spread check,
and (seeded) that a one-process side's CI with a profile covers what it claims."""
import math

import numpy as np
import pytest

from atsdbench.analysis import noise, two_sample


def test_an_entry_is_the_one_way_anova_of_sub_runs():
    runs = [np.log([10.0, 11.0, 10.5]), np.log([12.0, 12.5, 11.5]), np.log([9.0, 9.5, 9.2, 9.4])]
    e = noise.entry(runs)
    within_df = 2 + 2 + 3
    ss = sum(((x - x.mean()) ** 2).sum() for x in runs)
    assert e["within_df"] == within_df and e["within_var"] == pytest.approx(ss / within_df)
    means = [math.log(np.exp(x).mean()) for x in runs]  # a run's observation, as compare's run unit takes it
    assert e["means_var"] == pytest.approx(np.var(means, ddof=1)) and e["means_df"] == 2
    h = (1 / 3 + 1 / 3 + 1 / 4) / 3
    assert e["inv_rounds"] == pytest.approx(h)
    b = e["means_var"] - h * e["within_var"]
    assert e["between_var"] == pytest.approx(b)
    assert e["between_df"] == pytest.approx(b ** 2 / (e["means_var"] ** 2 / 2 + (h * e["within_var"]) ** 2 / 7))


def test_no_between_component_beyond_within_is_zero_and_too_little_is_none():
    rng = np.random.default_rng(3)
    same = [rng.normal(0, 0.05, 5) for _ in range(2)]
    same[1] += same[0].mean() - same[1].mean()  # equal means: nothing between
    assert noise.entry(same)["between_var"] == 0 and noise.entry(same)["between_df"] is None
    assert noise.entry([np.log([10.0, 11.0])]) is None  # one sub-run
    assert noise.entry([np.log([10.0]), np.log([11.0])]) is None  # no sub-run with 2 rounds


def test_combine_is_welch_for_two_plain_sides_and_adds_a_shared_estimate_once():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0, 0.05, 5), rng.normal(0, 0.09, 7)
    variance, df = noise.combine([(a.var(ddof=1) / 5, 4, "a"), (b.var(ddof=1) / 7, 6, "b")])
    welch = two_sample.log_t(np.exp(a), np.exp(b))
    assert math.sqrt(variance) == pytest.approx(float(welch["se"])) and df == pytest.approx(float(welch["df"]))
    # one estimate used on both sides (an A/A of one kernel, one profile): its value doubles, its df stays
    shared, shared_df = noise.combine([(0.01, 4, "own a"), (0.01, 4, "own b"), (0.02, 7, "p"), (0.02, 7, "p")])
    assert shared == pytest.approx(0.06)
    assert shared_df == pytest.approx(0.06 ** 2 / (0.01 ** 2 / 4 * 2 + 0.04 ** 2 / 7))
    assert math.isnan(noise.combine([(0.01, 3, "x"), (-0.02, 5, "y")])[0])  # not positive: no variance


def test_the_spread_check_is_an_f_test():
    from scipy import stats as sps

    entry = {"within_var": 0.0004, "within_df": 32}
    x = np.log([10.0, 12.0, 9.0, 11.5, 10.2])
    ratio, p = noise.spread_check(x, entry)
    assert ratio == pytest.approx(x.var(ddof=1) / 0.0004)
    f = sps.f(4, 32)
    assert p == pytest.approx(2 * min(f.cdf(ratio), f.sf(ratio)))
    assert p < noise.CHECK_LEVEL  # this side spreads ~20x the profile's: unlike it
    assert noise.spread_check(np.log([10.0, 10.1, 9.95, 10.05, 10.0]), {"within_var": 0.0001, "within_df": 32})[1] \
        > noise.CHECK_LEVEL
    assert math.isnan(noise.spread_check(x, None)[1]) and math.isnan(noise.spread_check(x[:1], entry)[1])


def test_without_a_profile_a_side_has_rates_but_no_interval():
    x = np.log([10.0, 11.0, 10.5])
    side = noise.side_with_noise_profile(x, None, 0, None)
    assert side.terms is None
    d = noise.difference(side, noise.side_with_noise_profile(x + 0.1, noise.entry([x, x + 0.05]), 1, "p"))
    assert d["why"] == "no noise profile" and math.isnan(d["p_value"]) and d["speedup_pct"] == pytest.approx(
        (math.exp(0.1) - 1) * 100)


def test_detects_shrinks_with_more_sub_runs():
    rng = np.random.default_rng(7)
    few = noise.entry([rng.normal(rng.normal(0, 0.05), 0.04, 5) for _ in range(3)])
    many = dict(few, means_df=11, within_df=48)  # the same estimates, from 12 sub-runs
    assert noise.detects(many, 5) < noise.detects(few, 5)
    assert noise.detects(many, 5, tests=4) > noise.detects(many, 5, tests=1) > 0
