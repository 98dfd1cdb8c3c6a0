"""Renderers for `atsdbench model`: one function per --format, each returns a string."""
import json
import math

from tabulate import tabulate

from ..analysis.model import CHANGE_COLUMNS, PARAMS, RESAMPLES, SEED, WHOLE
from ..units import format_size
from .numbers import csv_text, interval, level, pct, pct_interval, records, sig3

NAMES = {"fixed_us": ("fixed cost", "us"), "per_page_us": ("per-page cost", "us"),
         "full_flush_us": ("whole flush", "us"), "crossover_pages": ("crossover", "pages")}
STRIDE_COLUMNS = ["file", "label", "cell", *[k for p in PARAMS for k in (p, p + "_low", p + "_high")],
                  "stride_bytes", "pages", "regime", "regime_source", "us_per_call", "residual_us"]


def _with_unit(v, unit):
    text = sig3(v)
    return text if text == "n/a" else f"{text} {unit}"


def _title(m):
    cell = f" [{m.cell}]" if m.cell else ""
    return (f"{m.label}{cell} ({m.file}): us per mprotect call = fixed + per-page x pages "
            f"({format_size(m.page_bytes)} pages), one whole-flush cost past the flush ceiling")


def ci_note(m):
    if m.why_no_ci:
        return m.why_no_ci
    per = "rounds" if m.unit == "round" else "passes"
    return (f"{level(m.confidence)} CI: estimate +- t({m.n_units - 1}) x standard error from a bootstrap over "
            f"{m.n_units} {per} ({RESAMPLES} resamples, seed {SEED})")


def model_text(m):
    params = [[NAMES[p][0], _with_unit(m.params[p], NAMES[p][1]), interval(m.params[p + '_low'], m.params[p + '_high'])]
              for p in PARAMS]
    strides = [[format_size(s), f"{p:g}", WHOLE if w else "per-page", note, sig3(y), sig3(r, sign=True)]
                for s, p, w, note, y, r in zip(m.stride_bytes, m.pages, m.whole, m.source_notes, m.us_per_call,
                                               m.residuals)]
    return "\n".join([
        _title(m),
        tabulate(params, headers=["parameter", "estimate", f"{level(m.confidence)} CI"], tablefmt="simple",
                 disable_numparse=True),
        "",
        tabulate(strides, headers=["Stride", "Pages", "Regime", "Decided by", "us/call", "Residual us"],
                 tablefmt="simple", disable_numparse=True),
        ci_note(m)])


def change_text(analysis):
    blocks = []
    keys = []
    for r in analysis.changes:
        if (r["new_label"], r["cell"]) not in keys:
            keys.append((r["new_label"], r["cell"]))
    for new_label, cell in keys:
        rows = [r for r in analysis.changes if (r["new_label"], r["cell"]) == (new_label, cell)]
        base_label = rows[0]["base_label"]
        body = [[NAMES[r["parameter"]][0], _with_unit(r["base"], NAMES[r["parameter"]][1]),
                 _with_unit(r["new"], NAMES[r["parameter"]][1]), pct(r["change_pct"]),
                 pct_interval(r["ci_low_pct"], r["ci_high_pct"])] for r in rows]
        blocks.append(f"{new_label} against {base_label}{f' [{cell}]' if cell else ''}\n"
                      + tabulate(body, headers=["parameter", base_label, new_label, "change",
                                                f"{level(analysis.confidence)} CI"], tablefmt="simple",
                                 disable_numparse=True))
    if blocks:
        blocks.append("change = new/base - 1; its CI resamples both sides' rounds independently (estimate +- "
                      "t(Welch df) x bootstrap standard error), one parameter at a time: not adjusted for reading "
                      "four at once")
    return "\n".join(blocks)


def render_text(analysis):
    parts = [model_text(m) for models in analysis.sides for m in models]
    if analysis.changes:
        parts.append(change_text(analysis))
    return "\n\n".join(parts)


def render_json(analysis):
    fits = [m.record() for models in analysis.sides for m in models]
    changes = records([{k: r[k] for k in CHANGE_COLUMNS} for r in analysis.changes])
    return json.dumps({"models": fits, "changes": changes}, indent=1)


def render_csv(analysis):
    """Two or more sides: one row per (parameter, new side, cell).  One side: one row per stride, the
    file's parameters repeated on each."""
    if analysis.changes:
        return csv_text(CHANGE_COLUMNS, analysis.changes)
    rows = []
    for models in analysis.sides:
        for m in models:
            rec = m.record()
            for s in rec.pop("strides"):
                rows.append({**rec, **s})
    return csv_text(STRIDE_COLUMNS, rows)


def render_commit(analysis):
    """Paste-ready lines such as 'per-page cost  1.51 -> 1.42 us (-5.5%)', names padded to one width."""
    width = max(len(n) for n, _ in NAMES.values())
    blocks = []
    if not analysis.changes:
        for models in analysis.sides:
            for m in models:
                head = f"{m.label}{f' [{m.cell}]' if m.cell else ''}"
                lines = [f"{NAMES[p][0].ljust(width)}  {_with_unit(m.params[p], NAMES[p][1])}"
                         + (f" ({level(m.confidence)} CI {sig3(m.params[p + '_low'])} to {sig3(m.params[p + '_high'])})"
                            if math.isfinite(m.params[p + "_low"]) else "") for p in PARAMS
                         if math.isfinite(m.params[p])]
                title = f"mprotect cost per call, {format_size(m.page_bytes)} pages ({head})"
                blocks.append("\n".join([title] + lines))
        return "\n\n".join(blocks)
    keys = []
    for r in analysis.changes:
        if (r["base_label"], r["new_label"], r["cell"]) not in keys:
            keys.append((r["base_label"], r["new_label"], r["cell"]))
    for base, new, cell in keys:
        lines = [f"mprotect cost per call, {base} -> {new}{f' [{cell}]' if cell else ''}"]
        for r in analysis.changes:
            if (r["base_label"], r["new_label"], r["cell"]) != (base, new, cell):
                continue
            name, unit = NAMES[r["parameter"]]
            if not (math.isfinite(r["base"]) or math.isfinite(r["new"])):
                continue  # nothing to paste
            ci = (f", {level(r['confidence'])} CI {pct(r['ci_low_pct'])} to {pct(r['ci_high_pct'])}"
                  if math.isfinite(r["ci_low_pct"]) else "")
            change = f" ({pct(r['change_pct'])}{ci})" if math.isfinite(r["change_pct"]) else ""
            lines.append(f"{name.ljust(width)}  {sig3(r['base'])} -> {sig3(r['new'])} {unit}{change}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


RENDERERS = {"text": render_text, "json": render_json, "csv": render_csv, "commit": render_commit}
