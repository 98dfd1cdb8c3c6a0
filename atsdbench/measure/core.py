"""The only importer of the compiled C core.  Turns -errno into OSError and owns every buffer."""
import errno
import os

from ..errors import CoreMissing, UsageError
from ..signals import held

# The ABI (csrc/atsd.h's ATSD_ABI_VERSION) this Python side is written against.  It cannot be read
# from the compiled module, which may be older than the sources it is imported with (a checkout
# pulled since its `pip install -e`); tests/measure/test_core.py holds it equal to the header.
ABI_VERSION = 27

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    from .._atsd import ffi, lib  # not `from .. import _atsd`, whose error names the package, not the module
except ImportError as e:  # absent; or there, but built for another Python, or cffi is missing
    raise CoreMissing.explain(_PACKAGE, None if e.name == "atsdbench._atsd" else e) from None

_found = getattr(lib, "atsd_abi_version", lambda: None)()
if _found != ABI_VERSION:
    raise CoreMissing.stale(_PACKAGE, "unknown" if _found is None else _found, ABI_VERSION)

PAGES = {"base": lib.ATSD_PAGES_BASE, "thp": lib.ATSD_PAGES_THP, "hugetlb": lib.ATSD_PAGES_HUGETLB}


def _strerror(rc):
    """A negative errno as the C core words it (atsd_strerror: ECHILD is a helper process that died)."""
    return ffi.string(lib.atsd_strerror(rc)).decode("utf-8", "replace")


def _check(rc, what):
    if rc < 0:
        raise OSError(-rc, f"{what}: {_strerror(rc)}")
    return rc


def abi_version():
    return lib.atsd_abi_version()


def page_size():
    return _check(lib.atsd_page_size(), "sysconf(_SC_PAGESIZE)")


def hugepage_size():
    """Default hugetlb page size in bytes, or None when the kernel has none."""
    rc = lib.atsd_hugepage_size()
    return rc if rc > 0 else None


# --- the plan (csrc/atsd_plan.c): parsed, checked and ordered in C for both front ends ---

def _text(ptr):
    return ffi.string(ptr).decode("utf-8", "replace") if ptr != ffi.NULL else None


def options():
    """The option table (csrc/atsd_options.h) as dicts, in declaration order."""
    out, o = [], ffi.new("struct atsd_option *")
    for i in range(lib.atsd_option_count()):
        lib.atsd_option_get(i, o)
        out.append({"name": _text(o.name), "short": chr(o.short_name) if o.short_name else None,
                    "run": bool(o.fronts & lib.ATSD_FRONT_RUN), "atsd": bool(o.fronts & lib.ATSD_FRONT_ATSD),
                    "field": _text(o.field), "metavar": _text(o.metavar), "const": _text(o.const_value),
                    "default": _text(o.default_value), "help": _text(o.help)})
    return out


def plan_new():
    p = ffi.new("struct atsd_plan *")
    lib.atsd_plan_init(p)
    return p


def _msg_call(fn, *args):
    msg = ffi.new("char[]", 512)
    rc = fn(*args, msg, 512)
    if rc < 0:
        raise UsageError(_text(msg) or os.strerror(-rc))


def plan_set(p, field, value):
    """Parse one option value (text) into the plan; UsageError with the C message."""
    _msg_call(lib.atsd_plan_set, p, field.encode(), str(value).encode("utf-8", "surrogateescape"))


def plan_check(p, host):
    _msg_call(lib.atsd_plan_check, p, host)


def host_probe():
    h = ffi.new("struct atsd_host *")
    _check(lib.atsd_host_probe(h), "reading the host's facts")
    return h


def round_order(p, round_index):
    """Stride of every pass of one round, in order (warm-up repetitions first)."""
    cap = (p.warmup + p.reps) * p.nstrides
    out = ffi.new("uint64_t[]", cap)
    n = _check(lib.atsd_round_order(p, round_index, out, cap), "ordering the round")
    return list(out[0:n])


def cells(p):
    """Every cell of the plan (the product of its axes) as (bystanders, pages, gpu, ceiling, op, threads) tuples."""
    c = ffi.new("struct atsd_cell *")
    out = []
    for i in range(lib.atsd_plan_cells(p)):
        _check(lib.atsd_plan_cell(p, i, c), "enumerating cells")
        out.append((c.bystanders, c.pages, c.gpu, c.ceiling, c.op, c.threads))
    return out


def cell_order(p, round_index):
    n = lib.atsd_plan_cells(p)
    out = ffi.new("int32_t[]", n)
    _check(lib.atsd_cell_order(p, round_index, out, n), "ordering the cells")
    return list(out)


def op_name(op):
    """"mprotect" for ATSD_OP_MPROTECT (csrc/atsd_ops.c)."""
    return _text(lib.atsd_op_name(op))


def workload_name(workload):
    """"tlb_flush2" for ATSD_WORKLOAD_TLB_FLUSH2 (csrc/atsd_ops.c)."""
    return _text(lib.atsd_workload_name(workload))


def no_aslr(change=0):
    """True when this process was executed with ADDR_NO_RANDOMIZE (its mappings not randomized);
    change 1 adds the flag for what it executes next, -1 takes it out (csrc/atsd_ops.c atsd_no_aslr)."""
    rc = lib.atsd_no_aslr(change)
    _check(rc, "personality")
    return bool(rc)


def aslr_state():
    """"off" where this process's mappings are not randomized (executed with ADDR_NO_RANDOMIZE, or
    the kernel randomizes nothing), "on" else (csrc/atsd_ops.c atsd_aslr_state, which atsd uses too)."""
    return _text(lib.atsd_aslr_state())


def op_call(op):
    """"mprotect(PROT_NONE)" for ATSD_OP_MPROTECT: the call as tables and messages name it."""
    return _text(lib.atsd_op_call(op))


def parse_size(text, what="size"):
    """The size rule of both front ends (units.parse_size is its pure twin)."""
    text = str(text)
    if "\0" in text:  # a C string would end there and take the prefix
        from ..units import parse_size as pure

        return pure(text, what)
    out = ffi.new("uint64_t *")
    _msg_call(lib.atsd_parse_size, text.encode("utf-8", "surrogateescape"), what.encode(), out)
    return out[0]


def sub_run_start(previous, gap, now):
    """When the next sub-run (--runs) starts; previous None for the first."""
    return lib.atsd_sub_run_start(previous is None, previous or 0.0, gap, now)


def round_start(first_start, r, spread, rounds):
    """When measured round r starts, paced over --spread from the first's start."""
    return lib.atsd_round_start(first_start, r, spread, rounds)


def least_sleep(runs, gap, rounds, spread):
    """The least seconds a plan's sleeps take (--gap between sub-runs, --spread within each)."""
    return lib.atsd_least_sleep(runs, gap, rounds, spread)


def latency_percentiles(lat_ns, percents):
    """Nearest-rank percentiles (each 1 to 100) of per-call latencies, a sequence of ns."""
    import numpy as np

    lat = np.array(lat_ns, dtype=np.uint64)  # a copy: the C rule sorts it
    if lat.size == 0:
        raise ValueError("no latency to take percentiles of")
    pct = ffi.new("int32_t[]", list(percents))
    out = ffi.new("uint64_t[]", len(pct))
    _check(lib.atsd_latency_percentiles(ffi.cast("uint64_t *", ffi.from_buffer(lat)), lat.size, pct, len(pct), out),
           "latency percentiles")
    return list(out)


def power_columns():
    """POWER's flush-count columns (csrc/atsd_trace.c) as dicts: name, event, filter (None for
    none), hash (a hypervisor call, hash MMU only) and opcode (its PAPR number, None else)."""
    cap = 16
    out = ffi.new("struct atsd_power_column[]", cap)
    n = lib.atsd_power_columns(out, cap)
    return [{"name": _text(c.name), "event": _text(c.event), "filter": _text(c.filter) or None,
             "hash": bool(c.hash), "opcode": c.opcode if c.opcode >= 0 else None} for c in out[0:n]]


def pin_self(cpu):
    _check(lib.atsd_pin_self(cpu), f"pinning to CPU {cpu}")


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


# The host-drift canary as both front ends time it before every round.
CANARY_BYTES, CANARY_COMPUTE, CANARY_CHASE = lib.ATSD_CANARY_BYTES, lib.ATSD_CANARY_COMPUTE, lib.ATSD_CANARY_CHASE


# Every C object is owned through one slot allocated here (a struct, or a pointer to the object) that
# the C release clears before it frees: an interrupt between any two bytecodes of a close() leaves
# either the object with its handle, or nothing to free.  Python never copies the raw pointer.

class Region:
    """A mapped, populated region; a context manager that always unmaps."""

    def __init__(self, size, align, pages="base", node=None):
        self._r = ffi.new("struct atsd_region *")
        self.size = size
        rc = lib.atsd_region_map_node(self._r, size, align, PAGES[pages], -1 if node is None else node)
        _check(rc, f"mapping {size} bytes ({pages} pages)" + ("" if node is None else f" on NUMA node {node}"))

    @property
    def address(self):
        return int(ffi.cast("uintptr_t", self._r.addr))

    def restore(self, retouch=True, op="mprotect"):
        """Untimed, between passes: the region as the next pass of `op` needs it (munmap: mapped again)."""
        what = "mapping the region again" if op == "munmap" else "mprotect(PROT_READ|PROT_WRITE)"
        _check(lib.atsd_op_restore(self._r, lib.atsd_op_parse(op.encode()), 1 if retouch else 0), what)

    def timed_pass(self, stride, latency=False, op="mprotect"):
        """One pass of `op` (mprotect, madvise, munmap) over the region in `stride`s.  Returns (ns,
        per-call latency ns as a numpy array or None)."""
        ns = ffi.new("uint64_t *")
        done = ffi.new("uint64_t *")
        lat = None
        buf = ffi.NULL
        if latency:
            import numpy as np

            lat = np.zeros(self.size // stride, dtype=np.uint64)
            buf = ffi.cast("uint64_t *", ffi.from_buffer(lat))
        code = lib.atsd_op_parse(op.encode())
        rc = lib.atsd_op_pass(self._r, code, stride, ns, buf, done)
        if rc < 0:
            raise OSError(-rc, f"{op_call(code) or op} failed at call {done[0] + 1} of stride {stride}: "
                               f"{os.strerror(-rc)}")
        return ns[0], lat

    def close(self):
        with held():
            rc = lib.atsd_region_unmap(self._r) if self._r is not None else 0
        _check(rc, "munmap")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Bystanders:
    """Threads pinned to `cpus` that keep this mm live there; a context manager."""

    def __init__(self, cpus):
        self.cpus = list(cpus)
        self.spins = []
        self._b = ffi.new("struct atsd_bystanders **")
        if self.cpus:
            arr = ffi.new("int32_t[]", self.cpus)
            _check(lib.atsd_bystanders_start(self._b, arr, len(self.cpus)), f"starting bystanders on CPUs {self.cpus}")

    def read_spins(self):
        """[(loop count, CPU time ns)] of each bystander so far ([] without bystanders)."""
        if not self.cpus or self._b[0] == ffi.NULL:
            return []
        spins, cpu = ffi.new("uint64_t[]", len(self.cpus)), ffi.new("uint64_t[]", len(self.cpus))
        _check(lib.atsd_bystanders_spins(self._b[0], spins, cpu, len(self.cpus)), "reading bystander spins")
        return list(zip(spins, cpu))

    def stop(self):
        spins = ffi.new("uint64_t[]", max(1, len(self.cpus)))
        with held():
            running = self._b[0] != ffi.NULL
            lib.atsd_bystanders_stop(self._b, spins)
            if running:
                self.spins = list(spins[0:len(self.cpus)])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Threads:
    """--threads: the calling thread (index 0, pinned already) and helpers pinned to cpus[1:], one mm;
    with processes=True forked processes, each with a region of its own (size / N, align, pages):
    start them before the caller's Region.  A context manager.  pass_() runs one pass of all of
    them, each its own part of the region; restore() puts the processes' regions back."""

    def __init__(self, cpus, processes=False, size=0, align=0, pages="base"):
        self.cpus = list(cpus)
        self._t = ffi.new("struct atsd_threads **")
        self._times = ffi.new("struct atsd_thread_times[]", len(self.cpus))
        arr = ffi.new("int32_t[]", self.cpus)
        kind = "processes" if processes else "threads"
        _check(lib.atsd_threads_start(self._t, arr, len(self.cpus), int(processes), size, align, PAGES[pages]),
               f"starting {kind} on CPUs {self.cpus}")

    def restore(self, retouch=True, op="mprotect"):
        _check(lib.atsd_threads_restore(self._t[0], lib.atsd_op_parse(op.encode()), 1 if retouch else 0),
               "restoring the tasks' regions")

    def pass_(self, region, stride, latency=False, op="mprotect"):
        """(the slowest thread's ns, [(loop ns, CPU ns, involuntary switches)] per thread, latency
        ns of every call in thread order or None)."""
        ns = ffi.new("uint64_t *")
        lat, buf = None, ffi.NULL
        if latency:
            import numpy as np

            lat = np.zeros(region.size // stride, dtype=np.uint64)
            buf = ffi.cast("uint64_t *", ffi.from_buffer(lat))
        code = lib.atsd_op_parse(op.encode())
        rc = lib.atsd_threads_pass(self._t[0], region._r, code, stride, buf, self._times, ns)
        times = [(t.t1 - t.t0, t.cpu_ns, t.preempted) for t in self._times]
        if rc < 0:
            done = sum(t.done for t in self._times)
            raise OSError(-rc, f"{op_call(code) or op} failed in one of {len(self.cpus)} threads ({done} calls of "
                               f"stride {stride} done): {_strerror(rc)}")
        return ns[0], times, lat

    def workload_pass(self, workload, size):
        """One pass of will-it-scale's loop (run --workload) in every task, `size` bytes of pages
        each: (the slowest task's ns, [(loop ns, CPU ns, involuntary switches)], loops of all).
        A failed read-back raises ReadBackFailed (errors.py), any other failure OSError."""
        ns = ffi.new("uint64_t *")
        code = lib.atsd_workload_parse(workload.encode())
        rc = lib.atsd_workload_pass(self._t[0], code, size, self._times, ns)
        times = [(t.t1 - t.t0, t.cpu_ns, t.preempted) for t in self._times]
        loops = sum(t.done for t in self._times)
        if rc == -errno.EBADMSG:
            from ..errors import ReadBackFailed
            from ..render.text import readback_failed

            raise ReadBackFailed(errno.EBADMSG, readback_failed(workload, loops))
        if rc < 0:
            why = ffi.new("char[512]")
            raise OSError(-rc, ffi.string(lib.atsd_workload_failure(why, 512, code, len(self.cpus), loops, rc)).decode(
                "utf-8", "replace"))
        return ns[0], times, loops

    def stop(self):
        with held():
            lib.atsd_threads_stop(self._t)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Verifier:
    """run --verify (csrc/atsd_verify.c): a checker thread on each of `cpus` (every allowed CPU), for
    the verify passes of one cell's round only, so no timed pass runs beside a checker.  A context
    manager; pass_() checks every call of one untimed pass."""

    def __init__(self, cpus):
        self.cpus = list(cpus)
        self._v = ffi.new("struct atsd_verifier **")
        self._out = ffi.new("struct atsd_verify_result *")
        arr = ffi.new("int32_t[]", self.cpus)
        _check(lib.atsd_verify_start(self._v, arr, len(self.cpus)), f"starting checkers on CPUs {self.cpus}")

    def check_device(self, device):
        """--device hmm: every call of the passes from here checked on the device too (None: off)."""
        lib.atsd_verify_device(self._v[0], device._d[0] if device else ffi.NULL)
        self._device = device

    def pass_(self, region, stride, op="mprotect", invalidators=(0,)):
        """One verify pass of `op` over the region, part i invalidated from CPU invalidators[i] and
        checked from every other CPU: a dict of calls, checks, faults, zeros, stale, held, ns (and with
        a device, device_checks, device_failed, device_zeros, device_stale)."""
        if self._v[0] == ffi.NULL:
            raise OSError(errno.EBADF, "verify pass: the checkers are stopped")
        code = lib.atsd_op_parse(op.encode())
        inv = ffi.new("int32_t[]", list(invalidators))
        rc = lib.atsd_verify_pass(self._v[0], region._r, code, stride, inv, len(inv), self._out)
        o = self._out
        counts = {"calls": o.calls, "checks": o.checks, "faults": o.faults, "zeros": o.zeros, "stale": o.stale,
                  "held": o.held, "ns": o.ns}
        if getattr(self, "_device", None):
            counts.update(device_checks=o.device_checks, device_failed=o.device_failed, device_zeros=o.device_zeros,
                          device_stale=o.device_stale)
        if rc == -errno.ETIMEDOUT:  # the call did not fail: a checker never reached it
            from ..render import messages
            from ..units import format_size

            raise OSError(-rc, messages.VERIFY_CHECKER_LATE.format(call=o.calls, stride=format_size(stride)))
        if rc < 0:
            raise OSError(-rc, f"verify pass: {op_call(code) or op} failed at call {o.calls} of stride {stride}: "
                               f"{os.strerror(-rc)}")
        return counts

    def stop(self):
        with held():
            lib.atsd_verify_stop(self._v)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def verify_workload_size(tasks):
    """The region --workload's verify passes go over (csrc/atsd_verify.c's rule)."""
    return int(lib.atsd_verify_workload_size(tasks))


def verify_checkers(verify_cpus, invalidators):
    """The CPUs that check a verify pass (csrc/atsd_verify.c atsd_verify_checkers, atsd's rule too)."""
    out = ffi.new("int32_t[]", max(1, len(verify_cpus)))
    n = lib.atsd_verify_checkers(ffi.new("int32_t[]", list(verify_cpus)), len(verify_cpus),
                                 ffi.new("int32_t[]", list(invalidators)), len(invalidators), out)
    return [out[i] for i in range(n)]


def stale_text(stale, checks, op, stride, invalidators, checkers):
    """atsd's loud line (csrc/atsd_verify.c), for the parity test with render/text.py's."""
    out = ffi.new("char[]", 1024)
    inv, chk = ffi.new("int32_t[]", list(invalidators)), ffi.new("int32_t[]", list(checkers))
    return _text(lib.atsd_verify_stale_text(stale, checks, lib.atsd_op_parse(op.encode()), stride, inv, len(inv),
                                            chk, len(chk), out, 1024))


class TracepointCounter:
    """A perf tracepoint counter: system-wide on `cpus` when allowed, else this thread only."""

    def __init__(self, tracepoint_id, cpus, filter=None):
        self.system_wide = False
        self._c = ffi.new("struct atsd_counter **")
        scope = ffi.new("int32_t *")
        arr = ffi.new("int32_t[]", list(cpus))
        f = filter.encode() if filter else ffi.NULL
        _check(lib.atsd_counter_open(self._c, tracepoint_id, f, arr, len(cpus), scope), "perf_event_open(tracepoint)")
        self.system_wide = bool(scope[0])

    def read(self):
        if self._c[0] == ffi.NULL:
            raise OSError(errno.EBADF, "reading perf counter: it is closed")
        v = ffi.new("uint64_t *")
        _check(lib.atsd_counter_read(self._c[0], v), "reading perf counter")
        return v[0]

    def close(self):
        with held():
            lib.atsd_counter_close(self._c)


def device_kprobes():
    """[(column, symbol)] of the device path's kprobe counts (csrc/atsd_device.c)."""
    column, symbol, out, i, n = ffi.new("char[]", 48), ffi.new("char[]", 96), [], 0, 1
    while i < n:
        n = lib.atsd_device_kprobe(i, column, 48, symbol, 96)
        out.append((_text(column), _text(symbol)))
        i += 1
    return out


class Kprobe:
    """A kprobe event made for this process (atsdbench_PID/COLUMN), removed by close(); its id for a
    TracepointCounter."""

    def __init__(self, root, column, symbol):
        self.root, event, tp = root, ffi.new("char[]", 80), ffi.new("uint64_t *")
        rc = lib.atsd_kprobe_make(root.encode(), column.encode(), symbol.encode(), event, 80, tp)
        if rc < 0:
            raise OSError(-rc, f"no kprobe event on {symbol} in {root}/kprobe_events: {os.strerror(-rc)}")
        self.event, self.id = _text(event), tp[0]

    def close(self):
        event, self.event = self.event, None
        if event:
            lib.atsd_kprobe_remove(self.root.encode(), event.encode())


def device_name(kind):
    """"hmm" for ATSD_DEVICE_HMM (csrc/atsd_device.c)."""
    return _text(lib.atsd_device_name(kind))


def device_path():
    """The HMM test driver's node --device hmm opens (/dev/hmm_dmirror0; ATSD_HMM_DEVICE for tests)."""
    return _text(lib.atsd_device_path())


class Device:
    """--device hmm (csrc/atsd_device.c): the kernel's HMM test driver, whose mmu notifier over this
    process lives from here to close().  touch() mirrors a region into the device (untimed by the
    pass); read_word() is the device's read of one word."""

    def __init__(self, path=None):
        self._d = ffi.new("struct atsd_device **")
        self.path = path or device_path()
        rc = lib.atsd_device_open(self._d, self.path.encode())
        if rc < 0:
            raise OSError(-rc, f"opening {self.path}: {os.strerror(-rc)}")

    def touch(self, region):
        """The device reads the whole region (HMM_DMIRROR_READ): its ns."""
        if self._d[0] == ffi.NULL:
            raise OSError(errno.EBADF, "device touch: the device is closed")
        ns, faults = ffi.new("uint64_t *"), ffi.new("uint64_t *")
        rc = lib.atsd_device_touch(self._d[0], region._r, ns, faults)
        if rc < 0:
            raise OSError(-rc, f"the device's touch (HMM_DMIRROR_READ) of the region: {os.strerror(-rc)}")
        return ns[0]

    def read_word(self, address):
        """The 8 bytes at address as the device reads them, or OSError where it cannot translate them."""
        word = ffi.new("uint64_t *")
        rc = lib.atsd_device_read_word(self._d[0], ffi.cast("void *", address), word)
        if rc < 0:
            raise OSError(-rc, os.strerror(-rc))
        return word[0]

    def close(self):
        with held():
            lib.atsd_device_close(self._d)


def device_stale_text(stale, checks, op, stride):
    """The device's loud line (csrc/atsd_verify.c), as atsd prints it."""
    out = ffi.new("char[]", 512)
    lib.atsd_verify_device_stale_text(stale, checks, lib.atsd_op_parse(op.encode()), stride, out, 512)
    return _text(out)


class Canary:
    """The host-drift canary (csrc/atsd.h): kernel-independent compute and memory work, timed."""

    def __init__(self, nbytes, seed):
        self._c = ffi.new("struct atsd_canary **")
        _check(lib.atsd_canary_new(self._c, nbytes, seed), "building the canary's buffer")

    def run(self, compute, chase):
        """(compute ns, chase ns)."""
        if self._c[0] == ffi.NULL:
            raise OSError(errno.EBADF, "timing the canary: it is freed")
        a, b = ffi.new("uint64_t *"), ffi.new("uint64_t *")
        _check(lib.atsd_canary_run(self._c[0], compute, chase, a, b), "timing the canary")
        return a[0], b[0]

    def close(self):
        with held():
            lib.atsd_canary_free(self._c)


# --- tracefs (csrc/atsd_trace.c): the tracepoints both front ends count, found and named in C ---

def tracefs_root(sysroot=None):
    """The tracefs whose events can be listed (under sysroot, for tests), or None."""
    out = ffi.new("char[]", 4096)
    if lib.atsd_tracefs_root(sysroot.encode() if sysroot else ffi.NULL, out, 4096) < 0:
        return None
    return _text(out)


def _tracepoint(t):
    return (t.id or None), {t.reasons[i].code: _text(t.reasons[i].name) for i in range(t.nreasons)}


def parse_tracepoint_format(text):
    """(id or None, {reason code: name}) from a format file's text."""
    t = ffi.new("struct atsd_tracepoint *")
    lib.atsd_tracepoint_parse((text or "").encode("utf-8", "surrogateescape"), t)
    return _tracepoint(t)


def find_tracepoint(event="tlb/tlb_flush", root=None):
    """(id, reasons) of ROOT/events/EVENT, (None, {}) where there is no tracefs or no such event."""
    root = root or tracefs_root()
    t = ffi.new("struct atsd_tracepoint *")
    if root is None or lib.atsd_tracepoint_find(root.encode(), event.encode(), t) < 0:
        return None, {}
    return _tracepoint(t)


def reason_column(name):
    """'remote IPI send' -> 'flushes_remote_ipi_send'."""
    out = ffi.new("char[]", lib.ATSD_COLUMN_NAME)
    return _text(lib.atsd_reason_column(name.encode("utf-8", "surrogateescape"), out, lib.ATSD_COLUMN_NAME))


def tlb_flush_columns(tp_id, reasons):
    """{column: filter or None} counted from tlb:tlb_flush with these reasons, in atsd's order."""
    t = ffi.new("struct atsd_tracepoint *")
    t.id = tp_id
    for i, (code, name) in enumerate(list(reasons.items())[:lib.ATSD_MAX_REASONS]):
        t.reasons[i].code = code
        t.reasons[i].name = name.encode("utf-8", "surrogateescape")[:lib.ATSD_REASON_NAME - 1]
        t.nreasons = i + 1
    cap = lib.ATSD_MAX_REASONS + 2
    cols = ffi.new("struct atsd_count_column[]", cap)
    n = lib.atsd_tlb_flush_columns(t, cols, cap)
    return {_text(cols[i].name): _text(cols[i].filter) or None for i in range(n)}


def tracefs_mounted(mounts_text=None):
    return bool(lib.atsd_tracefs_mounted(mounts_text.encode() if mounts_text is not None else ffi.NULL))


def tracepoint_problem(event="tlb:tlb_flush", euid=None, mounted=None):
    """Why a tracepoint that could not be read is not readable, in one sentence with the way out."""
    out = ffi.new("char[]", 512)
    return _text(lib.atsd_tracepoint_problem(event.encode(), -1 if euid is None else euid,
                                             -1 if mounted is None else int(bool(mounted)), out, 512))


# --- a private tracefs instance (csrc/atsd_instance.c): run --breakdown's (atsd's too) and POWER's counts ---

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


def breakdown_device(root):
    """run --breakdown's device stage: the kprobe pair on the driver's callback made under ROOT
    (csrc/atsd_device.c), as {event: (None, "device")}; OSError where it cannot be made."""
    p = ffi.new("struct atsd_breakdown_probe *")
    rc = lib.atsd_breakdown_device(root.encode(), p)
    if rc < 0:
        raise OSError(-rc, f"no kprobe events on test_hmm:dmirror_interval_invalidate in {root}: {os.strerror(-rc)}")
    return {_text(e.event): (None, _text(e.family)) for e in p.events[0:p.nevents]}


def breakdown_device_remove(root):
    with held():
        lib.atsd_breakdown_device_remove(root.encode())


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


def read_column(data, column=1, delim=" \t"):
    """Numbers from bytes as ministat reads them: (numpy array, None) or (None, bad line number)."""
    import numpy as np

    # One number per fgets() read at most; a read ends at a newline or after 8191 bytes (ministat's
    # BUFSIZ buffer), so a long line is several reads, each read as a line.
    cap = data.count(b"\n") + 2 + len(data) // 8191
    out = np.empty(cap, dtype=np.float64)
    bad = ffi.new("int64_t *")
    n = lib.atsd_read_column(data, len(data), column, delim.encode("latin-1"),
                             ffi.cast("double *", ffi.from_buffer(out)), cap, bad)
    if n == -errno.EINVAL:
        return None, bad[0]
    _check(n, "reading numbers")
    return out[:n], None


class Profile:
    """run --profile's sampler (csrc/atsd_profile.c): perf_event_open on `cpus` with kernel callchains;
    owned through one slot, released with signals held."""

    def __init__(self, cpus, cycles, freq, pages):
        self._p = ffi.new("struct atsd_profile **")
        arr = ffi.new("int32_t[]", list(cpus))
        _check(lib.atsd_profile_open(self._p, arr, len(cpus), 1 if cycles else 0, freq, pages),
               "perf_event_open(cycles)" if cycles else "perf_event_open(cpu-clock)")
        self._buf = None

    def enable(self, on):
        if self._p[0] == ffi.NULL:
            raise OSError(errno.EBADF, "the profile is closed")
        _check(lib.atsd_profile_enable(self._p[0], 1 if on else 0), "enabling the profile")

    def read(self, cap=1 << 20):
        """(flat samples: cpu, tid, n, n addresses ... as a list, lost samples); drains every ring."""
        if self._p[0] == ffi.NULL:
            raise OSError(errno.EBADF, "the profile is closed")
        if self._buf is None:
            self._buf = ffi.new("uint64_t[]", cap)
        lost = ffi.new("uint64_t *")
        out = []
        while True:
            n = lib.atsd_profile_read(self._p[0], self._buf, cap, lost)
            _check(n, "reading the profile's rings")
            out.extend(self._buf[0:n])
            if n < cap - 4096:  # the rings were drained (a full buffer may have left some)
                return out, int(lost[0])

    def close(self):
        with held():
            lib.atsd_profile_close(self._p)


def perf_parse(data, cap=1 << 20):
    """The core's ring-record parser on bytes: (flat samples, lost, bytes used)."""
    out = ffi.new("uint64_t[]", cap)
    lost = ffi.new("uint64_t *")
    used = ffi.new("uint64_t *")
    buf = ffi.from_buffer("uint8_t[]", data)
    n = lib.atsd_perf_parse(buf, len(data), out, cap, lost, used)
    _check(n, "parsing perf records")
    return list(out[0:n]), int(lost[0]), int(used[0])


# --- a campaign's next boot (csrc/atsd_kexec.c) ---

def kexec_load(kernel, initrd=None, cmdline=""):
    """kexec_file_load(2) of kernel (and initrd) with cmdline; an OSError with the errno where the kernel
    refuses (campaign/methods.py says what each means on this host)."""
    rc = lib.atsd_kexec_load(os.fsencode(kernel), os.fsencode(initrd) if initrd else ffi.NULL,
                             cmdline.encode("utf-8", "surrogateescape"))
    if rc < 0:
        raise OSError(-rc, os.strerror(-rc), kernel)


def kexec_unload():
    rc = lib.atsd_kexec_unload()
    if rc < 0:
        raise OSError(-rc, os.strerror(-rc))


def kexec_reboot():
    """Boot the loaded kernel now: returns only where the kernel refused (an OSError)."""
    rc = lib.atsd_kexec_reboot()
    if rc < 0:
        raise OSError(-rc, os.strerror(-rc))
