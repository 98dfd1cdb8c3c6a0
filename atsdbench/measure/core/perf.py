"""perf counters on a tracepoint (csrc/atsd_perf.c)."""
import errno

from . import ffi, lib, _check
from ...signals import held


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
