"""Renderers for `atsdbench compare`: one function per --format, each returns a string, and the
notes under compare's tables (render/notes.py holds those model's tables print too)."""
import json
import math

from ..analysis import stats, timeseries
from . import layout, numbers, scaling
from .notes import (FOR_A_VERDICT, NOISE_PROFILES, PAIRED, SCALING, WIDTH, boots_not_measured, leaves_out_sessions,
                    one_session_a_side, one_side_replicated, plural, see, what_gives_a_verdict, wrap)
from ..data.cells import where
from ..units import format_size

# The tests' long descriptions are in docs/compare.md ("Rules and options"); the legend names them short.
SHORT_NAMES = {"welch": "Welch's t on log rates", "student": "Student's t on log rates",
               "mannwhitney": "Hodges-Lehmann/Mann-Whitney on log rates",
               "paired-t": "Paired t on log rates, paired by round",
               "wilcoxon": "Wilcoxon signed-rank on log rates, paired by round",
               "satterthwaite": "Welch-Satterthwaite t on log rates"}
CENTRES = {"mean": "geometric mean", "median": "median"}


def _keys(cmp):
    seen = []
    for r in cmp.rows:
        if (r["cell"], r["stride_bytes"]) not in seen:
            seen.append((r["cell"], r["stride_bytes"]))
    return seen


def _by_key(cmp):
    return {k: [r for r in cmp.rows if (r["cell"], r["stride_bytes"]) == k] for k in _keys(cmp)}


def _by_side(cmp, rows):
    """One (cell, stride)'s rows in the order of the new sides, None where a side has none there."""
    sides = cmp.labels[1:]
    if len(set(sides)) < len(sides):  # a file given twice under one name: the rows in side order
        return rows + [None] * (len(sides) - len(rows))
    found = {r["new_label"]: r for r in rows}
    return [found.get(label) for label in sides]


def _has_cells(cmp):
    return any(r["cell"] for r in cmp.rows)


def _nan(x):
    return isinstance(x, float) and math.isnan(x)


def verdict(row):
    if _nan(row["p_value"]):  # no test made (emulated, too few): that reason first
        return f"n/a ({row['note'] or 'no test'})"
    if row.get("verdict_withheld"):
        return "no verdict"  # the note under the table says why
    if _nan(row["ci_low_pct"]):
        return "n/a (too few to prove any)"
    if not row["significant"]:
        # The CI alone would exclude 0: say which rule decided, or the row reads as a contradiction.
        holm = " (Holm)" if row["p_value"] < stats.alpha(row["confidence"]) else ""
        # the Detects column beside it says which change it could have seen
        return f"no difference proven{holm}" if _nan(row.get("mde_pct", math.nan)) else f"n.s.{holm}"
    return "faster" if row["speedup_pct"] > 0 else "slower"


def detects(row):
    """The smallest speedup this row's design finds with 80% power: '>= 11.7%'."""
    mde = row.get("mde_pct", math.nan)
    return numbers.NA if _nan(mde) else f">= {numbers.pct(mde, 1, sign=False)}"


def _ci(row):
    return numbers.pct_interval(row["ci_low_pct"], row["ci_high_pct"])


def _sizes(cmp):
    return ", ".join(sorted({f"{r['n_base']}/{r['n_new']}" for r in cmp.rows}))


# ---- the notes under compare's tables ----

def between_run_from_noise_profiles(runs, boot=True, stored=False):
    """Where one-process sides took their between-run variance: runs = the profiles' sub-run counts;
    stored: some came from this machine's store, not from the command line (the intervals then
    depend on it; the point estimates never do)."""
    return see(f"between-run variance: noise profiles{' from the store' if stored else ''} "
               f"({'/'.join(map(str, runs))} sub-runs)" + ("; boots not covered" if boot else ""), NOISE_PROFILES)


def drift_cancels():
    """compare --by: what pairing by round covers."""
    return see("paired by round: drift cancels; the CI is this run's own noise", PAIRED)


def efficiency_from_speedup(references):
    """Above compare --by threads's table."""
    return see(f"efficiency = (1 + speedup) / (N/N0), N0 = {references}; CI: the paired speedup's", SCALING)


def rounds_over_placements(ks):
    """compare's unit where the files rotated their rounds over K placements (run --placements)."""
    return f"round (over {' or '.join(map(str, ks))} placements)"


def campaign_legend(c):
    """The campaign's lines under compare's table: the boots' order, how often it switched kernel,
    and each side's boot_ids (8 characters)."""
    letters = {n: chr(ord("A") + i) if i < 26 else n for i, n in enumerate(c.names)}
    order = "".join(letters[e["kernel"]] for e in c.done)
    switches = sum(1 for a, b in zip(order, order[1:]) if a != b)
    lines = [f"campaign: one file per boot; boots in order {order or '-'}; {switches} of "
             f"{max(len(order) - 1, 0)} consecutive boots switch kernel"]
    for n in c.names:
        ids = [e["boot_id"][:8] for e in c.done if e["kernel"] == n]
        lines.append(f"{letters[n]} = {n}: boot_ids {', '.join(ids) or 'none'}")
    missed = [e for e in c.events if e["event"] in ("missed", "foreign")]
    if missed:
        lines.append(f"{len(missed)} missed slot{'s' * (len(missed) != 1)} (atsdbench campaign status lists them)")
    return [line if len(line) <= WIDTH else line[:WIDTH - 3] + "..." for line in lines]


def adjustment(cmp):
    """What a verdict means: Holm over the family, or each comparison alone."""
    level = numbers.general(stats.alpha(cmp.confidence), 6)
    made = cmp.tests_made
    if cmp.withheld:
        return one_session_a_side()
    if made == 0:
        return "no verdict: no comparison could be made (the warnings say why)"
    if made <= 1:
        return f"verdict: p < {level} (one comparison: nothing to adjust)"
    if cmp.adjust == "holm":
        return f"verdicts: Holm-adjusted p < {level} over the {plural(made, 'comparison')} made"
    return f"verdicts: p < {level} each, not adjusted for the {made} made (--adjust none)"


def _unit_words(cmp):
    """The observation in a few words: 'round', 'file', 'batch of rounds (5 a side)'."""
    if cmp.paired:
        return "round's difference of two cells"
    if cmp.unit == "round" and cmp.batched:
        return f"batch of consecutive rounds ({timeseries.BATCHES} a side)"
    words = {"round+noise-profile": "round"}.get(cmp.unit, unit_name(cmp))
    if cmp.placements and words == "round":  # run --placements: the rounds rotate over K regions
        words = rounds_over_placements(cmp.placements)
    return words


def legend(cmp):
    """At most notes.MAX_NOTES lines under the table: the test and N, what a verdict means, and the
    one thing the CI does not cover that matters most here, each naming its docs/ anchor."""
    if cmp.paired:
        n = ", ".join(sorted({str(r["n_base"]) for r in cmp.rows}, key=int))
        return "\n".join([f"{SHORT_NAMES[cmp.test]}, {numbers.level(cmp.confidence)} confidence; N (rounds) = {n}",
                          adjustment(cmp), drift_cancels()])
    lines = [f"{SHORT_NAMES[cmp.test]}, {numbers.level(cmp.confidence)} confidence; one observation per "
             f"{_unit_words(cmp)}; N = {_sizes(cmp)}", adjustment(cmp)]
    boot = bool(one_boot(cmp.boots))
    if cmp.mixed:
        lines.append(one_side_replicated(cmp.test == "student"))
    elif cmp.withheld:
        lines.append(what_gives_a_verdict())
    elif cmp.noise_profiles:
        runs = sorted({p.calibration["runs"] for p in cmp.noise_profiles.values()})
        stored = any(getattr(p, "stored", False) for p in cmp.noise_profiles.values())
        lines.append(between_run_from_noise_profiles(runs, boot, stored))
    elif cmp.unit != "run" or cmp.level != "file":
        lines.append(leaves_out_sessions(boot))
    elif boot:
        lines.append(boots_not_measured())
    return "\n".join(lines)


def one_boot(boots):
    """boots: per side, the boots its runs came from (compare.boots): the note where every side is
    one boot, else ''."""
    return boots_not_measured() if boots and max(boots) < 2 else ""


def noise_profile_sources(cmp, short=False):
    """Where each side's between-run variance came from: 'Before: NAME (8 sub-runs x 5 rounds, 20 s
    apart, DATE)'; short (the commit format): 'Before: NAME sha256 DIGEST, 8 sub-runs, DATE', the name
    and digest another machine needs to be given the same profile (--noise-profile)."""
    def one(p):
        c = p.calibration
        return f"{p.name} sha256 {p.digest}, {c['runs']} sub-runs, {p.data['date'][:10]}" if short else \
            p.describe()
    sides = {}  # one profile may serve several sides (an A/A of one kernel)
    for i, p in sorted(cmp.noise_profiles.items()):
        sides.setdefault(p.key, (p, []))[1].append(cmp.labels[i])
    return "; ".join(f"{', '.join(labels)}: {one(p)}" for p, labels in sides.values())


def _lead(cmp, key):
    cell, stride = key
    return ([cell] if _has_cells(cmp) else []) + [format_size(stride)]


def _table(cmp, tablefmt):
    by_count = scaling_table(cmp, tablefmt)  # a threads sweep: a row per thread count
    if by_count is not None:
        return by_count
    unit = cmp.rate[1]
    headers = (["Cell"] if _has_cells(cmp) else []) + ["Stride", f"{cmp.labels[0]} {unit}"]
    for label in cmp.labels[1:]:
        ci = f"{numbers.level(cmp.confidence)} CI" if not cmp.withheld else "within-run interval"
        headers += [f"{label} {unit}", "Speedup", ci, "Detects (80%)", "Verdict"]
    body = []
    for key, rows in _by_key(cmp).items():
        line = _lead(cmp, key) + [numbers.rate(rows[0]["base_gbps"])]
        for r in _by_side(cmp, rows):  # a side without this stride: blank, the warning says so
            line += [numbers.rate(r["new_gbps"]), numbers.pct(r["speedup_pct"]), _ci(r), detects(r), verdict(r)] \
                if r else ["-", "", "", "", "n/a (not measured)"]
        body.append(line)
    lead = len(_lead(cmp, _keys(cmp)[0])) + 1 if body else len(headers)
    sides = [list(range(i, i + 5)) for i in range(lead, len(headers), 5)]
    return layout.fitted(body, headers, tablefmt, lead=lead, groups=sides, names=cmp.labels[1:])


def _title(cmp, units=False):
    """"mprotect rate (GB/s)"; the calls of run --op where they are others; the unit the files name
    (analysis/scaling.rate_of: a workload's loops/s)."""
    unit = cmp.rate[2] if units else cmp.rate[1]
    return f"{'/'.join(getattr(cmp, 'ops', None) or ['mprotect'])} rate ({unit})"


def _head(cmp):
    """The title, and for compare --by threads what its efficiency column is."""
    head = f"{_title(cmp, units=True)}, {CENTRES[cmp.metric]}"
    if cmp.paired and cmp.by == "threads" and cmp.by_values:
        head += "\n" + efficiency_from_speedup(cmp.by_values[0])
    return head


def render_text(cmp):
    return f"{_head(cmp)}\n{_table(cmp, 'simple')}\n{legend(cmp)}"


def render_markdown(cmp):
    return f"{_head(cmp)}\n\n{_table(cmp, 'github')}\n\n{legend(cmp)}"


def _commit_footer(cmp):
    sizes = {(r["n_base"], r["n_new"]) for r in cmp.rows}
    if len(sizes) == 1 and len({n for pair in sizes for n in pair}) == 1:
        n = f"N = {next(iter(sizes))[0]} per side"
    else:
        n = f"N (base/new) = {_sizes(cmp)}"
    adjusted = "Holm-adjusted" if cmp.adjust == "holm" and cmp.tests_made > 1 else "unadjusted"
    if cmp.paired:
        n = n.replace("per side", "rounds paired").replace("N (base/new)", "N (rounds paired)")
    unit = "one difference per round" if cmp.paired else f"one observation per {unit_name(cmp)}"
    if not cmp.paired and cmp.unit == "round" and cmp.batched:
        unit = f"one observation per batch of consecutive rounds ({timeseries.BATCHES} a side)"
    if cmp.noise_profiles:
        unit = (f"one observation per round, between-run variance from noise profiles "
                f"({noise_profile_sources(cmp, True)})")
        unit += "".join(f"; no profile for {cmp.labels[i]}" for i in sorted(cmp.without_noise_profile))
    boot = "; one boot a side" if not cmp.paired and cmp.boots and max(cmp.boots) < 2 else ""
    if not cmp.paired and cmp.level != "file" and not cmp.noise_profiles and not cmp.withheld:
        boot = "; one session a side" + boot
    mdes = [r["mde_pct"] for r in cmp.rows if not _nan(r.get("mde_pct", math.nan))]
    if mdes:
        low, high = numbers.pct(min(mdes), 0, sign=False), numbers.pct(max(mdes), 0, sign=False)
        boot += f"; detects >= {low if low == high else low[:-1] + '-' + high} (80% power)"
    if cmp.withheld:
        return wrap(f"no verdict: one session a side, so n.s. throughout; {unit}; {n}{boot}; "
                    f"for a verdict: {FOR_A_VERDICT}")
    return wrap(f"{SHORT_NAMES[cmp.test]}, {adjusted}; {unit}; {n}{boot}; "
                     f"{numbers.level(cmp.confidence)} confidence; n.s. = no difference proven")


def render_commit(cmp):
    """The layout kernel commit messages use (POWER9 NPU ATSD patch, 2018), plus what pasting needs:
    "n.s." after a speedup not proven, and one closing line saying test, unit, N per side and
    confidence.  Columns are left-aligned and two spaces apart; no trailing spaces, no colour."""
    if cmp.paired and cmp.by == "threads" and cmp.by_values:  # a row per thread count, as the text table
        reasons = []
        table = by_threads_commit(cmp, reasons)
        return _commit_title(cmp) + "\n" + table + "\n" + _footnotes(reasons) + _commit_footer(cmp)
    labels = cmp.labels if len(cmp.labels) > 2 or cmp.paired or cmp.labels_given else ["Before", "After"]
    header = (["Cell"] if _has_cells(cmp) else []) + ["Stride", labels[0]]
    for label in labels[1:]:
        header += [label, "Speedup" if len(labels) == 2 else f"Speedup {label}"]
    body, reasons = [], []
    for key, rows in _by_key(cmp).items():
        line = _lead(cmp, key) + [numbers.rate(rows[0]["base_gbps"], 1)]
        for r in _by_side(cmp, rows):
            line += [numbers.rate(r["new_gbps"], 1), numbers.pct(r["speedup_pct"], 0, sign=False)
                     + _commit_mark(r, reasons)] if r else ["-", ""]
        body.append(line)
    lead = len(header) - 2 * (len(labels) - 1)
    table = layout.fitted(body, header, "commit", lead=lead, groups=[[i, i + 1] for i in range(lead, len(header), 2)],
                          names=labels[1:])
    return _commit_title(cmp) + "\n" + table + "\n" + _footnotes(reasons) + _commit_footer(cmp)


def _commit_mark(row, reasons):
    """What follows a speedup in the commit format: nothing where proven, `n.s.` where tested and not
    proven, `emulated`, and `n/a[k]` where no test was made, k the footnote naming the reason as the
    text table's Verdict does (`reasons`, the footnotes' list, grows)."""
    if row["significant"] or numbers.missing(row["speedup_pct"]):
        return ""
    if row["note"] == "emulated (qemu-tcg)":
        return " emulated"
    said = verdict(row)
    if not said.startswith("n/a ("):
        return " n.s."
    why = said[len("n/a ("):-1]
    if why not in reasons:
        reasons.append(why)
    return f" n/a[{reasons.index(why) + 1}]"


def _footnotes(reasons):
    """The commit format's footnotes of its n/a rows, a line each (wrapped), before its closing line."""
    return "".join(f"{wrap(f'[{k}] n/a: {why}')}\n" for k, why in enumerate(reasons, 1))


def _commit_title(cmp):
    """The title with the statistic its rate columns hold, as the text table's."""
    return f"{_title(cmp)}, {CENTRES[cmp.metric]}"


def render_csv(cmp):
    from ..analysis.compare import COLUMNS
    from . import counts

    columns, rows = counts.csv_rows(cmp, COLUMNS)
    # the statistic base_gbps and new_gbps hold, named in every row (a csv has no title)
    return numbers.csv_text(list(columns) + ["centre"], [{**r, "centre": CENTRES[cmp.metric]} for r in rows])


def render_json(cmp):
    from . import counts

    whole = getattr(cmp, "whole_labels", {})  # labels cut for text, whole here
    rows = [{**r, **{k: whole.get(r[k], r[k]) for k in ("base_label", "new_label") if k in r},
             "centre": CENTRES[cmp.metric]} for r in counts.json_rows(cmp)]
    return json.dumps(numbers.records(rows), indent=1)


def render_ministat(cmp):
    """FreeBSD ministat's block per stride, for the same observations, with ministat's own numbers:
    Student's t on the rates, the difference and the difference / baseline mean."""
    from .. import ministat

    if cmp.paired:
        return _ministat_paired(cmp)
    blocks = []
    for cell, stride in _keys(cmp):
        sets = [ministat.Dataset(cmp.labels[i], cmp.observations[(i, cell, stride)]) for i in range(len(cmp.labels))
                if (i, cell, stride) in cmp.observations]
        blocks.append(f"stride {where(stride, cell)}: {cmp.rate[1]}, one observation per {_ministat_unit(cmp)}\n"
                      + ministat.render(sets, confidence=cmp.confidence, width=74,
                                        plot=all(len(d.values) for d in sets)))
    return "\n".join(blocks).rstrip("\n")


def _ministat_unit(cmp):
    if cmp.noise_profiles:  # ministat's t sees the rounds only
        return ("round (ministat's t below ignores the between-run variance compare's verdict takes from the noise "
                "profiles)")
    return unit_name(cmp)


def unit_name(cmp):
    """The unit in one word: a run is a replicate file, or a --runs sub-run where every side is one file."""
    if cmp.unit == "run":
        return "file" if cmp.level == "file" else "sub-run"
    return cmp.unit


def _ministat_paired(cmp):
    """compare --by: ministat's summary of the per-round differences (% of the base cell's rate in the
    same round), one data set per value against the first, and the paired result under it.  Two
    ministat data sets of the cells' own rates would print ministat's unpaired Student's t, which
    the round-to-round drift the pairing cancels would swamp."""
    from .. import ministat

    blocks = []
    for key, rows in _by_key(cmp).items():
        cell, stride = key
        sets, lines = [], []
        for r in rows:
            j = cmp.labels.index(r["new_label"])
            base, new = cmp.pairs.get((j, cell, stride), ((), ()))
            if len(base):
                sets.append(ministat.Dataset(f"{r['new_label']} vs {r['base_label']}",
                                             [(n / b - 1) * 100 for b, n in zip(base, new)]))
            lines.append(f"{r['new_label']} vs {r['base_label']}, paired by round: {numbers.pct(r['speedup_pct'])} "
                         f"{_ci(r)}, p = {_p(r['p_value'])}{_p_adjusted(cmp, r)}: {verdict(r)}")
        head = (f"stride {where(stride, cell)}: per-round difference, % of {rows[0]['base_label']}'s rate in the "
                "same round, one per round")
        body = ministat.render(sets, confidence=cmp.confidence, width=74, plot=True, stats_only=True) if sets \
            else ""
        blocks.append(f"{head}\n{body}" + "\n".join(lines) + "\n")
    return "\n".join(blocks) + legend(cmp)


def _p(p):
    return numbers.general(p)


def _p_adjusted(cmp, row):
    return f" (Holm: {_p(row['p_adjusted'])})" if cmp.adjust == "holm" and cmp.tests_made > 1 else ""


# ---- a threads sweep: a row per thread count (render/scaling.py: show's table, the rate formatter) ----

def by_threads_table(cmp, tablefmt):
    """compare FILE --by threads, a row per thread count: the base cell's row (the reference of the
    efficiency), then each other value's rate, per task, speedup against the base, efficiency
    (1 + speedup) / (N / N0) and its CI (the paired speedup's, mapped the same way), verdict.  Other
    axes give a block each, headed by their values (as show's), not a column: within WIDTH."""
    from ..analysis.scaling import efficiency

    values = cmp.by_values
    unit = cmp.rate[1]
    ci = f"{numbers.level(cmp.confidence)} CI"
    headers = ["Stride", scaling.tasks_title(cmp.tasks), unit, "per task", "Speedup", "Efficiency", ci, "Verdict"]
    blocks = {}
    seen = set()
    n0 = values[0]
    for r in cmp.rows:
        body = blocks.setdefault(r["cell"], [])
        key = (r["cell"], r["stride_bytes"])
        if key not in seen:
            seen.add(key)
            body.append([format_size(r["stride_bytes"]), str(n0), scaling.rate(r["base_gbps"]),
                         scaling.rate(r["base_gbps"] / n0 if not numbers.missing(r["base_gbps"]) else None), "-",
                         "100%", "reference", "-"])
        n = values[cmp.labels.index(r["new_label"])]
        eff = [efficiency(r[k], n, n0) for k in ("speedup_pct", "ci_low_pct", "ci_high_pct")]
        body.append([format_size(r["stride_bytes"]), str(n), scaling.rate(r["new_gbps"]),
                     scaling.rate(r["new_gbps"] / n if not numbers.missing(r["new_gbps"]) else None),
                     numbers.pct(r["speedup_pct"]), scaling.share(eff[0]),
                     numbers.NA if numbers.missing(eff[1]) else
                     numbers.interval(eff[1], eff[2], lambda v: numbers.fixed(v, 0)) + "%", verdict(r)])
    out = []
    for group, body in blocks.items():
        table = layout.fitted(body, headers, tablefmt)
        if group:
            table = f"**{group}**\n\n{table}" if tablefmt == "github" else f"{group}\n{table}"
        out.append(table)
    return "\n\n".join(out)


def by_threads_commit(cmp, reasons=None):
    """compare --by threads --format commit: Stride, thread count, rate, speedup against the first
    count ("n.s." where not proven, "n/a[k]" where not tested: _commit_mark), efficiency; left-aligned,
    two spaces apart, no trailing spaces."""
    reasons = [] if reasons is None else reasons
    from ..analysis.scaling import efficiency

    values = cmp.by_values
    grouped = any(r["cell"] for r in cmp.rows)
    body = [(["Cell"] if grouped else []) + ["Stride", scaling.tasks_title(cmp.tasks), cmp.rate[1], "Speedup",
                                              "Efficiency"]]
    seen = set()
    for r in cmp.rows:
        lead = [r["cell"]] if grouped else []
        if (r["cell"], r["stride_bytes"]) not in seen:
            seen.add((r["cell"], r["stride_bytes"]))
            body.append(lead + [format_size(r["stride_bytes"]), str(values[0]), scaling.rate(r["base_gbps"]), "",
                                "100%"])
        n = values[cmp.labels.index(r["new_label"])]
        speedup = numbers.pct(r["speedup_pct"], 0, sign=False) + _commit_mark(r, reasons)
        body.append(lead + [format_size(r["stride_bytes"]), str(n), scaling.rate(r["new_gbps"]), speedup,
                            scaling.share(efficiency(r["speedup_pct"], n, values[0]))])
    widths = [max(len(row[i]) for row in body) for i in range(len(body[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in body)


def threads_of(cmp):
    """{cell name: thread count} where two files' rows are cells of a threads sweep (compare's
    cell_specs), else None: then compare's own layout is kept."""
    specs = getattr(cmp, "cell_specs", None) or {}
    if cmp.paired or len(cmp.labels) != 2 or not specs:
        return None
    found = {name: spec.get("threads") for name, spec in specs.items()}
    if any(not isinstance(found.get(r["cell"]), int) for r in cmp.rows) or len(set(found.values())) < 2:
        return None
    return found


def files_table(cmp, tablefmt, threads):
    """compare of two files whose cells are thread counts: a row per (stride, thread count), the other
    axes' values (if any) in a Cell column; compare's columns otherwise."""
    unit = cmp.rate[1]
    specs = cmp.cell_specs
    from ..data.cells import value_text

    others = {name: " ".join(f"{a}={value_text(v)}" for a, v in spec.items() if a != "threads")
              for name, spec in specs.items()}
    grouped = any(others.get(r["cell"]) for r in cmp.rows)
    ci = f"{numbers.level(cmp.confidence)} CI" if not cmp.withheld else "within-run interval"
    # no verdict (one session a side): no detectable change either, so no column of n/a
    detect = [] if cmp.withheld else ["Detects (80%)"]
    headers = ["Stride", scaling.tasks_title(cmp.tasks)] + (["Cell"] if grouped else []) + [
        f"{cmp.labels[0]} {unit}", f"{cmp.labels[1]} {unit}", "Speedup", ci] + detect + ["Verdict"]
    body = []
    for r in sorted(cmp.rows, key=lambda r: (r["stride_bytes"], others.get(r["cell"], ""), threads[r["cell"]])):
        body.append([format_size(r["stride_bytes"]), str(threads[r["cell"]])]
                    + ([others.get(r["cell"], "")] if grouped else [])
                    + [scaling.rate(r["base_gbps"]), scaling.rate(r["new_gbps"]), numbers.pct(r["speedup_pct"]), _ci(r)]
                    + ([detects(r)] if detect else []) + [verdict(r)])
    return layout.fitted(body, headers, tablefmt)


def scaling_table(cmp, tablefmt):
    """compare's table in the scaling layout where it applies (compare --by threads, or two files of
    thread-count cells), else None."""
    if cmp.paired and cmp.by == "threads" and getattr(cmp, "by_values", None):
        return by_threads_table(cmp, tablefmt)
    threads = threads_of(cmp)
    if threads:
        return files_table(cmp, tablefmt, threads)
    return None


RENDERERS = {"text": render_text, "markdown": render_markdown, "csv": render_csv, "json": render_json,
             "commit": render_commit, "ministat": render_ministat}
