"""The kernel's TLB single-page flush ceiling (debugfs): read, set for a run, always restored.

Below the ceiling (in pages) a range flush invalidates page by page; above it, the whole address
space.  x86 keeps it in x86/tlb_single_page_flush_ceiling, POWER in powerpc/; writing needs root
and a mounted debugfs.
"""
from . import procfs
from .errors import UsageError

PATHS = ("/sys/kernel/debug/x86/tlb_single_page_flush_ceiling",
         "/sys/kernel/debug/powerpc/tlb_single_page_flush_ceiling")


def find(paths=PATHS):
    for path in paths:
        if procfs.read(path) is not None:
            return path
    return None


class Ceiling:
    """`with Ceiling() as c: c.set(33)`: the value found at entry is written back at exit, whatever
    ends the run (an error, Ctrl-C)."""

    def __init__(self, paths=PATHS):
        self.path = find(paths)
        self.original = None

    def __enter__(self):
        if self.path is None:
            raise UsageError("--ceiling: no tlb_single_page_flush_ceiling in debugfs (x86/ or powerpc/): "
                             "mount debugfs as root (mount -t debugfs none /sys/kernel/debug)")
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
            raise UsageError(f"--ceiling: cannot write {self.path}: {e.strerror} (root needed)") from None

    def __exit__(self, *exc):
        if self.original is not None:
            try:
                self._write(self.original)
            finally:
                self.original = None
