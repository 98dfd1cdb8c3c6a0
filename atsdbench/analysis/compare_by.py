"""`compare FILE --by AXIS`: the cells of one run against each other, paired by round.

The cells of a round ran one after another, interleaved, each with its own fresh region: what moved
the machine between rounds moved them alike, so each round gives one difference per stride and the
test is on those differences (paired.paired_difference): the drift cancels instead of widening the
CI.  Every cell is compared with the cell holding the first value of the axis, the other axes held
equal.  Why paired t and the inverted signed-rank test, not a bootstrap: docs/compare.md, "Rules
and options" (cells of one run, paired)."""
import math

import numpy as np

from . import compare, paired, stats
from ..data import cells
from ..data.cells import op_of, where
from ..data.sides import distinct
from ..errors import UsageError
from ..units import format_size


def _value_label(axis, values, position):
    """"bystanders=1"; where the value repeats in the axis (an A/A), its position too: "bystanders=0 #2"."""
    text = f"{axis}={cells.value_text(values[position])}"
    return text + f" #{position + 1}" if values.count(values[position]) > 1 else text


def _axes(result, axis):
    axes = result.config.get("axes") or {}
    if not axes or "cell" not in result.table:
        raise UsageError(f"{result.name} has no axes to compare --by (run e.g. --bystanders 0,1 first)")
    if axis not in axes:
        if axis not in cells.AXES:
            raise UsageError(f"--by {axis!r} is not an axis (axes: {', '.join(cells.AXES)})")
        raise UsageError(f"{result.name} has no axis {axis} (its axes: {', '.join(axes)})")
    return axes


def round_values(table, cell, stride, metric, column="gbps"):
    """{round: the mean (or median) of that round's measured passes} of one cell and stride."""
    if column not in table:
        return {}
    rows = (table["cell"] == cell) & (table["stride_bytes"] == stride) & ~table["warmup"]
    found, values = stats.group_values(table["round"][rows], table[column][rows], metric)
    return {int(r): float(v) for r, v in zip(found.tolist(), values.tolist())}


def compare_by(sides, axis, metric=None, test=None, confidence=95, unit="auto", labels=None, adjust="holm"):
    """Every cell of one file (sides: [[Result]], as data/sides.load gives one file) against the cell
    with the first value of `axis` (the other axes held equal), paired by round.  Returns a Comparison
    (paired=True) for compare's renderers; one test per (other axes, stride, value), Holm across all
    of them with adjust="holm"."""
    sides = [s if isinstance(s, list) else [s] for s in sides]
    compare.check([len(s) for s in sides], metric, test, confidence, unit, adjust, by=axis)
    metric, _, confidence, _ = compare.resolve_options(metric, None, confidence, "auto")
    result = sides[0][0]
    axes = _axes(result, axis)
    values = list(axes[axis])
    value_labels = [_value_label(axis, values, j) for j in range(len(values))]
    if labels is not None:
        if len(labels) != len(values):
            raise UsageError(f"--labels gives {len(labels)} labels for the {len(values)} values of {axis}")
        value_labels = distinct(list(labels))
    others = [a for a in axes if a != axis]
    groups = {}  # other axes' positions -> {position on `axis`: cell index}
    for index, pos in cells.positions(result.config).items():
        if axis in pos and all(a in pos for a in others):
            groups.setdefault(tuple(pos[a] for a in others), {})[pos[axis]] = index
    table = result.table
    measured = stats.measured(table)
    measured_cells = set(cells.present(measured["cell"]))
    rate = compare.rate_of_sides([[result]])
    strides = cells.present(measured["stride_bytes"])
    test_name = paired.PAIRED_TESTS[metric]
    rows, obs, pairs, notes, unpaired, warnings = [], {}, {}, {}, {}, []
    for key in sorted(groups):
        members = groups[key]
        group = " ".join(_value_label(a, list(axes[a]), p) for a, p in zip(others, key))
        of_group = f" of {group}" if group else ""
        if 0 not in members or members[0] not in measured_cells:
            warnings.append(f"the {value_labels[0]} cell{of_group} has no measured pass: nothing to compare with")
            continue
        for stride in strides:
            base = round_values(table, members[0], stride, metric, rate[0])
            obs[(0, group, stride)] = np.array(list(base.values()))
            for j in range(1, len(values)):
                if j in members and members[j] in measured_cells:
                    new = round_values(table, members[j], stride, metric, rate[0])
                else:  # a row all the same, so every table keeps one column group per value
                    new = {}
                    if stride == strides[0]:
                        warnings.append(f"the {value_labels[j]} cell{of_group} has no measured pass: not compared")
                common = sorted(set(base) & set(new))
                lost = len(set(base) ^ set(new)) if new else 0
                if lost:
                    unpaired.setdefault((value_labels[j], lost), []).append(where(stride, group))
                a, b = np.array([base[r] for r in common]), np.array([new[r] for r in common])
                obs[(j, group, stride)] = np.array(list(new.values()))
                pairs[(j, group, stride)] = (a, b)
                d = paired.paired_difference(a, b, metric, confidence)
                if not len(common):  # nothing paired (an interrupted run), but a cell's own passes still show
                    centre = np.mean if metric == "mean" else np.median
                    d["base"] = float(centre(list(base.values()))) if base else math.nan
                    d["new"] = float(centre(list(new.values()))) if new else math.nan
                if d.get("why"):
                    notes.setdefault((value_labels[j], d["why"]), []).append(where(stride, group))
                rows.append({"cell": group, "stride": format_size(stride), "stride_bytes": stride,
                             "base_label": value_labels[0], "new_label": value_labels[j], "base_gbps": d["base"],
                             "new_gbps": d["new"], "speedup_pct": d["speedup_pct"], "ci_low_pct": d["ci_low_pct"],
                             "ci_high_pct": d["ci_high_pct"], "p_value": d["p_value"], "adjust": adjust,
                             "test": test_name, "confidence": confidence, "unit": "round", "n_base": d["n_base"],
                             "n_new": d["n_new"], "note": d.get("why", ""), "verdict_withheld": False,
                             "_se": d.get("se", math.nan),
                             "_df": d.get("df", math.nan)})
    if not rows:
        raise UsageError(f"{result.name}: no cell of {axis} but the first has a measured pass")
    from . import counts as count_changes
    count_changes.mark_emulated_file(rows, result, warnings)  # rates shown, no verdict
    compare.verdicts(rows, adjust, confidence, rank=metric == "median")
    for (label, lost), places in unpaired.items():
        warnings.append(f"{'strides' if len(places) > 1 else 'stride'} {', '.join(places)}, {label}: {lost} "
                        f"round{'s' if lost > 1 else ''} measured one cell only: not paired")
    compare.warn_no_ci(notes, warnings)
    members = {" ".join(_value_label(a, list(axes[a]), p) for a, p in zip(others, key)): m for key, m in groups.items()}
    ops = (list(axes[axis]) if axis in ("op", "workload") else list(axes["workload"]) if "workload" in axes else
           [op_of(result.config)])
    cmp = compare.Comparison(rows, value_labels, metric, test_name, confidence, "round", warnings, obs, adjust,
                             paired=True, pairs=pairs, by=axis, ops=ops, stale=compare.stale_of([result]))
    from .scaling import thread_values

    # --by threads reads by thread count (efficiency divides by them) only where they are counts (whole
    # numbers from 1, as show --scaling takes them); a crafted axis of others gets compare's own layout
    cmp.rate, cmp.tasks = rate, compare.tasks_of(result.config)
    cmp.by_values = values if axis != "threads" or thread_values(result) else None
    return count_changes.attach_by(cmp, result, members, strides)
