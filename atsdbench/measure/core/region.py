"""The measured region (csrc/atsd_region.c, atsd_ops.c): mapped, restored, one timed pass of an op."""
import os

from . import PAGES, ffi, lib, _check, _strerror
from .ops import op_call
from ...signals import held


def page_size():
    return _check(lib.atsd_page_size(), "sysconf(_SC_PAGESIZE)")


def hugepage_size():
    """Default hugetlb page size in bytes, or None when the kernel has none."""
    rc = lib.atsd_hugepage_size()
    return rc if rc > 0 else None


def op_failure(rc, call, done, stride):
    """The OSError of a pass of `call` ("mprotect(PROT_NONE)") that failed after `done` calls."""
    return OSError(-rc, f"{call} failed at call {done + 1} of stride {stride}: {os.strerror(-rc)}")


def restore_failure(rc, op):
    """The OSError of a restore before a pass of op (its name) that failed."""
    what = "mapping the region again" if op == "munmap" else "mprotect(PROT_READ|PROT_WRITE)"
    return OSError(-rc, f"{what}: {_strerror(rc)}")


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
        rc = lib.atsd_op_restore(self._r, lib.atsd_op_parse(op.encode()), 1 if retouch else 0)
        if rc < 0:
            raise restore_failure(rc, op)

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
            raise op_failure(rc, op_call(code) or op, done[0], stride)
        return ns[0], lat

    def close(self):
        with held():
            rc = lib.atsd_region_unmap(self._r) if self._r is not None else 0
        _check(rc, "munmap")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
