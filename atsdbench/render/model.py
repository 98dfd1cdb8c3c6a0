"""Renderers for `atsdbench model`: one function per --format, each returns a string."""
import json
import math

from tabulate import tabulate

from ..analysis.model import CHANGE_COLUMNS, NO_CI_TABLE, PARAMS, RESAMPLES, SEED, WHOLE
from ..units import format_size
from .compare import one_boot
from .notes import (BOOTS, FOR_A_VERDICT, WITHIN, boots_not_measured, leaves_out_sessions, one_session_a_side,
                    one_side_replicated, see, what_gives_a_verdict, wrap)
from .numbers import beside, csv_text, general, interval, level, pct, pct_interval, records, sig3

NAMES = {"fixed_us": ("fixed cost", "us"), "per_page_us": ("per-page cost", "us"),
         "full_flush_us": ("whole flush", "us"), "crossover_pages": ("crossover", "pages")}
STRIDE_COLUMNS = ["file", "label", "cell", *[k for p in PARAMS for k in (p, p + "_low", p + "_high")],
                  "unit", "n_units", "processes", "stride_bytes", "pages", "regime", "regime_source", "us_per_call",
                  "residual_us"]


def _with_unit(v, unit):
    text = sig3(v)
    return text if text == "n/a" else f"{text} {unit}"


def _title(m):
    cell = f" [{m.cell}]" if m.cell else ""
    return (f"{m.label}{cell} ({m.file})\nus per mprotect call = fixed + per-page x pages "
            f"({format_size(m.page_bytes)} pages); one whole-flush cost past the ceiling")


def no_ci(why):
    """Why a model has no CI (analysis/model.py's code), in words."""
    if why == NO_CI_TABLE:
        return "imported from a table: one observation per stride, so no CI (point estimates only)"
    return "one observation per stride: no CI (point estimates only)"


def ci_note(m):
    """The unit, N, and what the interval does not cover: two lines of at most notes.WIDTH columns."""
    if m.why_no_ci:
        return no_ci(m.why_no_ci)
    units = {"run": "runs" if m.sessions > 1 else "sub-runs", "round": "rounds", "pass": "passes"}[m.unit]
    head = (f"{level(m.confidence)} CI: estimate +- t({m.n_units - 1}) x SE, bootstrap of {m.n_units} {units} "
            f"({RESAMPLES} resamples, seed {SEED})")
    one_boot = m.boots < 2
    if m.unit == "run" and m.sessions > 1:
        covers = boots_not_measured() if one_boot else see("covers run-to-run variance and boots", BOOTS)
    elif m.unit == "run" or m.processes == 1:
        covers = leaves_out_sessions(one_boot)
    else:
        covers = see(f"the {units} of {m.processes} runs pooled: it leaves out run-to-run drift", WITHIN)
    return f"{head}\n{covers}"


def model_text(m):
    params = [[NAMES[p][0], _with_unit(m.params[p], NAMES[p][1]), interval(m.params[p + '_low'], m.params[p + '_high'])]
              for p in PARAMS]
    strides = [[format_size(s), general(p, 6), WHOLE if w else "per-page", note, sig3(y), beside(r, y)]
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


def _sizes(rows):
    return ", ".join(sorted({f"{r['n_base']}/{r['n_new']}" for r in rows}))


def change_legend(analysis):
    """Under the before/after tables, at most notes.MAX_NOTES lines: what the change is, its interval's
    method, unit and N a side; then why there is no CI, or the level the CI leaves out (compare's words)."""
    rows = analysis.changes
    units = {r["unit"] for r in rows} - {None}
    name = {"run": "runs", "round": "rounds", "pass": "passes"}
    each = "/".join(name[u] for u in sorted(units)) or "rounds"
    head = "change = new/base - 1 per parameter, unadjusted"
    if not _has_interval(analysis):
        return "\n".join([head, _no_interval(analysis)])
    ci = "within-run interval" if analysis.withheld else f"{level(analysis.confidence)} CI"
    lines = [f"{head}; {ci}: bootstrap of {each}; N = {_sizes(rows)}"]
    boot = bool(one_boot(analysis.boots))
    if analysis.withheld:
        lines += [one_session_a_side("CI"), what_gives_a_verdict("CI")]
    elif analysis.mixed:
        lines.append(one_side_replicated(True))
    elif units == {"run"}:
        if boot:
            lines.append(boots_not_measured())
    elif all(m.processes == 1 for models in analysis.sides for m in models):
        lines.append(leaves_out_sessions(boot))
    else:
        lines.append(see(f"the {each} of each side's runs pooled: the CI leaves out run-to-run drift", WITHIN))
    return "\n".join(lines)


def _has_interval(analysis):
    return any(math.isfinite(r["ci_low_pct"]) for r in analysis.changes)


def _no_interval(analysis):
    why = next((m.why_no_ci for models in analysis.sides for m in models if m.why_no_ci), None)
    return f"no CI: {no_ci(why) if why else 'no interval could be had (the warnings say why)'}"


def change_text(analysis):
    blocks = []
    keys = []
    for r in analysis.changes:
        if (r["new_label"], r["cell"]) not in keys:
            keys.append((r["new_label"], r["cell"]))
    ci = "within-run interval" if analysis.withheld and _has_interval(analysis) else f"{level(analysis.confidence)} CI"
    for new_label, cell in keys:
        rows = [r for r in analysis.changes if (r["new_label"], r["cell"]) == (new_label, cell)]
        base_label = rows[0]["base_label"]
        body = [[NAMES[r["parameter"]][0], _with_unit(r["base"], NAMES[r["parameter"]][1]),
                 _with_unit(r["new"], NAMES[r["parameter"]][1]), pct(r["change_pct"]),
                 pct_interval(r["ci_low_pct"], r["ci_high_pct"])] for r in rows]
        blocks.append(f"{new_label} against {base_label}{f' [{cell}]' if cell else ''}\n"
                      + tabulate(body, headers=["parameter", base_label, new_label, "change", ci],
                                 tablefmt="simple", disable_numparse=True))
    if blocks:
        blocks.append(change_legend(analysis))
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
                  if math.isfinite(r["ci_low_pct"]) and not r["verdict_withheld"] else "")
            change = f" ({pct(r['change_pct'])}{ci})" if math.isfinite(r["change_pct"]) else ""
            lines.append(f"{name.ljust(width)}  {sig3(r['base'])} -> {sig3(r['new'])} {unit}{change}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n" + _commit_footer(analysis)


def _commit_footer(analysis):
    """One line: the unit and N a side, the levels not covered; or why there is no CI."""
    rows = analysis.changes
    boot = "; one boot a side (boot-to-boot not measured)" if one_boot(analysis.boots) else ""
    if not _has_interval(analysis):
        return _no_interval(analysis)
    units = sorted({r["unit"] for r in rows} - {None})
    sizes = {(r["n_base"], r["n_new"]) for r in rows}
    only = next(iter(sizes))
    n = f"N = {only[0]} per side" if len(sizes) == 1 and only[0] == only[1] else f"N (base/new) = {_sizes(rows)}"
    per = f"one observation per {'/'.join(units)}"
    if analysis.withheld:
        return wrap(f"no CI: one session a side (within-session only: {per}; {n}){boot}; "
                    f"for a CI: {FOR_A_VERDICT}")
    mixed = "; a one-process side is one run, assumed to vary as the other side's runs" if analysis.mixed else ""
    return wrap(f"{level(analysis.confidence)} CIs, bootstrap; {per}; {n}{mixed}{boot}; not adjusted for "
                "reading four at once")


RENDERERS = {"text": render_text, "json": render_json, "csv": render_csv, "commit": render_commit}
