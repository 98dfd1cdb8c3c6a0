"""`atsdbench info --cpus`: each allowed CPU measured briefly, so a user can see which CPUs are quiet
before choosing --cpu (or trusting --cpu auto).

Per CPU, pinned there: ROUNDS rounds of a fresh SIZE region with PASSES timed 64K passes each (the
stride that is most sensitive to the host's state), the CV of the round means, the interrupts and
steal ticks the CPU took meanwhile (per second), and the canary's compute time.  A few seconds in
all; numbers for choosing, not for comparing kernels.
"""
import os
import time

from . import core, procfs

SIZE, STRIDE, ROUNDS, PASSES = 64 << 20, 64 << 10, 3, 4


def survey(cpus=None, size=SIZE, rounds=ROUNDS, passes=PASSES):
    """[{cpu, gbps (mean of round means), cv_pct, irq_per_s, steal_per_s, canary_ms}] per allowed CPU."""
    import numpy as np

    saved = os.sched_getaffinity(0)
    out = []
    try:
        for cpu in sorted(cpus if cpus is not None else saved):
            core.pin_self(cpu)
            irq0, self0, t0 = _irq(cpu), core.self_state(cpu), time.monotonic()
            canary = core.Canary(1 << 20, cpu + 1)
            try:
                canary_ns = min(canary.run(core.CANARY_COMPUTE // 4, 0)[0] for _ in range(3))
            finally:
                canary.close()
            means = []
            for _ in range(rounds):
                with core.Region(size, 2 << 20) as region:
                    rates = []
                    for i in range(passes + 1):  # the first pass of a fresh region warms it: dropped
                        if i:
                            region.restore()
                        ns, _ = region.timed_pass(STRIDE)
                        if i:
                            rates.append(size / ns)
                    means.append(float(np.mean(rates)))
            dt = time.monotonic() - t0
            irq1, steal = _irq(cpu), core.self_delta(self0, core.self_state(cpu, after=True))[2]
            m = np.asarray(means)
            out.append({"cpu": cpu, "gbps": float(m.mean()),
                        "cv_pct": float(m.std(ddof=1) / m.mean() * 100) if len(m) > 1 else None,
                        "irq_per_s": (irq1 - irq0) / dt if irq0 is not None and irq1 is not None else None,
                        "steal_per_s": steal / dt if steal is not None else None,
                        "canary_ms": canary_ns / 1e6})
    finally:
        os.sched_setaffinity(0, saved)
    return out


def _irq(cpu):
    return procfs.interrupts_of_cpu(procfs.read("/proc/interrupts"), cpu)
