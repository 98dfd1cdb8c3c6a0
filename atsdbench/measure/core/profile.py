"""run --profile's sampler (csrc/atsd_profile.c) and its ring-record parser."""
import errno

from . import ffi, lib, _check
from ...signals import held


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
