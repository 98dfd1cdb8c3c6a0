"""Comparing result files: options, what the files have in common, and one row per (cell, stride, new file);
and `compare FILE --by AXIS`, the cells of one file against each other, paired by round.

Statistics come from stats (pure); rendering is in render/compare (strings).
"""
import dataclasses
import math
import os
import weakref

import numpy as np

from . import stats
from ..data import cells, results
from ..data.cells import labels as cell_labels, op_of, where
from ..data.schema import cut
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


# Why a comparison gives no verdict, as a code render words (render/text.withheld).  The rule and its
# evidence (scripts/bench_defaults.py: sides >= 60 s apart, one file a side is called different far
# beyond its level) are in docs/methodology.md, "Measured: A/A across sessions".
WITHHELD = "one-session"


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
    paired: bool = False  # compare --by: cells of one file, paired by round (compare_by, below)
    pairs: dict = dataclasses.field(default_factory=dict)  # paired: (value index, cell, stride) -> (base, new)
    by: str = None  # paired: the axis
    counts: list = dataclasses.field(default_factory=list)  # counts.compare_counts rows (the kernel's events)
    emulated: list = dataclasses.field(default_factory=list)  # labels of sides from emulated guests (qemu-tcg)
    boots: list = dataclasses.field(default_factory=list)  # boots each side's runs come from (host.boot_id)
    batched: dict = dataclasses.field(default_factory=dict)  # file index -> rounds made into batch means
    withheld: str = None  # why no verdict is given: WITHHELD (every side one session, unit not asked for)
    labels_given: bool = False  # --labels: the user's names, which every format uses
    level: str = "session"  # "file": replicate files the unit (load_sides); "session": one file a side
    profiles: dict = dataclasses.field(default_factory=dict)  # side index -> its noise profile (data/profile)
    unprofiled: dict = dataclasses.field(default_factory=dict)  # side index -> the calibrate command it lacks
    profile_notes: list = dataclasses.field(default_factory=list)  # what the profiles do not cover here
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


def resolve_options(metric=None, test=None, confidence=95, unit="auto"):
    if metric not in (None, "mean", "median"):
        raise UsageError(f"--metric must be mean or median (got {metric!r})")
    if test not in (None,) + stats.TESTS:
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


def load_sides(items):
    """Every side of a comparison at the highest level of replication any side has: (groups, level).
    Where some side has two or more files, every file is one observation (its sub-runs averaged inside
    it): level "file".  Else a --runs file's sub-runs are the replicates: level "session" (they share
    one session, so withholds() gives no verdict unless a unit is asked for)."""
    loaded = [_load_files(item) for item in items]
    if any(len(files) > 1 for files in loaded):
        return loaded, "file"
    return [[part for r in files for part in r.sub_runs()] for files in loaded], "session"


def load_group(item):
    """One side of a comparison, its --runs sub-runs as replicates (see load_sides for the level rule)."""
    return [part for r in _load_files(item) for part in r.sub_runs()]


def side_files(item):
    """One side's files as given (replicate runs of 'a.json,b.json' each a Result), for plot."""
    return _load_files(item)


def _load_files(item):
    """One side's files: a Result, a path, a list of them, or 'a.json,b.json' (replicate runs)."""
    if isinstance(item, str) and "," in item:
        names = item.split(",")
        if not any(names):
            raise UsageError(f"{item!r} names no file (a.json,b.json = replicate runs of one side)")
        if not all(names):
            # Skipping it would make a side of fewer runs than typed, without a word.
            raise UsageError(f"{cut(item)} has an empty file name (name {names.index('') + 1} of {len(names)}: a "
                             "stray comma?)")
        item = names
    items = item if isinstance(item, (list, tuple)) else [item]
    return [x if isinstance(x, results.Result) else results.load(x) for x in items]


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
    as well (issue 25): say so, with both shares."""
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
    import os

    from ..render import text

    files = {}  # a file once per side at the session level (a --runs file is several sub-runs)
    for g in groups:
        paths = [r.path for r in g] if level == "file" else list(dict.fromkeys(r.path for r in g))
        for path in paths:
            if path is not None:
                files.setdefault(os.path.realpath(path), []).append(next(x for x in g if x.path == path))
    out = [text.same_file(rs[0].path, len(rs)) for rs in files.values() if len(rs) > 1]
    out += [text.incomplete(rs[0].path) for rs in files.values() if not rs[0].complete]
    return out


def _name(group):
    return ",".join(dict.fromkeys(r.path or "?" for r in group))  # a --runs file once, not once per sub-run


SEPARATORS = "-_."


def _cuts_at(text, i):
    """Whether a name may be cut before text[i]: after a separator, not inside a version (6.12)."""
    if text[i - 1] not in SEPARATORS:
        return False
    return not (text[i - 1] == "." and i >= 2 and text[i - 2].isdigit() and i < len(text) and text[i].isdigit())


def _common_cut(stems):
    """How many leading and trailing characters every stem shares, backed off to a separator (-, _, .)
    so a cut never splits a word or a number: atsdbench-host-6.12-T1 and -T2 keep T1 and T2, and
    -6.12.0- against -6.13.0- keeps 6.12.0 and 6.13.0 whole."""
    if len(set(stems)) < 2:
        return 0, 0
    head = len(os.path.commonprefix(stems))
    while head and not _cuts_at(stems[0], head):
        head -= 1
    tails = [x[head:][::-1] for x in stems]
    tail = len(os.path.commonprefix(tails))
    while tail and not _cuts_at(tails[0], tail):
        tail -= 1
    return head, tail


def short_names(groups):
    """Each side named by its files as briefly as they stay apart: the directory and .json dropped, the
    part every file's name shares cut (_common_cut), a side of several files as its first..last
    (a1..a3); None where two sides would read the same."""
    files = [list(dict.fromkeys(r.path or "?" for r in g)) if isinstance(g, list) else [g.path or "?"]
             for g in groups]
    stems = [[os.path.basename(f)[:-5] if f.endswith(".json") else os.path.basename(f) for f in fs]
             for fs in files]
    flat = [x for fs in stems for x in fs]
    head, tail = _common_cut(flat)
    cut = [[x[head:len(x) - tail] for x in fs] for fs in stems]
    if any(not x for fs in cut for x in fs):
        cut = stems
    names = [fs[0] if len(fs) == 1 else f"{fs[0]}..{fs[-1]}" for fs in cut]
    return names if len(set(names)) == len(names) else None


def boots(group):
    """Boots a side's runs come from (host.boot_id); files from before it was recorded count as one."""
    return len({r.host.get("boot_id") for r in group})


# How much of a label compare, model and plot print: a 10 MB --label was printed six times by compare
# (1.2 GB of output).  The result file keeps it whole, and so do compare's json rows (whole_labels).
LABEL_WIDTH = 60


def shown_label(text):
    """A label cut to LABEL_WIDTH characters, the cut marked with an ellipsis."""
    text = str(text)
    return text if len(text) <= LABEL_WIDTH else text[:LABEL_WIDTH - 3] + "..."


def choose_labels(groups, labels=None, whole=None):
    """The user's labels, else each side's label (its --label or kernel), else file names when those repeat;
    each cut to LABEL_WIDTH (shown_label).  `whole`, a dict, gets {label as cut: label as given}."""
    if labels is not None:
        if len(labels) != len(groups):
            raise UsageError(f"--labels gives {len(labels)} labels for {len(groups)} files")
        full = list(labels)
    else:
        full = [g[0].label if isinstance(g, list) else g.label for g in groups]
    if labels is None and len(set(map(shown_label, full))) < len(full):
        full = short_names(groups) or [_name(g) if isinstance(g, list) else (g.path or f"file {i + 1}")
                                       for i, g in enumerate(groups)]
    shown = [shown_label(x) for x in full]
    if labels is not None:
        _distinct(shown)
    if whole is not None:
        whole.update(zip(shown, full))
    return shown


def _distinct(labels):
    """The labels given, refused where two are the same (as shown): the renderers find each side's rows,
    ministat's pairs and compare --by threads' thread counts by label."""
    seen = set()
    for label in labels:
        if label in seen:
            raise UsageError(f"--labels: {cut(label)} names two sides; give each its own")
        seen.add(label)
    return labels


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
    from ..render import text

    out = []
    if batched:
        out.append(text.batched(list(dict.fromkeys(labels[i] for i in rounds)), timeseries.ROBUST_MIN_ROUNDS,
                                timeseries.BATCHES))
    if high:
        out.append(text.autocorrelated(high))
    return out, {i: sorted(v) for i, v in rounds.items()}


def compare(files, metric=None, test=None, confidence=95, unit="auto", labels=None, adjust="holm", by=None,
            profiles=(), find_profiles=True):
    """files: baseline first; each item one run or a group of replicate runs of the same thing.
    With by=AXIS: one file, its cells against each other, paired by round (compare_by, below).
    profiles: noise profiles (paths or data.profile.Profile) for sides of one process; with
    find_profiles, sides without one are looked up in the profile store (_profiles, below).

    Every (cell, stride, new file) is one test; with adjust="holm" the verdicts hold for the whole
    family at the confidence level (Holm's step-down), and the raw p is kept beside the adjusted one."""
    if by is not None:
        if profiles:
            raise UsageError("--profile is for files compared; --by pairs the cells of one run by round")
        return compare_by(files, by, metric, test, confidence, unit, labels, adjust)
    asked_test = test
    metric, test, confidence, unit = resolve_options(metric, test, confidence, unit)
    if adjust not in stats.ADJUSTMENTS:
        raise UsageError(f"--adjust must be holm or none (got {adjust!r})")
    if len(files) < 2:
        raise UsageError("compare needs a baseline file and at least one new file (or one file with --by AXIS)")
    groups, level = load_sides(files)
    for g in groups:
        for r in g:
            if not r.has_timed_pass():
                raise UsageError(f"{r.path or 'the file'} has no measured pass (its run ended before the first "
                                 "timed one)")
    given_labels, whole = labels, {}
    labels = choose_labels(groups, labels, whole)
    warnings = input_warnings(groups, level)
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
    common = sorted(set.intersection(*key_sets), key=lambda k: (order.get(k[0], len(order)), k[1]))
    for s, name in zip(key_sets, labels):
        for cell, stride in sorted(set.union(*key_sets) - s, key=lambda k: (order.get(k[0], len(order)), k[1])):
            what = f"stride {format_size(stride)}" + (f" of {cell}" if cell else "")
            warnings.append(f"{what} is missing from {name}: not compared")
    if not common:
        raise UsageError("the files have no stride in common" if all(c == "" for ks in key_sets for c, _ in ks)
                         else "the files have no (cell, stride) in common")
    effective, test, mixed = choose_unit(groups, unit, test, asked_test, warnings)
    if effective == "round" and any(stats.effective_unit(r.table, "round") == "pass" for g in groups for r in g):
        effective = "pass"
        warnings.append("a file has a single round: the CI over passes ignores between-round variance")
    elif unit == "pass":
        warnings.append("--unit pass: every pass is an observation; the CI ignores between-round variance")
    rate = rate_of_sides(groups)
    obs = {(i, cell, s): group_observations(g, s, effective, metric, [c[cell] for c in cells[i]], rate[0])
           for i, g in enumerate(groups) for cell, s in common}
    profiled = _profiles(groups, unit, effective, metric, asked_test, profiles, find_profiles, labels, warnings)
    batched = {}
    if effective == "round" and not profiled:  # a profile's between-run part takes up what batching would
        more, batched = _time_order(obs, groups, labels)
        warnings += more
    rows, notes = [], {}
    if profiled:
        rows, effective, test = _profiled_rows(groups, cells, common, labels, profiled, confidence, adjust,
                                               warnings)
    for cell, s in common if not profiled else ():
        for i in range(1, len(groups)):
            d = stats.difference(obs[(0, cell, s)], obs[(i, cell, s)], test, confidence)
            if d.get("why"):
                notes.setdefault((labels[i], d["why"]), []).append(where(s, cell))
            rows.append(_row(cell, s, labels, i, d, adjust, test, confidence, effective))
    from . import counts as count_changes
    count_changes.mark_emulated(rows, groups, labels)  # rates shown, no verdict
    _verdicts(rows, adjust, confidence, rank=test == "mannwhitney")
    withheld = None
    if withholds(unit, effective, level) and not profiled:
        withheld = WITHHELD
        for r in rows:
            r.update(significant=False, mde_pct=math.nan, verdict_withheld=True)
    for (label, why), places in notes.items():
        warnings.append(f"{'strides' if len(places) > 1 else 'stride'} {', '.join(places)}, {label}: no CI ({why})")
    ops = list(dict.fromkeys(op_of(g[0].config) for g in groups))
    if len(ops) > 1:
        warnings.append(f"the sides time different calls ({', '.join(ops)}): the speedup is not the kernel's")
    cmp = Comparison(rows, labels, metric, test, confidence, effective, warnings, obs, adjust, mixed,
                     boots=[boots(g) for g in groups], batched=batched, withheld=withheld, level=level, ops=ops)
    cmp.whole_labels = whole
    cmp.rate, cmp.tasks = rate, tasks_of(groups[0][0].config)
    specs = cells_specs(groups[0][0])
    cmp.cell_specs = {name: specs.get(index, {}) for name, index in cells[0][0].items()}
    # the K of every file where any ran --placements: a side of one placement a round stays named
    ks = {g_file.config.get("placements") or 1 for g in groups for g_file in g}
    cmp.placements = sorted(ks) if ks != {1} else []
    cmp.profiles = dict(profiled)
    cmp.labels_given = given_labels is not None
    cmp.different_work = [k for k in differing([g[0] for g in groups]) if k in WORK]
    cmp.unprofiled = {i: _calibrate(g[0]) for i, g in enumerate(groups) if profiled and i not in profiled}
    cmp.profile_notes = _beyond_span(groups, labels, profiled, warnings)
    cmp.stale = stale_of([r for g in groups for r in g])
    from .breakdown import compare_stages

    cmp.stages = compare_stages(groups, labels, confidence)
    return count_changes.attach(cmp, groups, cells, common)


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


def _row(cell, s, labels, i, d, adjust, test, confidence, unit, note=None, profiles=("", "")):
    """One compare row from a difference (stats.difference's or noise.difference's answer)."""
    return {"cell": cell, "stride": format_size(s), "stride_bytes": s, "base_label": labels[0],
            "new_label": labels[i], "base_gbps": d["base"], "new_gbps": d["new"], "speedup_pct": d["speedup_pct"],
            "ci_low_pct": d["ci_low_pct"], "ci_high_pct": d["ci_high_pct"], "p_value": d["p_value"],
            "adjust": adjust, "test": test, "confidence": confidence, "unit": unit, "n_base": d["n_base"],
            "n_new": d["n_new"], "note": d.get("why", "") if note is None else note,
            "verdict_withheld": bool(note), "profile_base": profiles[0], "profile_new": profiles[1],
            "_se": d.get("se", math.nan), "_df": d.get("df", d["n_base"] + d["n_new"] - 2)}


# ---- sides of one process with a noise profile (issue 25.2; analysis/noise.py, data/profile.py) ----
# A side of one process has no between-run variance: a noise profile (atsdbench calibrate: K sub-runs
# of the same plan on the same host and kernel) supplies it.  Each side's mean then has variance own
# within-run variance / its rounds + the profile's between-run component, the df of the difference by
# Welch-Satterthwaite.  Only where every side is one process, the unit was left to compare and the
# test is on mean log rates; a side without a profile gets no verdict, the reason naming the command
# that makes one; a side whose round spread disagrees with its profile's (F test) none either.

PROFILE_UNIT = "round+profile"


def _profiles(groups, unit, effective, metric, asked_test, explicit, search, labels, warnings):
    """{side index: Profile} where compare uses profiles, else {}; --profile where it cannot apply, or
    of another host, kernel or plan, is a UsageError."""
    from ..data import profile

    explicit = [profile.load(p) for p in explicit or ()]
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
            raise UsageError(f"--profile {why}")
        return {}
    found = profile.assign({i: g[0] for i, g in enumerate(groups)}, explicit, search, warnings=warnings)
    if found and 0 not in found:
        warnings.append(f"no noise profile for the baseline {labels[0]}: none used, no verdict "
                        f"({_calibrate(groups[0][0])})")
        return {}
    return found


def _profiled_rows(groups, cells, common, labels, profiled, confidence, adjust, warnings):
    """compare's rows where sides of one process borrow their between-run variance from profiles:
    (rows, unit, test)."""
    from . import noise

    sides, unlike = {}, {}
    for i, g in enumerate(groups):
        p = profiled.get(i)
        for cell, s in common:
            x = noise.log_round_means(g[0], s, cells[i][0][cell])
            e = p.entry(cell, s) if p else None
            sides[(i, cell, s)] = noise.profiled_side(x, e, i, p.key if p else None)
            ratio, pv = noise.spread_check(x, e)
            if pv < noise.CHECK_LEVEL:
                unlike.setdefault(i, []).append(f"{where(s, cell)} {ratio:.2g}x")
                sides[(i, cell, s)].unlike = True
    for i, places in unlike.items():
        warnings.append(f"{labels[i]}: its rounds spread unlike its profile {profiled[i].name} at {', '.join(places)} "
                        f"(p < {noise.CHECK_LEVEL:g})")
    for i in range(1, len(groups)):
        if i not in profiled:
            warnings.append(f"no noise profile for {labels[i]} ({groups[i][0].host.get('kernel_release')} on "
                            f"{groups[i][0].host.get('hostname')}): no verdict ({_calibrate(groups[i][0])})")
    rows = []
    for cell, s in common:
        for i in range(1, len(groups)):
            base, new = sides[(0, cell, s)], sides[(i, cell, s)]
            d = noise.difference(base, new, confidence)
            note = None
            if base.terms is None or new.terms is None:  # none for the kernel, or none at this (cell, stride)
                note = f"no noise profile for {labels[0] if base.terms is None else labels[i]}"
            elif base.unlike or new.unlike:
                note = f"{labels[0] if base.unlike else labels[i]}'s spread unlike its profile"
            if note:
                d.update(ci_low_pct=math.nan, ci_high_pct=math.nan, p_value=math.nan, se=math.nan)
            rows.append(_row(cell, s, labels, i, d, adjust, "satterthwaite", confidence, PROFILE_UNIT, note,
                             (profiled[0].describe(), profiled[i].describe() if i in profiled else "")))
    return rows, PROFILE_UNIT, "satterthwaite"


def _duration(seconds):
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def _beyond_span(groups, labels, profiled, warnings):
    """Sides measured further apart than their profiles' sub-runs spanned: the host drifts over minutes
    (scripts/bench_defaults.py: run-to-run differences grew from 3% at 1 minute to 9% at 30), so the
    between-run part may fall short of what the two sides crossed.  A warning and a legend line each."""
    out = []
    base = groups[0][0].started
    for i in range(1, len(groups)):
        spans = [profiled[j].calibration.get("span_s") for j in (0, i) if j in profiled]
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
    from ..data.profile import calibrate_command

    return calibrate_command(result.config)


def _verdicts(rows, adjust, confidence, rank=False):
    """Adjusted p, significance and the smallest detectable change of every row, one rule for
    compare and compare --by."""
    adjusted = stats.adjust([r["p_value"] for r in rows], adjust)
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
        r["mde_pct"] = stats.mde_pct(se, df, confidence, tests, rank=rank) if not math.isnan(r["p_value"]) \
            else math.nan


def compare_frame(files, **options):
    return compare(files, **options).frame()


# ---- compare FILE --by AXIS ----
# `compare FILE --by AXIS`: the cells of one run against each other, paired by round.
#
# The cells of a round ran one after another, interleaved in a shuffled order, each with its own
# fresh region: whatever moved the machine between rounds, or between runs, moved them alike.  So
# each round gives one difference per stride (log rate of the new cell minus log rate of the base
# cell) and the test is on those differences: the drift cancels instead of widening the CI.  Every
# cell is compared with the cell holding the first value of the axis, the other axes held equal.
#
# --metric mean: paired t on the log round means (the ratio of geometric means, CI exponentiated).
# --metric median: Hodges-Lehmann estimate of the differences of log round medians (the median of
# their Walsh averages) with the CI that inverts the Wilcoxon signed-rank test, and its p: exact
# without ties.  A percentile bootstrap of the median difference was tried first and measured short
# of its level at the usual 6-15 rounds (92-94% for 95%, percentile and BCa; tests/cli/test_axes.py keeps it),
# and it could disagree with the signed-rank p; the inverted test covers at least its level by
# construction and never contradicts its own p.


def _value_label(axis, values, position):
    """"bystanders=1"; where the value repeats in the axis (an A/A), its position too: "bystanders=0 #2"."""
    text = f"{axis}={cells.value_text(values[position])}"
    return text + f" #{position + 1}" if values.count(values[position]) > 1 else text


def _by_check(files, axis, test, unit, adjust):
    if len(files) != 1:
        raise UsageError(f"--by compares the cells of one file: give one file (got {len(files)})")
    item = files[0]
    if (isinstance(item, str) and "," in item) or (isinstance(item, (list, tuple)) and len(item) != 1):
        raise UsageError("--by takes one result file, not replicate runs (a.json,b.json)")
    if test is not None:
        raise UsageError(f"--test {test} is for files compared with each other (--by: paired t, wilcoxon)")
    if unit not in ("auto", "round"):
        raise UsageError(f"--by pairs rounds: --unit {unit} does not apply (leave it out)")
    if adjust not in stats.ADJUSTMENTS:
        raise UsageError(f"--adjust must be holm or none (got {adjust!r})")
    return item[0] if isinstance(item, (list, tuple)) else item


def _by_axes(result, axis):
    name = result.path or "the file"
    axes = result.config.get("axes") or {}
    if not axes or "cell" not in result.table:
        raise UsageError(f"{name} has no axes to compare --by (run e.g. --bystanders 0,1 first)")
    if axis not in axes:
        if axis not in cells.AXES:
            raise UsageError(f"--by {axis!r} is not an axis (axes: {', '.join(cells.AXES)})")
        raise UsageError(f"{name} has no axis {axis} (its axes: {', '.join(axes)})")
    return axes


def round_values(table, cell, stride, metric, column="gbps"):
    """{round: the mean (or median) of that round's measured passes} of one cell and stride."""
    if column not in table:
        return {}
    rows = (table["cell"] == cell) & (table["stride_bytes"] == stride) & ~table["warmup"]
    found, values = stats.group_values(table["round"][rows], table[column][rows], metric)
    return {int(r): float(v) for r, v in zip(found.tolist(), values.tolist())}


def compare_by(files, axis, metric=None, test=None, confidence=95, unit="auto", labels=None, adjust="holm"):
    """Every cell of one file against the cell with the first value of `axis` (the other axes held
    equal), paired by round.  Returns a Comparison (paired=True) for compare's renderers;
    one test per (other axes, stride, value), Holm across all of them with adjust="holm"."""
    item = _by_check(files, axis, test, unit, adjust)
    metric, _, confidence, _ = resolve_options(metric, None, confidence, "auto")
    result = item if isinstance(item, results.Result) else results.load(item)
    axes = _by_axes(result, axis)
    values = list(axes[axis])
    value_labels = [_value_label(axis, values, j) for j in range(len(values))]
    if labels is not None:
        if len(labels) != len(values):
            raise UsageError(f"--labels gives {len(labels)} labels for the {len(values)} values of {axis}")
        value_labels = _distinct(list(labels))
    others = [a for a in axes if a != axis]
    groups = {}  # other axes' positions -> {position on `axis`: cell index}
    for index, pos in cells.positions(result.config).items():
        if axis in pos and all(a in pos for a in others):
            groups.setdefault(tuple(pos[a] for a in others), {})[pos[axis]] = index
    table = result.table
    measured = stats.measured(table)
    measured_cells = set(cells.present(measured["cell"]))
    rate = rate_of_sides([[result]])
    strides = cells.present(measured["stride_bytes"])
    test_name = stats.PAIRED_TESTS[metric]
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
                d = stats.paired_difference(a, b, metric, confidence)
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
        raise UsageError(f"{result.path or 'the file'}: no cell of {axis} but the first has a measured pass")
    from . import counts as count_changes
    count_changes.mark_emulated_file(rows, result, warnings)  # rates shown, no verdict
    _verdicts(rows, adjust, confidence, rank=metric == "median")
    for (label, lost), places in unpaired.items():
        warnings.append(f"{'strides' if len(places) > 1 else 'stride'} {', '.join(places)}, {label}: {lost} "
                        f"round{'s' if lost > 1 else ''} measured one cell only: not paired")
    for (label, why), places in notes.items():
        warnings.append(f"{'strides' if len(places) > 1 else 'stride'} {', '.join(places)}, {label}: no CI ({why})")
    members = {" ".join(_value_label(a, list(axes[a]), p) for a, p in zip(others, key)): m for key, m in groups.items()}
    ops = (list(axes[axis]) if axis in ("op", "workload") else list(axes["workload"]) if "workload" in axes else
           [op_of(result.config)])
    cmp = Comparison(rows, value_labels, metric, test_name, confidence, "round", warnings, obs, adjust, paired=True,
                     pairs=pairs, by=axis, ops=ops, stale=stale_of([result]))
    from .scaling import thread_values

    # --by threads reads by thread count (efficiency divides by them) only where they are counts (whole
    # numbers from 1, as show --scaling takes them); a crafted axis of others gets compare's own layout
    cmp.rate, cmp.tasks = rate, tasks_of(result.config)
    cmp.by_values = values if axis != "threads" or thread_values(result) else None
    return count_changes.attach_by(cmp, result, members, strides)


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


def cells_specs(result):
    """cells.specs, for compare(), whose local `cells` (the cell maps) hides the module."""
    return cells.specs(result)
