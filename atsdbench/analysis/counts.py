"""compare's counts: the kernel's own invalidation events per mprotect call, each side and the change.

Per (cell, stride, counter): every pass that counted gives one per-call value (count / calls); a side
is its passes' count over their calls, with their range (min..max, replicate runs pooled).  A count
is marked changed where the two sides' ranges do not overlap, where the base is zero on every pass
and the new side is not, or the reverse above a stray's level (changed(): the rule).  Tracepoint counts (flushes, tlbie, hcalls) come from the
traced warm-up passes, IPIs from the timed ones, as stats.per_call_counters reads them.  Counts are the kernel's under emulation too; rates are
not: files from emulated guests (host.virtualized "qemu-tcg") never get a rate verdict
(mark_emulated).  docs/guest.md#what-changed-means has the story.  Pure: reads results only.
"""
import math
import re

import numpy as np

from ..units import format_size

# in the order shown; h_* (hypervisor calls by opcode) follow, sorted
COUNTERS = ("flushes", "full_flushes", "ipis", "tlbie", "tlbie_global", "tlbie_full", "tlbie_fixup", "tlbia",
            "notifier_starts", "device_invalidates")  # the last two: --device hmm's kprobe counts
HCALL = re.compile(r"h_[a-z_]+")
NAMES = {"flushes": "flushes", "full_flushes": "full flushes", "ipis": "IPIs", "tlbie": "tlbie",
         "tlbie_global": "tlbie global", "tlbie_full": "tlbie full PID", "tlbie_fixup": "tlbie fixup",
         "tlbia": "tlbia", "notifier_starts": "notifier starts", "device_invalidates": "device invalidates"}
EMULATED = ("qemu-tcg",)
# Below one event in 100 calls a base is a stray (an IPI in 10^4 calls): a change against it is given
# as the change alone, no percentage (+0.999, not +1151100%)
NEAR_ZERO = 0.01
COLUMNS = ["cell", "stride", "stride_bytes", "counter", "base_label", "new_label", "base_per_call", "new_per_call",
           "change", "change_pct", "base_min", "base_max", "new_min", "new_max", "n_base", "n_new", "changed"]


def name(counter):
    return NAMES.get(counter, counter.upper() if HCALL.fullmatch(counter) else counter)


def counter_columns(table):
    """The counter columns a result's samples hold values in, in display order."""
    from ..data.columns import known

    found = [c for c in COUNTERS if c in table and known(table[c]).any()]
    return found + sorted(c for c in table.keys() if HCALL.fullmatch(c) and known(table[c]).any())


def _columns(table):
    """A result's table as {field: numpy array} (traced a flag there): compare --counts asks for every
    counter at every stride and cell."""
    return {c: table[c] for c in table.keys()}


def _per_pass(cols, stride, column, cell=None):
    """(per-call count of each pass that counted, its calls)."""
    if column not in cols:
        return np.array([]), np.array([])
    keep = cols["stride_bytes"] == stride
    if cell is not None and "cell" in cols:
        keep &= cols["cell"] == cell
    if column == "ipis" and "warmup" in cols:  # timed passes only, as the label and run's table say
        keep &= ~cols["warmup"]
    if "traced" in cols:
        keep &= ~cols["traced"] if column == "ipis" else cols["traced"]
    elif column != "ipis":
        return np.array([]), np.array([])
    values = np.array(cols[column][keep], dtype=float)  # None (not counted) is NaN
    present = ~np.isnan(values)
    calls = np.array(cols["calls"][keep], dtype=float)[present]
    return values[present] / calls, calls


def _side(group, cell_maps, cell, stride, column, cache=None):
    cache = {} if cache is None else cache
    values, calls = [], []
    for r, m in zip(group, cell_maps):
        if id(r) not in cache:
            cache[id(r)] = _columns(r.table)
        v, c = _per_pass(cache[id(r)], stride, column, m.get(cell))
        values.append(v)
        calls.append(c)
    return (np.concatenate(values), np.concatenate(calls)) if values else (np.array([]), np.array([]))


def _per_call(values, calls):
    """A side's count per call: its passes' count over their calls (run's and show's, stats.per_call_counters)."""
    return float((values * calls).sum() / calls.sum()) if len(values) else math.nan


def changed(base, new, tolerance=1e-9):
    """The rule of "changed": the sides' per-call ranges (pass to pass) do not overlap; or the base
    is zero on every pass and the new side is not (an event that appears is a change, however few a
    call: 0 against 0.24 IPIs a call, whose ranges meet at 0); or the new side is zero on every pass
    and the base counted at least NEAR_ZERO a call (an event that goes away; below that, strays).
    None where a side has no pass."""
    if not len(base) or not len(new):
        return None
    if not base.any() and new.any():
        return True
    if not new.any() and base.any() and _per_call(base, np.ones(len(base))) >= NEAR_ZERO:
        return True
    return bool(new.min() > base.max() + tolerance or new.max() < base.min() - tolerance)


def compare_counts(groups, labels, cells, common, pairs=None):
    """Rows (COLUMNS) for every (cell, stride) in common and every counter either side counted.
    cells[i][k]: {cell name: cell index} of run k of side i (compare._cell_maps); pairs[i], where
    given: the (cell, stride)s side i shares with the baseline (others give it no row)."""
    columns = []
    for g in groups:
        for r in g:
            columns += [c for c in counter_columns(r.table) if c not in columns]
    order = {c: i for i, c in enumerate(COUNTERS)}
    columns.sort(key=lambda c: (order.get(c, len(order)), c))
    rows, cache = [], {}
    for cell, stride in common:
        for column in columns:
            base, base_calls = _side(groups[0], cells[0], cell, stride, column, cache)
            for i in range(1, len(groups)):
                if pairs is not None and (cell, stride) not in pairs[i]:
                    continue
                new, new_calls = _side(groups[i], cells[i], cell, stride, column, cache)
                if not (base != 0).any() and not (new != 0).any():
                    continue  # zero on every pass of both sides (or not counted): nothing to say
                b, n = _per_call(base, base_calls), _per_call(new, new_calls)
                rows.append({"cell": cell, "stride": format_size(stride), "stride_bytes": stride, "counter": column,
                             "base_label": labels[0], "new_label": labels[i], "base_per_call": b,
                             "new_per_call": n, "change": n - b,
                             "change_pct": (n - b) / b * 100 if b >= NEAR_ZERO else math.nan,
                             "base_min": float(base.min()) if len(base) else math.nan,
                             "base_max": float(base.max()) if len(base) else math.nan,
                             "new_min": float(new.min()) if len(new) else math.nan,
                             "new_max": float(new.max()) if len(new) else math.nan,
                             "n_base": int(len(base)), "n_new": int(len(new)), "changed": changed(base, new)})
    return rows


def emulation(result):
    """"qemu-tcg" for a result from an emulated guest, else None (kvm and bare metal: real rates)."""
    v = (result.host or {}).get("virtualized")
    return v if v in EMULATED else None


def emulated_labels(groups, labels):
    return [label for g, label in zip(groups, labels) if any(emulation(r) for r in g)]


def mark_emulated(rows, groups, labels):
    """Rate rows where either side was emulated: the rates stay, the test goes (p = NaN, so no verdict and
    no place in Holm's family), and the note says why."""
    emulated = set(emulated_labels(groups, labels))
    if not emulated:
        return
    for r in rows:
        if r["base_label"] in emulated or r["new_label"] in emulated:
            r["p_value"] = math.nan
            r["note"] = "emulated (qemu-tcg)"


def mark_emulated_file(rows, result, warnings):
    """compare FILE --by AXIS of a file from an emulated guest: its cells' rates get no verdict either."""
    if not emulation(result):
        return
    for r in rows:
        r["p_value"] = math.nan
        r["note"] = "emulated (qemu-tcg)"
    warnings.append(f"{result.name} ran emulated (qemu-tcg): its rates get no verdict")


def attach_by(cmp, result, members, strides):
    """compare FILE --by AXIS: the counts of each value's cell against the first value's, per group of the
    other axes.  members: {group label: {position on the axis: cell index}}."""
    n = len(cmp.labels)
    groups = [[result] for _ in range(n)]
    cells = [[{g: m.get(j, -1) for g, m in members.items()}] for j in range(n)]  # -1: no such cell
    cmp.counts = compare_counts(groups, cmp.labels, cells, [(g, s) for g in members for s in strides])
    cmp.emulated = [result.name] if emulation(result) else []
    return cmp


def attach(cmp, groups, cells, common, pairs=None):
    """The counts and which sides were emulated, on a Comparison (compare.compare's hook)."""
    cmp.counts = compare_counts(groups, cmp.labels, cells, common, pairs)
    cmp.emulated = emulated_labels(groups, cmp.labels)
    if cmp.emulated:
        cmp.warnings.append(f"{', '.join(cmp.emulated)}: emulated (qemu-tcg): rates get no verdict")
    return cmp
