"""`atsdbench import --table`: a published rate table (stride, GB/s, optional "after" GB/s) as result
files (docs/model.md, "From a published table").

Kernel commit messages print tables ("Stride  Before  After  Speedup" over rows such as "64K  5.9
6.5  10%"), often quoted ("> ") or with their line breaks lost in an archive.  So the text is read as
a stream of words, and the table is the longest run of rows "SIZE RATE [RATE] [N%...]"; quote marks
and markdown bars are not words.  A speedup column, when there is one, is checked against the rates.
Each rate column becomes one result file with one pass per stride (calls = size / stride).
"""
import os
import re
import unicodedata

from .. import __version__
from .._cli import wrote
from ..errors import UsageError
from .results import Result
from .schema import MAX_INT64, cut
from ..units import format_size, parse_size

_SIZE = re.compile(r"^\d+(?:[KMGT](?:i?B)?)?$", re.IGNORECASE)
# What a row's rate may look like to be found at all: a sign, an exponent, nan and inf included, and
# (\d and NFKC below) digits and letters in other scripts.  Such a row is then refused by parse()
# with the reason, instead of being left out of the table and the rest imported without a word.
_RATE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$|^[+-]?(?:nan|inf|infinity)$", re.IGNORECASE)
_PCT = re.compile(r"^[+-]?\d+(?:\.\d+)?%$")
_SEPARATOR = re.compile(r"^[>|:=+-]+$")
HEADER_WORDS = ("stride", "size")


def words(text):
    """The text's words without quote marks, table bars and rules."""
    return [w for w in re.split(r"[\s|]+", text) if w and not _SEPARATOR.match(w)]


def _loose(word):
    """The word as compatibility forms read (fullwidth '64Ｋ' as '64K'), for finding rows only."""
    return unicodedata.normalize("NFKC", word)


def _row(ws, i, columns):
    """(stride, rates, percents, next index) for a row at ws[i] with `columns` rates, else None."""
    if (i + columns >= len(ws) or not _SIZE.match(_loose(ws[i]))
            or not all(_RATE.match(_loose(w)) for w in ws[i + 1:i + 1 + columns])):
        return None
    j = i + 1 + columns
    pcts = []
    while j < len(ws) and _PCT.match(ws[j]):
        pcts.append(ws[j])
        j += 1
    return ws[i], ws[i + 1:i + 1 + columns], pcts, j


def _run(ws, i, columns):
    rows = []
    while (row := _row(ws, i, columns)) is not None:
        rows.append(row[:3])
        i = row[3]
    return rows


def find_table(ws, name="<table>"):
    """(start index, columns, rows) of the longest run of rows; a tie between two places is an error."""
    best = []
    for i in range(len(ws)):
        for columns in (2, 1):
            rows = _run(ws, i, columns)
            if len(rows) >= 2:
                best.append((len(rows), columns, i, rows))
    if not best:
        raise UsageError(f"{name} has no table: 2+ rows of 'STRIDE GB/S [GB/S]'")
    top = max(b[0] for b in best)
    winners = [b for b in best if b[0] == top]
    # A run found from a later start inside a longer run is shorter, so winners at different places
    # that do not overlap are separate tables.
    starts = sorted({b[2] for b in winners})
    if len(starts) > 1:
        raise UsageError(f"{name} has {len(starts)} tables of {top} rows; keep the one to import")
    _, columns, start, rows = max(winners, key=lambda b: b[1])
    return start, columns, rows


def labels_before(ws, start, columns):
    """Column names from a header such as 'Stride Before After Speedup' just before the rows."""
    for k in range(start - 1, max(-1, start - 2 - columns - 4), -1):
        if ws[k].lower().rstrip(":") in HEADER_WORDS and k + columns < start:
            names = ws[k + 1:k + 1 + columns]
            if not any(_RATE.match(_loose(n)) or _SIZE.match(_loose(n)) for n in names):
                return names
    return ["before", "after"][:columns] if columns == 2 else ["table"]


def _decimals(text):
    return len(text.split(".")[1]) if "." in text else 0


def speedup_mismatch(before, after, pct):
    """True when a printed speedup cannot come from the printed rates, rounding allowed for."""
    hb, ha = 0.5 * 10 ** -_decimals(before), 0.5 * 10 ** -_decimals(after)
    b, a = float(before), float(after)
    if b - hb <= 0:
        return False
    low, high = ((a - ha) / (b + hb) - 1) * 100, ((a + ha) / (b - hb) - 1) * 100
    value, hp = float(pct.rstrip("%")), 0.5 * 10 ** -_decimals(pct.rstrip("%"))
    return value + hp < low or value - hp > high


def _not_ascii(name, what, word):
    return UsageError(f"{name}: {what} {cut(word)} is not plain ASCII (type it as {cut(_loose(word))})")


def _rate(text, stride, name):
    """A rate in GB/s above zero, or UsageError; how large a pass can show is checked in to_results."""
    where = f"{name}: stride {format_size(stride)}"
    if not text.isascii():
        raise _not_ascii(name, f"at {format_size(stride)} the rate", text)
    if text.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise UsageError(f"{where} has a rate of {cut(text)}: not a finite number of GB/s")
    value = float(text)
    if value == float("inf"):  # 1e400: beyond a double, so beyond any pass
        raise UsageError(f"{where} has a rate of {cut(text)} GB/s, more than a pass can measure")
    if value < 0:
        raise UsageError(f"{where} has a negative rate ({cut(text)})")
    if value == 0:
        raise UsageError(f"{where} has a rate of zero")
    return value


def parse(text, name="<table>"):
    """(labels, [(stride bytes, [GB/s per column])], warnings)."""
    ws = words(text)
    start, columns, rows = find_table(ws, name)
    labels = labels_before(ws, start, columns)
    warnings, out, seen = [], [], set()
    for stride_text, rates, pcts in rows:
        if not stride_text.isascii():
            raise _not_ascii(name, "stride", stride_text)
        stride = parse_size(stride_text, f"{name}: stride")
        if stride in seen:
            raise UsageError(f"{name}: stride {format_size(stride)} appears twice in the table")
        seen.add(stride)
        values = [_rate(r, stride, name) for r in rates]
        if columns == 2 and pcts and speedup_mismatch(rates[0], rates[1], pcts[0]):
            warnings.append(f"{name}: at {format_size(stride)} the speedup column ({pcts[0]}) is not {rates[0]} -> "
                            f"{rates[1]}")
        out.append((stride, values))
    return labels, out, warnings


def to_results(labels, rows, page_size, size, ceiling=None, name="<table>"):
    """One Result per rate column: one round, one pass per stride."""
    for stride, _ in rows:
        if stride % page_size:
            raise UsageError(f"{name}: stride {format_size(stride)} is not a multiple of the page size "
                             f"{format_size(page_size)}")
        if size % stride:
            raise UsageError(f"--size {format_size(size)} is not a multiple of the table's stride "
                             f"{format_size(stride)}")
    # A pass is a whole number of ns, 1 to MAX_INT64, over `size` bytes: a rate outside that range is
    # not one a pass could have measured (and would store as 0 ns, or overflow the ns column).
    for stride, rates in rows:
        for gbps in rates:
            if not 1 <= round(size / gbps) <= MAX_INT64:
                than = "more" if size / gbps < 1 else "less"
                raise UsageError(f"{name}: stride {format_size(stride)} at {gbps:g} GB/s: {than} "
                                 f"than --size {format_size(size)} allows ({size / MAX_INT64:.3g} to {size:.3g})")
    host = {"hostname": "unknown", "arch": "unknown", "kernel_release": "unknown", "kernel_version": "unknown",
            "cpu_model": "unknown", "mmu": "unknown", "online_cpus": [], "affinity": "unknown",
            "page_size": page_size, "hugepage_size": None, "thp_enabled": "unknown", "thp_defrag": "unknown",
            "tlb_single_page_flush_ceiling": ceiling if ceiling is not None else "unknown",
            "python": "none (table)", "atsdbench": f"table, imported by {__version__}"}
    strides = sorted(s for s, _ in rows)
    out = []
    for column, label in enumerate(labels):
        config = {"size": size, "strides": strides, "rounds": 1, "reps": 1, "warmup": 0, "warmup_rounds": 0,
                  "processes": False, "pages": "base", "cpu": None,
                  "latency": False, "retouch": True, "trace": "off", "label": label, "seed": None, "gpu": None,
                  "source": "table", "table": {"file": os.path.basename(name), "column": column + 1}}
        samples = []
        for order, (stride, rates) in enumerate(sorted(rows)):
            gbps = rates[column]
            ns = size / gbps  # the time the table's rate implies for one pass over the region
            calls = size // stride
            samples.append({"round": 0, "rep": 0, "order": order, "stride_bytes": stride, "warmup": False,
                            "traced": False, "ns": round(ns), "seconds": ns / 1e9, "calls": calls, "gbps": gbps,
                            "us_per_call": ns / 1e3 / calls})
        out.append(Result(host, config, samples, True))
    return out


def output_paths(output, count, name):
    """The first column goes to OUTPUT (default: the table's name with .json), a second to the same
    name with '-after' before the extension."""
    if output is None:
        if name == "-":
            raise UsageError("import --table -: give -o, there is no file name to derive one from")
        output = os.path.splitext(os.path.basename(name))[0] + ".json"
    root, ext = os.path.splitext(output)
    return [output, f"{root}-after{ext or '.json'}"][:count]


def load(path, page_size, size, ceiling=None):
    from .inputs import read_input

    text, name = read_input(path)
    labels, rows, warnings = parse(text, name)
    return to_results(labels, rows, page_size, size, ceiling, name), warnings


def summary(results, paths):
    """What import printed: the table as read, and where each column went."""
    first = results[0]
    lines = [f"read {len(first.config['strides'])} strides "
             f"({', '.join(format_size(s) for s in first.config['strides'])}), "
             f"page size {format_size(first.host['page_size'])}"]
    for r, p in zip(results, paths):
        rates = ", ".join(f"{s['gbps']:g}" for s in r._records)
        lines.append(wrote(p, f": column '{r.config['label']}' (GB/s {rates}), one observation per stride"))
    return "\n".join(lines)


def check_options(page_size, ceiling, size):
    """import --table's own options, before the table is read: (page size, region size) in bytes."""
    if not page_size:
        raise UsageError("import --table needs --page-size (the table's machine's: 64K POWER9, 4K x86)")
    # The bounds `run --ceiling` takes: a kernel flushes at least one page singly.
    if ceiling is not None and ceiling < 1:
        raise UsageError(f"--ceiling must be at least 1 (got {str(ceiling)[:40]})")
    if ceiling is not None and ceiling > 1 << 30:
        raise UsageError(f"--ceiling is a page count: at most 2^30 (got {str(ceiling)[:40]})")
    page = parse_size(page_size, "--page-size")
    if page & (page - 1):  # else every stride would be blamed for not being a multiple of it
        raise UsageError(f"--page-size {page_size} is not a power of two (a page is 4K, 16K, 64K, ...)")
    return page, parse_size(size or "1G", "--size")
