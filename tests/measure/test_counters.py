"""POWER's flush counters (counters.py, tracebuf.py): the trace instance, the columns of traced passes,
and what happens where POWER's tracepoint cannot be read.  The guest run is scripts/power-check's."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from atsdbench.measure import core, counters, tlbie, tracebuf


def fake_tracefs(root, events=("powerpc/tlbie", "powerpc/tlbia")):
    for e in events:
        os.makedirs(root / "events" / e)
        (root / "events" / e / "format").write_text(f"name: {e.split('/')[1]}\nID: 30\nformat:\n")
    os.makedirs(root / "instances")
    return str(root)


class SkeletonBuffer(tracebuf.TraceBuffer):
    """A TraceBuffer in a plain directory: the files tracefs would put in a new instance, and the text
    `lines` as CPU 0's buffer once recording stops."""

    lines = []
    lost = 0

    def _create(self):
        os.makedirs(os.path.join(self.path, "options"))
        for cpu in (0, 1):
            os.makedirs(os.path.join(self.path, "per_cpu", f"cpu{cpu}"))
        for e in self.events:
            os.makedirs(os.path.join(self.path, "events", e))

    def stop(self):
        with open(self._at("per_cpu/cpu0/trace"), "w") as f:
            f.write("# tracer: nop\n" + "".join(line + "\n" for line in self.lines))
        with open(self._at("per_cpu/cpu0/stats"), "w") as f:
            f.write(f"entries: {len(self.lines)}\noverrun: 0\ndropped events: {self.lost}\n")
        with open(self._at("per_cpu/cpu1/stats"), "w") as f:
            f.write("entries: 0\noverrun: 0\n")
        return super().stop()


@pytest.fixture
def power(tmp_path, monkeypatch, fixtures):
    root = fake_tracefs(tmp_path / "tracing")
    monkeypatch.setattr(counters, "tracefs_root", lambda: root)
    monkeypatch.setattr(counters, "find_tracepoint", lambda e="tlb/tlb_flush", r=None: core.find_tracepoint(e, root))
    monkeypatch.setattr(tracebuf, "TraceBuffer", SkeletonBuffer)
    SkeletonBuffer.lines = (fixtures / "power" / "radix-bystanders1.trace").read_text().splitlines()
    SkeletonBuffer.lost = 0
    return root


def traced_pass(c):
    c.open_trace()
    try:
        before = c.read(traced=True)
        after = c.read(traced=True)
    finally:
        c.close_trace()
    return c.delta(before, after)


def test_power_counts_tlbie_columns_and_no_flushes(power):
    c = counters.Counters([0, 1], "auto", size=64 << 20, page_size=64 << 10, cpu=0, bystander_cpus=[1])
    try:
        assert c.can_trace and c.trace_error is None and c.trace_scope == "system"
        assert c.trace_events == "powerpc:tlbie,powerpc:tlbia"
        d = traced_pass(c)
        assert not any("flush" in k for k in d)  # tlb:tlb_flush is never used on POWER
        assert {k: d[k] for k in tlbie.COLUMNS} == {"tlbie": 58, "tlbie_global": 58, "tlbie_full": 1,
                                                    "tlbie_fixup": 8, "tlbia": 0}
        assert not any(k in c.read(traced=False) for k in tlbie.COLUMNS)  # untraced: absent
        # the instance's buffers: the measuring CPU holds three events per page, the rest little
        sizes = [int(open(os.path.join(c._buffer.path, f"per_cpu/cpu{n}/buffer_size_kb")).read()) for n in (0, 1)]
        assert sizes == [tracebuf.sizes_kb(64 << 20, 64 << 10, 0, [1])[n] for n in (0, 1)]
        assert open(os.path.join(c._buffer.path, "options/overwrite")).read() == "0"
        assert open(os.path.join(c._buffer.path, "events/powerpc/tlbie/enable")).read() == "0"  # off again
    finally:
        c.close()
    assert c._buffer is None  # the real instance's removal: test_a_real_trace_instance_records_and_goes_away


def test_a_buffer_that_lost_events_gives_no_counts(power):
    SkeletonBuffer.lost = 3
    c = counters.Counters([0, 1], "auto", size=64 << 20, page_size=64 << 10)
    try:
        d = traced_pass(c)
    finally:
        c.close()
    assert not any(k in d for k in tlbie.COLUMNS) and c.trace_lost == 1


def test_hash_counts_the_hypervisor_calls(power, monkeypatch, fixtures):
    os.makedirs(os.path.join(power, "events", "powerpc", "hcall_entry"))
    with open(os.path.join(power, "events", "powerpc", "hcall_entry", "format"), "w") as f:
        f.write("name: hcall_entry\nID: 35\n")
    cpuinfo = (fixtures / "proc" / "cpuinfo-power9-hash").read_text()
    monkeypatch.setattr(counters, "read", lambda path, default=None: cpuinfo if path == "/proc/cpuinfo" else default)
    SkeletonBuffer.lines = (fixtures / "power" / "hash-bystanders1.trace").read_text().splitlines()
    c = counters.Counters([0, 1], "auto")
    try:
        flt = open(os.path.join(c._buffer.path, "events/powerpc/hcall_entry/filter")).read()
        d = traced_pass(c)
    finally:
        c.close()
    # only the calls that change the hash page table are recorded (an idle CPU's H_CEDE would flood it)
    assert flt == " || ".join(f"opcode == {op}" for op in sorted(tlbie.HCALL_COLUMNS)) and "opcode == 12" not in flt
    assert d["h_bulk_remove"] > 0 and d["h_remove"] == 1 and d["tlbie"] == 0
    assert "powerpc:hcall_entry" in c.trace_events


def test_power_without_tracefs_says_so_and_has_no_flushes(monkeypatch):
    monkeypatch.setattr(counters, "tracefs_root", lambda: None)
    monkeypatch.setattr(counters, "is_power", lambda machine=None: True)
    c = counters.Counters([0], "auto")
    assert not c.can_trace and c.trace_error == counters.tracepoint_problem("powerpc:tlbie") and not c.tracepoints
    from atsdbench.errors import UsageError

    with pytest.raises(UsageError, match=f"--trace: {re.escape(counters.tracepoint_problem('powerpc:tlbie'))}"):
        counters.Counters([0], "on")


def test_is_power():
    assert counters.is_power("ppc64le") and counters.is_power("ppc64") and not counters.is_power("x86_64")


def test_lost_events_and_buffer_sizes():
    assert core.trace_lost("entries: 5\noverrun: 2\ncommit overrun: 9\ndropped events: 3\n") == 5
    assert core.trace_lost("entries: 5\noverrun: 0\n") == 0
    sizes = tracebuf.sizes_kb(1 << 30, 64 << 10, 3, [5, 6])
    # 1G of 64K pages: 16384 calls of 3 events at most on CPU 3
    assert sizes[3] * 1024 >= 3 * 16384 * tracebuf.EVENT_BYTES and sizes[5] == sizes[6] < sizes[3]
    assert tracebuf.sizes_kb(1 << 20, 4096, 0, [])[0] == max(tracebuf.SMALL_KB, (3 * 256 + 4096) * 80 // 1024)


def test_stale_instances_of_dead_runs_are_removed(tmp_path):
    inst = tmp_path / "instances"
    for name in ("atsdbench-999999999", f"atsdbench-{os.getpid()}", "someone-else"):
        os.makedirs(inst / name)
    core.remove_stale_instances(str(tmp_path))
    assert sorted(os.listdir(inst)) == sorted([f"atsdbench-{os.getpid()}", "someone-else"])


REAL = """
import ctypes, mmap, os, sys
sys.path.insert(0, sys.argv[1])
from atsdbench.measure import tracebuf
root = "/sys/kernel/tracing"
b = tracebuf.TraceBuffer(root, {"tlb/tlb_flush": None}, {0: 1024})
try:
    os.sched_setaffinity(0, {0})
    b.start()
    m = mmap.mmap(-1, 1 << 20)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    for i in range(0, 1 << 20, 4096):
        m[i] = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    libc.mprotect(addr, 1 << 20, 0)
    lines, lost = b.stop()
    print(len([x for x in lines if "tlb_flush:" in x]), lost, os.path.isdir(b.path))
finally:
    path = b.path
    b.close()
print(os.path.exists(path))
"""


@pytest.mark.live  # mprotect under a real trace instance
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare")
def test_a_real_trace_instance_records_and_goes_away(in_tracefs):
    # a real tracefs, mounted in a mount namespace of its own (this machine's stays as it is); x86's
    # tlb:tlb_flush stands in for POWER's events: the instance works the same way
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run(["unshare", "-m", "sh", "-c", in_tracefs +
                        '[ -d /sys/kernel/tracing/events/tlb/tlb_flush ] && exec "$0" -c "$1" "$2"',
                        sys.executable, REAL, here], capture_output=True, text=True)
    if p.returncode and not p.stdout:
        pytest.skip(f"no tracefs with tlb:tlb_flush here: {p.stderr.strip()[-200:]}")
    first, second = p.stdout.split("\n")[:2]
    flushes, lost, existed = first.split()
    assert int(flushes) > 0 and lost == "0" and existed == "True"
    assert second == "False"  # the instance is removed at close


def test_a_total_that_fell_over_a_pass_counted_nothing():
    # /proc/interrupts' TLB row sums the CPUs online: one gone offline mid-pass takes its column
    d = counters.Counters.delta({"ipis": 900, "flushes": 4, "tlb_remote_flush": None},
                                {"ipis": 897, "flushes": 9, "tlb_remote_flush": 3})
    assert d == {"ipis": None, "flushes": 5}
