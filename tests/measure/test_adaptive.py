"""Adaptive runs: the precision estimate, the stopping rule (every reason), cells, the time estimate,
the summary and its line under the table; the rule's coverage by seeded simulation.

`scripts/adaptive_coverage.py` prints the coverage table of the docs from these helpers (more replicates)."""
import json
import math
import sys

import numpy as np
import pytest
from scipy import signal

from atsdbench.measure import adaptive
from atsdbench.render import tables as report
from atsdbench.analysis import timeseries as ts
from atsdbench.analysis.stats import t_interval, t_quantile


def records(means, strides=(65536,), cells=(None,), reps=2, round_s=None, warmup_rounds=1, start=0.0):
    """Samples as the runner makes them: a warm-up round first, then one round per entry of `means`
    (a rate, or {(cell, stride): rate}); each round's passes have that mean (+/- 1%), a warm-up
    pass of 1000 GB/s that must not count, and round_t when round_s is given."""
    out = []
    kinds = [(i, True, None) for i in range(warmup_rounds)]
    kinds += [(warmup_rounds + k, False, m) for k, m in enumerate(means)]
    for index, warm, m in kinds:
        for cell in cells:
            for stride in strides:
                rate = m.get((cell, stride), 1.0) if isinstance(m, dict) else (m or 1.0)
                passes = [(True, 1000.0)] + [(warm, rate * (1.01 if j % 2 else 0.99)) for j in range(reps)]
                for rep, (w, g) in enumerate(passes):
                    s = {"round": index, "rep": rep, "stride_bytes": stride, "warmup": w, "gbps": g}
                    if cell is not None:
                        s["cell"] = cell
                    if round_s is not None:
                        s["round_t"] = start + index * round_s
                    out.append(s)
    return out


def noisy(n, cv, seed, **kw):
    rng = np.random.default_rng(seed)
    return records(list(1 + cv * rng.standard_normal(n)), **kw)


# --- the interval -------------------------------------------------------------------------------

def test_t_interval_below_the_threshold():
    x = [10.0, 11.0, 9.0, 10.5, 9.5]
    mean, half, method = adaptive.half_width(x, 95)
    _, low, high, _ = t_interval(x, 95)
    assert method == "t" and mean == pytest.approx(10) and half == pytest.approx((high - low) / 2)
    assert math.isnan(adaptive.half_width([3.0])[1]) and math.isnan(adaptive.half_width([])[0])
    assert adaptive.half_width(x, 99)[1] > half  # the level is used


def test_overlapping_batch_means_by_hand():
    x = np.random.default_rng(1).normal(10, 1, 30)
    mean, half, method = adaptive.half_width(x, 90)
    n, m = 30, 5  # floor(sqrt(30))
    batches = [x[j:j + m].mean() for j in range(n - m + 1)]
    var = n * m / ((n - m + 1) * (n - m)) * sum((b - x.mean()) ** 2 for b in batches)
    assert method == "obm" and half == pytest.approx(t_quantile(90, 1.5 * (n / m - 1)) * math.sqrt(var / n))
    rows = np.random.default_rng(2).normal(size=(4, 25))
    got = adaptive.half_width(rows)[1]
    assert got == pytest.approx([adaptive.half_width(r)[1] for r in rows])  # vectorised = row by row
    assert adaptive.half_width(x[:ts.ROBUST_MIN_ROUNDS - 1])[2] == "t"
    assert adaptive.half_width(x[:ts.ROBUST_MIN_ROUNDS])[2] == "obm"


def test_round_means_skip_warmup_and_keep_cells_apart():
    recs = records([{(0, 4096): 2.0, (1, 4096): 5.0}, 4.0], strides=(4096,), cells=(0, 1))
    recs.append({"round": 2, "stride_bytes": 4096, "warmup": False, "gbps": None, "cell": 0})  # a 0-ns pass
    means = adaptive.round_means(recs)
    assert means[(0, 4096)] == pytest.approx([2.0, 4.0]) and means[(1, 4096)] == pytest.approx([5.0, 4.0])


def test_round_means_read_only_new_samples_and_restart_on_another_list():
    recs = records([1.0, 2.0])
    acc = adaptive.RoundMeans()
    acc.update(recs)
    recs += records([3.0], warmup_rounds=0)
    for s in recs[-3:]:
        s["round"] = 3
    assert acc.update(recs) == adaptive.round_means(recs)
    assert acc.update(records([7.0]))[(0, 65536)] == pytest.approx([7.0])


# --- the stopping rule --------------------------------------------------------------------------

def policy(**kw):
    args = {"until": 1.0, "confidence": 95.0, "max_time": 600.0, "max_rounds": None, "min_rounds": 3}
    args.update(kw)
    return adaptive.Policy(**args)


def test_stops_on_target_only_from_the_minimum():
    tight = records([1.0, 1.0001, 0.9999, 1.0, 1.0002])
    p = policy(min_rounds=5)
    assert p.after_round(tight[:3 * 5], 4) is None  # warm-up + 4 rounds: met, but below the minimum
    assert p.rows[0]["met"] and p.rounds == 4
    assert p.after_round(tight, 5) == "target" and p.stop_reason == "target"


def test_loose_rounds_go_on_then_stop_at_max_rounds():
    recs = noisy(12, 0.05, seed=3)
    p = policy(max_rounds=12)
    assert p.after_round(recs[:3 * 11 + 3], 5) is None and p.rounds == 11
    assert p.after_round(recs, 6) == "max-rounds"
    assert p.summary()["half_widths"][0]["half_width_pct"] > 1  # not met: stopped by the cap


def test_target_wins_over_max_rounds_and_time():
    recs = records([1.0] * 6)
    assert policy(max_rounds=6, max_time=1).after_round(recs, 5) == "target"


def test_time_is_the_elapsed_plus_one_mean_measured_round():
    # warm-up round at t=0 (set-up made it slow: measured rounds start at 7 s), measured rounds 2 s
    recs = noisy(4, 0.05, seed=4, round_s=2.0, start=5.0)
    p = policy(max_time=17.0)
    assert p.after_round(recs, 15.0) is None  # measured rounds began at 7 s: 8 s / 4 = 2 s; 15 + 2 <= 17
    assert p.next_round_s == pytest.approx(2.0)
    assert p.after_round(recs, 15.5) == "time"  # 15.5 + 2.125 > 17


def test_time_without_round_starts_counts_every_round():
    recs = noisy(4, 0.05, seed=4)  # 1 warm-up + 4 measured rounds, no round_t
    p = policy(max_time=11.5)
    assert p.after_round(recs, 10.0) == "time" and p.next_round_s == pytest.approx(2.0)  # 10 + 10 / 5 > 11.5
    assert policy(max_time=11.5).after_round(recs, 9.0) is None  # 9 + 1.8 <= 11.5


def test_every_cell_must_meet_the_target():
    cells = [{"bystanders": 0}, {"bystanders": 1}]
    rng = np.random.default_rng(5)
    means = [{(0, 65536): 1.0, (1, 65536): 1 + 0.1 * rng.standard_normal()} for _ in range(6)]
    recs = records(means, cells=(0, 1))
    p = policy(cells=cells)
    assert p.after_round(recs, 3) is None
    met = {r["cell"]: r["met"] for r in p.rows}
    assert met == {0: True, 1: False}
    assert p.progress_text().endswith("(64K bystanders=1)") and p.progress_text().startswith("round 6, 3 s, worst ")
    even = records([{(0, 65536): 1.0, (1, 65536): 1.0}] * 6, cells=(0, 1))
    assert policy(cells=cells).after_round(even, 3) == "target"


def test_interrupted_and_its_summary():
    recs = noisy(3, 0.05, seed=6)
    p = policy()
    assert "worst" not in p.progress_text() and p.summary()["half_widths"] == []
    p.interrupted(recs, 2.5)
    s = p.summary()
    assert s["stop_reason"] == "interrupted" and s["rounds"] == 3 and s["elapsed_s"] == 2.5
    assert not s["met"] and len(s["half_widths"]) == 1
    q = policy()
    q.after_round(recs, 2.0)
    q.interrupted()  # as the runner calls it: the last round's state is kept
    assert q.summary()["stop_reason"] == "interrupted" and q.summary()["rounds"] == 3


def test_summary_has_what_the_result_file_records():
    recs = noisy(8, 0.02, seed=7, strides=(65536, 1 << 20))
    p = policy(until=0.5, confidence=99.0, max_time=90.0, max_rounds=8, min_rounds=5)
    reason = p.after_round(recs, 4.0)
    s = json.loads(json.dumps(p.summary(), allow_nan=False))
    assert reason == s["stop_reason"] == "max-rounds"
    assert {k: s[k] for k in ("target", "confidence", "max_time", "max_rounds", "min_rounds", "rounds")} == \
        {"target": 0.5, "confidence": 99.0, "max_time": 90.0, "max_rounds": 8, "min_rounds": 5, "rounds": 8}
    assert [r["stride_bytes"] for r in s["half_widths"]] == [65536, 1 << 20]
    x = adaptive.round_means(recs)[(0, 65536)]
    mean, half, _ = adaptive.half_width(x, 99.0)
    assert s["half_widths"][0]["half_width_pct"] == pytest.approx(half / mean * 100, abs=1e-4)
    assert "cell" not in s["half_widths"][0] and s["half_widths"][0]["method"] == "t"


def test_from_plan(monkeypatch):
    from atsdbench.measure import plan

    assert adaptive.Policy.from_plan(plan.make_plan(size="16M", strides="64K")) is None
    p = adaptive.Policy.from_plan(plan.make_plan(size="16M", strides="64K", until=1.5, max_rounds=9, rounds=2))
    assert (p.until, p.min_rounds, p.max_rounds, p.max_time, p.labels) == (1.5, 3, 9, 600.0, None)
    p = adaptive.Policy.from_plan(plan.make_plan(size="16M", strides="64K", until="2%", bystanders="0,1",
                                                 affinity={0, 1}, confidence=90, max_time="90s"))
    assert (p.confidence, p.max_time, p.labels) == (90.0, 90.0, {0: "bystanders=0", 1: "bystanders=1"})


# --- --until with --runs: the sub-run is the unit ------------------------------------------------

def run_records(run_means, rounds=2, strides=(65536,)):
    """Samples of sub-runs as the runner makes them: sub-run k has its own warm-up round and `rounds`
    rounds numbered after the previous sub-run's, its round means alternating 1% below and above
    run_means[k] (so, with an even number of rounds, its mean is run_means[k])."""
    out = []
    for k, m in enumerate(run_means):
        part = records([m * (1.01 if j % 2 else 0.99) for j in range(rounds)], strides=strides)
        for s in part:
            s["round"] += k * (rounds + 1)
            s["run"] = k
        out += part
    return out


def run_policy(**kw):
    args = {"until": 5.0, "confidence": 95.0, "max_time": 600.0, "max_rounds": None, "min_runs": 3, "rounds": 2,
            "gap": 20.0}
    args.update(kw)
    return adaptive.RunPolicy(**args)


def test_run_policy_interval_is_compares_unit_and_t_interval():
    from atsdbench.analysis.compare import group_observations
    from atsdbench.data.results import Result

    means = [10.0, 10.6, 9.7, 10.2]
    recs = run_records(means, rounds=4, strides=(65536, 1 << 20))
    p = run_policy(rounds=4)
    p.observe(recs, 30.0)
    result = Result({}, {"strides": [65536, 1 << 20]}, recs)
    for row in p.rows:
        x = group_observations(result.sub_runs(), row["stride_bytes"], "run", "mean")  # what compare takes
        mean, _, _, half = t_interval(x, 95.0)
        assert x == pytest.approx(means)
        assert row["half_width_pct"] == pytest.approx(half / mean * 100) and row["mean_gbps"] == pytest.approx(mean)
        assert (row["runs"], row["rounds"], row["method"]) == (4, 16, "t")
    assert (p.runs, p.rounds) == (4, 16) and p.progress_text().startswith("sub-run 4, 30 s, worst ")


def test_run_policy_stops_on_target_from_the_minimum_sub_runs():
    recs = run_records([10.0, 10.01, 9.99])
    p = run_policy()
    assert p.after_run(recs[:len(recs) * 2 // 3], 40.0) is None  # 2 sub-runs met, but the minimum is 3
    assert p.rows[0]["met"] and p.runs == 2
    assert p.after_run(recs, 60.0) == "target"
    loose = run_policy()
    assert loose.after_run(run_records([10.0, 12.0, 9.0]), 60.0) is None and not loose.rows[0]["met"]


def test_run_policy_caps_the_file_at_max_rounds():
    recs = run_records([10.0, 12.0, 9.0])  # 3 sub-runs of 2 rounds: 6 measured rounds
    assert run_policy(max_rounds=8).after_run(recs, 60.0) is None  # one more: 8 rounds, not past the cap
    assert run_policy(max_rounds=7).after_run(recs, 60.0) == "max-rounds"  # 8 would pass 7: not started
    assert run_policy(max_rounds=7).after_run(run_records([10.0] * 3), 60.0) == "target"  # the target first


def test_run_policy_time_is_the_gap_schedule_plus_one_mean_sub_run():
    recs = run_records([10.0, 12.0, 9.0])
    p = run_policy(max_time=70.0)
    for start, end in ((0.0, 5.0), (20.0, 26.0), (40.0, 46.0)):
        p.run_done(start, end)
    # sub-run 4 starts a gap after sub-run 3 did (60 s), not now (46 s), and lasts the mean 5.67 s: 65.7 <= 70
    assert p.after_run(recs, 46.0) is None and p.next_round_s == pytest.approx(60.0 - 46.0 + 17 / 3)
    late = run_policy(max_time=70.0, gap=2.0)
    for start, end in ((0.0, 5.0), (5.0, 11.0), (11.0, 17.0)):
        late.run_done(start, end)
    assert late.after_run(recs, 66.0) == "time"  # the gap long passed: from now, 66 + 5.67 > 70
    long_first = run_policy(max_time=80.0)
    for start, end in ((0.0, 25.0), (25.0, 26.0), (45.0, 46.0)):  # the first ran long, the others did not
        long_first.run_done(start, end)
    # a gap after the last start (65 s), not 3 gaps after the first (60 s)
    assert long_first.after_run(recs, 46.0) is None and long_first.next_round_s == pytest.approx(65.0 - 46.0 + 9.0)


def test_run_policy_summary_and_the_lines_it_prints():
    recs = run_records([10.0, 10.1, 9.9, 10.05])
    p = run_policy(until=2.0, max_rounds=20)
    p.run_done(0.0, 5.0)
    assert p.after_run(recs, 61.0) == "target"
    s = json.loads(json.dumps(p.summary(), allow_nan=False))
    assert {k: s[k] for k in ("unit", "runs", "min_runs", "rounds", "min_rounds", "max_rounds", "stop_reason")} == \
        {"unit": "run", "runs": 4, "min_runs": 3, "rounds": 8, "min_rounds": 6, "max_rounds": 20,
         "stop_reason": "target"}
    assert s["half_widths"][0]["runs"] == 4 and policy().summary()["unit"] == "round"
    config = {"adaptive": s, "runs": 3, "rounds": 2, "reps": 2, "size": 1 << 24, "pages": "base"}
    assert report.adaptive_notes(config) == ["target 2% met at every stride after 4 sub-runs (61 s)"]
    from atsdbench.data.results import Result

    assert "4 sub-runs (adaptive, at least 3) of 2 rounds x 2 reps" in report.headline(Result({}, config, recs))
    p.stop_reason = "time"
    p.rows[0].update(met=False, half_width_pct=3.5)
    (line,) = report.adaptive_notes({"adaptive": p.summary()})
    assert line == "target 2% not met after 4 sub-runs (61 s): 64K at 3.5% (stopped: time)"


def test_run_policy_from_plan():
    from atsdbench.measure import plan

    p = adaptive.Policy.from_plan(plan.make_plan(size="16M", strides="64K", until="5%", runs=4, rounds=2,
                                                 gap="30s", max_rounds=12))
    assert isinstance(p, adaptive.RunPolicy)
    assert (p.min_runs, p.rounds_per_run, p.gap, p.max_rounds, p.max_time) == (4, 2, 30.0, 12, 600.0)
    assert type(adaptive.Policy.from_plan(plan.make_plan(size="16M", strides="64K", until="5%"))) is adaptive.Policy


def test_the_runner_adds_sub_runs_until_the_policy_stops(monkeypatch):
    """runner.run with --until --runs, its workers faked (nothing measured): sub-runs are added one at a
    time from the minimum, each a worker of its own rounds, and the file records why it stopped."""
    from atsdbench.measure import plan as plans, runner

    rates = iter([10.0, 13.0, 8.0, 11.5, 9.0, 12.0, 10.5])
    calls = []

    def fake_worker(plan, rounds, t, facts):
        rate = next(rates)
        calls.append([index for index, _ in rounds])
        for index, warm in rounds:
            for stride in plan.strides:
                yield {"round": index, "rep": 0, "stride_bytes": stride, "warmup": warm, "gbps": rate,
                       "round_t": t}

    monkeypatch.setattr(runner, "_worker", fake_worker)
    p = plans.make_plan(size="16M", strides="64K,1M", rounds=2, reps=1, runs=3, gap="0s", until="0.001%",
                        max_rounds=10, trace="off")
    r = runner.run(p)
    a = r.config["adaptive"]
    assert r.complete and a["stop_reason"] == "max-rounds" and (a["runs"], a["rounds"], a["unit"]) == (5, 10, "run")
    assert calls == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11], [12, 13, 14]]  # own warm-up, numbered on
    assert sorted({s["run"] for s in r.records}) == [0, 1, 2, 3, 4] and r.config["runs"] == 3
    assert len(r.sub_runs()) == 5
    rates = iter([10.0, 10.0, 10.0])
    calls.clear()
    r = runner.run(plans.make_plan(size="16M", strides="64K", rounds=2, reps=1, runs=3, gap="0s", until="5%",
                                   trace="off"))
    assert r.config["adaptive"]["stop_reason"] == "target" and len(calls) == 3


@pytest.mark.live
def test_real_adaptive_sub_runs_record_their_policy():
    import atsdbench

    r = atsdbench.run(size="16M", strides="64K", rounds=1, reps=1, runs=2, gap="0s", until=0.001, max_rounds=3,
                      trace="off")
    a = r.config["adaptive"]
    assert r.complete and (a["stop_reason"], a["runs"], a["unit"]) == ("max-rounds", 3, "run")
    assert sorted({s["run"] for s in r.records}) == [0, 1, 2]
    assert report.adaptive_notes(r.config)[0].startswith("target 0.001% not met after 3 sub-runs")


def test_the_progress_line_is_closed_before_the_table(monkeypatch):
    import io

    from atsdbench import _cli

    class Tty(io.StringIO):
        def isatty(self):
            return True

    for total, events, closes in ((None, [{"round": 0}, {"adaptive": "sub-run 1, 1 s, worst n/a (64K)"}], True),
                                  (2, [{"round": 0}, {"round": 0}], False), (3, [{"round": 0}], True)):
        err = Tty()
        monkeypatch.setattr(sys, "stderr", err)
        tick = _cli.progress_bar(total, "always")
        for e in events:
            tick(e)
        before = err.getvalue()
        tick.end()
        assert err.getvalue() == before + ("\n" if closes else "") and err.getvalue().endswith("\n")


# --- the line under the table -------------------------------------------------------------------

def config_of(p, **extra):
    return {"adaptive": p.summary(), **extra}


def test_report_line_met_and_not_met():
    p = policy()
    p.after_round(records([1.0] * 9), 42.0)
    assert report.adaptive_notes(config_of(p)) == ["target 1% met at every stride after 9 rounds (42 s)"]
    q = policy(until=0.5, confidence=99)
    q.after_round(noisy(5, 0.01, seed=8, strides=(65536, 1 << 20)), 3.25)
    q.stop_reason = "time"
    (line,) = report.adaptive_notes(config_of(q))
    rows = q.summary()["half_widths"]
    assert line == (f"target 0.5% (99% CI) not met after 5 rounds (3.2 s): 64K at {rows[0]['half_width_pct']:.3g}%, "
                    f"1M at {rows[1]['half_width_pct']:.3g}% (stopped: time)")
    assert report.adaptive_notes({}) == []


def test_report_line_cells_interrupted_and_error():
    cells = [{"bystanders": 0}, {"bystanders": 0}]
    p = policy(cells=cells)
    p.after_round(records([{(0, 65536): 1.0, (1, 65536): 1.3}, 1.0, 1.0], cells=(0, 1)), 1.0)
    p.interrupted()
    (line,) = report.adaptive_notes(config_of(p, cells=cells))
    assert "64K bystanders=0 (cell 1) at" in line and line.endswith("(stopped: interrupted)")
    assert "(cell 0)" not in line  # only what missed is listed
    ok = policy(cells=cells)
    ok.after_round(records([1.0] * 3, cells=(0, 1)), 1.0)
    ok.interrupted()
    assert report.adaptive_notes(config_of(ok)) == [
        "target 1% met at every stride and cell after 3 rounds (1.0 s) (stopped: interrupted)"]
    bare = policy()
    assert report.adaptive_notes(config_of(bare)) == [
        "target 1% not met after 0 rounds (0.0 s): nothing measured (stopped: error)"]


# --- coverage: what stopping on precision costs -------------------------------------------------

def ar1_rows(phi, n, reps, rng):
    """reps stationary AR(1) series with unit marginal standard deviation (rows)."""
    e = rng.standard_normal((reps, n))
    e[:, 0] /= math.sqrt(1 - phi ** 2)
    return signal.lfilter([1.0], [1.0, -phi], e, axis=1) * math.sqrt(1 - phi ** 2)


def fixed_batches(x, confidence=95.0):
    """timeseries.mean_ci's estimator (t below 20 rounds, then 5 batch means), vectorised."""
    n = x.shape[-1]
    if n < ts.ROBUST_MIN_ROUNDS:
        return adaptive.half_width(x, confidence)
    means = np.stack([part.mean(axis=-1) for part in np.array_split(x, ts.BATCHES, axis=-1)], axis=-1)
    half = t_quantile(confidence, ts.BATCHES - 1) * means.std(axis=-1, ddof=1) / math.sqrt(ts.BATCHES)
    return x.mean(axis=-1), half, "batch-means"


def sequential(x, target, estimator, min_rounds=5):
    """Each row run through the stopping rule (round means of true mean 1): (coverage of the interval
    it stopped on, median rounds, share that reached the cap without meeting the target)."""
    reps, cap = x.shape
    stop, covered, active = np.full(reps, cap), np.zeros(reps, bool), np.ones(reps, bool)
    for n in range(min_rounds, cap + 1):
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        mean, half, _ = estimator(x[idx, :n])
        done = (half / mean * 100 <= target) | (n == cap)
        stop[idx[done]], covered[idx[done]], active[idx[done]] = n, np.abs(mean[done] - 1) <= half[done], False
    return float(covered.mean()), float(np.median(stop)), float(np.mean(stop == cap))


def test_vectorised_fixed_batches_is_mean_ci():
    x = np.random.default_rng(9).normal(size=(3, 27))
    for row, half in zip(x, fixed_batches(x)[1]):
        m, low, high, method = ts.mean_ci(row)
        assert method == "batch-means" and half == pytest.approx((high - low) / 2)


# --- coverage on the sub-run unit: the noise simulator through the real RunPolicy ----------------

def adaptive_side(bench, rng, runs, rounds, gap, sp, until, max_time=600.0, change=0.0, label="A", boot=0.0):
    """One side of `run --until P% --runs M` on the simulated noise (noise_sim: pass, round, drift
    with its 8 s time constant, per-process sP, strides correlated 0.7): drawn for every sub-run that
    could end within max_time, then fed to the real RunPolicy sub-run by sub-run at the times the
    runner's schedule gives them.  Returns (the Result as the run would have saved it, the policy)."""
    from atsdbench.data.results import Result

    seconds = bench.sub_run_seconds(rounds)
    cap = int((max_time - seconds) // max(gap, seconds)) + 2  # one more than can end in time
    full = bench.simulate_side(rng, cap, rounds, gap, sp, boot, change, label, f"boot-{label}")
    starts, _ = bench.schedule(cap, rounds, gap)
    by_run = [[] for _ in range(cap)]
    for s in full.records:
        by_run[s["run"]].append(s)
    policy = adaptive.RunPolicy(until, 95.0, max_time, None, runs, rounds, gap)
    seen = []
    for k in range(cap):
        seen += by_run[k]
        policy.run_done(starts[k], starts[k] + seconds)
        if k + 1 >= runs and policy.after_run(seen, starts[k] + seconds) is not None:
            break
    assert policy.stop_reason is not None  # the time rule stops it before the cap
    config = {**full.config, "runs": runs, "adaptive": policy.summary()}
    return Result(full.host, config, seen, started=0.0, finished=policy.elapsed), policy


def true_mean(bench, stride, sp, boot=0.0, change=0.0):
    """The expected rate of the simulated side (log-normal: the mean of exp(level) is exp(mean + var/2))."""
    var = bench.PASS_SD ** 2 + bench.ROUND_SD ** 2 + bench.DRIFT_SD ** 2 + sp ** 2 + boot ** 2
    return bench.BASE_GBPS[stride] * (1 + change) * math.exp(var / 2)


def side_coverage(bench, sides, runs, rounds, gap, sp, until, seed, max_time=600.0):
    """(coverage of the intervals the sides stopped on, per stride, of each stride's true mean; the
    median sub-runs taken; the share stopped by the time rule; the median wall time, s)."""
    rng = np.random.default_rng(seed)
    covered, rows, taken, timed, walls = 0, 0, [], 0, []
    for _ in range(sides):
        _, p = adaptive_side(bench, rng, runs, rounds, gap, sp, until, max_time)
        for r in p.rows:
            half = r["half_width_pct"] / 100 * r["mean_gbps"]
            covered += abs(r["mean_gbps"] - true_mean(bench, r["stride_bytes"], sp)) <= half
            rows += 1
        taken.append(p.runs)
        walls.append(p.elapsed)
        timed += p.stop_reason == "time"
    return covered / rows, float(np.median(taken)), timed / sides, float(np.median(walls))


# --- real runs (tiny) ---------------------------------------------------------------------------

@pytest.mark.live
def test_real_adaptive_runs_record_their_policy():
    import atsdbench

    r = atsdbench.run(size="16M", strides="64K,1M", reps=1, until=0.001, max_rounds=6, trace="off")
    a = r.config["adaptive"]
    assert r.complete and a["stop_reason"] == "max-rounds" and a["rounds"] == 6 and a["min_rounds"] == 3
    assert r.measured["round"].nunique() == 6 and len(a["half_widths"]) == 2
    assert report.adaptive_notes(r.config)[0].startswith("target 0.001% not met after 6 rounds")
    assert "6 rounds (adaptive, at least 3) x 1 rep," in report.headline(r)


@pytest.mark.live
def test_cli_run_prints_and_saves_the_outcome(cli, tmp_path):
    out = tmp_path / "a.json"
    p = cli("run", "--size", "16M", "--strides", "64K", "--reps", "1", "--until", "0.001%", "--max-time", "1s",
            "--no-trace", "-o", out)
    assert p.returncode == 0, p.stderr
    assert "target 0.001% not met after" in p.stdout and "(stopped: time)" in p.stdout
    saved = json.loads(out.read_text())["config"]["adaptive"]
    assert saved["stop_reason"] == "time" and saved["max_time"] == 1.0
    shown = cli("show", out)
    assert shown.returncode == 0 and "target 0.001% not met after" in shown.stdout
