"""The plan: what to measure, checked whole before anything runs.

A thin layer over the C plan (csrc/atsd_plan.c, atsd_check.c, atsd_schedule.c), which the standalone
`atsd` uses too: options are parsed, checked against the host and ordered there, once for both front
ends, with the same words when a plan is refused.  This module turns Python values into option text
and the checked C plan into a plain `Plan` that result files record.  Why a run is rounds of passes
with strides shuffled by the seed: docs/methodology.md."""
import dataclasses
import itertools

from ..data.cells import AXES
from ..errors import UsageError

MIN_ALIGN = 2 << 20
PAGES = ("base", "thp", "hugetlb")
TRACE = ("auto", "on", "off")
TASKS = ("threads", "processes")


def _axis_text(name, v):
    """An axis value as the C plan reads it back: None is the word that option takes for it."""
    return ("kernel" if name == "ceiling" else "none") if v is None else str(v)


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
    op: str = "mprotect"
    workload: str = None
    threads: int = 1
    tasks: str = "threads"
    thread_cpus: list = dataclasses.field(default_factory=list)
    bystanders: int = 0
    cpu: int = 0
    cpu_reason: str = None
    bystander_cpus: list = dataclasses.field(default_factory=list)
    latency: bool = False
    retouch: bool = True
    trace: str = "auto"
    label: str = None
    seed: int = 0
    gpu: int = None
    device: str = "none"
    ceiling: int = None
    until: float = None
    confidence: float = 95.0
    max_time: float = None
    max_rounds: int = None
    spread: float = 0.0
    runs: int = 1
    placements: int = 1
    mem_node: int = None
    gap: float = 20.0
    axes: dict = dataclasses.field(default_factory=dict)
    region_align: int = None
    # run --verify: verify passes after each cell's round, checked from every CPU in verify_cpus (the
    # check's: every allowed CPU).  The default is the C plan's (auto: off, on for a --workload where
    # another CPU is allowed, since will-it-scale asserts its read-back: csrc/atsd_plan.c's check).
    verify: bool = False
    verify_cpus: list = dataclasses.field(default_factory=list)

    @property
    def align(self):
        """The region's alignment, decided by the C check (THP size, hugetlb size, largest stride);
        plans made before it was stored fall back to 2M or the largest stride."""
        return self.region_align or max(MIN_ALIGN, max(self.strides))

    @property
    def passes_per_round(self):
        return (self.reps + self.warmup) * len(self.strides)

    def config(self):
        out = dataclasses.asdict(self)
        if self.device == "none" and "device" not in self.axes:  # files without a device say nothing of one
            del out["device"]
        if not self.axes:
            del out["axes"]
        else:
            out["cells"] = [{name: cell[name] for name in self.axes} for cell in self.cells]
        return out

    @property
    def cells(self):
        """Every configuration the run measures, in cell order: dicts of op, threads, bystanders, pages, gpu,
        device, ceiling.  One cell when the plan has no axes."""
        lists = [self.axes.get(name, [getattr(self, name)]) for name in AXES]
        return [dict(zip(AXES, combo)) for combo in itertools.product(*lists)]

    def to_c(self):
        """The C plan of these values (already checked), for the round and cell order."""
        from . import core

        p = core.plan_new()
        values = {**self.config(), **{name: [_axis_text(name, v) for v in vs] for name, vs in self.axes.items()}}
        values.pop("cells", None)
        values.pop("axes", None)
        for name, value in _option_text(values).items():
            if name not in ("cpu", "cpu-reason", "bystander-cpus", "thread-cpus", "region-align", "verify-cpus"):
                core.plan_set(p, name, value)
        p.cpu = self.cpu
        p.align = self.align
        return p


def _text(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _option_text(options):
    """Python keywords (warmup_rounds=1, retouch=False, strides=[65536]) -> C field text; None = default."""
    return {name.replace("_", "-"): _text(value) for name, value in options.items() if value is not None}


def host_facts(meminfo=None, affinity=None, page_size=None, quiet=(), cores=None):
    """The C host facts: probed from this system, with any given fact put in its place (tests):
    affinity a set of CPUs, quiet the isolated/nohz_full ones among them, cores {cpu: core id}."""
    from . import core

    h = core.host_probe()
    if page_size is not None:
        h.page_size = page_size
        h.thp_size = 0
    if meminfo is not None:
        h.hugepage_size = meminfo.get("Hugepagesize") or 0
        h.mem_available = meminfo.get("MemAvailable", -1)
        h.hugepages_free = meminfo.get("HugePages_Free", -1)
    if affinity is not None:
        cpus = sorted(affinity)
        h.naffinity = len(cpus)
        h.affinity[0:len(cpus)] = cpus
        h.core[0:len(cpus)] = [-1] * len(cpus)
        h.quiet[0:len(cpus)] = [int(c in quiet) for c in cpus]
        h.cpu0_core = -1
        if cores is not None:
            h.core[0:len(cpus)] = [cores.get(c, -1) for c in cpus]
            h.cpu0_core = cores.get(0, -1)
    return h


def make_plan(meminfo=None, affinity=None, page_size=None, quiet=(), cores=None, node_root=None, **options):
    """Check every option against this host (or the facts given; node_root a sysfs node directory);
    UsageError with one sentence."""
    from . import core

    p = core.plan_new()
    for field, value in _option_text(options).items():
        if field in ("bystander-cpus", "thread-cpus", "verify-cpus"):
            give = "verify=True" if field == "verify-cpus" else f"{field.split('-')[0]}s=N"
            raise UsageError(f"{field.replace('-', '_')} is chosen by the plan check; give {give}")
        core.plan_set(p, field, value)
    core.plan_check(p, host_facts(meminfo, affinity, page_size, quiet, cores))
    if options.get("runs") is not None and p.runs < 2 and p.until > 0:
        # --runs 1 is the default, so the C check cannot tell it was typed; typed, it asks for sub-runs
        raise UsageError(f"--until with --runs {p.runs}: a CI over sub-runs needs two: give --runs 2+ (or leave it "
                         "out)")
    if p.mem_node >= 0:
        from .host import memory_nodes
        from ..units import format_cpulist

        nodes = memory_nodes(node_root or "/sys/devices/system/node")
        if p.mem_node not in (nodes or [0]):  # no sysfs node directory: one node, 0
            raise UsageError(f"--mem-node {p.mem_node}: no such NUMA node with memory (nodes with memory: "
                             f"{format_cpulist(nodes) if nodes else '0'})")
    label = core.ffi.string(p.label).decode("utf-8", "replace") if p.label_set else None
    lists = {"workload": [core.workload_name(k) for k in p.workloads[0:p.nworkloads]] or [None],
             "op": [core.op_name(k) for k in p.ops[0:p.nops]], "threads": list(p.threads[0:p.nthreads]),
             "bystanders": list(p.bystanders[0:p.nbystanders]), "pages": [PAGES[k] for k in p.pages[0:p.npages]],
             "gpu": [None if g < 0 else g for g in p.gpu[0:p.ngpu]],
             "device": [core.device_name(k) for k in p.devices[0:p.ndevices]],
             "ceiling": [None if c < 0 else c for c in p.ceiling[0:p.nceiling]]}
    axes = {name: values for name, values in lists.items() if len(values) > 1}
    return Plan(size=p.size, strides=list(p.strides[0:p.nstrides]), rounds=p.rounds, reps=p.reps,
                warmup=p.warmup, warmup_rounds=p.warmup_rounds, processes=bool(p.processes),
                pages=PAGES[p.pages[0]], op=lists["op"][0], workload=lists["workload"][0], threads=p.threads[0], tasks=TASKS[p.tasks],
                thread_cpus=list(p.thread_cpus[0:p.nthread_cpus]), bystanders=p.bystanders[0], cpu=p.cpu,
                cpu_reason=core.ffi.string(p.cpu_reason).decode() or None,
                bystander_cpus=list(p.bystander_cpus[0:p.nbystander_cpus]), latency=bool(p.latency),
                retouch=bool(p.retouch), trace=TRACE[p.trace], label=label, seed=int(p.seed),
                gpu=None if p.gpu[0] < 0 else p.gpu[0], device=lists["device"][0], ceiling=None if p.ceiling[0] < 0 else p.ceiling[0],
                until=p.until or None, confidence=p.confidence, max_time=p.max_time or None,
                max_rounds=p.max_rounds or None, spread=p.spread, runs=p.runs, placements=p.placements, mem_node=None if p.mem_node < 0 else p.mem_node, gap=p.gap, axes=axes,
                region_align=p.align, verify=bool(p.verify), verify_cpus=list(p.verify_cpus[0:p.nverify_cpus]))


def round_order(plan, round_index, c_plan=None, cell=0):
    """[(rep, warmup, stride), ...] for one round (of one cell): repetition-major, strides shuffled per
    repetition.  Each cell of a round has its own order; with one cell it is the round's."""
    from . import core

    strides = core.round_order(c_plan or plan.to_c(), round_index * len(plan.cells) + cell)
    n = len(plan.strides)
    return [(i // n, i // n < plan.warmup, s) for i, s in enumerate(strides)]


def cell_order(plan, round_index, c_plan=None):
    """The cells of one round, shuffled by the seed (round-specific)."""
    from . import core

    return core.cell_order(c_plan or plan.to_c(), round_index)


def next_sub_run_start(previous_start, gap, now):
    """When the next sub-run (--runs) starts: `gap` after the one before started, or now where that
    has passed.  From the one before's start, not k x gap from the first: after a sub-run that ran
    long, a fixed schedule would start the next one sooner than the gap."""
    from . import core

    return core.sub_run_start(previous_start, gap, now)


def round_kinds(plan, run=0):
    """(round index, is a warm-up round) for every round of one sub-run (--runs): each has its own
    warm-up rounds, and its rounds are numbered after the previous sub-run's, so every round of the
    file has its own index (and stride order)."""
    per_run = plan.warmup_rounds + plan.rounds
    return [(run * per_run + i, i < plan.warmup_rounds) for i in range(per_run)]


def options_given(args):
    """The plan's options as given on the command line (None: the option table's default)."""
    from . import core

    fields = {(o["field"] or o["name"]).replace("-", "_") for o in core.options() if o["run"] and o["field"]}
    return {name: getattr(args, name) for name in fields if getattr(args, name, None) is not None}


def refuse_extra_passes(plan, args):
    """run's --breakdown and --profile add passes of each cell's --op: a workload cell's would be
    mprotect's, shown under the workload's name.  Refused (run, campaign init's check of run options)."""
    extra = [o for o in ("breakdown", "profile") if getattr(args, o, None)]
    if extra and any(c.get("workload") for c in plan.cells):
        raise UsageError(f"{'--' + extra[0]} adds passes of an --op; --workload's loop has none: give one of them")
