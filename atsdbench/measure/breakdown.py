"""`run --breakdown`: untimed passes traced in a private tracefs instance, cut into stages per call.

After the measured passes (so that no tracepoint is ever attached while a timed pass runs), one
pass per cell and stride over a fresh region of at most CALLS calls (the buffers must hold every
event of it) runs with the op's syscall enter/exit of the measuring thread, tlb:tlb_flush,
csd:csd_function_entry/exit, ipi:ipi_send_cpu/ipi_send_cpumask, and on POWER powerpc:tlbie and
powerpc:hcall_entry/exit enabled, in an instance of its own (instances/atsdbench-PID, tracebuf):
other tracers are not disturbed and the instance is removed whatever happens (its removal runs
with SIGINT/SIGTERM held).  Two trace_marker lines carry CLOCK_MONOTONIC ns (the trace clock's tick).
"""
import os
import threading

from ..analysis import breakdown as arithmetic
from ..errors import UsageError

# The events, their filters, the clock, the pass's region and the buffers are csrc/atsd_instance.c's,
# which `atsd --breakdown` uses too: a trace means the same whichever front end took it.


def syscall_events(op):
    return f"syscalls/sys_enter_{op}", f"syscalls/sys_exit_{op}"


def lockdown_state(text=None):
    """The kernel's lockdown mode ([integrity]) from securityfs, or None."""
    import re

    if text is None:
        try:
            with open("/sys/kernel/security/lockdown") as f:
                text = f.read()
        except OSError:
            return None
    m = re.search(r"\[(\w+)\]", text)
    return m[1] if m else None


class Probe:
    """What a breakdown can record here, checked before anything is measured: `events` to enable
    ({event: (filter or None, family)}), `have` (analysis' families), `missing` (optional events this
    kernel lacks), `clock`.  Raises UsageError (exit 2) where the breakdown cannot run at all."""

    def __init__(self, ops, root=None, euid=None):
        from .core import breakdown_probe, tracefs_root, tracepoint_problem

        euid = os.geteuid() if euid is None else euid
        self.root = root if root is not None else tracefs_root()
        first = syscall_events(ops[0])[0].replace("/", ":")
        if euid != 0 or self.root is None:
            raise UsageError(f"--breakdown: {tracepoint_problem(first, euid)}")
        found = breakdown_probe(self.root, ops)
        if "absent" in found:
            raise UsageError(f"--breakdown: {tracepoint_problem(found['absent'], euid, 1)}")
        self.events, self.have, self.missing = found["events"], found["have"], found["missing"]
        self.clock = found["clock"]
        self._try_instance()

    def _try_instance(self):
        """An instance made and removed now: lockdown or a read-only tracefs says no here, not
        after the measured passes."""
        from . import tracebuf
        from .core import instance_problem

        try:
            tracebuf.TraceBuffer(self.root, {}, {}, self.clock).close()
        except OSError as e:
            raise UsageError(f"--breakdown: {instance_problem(self.root, e.errno, lockdown_state())}")

def region_bytes(plan, stride):
    """A breakdown pass's region: the plan's layout, at most CALLS calls of the stride (csrc's rule)."""
    from .core import breakdown_region

    return breakdown_region(plan.size, plan.align, stride)


def run(plan, probe, measured=None, keep=None, into=None):
    """The breakdown passes of the plan: {"clock", "events", "passes": [per cell and stride], "complete"}
    (into: the dict to fill, so that an error part-way leaves the passes done in the caller's hands).
    A signal (held, see signals) stops it between passes, left pending for the caller: the passes
    done are kept, complete false.  keep: a dict that gets each pass's trace lines (fixtures)."""
    import dataclasses

    from .. import signals
    from . import core, tracebuf
    from .session import Session

    tid = threading.get_native_id()
    out = into if into is not None else {}
    out.update({"clock": probe.clock, "events": sorted(e.replace("/", ":") for e in probe.events),
                "missing": list(probe.missing), "calls_max": core.BREAKDOWN_CALLS, "passes": [], "complete": False})
    quiet = dataclasses.replace(plan, trace="off")  # no flush counters: this module traces
    cells = [(i, c) for i, c in enumerate(plan.cells) if c["threads"] == 1]
    calls = max(region_bytes(plan, s) // s for s in plan.strides)
    sizes = core.breakdown_sizes(calls, plan.cpu, plan.bystander_cpus)
    mine = core.breakdown_thread_filter(tid)
    events = {e: ((mine, family) if family == "syscall" else (flt, family))
              for e, (flt, family) in probe.events.items()}
    have, device_probes = set(probe.have), False
    buffer = None
    try:
        if any(c.get("device", "none") != "none" for _, c in cells):  # the device stage, where kprobes can be made
            try:
                with signals.held():  # made and owned at once
                    events.update(core.breakdown_device(probe.root))
                    device_probes = True
                have.add("device")
                out["events"] = sorted(e.replace("/", ":") for e in events)
            except OSError:
                out["missing"].append("kprobe:test_hmm:dmirror_interval_invalidate")
        with Session(quiet) as session:
            buffer = tracebuf.TraceBuffer(probe.root, events, sizes, probe.clock)
            for index, cell in cells:
                session._enter_cell(cell)
                for stride in plan.strides:
                    if signals.pending():
                        return out
                    size = region_bytes(plan, stride)
                    # on the run's --mem-node: untraced_us, which it is set against, was timed there
                    with core.Region(size, plan.align, cell["pages"], plan.mem_node) as region, \
                            _device(cell) as device:
                        if device:  # an hmm cell's pass: the device holds the region, as before a timed pass
                            device.touch(region)
                        buffer.start()
                        buffer.mark_time("t0")
                        region.timed_pass(stride, False, cell["op"])
                        buffer.mark_time("t1")
                        lines, lost = buffer.stop()
                    if keep is not None:
                        keep[(index, stride)] = lines
                    one = {"stride_bytes": stride, "region_bytes": size, "lost": lost}
                    if plan.axes:
                        one["cell"] = index
                    summary = None if lost else arithmetic.breakdown(lines, plan.cpu, tid, cell["op"], have)
                    if summary is not None:
                        one.update(summary)
                        if measured:
                            one["untraced_us"] = measured.get((index if plan.axes else None, stride))
                    out["passes"].append(one)
            out["complete"] = True
    finally:
        with signals.held():
            if buffer is not None:
                buffer.close()
            if device_probes:
                core.breakdown_device_remove(probe.root)
    return out


def _device(cell):
    """--device hmm's cells: the device, open for one breakdown pass; others: nothing."""
    import contextlib

    from . import core

    if cell.get("device", "none") == "none":
        return contextlib.nullcontext()
    device = core.Device()
    return contextlib.closing(device)


def untraced_us(result):
    """{(cell or None, stride): mean µs per call of the measured passes}: what tracing costs is the
    traced syscall time against it."""
    return arithmetic.untraced_us(result.records)
