"""--device hmm (csrc/atsd_device.c): the kernel's HMM test driver as a device TLB, its kprobes."""
import errno
import os

from . import ffi, lib, _text
from ...signals import held


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
