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


def test_cdef_is_cut_from_the_header():
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_atsd", ROOT / "build_atsd.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    cdef = build.cdef_from_header((ROOT / "csrc" / "atsd.h").read_text())
    assert "int atsd_pass(" in cdef and "#include" not in cdef and "ATSD-CDEF" not in cdef


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


def test_region_is_aligned_and_unmapped():
    region = core.Region(4 << 20, 4 << 20)
    addr = int(core.ffi.cast("uintptr_t", region._r.addr))
    assert addr % (4 << 20) == 0
    region.close()
    with open("/proc/self/maps") as f:
        starts = [int(line.split("-")[0], 16) for line in f]
    assert addr not in starts


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


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=300), st.integers(1, 100))
def test_latency_percentiles_are_numpys_inverted_cdf(lat, q):
    """The definition, checked against an independent one: numpy's inverted_cdf is the nearest rank."""
    import numpy as np

    want = np.percentile(np.array(lat, dtype=np.uint64), q, method="inverted_cdf")
    assert core.latency_percentiles(lat, (q,)) == [int(want)]


def test_session_stores_the_core_percentiles():
    import numpy as np

    from atsdbench.measure.session import latency_summary

    lat = np.array([1000, 2000, 3000, 4000, 100000], dtype=np.uint64)
    s = latency_summary(lat)
    # nearest rank: p90 and p99 of 5 calls are the slowest one (np.percentile would give 61.6 and 96.2)
    assert (s["lat_p50_us"], s["lat_p90_us"], s["lat_p99_us"], s["lat_max_us"]) == (3.0, 100.0, 100.0, 100.0)


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


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.integers(1, 50), st.floats(0, 1e4), st.integers(1, 50), st.floats(0, 1e4))
def test_least_sleep_is_the_schedule_with_passes_taking_no_time(runs, gap, rounds, spread):
    """atsd_least_sleep against the two rules it is made of, stepped through here."""
    start = end = 0.0
    for i in range(runs):
        start = core.sub_run_start(None if i == 0 else start, gap, end)
        end = core.round_start(start, rounds - 1, spread, rounds)
    assert core.least_sleep(runs, gap, rounds, spread) == pytest.approx(end)
    paced = spread * (rounds - 1) / rounds
    assert core.least_sleep(runs, gap, rounds, spread) == pytest.approx((runs - 1) * max(gap, paced) + paced)
