"""The resources of a run in one process: pinning, bystanders, counters, the optional GPU toucher.

`with Session(plan) as s:` sets them up (restoring the CPU affinity on any error) and tears them
down; `s.round(i, warmup_round)` yields one sample per pass.  It does not keep them: the runner does.
"""
import os

from . import procfs
from .plan import round_order


def latency_summary(lat_ns):
    import numpy as np

    us = lat_ns.astype(np.float64) / 1e3
    p50, p90, p99 = np.percentile(us, [50, 90, 99])
    # Quarter-octave histogram of ns: compact enough to keep per pass, fine enough to plot.
    bins = np.floor(np.log2(np.maximum(lat_ns, 1).astype(np.float64)) * 4).astype(int)
    keys, counts = np.unique(bins, return_counts=True)
    return {"lat_p50_us": float(p50), "lat_p90_us": float(p90), "lat_p99_us": float(p99),
            "lat_max_us": float(us.max()), "lat_hist": {int(k): int(c) for k, c in zip(keys, counts)}}


BYSTANDER_BUSY = 0.9  # share of a pass a bystander must run for the pass to count as "with bystanders"


class Session:
    def __init__(self, plan):
        self.plan = plan
        self.gpu = None
        self.bystanders = None
        self.counters = None
        self.ceiling = None
        self._c_plan = None
        self._saved_affinity = None

    def __enter__(self):
        from . import core
        from .counters import Counters

        plan = self.plan
        self._saved_affinity = os.sched_getaffinity(0)
        try:
            self._c_plan = plan.to_c()
            core.pin_self(plan.cpu)
            self.counters = Counters(procfs.online_cpus(), "off" if plan.warmup < 1 else plan.trace)
            if plan.gpu is not None:
                from . import gpu

                self.gpu = gpu.open_toucher(plan.gpu)
            self.bystanders = core.Bystanders(plan.bystander_cpus)
            if plan.ceiling is not None:
                from .ceiling import Ceiling

                self.ceiling = Ceiling().__enter__()
                self.ceiling.set(plan.ceiling)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def round(self, round_index, warmup_round):
        """Map a fresh region and yield one sample per pass of this round."""
        from . import core

        plan, counters = self.plan, self.counters
        with core.Region(plan.size, plan.align, plan.pages) as region:
            dirty = False
            for position, (rep, warm, stride) in enumerate(round_order(plan, round_index, self._c_plan)):
                if dirty:
                    region.restore(plan.retouch)
                gpu_ns = self.gpu.touch(region) if self.gpu else None
                traced = warm and counters.can_trace
                if traced:
                    counters.open_trace()
                try:
                    spins0 = self.bystanders.read_spins()
                    before = counters.read(traced)
                    ns, lat = region.timed_pass(stride, plan.latency)
                    after = counters.read(traced)
                    spins1 = self.bystanders.read_spins()
                finally:
                    if traced:
                        counters.close_trace()
                dirty = True
                calls = plan.size // stride
                sample = {"round": round_index, "rep": rep, "order": position, "stride_bytes": stride,
                          "warmup": bool(warm or warmup_round), "ns": int(ns), "seconds": ns / 1e9,
                          "calls": calls, "gbps": plan.size / ns if ns else float("nan"),
                          "us_per_call": ns / 1e3 / calls, "traced": bool(traced)}
                if gpu_ns is not None:
                    sample["gpu_touch_ns"] = int(gpu_ns)
                if spins0:
                    # A bystander that was not running had no live mm on its CPU: those flushes took
                    # no IPI.  Its CPU time over the pass's wall time says for how much of the pass.
                    sample["bystander_spins_min"] = min(b[0] - a[0] for a, b in zip(spins0, spins1))
                    sample["bystander_share"] = min((b[1] - a[1]) / ns if ns else 0.0
                                                    for a, b in zip(spins0, spins1))
                    sample["bystander_idle"] = sample["bystander_share"] < BYSTANDER_BUSY
                sample.update(counters.delta(before, after))
                if lat is not None:
                    sample.update(latency_summary(lat))
                yield sample

    def facts(self):
        """What this session learned that belongs in the result file."""
        out = {"trace_scope": self.counters.trace_scope, "trace_error": self.counters.trace_error}
        if self.gpu:
            out["gpu"] = self.gpu.facts
        return out

    def close(self):
        if self.ceiling:
            self.ceiling.__exit__(None, None, None)
            self.ceiling = None
        if self.bystanders:
            self.bystanders.stop()
            self.bystanders = None
        if self.gpu:
            self.gpu.close()
            self.gpu = None
        if self._saved_affinity is not None:
            os.sched_setaffinity(0, self._saved_affinity)
            self._saved_affinity = None
