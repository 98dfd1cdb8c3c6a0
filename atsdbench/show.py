"""`atsdbench show`: one file's per-stride summary, over rounds (default) or passes."""
from tabulate import tabulate

from . import stats
from .units import format_size

FORMATS = {"text": "simple", "markdown": "github", "csv": None}


def summary_rows(result, unit="round"):
    frame = result.samples
    effective = stats.effective_unit(frame, unit)
    warnings = []
    if effective != unit:
        warnings.append("a stride has a single round: showing passes, so the spread ignores between-round variance")
    rows = []
    for stride in sorted(stats.measured(frame)["stride_bytes"].unique()):
        d = stats.describe(stats.observations(frame, stride, effective))
        us = stats.measured(frame)
        us = us[us["stride_bytes"] == stride]["us_per_call"].median()
        row = {"stride": format_size(int(stride)), "stride_bytes": int(stride), "unit": effective, **d,
               "us_per_call": float(us)}
        row.update(stats.per_call_counters(frame, stride))
        rows.append(row)
    return rows, warnings


def render(result, unit="round", fmt="text"):
    from .report import counter_cells, flush_expectation

    rows, warnings = summary_rows(result, unit)
    counter_titles, counters = counter_cells(rows)
    expect = any(flush_expectation(r["stride_bytes"], result.host) for r in rows)
    headers = ["Stride", "N", "Min", "Max", "Median", "Mean", "Stddev", "CV%", "us/call"]
    headers += counter_titles + (["expected flush"] if expect else [])
    body = []
    for r in rows:
        line = [r["stride"], r["n"], f"{r['min']:.3f}", f"{r['max']:.3f}", f"{r['median']:.3f}", f"{r['mean']:.3f}",
                f"{r['stddev']:.3f}", f"{r['cv']:.1f}", f"{r['us_per_call']:.3f}"]
        line += counters(r)
        if expect:
            line.append(flush_expectation(r["stride_bytes"], result.host) or "")
        body.append(line)
    if fmt == "csv":
        lines = [",".join(h.lower().replace("%", "_pct").replace("/", "_per_") for h in headers)]
        lines += [",".join(str(c) for c in row) for row in body]
        return "\n".join(lines), warnings
    per = rows[0]["unit"] if rows else unit
    unit_note = f"GB/s per {per} (N = {'rounds' if per == 'round' else 'passes'})"
    return tabulate(body, headers=headers, tablefmt=FORMATS[fmt], disable_numparse=True) + "\n" + unit_note, warnings
