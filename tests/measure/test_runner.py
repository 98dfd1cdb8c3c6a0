"""Repetition: pacing of spread rounds and the per-stride lag-1 of round means."""
import pytest

import atsdbench
from atsdbench.measure import runner
from atsdbench.analysis import timeseries


def test_pacer_spreads_rounds_evenly_and_never_sleeps_when_late():
    now, slept, events = [100.0], [], []

    def clock():
        return now[0]

    def sleep(d):
        slept.append(d)
        now[0] += d

    pacer = runner.Pacer(60, 4, clock=clock, sleep=sleep)
    assert pacer.wait(0) == 0
    now[0] += 5  # round 0 took 5 s
    assert pacer.wait(1, events.append) == 10 and now[0] == 115
    now[0] += 20  # round 1 overran its slot
    assert pacer.wait(2) == 0
    now[0] += 1
    assert pacer.wait(3) == 9 and events == [{"wait": 10, "before": "round 2 (--spread)"}]
    idle = runner.Pacer(0, 4, clock=clock, sleep=sleep)  # no --spread: back to back
    assert [idle.wait(k) for k in range(4)] == [0, 0, 0, 0] and len(slept) == 2


def test_sub_runs_start_a_gap_after_the_one_before_even_after_a_long_one(monkeypatch):
    """--runs --gap: the gap is from the previous sub-run's start.  A schedule of k x gap from the
    first would start the third sub-run below 0.1 s after the second, the first having run long."""
    import types

    from atsdbench.measure import plan as plans

    now, starts = [0.0], []
    durations = iter([5.0, 0.1, 0.1, 3.0])

    def worker(plan, rounds, t, facts):
        starts.append(now[0])
        now[0] += next(durations)
        yield {"stride_bytes": 1 << 20}

    def sleep(d):
        now[0] += d

    monkeypatch.setattr(runner, "_worker", worker)
    monkeypatch.setattr(runner, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(runner.signals, "sleep", sleep)
    plan = plans.make_plan(size="16M", strides="1M", rounds=1, runs=4, gap="2s")
    samples = []
    runner.SubRuns(plan).passes(0.0, samples.append)
    assert [s["run"] for s in samples] == [0, 1, 2, 3]
    assert starts == [0.0, 5.0, 7.0, 9.0]  # late, then a gap after each start (not 5.1 and 6)


def test_round_lag1_per_stride_in_round_order():
    recs = [{"round": r, "stride_bytes": 4096, "warmup": False, "gbps": g}
            for r, g in enumerate([1, 2, 3, 4, 5, 6])]
    recs += [{"round": 9, "stride_bytes": 4096, "warmup": True, "gbps": 100}]
    (row,) = timeseries.round_lag1(recs)
    assert row["rounds"] == 6 and row["lag1"] > 0.4 and row["stride_bytes"] == 4096


@pytest.mark.live
def test_spread_run_records_round_times_and_lag1():
    r = atsdbench.run(size="16M", strides="64K", rounds=3, reps=1, warmup_rounds=0, spread="0.6s", trace="off")
    m = r.measured
    times = sorted(set(m["round_t"]))
    assert len(times) == 3 and times[2] - times[0] >= 0.35  # paced: 0.2 s apart at least
    assert r.config["spread"] == 0.6 and r.config["round_lag1"][0]["rounds"] == 3


class _Plan:
    def config(self):
        return {}


@pytest.mark.parametrize("child,said", [
    ("import os, signal, sys; sys.stdin.read(); os.kill(os.getpid(), signal.SIGKILL)",
     "the round worker was killed by SIGKILL (signal 9)"),
    ("import sys; sys.stdin.read(); sys.exit('worker: out of memory')",
     "the round worker exited 1 without finishing: worker: out of memory"),
    ("import os, sys; sys.stdin.read(); os._exit(3)", "the round worker exited 3 without finishing and printed nothing"),
])
def test_a_worker_that_dies_says_how(monkeypatch, child, said):
    """A killed --processes/--runs child is said by its signal or its last words, never as no output."""
    import subprocess
    import sys

    real = subprocess.Popen
    monkeypatch.setattr(runner.subprocess, "Popen", lambda args, **kw: real([sys.executable, "-c", child], **kw))
    with pytest.raises(OSError) as e:
        list(runner._worker(_Plan(), [(0, False)], 0.0, {}))
    assert str(e.value) == said


def test_a_refused_personality_starts_the_workload_worker_as_it_is(monkeypatch):
    """docs/workloads.md: where setting ADDR_NO_RANDOMIZE fails the run goes on, its config saying
    aslr on (atsd does so); the refusal ended the run with `personality: ...` instead."""
    import errno
    import subprocess

    from atsdbench.measure import core
    from atsdbench.measure.plan import Plan

    def no_aslr(change=0):
        if change:
            raise OSError(errno.EPERM, "personality")
        return False

    started = []
    monkeypatch.setattr(core, "no_aslr", no_aslr)
    monkeypatch.setattr(subprocess, "Popen", lambda argv, **kw: started.append(argv) or "proc")
    plan = Plan(size=1 << 20, strides=[4096], workload="tlb_flush2")
    assert runner._start_worker(plan, ["worker"]) == "proc" and started == [["worker"]]
