"""analysis/breakdown.py on traces captured on this project's VM (tests/fixtures/breakdown, x86, kernel
6.18, by measure/breakdown.run with keep=) and on POWER9 guests (tests/fixtures/power)."""
import json

import pytest

from atsdbench.analysis import breakdown as b


def _case(fixtures, name):
    meta = json.loads((fixtures / "breakdown" / "cases.json").read_text())[name]
    return (fixtures / "breakdown" / name).read_text().splitlines(keepends=True), meta


def _summary(fixtures, name):
    lines, meta = _case(fixtures, name)
    return b.breakdown(lines, meta["cpu"], meta["pid"], meta["syscall"], set(meta["have"])), meta


NAMES = [f"x86-mprotect-{k}k-bystanders{n}.trace" for k in (64, 1024, 4096) for n in (0, 1)]


@pytest.mark.parametrize("name", NAMES)
def test_stages_sum_to_the_syscall_time_of_every_call(fixtures, name):
    lines, meta = _case(fixtures, name)
    events, marks = b.parse(lines)
    tick = b.ns_per_tick(marks, b.seconds_clock(lines))
    calls = b.calls([e for e in events if marks["t0"][0] <= e.ts <= marks["t1"][0]], meta["cpu"], meta["pid"],
                    meta["syscall"])
    assert len(calls) == meta["region"] // meta["stride"]  # every call of the pass, once
    for c in calls:
        t = c["ticks"]
        assert all(t[s] >= 0 for s in b.STAGES)
        assert sum(t[s] for s in b.STAGES) == pytest.approx(t["syscall"], abs=1e-6)
    summary = b.summarize(calls, tick, set(meta["have"]))
    assert b.check_sum(summary)
    assert summary["calls"] == len(calls) and summary["syscall_us"] > 0


def test_a_breakdown_broken_on_purpose_fails_the_sum_check(fixtures):
    s, _ = _summary(fixtures, NAMES[1])
    s["local_flush_us"] += 1.0
    assert not b.check_sum(s)
    s["local_flush_us"] -= 1.0
    assert b.check_sum(s)
    s["page_table_us"], s["ipi_send_us"] = -0.5, s["ipi_send_us"] + s["page_table_us"] + 0.5
    assert not b.check_sum(s)  # a negative stage


def test_the_clock_is_read_from_the_markers(fixtures):
    lines, meta = _case(fixtures, NAMES[0])
    _, marks = b.parse(lines)
    assert meta["clock"] == "x86-tsc" and not b.seconds_clock(lines)
    tick = b.ns_per_tick(marks, False)
    assert 0.05 < tick < 10  # a TSC of 0.1-20 GHz: ticks, not ns or seconds
    assert b.ns_per_tick({}, False) is None and b.ns_per_tick({}, True) == 1e9


def test_64k_calls_flush_16_pages_each_and_1m_and_4m_flush_whole(fixtures):
    for n in (0, 1):
        small, _ = _summary(fixtures, f"x86-mprotect-64k-bystanders{n}.trace")
        assert small["pages"] == 16 and small["full_flushes"] == 0 and small["flushes"] == 1
        for k in (1024, 4096):
            big, _ = _summary(fixtures, f"x86-mprotect-{k}k-bystanders{n}.trace")
            assert big["full_flushes"] == 1 and big["pages"] == 0


def test_without_a_bystander_the_local_flush_is_untimed_and_nothing_is_remote(fixtures):
    # this capture's process never ran on another CPU: x86 flushes locally, calling flush_tlb_func
    # without the csd tracepoints, so that time stays in page tables and is counted as untimed
    s, _ = _summary(fixtures, "x86-mprotect-64k-bystanders0.trace")
    assert s["local_untimed"] == 1 and s["local_flush_us"] == 0
    assert s["ipis_wanted"] == 0 and s["ipis_sent"] == 0 and s["remote_flush_us"] == {}
    assert s["remote_wait_us"] == 0 and s["page_table_us"] == s["syscall_us"]


def test_with_a_bystander_remote_flushes_are_on_its_cpu_and_ipis_sent_at_most_wanted(fixtures):
    for k in (64, 1024, 4096):
        s, meta = _summary(fixtures, f"x86-mprotect-{k}k-bystanders1.trace")
        assert set(s["remote_flush_us"]) <= {str(c) for c in meta["bystander_cpus"]}
        assert s["ipis_sent"] <= s["ipis_wanted"]
    s, _ = _summary(fixtures, "x86-mprotect-64k-bystanders1.trace")
    assert s["remote_flush_us"] and s["remote_wait_us"] > 0 and s["ipis_wanted"] > 0
    s, _ = _summary(fixtures, "x86-mprotect-1024k-bystanders1.trace")
    assert s["ipis_wanted"] == 1 and s["local_flush_us"] > 0 and s["local_untimed"] == 0


def test_events_outside_the_markers_are_left_out(fixtures):
    lines, meta = _case(fixtures, "x86-mprotect-64k-bystanders1.trace")
    t0 = next(x for x in lines if "atsdbench t0" in x)
    head, stamp = t0.split(": tracing_mark_write")[0].rsplit(" ", 1)
    early = [f"{head} {int(stamp) - 900}: sys_mprotect(start: 0x1, len: 0x10000, prot: 0)\n",
             f"{head} {int(stamp) - 100}: sys_mprotect -> 0x0\n"]
    events, _ = b.parse(early)
    assert [e.kind for e in events] == ["enter", "exit"] and events[0].pid == meta["pid"]
    assert len(b.calls(events, meta["cpu"], meta["pid"], "mprotect")) == 1  # a call, were it inside
    s = b.breakdown(early + lines, meta["cpu"], meta["pid"], "mprotect", set(meta["have"]))
    assert s["calls"] == meta["region"] // meta["stride"]


def test_a_missing_event_is_absent_not_zero(fixtures):
    s, _ = _summary(fixtures, "x86-mprotect-64k-bystanders1.trace")
    lines, meta = _case(fixtures, "x86-mprotect-64k-bystanders1.trace")
    without = b.breakdown(lines, meta["cpu"], meta["pid"], "mprotect", {"tlb"})
    assert without["ipis_sent"] is None and without["remote_flush_us"] is None and without["local_untimed"] is None
    assert without["pages"] == s["pages"]


def test_lines_it_does_not_know_and_other_threads_are_ignored():
    lines = ["# tracer: nop\n", "garbage\n",
             "  x-5 [001] ..... 1.000000: sys_mprotect(start: 0x0, len: 0x10000, prot: 0)\n",
             "  y-6 [001] ..... 1.000001: sys_mprotect(start: 0x0, len: 0x10000, prot: 0)\n",
             "  x-5 [001] d..1. 1.000002: tlb_flush: pages:16 reason:local shootdown (2)\n",
             "  x-5 [001] ..... 1.000004: sys_mprotect -> 0x0\n",
             "  x-5 [001] ..... 1.000005: sys_madvise(start: 0x0, len: 0x10000, behavior: 4)\n"]
    s = b.breakdown(lines, 1, 5, "mprotect")
    assert s["calls"] == 1 and s["syscall_us"] == pytest.approx(4.0) and s["pages"] == 16
    assert s["local_untimed"] is None  # no csd events were in the trace: not known
    assert b.breakdown(lines, 0, 5, "mprotect") is None  # not that CPU: no call


def test_an_ipi_mask_counts_its_cpus():
    assert b._cpumask_count("00000003") == 2 and b._cpumask_count("ff,00000001") == 9
    assert b._cpumask_count("zz") == 0


@pytest.mark.parametrize("name,tlbie", [("radix-bystanders0", True), ("radix-bystanders1", True),
                                        ("hash-bystanders1", False)])
def test_power_guest_traces_give_tlbie_spans_and_hcalls(fixtures, name, tlbie):
    lines = (fixtures / "power" / f"{name}.trace").read_text().splitlines(keepends=True)
    events, marks = b.parse(lines)
    assert not marks and b.seconds_clock(lines)  # atsd's traces: a ns clock, no markers
    have = b.events_seen(events)
    assert ("tlbie" in have) == tlbie and ("hcall" in have) != tlbie
    calls = b.calls(events, events[0].cpu, events[0].pid, "mprotect")
    strides = b.by_stride(calls)
    assert sorted(strides) == [64 << 10, 1 << 20, 2 << 20, 4 << 20]
    for length, cs in strides.items():
        s = b.summarize(cs, 1e9, have)
        assert b.check_sum(s)
        if tlbie:
            assert s["tlbie"] >= 1 and s["hcalls"] is None
            if s["tlbie"] > 1:
                assert 0 < s["tlbie_us"] < s["syscall_us"]
        else:
            assert s["hcalls"] >= 1 and s["tlbie"] is None
    if name == "radix-bystanders1":  # with a bystander radix broadcasts: every tlbie global
        assert all(b.summarize(cs, 1e9, have)["tlbie_global"] == b.summarize(cs, 1e9, have)["tlbie"]
                   for cs in strides.values())


def test_hypervisor_calls_with_their_exit_are_the_local_flush():
    # a pseries hash guest with hcall_exit too (a synthetic trace: the fixtures' kernel traced entries only)
    lines = ["  atsd-9 [000] ..... 1.000000: sys_mprotect(start: 0x0, len: 0x100000, prot: 0)\n",
             "  atsd-9 [000] d.... 1.000010: hcall_entry: opcode=292\n",
             "  atsd-9 [000] d.... 1.000014: hcall_exit: opcode=292 retval=0\n",
             "  atsd-9 [000] d.... 1.000020: hcall_entry: opcode=292\n",
             "  atsd-9 [000] d.... 1.000021: hcall_exit: opcode=292 retval=0\n",
             "  atsd-9 [000] ..... 1.000030: sys_mprotect -> 0x0\n"]
    s = b.breakdown(lines, 0, 9, "mprotect")
    assert s["hcalls"] == 2 and s["local_flush_us"] == pytest.approx(5.0) and s["syscall_us"] == pytest.approx(30.0)
    assert s["page_table_us"] == pytest.approx(25.0) and b.check_sum(s)


def test_a_change_without_spread_on_either_side_gets_no_interval():
    """Two files a side that agree exactly (a count per call, a stage absent on both): no interval, not a
    zero-width one that claims the change is known exactly."""
    from atsdbench.analysis import breakdown as arithmetic

    assert arithmetic._interval([2.0, 2.0], [3.0, 3.0], 95.0) is None
    assert arithmetic._interval([0.0, 0.0], [0.0, 0.0], 95.0) is None
    low, high = arithmetic._interval([2.0, 2.2], [3.0, 3.0], 95.0)
    assert low < 1.0 < high
    assert arithmetic._interval([2.0], [3.0, 3.1], 95.0) is None
