"""What disturbs the measuring thread, read just outside a pass (csrc/atsd_self.c)."""
from . import ffi, lib, _check


def self_state(cpu, after=False):
    """What disturbs the measuring thread so far, read just before a pass (after=False) or just after
    it (csrc/atsd.h, as atsd reads it); self_delta() of the two says what the pass met."""
    out = ffi.new("struct atsd_self_state *")
    _check(lib.atsd_self_state(cpu, int(after), out), "reading the thread's own usage")
    return out


def self_delta(before, after):
    """(involuntary context switches, thread CPU ns, steal ticks or None) between two self_state()s."""
    d = ffi.new("struct atsd_self_state *")
    lib.atsd_self_delta(before, after, d)
    return d.preempted, d.cpu_ns, (d.steal_ticks if d.steal_ticks >= 0 else None)


def steal_ticks(proc_stat, cpu):
    """The steal ticks of `cpu` in /proc/stat text (None where it has none)."""
    v = lib.atsd_steal_ticks(proc_stat.encode(), cpu)
    return v if v >= 0 else None
