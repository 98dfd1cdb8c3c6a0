"""The cffi layer: ABI, errno -> OSError, and the header/cdef contract."""
import errno
import pathlib
import re

import pytest
from hypothesis import given, settings, strategies as st

from atsdbench.measure import core

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_abi_version_matches_header():
    """The ABI the Python side expects is the header's, and the compiled module is built from it."""
    header = (ROOT / "csrc" / "atsd.h").read_text()
    assert core.ABI_VERSION == int(re.search(r"#define ATSD_ABI_VERSION (\d+)", header).group(1))
    assert core.abi_version() == core.ABI_VERSION


def test_cdef_is_cut_from_the_headers():
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_atsd", ROOT / "build_atsd.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    cdef = build.cdef(ROOT / "csrc")
    assert "struct atsd_pass_record {" in cdef and "struct atsd_breakdown_probe {" in cdef
    assert "#include" not in cdef and "ATSD-CDEF" not in cdef
    assert '#include "atsd_trace.h"' in (ROOT / "csrc" / "atsd.h").read_text()  # C sees what cffi sees


def test_page_size_is_the_systems():
    import os

    assert core.page_size() == os.sysconf("SC_PAGE_SIZE")


def test_bad_config_is_einval():
    r = core.ffi.new("struct atsd_region *")
    assert core.lib.atsd_region_map(r, 12345, 4096, 0) == -errno.EINVAL   # size not page-aligned
    assert core.lib.atsd_region_map(r, 1 << 20, 3000, 0) == -errno.EINVAL  # align not a power of two
    assert core.lib.atsd_region_map(r, 1 << 20, 4096, 9) == -errno.EINVAL  # unknown backing
    assert r.addr == core.ffi.NULL


def test_bad_stride_raises_oserror():
    with core.Region(1 << 20, 1 << 20) as region:
        with pytest.raises(OSError) as info:
            region.timed_pass(3 << 12)  # 1M is not a multiple of 12K
        assert info.value.errno == errno.EINVAL


@pytest.mark.live
def test_pass_counts_and_latency():
    with core.Region(4 << 20, 2 << 20) as region:
        ns, lat = region.timed_pass(64 << 10, latency=True)
        assert ns > 0 and len(lat) == 64 and (lat > 0).all()
        assert lat.sum() <= ns
        region.restore(retouch=True)
        ns2, none = region.timed_pass(1 << 20)
        assert ns2 > 0 and none is None


def test_op_names_are_the_c_core_s():
    from atsdbench.data.cells import OPS

    assert {core.op_name(k): core.op_call(k) for k in range(core.lib.ATSD_NOPS)} == OPS
    assert core.op_name(core.lib.ATSD_NOPS) is None and core.lib.atsd_op_parse(b"unmap") == -errno.EINVAL


def _resident(region):
    """Pages of the region present in memory (mincore), and whether it is mapped at all."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pages = region.size // core.page_size()
    vec = (ctypes.c_ubyte * pages)()
    rc = libc.mincore(ctypes.c_void_p(region.address), ctypes.c_size_t(region.size), vec)
    return (sum(v & 1 for v in vec), True) if rc == 0 else (0, ctypes.get_errno() != errno.ENOMEM)


@pytest.mark.live
@pytest.mark.parametrize("op", ["mprotect", "madvise", "munmap"])
def test_each_op_s_pass_does_its_call_and_restore_gives_the_next_pass_the_same_work(op):
    with core.Region(4 << 20, 2 << 20) as region:
        pages = region.size // core.page_size()
        assert _resident(region) == (pages, True)
        for _ in range(2):
            ns, lat = region.timed_pass(64 << 10, latency=True, op=op)
            assert ns > 0 and len(lat) == 64 and (lat > 0).all() and lat.sum() <= ns
            # madvise freed every page and kept the mapping; munmap left its PROT_NONE reservation
            # (mapped, nothing resident); mprotect changed the protection only
            assert _resident(region) == ({"mprotect": pages, "madvise": 0, "munmap": 0}[op], True)
            region.restore(retouch=True, op=op)
            assert _resident(region) == (pages, True)
        region.restore(retouch=False, op=op)
        ns, _ = region.timed_pass(1 << 20, op=op)
        assert ns > 0
        if op != "mprotect":
            region.restore(retouch=False, op=op)
            assert _resident(region)[0] == 0  # not re-populated: the next pass would find no pages


@pytest.mark.live
def test_a_munmap_pass_whose_hole_was_taken_fails_and_leaves_no_region():
    import mmap as _mmap
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    region = core.Region(1 << 20, 1 << 20)
    try:
        core.lib.atsd_op_pass(region._r, core.lib.ATSD_OP_MUNMAP, 1 << 20, core.ffi.new("uint64_t *"),
                              core.ffi.NULL, core.ffi.NULL)
        # the reservation holds the range: another mapping asked for there lands elsewhere
        p = libc.mmap(region.address, 1 << 20, 0, _mmap.MAP_PRIVATE | _mmap.MAP_ANONYMOUS | 0x100000, -1, 0)
        assert p in (None, ctypes.c_void_p(-1).value) or p != region.address
        region.restore(retouch=True, op="munmap")
        assert _resident(region)[0] == 256 * 4096 // core.page_size()
    finally:
        region.close()


@pytest.mark.live
@pytest.mark.parametrize("op", ["mprotect", "madvise", "munmap"])
def test_threads_start_on_a_barrier_and_each_does_its_own_part(op):
    import os

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: no second thread")
    core.pin_self(cpus[0])
    try:
        with core.Region(4 << 20, 2 << 20) as region, core.Threads(cpus[:2]) as threads:
            for retouch in (True, False):
                ns, times, lat = threads.pass_(region, 64 << 10, latency=True, op=op)
                raw = threads._times
                # no thread's loop began before the last one came to the barrier
                assert min(t.t0 for t in raw) >= max(t.arrived for t in raw)
                assert ns == max(d for d, _, _ in times) and [t.done for t in raw] == [32, 32]
                assert len(lat) == 64 and (lat > 0).all()
                assert _resident(region) == ({"mprotect": 1024, "madvise": 0, "munmap": 0}[op] * 4096
                                             // core.page_size(), True)
                region.restore(retouch=retouch, op=op)
            with pytest.raises(OSError):  # 4M is not 2 threads x whole 4M strides
                threads.pass_(region, 4 << 20, op=op)
    finally:
        os.sched_setaffinity(0, cpus)


@pytest.mark.live
def test_a_stride_whose_thread_parts_wrap_64_bits_is_refused():
    """size % (threads x stride) with 2 x 2^63: the product would wrap to 0, a division by zero."""
    import os

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: no second thread")
    core.pin_self(cpus[0])
    try:
        with core.Region(4 << 20, 2 << 20) as region, core.Threads(cpus[:2]) as threads:
            with pytest.raises(OSError) as info:
                threads.pass_(region, 1 << 63)
            assert info.value.errno == errno.EINVAL
    finally:
        os.sched_setaffinity(0, cpus)


@pytest.mark.live
@pytest.mark.parametrize("op", ["mprotect", "madvise", "munmap"])
def test_processes_each_do_their_own_region_s_part_and_restore_it(op):
    import os

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: no second task")
    core.pin_self(cpus[0])
    try:
        with core.Threads(cpus[:2], processes=True, size=4 << 20, align=2 << 20) as tasks, \
                core.Region(4 << 20, 2 << 20) as region:
            for _ in range(2):
                ns, times, lat = tasks.pass_(region, 64 << 10, latency=True, op=op)
                raw = tasks._times
                assert min(t.t0 for t in raw) >= max(t.arrived for t in raw)
                assert [t.done for t in raw] == [32, 32] and [t.err for t in raw] == [0, 0]
                assert len(lat) == 64 and (lat > 0).all()  # the other process's calls came back too
                region.restore(retouch=True, op=op)
                tasks.restore(retouch=True, op=op)
            with pytest.raises(OSError):  # a region of another size than the tasks were started for
                with core.Region(8 << 20, 2 << 20) as other:
                    tasks.pass_(other, 64 << 10, op=op)
    finally:
        os.sched_setaffinity(0, cpus)
    with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
        assert f.read().split() == []  # the helper process was reaped


@pytest.mark.live
def test_a_helper_process_killed_from_outside_fails_the_pass_instead_of_hanging_it():
    import os
    import signal

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: no second task")
    core.pin_self(cpus[0])
    try:
        with core.Threads(cpus[:2], processes=True, size=1 << 20, align=1 << 20) as tasks, \
                core.Region(1 << 20, 1 << 20) as region:
            with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
                (child,) = map(int, f.read().split())
            os.kill(child, signal.SIGKILL)
            with pytest.raises(OSError) as info:
                tasks.pass_(region, 64 << 10)
            assert info.value.errno == errno.ECHILD
    finally:
        os.sched_setaffinity(0, cpus)


def test_region_is_aligned_and_unmapped():
    region = core.Region(4 << 20, 4 << 20)
    addr = int(core.ffi.cast("uintptr_t", region._r.addr))
    assert addr % (4 << 20) == 0
    region.close()
    with open("/proc/self/maps") as f:
        starts = [int(line.split("-")[0], 16) for line in f]
    assert addr not in starts


def test_a_size_and_alignment_that_wrap_are_refused_before_mapping():
    """size + align past 2^64 would map a few pages and touch the whole size beyond them: refused by
    the check itself, whatever the kernel would say of what follows."""
    for pages in ("base", "thp"):
        with pytest.raises(OSError) as info:
            core.Region((1 << 64) - (2 << 20), 4 << 20, pages)
        assert info.value.errno == errno.EOVERFLOW, info.value


def test_bystanders_start_and_stop():
    import os

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: no bystander possible")
    b = core.Bystanders([cpus[1]])
    b.stop()
    assert len(b.spins) == 1 and b.spins[0] > 0


def test_bystander_on_a_missing_cpu_fails_cleanly():
    with pytest.raises(OSError):
        core.Bystanders([4000])


# --- the rules both front ends take from the core ---

def test_latency_percentiles_are_nearest_rank():
    lat = list(range(100, 0, -1))  # 1..100 ns, unsorted
    assert core.latency_percentiles(lat, (50, 90, 99, 100)) == [50, 90, 99, 100]
    # 10 calls: the p99 is the slowest (rank ceil(9.9) = 10), never a blend of the two slowest
    assert core.latency_percentiles([1, 2, 3, 4, 5, 6, 7, 8, 9, 1000], (50, 90, 99)) == [5, 9, 1000]
    assert core.latency_percentiles([7], (1, 50, 100)) == [7, 7, 7]
    with pytest.raises(OSError):
        core.latency_percentiles([1, 2], (0,))
    with pytest.raises(ValueError):
        core.latency_percentiles([], (50,))


def test_latency_percentiles_leave_the_callers_array_alone():
    import numpy as np

    lat = np.array([3, 1, 2], dtype=np.uint64)
    core.latency_percentiles(lat, (50,))
    assert lat.tolist() == [3, 1, 2]


def _nearest_rank(lat, q):
    """The definition, checked against an independent one: numpy's inverted_cdf is the nearest rank."""
    import numpy as np

    want = np.percentile(np.array(lat, dtype=np.uint64), q, method="inverted_cdf")
    assert core.latency_percentiles(lat, (q,)) == [int(want)]


LATENCIES = (st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=300), st.integers(1, 100))


# the quick set tries 20 lists, the whole suite (slow) 300: the same property at breadth
@settings(max_examples=20, derandomize=True, deadline=None)
@given(*LATENCIES)
def test_latency_percentiles_are_numpys_inverted_cdf(lat, q):
    _nearest_rank(lat, q)


@pytest.mark.slow
@settings(max_examples=300, derandomize=True, deadline=None)
@given(*LATENCIES)
def test_latency_percentiles_are_numpys_inverted_cdf_at_breadth(lat, q):
    _nearest_rank(lat, q)


def test_sub_run_start_is_a_gap_after_the_one_before_started():
    assert core.sub_run_start(None, 20.0, 7.0) == 7.0       # the first: at once
    assert core.sub_run_start(0.0, 20.0, 7.0) == 20.0       # a start at 0 is a start
    assert core.sub_run_start(100.0, 20.0, 105.0) == 120.0
    assert core.sub_run_start(100.0, 20.0, 150.0) == 150.0  # the one before ran long: now
    from atsdbench.measure import plan

    assert plan.next_sub_run_start(100.0, 20.0, 105.0) == 120.0


def test_round_start_spreads_the_measured_rounds():
    assert [core.round_start(10.0, r, 60.0, 4) for r in range(5)] == [10.0, 25.0, 40.0, 55.0, 70.0]
    assert core.round_start(10.0, 3, 0.0, 4) == 10.0  # no --spread: back to back


SCHEDULES = (st.integers(1, 50), st.floats(0, 1e4), st.integers(1, 50), st.floats(0, 1e4))


# the quick set tries 40 schedules, the whole suite (slow) 200: the same property at breadth
@settings(max_examples=40, derandomize=True, deadline=None)
@given(*SCHEDULES)
def test_least_sleep_is_the_schedule_with_passes_taking_no_time(runs, gap, rounds, spread):
    _least_sleep_stepped(runs, gap, rounds, spread)


@pytest.mark.slow
@settings(max_examples=200, derandomize=True, deadline=None)
@given(*SCHEDULES)
def test_least_sleep_is_the_schedule_with_passes_taking_no_time_at_breadth(runs, gap, rounds, spread):
    _least_sleep_stepped(runs, gap, rounds, spread)


def _least_sleep_stepped(runs, gap, rounds, spread):
    """atsd_least_sleep against the two rules it is made of, stepped through here."""
    start = end = 0.0
    for i in range(runs):
        start = core.sub_run_start(None if i == 0 else start, gap, end)
        end = core.round_start(start, rounds - 1, spread, rounds)
    assert core.least_sleep(runs, gap, rounds, spread) == pytest.approx(end)
    paced = spread * (rounds - 1) / rounds
    assert core.least_sleep(runs, gap, rounds, spread) == pytest.approx((runs - 1) * max(gap, paced) + paced)
