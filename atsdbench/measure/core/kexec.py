"""A campaign's next boot (csrc/atsd_kexec.c)."""
import os

from . import ffi, lib


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


def kexec_file_supported():
    """Whether the running kernel has kexec_file_load(2) (not ENOSYS); nothing is loaded or unloaded."""
    import errno

    return lib.atsd_kexec_probe() != -errno.ENOSYS


def kexec_reboot():
    """Boot the loaded kernel now: returns only where the kernel refused (an OSError)."""
    rc = lib.atsd_kexec_reboot()
    if rc < 0:
        raise OSError(-rc, os.strerror(-rc))
