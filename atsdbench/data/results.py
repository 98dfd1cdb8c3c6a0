"""The result file: save and load, and the samples as numpy columns (Result.table, what the commands
read) or, for the Python API, a pandas DataFrame (Result.samples).  Its fields and their format
history (SCHEMA_VERSION): docs/result-file.md.

Every file is checked once, at load, against data/schema.py, its samples streamed into columns
(data/columns.py, inputs.stream_json) a batch of records at a time: a loaded Result holds one numpy
array per field, never a dict per pass nor the file's text.  A new per-pass field needs no change
here nor in columns.py: the runner puts it in each record, schema.SAMPLE gives its type and range.
"""
import itertools
import json
import math
import os
import socket
import sys
import time

from . import files as outfile, inputs
from ..errors import UsageError

SCHEMA_VERSION = 8
FORMAT = "atsdbench-result"
REQUIRED_COLUMNS = ("stride_bytes", "round", "rep", "warmup", "ns", "seconds", "calls", "gbps", "us_per_call")


class Result:
    """host, config, the samples (a list of dicts as measured, or data.columns.Columns as loaded),
    the complete flag and times."""

    def __init__(self, host, config, samples, complete=True, started=None, finished=None, path=None, verify=()):
        self.host = dict(host)
        self.verify = list(verify)  # run --verify: one record per verify pass (schema 4)
        self.config = dict(config)
        # no numpy for a list: a campaign's step imports atsd's output and saves it where numpy is not
        if isinstance(samples, (list, tuple)):
            self._records, self._columns = list(samples), None
        else:  # data.columns.Columns, as a file is loaded
            self._records, self._columns = None, samples
        self.complete = complete
        self.started = started
        self.finished = finished
        self.path = path
        self.error = None
        self._table = self._frame = None
        self._parts = None

    @property
    def columns(self):
        """The samples column by column (data/columns.py): what every reader computes from."""
        from .columns import Columns

        if self._records is None:
            return self._columns
        if self._columns is None or len(self._columns) != len(self._records):  # a run's list grows
            self._columns = Columns.from_records(self._records)
        return self._columns

    def passes(self):
        """How many passes the result holds (warm-up ones included)."""
        return len(self._records) if self._records is not None else len(self._columns)

    @property
    def table(self):
        """The samples as every reader takes them (data/columns.Columns, numpy, no pandas): the
        required fields always there (NaN where the file has none), warmup and traced as flags."""
        columns = self.columns
        if self._table is None or self._table[0] is not columns:
            import numpy as np

            from .columns import flag

            put = {k: np.full(len(columns), np.nan) for k in REQUIRED_COLUMNS if k not in columns}
            put.update(warmup=flag(columns, "warmup"), traced=flag(columns, "traced"))
            table = columns.with_fields(put)
            if getattr(self, "sub_run", None) is not None:
                return table  # made again when asked, as a sub-run's frame is (below)
            self._table = (columns, table)
        return self._table[1]

    @property
    def samples(self):
        """All passes, warm-up ones included (column `warmup`), as a pandas DataFrame: the table's."""
        table = self.table
        if self._frame is None or self._frame[0] is not table:
            frame = table.frame()
            if getattr(self, "sub_run", None) is not None:
                # a sub-run's frame is made again when asked: 6,250 sub-runs' frames kept take 88 MiB
                # (pandas' overhead a frame, its columns being views of the file's)
                return frame
            self._frame = (table, frame)
        return self._frame[1]

    def has_timed_pass(self):
        """Whether any timed (not warm-up) pass has a rate: a run stopped before its first one has none."""
        from .columns import timed

        return bool(timed(self.columns, "gbps")[0].any())

    def sub_runs(self):
        """A file of `run --runs M` is M replicate runs, each of its own process: one Result per
        sub-run (the same host and config), or [self] where it has one."""
        import numpy as np

        if self._parts is not None and self._parts[0] == self.passes():
            return list(self._parts[1])  # made once: compare, show's notes and noise all ask, each part's frame kept
        columns = self.columns
        run = columns.get("run")
        out = [self]
        if run is not None:
            has = np.flatnonzero(columns.present("run"))
            keys = run[has].astype(np.int64)
            order = np.argsort(keys, kind="stable")  # one sort for every sub-run, not a filter each
            found, starts = np.unique(keys[order], return_index=True)
            if len(found) >= 2:
                out = []
                for k, idx in zip(found.tolist(), np.split(has[order], starts[1:])):
                    # a sub-run's passes are one stretch of the file as `run --runs` writes them: a view
                    contiguous = idx[-1] - idx[0] == len(idx) - 1
                    part = Result(self.host, self.config,
                                  columns.slice(int(idx[0]), int(idx[-1]) + 1) if contiguous else columns.take(idx),
                                  self.complete, self.started, self.finished, self.path,
                                  [v for v in self.verify if v.get("run") == k])
                    part.sub_run = k
                    out.append(part)
        self._parts = (self.passes(), out)
        return list(out)

    @property
    def records(self):
        """The samples as the plain dicts they were measured as: a run's list, or a loaded file's
        view that makes them a batch at a time (data/columns.RecordView; no pandas needed)."""
        return self._records if self._records is not None else self._columns.records()

    @property
    def measured(self):
        """The passes statistics use: no warm-up (rounds or passes)."""
        frame = self.samples
        warm = frame["warmup"]
        return frame.copy(deep=False) if not warm.any() else frame[~warm]  # no copy without warm-up passes

    @property
    def name(self):
        """How messages name it: its file, or "the result" where it came from none (a run in Python)."""
        return self.path or "the result"

    @property
    def label(self):
        return self.config.get("label") or self.host.get("kernel_release") or (os.path.basename(self.path or "") or "?")

    def head(self):
        """The file's fields but its samples (and verify passes)."""
        return {"format": FORMAT, "schema_version": SCHEMA_VERSION, "complete": self.complete,
                "started": self.started, "finished": self.finished, "host": _clean(self.host),
                "config": _clean(self.config)}

    def tail(self):
        """What follows the samples in the file: run --verify's records."""
        return {"verify": [_clean(v) for v in self.verify]} if self.verify or self.config.get("verify") else {}

    def to_dict(self):
        return dict(self.head(), samples=[_clean(s) for s in self.records], **self.tail())

    def stale(self):
        """run --verify's stale translations: one dict per (op, stride, CPUs) with any (stale, checks
        of that group), in file order; [] where every check was clean or nothing was checked."""
        return stale_groups(self.verify)


def stale_groups(records):
    """The verify records (a file's, or a run's so far) summed by (op, stride, invalidator and checker
    CPUs), where any check read stale; --device hmm's reads by (op, stride), marked "device"."""
    groups = {}
    for v in records:
        key = (v.get("op") or "mprotect", v["stride_bytes"], tuple(v.get("invalidator_cpus") or ()),
               tuple(v.get("checker_cpus") or ()))
        g = groups.setdefault(key, {"op": key[0], "stride_bytes": key[1], "invalidator_cpus": list(key[2]),
                                    "checker_cpus": list(key[3]), "stale": 0, "checks": 0})
        g["stale"] += v["stale"]
        g["checks"] += v["checks"]
        if v.get("device_checks") is not None:  # --device hmm: the device's reads, a group of their own
            d = groups.setdefault(("device",) + key[:2], {"op": key[0], "stride_bytes": key[1], "device": "hmm",
                                                          "stale": 0, "checks": 0})
            d["stale"] += v.get("device_stale") or 0
            d["checks"] += v["device_checks"]
    return [g for g in groups.values() if g["stale"]]


def verify_summary(records):
    """The verify passes summed: checks, held (the checker held the translation while the call ran),
    faults, zeros, stale, calls, passes, ns; None where there are none."""
    if not records:
        return None
    out = {k: sum(v[k] for v in records) for k in ("calls", "checks", "held", "faults", "zeros", "stale", "ns")}
    out["passes"] = len(records)
    device = [v for v in records if v.get("device_checks") is not None]
    if device:  # --device hmm
        out.update({k: sum(v.get(k) or 0 for v in device)
                    for k in ("device_checks", "device_failed", "device_zeros", "device_stale")})
    return out


CPU_BUSY = 0.9        # share of a pass the measuring thread must have run for it to count as undisturbed
BYSTANDER_BUSY = 0.9  # share of a pass a bystander must run for the pass to count as "with bystanders"


def bystander_fields(before, after, window_ns, ns):
    """A pass's bystander fields from each bystander's (loop count, CPU ns) read just before and just
    after it, `window_ns` apart on the monotonic clock, around a pass of `ns`.  A bystander that was not
    running had no live mm on its CPU: those flushes took no IPI.  Its CPU time is known over the window
    only, which is wider than the pass (more so on a loaded machine, where the reads themselves wait), so
    `bystander_share` is a lower bound of the share of the pass it ran: the time it could have spent
    outside the pass is taken off (else CPU time over a window three times the pass reads as 210%)."""
    outside = max(window_ns - ns, 0)
    share = min((max(b[1] - a[1] - outside, 0) / ns if ns else 0.0) for a, b in zip(before, after))
    return {"bystander_spins_min": min(b[0] - a[0] for a, b in zip(before, after)),
            "bystander_share": share, "bystander_idle": share < BYSTANDER_BUSY}


def disturbance(preempted, cpu_ns, steal_ticks, ns):
    """A pass's self-disturbance fields, from what was read just outside it (run's session and atsd
    alike): `preempted` (involuntary context switches), `cpu_share` (the thread's CPU time over the
    pass's wall time, the few reads around it included), `steal_ticks` (None: the kernel gives none);
    `disturbed` when any of them says the pass did not have its CPU to itself."""
    out = {"preempted": int(preempted), "cpu_share": round(cpu_ns / ns, 4) if ns else None}
    if steal_ticks is not None:
        out["steal_ticks"] = int(steal_ticks)
    out["disturbed"] = bool(out["preempted"] > 0 or (out["cpu_share"] is not None and out["cpu_share"] < CPU_BUSY)
                            or out.get("steal_ticks", 0) > 0)
    return out


def thread_disturbance(threads, steal_ticks, ns):
    """--threads N: a pass's self-disturbance from each thread's own (loop ns, CPU ns, involuntary
    switches), by disturbance()'s rule applied to every thread over its own loop: a thread that was
    descheduled makes the pass disturbed, never silently slower (the pass's time is the slowest
    thread's) or faster.  Steal is the first thread's CPU's.  Also the spread of the threads' loop
    times (thread_ns_min/max: how far from equal their parts' work went) and the least CPU share."""
    each = [disturbance(p, c, steal_ticks if i == 0 else None, d) for i, (d, c, p) in enumerate(threads)]
    shares = [e["cpu_share"] for e in each if e["cpu_share"] is not None]
    out = {"preempted": sum(e["preempted"] for e in each), "cpu_share": min(shares) if shares else None,
           "thread_ns_min": int(min(d for d, _, _ in threads)), "thread_ns_max": int(max(d for d, _, _ in threads)),
           "threads_disturbed": sum(e["disturbed"] for e in each)}
    if steal_ticks is not None:
        out["steal_ticks"] = int(steal_ticks)
    out["disturbed"] = out["threads_disturbed"] > 0
    return out


def _clean(value):
    # JSON has no NaN; an unmeasurable value is null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def default_path(host, when=None):
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when))
    name = host.get("hostname") or socket.gethostname()
    return f"atsdbench-{name}-{host.get('kernel_release', 'unknown')}-{stamp}.json"


# json.dumps(record, indent=1) of a record whose values are all flat, by json's C encoder: with an
# indent json encodes in Python, and a save spent most of its time there (and in _clean)
_FLAT = json.JSONEncoder(separators=(",\n ", ": "), allow_nan=False)
_CONTAINERS = itertools.repeat((dict, list, tuple))  # json.dumps indents their items: its own path


def _record_text(record):
    """json.dumps(_clean(record), indent=1) of a pass."""
    if not record or any(map(isinstance, record.values(), _CONTAINERS)):
        return json.dumps(_clean(record), indent=1, allow_nan=False)
    try:
        return "{\n " + _FLAT.encode(record)[1:-1] + "\n}"
    except ValueError:  # a NaN or an infinity: null, as _clean makes it
        return "{\n " + _FLAT.encode(_clean(record))[1:-1] + "\n}"


def _write(result, f):
    """The file, as json.dumps(result.to_dict(), indent=1) writes it, a batch of passes at a time:
    a loaded file of 10^6 passes is never one text nor one list of dicts."""
    head = json.dumps(result.head(), indent=1, allow_nan=False)
    f.write(head[:-2] + ',\n "samples": [')
    first = True
    records = result.records
    for lo in range(0, len(records), 8192):
        batch = records[lo:lo + 8192]
        f.write(("" if first else ",") + ",".join("\n  " + _record_text(s).replace("\n", "\n  ") for s in batch))
        first = False
    f.write("]" if first else "\n ]")
    for key, value in result.tail().items():  # run --verify's records, after the samples as to_dict has them
        f.write(f',\n {json.dumps(key)}: ' + json.dumps(value, indent=1, allow_nan=False).replace("\n", "\n "))
    f.write("\n}\n")


def _text(result):
    import io

    out = io.StringIO()
    _write(result, out)
    return out.getvalue()


def save(result, path):
    """Write the file atomically (see outfile): never a prefix under `path`, never a device replaced."""
    outfile.write_atomically(path, lambda f: _write(result, f))
    result.path = path


# What the space check before a run expects a pass to take in the file: about 300 bytes plain
# (tests/fixtures), several times that with counters, canary and disturbance columns, and a
# latency histogram adds up to a few KiB.
BYTES_PER_PASS, BYTES_PER_PASS_LATENCY = 1024, 4096


def expected_size(passes, latency=False):
    """Bytes a result of `passes` passes is expected to need on disk (a generous estimate)."""
    return 64 * 1024 + (passes or 0) * (BYTES_PER_PASS_LATENCY if latency else BYTES_PER_PASS)


def claim(path, passes=0, latency=False, replace=False):
    """Before measuring: `path` can be written (an existing file only where `replace`), its file system
    has room for the expected result, and no other atsdbench is writing it (a lock held until it is
    saved; data/files.py)."""
    outfile.claim(path, expected_size(passes, latency) if passes else 0, replace)


class Unsaved(UsageError):
    """save_or_rescue(..., later=True) found no folder to write to: `text` is the result file, for the
    caller to print on stdout after its table (print_unsaved)."""

    def __init__(self, reason, text):
        super().__init__(f"{reason}: the result was written to stdout above")
        self.reason = reason
        self.text = text


def save_or_rescue(result, path, later=False):
    """save(); where that fails (full disk, permissions, a path gone bad since the check), the data
    goes to a rescue file ($TMPDIR, else the current directory), else to stdout, and a UsageError
    names `path`, why, and where the data went.  Returns `path` when it was written.  With `later`
    the stdout fallback is left to the caller (an Unsaved carrying the text, for print_unsaved) so
    that the JSON comes after the run's table."""
    try:
        save(result, path)
        return path
    except (OSError, UsageError) as e:
        why = f"cannot write output {path}: {e.strerror}" if isinstance(e, OSError) and e.strerror else str(e)
    finally:
        outfile.release(path)
    text = _text(result)
    rescue = outfile.write_rescue(text)
    if rescue:
        result.path = rescue
        raise UsageError(f"{why}; the result was saved to {rescue} instead")
    folders = " or ".join(outfile.rescue_folders()) or "any folder"
    error = Unsaved(f"{why}; no rescue file could be written in {folders}", text)
    if later:
        raise error
    print_unsaved(error)


def print_unsaved(error):
    """The stdout fallback of an Unsaved: its JSON on stdout, then the error raised (or, where stdout
    is gone too, a UsageError that says the result is lost)."""
    try:
        sys.stdout.write(error.text)
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):
        raise UsageError(f"{error.reason}: no stdout either: the result is lost") from None
    raise error


def _check_head(data, path):
    """The format and schema_version, before the schema's check."""
    from . import schema

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f"{path} is not an atsdbench result file")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError(f"{path} has no schema_version (a whole number from 1)" if version is None else
                         f"{path}: schema_version {schema.cut(version)} is not a version (a whole number from 1)")
    if version > SCHEMA_VERSION:
        raise UsageError(f"{path}: schema_version {schema.cut(version)} is newer than {SCHEMA_VERSION} (upgrade)")


def from_dict(data, path="<data>"):
    """A Result from parsed JSON, after the schema check (UsageError naming the field)."""
    from . import schema

    _check_head(data, path)
    schema.check(data, path)
    return Result(data["host"], data["config"], data["samples"], data["complete"],
                  data.get("started"), data.get("finished"), path, data.get("verify") or ())


outfile.LOADERS[FORMAT] = from_dict  # a killed writer's complete leftover is recognised (files.recover_leftovers)


def load(path):
    """A result file, its samples streamed into columns a batch at a time (data/columns.py), each
    batch held to the schema as it is read; the first bad one is named after the whole file is
    known to be JSON, as from_dict would name it."""
    if isinstance(path, Result):
        return path
    from . import schema
    from .columns import Builder, trim_heap

    builder, bad = Builder(), []

    def sink(batch):
        if bad:
            return
        found = schema.batch_problem(batch)
        if found:
            bad.append((found[0] + builder.n, found[1]))
        else:
            builder.add(batch)

    data, streamed = inputs.stream_json(path, "a result file", "samples", sink)
    if not streamed:
        return from_dict(data, path)
    _check_head(data, path)
    columns = builder.columns() if not bad else None
    schema.check(data, path, streamed=(bad[0] if bad else None, columns))
    trim_heap()  # what the batches and the check freed, given back before the next file is read
    if "samples" not in data or columns is None:  # not reached: the check names it
        raise UsageError(f"{path} has no samples")
    return Result(data["host"], data["config"], columns, data["complete"], data.get("started"),
                  data.get("finished"), path, data.get("verify") or ())
