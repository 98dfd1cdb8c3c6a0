"""A private tracefs instance (csrc/atsd_instance.c): run --breakdown's (atsd's too) and POWER's counts."""
import errno
import os

from . import ffi, lib, _check, _text
from ...signals import held


def hcall_filter():
    """powerpc:hcall_entry's filter: the hypervisor calls that change the hash page table only."""
    out = ffi.new("char[]", lib.ATSD_FILTER_MAX)
    return _text(lib.atsd_hcall_filter(out, lib.ATSD_FILTER_MAX))


def trace_lost(stats_text):
    """Events a CPU's buffer lost, from its per_cpu/cpuN/stats text."""
    return lib.atsd_trace_lost((stats_text or "").encode())


def remove_stale_instances(root):
    lib.atsd_instance_remove_stale(root.encode())


def instance_problem(root, err, lockdown=None):
    """Why no trace instance can be made in ROOT (err: an errno), with the way out."""
    out = ffi.new("char[]", 512)
    return _text(lib.atsd_instance_problem(root.encode(), -abs(err), lockdown.encode() if lockdown else ffi.NULL,
                                           out, 512))


def breakdown_probe(root, ops):
    """What run --breakdown records under ROOT for these ops (names): {"events": {event: (filter or
    None, family)}, "have", "missing" (optional events absent, as SUBSYSTEM:EVENT), "clock", "power"},
    or {"absent": the syscall event this kernel lacks}."""
    codes = ffi.new("int32_t[]", [lib.atsd_op_parse(op.encode()) for op in ops])
    p = ffi.new("struct atsd_breakdown_probe *")
    rc = lib.atsd_breakdown_probe(root.encode(), codes, len(ops), p)
    if rc == -errno.ENOENT:
        return {"absent": _text(p.absent)}
    _check(rc, "probing the breakdown's tracepoints")
    return {"events": {_text(e.event): (_text(e.filter) or None, _text(e.family)) for e in p.events[0:p.nevents]},
            "have": set(filter(None, _text(p.have).split(","))),
            "missing": list(filter(None, _text(p.missing).split(","))),
            "clock": _text(p.clock) or None, "power": bool(p.power)}


def breakdown_thread_filter(tid):
    """The syscall events' filter to the measuring thread (atsd_breakdown_thread's)."""
    p = ffi.new("struct atsd_breakdown_probe *")
    p.nevents = 1
    p.events[0].family = b"syscall"
    lib.atsd_breakdown_thread(p, tid)
    return _text(p.events[0].filter)


BREAKDOWN_CALLS = lib.ATSD_BREAKDOWN_CALLS


INSTANCE_SMALL_KB = lib.ATSD_INSTANCE_SMALL_KB  # an instance's buffer on a CPU the run does not use


def breakdown_region(size, align, stride):
    return lib.atsd_breakdown_region(size, align, stride)


def breakdown_sizes(calls, cpu, bystander_cpus):
    """{cpu: buffer KB} for breakdown passes of at most `calls` calls."""
    n = len(bystander_cpus) + 1
    cpus, kb = ffi.new("int32_t[]", n), ffi.new("uint64_t[]", n)
    got = lib.atsd_breakdown_sizes(calls, cpu, ffi.new("int32_t[]", list(bystander_cpus)), len(bystander_cpus),
                                   cpus, kb)
    return {cpus[i]: kb[i] for i in range(got)}


class TraceInstance:
    """ROOT/instances/atsdbench-PID, made at once; owned through one slot, removed by close() with
    signals held (a second close removes nothing)."""

    def __init__(self, root):
        self._t = ffi.new("struct atsd_instance **")
        rc = lib.atsd_instance_make(self._t, root.encode())
        if rc < 0:
            raise OSError(-rc, os.strerror(-rc), os.path.join(root, "instances"))
        self.path = _text(lib.atsd_instance_path(self._t[0]))

    def _live(self):
        if self._t[0] == ffi.NULL:
            raise OSError(errno.EBADF, "the trace instance is closed")
        return self._t[0]

    def setup(self, events, sizes, clock=None):
        """events: {"tlb/tlb_flush": filter or None} (or (filter, family)); sizes: {cpu: KB}."""
        evs = ffi.new("struct atsd_trace_event[]", max(1, len(events)))
        for e, (name, flt) in zip(evs, events.items()):
            flt, family = flt if isinstance(flt, tuple) else (flt, "")
            e.event, e.filter, e.family = name.encode(), (flt or "").encode(), (family or "").encode()
        cpus = ffi.new("int32_t[]", list(sizes) or [0])
        kb = ffi.new("uint64_t[]", [int(v) for v in sizes.values()] or [0])
        _check(lib.atsd_instance_setup(self._live(), evs, len(events), cpus, kb, len(sizes),
                                       clock.encode() if clock else ffi.NULL), f"setting up {self.path}")

    def start(self):
        _check(lib.atsd_instance_start(self._live()), f"starting {self.path}")

    def mark(self, text):
        _check(lib.atsd_instance_mark(self._live(), text.encode()), "trace_marker")

    def mark_time(self, name):
        """'atsdbench NAME NS' (CLOCK_MONOTONIC ns): two give the trace clock's tick."""
        _check(lib.atsd_instance_mark_time(self._live(), name.encode()), "trace_marker")

    def stop(self):
        """Recording off; the events every CPU's buffer lost."""
        lost = ffi.new("uint64_t *")
        _check(lib.atsd_instance_stop(self._live(), lost), f"stopping {self.path}")
        return lost[0]

    def text(self):
        """Every CPU's buffer that has entries, CPU by CPU, comment lines left out."""
        out = ffi.new("char **")
        n = lib.atsd_instance_text(self._live(), out)
        _check(n, f"reading {self.path}")
        try:
            return ffi.unpack(out[0], n).decode("utf-8", "replace")
        finally:
            lib.atsd_free(out[0])

    def close(self):
        with held():
            lib.atsd_instance_close(self._t)
