"""run --verify's checkers (csrc/atsd_verify.c)."""
import errno
import os

from . import ffi, lib, _check, _text
from .ops import op_call
from ...signals import held


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
        if rc < 0:
            raise verify_failure(rc, op_call(code) or op, o.calls, stride)
        return counts

    def stop(self):
        with held():
            lib.atsd_verify_stop(self._v)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def verify_failure(rc, call, calls, stride):
    """The OSError of a verify pass of `call` that failed after `calls` calls."""
    if rc == -errno.ETIMEDOUT:  # the call did not fail: a checker never reached it
        from ...units import format_size

        return OSError(-rc, f"verify pass: a checker missed call {calls} of stride {format_size(stride)} "
                            "in time (CPU taken?)")
    return OSError(-rc, f"verify pass: {call} failed at call {calls} of stride {stride}: {os.strerror(-rc)}")


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
    """atsd's loud line (csrc/atsd_verify.c), for the parity test with render/verify.py's."""
    size = 256 + 12 * (len(invalidators) + len(checkers))  # the CPU lists whole, as atsd's buffer holds them
    out = ffi.new("char[]", size)
    inv, chk = ffi.new("int32_t[]", list(invalidators)), ffi.new("int32_t[]", list(checkers))
    return _text(lib.atsd_verify_stale_text(stale, checks, lib.atsd_op_parse(op.encode()), stride, inv, len(inv),
                                            chk, len(chk), out, size))
