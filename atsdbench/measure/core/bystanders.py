"""Pinning and the bystanders (csrc/atsd_bystanders.c)."""
from . import ffi, lib, _check
from ...signals import held


def pin_self(cpu):
    _check(lib.atsd_pin_self(cpu), f"pinning to CPU {cpu}")


class Bystanders:
    """Threads pinned to `cpus` that keep this mm live there; a context manager."""

    def __init__(self, cpus):
        self.cpus = list(cpus)
        self.spins = []
        self._b = ffi.new("struct atsd_bystanders **")
        if self.cpus:
            arr = ffi.new("int32_t[]", self.cpus)
            _check(lib.atsd_bystanders_start(self._b, arr, len(self.cpus)), f"starting bystanders on CPUs {self.cpus}")

    def read_spins(self):
        """[(loop count, CPU time ns)] of each bystander so far ([] without bystanders)."""
        if not self.cpus or self._b[0] == ffi.NULL:
            return []
        spins, cpu = ffi.new("uint64_t[]", len(self.cpus)), ffi.new("uint64_t[]", len(self.cpus))
        _check(lib.atsd_bystanders_spins(self._b[0], spins, cpu, len(self.cpus)), "reading bystander spins")
        return list(zip(spins, cpu))

    def stop(self):
        spins = ffi.new("uint64_t[]", max(1, len(self.cpus)))
        with held():
            running = self._b[0] != ffi.NULL
            lib.atsd_bystanders_stop(self._b, spins)
            if running:
                self.spins = list(spins[0:len(self.cpus)])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
