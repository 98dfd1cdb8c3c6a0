"""A run with a threads axis read as a scaling sweep: per stride and thread count, the aggregate rate,
the rate per task, the efficiency against linear scaling from the smallest thread count N0 (paired
by round), the spread of the threads' loop times and the share of disturbed passes.

Efficiency of N tasks = rate(N) / (N / N0 x rate(N0)); its CI is paired t's on log rates
(paired.paired_t on the N0 round means scaled by N/N0, so p tests "linear" itself), covering this
run's own noise only (docs/workloads.md#scaling).  Generic over the rate: rate_of(config) names the
sample column and its unit ("gbps", "GB/s" unless the config's `rate` says otherwise), so a
workload whose rate is loops/s reads the same way."""
import dataclasses
import math

import numpy as np

from . import noise, paired, stats
from ..data import cells
from ..data.columns import known, numbers

AXIS = "threads"
DEFAULT_RATE = ("gbps", "GB/s", "GB/s = 10^9 bytes/s")

WORKLOAD_RATE = ("loops_per_s", "loops/s", "loops/s = will-it-scale's loops per second")


def rate_of(config):
    """(sample column, unit, definition) of a result's rate: config `rate` where it names one (a
    workload's loops/s), else GB/s in `gbps`."""
    r = config.get("rate") if isinstance(config, dict) else None
    if not isinstance(r, dict) or not isinstance(r.get("column"), str):
        # run --workload (atsd's too): will-it-scale's rate, whatever wrote the file
        return WORKLOAD_RATE if isinstance(config, dict) and config.get("workload") else DEFAULT_RATE
    unit = r.get("unit") if isinstance(r.get("unit"), str) else r["column"]
    definition = r.get("definition") if isinstance(r.get("definition"), str) else unit
    return r["column"], unit, definition


def thread_values(result):
    """The values of the result's threads axis, [] where it has none (or a single value)."""
    values = (result.config.get("axes") or {}).get(AXIS) or []
    ok = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 1]
    return values if len(set(ok)) >= 2 and len(ok) == len(values) else []


def has_sweep(result):
    """A file whose cells are a sweep of thread counts (two or more): show and plot read it as one."""
    return bool(thread_values(result)) and "cell" in result.table


def require_sweep(result):
    """has_sweep, or the usage error that show --scaling and the Python API give a result without one."""
    if not has_sweep(result):
        from ..errors import UsageError

        raise UsageError(f"{result.name}: no threads axis of 2 or more thread counts (--threads 1,2,4 measures "
                         "one)")


@dataclasses.dataclass
class Row:
    group: str  # the other axes' values ("bystanders=1"), "" where threads is the only axis
    stride_bytes: int
    threads: int
    cell: int
    rounds: int  # round means this cell has (N of its rate)
    rate: float  # geometric mean of its round means
    rate_low: float  # its own t interval (unpaired, of its round means)
    rate_high: float
    per_task: float  # rate / threads
    reference: int  # N0: the thread count efficiency is linear from
    pairs: int  # rounds measured in both this cell and the reference's (N of the efficiency)
    efficiency: float  # percent; 100 for the reference row itself
    eff_low: float
    eff_high: float
    p_linear: float  # paired t's p of efficiency = 100% (nan for the reference row, or too few pairs)
    spread_pct: float  # median over passes of slowest / fastest thread's loop time - 1, percent (nan: 1 task)
    disturbed: float  # share of measured passes disturbed, percent (nan: not recorded)
    cpu_share: float  # median over passes of the least CPU share of any thread, percent (nan: not recorded)
    passes: int


@dataclasses.dataclass
class Scaling:
    rows: list
    column: str
    unit: str
    definition: str
    tasks: str  # "threads" or "processes"
    confidence: float
    op: str

    @property
    def rounds(self):
        return sorted({r.rounds for r in self.rows})

    @property
    def references(self):
        return sorted({r.reference for r in self.rows})


def _values_by_round(rows, column):
    """{(run, round): mean of that round's measured passes}: a --runs file numbers its rounds per sub-run."""
    keys = [numbers(rows, k) for k in (["run", "round"] if "run" in rows else ["round"])]
    found, means = stats.mean_by_rows(keys, numbers(rows, column))  # a pass without its run or round: in none
    return {tuple(int(k) for k in key): float(v) for key, v in zip(found.tolist(), means.tolist())
            if math.isfinite(v) and v > 0}


def _median(values):
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if len(values) else math.nan


def _spread(rows):
    lo, hi = numbers(rows, "thread_ns_min"), numbers(rows, "thread_ns_max")
    ok = (lo > 0) & ~np.isnan(hi)
    return _median(((hi[ok] / lo[ok]) - 1) * 100)


def _disturbed(rows):
    if "disturbed" not in rows:
        return math.nan
    flags = rows["disturbed"][known(rows["disturbed"])]
    return float(flags.astype(bool).mean() * 100) if len(flags) else math.nan


def _own_interval(values, confidence):
    logs = np.log(np.asarray(values, dtype=float))
    centre = float(np.exp(logs.mean())) if len(logs) else math.nan
    if len(logs) < 2:
        return centre, math.nan, math.nan
    se = logs.std(ddof=1) / math.sqrt(len(logs))
    low, high, _ = stats.t_bounds(logs.mean(), se, len(logs) - 1, confidence)
    return centre, float(np.exp(low)), float(np.exp(high))


def groups(result):
    """[(other axes' label, {threads: cell index})]: the cells of each setting of the other axes,
    by thread count (a repeated thread count: its first cell)."""
    axes = result.config.get("axes") or {}
    values = list(axes.get(AXIS) or [])
    others = [a for a in axes if a != AXIS]
    out = {}
    for index, pos in cells.positions(result.config).items():
        if AXIS not in pos or not all(a in pos for a in others):
            continue
        key = tuple(pos[a] for a in others)
        out.setdefault(key, {}).setdefault(values[pos[AXIS]], index)
    label = {key: " ".join(f"{a}={cells.value_text(axes[a][p])}" for a, p in zip(others, key)) for key in out}
    return [(label[key], dict(sorted(out[key].items()))) for key in sorted(out)]


def analyse(result, confidence=95.0):
    """The scaling rows of a result with a threads sweep (has_sweep), every group and stride."""
    column, unit, definition = rate_of(result.config)
    table = stats.measured(result.table)
    strides = cells.present(table["stride_bytes"])
    rows = []
    for group, members in groups(result):
        present = {n: c for n, c in members.items() if (table["cell"] == c).any()}
        if not present:
            continue
        reference = min(present)
        for stride in strides:
            of = {n: table.rows((table["cell"] == c) & (table["stride_bytes"] == stride)) for n, c in present.items()}
            ref_rounds = _values_by_round(of[reference], column)
            for n, c in present.items():
                mine = of[n]
                if not len(mine):
                    continue
                rounds = _values_by_round(mine, column)
                rate, low, high = _own_interval(list(rounds.values()), confidence)
                common = sorted(set(rounds) & set(ref_rounds))
                eff = dict(efficiency=math.nan, eff_low=math.nan, eff_high=math.nan, p_linear=math.nan)
                if n == reference:
                    eff.update(efficiency=100.0)
                elif len(common) >= 2:
                    k = n / reference  # linear: the rate times N/N0
                    t = paired.paired_t(np.array([ref_rounds[r] * k for r in common]),
                                       np.array([rounds[r] for r in common]), confidence)
                    eff.update(efficiency=float(t["ratio"]) * 100, p_linear=float(t["p"]))
                    low_, high_ = float(t["low"]), float(t["high"])
                    # compare's rule for an interval that rules nothing out ("[0, 96724]%" from two
                    # rounds): no interval printed (n/a), the point estimate kept
                    if not noise.unreadable(math.log(high_ / low_) if low_ > 0 else math.inf, len(common) - 1):
                        eff.update(eff_low=low_ * 100, eff_high=high_ * 100)
                elif len(common) == 1:  # one pair: the ratio, no interval
                    r = common[0]
                    eff.update(efficiency=rounds[r] / (ref_rounds[r] * n / reference) * 100)
                rows.append(Row(group, stride, n, c, len(rounds), rate, low, high, rate / n if rate else math.nan,
                                reference, len(common) if n != reference else len(rounds), **eff,
                                spread_pct=_spread(mine), disturbed=_disturbed(mine),
                                cpu_share=_median(numbers(mine, "cpu_share") * 100),
                                passes=len(mine)))
    return Scaling(rows, column, unit, definition, result.config.get("tasks") or "threads", confidence,
                   cells.op_of(result.config))


def efficiency(speedup_pct, threads, reference):
    """Linear-scaling efficiency (percent) of a speedup of `threads` tasks over `reference` tasks:
    (1 + speedup) / (threads / reference).  The same map takes a speedup's CI bounds to efficiency's."""
    if speedup_pct is None or (isinstance(speedup_pct, float) and not math.isfinite(speedup_pct)):
        return math.nan
    return (1 + speedup_pct / 100) / (threads / reference) * 100
