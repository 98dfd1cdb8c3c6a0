"""Kernel counters read around each pass (never inside the timed region): the /proc/interrupts TLB row
(`ipis`), /proc/vmstat's nr_tlb_* (CONFIG_DEBUG_TLBFLUSH), the tlb:tlb_flush tracepoint through
perf_event_open (`flushes`, `full_flushes`, `flushes_<reason>`), and on POWER, where tlb:tlb_flush
never fires, the tlbie instructions and hash-MMU hypervisor calls in a private trace buffer
(tracebuf, tlbie).  Tracepoints slow every flush, so they are counted on warm-up passes only.  A column
that is absent was not measured; it is never 0 for unknown.  The columns: docs/counters.md."""
import re

# Which tracepoints, their columns and filters, and why one cannot be read: csrc/atsd_trace.c's, which the
# standalone atsd uses too, so a result file's columns do not depend on which of the two wrote it.
from .core import find_tracepoint, hcall_filter, tlb_flush_columns, tracefs_root, tracepoint_problem
from .procfs import parse_interrupts, parse_vmstat_tlb, read

POWER_EVENTS = ("powerpc/tlbie", "powerpc/tlbia")


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

    def __init__(self, cpus, trace="auto", size=None, page_size=None, cpu=0, bystander_cpus=(), device=False):
        self.cpus = list(cpus)
        self.has_ipis = parse_interrupts(read("/proc/interrupts")) is not None
        self.has_vmstat = bool(parse_vmstat_tlb(read("/proc/vmstat")))
        self.tracepoints = {}
        self.trace_scope = None
        self.trace_error = None
        self.trace_events = None
        self.trace_lost = 0      # traced passes whose trace buffer lost events (no counts kept)
        self._tp = None
        self._power = None       # POWER: whether hypervisor calls are counted too (hash)
        self._buffer = None      # POWER: the trace instance, from here to close()
        self._armed = False
        self._kprobes = []       # --device hmm: (column, Kprobe), counted like the tracepoints
        self.device_count_error = None
        if trace not in ("auto", "on"):
            return
        root = tracefs_root()
        if root is not None and find_tracepoint("powerpc/tlbie", root)[0] is not None:
            self._probe_power(root, size, page_size, cpu, bystander_cpus)
        elif is_power():  # tlb:tlb_flush exists there but never fires: zeros would not be counts
            self.trace_error = tracepoint_problem("powerpc:tlbie")
        else:
            self._probe_tracepoints(root)
        if device:
            self._probe_device(root)
        if self.trace_error and trace == "on":
            from ..errors import UsageError

            raise UsageError(f"--trace: {self.trace_error}")

    def _probe_power(self, root, size, page_size, cpu, bystander_cpus):
        from . import tracebuf

        events = {e: None for e in POWER_EVENTS if find_tracepoint(e, root)[0] is not None}
        # pseries hash: the hypervisor changes the hash page table; only its page-table calls are kept
        # (an idle CPU's H_CEDE would fill the buffer)
        mmu = re.search(r"^MMU\s*:\s*(\S+)", read("/proc/cpuinfo") or "", re.MULTILINE)
        hcalls = bool(mmu and mmu[1] == "Hash" and find_tracepoint("powerpc/hcall_entry", root)[0] is not None)
        if hcalls:
            events["powerpc/hcall_entry"] = hcall_filter()
        try:
            self._buffer = tracebuf.TraceBuffer(
                root, events, tracebuf.sizes_kb(size or 1 << 30, page_size or 4096, cpu, bystander_cpus))
        except OSError as e:
            self.trace_error = (f"the powerpc:tlbie tracepoint is not usable: a trace instance in {root}/instances: "
                                f"{e.strerror}")
            return
        self._power = hcalls
        self.trace_scope = "system"
        self.trace_events = ",".join(e.replace("/", ":") for e in events)

    def _probe_tracepoints(self, root):
        # the tracefs found above, not a second look of its own: one run, one answer
        tp_id, reasons = find_tracepoint(root=root) if root is not None else (None, {})
        if tp_id is None:
            self.trace_error = tracepoint_problem()
        else:
            filters = tlb_flush_columns(tp_id, reasons)
            self._tp = (tp_id, filters)
            _allow_fds(len(filters) * len(self.cpus) + 64)
            try:
                self.open_trace()
            except OSError as e:
                self._tp = None
                self.trace_error = f"perf_event_open on tlb:tlb_flush failed: {e.strerror}"
            finally:
                self.close_trace()
            if self._tp:
                self.trace_events = "tlb:tlb_flush"

    def _probe_device(self, root):
        """--device hmm: the device path's kprobe events, made here and removed by close()."""
        from ..signals import held
        from . import core

        if root is None:
            self.device_count_error = tracepoint_problem("kprobes")
            return
        for column, symbol in core.device_kprobes():
            try:
                with held():  # made and owned at once: a signal between the two would leave it behind
                    self._kprobes.append((column, core.Kprobe(root, column, symbol)))
            except OSError as e:
                self.device_count_error = e.strerror
                self._close_kprobes()
                return
        events = ",".join(f"kprobe:{symbol}" for _, symbol in core.device_kprobes())
        self.trace_events = f"{self.trace_events},{events}" if self.trace_events else events

    def _close_kprobes(self):
        kprobes, self._kprobes = self._kprobes, []
        for _, k in kprobes:
            k.close()

    @property
    def can_trace(self):
        return self._tp is not None or self._power is not None or bool(self._kprobes)

    def open_trace(self):
        from . import core

        for column, k in self._kprobes:
            counter = core.TracepointCounter(k.id, self.cpus)
            self.tracepoints[column] = counter
            self.trace_scope = "system" if counter.system_wide else "thread"
        if self._power is not None:
            self._armed = True  # the next read starts recording
            return
        if self._tp is None:
            return
        tp_id, filters = self._tp
        for column, flt in filters.items():
            counter = core.TracepointCounter(tp_id, self.cpus, flt)
            self.tracepoints[column] = counter
            self.trace_scope = "system" if counter.system_wide else "thread"

    def close_trace(self):
        for counter in self.tracepoints.values():
            counter.close()
        self.tracepoints = {}
        if self._buffer is not None and self._buffer.on:
            self._buffer.stop()
        self._armed = False

    def close(self):
        self.close_trace()
        self._close_kprobes()
        if self._buffer is not None:
            self._buffer.close()
            self._buffer = None

    def read(self, traced=False):
        snap = {}
        if self.has_ipis:
            snap["ipis"] = parse_interrupts(read("/proc/interrupts"))
        if self.has_vmstat:
            snap.update(parse_vmstat_tlb(read("/proc/vmstat")))
        if traced:
            for column, counter in self.tracepoints.items():
                snap[column] = counter.read()
            if self._armed or (self._buffer is not None and self._buffer.on):
                snap.update(self._read_buffer())
        return snap

    def _read_buffer(self):
        """The first read of a traced pass starts recording (counts 0), the second stops it and counts
        what the pass did; a buffer that lost events gives no counts (absent, not a wrong number)."""
        from . import tlbie

        hcalls = self._power
        columns = list(tlbie.COLUMNS) + (list(tlbie.HCALL_COLUMNS.values()) if hcalls else [])
        if self._armed:
            self._armed = False
            self._buffer.start()
            return dict.fromkeys(columns, 0)
        lines, lost = self._buffer.stop()
        if lost:
            self.trace_lost += 1
            return dict.fromkeys(columns, None)
        return tlbie.pass_counts(lines, hcalls)

    @staticmethod
    def delta(before, after):
        """Each count's change over a pass; a total that fell (a CPU gone offline takes its
        /proc/interrupts column with it) counted nothing: None, as data/schema.py has it."""
        return {k: after[k] - before[k] if after[k] >= before[k] else None for k in after
                if k in before and after[k] is not None and before[k] is not None}


def is_power(machine=None):
    import platform

    return (machine or platform.machine()).startswith(("ppc64", "powerpc"))
