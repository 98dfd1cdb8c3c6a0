"""The plan (what to measure, validated before anything runs), its order, and its repetition.

A run is made of rounds.  Each round maps a fresh region, populates it, runs every repetition
(warm-up passes first) and unmaps it; inside a repetition the strides run in an order shuffled
by the seed, so slow drift of the machine does not bias one stride.  The round is the unit of
replication: a fresh allocation moves the rate far more than passes within one allocation do.
"""
import dataclasses
import json
import os
import random
import subprocess
import sys
import time

from . import host
from .errors import UsageError
from .units import format_size, parse_size, parse_sizes

DEFAULT_STRIDES = "64K,1M,2M,4M"
MIN_ALIGN = 2 << 20


@dataclasses.dataclass
class Plan:
    size: int
    strides: list
    rounds: int = 5
    reps: int = 4
    warmup: int = 1
    warmup_rounds: int = 1
    processes: bool = False
    pages: str = "base"
    bystanders: int = 0
    cpu: int = 0
    bystander_cpus: list = dataclasses.field(default_factory=list)
    latency: bool = False
    retouch: bool = True
    trace: str = "auto"
    label: str = None
    seed: int = 0
    gpu: int = None

    @property
    def align(self):
        return max(MIN_ALIGN, max(self.strides))

    def config(self):
        return dataclasses.asdict(self)


def _count(value, name, minimum):
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"--{name} {value!r} is not a whole number") from None
    if n < minimum:
        raise UsageError(f"--{name} must be at least {minimum} (got {n})")
    return n


def make_plan(size="1G", strides=DEFAULT_STRIDES, rounds=5, reps=4, warmup=1, warmup_rounds=1, processes=False,
              pages="base", bystanders=0, cpu=None, latency=False, retouch=True, trace="auto", label=None,
              seed=None, gpu=None, meminfo=None, affinity=None, page_size=None):
    """Validate every option against this host; raise UsageError with one clear sentence."""
    size = size if isinstance(size, int) else parse_size(size, "size")
    if isinstance(strides, str):
        strides = parse_sizes(strides)
    strides = [s if isinstance(s, int) else parse_size(s, "stride") for s in strides]
    if size <= 0 or any(s <= 0 for s in strides):
        raise UsageError("size and strides must be positive")
    strides = sorted(set(strides))
    rounds, reps = _count(rounds, "rounds", 1), _count(reps, "reps", 1)
    warmup, warmup_rounds = _count(warmup, "warmup", 0), _count(warmup_rounds, "warmup-rounds", 0)
    bystanders = _count(bystanders, "bystanders", 0)
    if pages not in ("base", "thp", "hugetlb"):
        raise UsageError(f"--pages must be base, thp or hugetlb (got {pages!r})")
    if trace not in ("auto", "on", "off"):
        raise UsageError(f"trace must be auto, on or off (got {trace!r})")

    page_size = page_size or os.sysconf("SC_PAGE_SIZE")
    meminfo = meminfo if meminfo is not None else host.parse_meminfo(host.read("/proc/meminfo"))
    unit, unit_name = page_size, f"the page size ({format_size(page_size)})"
    if pages == "hugetlb":
        hps = meminfo.get("Hugepagesize")
        if not hps:
            raise UsageError("--pages hugetlb: this kernel has no hugetlb pages (no Hugepagesize in /proc/meminfo)")
        unit, unit_name = hps, f"the huge page size ({format_size(hps)})"
    for s in strides:
        if s % unit:
            raise UsageError(f"stride {format_size(s)} is not a multiple of {unit_name}")
        if s > size:
            raise UsageError(f"stride {format_size(s)} is larger than the size {format_size(size)}")
        if size % s:
            raise UsageError(f"size {format_size(size)} is not a multiple of stride {format_size(s)}")
    if size % unit:
        raise UsageError(f"size {format_size(size)} is not a multiple of {unit_name}")
    if pages == "hugetlb":
        free = meminfo.get("HugePages_Free", 0) * unit
        if free < size:
            need = size // unit
            raise UsageError(f"--pages hugetlb: the pool has {free // unit} free {format_size(unit)} pages, "
                             f"{need} are needed (e.g. echo {need} > /proc/sys/vm/nr_hugepages)")
    else:
        avail = meminfo.get("MemAvailable")
        if avail is not None and size > avail:
            raise UsageError(f"size {format_size(size)} is more than the memory available "
                             f"({avail / 2**30:.1f} GiB MemAvailable)")

    affinity = sorted(affinity if affinity is not None else os.sched_getaffinity(0))
    if cpu is None:
        cpu = affinity[0]
    else:
        cpu = _count(cpu, "cpu", 0)
        if cpu not in affinity:
            raise UsageError(f"--cpu {cpu} is not in this process's CPU affinity {host.format_cpulist(affinity)}")
    others = [c for c in affinity if c != cpu]
    if bystanders > len(others):
        raise UsageError(f"--bystanders {bystanders} needs {bystanders} other CPUs, "
                         f"but the affinity mask has {len(others)} besides CPU {cpu}")
    if trace == "on" and warmup < 1:
        raise UsageError("--trace counts flushes on warm-up passes, so no timed pass is traced: "
                         "it needs --warmup 1 or more")
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    return Plan(size=size, strides=strides, rounds=rounds, reps=reps, warmup=warmup, warmup_rounds=warmup_rounds,
                processes=bool(processes), pages=pages, bystanders=bystanders, cpu=cpu,
                bystander_cpus=others[:bystanders], latency=bool(latency), retouch=bool(retouch), trace=trace,
                label=label, seed=int(seed), gpu=gpu)


_MASK = (1 << 64) - 1


def _splitmix64(state):
    """The stride-order generator, shared with csrc/atsd_main.c: same seed, same order."""
    state = (state + 0x9E3779B97F4A7C15) & _MASK
    z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return state, z ^ (z >> 31)


def round_order(plan, round_index):
    """[(rep, warmup, stride), ...] for one round: repetition-major, strides shuffled per repetition."""
    state = (plan.seed * 1_000_003 + round_index) & _MASK
    order = []
    for rep in range(plan.warmup + plan.reps):
        strides = list(plan.strides)
        for i in range(len(strides) - 1, 0, -1):  # Fisher-Yates
            state, r = _splitmix64(state)
            j = r % (i + 1)
            strides[i], strides[j] = strides[j], strides[i]
        order.extend((rep, rep < plan.warmup, s) for s in strides)
    return order


def latency_summary(lat_ns):
    import numpy as np

    us = lat_ns.astype(np.float64) / 1e3
    p50, p90, p99 = np.percentile(us, [50, 90, 99])
    # Quarter-octave histogram of ns: compact enough to keep per pass, fine enough to plot.
    bins = np.floor(np.log2(np.maximum(lat_ns, 1).astype(np.float64)) * 4).astype(int)
    keys, counts = np.unique(bins, return_counts=True)
    return {"lat_p50_us": float(p50), "lat_p90_us": float(p90), "lat_p99_us": float(p99),
            "lat_max_us": float(us.max()), "lat_hist": {int(k): int(c) for k, c in zip(keys, counts)}}


class Session:
    """Per-process state of a run: pinning, bystanders, counters, the optional GPU toucher."""

    def __init__(self, plan):
        from . import core
        from .counters import Counters

        self.plan = plan
        self.core = core
        self.saved_affinity = os.sched_getaffinity(0)
        self.gpu = None
        self.bystanders = None
        try:
            core.pin_self(plan.cpu)
            self.counters = Counters(host.online_cpus(), "off" if plan.warmup < 1 else plan.trace)
            if plan.gpu is not None:
                from . import gpu

                self.gpu = gpu.open_toucher(plan.gpu)
            self.bystanders = core.Bystanders(plan.bystander_cpus)
        except BaseException:
            self.close()
            raise

    def run_round(self, round_index, warmup_round, out):
        plan, core, counters = self.plan, self.core, self.counters
        with core.Region(plan.size, plan.align, plan.pages) as region:
            dirty = False
            for position, (rep, warm, stride) in enumerate(round_order(plan, round_index)):
                if dirty:
                    region.restore(plan.retouch)
                gpu_ns = self.gpu.touch(region) if self.gpu else None
                traced = warm and counters.can_trace
                if traced:
                    counters.open_trace()
                try:
                    before = counters.read(traced)
                    ns, lat = region.timed_pass(stride, plan.latency)
                    after = counters.read(traced)
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
                sample.update(counters.delta(before, after))
                if lat is not None:
                    sample.update(latency_summary(lat))
                out.append(sample)
                yield sample

    def facts(self):
        """What this session learned that belongs in the result file."""
        out = {"trace_scope": self.counters.trace_scope, "trace_error": self.counters.trace_error}
        if self.gpu:
            out["gpu"] = self.gpu.facts
        return out

    def close(self):
        if self.bystanders:
            self.bystanders.stop()
        if self.gpu:
            self.gpu.close()
        os.sched_setaffinity(0, self.saved_affinity)


def _round_kinds(plan):
    return [(i, i < plan.warmup_rounds) for i in range(plan.warmup_rounds + plan.rounds)]


def run(plan, progress=None):
    """Measure the plan; returns a Result.  Ctrl-C, or an error part-way (mprotect, GPU), keeps every
    finished sample (complete=False, result.error says why).  Set-up errors raise before any pass."""
    from .results import Result

    samples, complete, error, started = [], False, None, time.time()
    host_facts = host.full()
    session_facts = {}
    session = None if plan.processes else Session(plan)
    try:
        if session:
            session_facts.update(session.facts())
        for round_index, warmup_round in _round_kinds(plan):
            rounds = (session.run_round(round_index, warmup_round, samples) if session else
                      _run_round_in_process(plan, round_index, warmup_round, samples, session_facts))
            for sample in rounds:
                if progress:
                    progress(sample)
        complete = True
    except KeyboardInterrupt:
        pass
    except (OSError, UsageError) as e:
        if not samples:
            raise
        error = str(e.strerror if isinstance(e, OSError) and e.strerror else e)
    finally:
        if session:
            session.close()
    config = plan.config()
    config.update({k: v for k, v in session_facts.items() if k != "gpu"})
    if "gpu" in session_facts:
        host_facts["gpu"] = session_facts["gpu"]
    result = Result(host=host_facts, config=config, samples=samples, complete=complete,
                    started=started, finished=time.time())
    result.error = error
    return result


def _run_round_in_process(plan, round_index, warmup_round, out, facts):
    """One round in a fresh Python process (address space and allocator renewed)."""
    request = json.dumps({"plan": plan.config(), "round": round_index, "warmup_round": warmup_round})
    # cwd: the folder holding this very package, so the worker imports it and not a source tree
    # that happens to be the current directory.
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen([sys.executable, "-m", "atsdbench.worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=here)
    try:
        stdout, stderr = proc.communicate(request)
    except KeyboardInterrupt:
        # The worker got the same SIGINT; it writes what it finished and exits.
        stdout, stderr = proc.communicate()
        _collect(stdout, stderr, out)
        raise
    reply = _collect(stdout, stderr, out)
    facts.update(reply.get("facts") or {})
    if reply.get("interrupted"):
        raise KeyboardInterrupt
    return reply["samples"]


def _collect(stdout, stderr, out):
    try:
        reply = json.loads(stdout)
    except ValueError:
        raise OSError(f"round worker failed: {(stderr or 'no output').strip().splitlines()[-1:]}") from None
    out.extend(reply["samples"])
    if reply.get("error"):
        err = reply["error"]
        raise OSError(err.get("errno") or 0, err["message"])
    return reply
