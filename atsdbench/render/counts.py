"""compare's counts (analysis/counts.py) in every --format: with --counts alone (RENDERERS), and in a plain
compare of files that have counts as a section after the rates (appendix: text, markdown, commit) or beside
each rate row (csv columns, a json field)."""
import json

from ..analysis import counts as analysis
from . import layout, numbers
from .notes import COUNTED, see, wrap


# Which passes each count comes from (analysis/stats.per_call_counters) and the rule of "changed"
# (analysis/counts.changed), as every format says them.
FROM_PASSES = "IPIs from timed passes, the others from traced warm-ups"
CHANGED = ("the sides' pass-to-pass ranges do not overlap, or the base is 0 on every pass and the new side "
           f"not (or the reverse, from >= {numbers.general(analysis.NEAR_ZERO)} a call)")


def events_per_call_title(ops):
    """Above compare --counts' table: per call of what the files timed (run --op, a --workload's loop)."""
    return f"kernel invalidation events per {'/'.join(ops)} call ({FROM_PASSES})"


def changed_rule(sizes):
    """Under compare --counts' table: what "changed" and "n/a" mean; sizes: the passes counted, per
    count (_sizes)."""
    return "\n".join([wrap(f"changed: {CHANGED}; {sizes}"),
                      see("n/a: not counted; counters at 0 in every pass left out", COUNTED)])


def emulated_counts_only(names):
    return (f"emulated (qemu-tcg): {', '.join(names)}: the counts are the kernel's own, the rates are not the "
            "hardware's, so no rate gets a verdict")


def _value(x):
    return numbers.general(x)


def _change(r):
    if numbers.missing(r["change"]):
        return numbers.NA
    pct = "" if numbers.missing(r["change_pct"]) else f" ({numbers.pct(r['change_pct'], 0)})"
    return numbers.general(r["change"], sign=True) + pct


def mark(r):
    return "n/a" if r["changed"] is None else "changed" if r["changed"] else "same"


def _has_cells(rows):
    return any(r["cell"] for r in rows)


def _grouped(rows):
    """{(cell, stride, counter): {new side's label: row}}: a counter one new side lacks (or that only
    some sides changed, in the appendix) leaves that side's columns blank, never shifts the others."""
    out = {}
    for r in rows:
        out.setdefault((r["cell"], r["stride_bytes"], r["counter"]), {})[r["new_label"]] = r
    return out


def _first(sides):
    return next(iter(sides.values()))


def _table(cmp, tablefmt):
    rows = cmp.counts
    labels = cmp.labels
    headers = (["Cell"] if _has_cells(rows) else []) + ["Stride", "Counter", f"{labels[0]}"]
    for label in labels[1:]:
        headers += [f"{label}", "Change", "Verdict"]
    body = []
    for (cell, _, counter), sides in _grouped(rows).items():
        r0 = _first(sides)
        line = ([cell] if _has_cells(rows) else []) + [r0["stride"], analysis.name(counter),
                                                       _value(r0["base_per_call"])]
        for label in labels[1:]:
            r = sides.get(label)
            line += [_value(r["new_per_call"]), _change(r), mark(r)] if r else ["", "", ""]
        body.append(line)
    lead = len(headers) - 3 * (len(labels) - 1)
    sides = [list(range(i, i + 3)) for i in range(lead, len(headers), 3)]
    return layout.fitted(body, headers, tablefmt, lead=lead, groups=sides, names=labels[1:])


def _sizes(cmp):
    """The passes each count came from, base/new, counts of the same N together: 'passes (base/new):
    IPIs 20/20; flushes, full flushes 4/4'."""
    per = {}
    for r in cmp.counts:
        per.setdefault(r["counter"], {})[f"{r['n_base']}/{r['n_new']}"] = None
    named = {}
    for counter, sizes in per.items():
        named.setdefault(", ".join(sizes), []).append(analysis.name(counter))
    return "passes (base/new): " + "; ".join(f"{', '.join(names)} {sizes}" for sizes, names in named.items())


def legend(cmp):
    rule = changed_rule(_sizes(cmp))
    return rule + "\n" + emulated_line(cmp) if cmp.emulated else rule


def emulated_line(cmp):
    return wrap(emulated_counts_only(cmp.emulated))


def summary(cmp):
    n = sum(1 for r in cmp.counts if r["changed"])
    return f"{n} of {len(cmp.counts)} counts changed" if cmp.counts else "no counts"


def render_text(cmp):
    return f"{wrap(events_per_call_title(_ops(cmp)) + '; ' + summary(cmp))}\n{_table(cmp, 'simple')}\n{legend(cmp)}"


def _ops(cmp):
    """The calls the files timed (compare's ops: run --op, a --workload's loop), mprotect for older files."""
    return getattr(cmp, "ops", None) or ["mprotect"]


def render_markdown(cmp):
    return f"{_table(cmp, 'github')}\n\n{summary(cmp)}; {legend(cmp)}"


def render_commit(cmp):
    """Left-aligned, two spaces apart, no trailing spaces: the commit message layout of render/compare."""
    labels = cmp.labels if len(cmp.labels) > 2 or cmp.labels_given else ["Before", "After"]
    rows = cmp.counts
    header = (["Cell"] if _has_cells(rows) else []) + ["Stride", "Per call", labels[0]]
    for label in labels[1:]:
        header += [label, "Change" if len(labels) == 2 else f"Change {label}"]
    body = []
    for (cell, _, counter), sides in _grouped(rows).items():
        r0 = _first(sides)
        line = ([cell] if _has_cells(rows) else []) + [r0["stride"], analysis.name(counter),
                                                       _value(r0["base_per_call"])]
        for side in cmp.labels[1:]:
            r = sides.get(side)
            line += ["", ""] if r is None else [_value(r["new_per_call"]), (
                _change(r) if r["changed"] else "same") if r["changed"] is not None else "n/a"]
        body.append(line)
    lead = len(header) - 2 * (len(labels) - 1)
    table = layout.fitted(body, header, "commit", lead=lead,
                          groups=[[i, i + 1] for i in range(lead, len(header), 2)], names=labels[1:])
    foot = (f"Counts per {'/'.join(_ops(cmp))} call ({FROM_PASSES}); changed: {CHANGED}, else same; "
            f"{_sizes(cmp)}")
    if cmp.emulated:
        foot += "; emulated (qemu-tcg): counts only, rates have no verdict"
    return "Kernel invalidations\n" + table + "\n" + wrap(foot)


FIELDS = ("base", "new", "change", "changed")


def _beside(cmp):
    """Per rate row of a plain compare, the counts of its cell, stride and pair of sides ({counter: {base,
    new, change, changed}}), and every counter found, in display order."""
    found = {}
    for r in cmp.counts:
        found.setdefault((r["cell"], r["stride_bytes"], r["base_label"], r["new_label"]), {})[r["counter"]] = {
            "base": numbers.clean(r["base_per_call"]), "new": numbers.clean(r["new_per_call"]),
            "change": numbers.clean(r["change"]), "changed": r["changed"]}
    order = {c: i for i, c in enumerate(analysis.COUNTERS)}
    counters = sorted({r["counter"] for r in cmp.counts}, key=lambda c: (order.get(c, len(order)), c))
    return [found.get((r["cell"], r["stride_bytes"], r["base_label"], r["new_label"]), {}) for r in cmp.rows], counters


def json_rows(cmp):
    """A plain compare's json rows: with counts, each row gets a `counts` field (counters left out of the
    counts, 0 on every pass of both sides, are absent, as in --counts); without, the rows as they are."""
    if not cmp.counts:
        return cmp.rows
    return [{**row, "counts": c} for row, c in zip(cmp.rows, _beside(cmp)[0])]


def csv_rows(cmp, columns):
    """A plain compare's csv: with counts, COUNTER_base, _new, _change, _changed columns after the rate
    columns (empty where that row's cell has no such count).  Returns (columns, rows)."""
    if not cmp.counts:
        return columns, cmp.rows
    per_row, counters = _beside(cmp)
    rows = [{**row, **{f"{k}_{f}": v[f] for k, v in c.items() for f in FIELDS}} for row, c in zip(cmp.rows, per_row)]
    return list(columns) + [f"{k}_{f}" for k in counters for f in FIELDS], rows


def render_csv(cmp):
    return numbers.csv_text(analysis.COLUMNS, cmp.counts)


def render_json(cmp):
    return json.dumps(numbers.records(cmp.counts), indent=1)


def render_ministat(cmp):
    """ministat has no counts: the text table, whose changed rule is the passes' own range."""
    return render_text(cmp)


RENDERERS = {"text": render_text, "markdown": render_markdown, "csv": render_csv, "json": render_json,
             "commit": render_commit, "ministat": render_ministat}


def appendix(cmp, fmt):
    """What follows the rate table in a plain compare of files with counts (text, markdown, commit): one
    line saying how many counts changed, and the changed ones in the format's table; the emulated note.
    Machine formats (csv, json) carry the counts in their rows instead (json_rows, csv_rows); --counts gives them alone."""
    if fmt not in ("text", "markdown", "commit", "ministat"):
        return None
    parts = []
    changed = [r for r in cmp.counts if r["changed"]]
    if cmp.counts and fmt != "ministat" and (changed or fmt != "commit"):  # a commit message: changes only
        parts.append(f"invalidation counts per call: {summary(cmp)} (compare --counts shows every count)")
        if changed:
            import copy

            only = copy.copy(cmp)
            # every side of a count that changed on one side, so each new side reads against the base
            keys = {(r["cell"], r["stride_bytes"], r["counter"]) for r in changed}
            only.counts = [r for r in cmp.counts if (r["cell"], r["stride_bytes"], r["counter"]) in keys]
            parts.append(RENDERERS[fmt](only))  # its legend names the emulated sides
    if cmp.emulated and not changed or cmp.emulated and fmt == "ministat":
        parts.append(emulated_line(cmp))
    return "\n".join(parts) if parts else None
