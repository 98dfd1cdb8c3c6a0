"""Renderers for `atsdbench compare`: one function per --format, each returns a string."""
import csv
import io
import json
import math

from tabulate import tabulate

from .units import format_size

TEST_NAMES = {"welch": "Welch's t-test on means", "student": "Student's t-test (pooled s) on means",
              "mannwhitney": "Mann-Whitney U test on medians, bootstrap CI"}


def _strides(cmp):
    seen = []
    for r in cmp.rows:
        if r["stride_bytes"] not in seen:
            seen.append(r["stride_bytes"])
    return seen


def _by_stride(cmp):
    return {s: [r for r in cmp.rows if r["stride_bytes"] == s] for s in _strides(cmp)}


def verdict(row):
    if isinstance(row["p_value"], float) and math.isnan(row["p_value"]):
        return "n/a (fewer than 2 observations)"
    if not row["significant"]:
        return "no difference proven"
    return "faster" if row["speedup_pct"] > 0 else "slower"


def _ci(row):
    if math.isnan(row["ci_low_pct"]):
        return "n/a"
    return f"[{row['ci_low_pct']:+.1f}, {row['ci_high_pct']:+.1f}]%"


def legend(cmp):
    agg = "mean" if cmp.metric == "mean" else "median"
    unit = {"round": f"round (the {agg} of a round's passes)", "pass": "pass",
            "run": f"run (the {agg} of a run's round {agg}s)"}[cmp.unit]
    n = ", ".join(sorted({f"{r['n_base']}/{r['n_new']}" for r in cmp.rows}))
    text = (f"{TEST_NAMES[cmp.test]}, {cmp.confidence:g}% confidence; observation = one {unit}; "
            f"N (base/new) = {n}; GB/s = 10^9 bytes/s")
    if cmp.unit != "run":
        # Measured with scripts/aa_false_positive.py: single runs drift more than their rounds predict.
        text += ("\nsingle runs: the CI covers noise within a run only; compare replicate runs (a.json,b.json,...) "
                 "to cover run-to-run drift too")
    return text


def _table(cmp, tablefmt):
    headers = ["Stride", f"{cmp.labels[0]} GB/s"]
    for label in cmp.labels[1:]:
        headers += [f"{label} GB/s", "Speedup", f"{cmp.confidence:g}% CI", "Verdict"]
    body = []
    for stride, rows in _by_stride(cmp).items():
        line = [format_size(stride), f"{rows[0]['base_gbps']:.2f}"]
        for r in rows:
            line += [f"{r['new_gbps']:.2f}", f"{r['speedup_pct']:+.1f}%", _ci(r), verdict(r)]
        body.append(line)
    return tabulate(body, headers=headers, tablefmt=tablefmt, disable_numparse=True)


def render_text(cmp):
    return f"mprotect rate (GB/s), {cmp.metric}\n{_table(cmp, 'simple')}\n{legend(cmp)}"


def render_markdown(cmp):
    return f"{_table(cmp, 'github')}\n\n{legend(cmp)}"


def render_commit(cmp):
    """The layout kernel commit messages use (POWER9 NPU ATSD patch, 2018); nothing else.
    Columns are left-aligned and two spaces apart; no trailing spaces, no colour."""
    labels = cmp.labels if len(cmp.labels) > 2 else ["Before", "After"]
    header = ["Stride", labels[0]]
    for label in labels[1:]:
        header += [label, "Speedup" if len(labels) == 2 else f"Speedup {label}"]
    body = [header]
    for stride, rows in _by_stride(cmp).items():
        line = [format_size(stride), f"{rows[0]['base_gbps']:.1f}"]
        for r in rows:
            line += [f"{r['new_gbps']:.1f}", f"{r['speedup_pct']:.0f}%"]
        body.append(line)
    widths = [max(len(row[i]) for row in body) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in body]
    return "mprotect rate (GB/s)\n" + "\n".join(lines)


def _records(cmp):
    out = []
    for r in cmp.rows:
        rec = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        out.append(rec)
    return out


def render_csv(cmp):
    from .comparison import COLUMNS

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for rec in _records(cmp):
        w.writerow({k: ("true" if v is True else "false" if v is False else "" if v is None else v)
                    for k, v in rec.items()})
    return buf.getvalue().rstrip("\n")


def render_json(cmp):
    return json.dumps(_records(cmp), indent=1)


def render_ministat(cmp):
    """FreeBSD ministat's block per stride, for the same observations (Student's t, as ministat)."""
    from . import ministat

    blocks = []
    for stride in _strides(cmp):
        sets = [ministat.Dataset(cmp.labels[i], cmp.observations[(i, stride)]) for i in range(len(cmp.labels))]
        conf = cmp.confidence
        blocks.append(f"stride {format_size(stride)}: GB/s, one observation per {cmp.unit}\n"
                      + ministat.render(sets, confidence=conf, width=74, plot=all(len(d.values) for d in sets)))
    return "\n".join(blocks).rstrip("\n")


RENDERERS = {"text": render_text, "markdown": render_markdown, "csv": render_csv, "json": render_json,
             "commit": render_commit, "ministat": render_ministat}
