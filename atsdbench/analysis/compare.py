"""Comparing loaded results (data/sides.py reads them): options, what the sides have in common, and
one row per (cell, stride, new side), in a Comparison that render/compare words.  The cells of one
file against each other, paired by round, are compare_by.py's."""
import dataclasses
import math
import os
import weakref

from . import detectable, multiplicity, stats, two_sample
from ..data import cells as cell_names
from ..data.cells import labels as cell_labels, op_of, where
from ..data.sides import choose_labels
from ..errors import UsageError
from ..units import format_size

COLUMNS = ["cell", "stride", "stride_bytes", "base_label", "new_label", "base_gbps", "new_gbps", "speedup_pct",
           "ci_low_pct", "ci_high_pct", "p_value", "p_adjusted", "adjust", "significant", "test", "confidence",
           "unit", "n_base", "n_new", "note", "mde_pct", "verdict_withheld", "profile_base", "profile_new"]
# What a file measured; a difference in any of these makes a comparison suspect.  Kernel is not here:
# comparing kernels is the point.
MEASURED = [("config", "size"), ("config", "pages"), ("config", "bystanders"), ("config", "threads"),
            ("config", "tasks"), ("config", "workload"), ("config", "op"), ("config", "retouch"),
            ("config", "gpu"), ("config", "device"), ("config", "placements"), ("host", "page_size"), ("host", "arch")]
# What an absent key means (files older than the key): run --placements came with schema 7, 1 before it.
# The placements are measured, not only the spread: the first-allocated region ran 35% slower than the
# three held after it at 2M, and one-region files ran at its level (docs/methodology.md#placement).
ABSENT = {"placements": 1, "threads": 1, "tasks": "threads", "op": "mprotect", "device": "none"}
# Settings that make two files measure different work (not one kernel against another): lava's speedup
# cases are then `skip`, never a `pass` of a "speedup" that is the setting's.
WORK = ("bystanders", "threads", "tasks", "workload", "op", "device")


# Why a comparison gives no verdict, as a code render words (render/notes.one_session_a_side).  The rule and its
# evidence (scripts/bench_defaults.py: sides >= 60 s apart, one file a side is called different far
# beyond its level) are in docs/methodology.md, "Measured: A/A across sessions".
WITHHELD = "one-session"


# Replicate files on both sides but fewer than SHORT_SIDE on one, and more on the other: simulated
# (scripts/replicate_designs.py, docs/benchmarks.md), 1 vs k and 5 vs 2 files called an A/A different
# 9-10% of the time at 95% where the short side varied more than the long one, which a single file (or
# two) cannot show; 2 vs 2, 3 vs 5 and k vs k held 5%.  Such a row gets no test: its note says so.
SHORT_SIDE = 3


def unbalanced(n_base, n_new):
    """Why a comparison of n_base against n_new replicate files cannot hold its level, or None."""
    short, long = min(n_base, n_new), max(n_base, n_new)
    if short >= SHORT_SIDE or short == long:
        return None
    return f"unbalanced: {short} vs {long} files"


def withholds(asked, effective, level="session"):
    """The rule: where the unit was left to us (auto) and every side is one session (one file: its rounds,
    passes or --runs sub-runs are the unit), no verdict.  A unit asked for (--unit round, pass, run) gives
    the within-session one knowingly; replicate files (level "file") are sessions of their own."""
    return asked == "auto" and level != "file" and effective in ("round", "pass", "run")


@dataclasses.dataclass
class Comparison:
    rows: list
    labels: list
    metric: str
    test: str
    confidence: float
    unit: str
    warnings: list
    observations: dict  # (file index, cell name, stride) -> observations used
    adjust: str = "holm"
    mixed: bool = False  # replicate runs on some sides only (Student's t with the replicated sides' variance)
    paired: bool = False  # compare --by: cells of one file, paired by round (compare_by.py)
    pairs: dict = dataclasses.field(default_factory=dict)  # paired: (value index, cell, stride) -> (base, new)
    by: str = None  # paired: the axis
    counts: list = dataclasses.field(default_factory=list)  # counts.compare_counts rows (the kernel's events)
    emulated: list = dataclasses.field(default_factory=list)  # labels of sides from emulated guests (qemu-tcg)
    boots: list = dataclasses.field(default_factory=list)  # boots each side's runs come from (host.boot_id)
    batched: dict = dataclasses.field(default_factory=dict)  # file index -> rounds made into batch means
    withheld: str = None  # why no verdict is given: WITHHELD (every side one session, unit not asked for)
    labels_given: bool = False  # --labels: the user's names, which every format uses
    level: str = "session"  # "file": replicate files the unit (replicates); "session": one file a side
    # side index -> its noise profile (data/noise_profile.py)
    noise_profiles: dict = dataclasses.field(default_factory=dict)
    # side index -> the calibrate command it lacks, where other sides have a noise profile
    without_noise_profile: dict = dataclasses.field(default_factory=dict)
    noise_profile_notes: list = dataclasses.field(default_factory=list)  # what the profiles do not cover here
    ops: list = dataclasses.field(default_factory=lambda: ["mprotect"])  # run --op: the calls compared
    stale: list = dataclasses.field(default_factory=list)  # run --verify: (file, stale group) of every side
    rate: tuple = ("gbps", "GB/s", "GB/s = 10^9 bytes/s")  # the rate compared: column, unit, definition
    tasks: str = "threads"  # run --threads' tasks: threads or processes
    by_values: list = None  # compare --by: the axis's values (--by threads: the thread counts)
    cell_specs: dict = dataclasses.field(default_factory=dict)  # cell name -> {axis: value}, of the baseline
    stages: list = dataclasses.field(default_factory=list)  # breakdown.compare_stages rows (run --breakdown/--profile)
    placements: list = dataclasses.field(default_factory=list)  # run --placements K of the sides' files (K > 1)

    def frame(self):
        import pandas as pd

        return pd.DataFrame(self.rows, columns=COLUMNS)

    @property
    def tests_made(self):
        return sum(1 for r in self.rows if not math.isnan(r["p_value"]))


UNITS = ("auto", "round", "pass", "run")


def check(files_per_side, metric=None, test=None, confidence=95, unit="auto", adjust="holm", by=None,
          noise_profiles=()):
    """The usage errors of a compare's options and of the shape of its sides (files per side, as
    data/sides.count gives them), in the order compare meets them: before any file is read."""
    if by is not None:
        if noise_profiles:
            raise UsageError("--noise-profile is for files compared; --by pairs the cells of one run by round")
        if len(files_per_side) != 1:
            raise UsageError(f"--by compares the cells of one file: give one file (got {len(files_per_side)})")
        if files_per_side[0] != 1:
            raise UsageError("--by takes one result file, not replicate runs (a.json,b.json)")
        if test is not None:
            raise UsageError(f"--test {test} is for files compared with each other (--by: paired t, wilcoxon)")
        if unit not in ("auto", "round"):
            raise UsageError(f"--by pairs rounds: --unit {unit} does not apply (leave it out)")
        _check_adjust(adjust)
        resolve_options(metric, None, confidence, "auto")
        return
    resolve_options(metric, test, confidence, unit)
    _check_adjust(adjust)
    if len(files_per_side) < 2:
        raise UsageError("compare needs a baseline file and at least one new file (or one file with --by AXIS)")


def _check_adjust(adjust):
    if adjust not in multiplicity.ADJUSTMENTS:
        raise UsageError(f"--adjust must be holm or none (got {adjust!r})")


def resolve_options(metric=None, test=None, confidence=95, unit="auto"):
    if metric not in (None, "mean", "median"):
        raise UsageError(f"--metric must be mean or median (got {metric!r})")
    if test not in (None,) + two_sample.TESTS:
        raise UsageError(f"--test must be welch, student or mannwhitney (got {test!r})")
    if test is None:
        test = "mannwhitney" if metric == "median" else "welch"
    if metric is None:
        metric = "median" if test == "mannwhitney" else "mean"
    if (metric == "median") != (test == "mannwhitney"):
        raise UsageError(f"--test {test} does not test the {metric} (t-tests: mean; mannwhitney: median)")
    try:
        confidence = float(confidence)
    except (TypeError, ValueError):
        raise UsageError(f"--confidence {confidence!r} is not a number") from None
    if confidence not in stats.CONFIDENCES:
        raise UsageError(f"--confidence must be one of 80, 90, 95, 98, 99, 99.5 (got {confidence:g})")
    if unit not in UNITS:
        raise UsageError(f"--unit must be auto, round, pass or run (got {unit!r})")
    return metric, test, confidence, unit


def replicates(sides):
    """The sides (lists of Results, one per file given) at the highest level of replication any side
    has: (groups, level).  Where some side has two or more files, every file is one observation (its
    sub-runs averaged inside it): level "file".  Else a --runs file's sub-runs are the replicates:
    level "session" (they share one session, so withholds() gives no verdict unless a unit is asked)."""
    sides = [s if isinstance(s, list) else [s] for s in sides]
    if any(len(files) > 1 for files in sides):
        return sides, "file"
    return [sub_runs(files) for files in sides], "session"


def sub_runs(files):
    """One side's files as its replicates: each file's --runs sub-runs (a file of one run: itself)."""
    return [part for r in files for part in r.sub_runs()]


def _cell_maps(groups):
    """Per result, {cell name: cell index}.  When every file is a single cell, the cells are the
    same thing by construction (measured_differences warns about what differs) and all are named ""."""
    maps = [[cell_labels(r) for r in g] for g in groups]
    if all(len(m) == 1 for g in maps for m in g):
        return [[{"": next(iter(m))} for m in g] for g in maps]
    return [[{name: index for index, name in m.items()} for m in g] for g in maps]


def _keys(result, cells):
    """The (cell name, stride) pairs a result measured."""
    import numpy as np

    table = result.table
    measured, strides = ~table["warmup"], table["stride_bytes"]
    out = set()
    for name, index in cells.items():
        here = measured if index is None or "cell" not in table else measured & (table["cell"] == index)
        out |= {(name, int(s)) for s in np.unique(strides[here])}
    return out


def group_observations(group, stride, unit, metric, cells=None, column="gbps"):
    """Observations of one stride (and cell: cells[k] is that cell's index in run k) over a group of
    replicate runs; column: the rate (scaling.rate_of)."""
    import numpy as np

    cells = cells or [None] * len(group)
    if unit == "run":
        per_run = [_observations(r, stride, "round", metric, c, column) for r, c in zip(group, cells)]
        return np.array([stats.run_value(v, metric) for v in per_run if len(v)], dtype=float)
    return np.concatenate([_observations(r, stride, unit, metric, c, column) for r, c in zip(group, cells)])


_seen = weakref.WeakKeyDictionary()  # Result -> {(unit, metric, cell): {stride: observations}}


def _observations(result, stride, unit, metric, cell, column="gbps"):
    """stats.observations of a loaded file (or sub-run), every stride at once and kept with it: show's
    notes compare a file with itself, at two units, and each of a --runs file's 625 sub-runs was
    split once per stride, side and compare."""
    import numpy as np

    found = _seen.setdefault(result, {})
    key = (unit, metric, cell, column)
    if key not in found:
        found[key] = stats.observations_by_stride(result.table, unit, metric, cell, column)
    return found[key].get(stride, np.empty(0))


def _describe(value):
    return "none" if value is None else format_size(value) if isinstance(value, int) and value >= 4096 else str(value)


def differing(files):
    """The settings (MEASURED keys) in which the files differ."""
    return [key for section, key in MEASURED
            if len({repr(getattr(f, section).get(key, ABSENT.get(key))) for f in files}) > 1]


def measured_differences(files, names):
    """One warning per setting in which the files differ (not the kernel)."""
    out = []
    keys = differing(files)
    for section, key in MEASURED:
        if key not in keys:
            continue
        values = [getattr(f, section).get(key, ABSENT.get(key)) for f in files]
        listing = ", ".join(f"{_describe(v)} in {n}" for v, n in zip(values, names))
        work = ": they measure different work, so a speedup is the setting's, not a kernel's" if key in WORK else ""
        out.append(f"the files differ in {key}: {listing}{work}")
    return out


def disturbance_differences(groups, names):
    """A side whose passes were disturbed much more often than the baseline's measured something else
    as well: say so, with both shares."""
    shares = []
    for g in groups:
        n, of = map(sum, zip(*(stats.disturbed(r.columns) for r in g)))
        shares.append(n / of if of else None)
    if shares[0] is None:
        return []
    return [f"{names[i]}: {s:.0%} of its timed passes were disturbed, {names[0]}: {shares[0]:.0%} (preempted, "
            "short of CPU or stolen from): the rates may differ for that reason" for i, s in enumerate(shares)
            if i and s is not None and s - shares[0] > 0.1 and s > 2 * shares[0]]


def input_warnings(groups, level):
    """An interrupted file (complete: false), and a file given more than once (an A/A of identical
    data): compare and model say so rather than take them silently."""
    files = {}  # a file once per side at the session level (a --runs file is several sub-runs)
    for g in groups:
        paths = [r.path for r in g] if level == "file" else list(dict.fromkeys(r.path for r in g))
        for path in paths:
            if path is not None:
                files.setdefault(os.path.realpath(path), []).append(next(x for x in g if x.path == path))
    warnings = [f"{rs[0].path} is given {len(rs)} times: the same data against itself"
                for rs in files.values() if len(rs) > 1]
    warnings += [f"{rs[0].path} is an interrupted run (complete: false): its last round may be short"
                 for rs in files.values() if not rs[0].complete]
    return warnings


def _digest(result):
    """The samples' digest: every field's values and where each is present, field by field."""
    import hashlib

    h, columns = hashlib.sha256(), result.columns
    for k in sorted(columns.keys()):
        values = columns.get(k)
        h.update(k.encode() + b"\0" + (repr(values.tolist()).encode() if values.dtype == object else
                                       values.dtype.str.encode() + values.tobytes()))
        h.update(columns.present(k).tobytes())
    return h.hexdigest()


def _run_keys(result):
    """What makes two files one run: the same samples, or the same start on the same boot (the sub-runs
    of one `run --runs` file share its start, each of its own process: one run each)."""
    run = (result.host.get("boot_id"), result.started)
    sub = getattr(result, "sub_run", None)
    return [("samples", _digest(result))] + ([("run", run + (sub,))] if None not in run else [])


def one_run_once(sides):
    """Each side with a run given in several files (a copy, an import made twice, a path given twice)
    kept once: one run is one observation, never replicates.  Returns (sides, warnings): one line
    naming the files counted once, one naming runs found on two sides (the same data against
    itself)."""
    kept, seen, once = [], {}, []
    for i, files in enumerate(sides):
        mine, first = [], {}
        for r in files:
            keys = _run_keys(r)
            match = next((first[k] for k in keys if k in first), None)
            if match is None:
                mine.append(r)
                for k in keys:
                    first[k] = r
                    seen.setdefault(k, (i, r))
            else:
                once.append((match, r))
        kept.append(mine)
    warnings = []
    if once:
        groups = {}
        for a, b in once:
            groups.setdefault(id(a), [a]).append(b)
        names = [list(dict.fromkeys(r.name for r in g)) + [len(g)] for g in groups.values()]
        said = "; ".join(f"{n[0]} given {n[-1]} times" if len(n) == 2 else " = ".join(n[:-1]) for n in names)
        warnings.append(f"one run in several files, counted once (a run is one observation): {said}")
    across = {}
    for i, files in enumerate(kept):
        for r in files:
            for k in _run_keys(r):
                j, other = seen[k]
                if j != i and (r.path is None or other.path is None
                               or os.path.realpath(r.path) != os.path.realpath(other.path)):
                    across.setdefault((id(other), id(r)), (other, r))
    for a, b in across.values():
        warnings.append(f"{a.name} and {b.name} hold the same run: the same data against itself")
    return kept, warnings


def boots(group):
    """Boots a side's runs come from (host.boot_id); files from before it was recorded count as one."""
    return len({r.host.get("boot_id") for r in group})


def choose_unit(groups, unit, test, asked_test, warnings):
    """The unit of replication and the test; replicate runs on one side only are a mixed group
    (model's before/after decides its unit with it too)."""
    replicated = [len(g) > 1 for g in groups]
    if unit == "run" and not any(replicated):
        raise UsageError("--unit run needs replicate runs (a.json,b.json,...) on at least one side")
    effective = ("run" if any(replicated) else "round") if unit == "auto" else unit
    mixed = effective == "run" and not all(replicated)
    if mixed and asked_test == "welch":
        raise UsageError("--test welch needs replicate runs on every side (one side only: --test student)")
    if mixed and test == "welch":
        test = "student"
    if mixed:
        said = "replicate runs on one side only: a single run is one observation"
        warnings.append(f"{said} (Student's t)" if test == "student" else said)
    if effective in ("round", "pass") and any(replicated):
        plural = "passes" if effective == "pass" else "rounds"
        warnings.append(f"--unit {effective} pools the {plural} of replicate runs: the CI leaves out their drift")
    return effective, test, mixed


def _time_order(obs, groups, labels):
    """Round means are a time series: a single run's rounds are autocorrelated (they share the
    machine's state).  From timeseries.ROBUST_MIN_ROUNDS rounds on, a side's observations become its
    batch means of consecutive rounds (they absorb short-range autocorrelation, not slower drift);
    below, a lag-1 that independent rounds would rarely reach is warned about.  Edits obs in place;
    returns (warnings, {file index: rounds the batch means were made of})."""
    from . import timeseries

    batched, high, rounds = [], [], {}
    for key, x in obs.items():
        i, cell, stride = key
        if len(groups[i]) != 1 or len(x) < 3:
            continue  # pooled replicate runs have no single time order
        place = f"{labels[i]} {where(stride, cell)}"
        if len(x) >= timeseries.ROBUST_MIN_ROUNDS:
            rounds.setdefault(i, set()).add(len(x))
            obs[key] = timeseries.batch_means(x)
            batched.append(place)
        elif timeseries.warn_if_autocorrelated(timeseries.lag1(x), len(x), tests=len(obs)):
            high.append(f"{place} ({timeseries.lag1(x):+.2f} over {len(x)} rounds)")
    # long lines, wrapped by the CLI's warn(); the story: docs/methodology.md#drift-and-autocorrelation
    out = []
    if batched:
        out.append(f"{', '.join(dict.fromkeys(labels[i] for i in rounds))}: {timeseries.ROBUST_MIN_ROUNDS}+ "
                   f"rounds: {timeseries.BATCHES} batch means a side (slow drift not absorbed) "
                   "(docs/methodology.md#drift-and-autocorrelation)")
    if high:
        out.append(f"round means autocorrelated: {'; '.join(high)}; the CI is too narrow (run --spread, or "
                   "replicate runs) (docs/methodology.md#drift-and-autocorrelation)")
    return out, {i: sorted(v) for i, v in rounds.items()}


def compare(sides, metric=None, test=None, confidence=95, unit="auto", labels=None, adjust="holm",
            noise_profiles=(), store=None):
    """sides: baseline first; each a Result or a list of replicate runs of the same thing (Results,
    data/sides.load).  noise_profiles: NoiseProfiles given for sides of one process; `store`, a
    data/noise_profile.Store, is where sides without one are looked up (None: nowhere).

    Every (cell, stride, new side) is one test; with adjust="holm" the verdicts hold for the whole
    family at the confidence level (Holm's step-down), and the raw p is kept beside the adjusted one."""
    sides = [s if isinstance(s, list) else [s] for s in sides]
    check([len(s) for s in sides], metric, test, confidence, unit, adjust)
    asked_test = test
    metric, test, confidence, unit = resolve_options(metric, test, confidence, unit)
    sides, once = one_run_once(sides)
    groups, level = replicates(sides)
    for g in groups:
        for r in g:
            if not r.has_timed_pass():
                raise UsageError(f"{r.name} has no measured pass (its run ended before the first timed one)")
    given_labels, whole = labels, {}
    labels = choose_labels(groups, labels, whole)
    warnings = once + input_warnings(groups, level)
    warnings += measured_differences([g[0] for g in groups], labels)
    warnings += disturbance_differences(groups, labels)
    for g in groups:
        files = list(dict.fromkeys(r.path for r in g))
        if len(files) > 1:
            warnings += measured_differences([next(r for r in g if r.path == f) for f in files], files)
    cells = _cell_maps(groups)
    key_sets = [set.intersection(*(_keys(r, c) for r, c in zip(g, gc))) for g, gc in zip(groups, cells)]
    first_cells = list(cells[0][0])
    order = {name: i for i, name in enumerate(first_cells)}
    # Each new side against the baseline at what both measured: a stride one side lacks costs that
    # side's comparison only, never the others'.
    pairs = {i: key_sets[0] & key_sets[i] for i in range(1, len(groups))}
    common = sorted(set.union(*pairs.values()), key=lambda k: (order.get(k[0], len(order)), k[1]))
    warnings += missing_rows(key_sets, labels, order)
    if not all(pairs.values()):
        what = "stride" if all(c == "" for ks in key_sets for c, _ in ks) else "(cell, stride)"
        raise UsageError(f"the files have no {what} in common" if len(groups) == 2 else
                         f"{labels[next(i for i, p in pairs.items() if not p)]} has no {what} in common with "
                         f"the baseline {labels[0]}")
    effective, test, mixed = choose_unit(groups, unit, test, asked_test, warnings)
    if effective == "round" and any(stats.effective_unit(r.table, "round") == "pass" for g in groups for r in g):
        effective = "pass"
        warnings.append("a file has a single round: the CI over passes ignores between-round variance")
    elif unit == "pass":
        warnings.append("--unit pass: every pass is an observation; the CI ignores between-round variance")
    rate = rate_of_sides(groups)
    obs = {(i, cell, s): group_observations(g, s, effective, metric, [c[cell] for c in cells[i]], rate[0])
           for i, g in enumerate(groups) for cell, s in common if not i or (cell, s) in pairs[i]}
    noise_profiled = _noise_profiles(groups, unit, effective, metric, asked_test, noise_profiles, store, labels,
                               warnings)
    batched = {}
    if effective == "round" and not noise_profiled:  # a profile's between-run part takes up what batching would
        more, batched = _time_order(obs, groups, labels)
        warnings += more
    rows, notes = [], {}
    if noise_profiled:
        # A profile only sizes the interval: the point estimates are those compare gives without it
        # (the same observations, batched as they would be), so a table is the files' and options'.
        centres = dict(obs)
        _time_order(centres, groups, labels)
        rows, effective, test = _rows_with_noise_profiles(groups, cells, common, labels, noise_profiled, confidence,
                                                          adjust, warnings, centres, pairs)
    for cell, s in common if not noise_profiled else ():
        for i in (i for i in range(1, len(groups)) if (cell, s) in pairs[i]):
            d = two_sample.difference(obs[(0, cell, s)], obs[(i, cell, s)], test, confidence)
            if d.get("why"):
                notes.setdefault((labels[i], d["why"]), []).append(where(s, cell))
            rows.append(_row(cell, s, labels, i, d, adjust, test, confidence, effective))
    from . import counts as count_changes
    count_changes.mark_emulated(rows, groups, labels)  # rates shown, no verdict
    if level == "file" and unit == "auto":
        short_sides(rows, groups, labels, warnings)
    verdicts(rows, adjust, confidence, rank=test == "mannwhitney")
    withheld = None
    if withholds(unit, effective, level) and not noise_profiled:
        withheld = WITHHELD
        for r in rows:
            r.update(significant=False, mde_pct=math.nan, verdict_withheld=True)
    warn_no_ci(notes, warnings)
    ops = list(dict.fromkeys(op_of(g[0].config) for g in groups))
    if len(ops) > 1:
        warnings.append(f"the sides time different calls ({', '.join(ops)}): the speedup is not the kernel's")
    cmp = Comparison(rows, labels, metric, test, confidence, effective, warnings, obs, adjust, mixed,
                     boots=[boots(g) for g in groups], batched=batched, withheld=withheld, level=level, ops=ops)
    cmp.whole_labels = whole
    cmp.rate, cmp.tasks = rate, tasks_of(groups[0][0].config)
    specs = cell_names.specs(groups[0][0])
    cmp.cell_specs = {name: specs.get(index, {}) for name, index in cells[0][0].items()}
    # the K of every file where any ran --placements: a side of one placement a round stays named
    ks = {g_file.config.get("placements") or 1 for g in groups for g_file in g}
    cmp.placements = sorted(ks) if ks != {1} else []
    cmp.noise_profiles = dict(noise_profiled)
    cmp.labels_given = given_labels is not None
    cmp.different_work = [k for k in differing([g[0] for g in groups]) if k in WORK]
    cmp.without_noise_profile = {i: _calibrate(g[0]) for i, g in enumerate(groups)
                                 if noise_profiled and i not in noise_profiled}
    cmp.noise_profile_notes = _beyond_span(groups, labels, noise_profiled, warnings)
    cmp.stale = stale_of([r for g in groups for r in g])
    from .breakdown import compare_stages

    cmp.stages = compare_stages(groups, labels, confidence)
    return count_changes.attach(cmp, groups, cells, common, pairs)


def missing_rows(key_sets, labels, order):
    """What a side lacks, as the rows it costs: a stride missing from a new side is missing from its
    comparison with the baseline only; one missing from the baseline from every comparison."""
    out = []
    rest = set.union(*key_sets[1:]) if len(key_sets) > 1 else set()
    for i, (have, name) in enumerate(zip(key_sets, labels)):
        lost = sorted((key_sets[0] | rest if i == 0 else key_sets[0]) - have,
                      key=lambda k: (order.get(k[0], len(order)), k[1]))
        if not lost:
            continue
        by_cell = {}
        for cell, stride in lost:
            by_cell.setdefault(cell, []).append(format_size(stride))
        places = "; ".join(", ".join(strides) + (f" of {cell}" if cell else "") for cell, strides in by_cell.items())
        what = f"strides {places} are" if len(lost) > 1 else f"stride {places} is"
        if i == 0:
            out.append(f"{what} missing from the baseline {name}: no side is compared there")
        else:
            kept = "" if len(labels) == 2 else "; the other comparisons keep them" if len(lost) > 1 \
                else "; the other comparisons keep it"
            out.append(f"{what} missing from {name}: {name} vs {labels[0]} has no row there{kept}")
    return out


def short_sides(rows, groups, labels, warnings):
    """Rows of an unbalanced replicate design whose short side is too short (unbalanced): no test, no
    interval (outside the Holm family), the note and one warning a side naming what would give one."""
    for i in range(1, len(groups)):
        why = unbalanced(len(groups[0]), len(groups[i]))
        if why is None:
            continue
        short = labels[0] if len(groups[0]) < len(groups[i]) else labels[i]
        for r in rows:
            if r["new_label"] == labels[i] and not math.isnan(r["p_value"]):
                r.update(ci_low_pct=math.nan, ci_high_pct=math.nan, p_value=math.nan, note=why, _se=math.nan)
        few, many = sorted((len(groups[0]), len(groups[i])))
        warnings.append(f"no verdict for {labels[i]}: {few} vs {many} files; {SHORT_SIDE - few} more for {short} "
                        "give one")


def warn_no_ci(notes, warnings):
    """One warning per (side, reason) of the rows that got no interval: notes = {(label, why): places}."""
    for (label, why), places in notes.items():
        warnings.append(f"{'strides' if len(places) > 1 else 'stride'} {', '.join(places)}, {label}: no CI ({why})")


def stale_of(found):
    """(path, stale group) for every file among the Results (a --runs file's sub-runs together, a file
    given twice once) whose verify passes read a stale translation (data/results.stale_groups)."""
    from ..data.results import stale_groups

    files, seen = {}, set()
    for r in found:
        key = (r.path if r.path is not None else id(r), getattr(r, "sub_run", None))
        if key not in seen:
            seen.add(key)
            files.setdefault(key[0], (r.path, []))[1].extend(r.verify)
    return [(path, g) for path, records in files.values() for g in stale_groups(records)]


def _row(cell, s, labels, i, d, adjust, test, confidence, unit, note=None, noise_profiles=("", "")):
    """One compare row from a difference (two_sample.difference's or noise.difference's answer)."""
    return {"cell": cell, "stride": format_size(s), "stride_bytes": s, "base_label": labels[0],
            "new_label": labels[i], "base_gbps": d["base"], "new_gbps": d["new"], "speedup_pct": d["speedup_pct"],
            "ci_low_pct": d["ci_low_pct"], "ci_high_pct": d["ci_high_pct"], "p_value": d["p_value"],
            "adjust": adjust, "test": test, "confidence": confidence, "unit": unit, "n_base": d["n_base"],
            "n_new": d["n_new"], "note": d.get("why", "") if note is None else note,
            "verdict_withheld": bool(note), "profile_base": noise_profiles[0], "profile_new": noise_profiles[1],
            "_se": d.get("se", math.nan), "_df": d.get("df", d["n_base"] + d["n_new"] - 2)}


# ---- sides of one process with a noise profile (analysis/noise.py, data/noise_profile.py) ----
# A side of one process has no between-run variance: a noise profile (atsdbench calibrate: K sub-runs
# of the same plan on the same host and kernel) supplies it.  Each side's mean then has variance own
# within-run variance / its rounds + the profile's between-run component, the df of the difference by
# Welch-Satterthwaite.  Only where every side is one process, the unit was left to compare and the
# test is on mean log rates; a side without a profile gets no verdict, the reason naming the command
# that makes one; a side whose round spread disagrees with its profile's (F test) none either.

NOISE_PROFILE_UNIT = "round+noise-profile"


def _noise_profiles(groups, unit, effective, metric, asked_test, explicit, store, labels, warnings):
    """{side index: NoiseProfile} where compare uses noise profiles, else {}; one given (--noise-profile)
    where none can apply, or of another host, kernel or plan, is a UsageError."""
    from ..data import noise_profile

    explicit = list(explicit or ())
    why = None
    if any(len(g) > 1 for g in groups):
        why = ("is for sides of one process: replicate files have their own between-run variance (the unit), and a "
               "--runs file's sub-runs give its within-session verdict with --unit run")
    elif unit != "auto":
        why = f"adds the between-run variance a one-process side lacks; --unit {unit} asks for its own unit"
    elif effective != "round":
        why = "needs each side's spread of round means: a file has a single round"
    elif metric != "mean" or asked_test not in (None, "welch"):
        why = "gives a Welch-Satterthwaite t interval of mean log rates: not with --metric median or --test " \
              f"{asked_test or 'mannwhitney'}"
    if why:
        if explicit:
            raise UsageError(f"--noise-profile {why}")
        return {}
    found = noise_profile.assign({i: g[0] for i, g in enumerate(groups)}, explicit, store, warnings=warnings)
    if found and 0 not in found:
        warnings.append(f"no noise profile for the baseline {labels[0]}: none used, no verdict "
                        f"({_calibrate(groups[0][0])})")
        return {}
    return found


def _rows_with_noise_profiles(groups, cells, common, labels, noise_profiled, confidence, adjust, warnings, centres,
                              pairs):
    """compare's rows where sides of one process borrow their between-run variance from noise profiles:
    (rows, unit, test).  centres: the observations whose geometric mean is each side's point estimate."""
    import numpy as np

    from . import noise

    sides, unlike = {}, {}
    for i, g in enumerate(groups):
        p = noise_profiled.get(i)
        for cell, s in common:
            if i and (cell, s) not in pairs[i]:
                continue
            x = noise.log_round_means(g[0], s, cells[i][0][cell])
            e = p.entry(cell, s) if p else None
            sides[(i, cell, s)] = noise.side_with_noise_profile(x, e, i, p.key if p else None)
            point = np.log(centres[(i, cell, s)])
            point = point[np.isfinite(point)]
            sides[(i, cell, s)].centre = float(point.mean()) if len(point) else math.nan
            ratio, pv = noise.spread_check(x, e)
            if pv < noise.CHECK_LEVEL:
                unlike.setdefault(i, []).append(f"{where(s, cell)} {ratio:.2g}x")
                sides[(i, cell, s)].unlike = True
    for i, places in unlike.items():
        warnings.append(f"{labels[i]}: its rounds spread unlike its profile {noise_profiled[i].name} at "
                        f"{', '.join(places)} (p < {noise.CHECK_LEVEL:g})")
    for i in range(1, len(groups)):
        if i not in noise_profiled:
            warnings.append(f"no noise profile for {labels[i]} ({groups[i][0].host.get('kernel_release')} on "
                            f"{groups[i][0].host.get('hostname')}): no verdict ({_calibrate(groups[i][0])})")
    rows = []
    for cell, s in common:
        for i in (i for i in range(1, len(groups)) if (cell, s) in pairs[i]):
            base, new = sides[(0, cell, s)], sides[(i, cell, s)]
            d = noise.difference(base, new, confidence)
            note = None
            if base.terms is None or new.terms is None:  # none for the kernel, or none at this (cell, stride)
                note = f"no noise profile for {labels[0] if base.terms is None else labels[i]}"
            elif base.unlike or new.unlike:
                note = f"{labels[0] if base.unlike else labels[i]}'s spread unlike its profile"
            if note:
                d.update(ci_low_pct=math.nan, ci_high_pct=math.nan, p_value=math.nan, se=math.nan)
            described = (noise_profiled[0].describe(),
                         noise_profiled[i].describe() if i in noise_profiled else "")
            rows.append(_row(cell, s, labels, i, d, adjust, "satterthwaite", confidence, NOISE_PROFILE_UNIT, note,
                             described))
    return rows, NOISE_PROFILE_UNIT, "satterthwaite"


def _duration(seconds):
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def _beyond_span(groups, labels, noise_profiled, warnings):
    """Sides measured further apart than their profiles' sub-runs spanned: the host drifts over minutes
    (scripts/bench_defaults.py: run-to-run differences grew from 3% at 1 minute to 9% at 30), so the
    between-run part may fall short of what the two sides crossed.  A warning and a legend line each."""
    out = []
    base = groups[0][0].started
    for i in range(1, len(groups)):
        spans = [noise_profiled[j].calibration.get("span_s") for j in (0, i) if j in noise_profiled]
        spans = [s for s in spans if s is not None]
        when = groups[i][0].started
        if not spans or base is None or when is None or abs(when - base) <= min(spans):
            continue
        out.append(f"{labels[0]} and {labels[i]} were measured {_duration(abs(when - base))} apart, beyond the "
                   f"{_duration(min(spans))} their profiles' sub-runs spanned: drift slower than that is not in the "
                   "between-run part")
    warnings += out
    return out


def _calibrate(result):
    from ..data.noise_profile import calibrate_command

    return calibrate_command(result.config)


def verdicts(rows, adjust, confidence, rank=False):
    """Adjusted p, significance and the smallest detectable change of every row, one rule for
    compare and compare --by."""
    adjusted = multiplicity.adjust([r["p_value"] for r in rows], adjust)
    for r, p in zip(rows, adjusted):
        r["p_adjusted"] = float(p)
        r["significant"] = bool(p < stats.alpha(confidence))  # False for NaN: no test made
    _add_mde(rows, adjust, confidence, rank=rank)


def _add_mde(rows, adjust, confidence, rank=False):
    """Each row's smallest detectable speedup (80% power), from its own variance and N; the tests of a
    Holm-adjusted table share its first step's level.  Rows without a test or a variance: nan."""
    tests = sum(1 for r in rows if not math.isnan(r["p_value"])) if adjust == "holm" else 1
    for r in rows:
        se, df = r.pop("_se", math.nan), r.pop("_df", math.nan)
        r["mde_pct"] = detectable.mde_pct(se, df, confidence, tests, rank=rank) if not math.isnan(r["p_value"]) \
            else math.nan


def rate_of_sides(groups):
    """(column, unit, definition) of the rate every side measured (scaling.rate_of): GB/s unless the
    files name another; sides that name different rates cannot be compared."""
    from .scaling import rate_of

    found = {rate_of(r.config) for g in groups for r in g}
    if len(found) > 1:
        raise UsageError(f"the files measure different rates ({', '.join(sorted((u for _, u, _ in found)))}): one "
                         "cannot be compared with another")
    return found.pop()


def tasks_of(config):
    """threads or processes: what --threads' tasks were."""
    return config.get("tasks") or "threads"
