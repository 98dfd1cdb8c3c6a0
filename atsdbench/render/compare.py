"""Renderers for `atsdbench compare`: one function per --format, each returns a string."""
import json
import math

from tabulate import tabulate

from ..analysis import stats, timeseries
from ..analysis.compare import FOR_A_VERDICT
from . import numbers
from ..data.cells import where
from ..units import format_size

TEST_NAMES = {"welch": "Welch's t-test on log rates (speedup = ratio of geometric means, CI exponentiated)",
              "student": "Student's t-test (pooled s) on log rates (speedup = ratio of geometric means, "
                         "CI exponentiated)",
              "mannwhitney": "Hodges-Lehmann shift of log rates (speedup = median of the pairwise ratios), "
                             "exact Mann-Whitney CI and p",
              "paired-t": "Paired t on log rates, paired by round (speedup = ratio of geometric means, "
                          "CI exponentiated)",
              "wilcoxon": "Hodges-Lehmann median of the per-round log differences, paired by round, Wilcoxon "
                          "signed-rank CI and p",
              "satterthwaite": "Welch-Satterthwaite t on log rates, each side's variance its own rounds' plus its "
                               "noise profile's between-run component (speedup = ratio of run means, CI "
                               "exponentiated)"}
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


def _has_cells(cmp):
    return any(r["cell"] for r in cmp.rows)


def _nan(x):
    return isinstance(x, float) and math.isnan(x)


def verdict(row):
    if _nan(row["p_value"]):  # no test made (emulated, too few): that reason first
        return f"n/a ({row['note'] or 'no test'})"
    if row.get("verdict_withheld"):
        return "no verdict (one session a side)"
    if _nan(row["ci_low_pct"]):
        return "n/a (too few to prove any)"
    if not row["significant"]:
        # The CI alone would exclude 0: say which rule decided, or the row reads as a contradiction.
        holm = " (Holm)" if row["p_value"] < stats.alpha(row["confidence"]) else ""
        mde = row.get("mde_pct", math.nan)
        return f"no difference proven{holm}" if _nan(mde) else \
            f"n.s.{holm}: no change >= {numbers.pct(mde, 1, sign=False)} (80% power)"
    return "faster" if row["speedup_pct"] > 0 else "slower"


def detects(row):
    """The smallest speedup this row's design finds with 80% power: '>= 11.7%'."""
    mde = row.get("mde_pct", math.nan)
    return numbers.NA if _nan(mde) else f">= {numbers.pct(mde, 1, sign=False)}"


def _ci(row):
    return numbers.pct_interval(row["ci_low_pct"], row["ci_high_pct"])


def _sizes(cmp):
    return ", ".join(sorted({f"{r['n_base']}/{r['n_new']}" for r in cmp.rows}))


def adjustment(cmp):
    """What a verdict means: Holm over the family, or each comparison alone."""
    level = f"{stats.alpha(cmp.confidence):g}"
    made = cmp.tests_made
    if cmp.withheld:
        return f"no verdict: {cmp.withheld}"
    if made == 0:
        return "no verdict: no comparison could be made (the warnings say why)"
    if made <= 1:
        return f"verdict: p < {level} (one comparison: nothing to adjust)"
    if cmp.adjust == "holm":
        return (f"verdicts: Holm-adjusted p < {level} over the {made} comparisons made (the CIs are each "
                "comparison's own)")
    return f"verdicts: p < {level} for each comparison alone, not adjusted for the {made} made (--adjust none)"


def legend(cmp):
    agg = "mean" if cmp.metric == "mean" else "median"
    if cmp.paired:
        n = ", ".join(sorted({str(r["n_base"]) for r in cmp.rows}, key=int))
        return (f"{TEST_NAMES[cmp.test]}, {numbers.level(cmp.confidence)} confidence; observation = one round's "
                f"difference between two cells of one run (each the {agg} of its passes in that round); "
                f"N (rounds paired) = {n}; GB/s = 10^9 bytes/s\n{adjustment(cmp)}\n"
                f"paired by round: the cells of a round ran interleaved, so drift between rounds (and runs) moves "
                f"both alike and cancels; the CI covers the cells' own noise inside this run")
    unit = {"round": f"round (the {agg} of a round's passes)", "pass": "pass",
            "run": (f"file (a replicate run made at its own time; the {agg} of its round {agg}s, over its sub-runs "
                    "where it has them)" if cmp.level == "file" else
                    f"sub-run (a --runs sub-run of one file, each its own process; the {agg} of its round {agg}s)"),
            "round+profile": f"round (the {agg} of a round's passes)"}[cmp.unit]
    if cmp.unit == "round" and cmp.batched:
        made = sorted({n for ns in cmp.batched.values() for n in ns})
        unit = (f"batch mean of consecutive rounds ({timeseries.BATCHES} a side, from {'/'.join(map(str, made))} "
                f"rounds; each round the {agg} of its passes)")
    text = (f"{TEST_NAMES[cmp.test]}, {numbers.level(cmp.confidence)} confidence; observation = one {unit}; "
            f"N (base/new) = {_sizes(cmp)}; GB/s = 10^9 bytes/s\n{adjustment(cmp)}")
    if cmp.mixed:
        text += "\nreplicate runs on one side only: a single run is one observation"
        if cmp.test == "student":
            text += ", assumed to vary from run to run as the replicated side does"
    elif cmp.withheld:
        text += "\n" + within_run(cmp.confidence) + "\n" + CALIBRATE
    elif cmp.profiles:
        text += "\n" + profile_lines(cmp)
    elif cmp.unit != "run" or cmp.level != "file":
        text += "\n" + SINGLE_RUNS
    if not cmp.paired and one_boot(cmp.boots):
        text += "\n" + one_boot(cmp.boots)
    return text


# What a legend says a CI does not cover, in compare's words and model's alike.
# Measured with scripts/aa_false_positive.py: single runs drift more than their rounds predict.
SINGLE_RUNS = ("one file a side: the CI covers noise within its session only, not the host's drift between sessions "
               "minutes apart; compare replicate runs made at different times (a.json,b.json,...) to cover it")


def within_run(confidence):
    return (f"the within-run interval is a {numbers.level(confidence)} interval of this pair of runs only, not of "
            "the change another pair would see")


def one_boot(boots):
    """boots: per side, the boots its runs came from (compare.boots)."""
    return ("boot-to-boot not measured: one boot a side (replicate files from separate boots of each kernel would "
            "cover it)") if boots and max(boots) < 2 else ""


CALIBRATE = ("single runs get a verdict with a noise profile of each kernel: atsdbench calibrate (the same run "
             "options, once per kernel and plan) measures one, and compare finds it")


def profile_sources(cmp, short=False):
    """Where each side's between-run variance came from: 'Before: NAME (8 sub-runs x 5 rounds, 20 s
    apart, DATE)'; short: 'Before: 8 sub-runs, DATE'."""
    def one(p):
        c = p.calibration
        return f"{c['runs']} sub-runs, {p.data['date'][:10]}" if short else p.describe()
    sides = {}  # one profile may serve several sides (an A/A of one kernel)
    for i, p in sorted(cmp.profiles.items()):
        sides.setdefault(p.key, (p, []))[1].append(cmp.labels[i])
    return "; ".join(f"{', '.join(labels)}: {one(p)}" for p, labels in sides.values())


def profile_lines(cmp):
    """What a compare with noise profiles rests on, and what it does not cover."""
    from ..analysis import noise

    lines = [f"between-run variance from noise profiles (atsdbench calibrate: sub-runs in fresh processes of this "
             f"plan, host and kernel): {profile_sources(cmp)}",
             f"checked: each side's round spread against its profile's within-run variance (F test, two-sided "
             f"{noise.CHECK_LEVEL:.0%}; rows that disagree get no verdict); the between-run part is the host's noise "
             "when the profile was measured, which the check sees only through the within-run spread"]
    lines += [f"not covered: {note}" for note in cmp.profile_notes]
    for i, command in sorted(cmp.unprofiled.items()):
        lines.append(f"no verdict for {cmp.labels[i]}: no noise profile for its kernel ({command}, booted into it, "
                     "makes one)")
    return "\n".join(lines)


def _lead(cmp, key):
    cell, stride = key
    return ([cell] if _has_cells(cmp) else []) + [format_size(stride)]


def _table(cmp, tablefmt):
    headers = (["Cell"] if _has_cells(cmp) else []) + ["Stride", f"{cmp.labels[0]} GB/s"]
    for label in cmp.labels[1:]:
        ci = f"{numbers.level(cmp.confidence)} CI" if not cmp.withheld else "within-run interval"
        headers += [f"{label} GB/s", "Speedup", ci, "Detects (80%)", "Verdict"]
    body = []
    for key, rows in _by_key(cmp).items():
        line = _lead(cmp, key) + [numbers.rate(rows[0]["base_gbps"])]
        for r in rows:
            line += [numbers.rate(r["new_gbps"]), numbers.pct(r["speedup_pct"]), _ci(r), detects(r), verdict(r)]
        body.append(line)
    return tabulate(body, headers=headers, tablefmt=tablefmt, disable_numparse=True)


def _title(cmp):
    """"mprotect rate (GB/s)"; the calls of run --op where they are others."""
    return f"{'/'.join(getattr(cmp, 'ops', None) or ['mprotect'])} rate (GB/s)"


def render_text(cmp):
    return f"{_title(cmp)}, {CENTRES[cmp.metric]}\n{_table(cmp, 'simple')}\n{legend(cmp)}"


def render_markdown(cmp):
    return f"{_table(cmp, 'github')}\n\n{legend(cmp)}"


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
    if cmp.profiles:
        unit = f"one observation per round, between-run variance from noise profiles ({profile_sources(cmp, True)})"
        unit += "".join(f"; no profile for {cmp.labels[i]}, so n.s." for i in sorted(cmp.unprofiled))
    boot = "; one boot a side (boot-to-boot not measured)" if not cmp.paired and cmp.boots and max(cmp.boots) < 2 else ""
    if not cmp.paired and cmp.level != "file" and not cmp.profiles:
        boot = "; one session a side (the drift between sessions not measured)" + boot
    mdes = [r["mde_pct"] for r in cmp.rows if not _nan(r.get("mde_pct", math.nan))]
    if mdes:
        low, high = numbers.pct(min(mdes), 0, sign=False), numbers.pct(max(mdes), 0, sign=False)
        boot += f"; detects >= {low if low == high else low[:-1] + '-' + high} (80% power)"
    if cmp.withheld:
        return f"no verdict: one session a side ({unit}; {n}{boot}), so n.s. throughout; {FOR_A_VERDICT} for one"
    return (f"{SHORT_NAMES[cmp.test]}, {adjusted}; {unit}; {n}{boot}; "
            f"{numbers.level(cmp.confidence)} confidence; n.s. = no difference proven")


def render_commit(cmp):
    """The layout kernel commit messages use (POWER9 NPU ATSD patch, 2018), plus what pasting needs:
    "n.s." after a speedup not proven, and one closing line saying test, unit, N per side and
    confidence.  Columns are left-aligned and two spaces apart; no trailing spaces, no colour."""
    labels = cmp.labels if len(cmp.labels) > 2 or cmp.paired else ["Before", "After"]
    header = (["Cell"] if _has_cells(cmp) else []) + ["Stride", labels[0]]
    for label in labels[1:]:
        header += [label, "Speedup" if len(labels) == 2 else f"Speedup {label}"]
    body = [header]
    for key, rows in _by_key(cmp).items():
        line = _lead(cmp, key) + [numbers.rate(rows[0]["base_gbps"], 1)]
        for r in rows:
            line += [numbers.rate(r["new_gbps"], 1), numbers.pct(r["speedup_pct"], 0, sign=False)
                     + ("" if r["significant"] or numbers.missing(r["speedup_pct"]) else
                        " emulated" if r["note"] == "emulated (qemu-tcg)" else " n.s.")]
        body.append(line)
    widths = [max(len(row[i]) for row in body) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in body]
    return _title(cmp) + "\n" + "\n".join(lines) + "\n" + _commit_footer(cmp)


def render_csv(cmp):
    from ..analysis.compare import COLUMNS
    from . import counts

    return numbers.csv_text(*counts.csv_rows(cmp, COLUMNS))


def render_json(cmp):
    from . import counts

    return json.dumps(numbers.records(counts.json_rows(cmp)), indent=1)


def render_ministat(cmp):
    """FreeBSD ministat's block per stride, for the same observations, with ministat's own numbers:
    Student's t on the rates, the difference and the difference / baseline mean."""
    from .. import ministat

    if cmp.paired:
        return _ministat_paired(cmp)
    blocks = []
    for cell, stride in _keys(cmp):
        sets = [ministat.Dataset(cmp.labels[i], cmp.observations[(i, cell, stride)]) for i in range(len(cmp.labels))]
        blocks.append(f"stride {where(stride, cell)}: GB/s, one observation per {_ministat_unit(cmp)}\n"
                      + ministat.render(sets, confidence=cmp.confidence, width=74,
                                        plot=all(len(d.values) for d in sets)))
    return "\n".join(blocks).rstrip("\n")


def _ministat_unit(cmp):
    if cmp.profiles:  # ministat's t sees the rounds only
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


RENDERERS = {"text": render_text, "markdown": render_markdown, "csv": render_csv, "json": render_json,
             "commit": render_commit, "ministat": render_ministat}
