"""compare FLEET's tables (analysis/blocked.py): a row per board (that board's own comparison) and the
fleet's row (the boards as blocks), and the notes under them: the test and the number of boards, what
a verdict means, the boards that stand out and the boards left out."""
import json

from . import layout, numbers
from ..analysis.blocked import FEWEST
from .compare import SHORT_NAMES, _title, adjustment, detects, unit_name, verdict
from .notes import hang, see, wrap
from ..units import format_size

BLOCKED = "docs/compare.md#a-blocked-verdict"
NAME = "t on the boards' log ratios (k - 1 df)"


def no_fleet_verdict(fleet):
    """Why the fleet has no verdict (analysis/blocked's withheld code), in words."""
    n, every = len(fleet.boards), "both sides" if len(fleet.labels) == 2 else "every side"
    return f"no fleet verdict: {n} board{'s' * (n != 1)} with {every}: a fleet verdict needs {FEWEST} or more"


def _has_cells(fleet):
    return any(r["cell"] for r in fleet.rows)


def _fleet_label(row):
    return f"fleet ({row['n_base']} board{'s' * (row['n_base'] != 1)})"


def _board_rows(fleet, row):
    """Each board's own row at the fleet row's cell, stride and new side."""
    key = (row["cell"], row["stride_bytes"], row["new_label"])
    for board, cmp in fleet.boards.items():
        for r in cmp.rows:
            if (r["cell"], r["stride_bytes"], r["new_label"]) == key:
                yield board, r


def _lead(fleet, row):
    return ([row["cell"]] if _has_cells(fleet) else []) + [format_size(row["stride_bytes"])] + \
        ([row["new_label"]] if len(fleet.labels) > 2 else [])


def _n(r):
    return f"{r['n_base']}/{r['n_new']}"


def table(fleet, tablefmt):
    unit = fleet.rate[1]
    headers = (["Cell"] if _has_cells(fleet) else []) + ["Stride"] + (["Side"] if len(fleet.labels) > 2 else []) + \
        ["Board", "N (base/new)", f"{fleet.labels[0]} {unit}", f"{'new' if len(fleet.labels) > 2 else fleet.labels[1]}"
         f" {unit}", "Speedup", f"{numbers.level(fleet.confidence)} CI", "Detects (80%)", "Verdict"]
    body = []
    for row in fleet.rows:
        out = fleet.stands_out.get((row["cell"], row["stride_bytes"], row["new_label"]), [])
        for board, r in _board_rows(fleet, row):
            # a board of one session a side: its within-run interval is no CI (docs/compare.md#sessions)
            alone = fleet.boards[board].withheld
            body.append(_lead(fleet, row) + [board + (" (stands out)" if board in out else ""), _n(r),
                        numbers.rate(r["base_gbps"]), numbers.rate(r["new_gbps"]), numbers.pct(r["speedup_pct"]),
                        numbers.NA if alone else numbers.pct_interval(r["ci_low_pct"], r["ci_high_pct"]),
                        detects(r), verdict(r)])
        body.append(_lead(fleet, row) + [_fleet_label(row), f"{row['n_base']} boards",
                    numbers.rate(row["base_gbps"]), numbers.rate(row["new_gbps"]), numbers.pct(row["speedup_pct"]),
                    numbers.pct_interval(row["ci_low_pct"], row["ci_high_pct"]), detects(row), verdict(row)])
    return layout.fitted(body, headers, tablefmt, lead=len(_lead(fleet, fleet.rows[0])) + 1 if fleet.rows else 1)


def left_out(fleet):
    """The boards that ran some side only, by name."""
    return [f"left out (not every side ran): {board} ran {', '.join(ran) or 'none'}"
            for board, ran in fleet.one_sided.items()]


def standing_out(fleet):
    lines = []
    for (cell, stride, new), boards in fleet.stands_out.items():
        where = format_size(stride) + (f" of {cell}" if cell else "") + (f", {new}" if len(fleet.labels) > 2 else "")
        lines.append(f"stands out at {where}: {', '.join(boards)} (outside the other boards' prediction interval, "
                     "Bonferroni over the boards)")
    return lines


def legend(fleet):
    k = sorted({r["n_base"] for r in fleet.rows})
    first = next(iter(fleet.boards.values()), None)
    lines = [f"fleet: {NAME}, {numbers.level(fleet.confidence)} confidence; N = {'/'.join(map(str, k)) or '0'} "
             "boards"]
    if first is not None:
        lines.append(f"each board: {SHORT_NAMES[first.test]}, one observation per {unit_name(first)} of its own "
                     "files")
    if fleet.withheld:
        lines.append(no_fleet_verdict(fleet))
    else:
        lines.append(adjustment(fleet))
    alone = [b for b, c in fleet.boards.items() if c.withheld]
    if alone:
        their = "no verdict of its own; its speedup counts" if len(alone) == 1 else \
            "no verdicts of their own; their speedups count"
        lines.append(f"one session a side, {their} in the fleet's: {', '.join(alone)}")
    lines += standing_out(fleet) + left_out(fleet)
    lines.append(see("board speeds cancel; the CI is the boards' spread of effects", BLOCKED))
    return "\n".join(hang(line, 2) for line in lines)


def _head(fleet):
    return f"{_title(fleet, units=True)}, geometric mean; boards as blocks"


def render_text(fleet):
    return f"{_head(fleet)}\n{table(fleet, 'simple')}\n{legend(fleet)}"


def render_markdown(fleet):
    return f"{_head(fleet)}\n\n{table(fleet, 'github')}\n\n{legend(fleet)}"


def render_commit(fleet):
    """The commit message's table: the fleet's row per stride (its rates the boards' geometric means),
    and a closing line with the test, the number of boards and what was left out."""
    labels = fleet.labels if len(fleet.labels) > 2 else ["Before", "After"]
    header = (["Cell"] if _has_cells(fleet) else []) + ["Stride", labels[0]]
    for label in labels[1:]:
        header += [label, "Speedup" if len(labels) == 2 else f"Speedup {label}"]
    body, keys = [], {}
    for r in fleet.rows:
        keys.setdefault((r["cell"], r["stride_bytes"]), []).append(r)
    for (cell, stride), rows in keys.items():
        line = ([cell] if _has_cells(fleet) else []) + [format_size(stride), numbers.rate(rows[0]["base_gbps"], 1)]
        for r in rows:
            line += [numbers.rate(r["new_gbps"], 1), numbers.pct(r["speedup_pct"], 0, sign=False)
                     + ("" if r["significant"] or numbers.missing(r["speedup_pct"]) else " n.s.")]
        body.append(line)
    lead = len(header) - 2 * (len(labels) - 1)
    out = layout.fitted(body, header, "commit", lead=lead, groups=[[i, i + 1] for i in range(lead, len(header), 2)])
    k = sorted({r["n_base"] for r in fleet.rows})
    boards = "/".join(map(str, k)) or "0"
    adjusted = "Holm-adjusted" if fleet.adjust == "holm" and fleet.tests_made > 1 else "unadjusted"
    footer = (f"{NAME}, {adjusted}; boards as blocks: {boards} boards, one observation per board; "
              f"rates: the boards' geometric means")
    if fleet.withheld:
        footer = f"{no_fleet_verdict(fleet)}; {footer}"
    if fleet.one_sided:
        footer += f"; left out (one side only): {', '.join(fleet.one_sided)}"
    out_boards = list(dict.fromkeys(b for found in fleet.stands_out.values() for b in found))
    if out_boards:
        footer += f"; stands out: {', '.join(out_boards)}"
    footer += f"; {numbers.level(fleet.confidence)} confidence; n.s. = no difference proven"
    return _title(fleet) + "\n" + out + "\n" + wrap(footer)


def json_rows(fleet):
    """The fleet's rows and every board's, each board's row named by its board."""
    rows = []
    for row in fleet.rows:
        for board, r in _board_rows(fleet, row):
            rows.append({**r, "board": board, "stands_out": board in fleet.stands_out.get(
                (row["cell"], row["stride_bytes"], row["new_label"]), [])})
        rows.append({**{k: v for k, v in row.items() if k != "boards"}, "board": "fleet",
                     "boards": ",".join(row["boards"]), "stands_out": False})
    return rows


def render_json(fleet):
    return json.dumps({"rows": numbers.records(json_rows(fleet)), "left_out": fleet.one_sided}, indent=1)


def render_csv(fleet):
    from ..analysis.compare import COLUMNS

    columns = COLUMNS + ["board", "boards", "stands_out"]
    rows = json_rows(fleet)
    return numbers.csv_text(columns, [[r.get(c, "") for c in columns] for r in rows])


RENDERERS = {"text": render_text, "markdown": render_markdown, "commit": render_commit, "json": render_json,
             "csv": render_csv}
