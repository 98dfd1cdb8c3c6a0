"""The kernel's TLB single-page flush ceiling (debugfs): read, set for a run, always restored.

Below the ceiling (in pages) a range flush invalidates page by page; above it, the whole address
space.  x86 keeps it in x86/tlb_single_page_flush_ceiling, POWER in powerpc/; writing needs root
and a mounted debugfs, and a kernel that is not locked down (lockdown closes debugfs).
"""
import errno
import os

from . import procfs
from ..errors import UsageError
from ..units import parse_bracketed

PATHS = ("/sys/kernel/debug/x86/tlb_single_page_flush_ceiling",
         "/sys/kernel/debug/powerpc/tlb_single_page_flush_ceiling")


LOCKDOWN = "/sys/kernel/security/lockdown"
DEBUGFS = "/sys/kernel/debug"
# short enough for "atsdbench: --ceiling: " before them on 100 columns
UNMOUNTED = f"debugfs not mounted (as root: mount -t debugfs none {DEBUGFS})"
MISSING = "this kernel has no tlb_single_page_flush_ceiling in debugfs (x86/ or powerpc/)"


def missing(debugfs=DEBUGFS):
    """Why no ceiling file is there: debugfs not mounted (the way to mount it), or a kernel without."""
    return MISSING if os.path.ismount(debugfs) else UNMOUNTED


def locate(paths=PATHS, lockdown=LOCKDOWN, debugfs=DEBUGFS):
    """(path, None) for the first ceiling file that reads, else (None, why none does): a missing file
    and a refused one need different fixes, so they are told apart by errno."""
    refused = []
    for path in paths:
        try:
            with open(path) as f:
                f.read()
            return path, None
        except UnicodeDecodeError:
            continue
        except OSError as e:
            if e.errno in (errno.EPERM, errno.EACCES):
                refused.append((path, e))
    if not refused:
        return None, missing(debugfs)
    path, e = refused[0]
    return None, _refusal(path, e, lockdown)


def _refusal(path, e, lockdown=LOCKDOWN):
    """Why reading or writing `path` was refused, and what would allow it."""
    if e.errno == errno.EPERM:
        # Kernel lockdown closes debugfs files that can be written, even to root, even for reading;
        # only a reboot without it (lockdown= on the command line, Secure Boot) opens them.
        mode = parse_bracketed(procfs.read(lockdown))
        state = f"the kernel is locked down ({mode})" if mode not in ("none", "unknown") else \
            "the kernel refused it (lockdown or a security module)"
        return (f"{path}: {e.strerror or 'Operation not permitted'}: {state}, so the ceiling cannot be read or "
                "changed; boot without lockdown to use it")
    return f"{path}: {e.strerror or 'Permission denied'}: debugfs needs root"


def find(paths=PATHS):
    return locate(paths)[0]


class Ceiling:
    """`with Ceiling() as c: c.set(33)`: the value found at entry is written back at exit, whatever
    ends the run (an error, Ctrl-C)."""

    def __init__(self, paths=PATHS, lockdown=LOCKDOWN):
        self.path, self.problem = locate(paths, lockdown)
        self.lockdown = lockdown
        self.original = None

    def __enter__(self):
        if self.path is None:
            raise UsageError(f"--ceiling: {self.problem}")
        self.original = procfs.read(self.path).strip()
        self._write(self.original)  # fail now, before anything is measured, if it is not writable
        return self

    def set(self, pages):
        self._write(str(int(pages)))

    def _write(self, text):
        try:
            with open(self.path, "w") as f:
                f.write(text + "\n")
        except OSError as e:
            if e.errno == errno.EPERM:
                raise UsageError(f"--ceiling: cannot write {_refusal(self.path, e, self.lockdown)}") from None
            raise UsageError(f"--ceiling: cannot write {self.path}: {e.strerror} (root needed)") from None

    def __exit__(self, *exc):
        if self.original is not None:
            try:
                self._write(self.original)
            finally:
                self.original = None
