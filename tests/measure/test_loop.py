"""The one pass loop (csrc/atsd_loop.c through measure/core/loop.py): its records from a small real
region, the order of its hooks, a hook that stops it, a failure part-way, and what run makes of a
record.  atsd runs the same loop (csrc/atsd_pass.c); tests/cli/test_atsd.py holds its lines end to end."""
import ctypes
import errno
import os

import numpy as np
import pytest

from atsdbench.measure import core, plan as plans

pytestmark = pytest.mark.live  # each test makes passes


def _plan(**options):
    kw = dict(size="4M", strides="64K,1M", rounds=1, reps=2, warmup=1, trace="off", seed=3)
    kw.update(options)
    p = plans.make_plan(**kw)
    return p, p.to_c()


def _punch(region, offset, length):
    """A hole in the region: the next pass's call there fails with ENOMEM."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    assert libc.munmap(region.address + offset, length) == 0


def test_records_of_a_small_real_region():
    p, c = _plan(latency=True)
    seen = []

    def after(rec):  # every call's latency is there while the hook runs, sorted by the percentiles
        lat = np.frombuffer(core.ffi.buffer(rec.call_ns, 8 * rec.calls), dtype=np.uint64)
        seen.append((len(lat), int(lat.max()), bool((np.diff(lat.astype(np.int64)) >= 0).all())))

    with core.Region(p.size, p.align, "base") as region:
        passes = core.cell_passes(c, 0, 0, False, 5, region, after=after)
    recs = passes.records
    assert not passes.stopped and len(recs) == 3 * 2
    # the round's stride order, repetition-major, the warm-up repetition first
    assert [r.stride_bytes for r in recs] == core.round_order(c, 0)
    assert [(r.rep, r.warmup, r.order) for r in recs] == [(i // 2, int(i < 2), 5 + i) for i in range(6)]
    for r, (n, top, ordered) in zip(recs, seen):
        assert r.kind == core.lib.ATSD_RECORD_SAMPLE and r.err == 0 and r.workload == -1
        assert r.calls == p.size // r.stride_bytes == n and r.ns > 0 and r.threads == 1
        assert r.self.cpu_ns > 0 and r.self.preempted >= 0 and r.device_touch_ns == -1
        assert r.latency and list(r.lat_ns) == sorted(r.lat_ns) and r.lat_ns[3] == top and ordered
        assert r.call_ns == core.ffi.NULL and r.times == core.ffi.NULL  # gone with the loop's buffers


def test_a_warm_up_round_makes_every_pass_a_warm_up():
    p, c = _plan()
    with core.Region(p.size, p.align, "base") as region:
        recs = core.cell_passes(c, 0, 1, True, 0, region).records
    assert all(r.warmup for r in recs) and [r.round for r in recs] == [1] * 6
    assert [r.stride_bytes for r in recs] == core.round_order(c, 1)


def test_hooks_come_in_order_around_each_pass_and_before_can_mark_it_traced():
    p, c = _plan()
    events = []

    def before(rec):
        events.append(("before", rec.order, rec.ns))
        rec.traced = rec.rep == 0
        return False

    def after(rec):
        events.append(("after", rec.order, rec.ns))

    with core.Region(p.size, p.align, "base") as region:
        recs = core.cell_passes(c, 0, 0, False, 0, region, before=before, after=after).records
    assert [(e[0], e[1]) for e in events] == [(k, i) for i in range(6) for k in ("before", "after")]
    assert all(e[2] == 0 for e in events if e[0] == "before") and all(e[2] > 0 for e in events if e[0] == "after")
    assert [r.traced for r in recs] == [1, 1, 0, 0, 0, 0]


@pytest.mark.parametrize("where", ["after", "before"])
def test_a_hook_that_stops_the_loop_keeps_the_finished_records(where):
    p, c = _plan()
    calls = []

    def hook(rec):
        calls.append(rec.order)
        return len(calls) == 3

    with core.Region(p.size, p.align, "base") as region:
        passes = core.cell_passes(c, 0, 0, False, 0, region, **{where: hook})
        assert passes.stopped
        # after: the third pass is the last, and finished; before: the third is never run
        assert len(passes.records) == {"after": 3, "before": 2}[where] and calls == [0, 1, 2]
        region.restore()  # the region is as a stopped loop left it: restorable, measurable
        assert region.timed_pass(1 << 20)[0] > 0


def test_what_a_hook_raises_comes_out_after_the_loop():
    p, c = _plan()
    seen = []

    def after(rec):
        seen.append(rec.order)
        if len(seen) == 2:
            raise KeyboardInterrupt  # a Ctrl-C where no handler held it: never lost in C

    with core.Region(p.size, p.align, "base") as region:
        with pytest.raises(KeyboardInterrupt):
            core.cell_passes(c, 0, 0, False, 0, region, after=after)
    assert seen == [0, 1]


def test_a_failure_part_way_is_raised_in_the_call_s_words_after_the_hooks_saw_it():
    p, c = _plan()
    seen = []

    def before(rec):
        if rec.order == 2:
            _punch(region, 1 << 20, 1 << 20)
        return False

    def after(rec):
        seen.append((rec.order, -rec.err, rec.stage, rec.done))

    region = core.Region(p.size, p.align, "base")
    try:
        with pytest.raises(OSError) as e:
            core.cell_passes(c, 0, 0, False, 0, region, before=before, after=after)
    finally:
        region.close()
    stride = core.round_order(c, 0)[2]
    assert e.value.errno == errno.ENOMEM
    assert str(e.value.strerror).startswith(f"mprotect(PROT_NONE) failed at call {(1 << 20) // stride + 1} of "
                                            f"stride {stride}: ")
    # the failed pass is shown to after (to release what before took), its calls before the hole done
    assert seen == [(0, 0, 0, 0), (1, 0, 0, 0), (2, errno.ENOMEM, core.lib.ATSD_STAGE_PASS, (1 << 20) // stride)]


def test_a_failed_restore_is_raised_as_the_restore_s():
    p, c = _plan(op="munmap")

    def after(rec):
        if rec.order == 1:  # the region gone under the loop: the next pass's remap has nothing to map
            core.lib.atsd_region_unmap(region._r)

    region = core.Region(p.size, p.align, "base")
    try:
        with pytest.raises(OSError) as e:
            core.cell_passes(c, 0, 0, False, 0, region, after=after)
    finally:
        region.close()
    assert e.value.strerror.startswith("mapping the region again: ")


def _cpus():
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: no second task")
    return cpus


def test_a_workload_cell_counts_every_task_s_loops():
    _cpus()
    p, c = _plan(workload="tlb_flush2", size="1M", threads=2, verify=False, strides=None)
    seen = []
    with core.Threads(p.thread_cpus[:2], False, 0, p.align, "base") as tasks:
        recs = core.cell_passes(c, 0, 0, False, 0, None, tasks,
                                after=lambda rec: seen.append([t.done for t in rec.times[0:rec.ntimes]])).records
    unit = (1 << 20) // core.page_size()
    assert len(recs) == 3 and all(r.workload == 1 and r.threads == 2 for r in recs)
    assert all(r.loops == r.calls == 2 * unit and r.ns > 0 for r in recs) and seen == [[unit, unit]] * 3


def test_the_verify_sibling_checks_a_pass_a_stride():
    _cpus()
    p, c = _plan(verify=True, op="madvise")
    with core.Region(p.size, p.align, "base") as region, core.Verifier(p.verify_cpus) as verifier:
        passes = core.cell_verify(c, 0, 2, True, region, verifier, "madvise", [p.cpu])
    recs = passes.records
    assert [r.stride_bytes for r in recs] == p.strides and all(r.kind == core.lib.ATSD_RECORD_VERIFY for r in recs)
    assert all(r.round == 2 and r.warmup == 1 and r.op == core.lib.ATSD_OP_MADVISE for r in recs)
    assert all(r.verify.stale == 0 and r.verify.calls == r.calls == p.size // r.stride_bytes for r in recs)


def test_run_keeps_the_loop_s_percentiles_and_every_call_in_the_histogram():
    from atsdbench.measure.session import latency_summary

    lat = np.array([1000, 2000, 3000, 4000, 100000], dtype=np.uint64)
    s = latency_summary(core.latency_percentiles(lat, (50, 90, 99, 100)), lat)
    # nearest rank: p90 and p99 of 5 calls are the slowest one (np.percentile would give 61.6 and 96.2)
    assert (s["lat_p50_us"], s["lat_p90_us"], s["lat_p99_us"], s["lat_max_us"]) == (3.0, 100.0, 100.0, 100.0)
    assert sum(s["lat_hist"].values()) == 5
