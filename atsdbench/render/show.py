"""`atsdbench show`: one file's per-stride summary, over rounds (default) or passes; one block per
cell where the run measured several (csv: one table, the cell and its axis values leading each row)."""
from tabulate import tabulate

from ..analysis import stats
from ..units import format_size

FORMATS = {"text": "simple", "markdown": "github", "csv": None}


def summary_rows(frame, unit="round"):
    """Per stride of one cell's samples (a whole file without cells)."""
    effective = stats.effective_unit(frame, unit)
    rows = []
    for stride in sorted(stats.measured(frame)["stride_bytes"].unique()):
        d = stats.describe(stats.observations(frame, stride, effective))
        us = stats.measured(frame)
        us = us[us["stride_bytes"] == stride]["us_per_call"].median()
        row = {"stride": format_size(int(stride)), "stride_bytes": int(stride), "unit": effective, **d,
               "us_per_call": float(us)}
        row.update(stats.per_call_counters(frame, stride))
        rows.append(row)
    return rows, effective


def render(result, unit="round", fmt="text"):
    """(text, warnings)."""
    from ..data.cells import headings, value_text
    from .tables import counter_cells, flush_expectation

    blocks = []
    for index, heading, spec, frame in headings(result):
        rows, effective = summary_rows(frame, unit)
        host = result.host
        if spec.get("ceiling") is not None:  # this cell ran under its own flush ceiling
            host = {**host, "tlb_single_page_flush_ceiling": spec["ceiling"]}
        blocks.append((index, heading, {"bystanders": result.config.get("bystanders"), **spec}, rows, effective,
                       host))
    warnings = []
    if any(b[4] != unit for b in blocks):
        warnings.append("a stride has a single round: showing passes, so the spread ignores between-round variance")
    all_rows = [r for b in blocks for r in b[3]]
    counter_titles, counters = counter_cells(all_rows)
    expect = any(flush_expectation(r["stride_bytes"], b[5], b[2]["bystanders"]) for b in blocks for r in b[3])
    per = blocks[0][3][0]["unit"] if blocks[0][3] else unit
    # run prints Median/Min/Max of single passes, show by default of round means: the same words
    # for two different numbers, so here they carry their unit (csv keeps plain names).
    headers = ["Stride", "N", "Min", "Max", "Median", "Mean", "Stddev", "CV%", "us/call"]
    headers += counter_titles + (["expected flush"] if expect else [])
    titles = [f"{h} ({per})" if h in ("Min", "Max", "Median", "Mean") else h for h in headers]

    def body(rows, host, bystanders):
        out = []
        for r in rows:
            line = [r["stride"], r["n"], f"{r['min']:.3f}", f"{r['max']:.3f}", f"{r['median']:.3f}",
                    f"{r['mean']:.3f}", f"{r['stddev']:.3f}", f"{r['cv']:.1f}", f"{r['us_per_call']:.3f}"]
            line += counters(r)
            if expect:
                line.append(flush_expectation(r["stride_bytes"], host, bystanders) or "")
            out.append(line)
        return out

    axes = list(result.config.get("axes") or {}) if blocks[0][0] is not None else []
    if fmt == "csv":
        lead = ["cell"] + axes if blocks[0][0] is not None else []
        lines = [",".join(lead + [h.lower().replace("%", "_pct").replace("/", "_per_") for h in headers])]
        for index, _, spec, rows, _, host in blocks:
            first = [] if index is None else [str(index)] + [value_text(spec.get(a)) for a in axes]
            lines += [",".join(first + [str(c) for c in row]) for row in body(rows, host, spec["bystanders"])]
        return "\n".join(lines), warnings
    out = []
    for index, heading, spec, rows, _, host in blocks:
        table = tabulate(body(rows, host, spec["bystanders"]), headers=titles, tablefmt=FORMATS[fmt], disable_numparse=True)
        if heading is not None:  # markdown: a paragraph of its own, or the table would continue it
            table = f"**{heading}**\n\n{table}" if fmt == "markdown" else f"{heading}\n{table}"
        out.append(table)
    unit_note = (f"GB/s per round (N = rounds): each value is one round's mean rate; run's Median, Min and Max "
                 f"are of single passes (show --unit pass)" if per == "round" else
                 "GB/s per pass (N = passes): Median, Min and Max as run prints them")
    return "\n\n".join(out) + "\n" + unit_note, warnings
