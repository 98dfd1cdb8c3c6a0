"""measure/tracebuf.py over the C instance (csrc/atsd_instance.c, atsd's too) on a plain directory standing in
for tracefs: what setup writes, the marks, what stop reads back (CPU by CPU in number order, comment lines
and empty buffers left out, lost events summed), and a close that clears its slot once.  The real tracefs
is tests/measure/test_counters.py's and test_breakdown_probe.py's (live)."""
import os
import re

import pytest

from atsdbench.measure import core, tracebuf


class Plain(tracebuf.TraceBuffer):
    """What tracefs puts in a new instance, made by hand."""

    def _create(self):
        for d in ("options", "events/syscalls/sys_enter_mprotect", "events/tlb/tlb_flush"):
            os.makedirs(os.path.join(self.path, d))
        for cpu in (0, 1, 10, 2):
            os.makedirs(os.path.join(self.path, "per_cpu", f"cpu{cpu}"))


def _read(b, name):
    with open(b._at(name)) as f:
        return f.read()


def test_setup_start_marks_and_stop_as_tracefs_is_written_and_read(tmp_path):
    os.makedirs(tmp_path / "instances")
    b = Plain(str(tmp_path), {"syscalls/sys_enter_mprotect": ("common_pid == 7", "syscall"), "tlb/tlb_flush": None},
              {1: 2048, 10: 1024}, "x86-tsc")
    try:
        assert b.path == str(tmp_path / "instances" / f"atsdbench-{os.getpid()}")
        assert _read(b, "tracing_on") == "0" and _read(b, "options/overwrite") == "0"
        assert _read(b, "buffer_size_kb") == str(tracebuf.SMALL_KB) and _read(b, "trace_clock") == "x86-tsc"
        assert _read(b, "per_cpu/cpu1/buffer_size_kb") == "2048" and _read(b, "per_cpu/cpu10/buffer_size_kb") == "1024"
        assert _read(b, "events/syscalls/sys_enter_mprotect/filter") == "common_pid == 7"
        assert not os.path.exists(b._at("events/tlb/tlb_flush/filter"))  # no filter: none written
        b.start()
        assert _read(b, "tracing_on") == "1" and _read(b, "events/tlb/tlb_flush/enable") == "1"
        b.mark_time("t0")
        assert re.fullmatch(r"atsdbench t0 [0-9]+\n", _read(b, "trace_marker"))
        for cpu, entries, text, stats in ((0, 0, "", "overrun: 0\n"), (1, 2, "# tracer: nop\n#\n a\n b\n", "overrun: 1\n"),
                                          (2, 1, " c", "dropped events: 2\n"), (10, 1, " d\n", "commit overrun: 9\n")):
            with open(b._at(f"per_cpu/cpu{cpu}/stats"), "w") as f:
                f.write(f"entries: {entries}\n{stats}")
            with open(b._at(f"per_cpu/cpu{cpu}/trace"), "w") as f:
                f.write(text)
        lines, lost = b.stop()
        assert lines == [" a\n", " b\n", " c\n", " d\n"] and lost == 3  # 'commit overrun' is no lost event
        assert _read(b, "tracing_on") == "0" and _read(b, "events/tlb/tlb_flush/enable") == "0"
    finally:
        b.close()
    assert b.path is None
    b.close()  # a second close removes nothing


def test_a_closed_instance_is_refused_and_its_slot_is_clear(tmp_path):
    os.makedirs(tmp_path / "instances")
    t = core.TraceInstance(str(tmp_path))
    assert os.path.isdir(t.path)
    t.close()
    assert not os.path.exists(t.path)  # an empty directory: removed
    t.close()
    with pytest.raises(OSError, match="closed"):
        t.start()
