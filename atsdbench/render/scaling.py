"""Scaling tables: a threads sweep read by thread count (analysis/scaling.py).

show: one row per (stride, thread count) of one file: the aggregate rate, per task, the efficiency
against linear from the smallest thread count with its paired CI, the spread of the threads' loop
times, the disturbed share and the least thread's CPU share.  compare --by threads: compare_by's rows
in the same long layout (a row per thread count, at most text.WIDTH columns whatever the number of
thread counts), efficiency from the paired speedup.  compare of two files with thread-count cells:
compare's rows ordered by stride and thread count, the thread count a column of its own.

The rate's unit is the result's (analysis/scaling.rate_of): GB/s by default, loops/s for a workload
that says so."""
import math

from tabulate import tabulate

from ..units import format_size
from . import numbers, text

FORMATS = {"text": "simple", "markdown": "github"}


def rate(v):
    """A rate in its unit: 2 decimals (GB/s as every table), whole numbers from 10^4 (loops/s)."""
    if numbers.missing(v):
        return numbers.NA
    return f"{v:.0f}" if abs(v) >= 1e4 else numbers.fixed(v, 2)


def _share(v):
    return numbers.pct(v, 0, sign=False)


def _tasks_title(tasks):
    return "Processes" if tasks == "processes" else "Threads"


# ---- show ----

def show_rows(sc):
    """(headers, rows of text by group) and (csv names, csv rows) of show's scaling table.  The least
    task's CPU share is in csv and plot only (the text table stays within text.WIDTH)."""
    ci = f"{numbers.level(sc.confidence)} CI"
    headers = ["Stride", _tasks_title(sc.tasks), sc.unit, "per task", "Efficiency", ci, "Spread", "Disturbed"]
    names = ["cell", "stride", "tasks", "rate", "rate_per_task", "efficiency_pct", "efficiency_ci_low_pct",
             "efficiency_ci_high_pct", "spread_pct", "disturbed_pct", "cpu_share_pct", "rounds", "pairs",
             "reference", "p_linear"]
    blocks, csv = {}, []
    for r in sorted(sc.rows, key=lambda r: (r.group, r.stride_bytes, r.threads)):
        reference = r.threads == r.reference
        ci_text = "reference" if reference else numbers.NA if numbers.missing(r.eff_low) else \
            numbers.interval(r.eff_low, r.eff_high, lambda v: f"{v:.0f}") + "%"
        blocks.setdefault(r.group, []).append(
            [format_size(r.stride_bytes), str(r.threads), rate(r.rate), rate(r.per_task), _share(r.efficiency),
             ci_text, numbers.pct(r.spread_pct, 1, sign=False) if r.threads > 1 else "-", _share(r.disturbed)])
        csv.append(dict(zip(names, [r.group, format_size(r.stride_bytes), r.threads, r.rate, r.per_task,
                                    r.efficiency, r.eff_low, r.eff_high, r.spread_pct if r.threads > 1 else None,
                                    r.disturbed, r.cpu_share, r.rounds, r.pairs, r.reference, r.p_linear])))
    return headers, blocks, names, csv


def heading(sc):
    """The lines above show's scaling table: the rate's unit and N; what efficiency is and what its CI
    covers; what spread and disturbed are (with the long story's anchor)."""
    low, high = min(sc.rounds, default=0), max(sc.rounds, default=0)
    rounds = str(low) if low == high else f"{low}-{high}"
    return [text.scaling_rate(sc.definition, rounds),
            text.scaling_efficiency(", ".join(map(str, sc.references)), numbers.level(sc.confidence)),
            text.SCALING_COLUMNS]


def show_table(sc, fmt="text"):
    """show's scaling table with its heading, as text, markdown (a block per setting of the other
    axes, headed by it) or csv (one table, the numbers unrounded)."""
    headers, blocks, names, csv = show_rows(sc)
    if fmt == "csv":
        return numbers.csv_text(names, csv)
    out = []
    for group, body in blocks.items():
        table = tabulate(body, headers=headers, tablefmt=FORMATS[fmt], disable_numparse=True)
        if group:
            table = f"**{group}**\n\n{table}" if fmt == "markdown" else f"{group}\n{table}"
        out.append(table)
    head = "\n".join(heading(sc))
    return head + ("\n\n" if fmt == "markdown" else "\n") + "\n\n".join(out)


# ---- compare ----

def by_threads_table(cmp, tablefmt):
    """compare FILE --by threads, a row per thread count: the base cell's row (the reference of the
    efficiency), then each other value's rate, per task, speedup against the base, efficiency
    (1 + speedup) / (N / N0) and its CI (the paired speedup's, mapped the same way), verdict."""
    from ..analysis.scaling import efficiency
    from .compare import verdict

    values = cmp.by_values
    unit = cmp.rate[1]
    grouped = any(r["cell"] for r in cmp.rows)
    ci = f"{numbers.level(cmp.confidence)} CI"
    headers = (["Cell"] if grouped else []) + ["Stride", _tasks_title(cmp.tasks), unit, "per task",
                                               "Speedup", "Efficiency", ci, "Verdict"]
    body = []
    seen = set()
    n0 = values[0]
    for r in cmp.rows:
        lead = [r["cell"]] if grouped else []
        key = (r["cell"], r["stride_bytes"])
        if key not in seen:
            seen.add(key)
            body.append(lead + [format_size(r["stride_bytes"]), str(n0), rate(r["base_gbps"]),
                                rate(r["base_gbps"] / n0 if not numbers.missing(r["base_gbps"]) else None), "-",
                                "100%", "reference", "-"])
        n = values[cmp.labels.index(r["new_label"])]
        eff = [efficiency(r[k], n, n0) for k in ("speedup_pct", "ci_low_pct", "ci_high_pct")]
        body.append(lead + [format_size(r["stride_bytes"]), str(n), rate(r["new_gbps"]),
                            rate(r["new_gbps"] / n if not numbers.missing(r["new_gbps"]) else None),
                            numbers.pct(r["speedup_pct"]), _share(eff[0]),
                            numbers.NA if numbers.missing(eff[1]) else
                            numbers.interval(eff[1], eff[2], lambda v: f"{v:.0f}") + "%", verdict(r)])
    return tabulate(body, headers=headers, tablefmt=tablefmt, disable_numparse=True)


def by_threads_commit(cmp):
    """compare --by threads --format commit: Stride, thread count, rate, speedup against the first
    count ("n.s." where not proven), efficiency; left-aligned, two spaces apart, no trailing spaces."""
    from ..analysis.scaling import efficiency

    values = cmp.by_values
    grouped = any(r["cell"] for r in cmp.rows)
    body = [(["Cell"] if grouped else []) + ["Stride", _tasks_title(cmp.tasks), cmp.rate[1], "Speedup", "Efficiency"]]
    seen = set()
    for r in cmp.rows:
        lead = [r["cell"]] if grouped else []
        if (r["cell"], r["stride_bytes"]) not in seen:
            seen.add((r["cell"], r["stride_bytes"]))
            body.append(lead + [format_size(r["stride_bytes"]), str(values[0]), rate(r["base_gbps"]), "", "100%"])
        n = values[cmp.labels.index(r["new_label"])]
        speedup = numbers.pct(r["speedup_pct"], 0, sign=False)
        if not (r["significant"] or numbers.missing(r["speedup_pct"])):
            speedup += " emulated" if r["note"] == "emulated (qemu-tcg)" else " n.s."
        body.append(lead + [format_size(r["stride_bytes"]), str(n), rate(r["new_gbps"]), speedup,
                            _share(efficiency(r["speedup_pct"], n, values[0]))])
    widths = [max(len(row[i]) for row in body) for i in range(len(body[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in body)


def threads_of(cmp):
    """{cell name: thread count} where two files' rows are cells of a threads sweep (compare's
    cell_specs), else None: then compare's own layout is kept."""
    specs = getattr(cmp, "cell_specs", None) or {}
    if cmp.paired or len(cmp.labels) != 2 or not specs:
        return None
    found = {name: spec.get("threads") for name, spec in specs.items()}
    if any(not isinstance(found.get(r["cell"]), int) for r in cmp.rows) or len(set(found.values())) < 2:
        return None
    return found


def files_table(cmp, tablefmt, threads):
    """compare of two files whose cells are thread counts: a row per (stride, thread count), the other
    axes' values (if any) in a Cell column; compare's columns otherwise."""
    from .compare import _ci, detects, verdict

    unit = cmp.rate[1]
    specs = cmp.cell_specs
    others = {name: " ".join(f"{a}={v}" for a, v in spec.items() if a != "threads") for name, spec in specs.items()}
    grouped = any(others.get(r["cell"]) for r in cmp.rows)
    ci = f"{numbers.level(cmp.confidence)} CI" if not cmp.withheld else "within-run interval"
    # no verdict (one session a side): no detectable change either, so no column of n/a
    detect = [] if cmp.withheld else ["Detects (80%)"]
    headers = ["Stride", _tasks_title(cmp.tasks)] + (["Cell"] if grouped else []) + [
        f"{cmp.labels[0]} {unit}", f"{cmp.labels[1]} {unit}", "Speedup", ci] + detect + ["Verdict"]
    body = []
    for r in sorted(cmp.rows, key=lambda r: (r["stride_bytes"], others.get(r["cell"], ""), threads[r["cell"]])):
        body.append([format_size(r["stride_bytes"]), str(threads[r["cell"]])]
                    + ([others.get(r["cell"], "")] if grouped else [])
                    + [rate(r["base_gbps"]), rate(r["new_gbps"]), numbers.pct(r["speedup_pct"]), _ci(r)]
                    + ([detects(r)] if detect else []) + [verdict(r)])
    return tabulate(body, headers=headers, tablefmt=tablefmt, disable_numparse=True)


def table(cmp, tablefmt):
    """compare's table in the scaling layout where it applies (compare --by threads, or two files of
    thread-count cells), else None."""
    if cmp.paired and cmp.by == "threads" and getattr(cmp, "by_values", None):
        return by_threads_table(cmp, tablefmt)
    threads = threads_of(cmp)
    if threads:
        return files_table(cmp, tablefmt, threads)
    return None
