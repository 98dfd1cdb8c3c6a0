"""`run --profile`: untimed passes sampled with perf_event_open (the core's ring reader, no perf tool),
kernel callchains symbolized through /proc/kallsyms; analysis/profile.py makes the shares.

cycles where the CPU has a PMU, else the software cpu-clock: timer-based samples cannot land where
interrupts are off, so a flush's own time is charged to where interrupts come back on (the legend
says which event was used).
"""
import errno
import threading

from ..analysis import profile as arithmetic
from ..errors import UsageError

FREQ = 4000            # samples a second a CPU
PAGES = 512            # ring data pages a CPU
MIN_SECONDS = 0.5      # passes of a stride until this much pass time was sampled (at most MAX_PASSES)
MAX_PASSES = 16
CAP = 1 << 20          # u64s read from the rings at once


def _sysctl(name):
    try:
        with open(f"/proc/sys/kernel/{name}") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def _paranoid():
    return _sysctl("perf_event_paranoid")


def symbols_hidden(kptr_restrict=None):
    """kallsyms reads 0 addresses: kptr_restrict above 0 hides them; at 0 only root (CAP_SYSLOG) sees them."""
    if kptr_restrict == 0:
        return "kallsyms hides kernel addresses from non-root (CAP_SYSLOG): run as root"
    return "kallsyms hides kernel addresses (as root: sysctl kernel.kptr_restrict=0)"


def perf_refused(err, paranoid):
    """err: the errno's name (EACCES); paranoid: kernel.perf_event_paranoid, or None."""
    said = f", paranoid {paranoid}" if paranoid is not None else ""
    return f"perf_event_open {err}{said}: needs root or kernel.perf_event_paranoid=0"


class Probe:
    """Whether the profile can run here, checked before anything is measured: `event` ("cycles" or
    "cpu-clock"), `symbols`.  Raises UsageError (exit 2) with the reason and the way out."""

    def __init__(self, cpus, kallsyms=None):
        from . import core

        self.cpus = list(cpus)
        if kallsyms is None:
            try:
                with open("/proc/kallsyms") as f:
                    kallsyms = f.read()
            except OSError as e:
                raise UsageError(f"--profile: /proc/kallsyms: {e.strerror}")
        self.symbols = arithmetic.Symbols(kallsyms)
        if self.symbols.hidden:
            raise UsageError(f"--profile: {symbols_hidden(_sysctl('kptr_restrict'))}")
        self.event = None
        for cycles in (1, 0):
            try:
                core.Profile(self.cpus[:1], cycles, FREQ, 1).close()
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV) and cycles:
                    continue  # no PMU (a VM): the software clock
                err = errno.errorcode.get(e.errno, e.strerror)
                raise UsageError(f"--profile: {perf_refused(err, _paranoid())}")
            self.event = "cycles" if cycles else "cpu-clock"
            break


def run(plan, probe, into=None):
    """The profiled passes: {"event", "freq", "passes": [per cell and stride], "complete"}; a signal stops
    it between passes, left pending for the caller."""
    import dataclasses

    from .. import signals
    from . import core
    from .session import Session

    tid = threading.get_native_id()
    out = into if into is not None else {}
    out.update({"event": probe.event, "freq": FREQ, "passes": [], "complete": False})
    quiet = dataclasses.replace(plan, trace="off")
    cpus = [plan.cpu] + list(plan.bystander_cpus)
    prof = None
    try:
        with Session(quiet) as session:
            prof = core.Profile(cpus, probe.event == "cycles", FREQ, PAGES)
            for index, cell in enumerate(plan.cells):
                if cell["threads"] != 1:
                    continue
                session._enter_cell(cell)
                bystanders = plan.bystander_cpus[:cell["bystanders"]]
                for stride in plan.strides:
                    if signals.pending():
                        return out
                    samples, lost, passes, sampled = [], 0, 0, 0
                    # on the run's --mem-node, as its timed passes' regions are
                    with core.Region(plan.size, plan.align, cell["pages"], plan.mem_node) as region:
                        while passes < MAX_PASSES and sampled < MIN_SECONDS * 1e9:
                            if passes:
                                region.restore(plan.retouch, cell["op"])
                            prof.read()  # what came before the pass is dropped
                            prof.enable(True)
                            ns, _ = region.timed_pass(stride, False, cell["op"])
                            prof.enable(False)
                            sampled += ns
                            flat, dropped = prof.read()
                            lost += dropped
                            samples += [(c, t, [probe.symbols.name(a) for a in chain])
                                        for c, t, chain in arithmetic.split(flat)]
                            passes += 1
                    one = {"stride_bytes": stride, "passes": passes, "lost": lost, "seconds": sampled / 1e9}
                    if plan.axes:
                        one["cell"] = index
                    one.update(arithmetic.shares(samples, plan.cpu, tid, bystanders))
                    out["passes"].append(one)
            out["complete"] = True
    finally:
        with signals.held():
            if prof is not None:
                prof.close()
    return out
