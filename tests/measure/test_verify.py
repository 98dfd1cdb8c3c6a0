"""run --verify's checker (csrc/atsd_verify.c) through the core: every op's calls checked from the
other CPU are never stale here, and the test-only control (the flags raised, no system call) is
stale in every check, so the check can fail.  Live: each pass makes real calls on this machine."""
import os
import signal

import pytest

from atsdbench.measure import core
from atsdbench.render import verify

OPS = ("mprotect", "madvise", "munmap")


def _cpus():
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: nothing to check from")
    return cpus


@pytest.fixture
def pinned():
    cpus = _cpus()
    core.pin_self(cpus[0])
    yield cpus
    os.sched_setaffinity(0, cpus)


def _pass(region, verifier, op, stride=64 << 10, invalidators=None, control=False):
    core.lib.atsd_verify_control(verifier._v[0], int(control))
    region.restore(True, op)
    return verifier.pass_(region, stride, op, invalidators or [verifier.cpus[0]])


@pytest.mark.live
@pytest.mark.parametrize("op", OPS)
def test_no_stale_translation_on_this_machine(pinned, op):
    with core.Region(4 << 20, 2 << 20) as region, core.Verifier(pinned) as verifier:
        c = _pass(region, verifier, op)
    others = len(pinned) - 1
    assert c["calls"] == 64 and c["checks"] == 64 * others
    assert c["stale"] == 0, c
    # every check came out as the op must make it: a fault, or the zero page after DONTNEED
    assert (c["zeros"] if op == "madvise" else c["faults"]) == c["checks"], c
    assert 0 <= c["held"] <= c["checks"]


@pytest.mark.live
@pytest.mark.parametrize("op", OPS)
def test_the_control_is_stale_in_every_check(pinned, op):
    """The test double: no call, the flags raised as if it had returned: every check must read the
    value through its translation."""
    with core.Region(4 << 20, 2 << 20) as region, core.Verifier(pinned) as verifier:
        c = _pass(region, verifier, op, control=True)
        after = _pass(region, verifier, op)  # and the same verifier checks clean again
    assert c["checks"] == 64 * (len(pinned) - 1) and c["stale"] == c["checks"], c
    assert c["faults"] == c["zeros"] == 0
    assert after["stale"] == 0 and after["checks"] == c["checks"]


@pytest.mark.live
@pytest.mark.parametrize("op", OPS)
def test_threads_each_part_checked_from_the_other_cpus(pinned, op):
    """--threads N: part i invalidated from its task's CPU, checked from every other one."""
    with core.Region(4 << 20, 2 << 20) as region, core.Verifier(pinned) as verifier:
        c = _pass(region, verifier, op, invalidators=pinned[:2])
        bad = _pass(region, verifier, op, invalidators=pinned[:2], control=True)
    assert c["calls"] == 64 and c["checks"] == 64 * (len(pinned) - 1) and c["stale"] == 0, c
    assert bad["stale"] == bad["checks"] == c["checks"]
    assert os.sched_getaffinity(0) == {pinned[0]}  # the caller's pinning put back after its turns


@pytest.mark.live
def test_a_munmap_pass_leaves_the_region_reserved_and_restorable(pinned):
    with core.Region(4 << 20, 2 << 20) as region, core.Verifier(pinned) as verifier:
        _pass(region, verifier, "munmap")
        region.restore(True, "munmap")  # mapped again over its own reservation
        ns, _ = region.timed_pass(64 << 10, op="mprotect")
    assert ns > 0


def test_one_verifier_at_a_time_and_at_least_two_cpus(pinned):
    slot = core.ffi.new("struct atsd_verifier **")
    assert core.lib.atsd_verify_start(slot, core.ffi.new("int32_t[]", [pinned[0]]), 1) == -22  # EINVAL
    with core.Verifier(pinned):
        with pytest.raises(OSError, match="starting checkers"):
            core.Verifier(pinned)


def test_the_fault_handler_found_is_put_back(pinned):
    before = signal.getsignal(signal.SIGSEGV)
    import faulthandler

    enabled = faulthandler.is_enabled()
    with core.Verifier(pinned):
        pass
    assert signal.getsignal(signal.SIGSEGV) == before and faulthandler.is_enabled() == enabled


@pytest.mark.live
def test_a_stride_whose_parts_wrap_64_bits_is_refused(pinned):
    """size % (parts x stride) with 2 x 2^63: the product wrapped to 0 and the core died of SIGFPE."""
    import errno

    with core.Region(4 << 20, 2 << 20) as region, core.Verifier(pinned) as verifier:
        with pytest.raises(OSError) as info:
            verifier.pass_(region, 1 << 63, "mprotect", [pinned[0], pinned[1]])
        assert info.value.errno == errno.EINVAL
        assert _pass(region, verifier, "mprotect")["stale"] == 0  # and the verifier goes on


def test_stop_twice_stops_nothing(pinned):
    v = core.Verifier(pinned)
    v.stop()
    v.stop()
    with pytest.raises(OSError, match="stopped"):
        v.pass_(None, 65536)


@pytest.mark.parametrize("args", [
    (3, 16384, "madvise", 65536, [1], [0]),
    (16384, 16384, "munmap", 2 << 20, [0, 1], [0, 1, 2, 3]),
    (1, 7, "mprotect", 4096, [5], [0, 1, 2, 3, 4, 6, 7]),
    # a big machine's lists, past any fixed cut: printed whole by both
    (2, 9, "mprotect", 4096, list(range(0, 1024, 2)), list(range(1, 1024, 2))),
])
def test_atsd_says_the_loud_line_as_atsdbench_does(args):
    """atsd's sentence (C) and atsdbench's (render/verify.py) are one wording: held equal here."""
    from atsdbench.units import format_size

    stale, checks, op, stride, inv, chk = args
    assert core.stale_text(*args) == verify.stale_translation(stale, checks, op, format_size(stride), inv, chk)


def test_the_checkers_are_every_cpu_but_a_lone_invalidator():
    # one rule for run's records and atsd's lines (csrc/atsd_verify.c); pure: no pass is made
    assert core.verify_checkers([0, 1, 2, 3], [2]) == [0, 1, 3]
    assert core.verify_checkers([0, 1, 2, 3], [0, 1]) == [0, 1, 2, 3]
    assert core.verify_checkers([1], [1]) == []
    assert core.verify_checkers([], [0]) == []
