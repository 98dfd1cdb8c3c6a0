"""Kernel counters read around each pass (never inside the timed region).

- /proc/interrupts 'TLB' row (x86): shootdown IPIs received, summed over CPUs -> column `ipis`.
- /proc/vmstat nr_tlb_* (CONFIG_DEBUG_TLBFLUSH) -> columns `tlb_remote_flush`, ... .
- the tlb:tlb_flush tracepoint through perf_event_open -> `flushes` (every reason but the
  sender-side 'remote IPI send' note), `full_flushes` (of those, pages == TLB_FLUSH_ALL) and one
  `flushes_<reason>` column per reason named in the tracepoint's format file.  Attaching a
  tracepoint slows every flush, so these are counted on warm-up passes only (see session).
A column that is absent was not measured; it is never 0 for unknown.
"""
import re

from .procfs import find_tracepoint, parse_interrupts, parse_vmstat_tlb, read, tracepoint_problem

TLB_FLUSH_ALL = (1 << 64) - 1  # 'pages' is an unsigned long; -1 means the whole mm


def reason_column(name):
    return "flushes_" + re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _allow_fds(needed):
    """One perf fd per CPU per counter: a big machine needs more than the usual 1024 soft limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        want = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass  # opening then fails, and the run says why it has no flush counts


class Counters:
    """Free counters on every pass; tracepoint counters only on passes read with traced=True.

    The perf events exist only between open_trace() and close_trace(): a registered tracepoint
    probe costs every flush a little, so none is attached while a timed pass runs.
    """

    def __init__(self, cpus, trace="auto"):
        self.cpus = list(cpus)
        self.has_ipis = parse_interrupts(read("/proc/interrupts")) is not None
        self.has_vmstat = bool(parse_vmstat_tlb(read("/proc/vmstat")))
        self.tracepoints = {}
        self.trace_scope = None
        self.trace_error = None
        self._tp = None
        if trace in ("auto", "on"):
            self._probe_tracepoints(trace == "on")

    def _probe_tracepoints(self, required):
        tp_id, reasons = find_tracepoint()
        if tp_id is None:
            self.trace_error = tracepoint_problem()
        else:
            # x86 also traces the sender of a shootdown ('remote IPI send'): a note, not a flush.
            sends = [code for code, name in reasons.items() if "send" in name.lower()]
            not_send = " && ".join(f"reason != {code}" for code in sends)
            filters = {"flushes": not_send or None,
                       "full_flushes": f"pages == {TLB_FLUSH_ALL}" + (f" && {not_send}" if not_send else "")}
            filters.update({reason_column(name): f"reason == {code}" for code, name in reasons.items()})
            self._tp = (tp_id, filters)
            _allow_fds(len(filters) * len(self.cpus) + 64)
            try:
                self.open_trace()
            except OSError as e:
                self._tp = None
                self.trace_error = f"perf_event_open on tlb:tlb_flush failed: {e.strerror}"
            finally:
                self.close_trace()
        if self.trace_error and required:
            from .errors import UsageError

            raise UsageError(f"--trace: {self.trace_error}")

    @property
    def can_trace(self):
        return self._tp is not None

    def open_trace(self):
        from . import core

        tp_id, filters = self._tp
        for column, flt in filters.items():
            counter = core.TracepointCounter(tp_id, self.cpus, flt)
            self.tracepoints[column] = counter
            self.trace_scope = "system" if counter.system_wide else "thread"

    def close_trace(self):
        for counter in self.tracepoints.values():
            counter.close()
        self.tracepoints = {}

    def read(self, traced=False):
        snap = {}
        if self.has_ipis:
            snap["ipis"] = parse_interrupts(read("/proc/interrupts"))
        if self.has_vmstat:
            snap.update(parse_vmstat_tlb(read("/proc/vmstat")))
        if traced:
            for column, counter in self.tracepoints.items():
                snap[column] = counter.read()
        return snap

    @staticmethod
    def delta(before, after):
        return {k: after[k] - before[k] for k in after
                if k in before and after[k] is not None and before[k] is not None}
