"""The noise profile: what `atsdbench calibrate` measured of a host's between-run noise, for one
kernel and one plan, and the store where compare finds it again.

Per (cell, stride), on log rates: the within-run variance of round means and the variance of sub-run
means, from K sub-runs in fresh processes (analysis/noise.py computes both and the between-run part).
A profile names the host, kernel and plan (PLAN_KEYS) it describes and is used only where all of them
match a side.  Its fields, format history and the store are in docs/calibrate.md ("Where it goes").
"""
import hashlib
import json
import os
import time

from . import files, inputs, schema
from ..errors import UsageError
from ..units import format_size

# calibrate's design: K sub-runs in fresh processes, starts at least GAP apart.  The between-run
# component's degrees of freedom are K - 1, and the sub-runs must spread over the minutes the host drifts
# on: profiles of 8 sub-runs ~150 s apart gave reboot-spaced single runs a nominal A/A, profiles of 8
# sub-runs 20 s apart did not (docs/methodology.md has the evidence).
CALIBRATION_RUNS, CALIBRATION_GAP = "8", "150s"

FORMAT = "atsdbench-noise-profile"
VERSION = 1
RESULT_SUFFIX = ".run.json"  # the calibration's own result file, beside its profile
# What a plan's noise depends on, as the result file's config names it.  Not here: label, seed (the
# stride order's draw), runs and gap (the calibration's design), and what the plan check derives
# (cpu_reason, bystander_cpus, region_align).
PLAN_KEYS = ("size", "strides", "rounds", "reps", "warmup", "warmup_rounds", "pages", "bystanders", "cpu",
             "latency", "retouch", "trace", "gpu", "ceiling", "spread", "processes", "axes", "cells",
             "op", "threads", "tasks", "workload", "placements", "mem_node", "device")
# What a config from before run --op/--threads/--workload/--placements/--mem-node measured: a profile of
# one holds for a file of the other.  --placements is a plan key: K regions measure another level and
# spread (docs/methodology.md#what-placements-inside-a-file-do-to-the-verdict).
PLAN_DEFAULTS = {"op": "mprotect", "threads": 1, "tasks": "threads", "workload": None, "placements": 1,
                 "mem_node": None, "device": "none"}
HOST_KEYS = ("hostname", "cpu_model", "arch")
KERNEL_KEYS = ("kernel_release", "kernel_version")

# Variances of log rates, bounded by what any file can hold (schema.MAX_LOG_VAR): squared in the
# Satterthwaite combination, a 1e160 would overflow every compare that found the profile.
_VAR = schema.Value(int, float, lo=0, hi=schema.MAX_LOG_VAR)
_COUNT = schema.Value(int, lo=1, hi=schema.MAX_INT64)
ENTRY = schema.Record({
    "cell": schema.Value(str), "stride_bytes": schema.BYTES, "within_var": _VAR, "within_df": _COUNT,
    "means_var": _VAR, "means_df": _COUNT, "inv_rounds": schema.Value(int, float, lo=0, hi=1, above=True),
    "between_var": _VAR, "between_df": schema.Value(int, float, lo=0, hi=schema.MAX_INT64, null=True),
}, required=("cell", "stride_bytes", "within_var", "within_df", "means_var", "means_df", "inv_rounds",
             "between_var"))
TOP = schema.Record({
    "created": schema.Value(int, float, lo=0, hi=schema.MAX_SECONDS), "date": schema.Value(str),
    "host": schema.Record({"hostname": schema.Value(str), "kernel_release": schema.Value(str), "cpu_model": schema.TEXT,
                           "arch": schema.TEXT, "kernel_version": schema.TEXT, "boot_id": schema.TEXT,
                           "machine_id": schema.TEXT}, required=("hostname", "kernel_release")),
    "plan": schema.CONFIG,
    "calibration": schema.Record({"runs": schema.Value(int, lo=2, hi=schema.MAX_INT64),
                                  "gap": schema.Value(int, float, lo=0, hi=schema.MAX_SECONDS),
                                  "rounds": schema.List(_COUNT, nonempty=True), "complete": schema.BOOL,
                                  "source": schema.TEXT,
                                  "span_s": schema.Value(int, float, lo=0, hi=schema.MAX_SECONDS, null=True)},
                                 required=("runs", "gap", "rounds", "complete")),
    "entries": schema.List(ENTRY, nonempty=True),
}, required=("created", "date", "host", "plan", "calibration", "entries"))


def plan_of(config):
    """The noise-relevant part of a result's config (PLAN_KEYS that it records)."""
    return {k: config.get(k, PLAN_DEFAULTS.get(k)) for k in PLAN_KEYS if k in config or k in PLAN_DEFAULTS}


STORE_FOLDER = "noise-profiles"
OLD_STORE_FOLDER = "profiles"  # the folder older versions wrote: still read, never written


def store(folder=STORE_FOLDER):
    """Where profiles are kept: $XDG_DATA_HOME/atsdbench/noise-profiles, else
    ~/.local/share/atsdbench/noise-profiles."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "atsdbench", folder)


def default_path(host, plan, when=None):
    """STORE/HOST-KERNEL-PLANDIGEST-TIME.json: one name per host, kernel and plan, newest last."""
    digest = hashlib.sha1(json.dumps(plan, sort_keys=True).encode()).hexdigest()[:8]
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when))
    name = f"{host.get('hostname') or 'host'}-{host.get('kernel_release') or 'unknown'}-{digest}-{stamp}.json"
    return os.path.join(store(), name.replace(os.sep, "_"))


def result_path(path):
    """The calibration's result file beside its profile: NAME.run.json for NAME.json."""
    return (path[:-5] if path.endswith(".json") else path) + RESULT_SUFFIX


def span(result):
    """Seconds from a --runs file's first sub-run start to its last (round_t of each sub-run's first
    round), or None where the file does not record round times."""
    from .columns import timed

    starts = [min(timed(p.columns, "round_t", warmup=True)[1].tolist(), default=None) for p in result.sub_runs()]
    starts = [t for t in starts if t is not None]
    return max(starts) - min(starts) if len(starts) > 1 else None


def build(host, config, entries, complete, rounds, machine_id=None, source=None, when=None, span_s=None):
    """A profile (plain dict) from a calibration's host facts, config and entries (analysis/noise.py)."""
    when = time.time() if when is None else when
    facts = {k: host.get(k) for k in HOST_KEYS + KERNEL_KEYS + ("boot_id",)}
    facts["machine_id"] = machine_id
    return {"format": FORMAT, "schema_version": VERSION, "created": when,
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(when)), "host": facts,
            "plan": plan_of(config),
            "calibration": {"runs": len(rounds), "gap": config.get("gap", 0.0), "rounds": list(rounds),
                            "complete": bool(complete), "source": source, "span_s": span_s},
            "entries": entries}


class NoiseProfile:
    """A loaded, checked profile."""

    def __init__(self, data, path=None):
        self.data, self.path = data, path
        self.host, self.plan, self.calibration = data["host"], data["plan"], data["calibration"]
        self.entries = {(e["cell"], e["stride_bytes"]): e for e in data["entries"]}
        self.stored = False  # found in the store by compare (assign), not given with --noise-profile

    @property
    def digest(self):
        """The first 12 hex digits of the SHA-256 of its canonical JSON: which profile, whatever its name
        on another machine (a commit message names it so that the table can be reproduced)."""
        return hashlib.sha256(json.dumps(self.data, sort_keys=True).encode()).hexdigest()[:12]

    @property
    def key(self):
        """What identifies its estimates: a profile used for two sides (an A/A of one kernel) is one estimate."""
        return self.path or id(self)

    @property
    def name(self):
        return os.path.basename(self.path) if self.path else "profile"

    def entry(self, cell, stride):
        return self.entries.get((cell, stride))

    def describe(self):
        """'NAME (8 sub-runs x 5 rounds, 20 s apart, 2026-12-01 12:00:00 UTC)'."""
        c = self.calibration
        rounds = sorted(set(c["rounds"]))
        each = f"{rounds[0]}" if len(rounds) == 1 else f"{rounds[0]}-{rounds[-1]}"
        partial = "" if c["complete"] else ", interrupted"
        return (f"{self.name} ({c['runs']} sub-runs x {each} rounds, {c['gap']:g} s apart, {self.data['date']}"
                f"{partial})")

    def mismatch(self, result):
        """Why this profile does not describe `result`, or None: (level, text), level 0 host, 1 kernel,
        2 plan, the first that differs (a key the profile does not record is not compared, nor a plan
        key the file does not)."""
        h, name = result.host, result.name
        for level, keys in ((0, HOST_KEYS), (1, KERNEL_KEYS)):
            for key in keys:
                mine = self.host.get(key)
                if mine is None and key not in ("hostname", "kernel_release"):
                    continue
                if h.get(key) != mine:
                    what = "was measured on host" if level == 0 else "is of kernel"
                    return level, f"{what} {_text(mine)} ({key}), {name} {_text(h.get(key))}"
        plan = plan_of(result.config)
        mine = {**PLAN_DEFAULTS, **self.plan}  # a profile from before --op and --threads timed mprotect alone
        for key in PLAN_KEYS:
            if key in plan and key in mine and plan[key] != mine[key]:
                return 2, (f"is of another plan: {key} {_plan_text(key, mine[key])}, {name} "
                           f"{_plan_text(key, plan[key])}")
            if key == "axes" and (key in plan) != (key in self.plan):
                return 2, f"is of another plan: axes in {'the profile' if key in self.plan else name} only"
        return None


def _text(value):
    return schema.cut(value)


def _plan_text(key, value):
    if key in ("size",) and isinstance(value, int):
        return format_size(value)
    if key == "strides" and isinstance(value, list):
        return ",".join(format_size(s) if isinstance(s, int) else str(s) for s in value)
    return _text(value)


def from_dict(data, path="<profile>"):
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f"{path} is not an atsdbench noise profile (atsdbench calibrate makes one)")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError(f"{path} has no schema_version (a whole number from 1)")
    if version > VERSION:
        raise UsageError(f"{path}: schema_version {schema.cut(version)} is newer than {VERSION} (upgrade)")
    where, problem = schema.located("", TOP.problem(data))
    if problem is not None:
        raise schema.bad_field(path, where, problem)
    strides = set(data["plan"]["strides"])
    for i, e in enumerate(data["entries"]):
        if e["stride_bytes"] not in strides:
            raise UsageError(f"{path}: entries[{i}].stride_bytes is {e['stride_bytes']}, not one of plan.strides")
        if e["within_df"] < 1 or e["means_df"] < 1:
            raise UsageError(f"{path}: entries[{i}] has no degrees of freedom")
    return NoiseProfile(data, path)


files.LOADERS[FORMAT] = from_dict  # as results registers its own


def load(path):
    """A NoiseProfile from a file; anything wrong with it is one UsageError line naming the file."""
    if isinstance(path, NoiseProfile):
        return path
    data = inputs.read_json(path, "a noise profile")
    return from_dict(data, path)


def save(data, path):
    """Written atomically (files.write_atomically): a reader never finds half a profile."""
    text = json.dumps(data, indent=1, allow_nan=False) + "\n"
    files.write_atomically(path, lambda f: f.write(text))
    return path


def stored(folder=None, broken=None):
    """Every readable profile in the store, newest first; files that are not profiles are skipped, and
    where `broken` is a list, each profile-like file that does not load is added to it as (path, why,
    its JSON or None), so that one a side would have used is reported (broken_for), not skipped.
    The default store is read with the folder older versions wrote (OLD_STORE_FOLDER) after it."""
    found = []
    for folder in [folder] if folder else [store(), store(OLD_STORE_FOLDER)]:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        _read_profiles(folder, names, found, broken)
    return sorted(found, key=lambda p: p.data["created"], reverse=True)


def _read_profiles(folder, names, found, broken):
    for name in names:
        if not name.endswith(".json") or name.endswith(RESULT_SUFFIX) or name.startswith("."):
            continue
        path = os.path.join(folder, name)
        data = None
        try:
            data = inputs.read_json(path, "a noise profile", limit=MAX_SIZE)
            found.append(from_dict(data, path))
        except UsageError as e:  # a broken or foreign file in the store must not stop a compare
            if broken is not None:
                broken.append((path, str(e), data))


# A profile holds a few entries per cell and stride: 16 MiB is far beyond any real one, and a store's
# stray file is not read further (inputs.MAX_INPUT is for result files).
MAX_SIZE = 16 << 20


def _might_describe(result, path, data):
    """Whether a profile that did not load was meant for `result`: its default name's host, kernel and
    plan digest, or the host and kernel its JSON still names."""
    stem = os.path.basename(default_path(result.host, plan_of(result.config), 0)).rsplit("-", 2)[0]
    if os.path.basename(path).startswith(stem + "-"):
        return True
    host = data.get("host") if isinstance(data, dict) else None
    return (isinstance(host, dict) and host.get("hostname") == result.host.get("hostname")
            and host.get("kernel_release") == result.host.get("kernel_release"))


def broken_for(result, broken):
    """The lines saying which broken profiles of the store `result` might have used (see stored)."""
    return [f"{why} (a noise profile that may be {result.name}'s; not used: remove or replace it)"
            for path, why, data in broken if _might_describe(result, path, data)]


def find(result, candidates):
    """The newest of `candidates` that describes `result`, or None."""
    return next((p for p in candidates if p.mismatch(result) is None), None)


def assign(sides, explicit, store=None, warnings=None):
    """{side index: NoiseProfile} for `sides` ({index: Result}, the one-process sides of a compare).

    Each explicit profile (compare --noise-profile) must describe some side: one of another host,
    kernel or plan is refused (UsageError: which, and how it differs), and so are two for one side.
    Sides without one are looked up in `store` (a Store; None: not looked up), newest match first; a
    side left without one for which a store file that does not load looks meant gets a line in
    `warnings`."""
    out = {}
    for p in explicit:
        why = {i: p.mismatch(r) for i, r in sides.items()}
        matched = [i for i, w in why.items() if w is None]
        if not matched:  # say how it differs from the side it comes closest to
            level, text = max(why.values(), key=lambda w: w[0])
            raise UsageError(f"--noise-profile {p.path or p.name} {text}: it describes no side")
        for i in matched:
            if i in out:
                raise UsageError(f"--noise-profile {out[i].path} and {p.path} both describe {sides[i].name}: "
                                 "one per kernel")
            out[i] = p
    missing = [i for i in sides if i not in out]
    if store is not None and missing:
        candidates, broken = store.read()
        for i in missing:
            found = find(sides[i], candidates)
            if found is not None:
                found.stored = True
                out[i] = found
            elif warnings is not None:
                warnings.extend(broken_for(sides[i], broken))
    return out


class Store:
    """The profiles of a store folder (store() by default), read once, when a compare first needs them:
    (readable profiles newest first, the profile-like files that did not load, as stored() gives them)."""

    def __init__(self, folder=None):
        self.folder = folder
        self._found = None

    def read(self):
        if self._found is None:
            broken = []
            self._found = (stored(self.folder, broken), broken)
        return self._found


def _words(key, value):
    """The run option words that give `value` of plan key `key` (axes give their lists)."""
    if key == "size":
        return ["--size", format_size(value)]
    if key == "strides":
        return ["--strides", ",".join(map(format_size, value))]
    if key in ("rounds", "reps", "warmup", "bystanders", "cpu"):
        return [f"--{key}", str(value)]
    if key in PLAN_DEFAULTS:  # --op, --threads, --tasks: only where not what every run did before them
        return [] if value == PLAN_DEFAULTS[key] else [f"--{key.replace('_', '-')}", str(value)]
    if key == "warmup_rounds":
        return ["--warmup-rounds", str(value)]
    if key == "pages":
        return ["--pages", str(value)]
    if key == "latency":
        return ["--latency"] if value else []
    if key == "retouch":
        return [] if value else ["--no-retouch"]
    if key == "trace":
        return {"on": ["--trace"], "off": ["--no-trace"]}.get(value, [])
    if key in ("gpu", "ceiling"):
        return [] if value is None else [f"--{key}", str(value)]
    return []


def calibrate_command(config):
    """`atsdbench calibrate` with the options of the plan a result file records: the command that
    makes a profile for it (run on its host, booted into its kernel)."""
    plan = plan_of(config)
    axes = plan.get("axes") or {}
    words = ["atsdbench", "calibrate"]
    for key in PLAN_KEYS:
        if key in axes:
            words += [f"--{key}", ",".join("kernel" if v is None and key == "ceiling" else "none" if v is None
                                           else str(v) for v in axes[key])]
        elif key in plan:
            words += _words(key, plan[key])
    return " ".join(words)


