"""analysis/scaling: a threads sweep read by thread count, on synthetic files (tests/fixtures'
sweep.json and files built here); no timing."""
import json
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from atsdbench.analysis import scaling
from atsdbench.data import results


def load(data, tmp_path, name="s.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return results.load(str(path))


def by(sc, threads, stride=65536, group=""):
    return next(r for r in sc.rows if (r.threads, r.stride_bytes, r.group) == (threads, stride, group))


def test_linear_scaling_is_100_percent_and_the_rates_are_the_round_means(tmp_path, sweep_data):
    luck = [1.0, 1.1, 0.9, 1.05]  # every round moves all its cells alike: it cancels in the pairs
    r = load(sweep_data(rate=lambda n, rnd: 10.0 * n * luck[rnd]), tmp_path)
    sc = scaling.analyse(r)
    assert [(x.threads, x.reference) for x in sc.rows] == [(1, 1), (2, 1), (4, 1)]
    for n in (1, 2, 4):
        row = by(sc, n)
        assert row.rate == pytest.approx(10.0 * n * math.exp(np.mean(np.log(luck))))
        assert row.per_task == pytest.approx(row.rate / n)
        assert row.efficiency == pytest.approx(100.0)
        assert row.rounds == 4 and row.passes == 8
    assert math.isnan(by(sc, 1).eff_low)  # the reference has no interval of its own
    assert by(sc, 4).eff_low == pytest.approx(100.0) and by(sc, 4).eff_high == pytest.approx(100.0)


def test_efficiency_is_paired_t_on_the_round_ratios_against_linear(tmp_path, sweep_data):
    rng = np.random.default_rng(3)
    own = {(n, rnd): math.exp(rng.normal(0, 0.05)) for n in (1, 2, 4) for rnd in range(6)}
    luck = rng.lognormal(0, 0.2, 6)
    r = load(sweep_data(rate=lambda n, rnd: 8.0 * n ** 0.7 * luck[rnd] * own[(n, rnd)], rounds=6), tmp_path)
    sc = scaling.analyse(r, confidence=95.0)
    for n in (2, 4):
        row = by(sc, n)
        ratios = np.log([8.0 * n ** 0.7 * luck[k] * own[(n, k)] / (n * 8.0 * luck[k] * own[(1, k)])
                         for k in range(6)])
        t = scipy_stats.ttest_1samp(ratios, 0.0)
        half = scipy_stats.t.ppf(0.975, 5) * ratios.std(ddof=1) / math.sqrt(6)
        assert row.efficiency == pytest.approx(100 * math.exp(ratios.mean()))
        assert row.eff_low == pytest.approx(100 * math.exp(ratios.mean() - half))
        assert row.eff_high == pytest.approx(100 * math.exp(ratios.mean() + half))
        assert row.p_linear == pytest.approx(t.pvalue)
        assert row.pairs == 6
    assert by(sc, 4).efficiency == pytest.approx(100 * 4 ** -0.3, rel=0.08)


def test_an_efficiency_interval_that_rules_nothing_out_is_not_given(tmp_path, sweep_data):
    """Two rounds (1 df) of ratios 100% and 2.5%: compare's rule (analysis/noise.unreadable) leaves the
    interval out (n/a) and keeps the point estimate; three steady rounds keep theirs."""
    r = load(sweep_data(threads=(1, 2), rate=lambda n, rnd: 10.0 if n == 1 else (20.0 if rnd == 0 else 0.5),
                        rounds=2), tmp_path)
    row = by(scaling.analyse(r, confidence=95.0), 2)
    assert math.isnan(row.eff_low) and math.isnan(row.eff_high)
    assert row.efficiency == pytest.approx(100 * math.sqrt(1.0 * 0.025))
    steady = load(sweep_data(threads=(1, 2), rate=lambda n, rnd: 10.0 * n ** 0.9 * (1 + rnd / 100), rounds=3),
                  tmp_path)
    row = by(scaling.analyse(steady, confidence=95.0), 2)
    assert row.eff_low == pytest.approx(row.efficiency) == pytest.approx(row.eff_high)  # zero width: kept


def test_the_smallest_thread_count_is_the_reference_where_one_is_missing(tmp_path, sweep_data):
    r = load(sweep_data(threads=(2, 4, 8), rate=lambda n, rnd: 5.0 * n * (1 + rnd / 10) * (0.5 if n == 8 else 1)),
             tmp_path)
    sc = scaling.analyse(r)
    assert {x.reference for x in sc.rows} == {2}
    assert by(sc, 4).efficiency == pytest.approx(100.0)
    assert by(sc, 8).efficiency == pytest.approx(50.0)
    assert scaling.efficiency(-50.0, 8, 2) == pytest.approx(12.5)  # compare --by's map: (1 + s) / (N/N0)


def test_spread_disturbed_and_cpu_share(tmp_path, sweep_data):
    def per_pass(n, rnd, rep):
        out = {"disturbed": n == 4 and rep == 0, "cpu_share": 0.5 if n == 4 and rep == 0 else 1.0}
        if n > 1:
            out.update(thread_ns_min=1000, thread_ns_max=1000 + 10 * n)  # slowest 1% (2) or 4% (4) behind
        return out

    r = load(sweep_data(per_pass=per_pass), tmp_path)
    sc = scaling.analyse(r)
    assert math.isnan(by(sc, 1).spread_pct) and by(sc, 2).spread_pct == pytest.approx(2.0)
    assert by(sc, 4).spread_pct == pytest.approx(4.0)
    assert by(sc, 2).disturbed == 0 and by(sc, 4).disturbed == pytest.approx(50.0)
    assert by(sc, 4).cpu_share == pytest.approx(75.0) and by(sc, 1).cpu_share == pytest.approx(100.0)


def test_not_recorded_is_nan_not_zero(tmp_path, sweep_data):
    sc = scaling.analyse(load(sweep_data(), tmp_path))
    assert all(math.isnan(x.disturbed) and math.isnan(x.cpu_share) and math.isnan(x.spread_pct) for x in sc.rows)


def test_other_axes_are_held_equal(tmp_path, sweep_data):
    r = load(sweep_data(axes={"bystanders": [0, 1]}, rate=lambda n, rnd: 3.0 * n ** 0.5 * (1 + rnd)), tmp_path)
    sc = scaling.analyse(r)
    assert {x.group for x in sc.rows} == {"bystanders=0", "bystanders=1"}
    for group in ("bystanders=0", "bystanders=1"):
        assert by(sc, 4, group=group).efficiency == pytest.approx(50.0)
    assert by(sc, 1, group="bystanders=1").rate == pytest.approx(2 * by(sc, 1, group="bystanders=0").rate)


def test_every_round_of_every_sub_run_is_a_pair(tmp_path, sweep_data):
    data = sweep_data(rounds=2, rate=lambda n, rnd: 10.0 * n)
    more = json.loads(json.dumps(data["samples"]))
    for s in data["samples"]:
        s["run"] = 0
    for s in more:  # a second sub-run (--runs), its rounds after the first's, half the rate at 4 threads
        s.update(run=1, round=s["round"] + 2)
        s["gbps"] /= 2 if s["threads"] == 4 else 1
    data["samples"] += more
    row = by(scaling.analyse(load(data, tmp_path)), 4)
    assert row.rounds == 4 and row.pairs == 4
    assert row.efficiency == pytest.approx(100 * math.sqrt(0.5))  # geometric mean of 100% and 50%


def test_a_file_without_a_sweep(fixtures, tmp_path, sweep_data):
    assert not scaling.has_sweep(results.load(str(fixtures / "before.json")))
    assert not scaling.has_sweep(load(sweep_data(threads=(2, 2)), tmp_path))  # an A/A of one count
    assert scaling.has_sweep(results.load(str(fixtures / "sweep.json")))


def test_the_rate_is_the_one_the_result_names(tmp_path, sweep_data):
    """A workload's rate (loops/s per task count) drops in: config `rate` names its column and unit."""
    assert scaling.rate_of({}) == ("gbps", "GB/s", "GB/s = 10^9 bytes/s")
    extra = {"rate": {"column": "loops_per_s", "unit": "loops/s", "definition": "loops/s of tlb_flush2"}}
    r = load(sweep_data(column="loops_per_s", extra=extra, rate=lambda n, rnd: 5e5 * n ** 0.9), tmp_path)
    sc = scaling.analyse(r)
    assert (sc.column, sc.unit, sc.definition) == ("loops_per_s", "loops/s", "loops/s of tlb_flush2")
    assert by(sc, 2).rate == pytest.approx(5e5 * 2 ** 0.9)  # not the gbps column (1.0 throughout)
    assert by(sc, 4).efficiency == pytest.approx(100 * 4 ** -0.1)


def test_the_python_api_gives_the_rows(fixtures):
    import atsdbench
    from atsdbench.errors import UsageError

    frame = atsdbench.scaling(str(fixtures / "sweep.json"))
    assert list(frame["threads"][:3]) == [1, 2, 4] and frame["efficiency"].iloc[0] == 100.0
    assert {"rate", "per_task", "eff_low", "eff_high", "spread_pct", "disturbed", "cpu_share"} <= set(frame)
    with pytest.raises(UsageError, match="no threads axis"):
        atsdbench.scaling(str(fixtures / "before.json"))


def test_values_by_round_are_the_grouped_means_pandas_gave():
    """A --runs sweep's (run, round) means against pandas' groupby: NaN rates left out, a round whose
    rates are all NaN (or not above 0) dropped, passes without a run or round in none."""
    import pandas as pd

    from conftest import table_of

    rng = np.random.default_rng(34)
    for i in range(30):
        n = int(rng.integers(1, 50))
        frame = pd.DataFrame({"round": rng.integers(0, 5, n).astype(float), "gbps": rng.uniform(-1, 9, n)})
        if i % 2:
            frame["run"] = rng.integers(0, 3, n).astype(float)
            frame.loc[rng.random(n) < 0.1, "run"] = np.nan
        frame.loc[rng.random(n) < 0.2, "gbps"] = np.nan
        frame.loc[rng.random(n) < 0.1, "round"] = np.nan
        keys = ["run", "round"] if "run" in frame else ["round"]
        grouped = frame["gbps"].groupby([frame[k] for k in keys]).mean()
        want = {tuple(int(x) for x in (k if isinstance(k, tuple) else (k,))): float(v)
                for k, v in grouped.items() if math.isfinite(v) and v > 0}
        got = scaling._values_by_round(table_of(frame), "gbps")
        assert got.keys() == want.keys()
        assert list(got.values()) == pytest.approx(list(want.values()), rel=1e-12)
