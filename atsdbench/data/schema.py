"""The result file's schema, and the check that holds a file to it once, at load.

Every number a reader computes with has a type and a range here, so a file that loads cannot crash
`show`, `compare` or `plot`; a file that does not load gets one message naming the field.  Unknown
keys are allowed (newer optional columns), but an unknown sample column must hold plain values.
Hand-written rather than JSON Schema: jsonschema takes 10 s to check a 20,000-pass file with latency
histograms (fastjsonschema 0.8 s, pydantic 0.25 s); checking the samples column by column, with
C-level type sets and min/max, takes under a tenth (0.09 s; tests/data/test_results.py has such a file).
"""
import math
import re

from ..errors import UsageError

# Byte counts (size, strides, page sizes): at most 2^62, beyond any address space (x86-64 5-level
# paging maps 2^57) and small enough that size x passes stays inside the int64 a DataFrame holds.
MAX_BYTES = 2 ** 62
# Counts and nanoseconds: int64, what a DataFrame column holds without turning into objects.
MAX_INT64 = 2 ** 63 - 1
# What a pass can measure, from those: a rate is at most MAX_BYTES bytes in 1 ns (GB/s = bytes/ns),
# a time at most MAX_INT64 ns.  Bounded so, sums over a file cannot overflow to infinity.
MAX_GBPS, MAX_US, MAX_SECONDS = float(MAX_BYTES), MAX_INT64 / 1e3, MAX_INT64 / 1e9
# The widest spread of log rates any file can hold: from 1 byte in MAX_INT64 ns to MAX_GBPS, about
# 87 in natural log units; no variance of log rates (a noise profile's) can exceed its square.
MAX_LOG_VAR = math.log(MAX_GBPS * MAX_INT64) ** 2
# Latency buckets are floor(4 log2 ns) of a 64-bit ns count: 0..255, so at most three digits.
BUCKET = re.compile(r"[0-9]{1,3}")
# How much of a bad value a message shows: a 1 MB string must not become a 1 MB message.
SHOWN = 60

_WORDS = {int: "a whole number", float: "a number", str: "text", bool: "true or false", type(None): "null",
          dict: "an object", list: "a list"}


def shorten(text):
    """text, cut to at most SHOWN characters."""
    return text if len(text) <= SHOWN else text[:SHOWN - 3] + "..."


def cut(value):
    """repr(value), at most SHOWN characters of it."""
    return shorten(repr(value))


class Value:
    """A plain value: one of `types` (exact types: True is not a whole number), numbers within
    [lo, hi] (lo excluded when `above`), floats finite."""

    def __init__(self, *types, lo=None, hi=None, above=False, null=False):
        self.types = frozenset(types) | ({type(None)} if null else frozenset())
        self.lo, self.hi, self.above = lo, hi, above

    def words(self):
        order = [t for t in (int, float, str, bool, dict, list, type(None)) if t in self.types]
        if int in self.types and float in self.types:
            order.remove(int)
        return " or ".join(_WORDS[t] for t in order)

    def problem(self, v):
        """What is wrong with one value, or None."""
        if type(v) not in self.types:
            return f"must be {self.words()} (got {cut(v)})"
        if type(v) in (int, float):
            if isinstance(v, float) and not math.isfinite(v):
                return f"must be a finite number (got {cut(v)})"
            if self.lo is not None and (v <= self.lo if self.above else v < self.lo):
                return f"must be {'more than' if self.above else 'at least'} {self.lo} (got {cut(v)})"
            if self.hi is not None and v > self.hi:
                return f"must be at most {self.hi} (got {cut(v)})"
        return None

    def column_ok(self, values):
        """True when every value is fine: whole columns are checked in C (type sets, min, max)."""
        if not set(map(type, values)) <= self.types:
            return False
        numbers = [v for v in values if type(v) in (int, float)] if (self.types - {int, float}) else values
        if not numbers:
            return True
        if float in self.types and not all(map(math.isfinite, [v for v in numbers if type(v) is float])):
            return False
        low, high = min(numbers), max(numbers)
        if self.lo is not None and (low <= self.lo if self.above else low < self.lo):
            return False
        return self.hi is None or high <= self.hi


class List:
    def __init__(self, item, nonempty=False):
        self.item, self.nonempty = item, nonempty

    def problem(self, v):
        if type(v) is not list:
            return f"must be a list (got {cut(v)})"
        if self.nonempty and not v:
            return "must not be empty"
        for i, x in enumerate(v):
            p = self.item.problem(x)
            if p:
                return (f"[{i}]", p)
        return None


class Mapping:
    """An object with any keys (matching `key` when given) whose values are all `item`."""

    def __init__(self, item, key=None, null=False, key_words="a latency bucket (0-999)"):
        self.item, self.key, self.null, self.key_words = item, key, null, key_words

    def problem(self, v):
        if v is None and self.null:
            return None
        if type(v) is not dict:
            return f"must be an object{' or null' if self.null else ''} (got {cut(v)})"
        for k, x in v.items():
            if self.key is not None and not self.key.fullmatch(k):
                return f"has a key {cut(k)} that is not {self.key_words}"
            p = self.item.problem(x)
            if p:
                return (f".{k}", p)
        return None


class Record:
    """An object with known fields, required ones, families of fields by name, and a rule for the rest."""

    def __init__(self, fields, required=(), families=(), other=None, null=False):
        self.fields, self.required, self.families, self.other = fields, required, families, other
        self.null = null

    def rule(self, key):
        if key in self.fields:
            return self.fields[key]
        for pattern, rule in self.families:
            if pattern.match(key):
                return rule
        return self.other

    def problem(self, v):
        if v is None and self.null:
            return None
        if type(v) is not dict:
            return f"must be an object{' or null' if self.null else ''} (got {cut(v)})"
        missing = [k for k in self.required if k not in v]
        if missing:
            return f"has no {', '.join(missing)}"
        for k, x in v.items():
            rule = self.rule(k)
            p = rule.problem(x) if rule else None
            if p:
                return (f".{k}", p)
        return None


def _int(lo=0, hi=MAX_INT64, null=False):
    return Value(int, lo=lo, hi=hi, null=null)


SCALAR = Value(type(None), bool, int, float, str)
TEXT = Value(str, null=True)
BOOL = Value(bool)
BYTES = _int(1, MAX_BYTES)
# A pass's count of events: never below zero.  The one total that can fall, /proc/interrupts' row
# summed over the CPUs online (a CPU gone offline mid-pass takes its column with it), is written
# null by both writers: that pass counted nothing (docs/result-file.md).
COUNTER = _int(0, MAX_INT64, null=True)

SAMPLE = Record({
    "round": _int(), "rep": _int(), "order": _int(null=True), "stride_bytes": BYTES, "warmup": BOOL, "traced": BOOL,
    "ns": _int(), "seconds": Value(int, float, lo=0, hi=MAX_SECONDS), "calls": _int(1),
    # A finished pass moved size >= 1 bytes in finite time: its rate is > 0; null when it took 0 ns.
    "gbps": Value(int, float, lo=0, hi=MAX_GBPS, above=True, null=True),
    "us_per_call": Value(int, float, lo=0, hi=MAX_US),
    # {bucket: calls}; a pass writes only buckets some call fell in
    "lat_hist": Mapping(_int(1), key=BUCKET, null=True), "gpu_touch_ns": _int(null=True), "cell": _int(),
    "device_touch_ns": _int(null=True),  # --device hmm: the device's mirror of the region before the pass
    "round_t": Value(int, float, lo=0, hi=MAX_SECONDS, null=True),
    "bystander_share": Value(int, float, lo=0, hi=MAX_SECONDS, null=True),
    "bystander_spins_min": _int(-MAX_INT64, null=True), "bystander_idle": BOOL,
    "thp_share": Value(int, float, lo=0, hi=1, null=True),
    # the host-drift canary of the pass's round, and the pass's self-disturbance
    "canary_compute_ns": _int(), "canary_chase_ns": _int(), "preempted": _int(), "steal_ticks": _int(),
    "cpu_share": Value(int, float, lo=0, hi=MAX_SECONDS, null=True), "disturbed": BOOL,
    "run": _int(),  # run --runs: the sub-run (its own process) the pass belongs to
    "threads": _int(1), "thread_ns_min": _int(), "thread_ns_max": _int(), "threads_disturbed": _int(),  # --threads
    # run --workload (schema 5): every task's loops in the pass and their aggregate rate
    "workload": Value(str, null=True), "loops": _int(1), "loops_per_s": Value(int, float, lo=0, above=True, null=True),
    # where the round's region sat in physical memory (measure/placement.py; schema 7)
    "placement_present": Value(int, float, lo=0, hi=1, null=True),
    "placement_contig2m": Value(int, float, lo=0, hi=1, null=True),
    "placement_pfn_min": _int(null=True), "placement_pfn_median": _int(null=True),
    "placement_pfn_max": _int(null=True), "placement_pfn_hash": TEXT, "placement_nodes": TEXT,
    "placement_slot": _int(),  # run --placements K: which of the K held regions the round used
}, required=("round", "rep", "stride_bytes", "warmup", "ns", "seconds", "calls", "gbps", "us_per_call"),
    families=((re.compile(r"lat_.*_us$"), Value(int, float, lo=0, hi=MAX_US, null=True)), (re.compile("tlb_"), COUNTER),
              (re.compile(r"(ipis|flushes|full_flushes|flushes_.*)$"), COUNTER),
              (re.compile(r"(tlbie|tlbie_[a-z]+|tlbia|h_[a-z_]+)$"), COUNTER),  # POWER (tlbie.py)
              (re.compile(r"(notifier_starts|device_invalidates)$"), COUNTER)),  # --device hmm (kprobes)
    other=SCALAR)

# run --breakdown (measure/breakdown.py, analysis/breakdown.py): one record a traced pass
_US = Value(int, float, lo=0, hi=MAX_US, null=True)
_PER_CALL = Value(int, float, lo=0, hi=MAX_INT64, null=True)
BREAKDOWN = Record({
    "clock": TEXT, "events": List(Value(str)), "missing": List(Value(str)), "calls_max": _int(1), "complete": BOOL,
    "error": TEXT,
    "passes": List(Record({
        "stride_bytes": BYTES, "region_bytes": BYTES, "cell": _int(), "lost": _int(), "calls": _int(1),
        "syscall_us": _US, "untraced_us": _US,
        "remote_flush_us": Mapping(_US, key=re.compile(r"[0-9]{1,6}"), null=True, key_words="a CPU number"),
    }, required=("stride_bytes",), families=((re.compile(r"[a-z_]+_us$"), _US),), other=_PER_CALL)),
}, null=True)

# run --profile (measure/profile.py, analysis/profile.py): one record a sampled stride
_SHARE = Value(int, float, lo=0, hi=1.000001, null=True)
_RANKED = List(List(Value(str, int, float)))
PROFILE = Record({
    "event": TEXT, "freq": _int(), "complete": BOOL, "error": TEXT,
    "passes": List(Record({
        "stride_bytes": BYTES, "cell": _int(), "passes": _int(), "lost": _int(), "samples": _int(),
        "bystander_samples": _int(), "seconds": Value(int, float, lo=0, hi=MAX_SECONDS),
        "self": _RANKED, "inclusive": _RANKED, "stages": Mapping(_SHARE), "bystander_stages": Mapping(_SHARE),
    }, required=("stride_bytes",))),
}, null=True)

CONFIG = Record({
    "size": BYTES, "strides": List(BYTES, nonempty=True), "rounds": _int(1), "reps": _int(1), "warmup": _int(),
    "warmup_rounds": _int(), "pages": Value(str), "op": Value(str), "threads": _int(1), "tasks": Value(str),
    "thread_cpus": List(_int()), "bystanders": _int(), "cpu": _int(null=True), "cpu_reason": TEXT,
    "bystander_cpus": List(_int()), "label": TEXT, "latency": BOOL, "retouch": BOOL, "processes": BOOL,
    "gpu": _int(null=True), "trace_scope": TEXT, "trace_error": TEXT,
    "verify": BOOL, "verify_cpus": List(_int()),  # run --verify (schema 4)
    "workload": TEXT, "aslr": Value(str, null=True),  # run --workload (schema 5)
    # the rate the samples carry where it is not GB/s in `gbps` (analysis/scaling.rate_of: a workload's loops/s)
    "rate": Record({"column": Value(str), "unit": Value(str), "definition": TEXT}, required=("column", "unit")),
    "placements": _int(1), "placement_pool": TEXT, "mem_node": _int(null=True),  # schema 7
    "placement_page_tables": TEXT,  # schema 7: "not recorded" and why, until a kernel exposes them
    "runs": _int(1), "gap": Value(int, float, lo=0, hi=MAX_SECONDS),
    "axes": Mapping(List(SCALAR, nonempty=True)), "cells": List(Mapping(SCALAR)),
    "round_lag1": List(Record({"cell": _int(), "stride_bytes": BYTES, "rounds": _int(),
                               "lag1": Value(int, float, lo=-1.001, hi=1.001, null=True)}, required=("stride_bytes", "rounds", "lag1"))),
    "adaptive": Record({
        "target": Value(int, float, lo=0, hi=MAX_GBPS), "confidence": Value(int, float, lo=0, hi=100, null=True),
        "stop_reason": TEXT, "rounds": _int(null=True), "elapsed_s": Value(int, float, lo=0, hi=MAX_SECONDS, null=True),
        "met": BOOL,
        "unit": TEXT, "runs": _int(null=True), "min_runs": _int(null=True),  # --until --runs: sub-runs taken
        "half_widths": List(Record({"stride_bytes": BYTES, "cell": _int(), "rounds": _int(), "runs": _int(),
                                    "met": BOOL,
                                    "half_width_pct": Value(int, float, lo=0, hi=MAX_GBPS, null=True),
                                    "mean_gbps": Value(int, float, lo=0, hi=MAX_GBPS, null=True)},
                                   required=("stride_bytes",))),
    }, required=("target",), null=True),
    "breakdown": BREAKDOWN, "profile": PROFILE,
    "device": TEXT, "device_count_error": TEXT,  # --device hmm (the host's `device` says which driver)
}, required=("size", "strides", "rounds", "reps", "pages"))

HOST = Record({
    "hostname": TEXT, "arch": TEXT, "kernel_release": TEXT, "boot_id": TEXT,
    "page_size": _int(1, MAX_BYTES, null=True), "hugepage_size": _int(1, MAX_BYTES, null=True),
    # a page count, or "unknown" where debugfs was not readable
    "tlb_single_page_flush_ceiling": Value(int, str, lo=0, hi=MAX_BYTES, null=True),
})

# run --verify (schema 4): one record per verify pass, never among the samples (no timed pass has a checker)
VERIFY = Record({
    "round": _int(), "warmup": BOOL, "op": Value(str), "stride_bytes": BYTES, "threads": _int(1), "cell": _int(),
    "run": _int(), "round_t": Value(int, float, lo=0, hi=MAX_SECONDS, null=True),
    "invalidator_cpus": List(_int()), "checker_cpus": List(_int()),
    "calls": _int(), "checks": _int(), "faults": _int(), "zeros": _int(), "stale": _int(), "held": _int(),
    "ns": _int(),
    # --device hmm: the device's read after each call (csrc/atsd_verify.c)
    "device_checks": _int(), "device_failed": _int(), "device_zeros": _int(), "device_stale": _int(),
}, required=("round", "op", "stride_bytes", "calls", "checks", "faults", "zeros", "stale", "held"), other=SCALAR)

TOP = Record({"complete": BOOL, "started": Value(int, float, lo=0, hi=MAX_SECONDS, null=True),
              "finished": Value(int, float, lo=0, hi=MAX_SECONDS, null=True),
              "host": HOST, "config": CONFIG, "samples": List(Value(dict)), "verify": List(VERIFY)},
             required=("complete", "host", "config", "samples"))


def located(path, problem):
    """(field path, phrase) from a possibly nested problem."""
    while isinstance(problem, tuple):
        step, problem = problem
        path += step
    return path, problem


def bad_field(path, where, problem):
    """The one line naming a file's first field that breaks its schema ("a.json: samples[3].gbps is
    ..."), as a UsageError to raise; `where` as located() gives it."""
    return UsageError(f"{path}: {shorten(where.lstrip('.')) or 'the file'} {problem}")


def _sample_problem(samples):
    """(index, problem) of the first bad sample, or None; columns first, one sample at a time only
    to find which one is bad."""
    keys = set()
    for s in samples:
        keys.update(s)
    for k in SAMPLE.required:
        if any(k not in s for s in samples):
            i = next(i for i, s in enumerate(samples) if k not in s)
            return i, f"has no {k}"
    bad = []
    for k in keys:
        rule = SAMPLE.rule(k)
        values = [s[k] for s in samples if k in s]
        if isinstance(rule, Value):
            ok = rule.column_ok(values)
        else:  # lat_hist: every key and every count of every histogram at once
            dicts = [v for v in values if type(v) is dict]
            ok = (len(dicts) == sum(v is not None for v in values)
                  and all(map(BUCKET.fullmatch, {b for d in dicts for b in d}))
                  and rule.item.column_ok([c for d in dicts for c in d.values()]))
        if not ok:
            bad.append(k)
    for i, s in enumerate(samples) if bad else ():
        for k in s:
            if k in bad:
                p = SAMPLE.rule(k).problem(s[k])
                if p:
                    return i, (f".{k}", p)
    return None


def batch_problem(samples):
    """(index, problem) of the first bad sample of a batch (results.load checks a streamed file's
    samples a batch at a time), or None."""
    if not all(type(s) is dict for s in samples):
        i = next(i for i, s in enumerate(samples) if type(s) is not dict)
        return i, f"must be an object (got {cut(samples[i])})"
    return _sample_problem(samples)


def _placement_problem(config, columns):
    """(field path, phrase) of the first sample that is not one pass of the plan the config states:
    a cell the config has not (a "cell" alone makes show/plot/model treat the file as having cells),
    a stride outside config.strides, or the same pass twice (it would count twice in every mean).
    Column by column (data/columns.py); the first bad pass in file order is named."""
    import numpy as np

    n = len(columns)
    if not n:
        return None
    cells = config.get("cells")
    has_cell = columns.present("cell")
    cell = columns.get("cell")
    cell0 = np.zeros(n, dtype=np.int64) if cell is None else np.where(has_cell, cell, 0).astype(np.int64)
    stride = columns.get("stride_bytes").astype(np.int64, copy=False)
    found = []  # (index, order, problem)
    if cells is None and has_cell.any():
        i = int(np.argmax(has_cell))
        found.append((i, 0, (f".samples[{i}].cell", f"is {cell0[i]}, but the file has no axes (no config.cells)")))
    if cells is not None and (cell0 >= len(cells)).any():
        i = int(np.argmax(cell0 >= len(cells)))
        found.append((i, 0, (f".samples[{i}].cell", f"is {cell0[i]}, beyond config.cells ({len(cells)})")))
    off = ~np.isin(stride, np.array(sorted(set(config["strides"])), dtype=np.int64))
    if off.any():
        i = int(np.argmax(off))
        found.append((i, 1, (f".samples[{i}].stride_bytes", f"is {stride[i]}, not one of config.strides")))
    rnd, rep = (columns.get(k).astype(np.int64, copy=False) for k in ("round", "rep"))
    key = _pass_key((cell0, rnd, rep, stride))
    if key is not None:  # one array sorted, not four: sorting four made this check loading's peak
        order = np.argsort(key, kind="stable")
        key = key[order]
        same = key[1:] == key[:-1]
        del key
    else:
        order = np.lexsort((stride, rep, rnd, cell0))  # stable: equal passes in file order
        same = np.ones(n - 1, dtype=bool)
        for k in (cell0, rnd, rep, stride):
            k = k[order]
            same &= k[1:] == k[:-1]
    if same.any():
        at = np.flatnonzero(same) + 1  # sorted positions that repeat the one before
        j = int(at[np.argmin(order[at])])  # the first repeat in file order
        p = j
        while p > 0 and same[p - 1]:  # back to its group's first, which came first in the file
            p -= 1
        i, first = int(order[j]), int(order[p])
        where = "" if not has_cell[i] else f", cell {cell0[i]}"
        found.append((i, 2, (f".samples[{i}]", f"is the same pass as samples[{first}] (round {rnd[i]}, rep {rep[i]}, "
                                                f"stride {stride[i]}{where})")))
    return min(found)[2] if found else _rate_problem(config, columns)


def _pass_key(parts):
    """One int64 a pass that sorts as the tuple of `parts` (int64 arrays, most significant first), or
    None where their ranges do not fit in 63 bits: sorting it is lexsort's order, in a quarter of
    lexsort's memory (10^6 passes: 72 MiB of sorted copies)."""
    import numpy as np

    spans = [(int(p.min()), int(p.max()) - int(p.min()) + 1) for p in parts]
    total = 1
    for _, span in spans:
        total *= span
    if total >= 1 << 63:
        return None
    key = np.zeros(len(parts[0]), dtype=np.int64)
    for p, (low, span) in zip(parts, spans):
        if span > 1:
            key *= span
            key += p
            key -= low
    return key


RATE = Value(int, float, lo=0, hi=MAX_GBPS, null=True)  # config.rate's column: a rate, as gbps is


def _rate_problem(config, columns):
    """config.rate names the sample column the rate is in (a workload's loops/s): every value there a
    number >= 0 or null, as gbps is, or every mean over it would fail."""
    column = (config.get("rate") or {}).get("column")
    if column is None or column == "gbps" or columns.get(column) is None:
        return None
    records = columns.records()
    for lo in range(0, len(records), 8192):  # a batch of dicts at a time: memory stays bounded
        for i, s in enumerate(records[lo:lo + 8192], lo):
            p = RATE.problem(s.get(column))
            if p:
                return f".samples[{i}].{column}", f"{p} (config.rate names it the rate)"
    return None


def _verify_problem(records):
    """(field path, phrase) of the first verify record whose counts do not add up: every check is one
    fault, zero or stale read, and a held check is a check."""
    for i, v in enumerate(records):
        if v["faults"] + v["zeros"] + v["stale"] != v["checks"]:
            return f".verify[{i}]", (f"has faults + zeros + stale = {v['faults'] + v['zeros'] + v['stale']}, "
                                     f"not its {v['checks']} checks")
        if v["held"] > v["checks"]:
            return f".verify[{i}].held", f"is {v['held']}, more than its {v['checks']} checks"
    return None


def _columns_of(samples):
    """The samples as columns for the placement rule (numpy), or None where numpy cannot be imported:
    `campaign step --runner atsd` saves atsd's output inside a guest whose initramfs has the standard
    library alone; that file's placement is checked where it is loaded (results.load), like any file."""
    try:
        from .columns import Columns
    except ImportError:
        return None
    return Columns.from_records(samples)


def check(data, path, streamed=None):
    """Raise UsageError naming the first field that breaks the schema; `data` came from json.
    `streamed`: (first bad sample or None, Columns) where results.load streamed the samples (its
    data["samples"] is then []), checked a batch at a time as they were read."""
    where, problem = located("", TOP.problem(data))
    if problem is None:
        found = _sample_problem(data["samples"]) if streamed is None else streamed[0]
        if found:
            where, problem = located(f".samples[{found[0]}]", found[1])
    if problem is None:
        columns = streamed[1] if streamed is not None else _columns_of(data["samples"])
        found = ((_placement_problem(data["config"], columns) if columns is not None else None)
                 or _verify_problem(data.get("verify") or []))
        if found:
            where, problem = found
    if problem is not None:
        raise bad_field(path, where, problem)
