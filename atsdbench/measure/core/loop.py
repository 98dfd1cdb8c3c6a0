"""One cell's passes through the core's loop (csrc/atsd_loop.c), with Python's hooks called back from it.

The loop restores, touches, reads the thread's own state and times each pass in C, as atsd's passes
are; what only `atsdbench run` reads around a pass is its hooks': before(rec) and after(rec), each
given the pass's struct atsd_pass_record.  A hook that returns true stops the loop between passes,
one that raises stops it too; either way the finished records are kept, and what stopped it is raised
once the loop has returned (cffi's callbacks cannot raise through C).
"""
import errno
import os

from . import ffi, lib, _check, _strerror
from .ops import op_call
from .region import op_failure, restore_failure
from .threads import tasks_failure, workload_failure
from .verify import verify_failure

_STOP = 1
_escaped = []  # what cffi caught outside a hook's own try (onerror): raised once the loop returns


def _escape(kind, value, tb):
    _escaped.append(value if value is not None else kind())


@ffi.def_extern(error=_STOP, onerror=_escape)
def atsd_py_before(ctx, rec):
    return ffi.from_handle(ctx).call(0, rec)


@ffi.def_extern(error=_STOP, onerror=_escape)
def atsd_py_after(ctx, rec):
    return ffi.from_handle(ctx).call(1, rec)


class _Hooks:
    def __init__(self, before, after):
        self.fns = (before, after)
        self.error = None

    def call(self, which, rec):
        try:
            return _STOP if self.fns[which](rec) else 0
        except BaseException as e:  # a KeyboardInterrupt too: raised after the loop, never into C
            if self.error is None:
                self.error = e
            return _STOP


class Passes:
    """What a loop finished: `records` (struct atsd_pass_record, owned here; their times and call_ns
    are gone), and whether a hook stopped it."""

    def __init__(self, out, count, stopped):
        self._out = out
        self.records = [out[i] for i in range(count)]
        self.stopped = stopped


def _failure(loop, rec):
    """The error of the step that failed (rec: its pass's record), in the words of the step's own call."""
    rc, stride = loop.err, rec.stride_bytes
    if loop.stage == lib.ATSD_STAGE_RESTORE:
        return restore_failure(rc, _op(rec.op))
    if loop.stage == lib.ATSD_STAGE_TASKS_RESTORE:
        return OSError(-rc, f"restoring the tasks' regions: {_strerror(rc)}")
    if loop.stage == lib.ATSD_STAGE_TOUCH:
        return OSError(-rc, f"the device's touch (HMM_DMIRROR_READ) of the region: {os.strerror(-rc)}")
    if rec.kind == lib.ATSD_RECORD_VERIFY:
        return verify_failure(rc, op_call(rec.op), rec.verify.calls, stride)
    if rec.workload >= 0:
        return workload_failure(rc, rec.workload, rec.threads, rec.loops)
    if rec.threads > 1:
        return tasks_failure(rc, op_call(rec.op), rec.threads, rec.done, stride)
    return op_failure(rc, op_call(rec.op), rec.done, stride)


def _op(code):
    return ffi.string(lib.atsd_op_name(code)).decode()


def _loop(c_plan, cell, round_index, warmup_round, first=0, region=None, threads=None, device=None):
    loop = ffi.new("struct atsd_loop *")
    loop.plan, loop.cell, loop.round, loop.warmup_round, loop.first = c_plan, cell, round_index, int(warmup_round), first
    loop.region = region._r if region is not None else ffi.NULL
    loop.threads = threads._t[0] if threads is not None else ffi.NULL
    loop.device = device._d[0] if device is not None else ffi.NULL
    return loop


def _run(loop, run, before, after, cap):
    hooks = _Hooks(before, after)
    handle = ffi.new_handle(hooks)  # alive until the loop returns
    h = ffi.new("struct atsd_pass_hooks *")
    h.ctx = handle
    h.before = lib.atsd_py_before if before is not None else ffi.NULL
    h.after = lib.atsd_py_after if after is not None else ffi.NULL
    out = ffi.new("struct atsd_pass_record[]", max(1, cap))
    del _escaped[:]
    count = _check(run(h, out), "running the passes")
    escaped, _escaped[:] = _escaped[:], []
    if loop.failed >= 0:
        raise _failure(loop, out[loop.failed]) from hooks.error
    if hooks.error is not None:
        raise hooks.error
    if escaped:
        raise escaped[0]
    return Passes(out, count, bool(loop.stopped))


def cell_passes(c_plan, cell, round_index, warmup_round, first=0, region=None, threads=None, device=None,
                before=None, after=None):
    """Cell `cell`'s passes of round `round_index` (csrc/atsd_loop.c atsd_cell_passes) on the region
    (None for a workload), the tasks (Threads: --threads > 1, --workload) and the device (Device:
    --device hmm); before(rec) and after(rec) around each pass.  Returns Passes; raises what stopped
    it otherwise (a hook's error, a failed step's OSError, a failed read-back's ReadBackFailed)."""
    loop = _loop(c_plan, cell, round_index, warmup_round, first, region, threads, device)
    cap = (c_plan.warmup + c_plan.reps) * c_plan.nstrides
    return _run(loop, lambda h, out: lib.atsd_cell_passes(loop, h, out, cap), before, after, cap)


def cell_verify(c_plan, cell, round_index, warmup_round, region, verifier, op, invalidators, after=None):
    """The cell's --verify passes of op (a name) on the region (atsd_cell_verify), one a stride, each
    checked by the Verifier from every other CPU, part i invalidated from invalidators[i]; after(rec)
    after each.  Returns Passes, raises as cell_passes."""
    loop = _loop(c_plan, cell, round_index, warmup_round, region=region)
    inv = ffi.new("int32_t[]", list(invalidators))
    code = lib.atsd_op_parse(op.encode())
    if verifier._v[0] == ffi.NULL:
        raise OSError(errno.EBADF, "verify pass: the checkers are stopped")
    return _run(loop, lambda h, out: lib.atsd_cell_verify(loop, verifier._v[0], code, inv, len(inv), h, out,
                                                          c_plan.nstrides), None, after, c_plan.nstrides)


def latency_percentiles(lat_ns, percents):
    """Nearest-rank percentiles (each 1 to 100) of per-call latencies, a sequence of ns: the rule the
    loop's lat_ns follow (csrc/atsd_loop.c)."""
    import numpy as np

    lat = np.array(lat_ns, dtype=np.uint64)  # a copy: the C rule sorts it
    if lat.size == 0:
        raise ValueError("no latency to take percentiles of")
    pct = ffi.new("int32_t[]", list(percents))
    out = ffi.new("uint64_t[]", len(pct))
    _check(lib.atsd_latency_percentiles(ffi.cast("uint64_t *", ffi.from_buffer(lat)), lat.size, pct, len(pct), out),
           "latency percentiles")
    return list(out)
