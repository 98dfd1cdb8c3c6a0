"""A result's cells: the configurations one run measured interleaved (its axes), named by their values.

A file without a "cell" column is one cell, index None, named "".  Cells may repeat values
(`--bystanders 0,0` is an A/A inside one run): they are told apart by index, and where a name
would repeat, `labels` adds the index.
"""
from ..units import format_size

AXES = ("workload", "op", "threads", "bystanders", "pages", "gpu", "device", "ceiling")  # cell numbering: the last varies fastest

# run --op: what each call of a pass does to its stride, as tables name it (the C core's atsd_op_call;
# tests/measure/test_core.py holds the two alike).  A file from before --op timed mprotect.
OPS = {"mprotect": "mprotect(PROT_NONE)", "madvise": "madvise(MADV_DONTNEED)", "munmap": "munmap"}


def op_of(config):
    """The op of a file's config (one value, or the first of an axis); mprotect where none is named.
    A --workload file's is its workload (tlb_flush2): what its passes timed instead of an op."""
    return config.get("workload") or config.get("op") or "mprotect"


def value_text(v):
    return "none" if v is None else str(v)


def name(spec):
    """"bystanders=1 pages=thp" for a cell's {axis: value}."""
    return " ".join(f"{k}={value_text(v)}" for k, v in spec.items())


def specs(result):
    """{cell index: {axis: value}} of the cells that have samples, in index order; {None: {}} without cells."""
    table = result.table
    if "cell" not in table:
        return {None: {}}
    declared = result.config.get("cells") or []
    out = {}
    for c in present(table["cell"]):
        out[c] = declared[c] if c < len(declared) and isinstance(declared[c], dict) else {}
    return out


def labels(result):
    """{cell index: label}: the cell's name, with "cell N" added where names repeat or are empty;
    {None: ""} for a file without cells."""
    found = specs(result)
    if None in found:
        return {None: ""}
    return labels_of(found)


def labels_of(found):
    """labels() for {cell index: {axis: value}} (a result's cells, or a plan's config["cells"])."""
    names = {c: name(s) if isinstance(s, dict) else "" for c, s in found.items()}
    counts = {}
    for n in names.values():
        counts[n] = counts.get(n, 0) + 1
    return {c: (n if n and counts[n] == 1 else f"{n} (cell {c})".strip() if n else f"cell {c}")
            for c, n in names.items()}


def where(stride, label=None):
    """'64K', or '64K bystanders=1' for a stride of a cell: how every table and message names one."""
    text = format_size(stride)
    return f"{text} {label}" if label else text


def where_row(row, labels=None):
    """where() for a row that names its cell by index ({"stride_bytes", "cell"?})."""
    if "cell" not in row:
        return where(row["stride_bytes"])
    return where(row["stride_bytes"], (labels or {}).get(row["cell"]) or f"cell {row['cell']}")


def headings(result):
    """[(cell index, heading, {axis: value}, samples)]: "cell 1: bystanders=1" per cell; one entry,
    heading None, for a file without cells."""
    table = result.table
    found = specs(result)
    if None in found:
        return [(None, None, {}, table)]
    return [(c, f"cell {c}: {name(s)}" if s else f"cell {c}", s, table.rows(table["cell"] == c))
            for c, s in found.items()]


def of_cell(table, index):
    """A table's passes of one cell (all of them for index None or a file without cells)."""
    return table if index is None or "cell" not in table else table.rows(table["cell"] == index)


def present(values):
    """The distinct whole numbers of a column, sorted, its gaps (NaN) left out: a file's cells."""
    import numpy as np

    values = np.asarray(values)
    if values.dtype.kind == "f":
        values = values[~np.isnan(values)]
    return [int(v) for v in np.unique(values)]


def positions(config):
    """{cell index: {axis: position of its value in that axis's list}}.  Cells are the product of the
    axes with the last varying fastest; where a file's cells are not (edited, or another tool's),
    a value's first position is taken."""
    axes = config.get("axes") or {}
    cells = config.get("cells") or []
    names = list(axes)
    sizes = [len(axes[a]) for a in names]
    out = {}
    for index, spec in enumerate(cells):
        pos, rest = {}, index
        for a, n in reversed(list(zip(names, sizes))):
            pos[a], rest = rest % n, rest // n
        product_ok = len(cells) == _product(sizes) and all(
            isinstance(spec, dict) and a in spec and axes[a][pos[a]] == spec[a] for a in names)
        if not product_ok:
            pos = {a: axes[a].index(spec[a]) for a in names if isinstance(spec, dict) and spec.get(a, ...) in axes[a]}
        out[index] = {a: pos[a] for a in names if a in pos}
    return out


def _product(sizes):
    out = 1
    for n in sizes:
        out *= n
    return out
