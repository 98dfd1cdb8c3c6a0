"""The tasks of a pass (csrc/atsd_threads.c): --threads, --tasks processes and --workload's."""
import errno

from . import PAGES, ffi, lib, _check, _strerror, _text
from .ops import op_call
from ...signals import held


def tasks_failure(rc, call, tasks, done, stride):
    """The OSError of a pass of `call` in `tasks` threads that failed after `done` calls in all."""
    return OSError(-rc, f"{call} failed in one of {tasks} threads ({done} calls of stride {stride} done): "
                        f"{_strerror(rc)}")


def workload_failure(rc, workload, tasks, loops):
    """A failed --workload pass (workload's code) after `loops` loops in all: a read-back that failed is
    ReadBackFailed (never a rate), anything else an OSError in the core's words."""
    why = _text(lib.atsd_workload_failure(ffi.new("char[512]"), 512, workload, tasks, loops, rc))
    if rc == -errno.EBADMSG:
        from ...errors import ReadBackFailed

        return ReadBackFailed(errno.EBADMSG, why)
    return OSError(-rc, why)


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
            raise tasks_failure(rc, op_call(code) or op, len(self.cpus), sum(t.done for t in self._times), stride)
        return ns[0], times, lat

    def stop(self):
        with held():
            lib.atsd_threads_stop(self._t)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
