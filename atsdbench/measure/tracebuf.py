"""A private tracefs instance that records POWER's invalidation events during traced passes.

On POWER the kernel traces each TLB invalidation instruction (powerpc:tlbie, powerpc:tlbia) and, on a
pseries guest, each hypervisor call (powerpc:hcall_entry); tlb:tlb_flush exists there but never fires.
A perf counter with a kernel filter can count a field test (`local == 0`) but not "the same page
again", which is one of POWER9's errata workarounds: telling those apart needs the events in order.
So a traced pass enables the events in an instance of its own (instances/atsdbench-PID: its own
buffers, no effect on other tracers), and after the pass (outside the timed region) the buffers of
every CPU are read as text and counted by tlbie.pass_counts.  Buffers do not overwrite: when one
fills, events are dropped, counted in its stats, and the pass's counts are not kept.
"""
import os
import re

INSTANCE_PREFIX = "atsdbench-"
EVENT_BYTES = 80       # one tlbie event in the ring buffer (64 bytes of fields, header, time delta), rounded up
SMALL_KB = 256         # a CPU the run does not use: other processes' events only


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def lost_events(stats_text):
    """Events a CPU's buffer lost (per_cpu/cpuN/stats: 'overrun' when it overwrites, 'dropped events'
    when it does not)."""
    lost = 0
    for key in ("overrun", "dropped events"):
        m = re.search(rf"^{key}:\s*(\d+)", stats_text or "", re.MULTILINE)
        lost += int(m[1]) if m else 0
    return lost


def remove_stale(root):
    """Instances left by a run that was killed (their process is gone)."""
    try:
        names = os.listdir(os.path.join(root, "instances"))
    except OSError:
        return
    for name in names:
        pid = name[len(INSTANCE_PREFIX):]
        if name.startswith(INSTANCE_PREFIX) and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            try:
                os.rmdir(os.path.join(root, "instances", name))
            except OSError:
                pass


class TraceBuffer:
    """events: {"powerpc/tlbie": filter or None, ...}; sizes: {cpu: KB} for the CPUs the run uses
    (every other CPU gets SMALL_KB); clock: the instance's trace_clock (default: tracefs's).  Raises
    OSError where tracefs does not allow it."""

    def __init__(self, root, events, sizes, clock=None):
        remove_stale(root)
        self.path = os.path.join(root, "instances", f"{INSTANCE_PREFIX}{os.getpid()}")
        self.events = dict(events)
        self._create()
        try:
            _write(self._at("tracing_on"), "0")
            _write(self._at("options/overwrite"), "0")
            _write(self._at("buffer_size_kb"), str(SMALL_KB))
            if clock:
                _write(self._at("trace_clock"), clock)
            for cpu, kb in sizes.items():
                _write(self._at(f"per_cpu/cpu{cpu}/buffer_size_kb"), str(int(kb)))
            for event, flt in self.events.items():
                if flt:
                    _write(self._at(f"events/{event}/filter"), flt)
        except OSError:
            self.close()
            raise
        self.on = False

    def _create(self):
        os.mkdir(self.path)  # tracefs fills it: buffers, options, events

    def _at(self, name):
        return os.path.join(self.path, name)

    def _cpus(self):
        return sorted(int(n[3:]) for n in os.listdir(self._at("per_cpu")) if n[3:].isdigit())

    def start(self):
        _write(self._at("trace"), "")  # empties every CPU's buffer and its counts
        for event in self.events:
            _write(self._at(f"events/{event}/enable"), "1")
        _write(self._at("tracing_on"), "1")
        self.on = True

    def mark(self, text):
        """One line in the trace (trace_marker), stamped by the trace clock."""
        _write(self._at("trace_marker"), text + "\n")

    def stop(self):
        """Stops recording; returns (trace lines of every CPU, events lost)."""
        _write(self._at("tracing_on"), "0")
        for event in self.events:
            _write(self._at(f"events/{event}/enable"), "0")
        self.on = False
        lines, lost = [], 0
        for cpu in self._cpus():
            with open(self._at(f"per_cpu/cpu{cpu}/stats")) as f:
                stats = f.read()
            lost += lost_events(stats)
            m = re.search(r"^entries:\s*(\d+)", stats, re.MULTILINE)
            if m and m[1] != "0":
                with open(self._at(f"per_cpu/cpu{cpu}/trace")) as f:
                    lines.extend(line for line in f if not line.startswith("#"))
        return lines, lost

    def close(self):
        if self.path is None:
            return
        try:
            if getattr(self, "on", False):
                _write(self._at("tracing_on"), "0")
            for event in self.events:
                _write(self._at(f"events/{event}/enable"), "0")
        except OSError:
            pass
        try:
            os.rmdir(self.path)
        except OSError:
            pass
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
