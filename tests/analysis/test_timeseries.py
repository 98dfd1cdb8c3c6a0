import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import signal, stats

from atsdbench.analysis import timeseries as ts


def ar1(phi, n, reps, seed):
    """reps independent stationary AR(1) series of length n with unit innovations (rows)."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((reps, n))
    e[:, 0] /= math.sqrt(1 - phi ** 2)  # start in the stationary distribution
    return signal.lfilter([1.0], [1.0, -phi], e, axis=1)


def coverage_t(x, conf=95.0):
    n = x.shape[1]
    half = stats.t.ppf(0.5 + conf / 200, n - 1) * x.std(axis=1, ddof=1) / math.sqrt(n)
    return float(np.mean(np.abs(x.mean(axis=1)) <= half))


def coverage_batch(x, conf=95.0):
    """The module's estimator, vectorised over rows (checked against mean_ci below)."""
    b = ts.BATCHES
    means = np.stack([part.mean(axis=1) for part in np.array_split(x, b, axis=1)], axis=1)
    half = stats.t.ppf(0.5 + conf / 200, b - 1) * means.std(axis=1, ddof=1) / math.sqrt(b)
    return float(np.mean(np.abs(x.mean(axis=1)) <= half))


def coverage_newey_west(x, conf=95.0):
    """The rejected alternative: HAC variance, Bartlett kernel, bandwidth floor(n^(1/3)), normal quantile."""
    n = x.shape[1]
    d = x - x.mean(axis=1, keepdims=True)
    lags = int(n ** (1 / 3))
    s = (d * d).mean(axis=1)
    for k in range(1, lags + 1):
        s = s + 2 * (1 - k / (lags + 1)) * (d[:, k:] * d[:, :-k]).mean(axis=1)
    half = stats.norm.ppf(0.5 + conf / 200) * np.sqrt(np.maximum(s, 0) / n)
    return float(np.mean(np.abs(x.mean(axis=1)) <= half))


# --- exact small cases -------------------------------------------------------------------------

def test_acf_by_hand():
    # deviations -2 -1 0 1 2, sum of squares 10
    r = ts.acf([1, 2, 3, 4, 5], 6)
    assert r[:5] == pytest.approx([1.0, 0.4, -0.1, -0.4, -0.4])
    assert np.isnan(r[5]) and np.isnan(r[6])
    alternating = ts.acf([1, -1] * 5, 1)
    assert alternating[1] == pytest.approx(-0.9)
    assert np.all(np.isnan(ts.acf([3, 3, 3], 2)))


def test_lag1_undefined_and_defined():
    assert ts.lag1([]) is None and ts.lag1([1.0]) is None and ts.lag1([1.0, 2.0]) is None
    assert ts.lag1([2.0, 2.0, 2.0, 2.0]) is None
    assert ts.lag1([1, 2, 3, 4, 5]) == pytest.approx(0.4)
    with pytest.raises(ValueError):
        ts.lag1([1.0, float("nan"), 2.0])


def test_block_inflation_by_hand():
    # blocks [0,0] [1,1]: means 0, 1 (variance 1/2); values: variance 1/3, over 2 -> 1/6; ratio 3
    assert ts.block_inflation([0, 0, 1, 1], 2) == pytest.approx(3.0)
    assert ts.block_inflation([0, 1, 0, 1], 2) == pytest.approx(0.0)
    assert ts.block_inflation([0, 0, 1, 1, 99], 2) == pytest.approx(3.0)  # the short tail is left out
    assert ts.block_inflation([0, 1, 2], 2) is None  # one block only
    assert ts.block_inflation([5, 5, 5, 5], 2) is None
    assert ts.block_inflation([0, 1, 2, 3], 1) == pytest.approx(1.0)


def test_block_inflation_near_one_for_independent_values():
    x = np.random.default_rng(3).standard_normal(20000)
    for block in (3, 5, 10):
        assert ts.block_inflation(x, block) == pytest.approx(1.0, abs=0.15)
    # AR(1): var of a block mean of b values over var/b = 1 + 2 sum_{k<b} (1-k/b) phi^k
    y = ar1(0.5, 20000, 1, seed=4)[0]
    expected = 1 + 2 * sum((1 - k / 5) * 0.5 ** k for k in range(1, 5))
    assert ts.block_inflation(y, 5) == pytest.approx(expected, rel=0.15)


def test_acf_by_time_by_hand():
    x = [1, 2, 3, 4, 5]  # deviations -2 -1 0 1 2, variance (ddof 0) 2
    corr, pairs, mean_dt = ts.acf_by_time(x, [0, 1, 2, 3, 4], [0.5, 1.5, 2.5, 10, 20])
    assert list(pairs) == [4, 3, 3, 0]
    assert corr[0] == pytest.approx((2 + 0 + 0 + 2) / 4 / 2)
    assert corr[1] == pytest.approx((0 - 1 + 0) / 3 / 2)
    assert corr[2] == pytest.approx((-2 - 2 - 4) / 3 / 2)  # lags 3 and 4 share the bin
    assert mean_dt[2] == pytest.approx((3 + 3 + 4) / 3)
    assert np.isnan(corr[3]) and np.isnan(mean_dt[3])
    # given out of order, the values travel with their times
    shuffled = [4, 0, 3, 1, 2]
    again = ts.acf_by_time([x[i] for i in shuffled], shuffled, [0.5, 1.5, 2.5, 10, 20])[0]
    np.testing.assert_allclose(again, corr)


def test_mean_ci_uses_t_below_the_threshold():
    x = [10.0, 12.0, 11.0, 13.0, 9.0]
    mean, lo, hi, method = ts.mean_ci(x, 90.0)
    assert method == "t"
    want = stats.t.interval(0.90, 4, loc=np.mean(x), scale=stats.sem(x))
    assert (mean, lo, hi) == pytest.approx((11.0, *want))
    assert ts.t_ci_note(5) and ts.t_ci_note(ts.ROBUST_MIN_ROUNDS) is None
    m1, lo1, hi1, _ = ts.mean_ci([4.0])
    assert m1 == 4.0 and math.isnan(lo1) and math.isnan(hi1)


def test_mean_ci_batch_means_by_hand():
    x = np.arange(20.0) % 7  # 20 values -> 5 batches of 4
    mean, lo, hi, method = ts.mean_ci(x, 95.0)
    assert method == "batch-means" and ts.ROBUST_MIN_ROUNDS == 20 and ts.BATCHES == 5
    b = x.reshape(5, 4).mean(axis=1)
    half = stats.t.ppf(0.975, 4) * b.std(ddof=1) / math.sqrt(5)
    assert (mean, lo, hi) == pytest.approx((x.mean(), x.mean() - half, x.mean() + half))
    # 22 values: batches of 5, 5, 4, 4, 4
    y = np.arange(22.0) ** 1.5
    parts = [y[:5], y[5:10], y[10:14], y[14:18], y[18:]]
    np.testing.assert_allclose(ts.batch_means(y), [p.mean() for p in parts])
    # times put a shuffled series back in order
    order = np.random.default_rng(5).permutation(22)
    assert ts.mean_ci(y[order], 95.0, times=order) == pytest.approx(ts.mean_ci(y, 95.0))
    with pytest.raises(ValueError):
        ts.mean_ci(y, 95.0, times=order[:3])


def test_vectorised_coverage_helper_is_the_module():
    x = ar1(0.5, 23, 3, seed=6)
    for row in x:
        mean, lo, hi, _ = ts.mean_ci(row, 95.0)
        assert coverage_batch(row[None, :] - mean + (hi - mean) * 0.999) == 1.0
        assert coverage_batch(row[None, :] - mean + (hi - mean) * 1.001) == 0.0


# --- coverage under autocorrelation (seeded; justifies the estimator and the threshold) --------

REPS = 3000


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.8])
def test_batch_means_covers_where_t_does_not(phi):
    x = ar1(phi, 100, REPS, seed=int(phi * 10) + 10)
    robust, naive = coverage_batch(x), coverage_t(x)
    # 3000 replicates: one standard error of a 95% coverage is 0.4 points
    assert abs(robust - 0.95) < 0.03, robust
    if phi == 0:
        assert abs(naive - 0.95) < 0.02, naive
    else:
        assert naive < 0.80, naive  # the t interval over autocorrelated rounds is far too narrow
        assert robust > naive + 0.15


def test_newey_west_undercovers_at_these_sizes():
    """Why batch means and not HAC: at the round counts runs have, Newey-West undercovers."""
    small = ar1(0.0, 20, REPS, seed=21)
    assert coverage_newey_west(small) < 0.92 <= coverage_batch(small)
    strong = ar1(0.8, 100, REPS, seed=22)
    assert coverage_newey_west(strong) < coverage_batch(strong) - 0.1


def test_threshold_of_twenty_rounds():
    """From 20 rounds (batches of 4), batch means hold near-nominal coverage at phi = 0.5 where t
    does not; at phi = 0 both are exact, batch means only wider."""
    x = ar1(0.5, ts.ROBUST_MIN_ROUNDS, REPS, seed=23)
    assert coverage_batch(x) > 0.88 and coverage_t(x) < 0.80
    iid = ar1(0.0, ts.ROBUST_MIN_ROUNDS, REPS, seed=24)
    assert abs(coverage_batch(iid) - 0.95) < 0.02


# --- the lag-1 warning -------------------------------------------------------------------------

def _lag1_rows(x):
    d = x - x.mean(axis=1, keepdims=True)
    return (d[:, 1:] * d[:, :-1]).sum(axis=1) / (d * d).sum(axis=1)


@pytest.mark.parametrize("n", [5, 10, 20, 50])
def test_lag1_threshold_false_warning_rate(n):
    r = _lag1_rows(np.random.default_rng(30 + n).standard_normal((20000, n)))
    rate = np.mean(r > ts.lag1_threshold(n))
    assert 0.035 < rate < 0.07, rate  # nominal 5%; Bartlett's z/sqrt(n) gives 1-2% here


def test_lag1_threshold_power_and_warning_text():
    r = _lag1_rows(ar1(0.8, 50, 2000, seed=40))
    assert np.mean(r > ts.lag1_threshold(50)) > 0.9
    assert ts.warn_if_autocorrelated(0.54, 50) is not None
    assert "0.54" in ts.warn_if_autocorrelated(0.54, 50)
    assert ts.warn_if_autocorrelated(0.05, 50) is None
    assert ts.warn_if_autocorrelated(None, 50) is None
    assert ts.warn_if_autocorrelated(float("nan"), 50) is None
    assert ts.warn_if_autocorrelated(0.9, 2) is None
    # several strides tested together: a stricter threshold
    t1 = ts.lag1_threshold(20)
    t4 = ts.lag1_threshold(20, ts.LAG1_LEVEL / 4)
    assert t4 > t1
    mid = (t1 + t4) / 2
    assert ts.warn_if_autocorrelated(mid, 20) and ts.warn_if_autocorrelated(mid, 20, tests=4) is None


# --- scripts/drift.py --------------------------------------------------------------------------

DRIFT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "drift.py")


def test_drift_analysis_of_synthetic_rounds(script):
    drift = script("drift")
    means = 20 + ar1(0.8, 400, 1, seed=50)[0]
    rng = np.random.default_rng(51)
    rounds = [{"round": i, "t": 0.5 * i, "gbps": list(m + 0.1 * rng.standard_normal(3))}
              for i, m in enumerate(means)]
    a = drift.analyse(rounds)
    assert a["rounds"] == 400 and a["passes"] == 1200 and a["spacing_s"] == pytest.approx(0.5)
    lag1 = [x for x in a["acf"] if x["lag"] == 1][0]
    assert lag1["seconds"] == pytest.approx(0.5) and lag1["acf"] == pytest.approx(0.8, abs=0.1)
    assert [x["lag"] for x in a["acf"]] == [k for k in drift.LAGS if k < 400]
    # AR(1) with phi 0.8: the ACF first drops below 0.1 near lag log(0.1)/log(0.8) = 10.3
    assert 5 <= a["decorrelated_lag"] <= 20
    factors = {x["block"]: x["factor"] for x in a["inflation"]}
    assert 1 < factors[3] < factors[5] < factors[10]
    assert a["acf_time"][0]["from_s"] <= 0.5 < a["acf_time"][0]["to_s"]
    assert a["warning"] and a["ci"]["batch-means"]["low"] < a["ci"]["t"]["low"]
    text = drift.format_report(a, "synthetic")
    assert "inflation" in text and "lag (rounds)" in text and "warning:" in text
    assert "batch-means" in text


def test_drift_time_edges_and_duration(script):
    drift = script("drift")
    assert drift.time_edges(0.05, 10) == [0.05, 0.1, 0.2, 0.5, 1, 2, 5]
    assert drift.time_edges(0.3, 100) == [0.2, 0.5, 1, 2, 5, 10, 20, 50]
    assert drift.parse_duration("90") == 90 and drift.parse_duration("5m") == 300
    assert drift.parse_duration("1.5h") == 5400
    for bad in ("0", "-3s", "abc", "5d"):
        with pytest.raises(drift.Bad):
            drift.parse_duration(bad)


@pytest.mark.parametrize("args", [["--rounds", "2"], ["--duration", "soon"], ["--stride", "100K"],
                                  ["--rounds", "3", "--duration", "1s"], ["--plot", "x.txt", "--rounds", "3"]])
def test_drift_bad_input_is_one_line(args, script, capsys):
    """main() in-process (a traceback would fail the test here): a process start each cost seconds."""
    code = script("drift").main(["--size", "16M", *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("drift: ") and "Traceback" not in err


@pytest.mark.live
def test_drift_tiny_real_run(tmp_path):
    out = tmp_path / "d.json"
    p = subprocess.run([sys.executable, DRIFT, "--size", "16M", "--rounds", "4", "--passes", "2", "--json",
                        str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["complete"] and len(doc["rounds"]) == 4 and doc["analysis"]["rounds"] == 4
    assert all(len(r["gbps"]) == 2 and r["gbps"][0] > 0 for r in doc["rounds"])
    times = [r["t"] for r in doc["rounds"]]
    assert times == sorted(times)
    assert "4 rounds (8 timed passes)" in p.stdout
