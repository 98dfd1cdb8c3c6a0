"""A private tracefs instance that records POWER's invalidation events during traced passes.

On POWER the kernel traces each TLB invalidation instruction (powerpc:tlbie, powerpc:tlbia) and, on a
pseries guest, each hypervisor call (powerpc:hcall_entry); tlb:tlb_flush exists there but never fires.
A perf counter with a kernel filter can count a field test (`local == 0`) but not "the same page
again", which is one of POWER9's errata workarounds: telling those apart needs the events in order.
So a traced pass enables the events in an instance of its own (instances/atsdbench-PID: its own
buffers, no effect on other tracers), and after the pass (outside the timed region) the buffers of
every CPU are read as text and counted by tlbie.pass_counts (a buffer that dropped events: no counts).
"""
import os

from . import core

INSTANCE_PREFIX = "atsdbench-"  # csrc/atsd_instance.c's (atsd's instances too)
EVENT_BYTES = 80       # one tlbie event in the ring buffer (64 bytes of fields, header, time delta), rounded up
SMALL_KB = core.INSTANCE_SMALL_KB  # a CPU the run does not use: other processes' events only


class TraceBuffer:
    """events: {"powerpc/tlbie": filter or None, ...}; sizes: {cpu: KB} for the CPUs the run uses
    (every other CPU gets SMALL_KB); clock: the instance's trace_clock (default: tracefs's).  Raises
    OSError where tracefs does not allow it.  The instance is csrc/atsd_instance.c's (core.TraceInstance),
    the one atsd uses."""

    def __init__(self, root, events, sizes, clock=None):
        self.events = dict(events)
        self.on = False  # recording (counters.py stops a buffer left on)
        self._instance = core.TraceInstance(root)  # removes stale instances, then makes ours
        self.path = self._instance.path
        try:
            self._create()
            self._instance.setup(self.events, sizes, clock)
        except OSError:
            self.close()
            raise

    def _create(self):
        """What tracefs puts in a new instance (tracefs does it; a test's plain directory needs it)."""

    def _at(self, name):
        return os.path.join(self.path, name)

    def start(self):
        self._instance.start()
        self.on = True

    def mark(self, text):
        """One line in the trace (trace_marker), stamped by the trace clock."""
        self._instance.mark(text)

    def mark_time(self, name):
        """'atsdbench NAME NS', CLOCK_MONOTONIC ns (analysis/breakdown.py reads two of them)."""
        self._instance.mark_time(name)

    def stop(self):
        """Stops recording; returns (trace lines of every CPU, events lost)."""
        self.on = False
        lost = self._instance.stop()
        return self._instance.text().splitlines(keepends=True), lost

    def close(self):
        if self.path is None:
            return
        self._instance.close()
        self.path = None


def sizes_kb(size, page_size, cpu, bystander_cpus):
    """Buffer sizes for a pass over `size` bytes: the measuring CPU holds at most three events per
    page (the flush and two workarounds); a bystander's CPU only the kernel's occasional whole-PID
    flush of the process there (a tlbiel per TLB set, once every thousand or so flushes)."""
    events = 3 * max(1, size // max(1, page_size)) + 4096
    main = max(SMALL_KB, events * EVENT_BYTES // 1024)
    out = {b: max(SMALL_KB, main // 8) for b in bystander_cpus}
    out[cpu] = main
    return out
