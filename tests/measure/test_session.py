"""atsdbench.measure.session's per-pass and per-round records: how disturbed each
pass was (measured, not guessed), and the host-drift canary of each round."""
import json

import pytest

from atsdbench.analysis import compare as comparison, stats
from atsdbench.data import results
from atsdbench.measure import core
from atsdbench.render import tables

STAT = """cpu  100 0 50 1000 5 0 1 7 0 0
cpu0 50 0 25 500 2 0 1 3 0 0
cpu1 50 0 25 500 3 0 0 4 0 0
intr 12345
"""


def test_steal_ticks_are_the_eighth_field_of_the_cpus_line():
    assert core.steal_ticks(STAT, 0) == 3 and core.steal_ticks(STAT, 1) == 4
    assert core.steal_ticks(STAT, 2) is None and core.steal_ticks("", 0) is None
    assert core.steal_ticks("cpu0 1 2 3 4 5 6 7\n", 0) is None  # an old kernel without steal
    assert core.steal_ticks("cpu10 1 2 3 4 5 6 7 9\ncpu1 1 2 3 4 5 6 7 8\n", 1) == 8  # cpu1 is not cpu10
    assert core.steal_ticks("cpu0 1 2 3 4 5 6 7 8x\n", 0) is None
    assert core.steal_ticks("cpu-1 1 2 3 4 5 6 7 8", -1) is None
    assert core.steal_ticks("cpu0 1 2 3 4 5 6 7 99999999999999999999999\n", 0) is None  # past 64 bits


def test_self_state_reads_this_thread_and_this_system():
    before = core.self_state(0)
    sum(range(200_000))
    preempted, cpu_ns, steal = core.self_delta(before, core.self_state(0, after=True))
    assert preempted >= 0 and cpu_ns > 0
    with open("/proc/stat") as f:
        text = f.read()
    assert (steal is None) == (core.steal_ticks(text, 0) is None)


def test_steal_that_went_back_or_is_missing_is_no_steal():
    a, b = core.ffi.new("struct atsd_self_state *"), core.ffi.new("struct atsd_self_state *")
    a.preempted, a.cpu_ns, a.steal_ticks = 1, 100, 7
    b.preempted, b.cpu_ns, b.steal_ticks = 3, 350, 9
    assert core.self_delta(a, b) == (2, 250, 2)
    b.steal_ticks = 6
    assert core.self_delta(a, b)[2] is None
    a.steal_ticks, b.steal_ticks = -1, 9
    assert core.self_delta(a, b)[2] is None


@pytest.mark.parametrize("preempted,cpu_ns,steal,ns,disturbed", [
    (0, 1_000_000, 0, 1_000_000, False),
    (1, 1_000_000, 0, 1_000_000, True),         # preempted once
    (0, 800_000, 0, 1_000_000, True),           # ran 80% of the pass
    (0, 1_000_000, 1, 1_000_000, True),         # the hypervisor stole a tick
    (0, 1_000_000, None, 1_000_000, False),     # no steal column: not a disturbance
])
def test_a_pass_is_disturbed_by_preemption_short_cpu_or_steal(preempted, cpu_ns, steal, ns, disturbed):
    d = results.disturbance(preempted, cpu_ns, steal, ns)
    assert d["disturbed"] is disturbed
    assert d["preempted"] == preempted and d["cpu_share"] == round(cpu_ns / ns, 4)
    assert ("steal_ticks" in d) == (steal is not None)


def _with_disturbance(fixtures, tmp_path, name, every):
    data = json.loads((fixtures / "before.json").read_text())
    for i, s in enumerate(data["samples"]):
        s.update(preempted=int(i % every == 0), cpu_share=1.0, disturbed=i % every == 0)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return results.load(str(path))


def test_disturbed_passes_are_counted_and_warned_under_the_table(fixtures, tmp_path):
    r = _with_disturbance(fixtures, tmp_path, "d.json", 4)
    n, of = stats.disturbed(r.records)
    assert of == sum(1 for s in r.records if not s["warmup"]) and 0 < n < of
    assert any(line.startswith(f"warning: {n} of {of} timed passes disturbed") for line in tables.notes(r))
    clean = results.load(str(fixtures / "before.json"))
    assert stats.disturbed(clean.records) == (0, 0)
    assert not any("disturbed" in line for line in tables.notes(clean))


def test_compare_warns_when_one_side_was_disturbed_much_more(fixtures, tmp_path):
    calm = _with_disturbance(fixtures, tmp_path, "calm.json", 10**9)    # only the first pass
    busy = _with_disturbance(fixtures, tmp_path, "busy.json", 2)        # every other pass
    cmp = comparison.compare([calm, busy])
    assert any("were disturbed" in w and "the rates may differ" in w for w in cmp.warnings)
    cmp = comparison.compare([busy, calm])  # the baseline was the disturbed one: nothing to say of the new
    assert not any("were disturbed" in w for w in cmp.warnings)


def test_the_schema_types_the_new_columns(fixtures, tmp_path):
    data = json.loads((fixtures / "before.json").read_text())
    data["samples"][0]["preempted"] = -1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(Exception, match="preempted"):
        results.load(str(path))


@pytest.mark.live
def test_canary_times_compute_and_chase_and_frees_once():
    from atsdbench.measure import core

    c = core.Canary(1 << 20, 3)
    compute, chase = c.run(1_000_000, 10_000)
    assert compute > 0 and chase > 0
    c.close()
    c.close()
    with pytest.raises(OSError):
        c.run(1, 1)


@pytest.mark.live
def test_a_run_records_canary_disturbance_and_boot_id():
    import atsdbench

    r = atsdbench.run(size="16M", strides="1M", rounds=2, reps=1, warmup=0, warmup_rounds=0, seed=1)
    assert r.host["boot_id"] and len(r.host["boot_id"]) >= 32
    rounds = {}
    for s in r.records:
        assert s["canary_compute_ns"] > 0 and s["canary_chase_ns"] > 0
        assert s["preempted"] >= 0 and isinstance(s["disturbed"], bool)
        rounds.setdefault(s["round"], set()).add((s["canary_compute_ns"], s["canary_chase_ns"]))
    assert all(len(v) == 1 for v in rounds.values())  # one canary per round, shared by its passes
