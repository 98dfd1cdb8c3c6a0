"""The host-drift canary (csrc/atsd_canary.c), timed before every round."""
import errno

from . import ffi, lib, _check
from ...signals import held


# The host-drift canary as both front ends time it before every round.
CANARY_BYTES, CANARY_COMPUTE, CANARY_CHASE = lib.ATSD_CANARY_BYTES, lib.ATSD_CANARY_COMPUTE, lib.ATSD_CANARY_CHASE


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
