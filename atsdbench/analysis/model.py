"""`atsdbench model`: the per-call cost of mprotect as fixed + per-page x pages, and one whole-flush cost.

Below the kernel's single-page flush ceiling a call invalidates page by page, so its time grows with
the pages it covers: fixed_us + per_page_us * pages; above it the kernel flushes the whole address
space for a cost that no longer grows per page: full_flush_us.  crossover_pages is where they meet.
Intervals: a bootstrap over compare's unit of replication (compare.choose_unit) gives each
parameter's standard error, the interval estimate +- t(df) x that error, resampled units spread by
sqrt(n/(n-1)); why not the bootstrap's percentiles, and what each unit covers: docs/model.md
("Confidence intervals").  Pure: functions of result tables and arrays; render/model.py words them.
"""
import dataclasses
import math
import warnings as _warnings

import numpy as np

from ..errors import UsageError
from ..units import format_size
from .compare import WITHHELD, boots, choose_unit, input_warnings, resolve_options, withholds
from .stats import chunk_rows, mean_by_rows

PARAMS = ("fixed_us", "per_page_us", "full_flush_us", "crossover_pages")
RESAMPLES = 2000
SEED = 0
# Counters: full flushes per call, on the traced passes.  Per call, not per flush: a big range can
# take one full flush plus several partial ones (x86 6.x, 4M: 1 full + ~6.7 partial per call), and
# the tracepoint counts system-wide, so other processes' flushes blur a pure regime by a few percent.
# A call with bystanders flushes on each of their CPUs too (2 or more full flushes per call).
# Between the two bounds some calls flushed everything and some did not: the counters do not decide.
FULL_SHARE = 0.9
# Data: a whole flush replaces pages x per-page cost by one fixed cost, so a stride past the ceiling
# runs several times faster than the line predicts (8x in the 2018 POWER9 table), while rounds of one
# stride differ by a few percent: half the prediction separates the two with room on both sides.
DATA_DROP = 0.5
# Whole-flush strides whose cost rises across them by more than half their mean are not one constant.
GROWTH = 0.5
PER_PAGE, WHOLE = "per-page", "whole-flush"
# Why a Model has no CI (Model.why_no_ci), as a code render/model.py words: one observation per stride,
# from a published table (import --table) or from a file of one unit.
NO_CI_TABLE, NO_CI_ONE_UNIT = "table", "one-unit"


@dataclasses.dataclass
class Model:
    file: str
    label: str
    cell: object  # None for a file without cells, else the cell's name ("bystanders=1")
    page_bytes: int
    stride_bytes: list
    pages: np.ndarray
    whole: np.ndarray  # bool per stride
    sources: list  # what decided each stride's regime: counters, ceiling or data
    source_notes: list  # the same, with the evidence ("counters (98% full)")
    us_per_call: np.ndarray  # per stride: the mean of its unit means
    params: dict  # name, name_low, name_high for each of PARAMS
    residuals: np.ndarray
    unit: object  # "run", "round", "pass", or None when there is no CI
    n_units: int
    confidence: float
    why_no_ci: object  # None, NO_CI_TABLE or NO_CI_ONE_UNIT
    warnings: list
    draws: np.ndarray = None  # (resamples, 4) bootstrap draws of PARAMS, for before/after
    processes: int = 1  # runs (processes) the side's data come from
    boots: int = 1  # boots they come from (host.boot_id)
    sessions: int = 1  # files they come from: a file's --runs sub-runs share one session

    def record(self):
        """The JSON object: exactly the keys the documentation lists."""
        out = {"file": self.file, "label": self.label, "cell": self.cell}
        for p in PARAMS:
            for key in (p, p + "_low", p + "_high"):
                out[key] = _finite(self.params[key])
        out.update(unit=self.unit, n_units=self.n_units, processes=self.processes)
        out["strides"] = [{"stride_bytes": int(s), "pages": _finite(float(p)),
                           "regime": WHOLE if w else PER_PAGE, "regime_source": src,
                           "us_per_call": _finite(float(y)), "residual_us": _finite(float(r))}
                          for s, p, w, src, y, r in zip(self.stride_bytes, self.pages, self.whole, self.sources,
                                                        self.us_per_call, self.residuals)]
        return out


def _finite(v):
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


# --- the fit, vectorized over resamples -------------------------------------------------------------

def estimate(y, pages, whole):
    """The four parameters from stride means.  y: (S,) or (B, S), one row per resample.  Returns (B, 4)
    in PARAMS order; NaN where a parameter is undefined (too few strides, or no positive slope)."""
    y = np.atleast_2d(np.asarray(y, dtype=float))
    pages, whole = np.asarray(pages, dtype=float), np.asarray(whole, dtype=bool)
    rows = y.shape[0]
    fixed = slope = np.full(rows, np.nan)
    line = ~whole
    if len(np.unique(pages[line])) >= 2:
        design = np.column_stack([np.ones(line.sum()), pages[line]])
        fixed, slope = np.linalg.pinv(design) @ y[:, line].T  # ordinary least squares, strides weighted equally
    full = y[:, whole].mean(axis=1) if whole.any() else np.full(rows, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = np.where(slope > 0, (full - fixed) / slope, np.nan)
    return np.column_stack([fixed, slope, full, cross])


def residuals(y, pages, whole, params):
    """Per stride: time minus the line (per-page strides) or minus the whole-flush level."""
    fixed, slope, full, _ = params
    return np.where(whole, y - full, y - (fixed + slope * pages))


def bootstrap(units, pages, whole, rng, resamples=RESAMPLES, chunk=None):
    """Parameter draws from resampled units (rows of `units`: one unit's mean per stride, NaN where it
    lacks the stride).  Rows are drawn whole, so a slow allocation stays slow for every stride.  Each
    column's deviations are spread by sqrt(n/(n-1)) first, so the draws' variance is unbiased.
    Resampled `chunk` rows at a time (chunk_rows: bounded memory); the draws do not depend on it."""
    units = np.asarray(units, dtype=float)
    n = len(units)
    chunk = chunk or chunk_rows(n, units.shape[1] if units.ndim == 2 else 1)
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)  # a stride no resampled unit has: NaN, dropped later
        centre = np.nanmean(units, axis=0)
        counts = np.sum(~np.isnan(units), axis=0)
        spread = np.sqrt(np.where(counts > 1, counts / np.maximum(counts - 1, 1), 1.0))
        inflated = centre + spread * (units - centre)
        means = np.empty((resamples,) + inflated.shape[1:])
        for start in range(0, resamples, chunk):
            rows = min(chunk, resamples - start)
            means[start:start + rows] = np.nanmean(inflated[rng.integers(0, n, size=(rows, n))], axis=1)
    return estimate(means, pages, whole)


def t_interval(value, draws, df, confidence):
    """estimate +- t(df) x the draws' standard deviation; NaN bounds when it cannot be had."""
    from .stats import t_bounds

    draws = np.asarray(draws, dtype=float)
    draws = draws[np.isfinite(draws)]
    if not math.isfinite(value) or len(draws) < 2 or not df or df <= 0:
        return math.nan, math.nan
    return t_bounds(value, float(draws.std(ddof=1)), df, confidence)[:2]


# --- regimes -------------------------------------------------------------------------------------

def classify(pages, y, full_per_call, ceiling):
    """Each stride's regime and what decided it, in this order: the flush counters (full flushes per
    call on its traced passes), else the kernel's ceiling (pages > ceiling: whole flush), else
    the data (far faster than the line through the smaller per-page strides predicts).

    Returns (whole: bool array, sources, notes, warnings)."""
    pages, y = np.asarray(pages, dtype=float), np.asarray(y, dtype=float)
    n = len(pages)
    whole, sources, notes, warns = [False] * n, [None] * n, [None] * n, []
    for i in np.argsort(pages, kind="stable"):
        full = full_per_call[i]
        if full is not None and math.isfinite(full):
            if full >= FULL_SHARE or full <= 1 - FULL_SHARE:
                whole[i] = full >= FULL_SHARE
                sources[i], notes[i] = "counters", f"counters ({full:.2f} full/call)"
                continue
            warns.append(f"{_pages_text(pages[i])}: {full:.2f} full flushes per call: its regime is undecided")
        if isinstance(ceiling, int) and not isinstance(ceiling, bool):
            whole[i] = pages[i] > ceiling
            sources[i], notes[i] = "ceiling", f"ceiling ({ceiling} pages)"
            continue
        done = [j for j in range(n) if sources[j] is not None and pages[j] < pages[i]]
        line = [j for j in done if not whole[j]]
        if any(whole[j] for j in done):
            whole[i] = True  # the kernel's choice grows with the range: past one whole flush, all are
        elif len({pages[j] for j in line}) >= 2:
            slope, fixed = np.polyfit(pages[line], y[line], 1)
            whole[i] = y[i] < DATA_DROP * (fixed + slope * pages[i])
        sources[i], notes[i] = "data", "data"
    return np.array(whole, dtype=bool), sources, notes, warns


def full_per_call(frames, stride):
    """Full flushes per call over the traced passes of one stride that counted them; None if none did."""
    full = calls = 0
    for table in frames:
        if "full_flushes" not in table or "traced" not in table:
            continue
        counted = np.asarray(table["full_flushes"], dtype=float)
        rows = (np.asarray(table["stride_bytes"]) == stride) & np.asarray(table["traced"], dtype=bool) & ~np.isnan(counted)
        full += float(counted[rows].sum())
        calls += float(np.asarray(table["calls"], dtype=float)[rows].sum())
    return full / calls if calls else None


def _pages_text(p):
    return f"{p:g} pages"


# --- from result files ------------------------------------------------------------------------------

def cells(result):
    """[(cell index or None, name or None, the cell's settings, its samples)]."""
    from ..data import cells as cellnames

    table = result.table
    if "cell" not in table:
        return [(None, None, {}, table)]
    names = cellnames.labels(result)  # the names compare and show use
    return [(index, names[index], settings, cellnames.of_cell(table, index))
            for index, settings in cellnames.specs(result).items()]


def page_bytes(result, settings=None):
    """The unit pages are counted in: the base page size, or the huge page size for hugetlb runs."""
    pages = (settings or {}).get("pages", result.config.get("pages"))
    key = "hugepage_size" if pages == "hugetlb" else "page_size"
    value = result.host.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise UsageError(f"{result.name} has no {key.replace('_', ' ')} in its host record: no page "
                         "counts")
    return value


def ceiling_of(result, settings=None):
    """The ceiling the run set (a cell's `ceiling` axis, else config `ceiling`), else the host's; None
    if unknown."""
    for value in ((settings or {}).get("ceiling"), result.config.get("ceiling"),
                  result.host.get("tlb_single_page_flush_ceiling")):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def unit_matrix(frames, unit):
    """(strides, matrix): one row per unit (a run: one table; a round of one table; or a pass), one
    column per stride, each cell the mean us per call of that unit's measured passes (a run's: the
    mean of its round means, as compare's run observation is).  Rows in (file, round, rep) order."""
    per_file, strides = [], set()
    for table in frames:
        # one file at a time, only the fields the matrix needs: no copy of every file's passes at once
        timed = ~np.asarray(table["warmup"], dtype=bool)
        us = np.asarray(table["us_per_call"], dtype=float) if "us_per_call" in table else None
        if us is None or np.isnan(us[timed]).any():
            with np.errstate(divide="ignore", invalid="ignore"):  # a warm-up pass of no calls: not a unit's
                us = np.asarray(table["seconds"], dtype=float) * 1e6 / np.asarray(table["calls"], dtype=float)
        fields = ["round"] + (["rep"] if unit == "pass" else []) + ["stride_bytes"]
        # a pass without its round or stride is in no unit
        groups, means = mean_by_rows([np.asarray(table[k]) for k in fields], us, timed)
        per_file.append((groups, means))
        strides.update(groups[:, -1].tolist())
    strides = sorted(strides)
    column = {s: j for j, s in enumerate(strides)}
    rows = []
    for groups, means in per_file:
        units, at = np.unique(groups[:, :-1], axis=0, return_inverse=True)
        at = at.reshape(-1)
        block = np.full((len(units), len(strides)), np.nan)
        block[at, [column[s] for s in groups[:, -1].tolist()]] = means
        if unit == "run" and len(units):
            with _warnings.catch_warnings():
                _warnings.simplefilter("ignore", RuntimeWarning)  # a stride this run lacks: NaN
                block = np.nanmean(block, axis=0)[None, :]
        rows.append(block)
    if not strides:  # no file has a measured pass
        return [], np.empty((0, 0))
    return [int(s) for s in strides], np.concatenate(rows)


def _units(strides, matrix):
    """The fewest units a stride has in unit_matrix's matrix."""
    return int(np.sum(~np.isnan(matrix), axis=0).min()) if strides else 0


def side_unit(group, unit="auto"):
    """A side's own unit: its runs where it has two or more (unless --unit round or pass asks for
    pooled rounds or passes), else its rounds (one process: they cover that process only)."""
    if unit in ("round", "pass"):
        return unit
    return "run" if len(group) > 1 else "round"


def side_models(group, label, confidence=95.0, side=0, resamples=RESAMPLES, seed=SEED, unit="auto"):
    """One Model per cell of one side: a file, its --runs sub-runs, or replicate files."""
    name = ",".join(dict.fromkeys(r.path or "?" for r in group))  # a --runs file once, not once per sub-run
    with_axes = [r for r in group if "cell" in r.table]
    if with_axes and len(with_axes) < len(group):
        plain = next(r for r in group if "cell" not in r.table)
        # Its one configuration would stand beside the cells as one more, neither pooled nor compared.
        raise UsageError(f"{name}: {with_axes[0].path or '?'} has cells and {plain.path or '?'} none: not "
                         "replicates")
    by_cell = {}
    for result in group:
        for index, cell_name, settings, frame in cells(result):
            by_cell.setdefault(cell_name, []).append((result, settings, frame))
    models = []
    for position, (cell_name, members) in enumerate(by_cell.items()):
        units_per_page = {page_bytes(r, s) for r, s, _ in members}
        if len(units_per_page) > 1:
            listing = ', '.join(format_size(u) for u in sorted(units_per_page))
            raise UsageError(f"{name}: the replicate files count pages in different sizes ({listing})")
        rng = np.random.default_rng([seed, side, position])
        m = _fit(name, label, cell_name, members, units_per_page.pop(), confidence, rng, resamples,
                 side_unit(group, unit))
        m.processes, m.boots, m.sessions = len(group), boots(group), len({r.path or id(r) for r in group})
        models.append(m)
    return models


def _fit(name, label, cell_name, members, unit_bytes, confidence, rng, resamples, unit="round"):
    frames = [t for _, _, t in members]
    warns = []
    if not any((~np.asarray(f["warmup"], dtype=bool)).any() for f in frames):
        raise UsageError(f"{name}{' cell ' + cell_name if cell_name else ''} has no measured pass")
    strides, matrix = unit_matrix(frames, unit)
    if unit == "round" and _units(strides, matrix) < 2:
        unit = "pass"
        strides, matrix = None, None  # the round matrix let go before the pass one is made
        strides, matrix = unit_matrix(frames, unit)
    n_units = _units(strides, matrix)
    why = None
    if n_units < 2:
        unit = None
        table = any(r.config.get("source") == "table" for r, _, _ in members)
        why = NO_CI_TABLE if table else NO_CI_ONE_UNIT
    elif unit == "pass":
        warns.append(f"{name} has a single round: passes are the observations (CI within a round)")
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)
        y = np.nanmean(matrix, axis=0)
    pages = np.array(strides, dtype=float) / unit_bytes
    result0, settings0, _ = members[0]
    whole, sources, notes, regime_warns = classify(pages, y, [full_per_call(frames, s) for s in strides],
                                                   ceiling_of(result0, settings0))
    warns += [f"{name}{' ' + cell_name if cell_name else ''}, {w}" for w in regime_warns]
    point = estimate(y, pages, whole)[0]
    params, draws = {}, None
    if unit is not None:
        draws = bootstrap(matrix, pages, whole, rng, resamples)
    for k, p in enumerate(PARAMS):
        value = float(point[k])
        low, high = (t_interval(value, draws[:, k], n_units - 1, confidence) if draws is not None
                     else (math.nan, math.nan))
        params.update({p: value, p + "_low": low, p + "_high": high})
    warns += _fit_warnings(name, cell_name, strides, pages, whole, y, sources)
    return Model(file=name, label=label, cell=cell_name, page_bytes=unit_bytes, stride_bytes=strides, pages=pages,
                 whole=whole, sources=sources, source_notes=notes, us_per_call=y, params=params,
                 residuals=residuals(y, pages, whole, point), unit=unit, n_units=n_units, confidence=confidence,
                 why_no_ci=why, warnings=warns, draws=draws)


def _fit_warnings(name, cell_name, strides, pages, whole, y, sources):
    where = f"{name}{' ' + cell_name if cell_name else ''}"
    line = [f"{format_size(s)} ({p:g} pages)" for s, p, w in zip(strides, pages, whole) if not w]
    out = []
    if len(set(pages[~whole])) < 2:
        have = ", ".join(line) or "none"
        out.append(f"{where}: no per-page line: needs per-page strides at 2+ page counts ({have})")
    if not whole.any():
        out.append(f"{where}: no whole-flush stride (no crossover): measure strides above the ceiling"
                   if set(sources) != {"data"} else
                   f"{where}: no whole flush seen: on x86 4K only --trace or the ceiling finds one")
    if whole.sum() >= 2:
        # A whole flush costs the same at any range; a rise with pages is the page-table work that
        # mprotect does either way, and then full_flush_us (a mean) describes none of these strides.
        order = np.argsort(pages[whole])
        level = y[whole][order]
        if level[-1] - level[0] > GROWTH * np.mean(level):
            out.append(f"{where}: whole-flush cost rises with pages ({_us(level[0])} -> {_us(level[-1])} us): see "
                       "residuals")
    return out


def _us(v):
    return f"{v:.3g}"


# --- before/after -----------------------------------------------------------------------------------

CHANGE_COLUMNS = ["parameter", "cell", "base_label", "new_label", "base", "new", "change_pct", "ci_low_pct",
                  "ci_high_pct", "confidence", "unit", "n_base", "n_new", "verdict_withheld"]
# compare's rule (analysis/compare.withholds), its code worded by render/notes.  The coverage that backs
# it for model (scripts/model_coverage.py, measured on the project's VM) is in docs/methodology.md.


def change(base, new, confidence=95.0, withheld=False):
    """One row per parameter: new/base - 1 in %, with a CI from both sides' bootstrap draws.

    Sides of one unit: Var(change) from the draws, degrees of freedom from Welch-Satterthwaite over
    the two sides' shares of it (each side's units are resampled independently).  A side of one
    process against a side of runs (compare's mixed group): the process is one run, assumed to vary
    from run to run as the other side's runs do, so its variance is n x that side's squared standard
    error, the change's comes by the delta method, and t has n - 1 df (Student's t with n and 1).
    withheld: every side is one process (compare.withholds): the interval is within-run only."""
    mixed = (base.unit == "run") != (new.unit == "run")
    units = {base.unit, new.unit}
    unit = None if None in units else "run" if mixed else units.pop() if len(units) == 1 else "pass"
    rows = []
    for k, p in enumerate(PARAMS):
        a, b = base.params[p], new.params[p]
        pct = (b / a - 1) * 100 if math.isfinite(a) and math.isfinite(b) and a != 0 else math.nan
        low = high = math.nan
        if math.isfinite(pct) and mixed:
            low, high = _borrowed(a, b, base, new, k, confidence)
        elif math.isfinite(pct) and base.draws is not None and new.draws is not None:
            da, db = base.draws[:, k], new.draws[:, k]
            with np.errstate(divide="ignore", invalid="ignore"):
                both, only_a, only_b = db / da - 1, b / da - 1, db / a - 1
            ok = np.isfinite(both) & np.isfinite(only_a) & np.isfinite(only_b)
            if ok.sum() > 1:
                va, vb = only_a[ok].var(ddof=1), only_b[ok].var(ddof=1)
                na, nb = base.n_units, new.n_units
                denom = va ** 2 / (na - 1) + vb ** 2 / (nb - 1)
                df = (va + vb) ** 2 / denom if denom > 0 else na + nb - 2
                lo, hi = t_interval(pct / 100, both[ok], df, confidence)
                low, high = lo * 100, hi * 100
        rows.append({"parameter": p, "cell": new.cell, "base_label": base.label, "new_label": new.label,
                     "base": a, "new": b, "change_pct": pct, "ci_low_pct": low, "ci_high_pct": high,
                     "confidence": confidence, "unit": unit,
                     "n_base": 1 if mixed and base.unit != "run" else base.n_units,
                     "n_new": 1 if mixed and new.unit != "run" else new.n_units, "verdict_withheld": bool(withheld)})
    return rows


def _borrowed(a, b, base, new, k, confidence):
    """The mixed case's interval (see change), in %."""
    from .stats import t_bounds

    runs = base if base.unit == "run" else new
    if runs.draws is None or runs.n_units < 2:
        return math.nan, math.nan
    d = runs.draws[:, k]
    d = d[np.isfinite(d)]
    if len(d) < 2:
        return math.nan, math.nan
    of_mean = float(d.var(ddof=1))
    va, vb = (of_mean, of_mean * runs.n_units) if runs is base else (of_mean * runs.n_units, of_mean)
    se = math.sqrt(vb / a ** 2 + b ** 2 * va / a ** 4)
    low, high, _ = t_bounds(b / a - 1, se, runs.n_units - 1, confidence)
    return low * 100, high * 100


@dataclasses.dataclass
class Analysis:
    sides: list  # per side, its Models (one per cell)
    changes: list  # rows of CHANGE_COLUMNS: every later side against the first, cell by cell
    confidence: float
    warnings: list
    unit: str = "round"  # the before/after's unit, as compare.choose_unit decided it
    mixed: bool = False  # runs on some sides, one process on the others
    withheld: str = None  # why the change has a within-run interval and no CI (every side one process)
    boots: list = dataclasses.field(default_factory=list)  # per side, the boots its runs come from


def size_warnings(groups, labels):
    """Sides of different region sizes: the per-call cost, and so the fixed cost, scale with the size
    alone ("fixed cost -725%" from 1G against 256M), so say so (model compares them still)."""
    sizes = [g[0].config.get("size") for g in groups]
    if len(set(map(repr, sizes))) < 2:  # a mangled file may hold anything there
        return []
    listing = ", ".join(f"{format_size(s) if isinstance(s, int) else '?'} in {label}"
                        for label, s in zip(labels, sizes))
    return [f"the files differ in size ({listing}): per-call costs differ for that reason alone"]


def analyse(groups, labels, confidence=95.0, resamples=RESAMPLES, seed=SEED, unit="auto", level="session"):
    """groups: per side a list of Results (replicate files, or --runs sub-runs; level as compare.replicates
    gives it).  The first side is the baseline.  unit: auto, run, round or pass, as compare's --unit."""
    _, _, _, unit = resolve_options(confidence=confidence, unit=unit)
    warns = input_warnings(groups, level) + size_warnings(groups, labels)
    effective, _, mixed = choose_unit(groups, unit, None, None, warns)
    withheld = WITHHELD if len(groups) > 1 and withholds(unit, effective, level) else None
    sides = [side_models(g, label, confidence, i, resamples, seed, unit)
             for i, (g, label) in enumerate(zip(groups, labels))]
    warns += [w for models in sides for m in models for w in m.warnings]
    rows = []
    for models in sides[1:]:
        base = {m.cell: m for m in sides[0]}
        if (None in base) != any(m.cell is None for m in models):
            with_axes, plain = (models[0].file, sides[0][0].file) if None in base else (sides[0][0].file,
                                                                                      models[0].file)
            warns.append(f"{with_axes} has axes (cells) and {plain} has none: no cell compared")
            continue
        for m in models:
            if m.cell not in base:
                warns.append(f"{m.file}: cell {m.cell} is not in {sides[0][0].file}: not compared")
            elif m.page_bytes != base[m.cell].page_bytes:
                # Per-page cost and crossover are counted in pages: across page sizes their change is
                # a change of unit (x16 from 4K to 64K), not of the kernel.  Replicates refuse it too.
                where = f" (cell {m.cell})" if m.cell else ""
                raise UsageError(f"{base[m.cell].file} counts {format_size(base[m.cell].page_bytes)} pages and "
                                 f"{m.file} {format_size(m.page_bytes)} pages{where}: model each alone")
            else:
                rows += change(base[m.cell], m, confidence, withheld is not None)
        for cell in set(base) - {m.cell for m in models}:
            warns.append(f"{models[0].file}: has no cell {cell}: not compared")
    if not any(math.isfinite(m.params[p]) for models in sides for m in models for p in PARAMS):
        raise UsageError(f"nothing to fit: {'; '.join((w for w in warns if 'no per-page line' in w))}")
    return Analysis(sides, rows, confidence, list(dict.fromkeys(warns)), effective, mixed, withheld,
                    [boots(g) for g in groups])
