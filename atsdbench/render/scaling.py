"""Scaling tables: a threads sweep read by thread count (analysis/scaling.py).

show: one row per (stride, thread count) of one file: the aggregate rate, per task, the efficiency
against linear from the smallest thread count with its paired CI, the spread of the threads' loop
times, the disturbed share and the least thread's CPU share.  compare's scaling layouts (compare
--by threads, two files of thread-count cells) are in render/compare.py, which imports this one.

The rate's unit is the result's (analysis/scaling.rate_of): GB/s by default, loops/s for a workload
that says so."""
from ..units import format_size
from . import layout, numbers
from .notes import SCALING, see

FORMATS = {"text": "simple", "markdown": "github"}


rate = numbers.unit_rate  # GB/s as every table prints it, a workload's loops/s whole


def share(v):
    return numbers.pct(v, 0, sign=False)


def tasks_title(tasks):
    return "Processes" if tasks == "processes" else "Threads"


# ---- show ----

def rate_of_all_tasks(definition, rounds):
    """Above show's scaling table: the rate, its unit and N."""
    return f"scaling: {definition} of all tasks, geometric mean of round means; N = {rounds} rounds a cell"


def efficiency_paired_by_round(references, confidence):
    """What efficiency is and what its CI leaves out (drift between sessions, boots)."""
    return (f"efficiency = rate / (N/N0 x rate at N0), N0 = {references}; {confidence} CI paired by round: "
            "this run, not sessions")


# What the last columns of show's scaling table are, and where the long story is.
SPREAD_AND_DISTURBED = see("spread: slowest/fastest task's loop - 1; disturbed: a task off its CPU", SCALING)


def show_rows(sc):
    """(headers, rows of text by group) and (csv names, csv rows) of show's scaling table.  The least
    task's CPU share is in csv only (the text table stays within notes.WIDTH)."""
    ci = f"{numbers.level(sc.confidence)} CI"
    headers = ["Stride", tasks_title(sc.tasks), sc.unit, "per task", "Efficiency", ci, "Spread", "Disturbed"]
    names = ["cell", "stride", "tasks", "rate", "rate_per_task", "efficiency_pct", "efficiency_ci_low_pct",
             "efficiency_ci_high_pct", "spread_pct", "disturbed_pct", "cpu_share_pct", "rounds", "pairs",
             "reference", "p_linear"]
    blocks, csv = {}, []
    for r in sorted(sc.rows, key=lambda r: (r.group, r.stride_bytes, r.threads)):
        reference = r.threads == r.reference
        ci_text = "reference" if reference else numbers.NA if numbers.missing(r.eff_low) else \
            numbers.interval(r.eff_low, r.eff_high, lambda v: numbers.fixed(v, 0)) + "%"
        blocks.setdefault(r.group, []).append(
            [format_size(r.stride_bytes), str(r.threads), rate(r.rate), rate(r.per_task), share(r.efficiency),
             ci_text, numbers.pct(r.spread_pct, 1, sign=False) if r.threads > 1 else "-", share(r.disturbed)])
        csv.append(dict(zip(names, [r.group, format_size(r.stride_bytes), r.threads, r.rate, r.per_task,
                                    r.efficiency, r.eff_low, r.eff_high, r.spread_pct if r.threads > 1 else None,
                                    r.disturbed, r.cpu_share, r.rounds, r.pairs, r.reference, r.p_linear])))
    return headers, blocks, names, csv


def heading(sc):
    """The lines above show's scaling table: the rate's unit and N; what efficiency is and what its CI
    covers; what spread and disturbed are (with the long story's anchor)."""
    low, high = min(sc.rounds, default=0), max(sc.rounds, default=0)
    rounds = str(low) if low == high else f"{low}-{high}"
    return [rate_of_all_tasks(sc.definition, rounds),
            efficiency_paired_by_round(", ".join(map(str, sc.references)), numbers.level(sc.confidence)),
            SPREAD_AND_DISTURBED]


def show_table(sc, fmt="text"):
    """show's scaling table with its heading, as text, markdown (a block per setting of the other
    axes, headed by it) or csv (one table, the numbers unrounded)."""
    headers, blocks, names, csv = show_rows(sc)
    if fmt == "csv":
        return numbers.csv_text(names, csv)
    out = []
    for group, body in blocks.items():
        table = layout.fitted(body, headers, FORMATS[fmt])
        if group:
            table = f"**{group}**\n\n{table}" if fmt == "markdown" else f"{group}\n{table}"
        out.append(table)
    head = "\n".join(heading(sc))
    return head + ("\n\n" if fmt == "markdown" else "\n") + "\n\n".join(out)
