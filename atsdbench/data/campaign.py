"""A campaign directory (docs/lab.md#campaign-directory): the plan (DIR/campaign.json, written once),
an append-only journal (DIR/journal/NNNNNN-KIND.json, one event each, written once through the atomic
writer and never replaced), and one result file per boot (DIR/NAME/BOOT_ID.json; -2, -3 where a slot
was redone in the same boot).

Nothing is rewritten: the state of a campaign is the fold of its journal (`Campaign`), so a power cut,
a full disk or a Ctrl-C can lose at most the event being written, never one already saved.  This module
is pure (compare, plot and model read campaigns through it); campaign/ holds the orchestration.
"""
import hashlib
import json
import os
import re

from ..errors import UsageError
from . import files, inputs
from .schema import cut

FORMAT = "atsdbench-campaign"
VERSION = 1
PLAN = "campaign.json"
JOURNAL = "journal"
SCHEDULES = ("alternate", "abba")
METHODS = ("kexec", "grub", "manual", "qemu")  # qemu: guest --boots, host-driven
RUNNERS = ("run", "atsd")  # atsdbench run, or the standalone atsd imported (minimal systems)
ATSD_RECORD = ".atsd.txt"  # --runner atsd: atsd's own output, kept beside the result as BOOT_ID.atsd.txt
EVENTS = ("start", "done", "unfinished", "missed", "foreign", "skipped", "arranged", "stopped")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")
# The one rule for a journal file's name, which the reader and the writer share: NNNNNN-KIND.json, the
# number written as f"{seq:06d}" (six digits, more past 999999, so numbering never runs out; no other
# spelling of a number, so no two names read as one number) and KIND an event's.  Anything else in
# journal/ (a stray file, a temporary one a cut-off write left) is named and ignored, numbering too.
EVENT_FILE = re.compile(r"([0-9]{6}|[1-9][0-9]{6,})-([a-z]+)\.json")
# After this many missed slots in a row for one kernel (it never came up), the campaign stops
# arranging it: a kernel that cannot boot would otherwise loop through reboots for ever.
MAX_MISSES = 3


def is_campaign(path):
    return isinstance(path, str) and os.path.isdir(path) and os.path.isfile(os.path.join(path, PLAN))


def plan_path(directory):
    return os.path.join(directory, PLAN)


def check_plan(data, path):
    """The plan's fields, each checked: one UsageError line naming the field."""
    def bad(what):
        raise UsageError(f"{path}: {what} (not an atsdbench campaign plan, or damaged)")

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        bad("no campaign format")
    if data.get("version") != VERSION:
        bad(f"version {data.get('version')!r}; this atsdbench reads version {VERSION}")
    kernels = data.get("kernels")
    if not isinstance(kernels, list) or len(kernels) < 2:
        bad("kernels: fewer than 2")
    for k in kernels:
        if not isinstance(k, dict) or not isinstance(k.get("name"), str) or not NAME.fullmatch(k["name"]):
            bad("a kernel without a valid name")
        for field in ("image", "release"):
            if not isinstance(k.get(field), str) or not k[field]:
                bad(f"kernel {k['name']}: no {field}")
        for field in ("initrd", "append", "version"):
            if k.get(field) is not None and not isinstance(k[field], str):
                bad(f"kernel {k['name']}: {field} is not text")
    if len({k["name"] for k in kernels}) != len(kernels):
        bad("two kernels of one name")
    if not isinstance(data.get("boots"), int) or isinstance(data["boots"], bool) or data["boots"] < 1:
        bad("boots is not a whole number from 1")
    if data.get("schedule") not in SCHEDULES:
        bad(f"schedule {data.get('schedule')!r}")
    if data.get("method") not in METHODS:
        bad(f"method {data.get('method')!r}")
    if data.get("runner", "run") not in RUNNERS:
        bad(f"runner {data.get('runner')!r}")
    if not isinstance(data.get("run_options"), list) or not all(isinstance(w, str) for w in data["run_options"]):
        bad("run_options is not a list of words")
    return data


def load_plan(directory):
    path = plan_path(directory)
    if not os.path.isfile(path):
        raise UsageError(f"{directory} is not a campaign directory (no {PLAN}: atsdbench campaign init makes one)")
    return check_plan(inputs.read_json(path, "a campaign plan"), path)


# The fields each kind of event's readers take (the Campaign's fold, campaign status, compare's
# legend): text, and a kernel the plan names where it is one.  An event without them is skipped as a
# file that does not parse is (a hand-edited journal must not make a traceback of compare DIR).
_EVENT_FIELDS = {"start": ("boot_id", "kernel"), "done": ("boot_id", "kernel", "file"),
                 "unfinished": ("boot_id", "kernel", "why"), "missed": ("boot_id", "expected"),
                 "foreign": ("boot_id", "release"), "skipped": ("boot_id",), "arranged": ("kernel",),
                 "stopped": ("boot_id", "why")}


def event_problem(event, names):
    """Why a journal event cannot be read (a phrase), or None; names: the plan's kernels."""
    for field in _EVENT_FIELDS[event["event"]]:
        v = event.get(field)
        if not isinstance(v, str) or not v:
            return f"event {event['event']} without {field}"
        if field in ("kernel", "expected") and v not in names:
            return f"{field} {cut(v)} is not a kernel of the plan"
    for field in ("file", "booted"):  # optional elsewhere (null: none kept, not a planned kernel)
        v = event.get(field)
        if v is not None and (not isinstance(v, str) or not v):
            return f"{field} is not a file name" if field == "file" else f"{field} is not text"
    v = event.get("file")
    if isinstance(v, str) and (os.path.isabs(v) or ".." in v.split("/")):
        return f"file {cut(v)} is outside the campaign directory"
    return None


def load_events(directory, kernels=None):
    """The journal in order.  A file that does not parse (a disk that lied about a write), or an event
    without the fields its kind has (kernels: the plan's names, which it must name), is skipped and
    named in the warnings, never deleted."""
    folder = os.path.join(directory, JOURNAL)
    events, warnings = [], []
    names, strays = journal_files(folder)
    for n, why in strays:
        warnings.append(f"{os.path.join(folder, n)}: {why}")
    for seq, n in names:
        path = os.path.join(folder, n)
        try:
            e = inputs.read_json(path, "a campaign event")
        except UsageError as err:
            warnings.append(f"{path}: skipped ({err})")
            continue
        if not isinstance(e, dict) or e.get("event") not in EVENTS:
            warnings.append(f"{path}: skipped (not a campaign event)")
            continue
        why = event_problem(e, kernels) if kernels is not None else None
        if why:
            warnings.append(f"{path}: skipped ({why})")
            continue
        e["seq"] = seq
        events.append(e)
    return events, warnings


def event_name(seq, kind):
    return f"{seq:06d}-{kind}.json"


def journal_files(folder):
    """([(seq, name)] of the event files in journal order, [(name, what is done with it)] of the rest
    and of a second file of one number, read but named): one rule (EVENT_FILE) for reader and writer."""
    try:
        listed = os.listdir(folder)
    except FileNotFoundError:
        return [], []
    events, strays, taken, named = [], [], {}, []
    for n in sorted(listed):
        m = EVENT_FILE.fullmatch(n)
        if m is None or m.group(2) not in EVENTS:
            why = "a temporary file of a write that was cut off" if n.startswith(files.TMP_PREFIX) else \
                "not a journal event's name, NNNNNN-KIND.json; numbering ignores it"
            strays.append((n, f"ignored ({why})"))
        else:
            named.append((int(m.group(1)), n))
    for seq, n in sorted(named):
        if seq in taken:  # read all the same: which of the two is the journal's own cannot be known
            strays.append((n, f"numbered {seq}, as {taken[seq]} is (atsdbench writes one file a number): "
                              "both read"))
        taken.setdefault(seq, n)
        events.append((seq, n))
    events.sort()
    return events, strays


def append_event(directory, event):
    """Write one event as the journal's next file (the caller holds the step lock).  It never replaces a
    file: the name is taken by a hard link, which fails where the name exists, and a number another file
    has too is given up (then the next number)."""
    if event.get("event") not in EVENTS:
        raise ValueError(event)
    folder = os.path.join(directory, JOURNAL)
    os.makedirs(folder, exist_ok=True)
    events, _ = journal_files(folder)
    seq = max((s for s, _ in events), default=0) + 1
    text = json.dumps(event, indent=1, sort_keys=True) + "\n"
    while True:
        name = event_name(seq, event["event"])
        try:
            files.write_atomically(os.path.join(folder, name), lambda f: f.write(text), replace=False)
        except FileExistsError:
            seq += 1
            continue
        # a number is one event's: where another file of it appeared meanwhile, this one moves on
        if all(s != seq or n == name for s, n in journal_files(folder)[0]):
            return dict(event, seq=seq)
        os.unlink(os.path.join(folder, name))
        seq += 1


def _shown(text):
    """A name from the journal or a file as it is where it is printable and short, else cut (quoted)."""
    return text if text.isprintable() and len(text) <= 80 else cut(text)


def file_digest(path):
    """The sha256 of a result file (a done event records its file's), or None where it cannot be read."""
    try:
        return hashlib.sha256(inputs.read_bytes(path)).hexdigest()
    except (UsageError, OSError):
        return None


def done_problem(directory, event, kernels):
    """Why a done event's file does not bear it out (a phrase), or None.  kernels: the plan's, by name.
    The file must be in its kernel's folder, be there, be the one the event recorded (its sha256, where
    the event has one), say it is complete, and have run in the event's boot on the kernel's release
    (where it names them): a file deleted, swapped, copied from another run or of another kernel is not
    an observation of this slot."""
    from . import results

    rel, kernel = event.get("file"), event["kernel"]
    if not rel:
        return "it names no file"
    if rel.split("/")[0] != kernel:
        return f"its file {_shown(rel)} is not in {kernel}'s folder"
    path = os.path.join(directory, rel)
    if not os.path.lexists(path):
        return f"its file {_shown(rel)} is gone"
    want = event.get("sha256")
    if want is not None and file_digest(path) != want:
        return f"{_shown(rel)} is not the file it recorded (another sha256)"
    try:
        data = inputs.read_json(path, "a result file")
    except (UsageError, OSError):
        return f"{_shown(rel)} is not a result file"
    if not isinstance(data, dict) or data.get("format") != results.FORMAT or data.get("complete") is not True:
        return f"{_shown(rel)} is not a complete result file"
    host = data.get("host") if isinstance(data.get("host"), dict) else {}
    said = host.get("boot_id")
    if said not in (None, "", "unknown") and said != event["boot_id"]:
        return f"{_shown(rel)} ran in boot {_shown(str(said)[:8])}, not {event['boot_id'][:8]}"
    said, release = host.get("kernel_release"), kernels[kernel]["release"]
    if said not in (None, "", "unknown") and said != release:
        return f"{_shown(rel)} ran {_shown(str(said))}, not {kernel}'s {release}"
    return None


def complete_result(path):
    """Whether the result file at path says it is complete.  Read as JSON alone, not loaded: a step
    inside a guest (--runner atsd) has no numpy, which a load's columns need; the file was checked by
    the schema when it was written."""
    from . import results

    try:
        data = inputs.read_json(path, "a result file")
    except (UsageError, OSError):
        return False
    return isinstance(data, dict) and data.get("format") == results.FORMAT and data.get("complete") is True


def free_result_path(directory, name, boot_id):
    """DIR/NAME/BOOT_ID.json, or -2, -3 ... where taken (by the result, or by --runner atsd's own
    record beside it, .atsd.txt): a redone slot never replaces a kept file."""
    folder = os.path.join(directory, name)
    os.makedirs(folder, exist_ok=True)
    stem = os.path.join(folder, boot_id)
    path, k = stem + ".json", 1
    while os.path.lexists(path) or os.path.lexists(path[:-len(".json")] + ATSD_RECORD):
        k += 1
        path = f"{stem}-{k}.json"
    return path


def _closes(close, start):
    """Does event `close` (later in the journal) close `start`?"""
    if close["event"] not in ("done", "unfinished"):
        return False
    if isinstance(close.get("start"), int):
        return close["start"] == start["seq"]
    return (close["boot_id"], close["kernel"]) == (start["boot_id"], start["kernel"])


def _event_path(directory, event):
    return os.path.join(directory, JOURNAL, f"{event['seq']:06d}-{event['event']}.json")


def _content(event):
    """An event as written, without the journal's sequence number: a copied event file has the same."""
    return json.dumps({k: v for k, v in event.items() if k != "seq"}, sort_keys=True)


def _key(event):
    """An event's identity in the journal: its number and kind (one file each; seq alone is not, where
    a file was added by hand under a number already taken)."""
    return event.get("seq"), event["event"]


def _ran_at(event):
    """Where a done event's boot ran in the journal: at its start (a done recovered later, or written
    after other events, counts where its run was), else where it was written."""
    at = event.get("start")
    return at if isinstance(at, int) and not isinstance(at, bool) else event.get("seq", float("inf"))


class Campaign:
    """A plan and the fold of its journal.  refused: _key -> why, the done events whose file does not
    bear them out (load checks each): they close their start but count for nothing, so their slot is
    open again."""

    def __init__(self, directory, plan, events, warnings=(), refused=None):
        self.directory, self.plan, self.events = directory, plan, list(events)
        self.warnings = list(warnings)
        self.refused = dict(refused or {})
        self.names = [k["name"] for k in plan["kernels"]]
        self.kernels = {k["name"]: k for k in plan["kernels"]}

    def why_refused(self, event):
        """Why this done event counts for nothing (its file does not bear it out), or None."""
        return self.refused.get(_key(event))

    def _dones(self):
        return [e for e in self.events if e["event"] == "done" and _key(e) not in self.refused]

    @property
    def done(self):
        """The finished boots in the order they ran (_ran_at): each a `done` event (kernel, boot_id,
        file) its file bears out, one a boot.  A boot runs one slot at most (a step refuses a used
        boot), so a second `done` of a boot is a copied or replayed event file: the first counts, the
        others are warned about (duplicates)."""
        seen, out = set(), []
        for e in self._dones():
            if e["boot_id"] not in seen:
                seen.add(e["boot_id"])
                out.append(e)
        return sorted(out, key=_ran_at)

    def duplicates(self):
        """`done` events of a boot already counted: named in the warnings, never a second observation."""
        counted = {id(e) for e in self.done}
        return [e for e in self._dones() if id(e) not in counted]

    def counts(self):
        out = {n: 0 for n in self.names}
        for e in self.done:
            out[e["kernel"]] += 1
        return out

    def remaining(self):
        return {n: max(0, self.plan["boots"] - c) for n, c in self.counts().items()}

    @property
    def complete(self):
        return not any(self.remaining().values())

    def boots_done(self):
        """boot_id -> the event that used that boot up (a finished run, a foreign kernel, a skipped one)."""
        return {e["boot_id"]: e for e in self.events if e["event"] in ("done", "foreign", "skipped")
                and _key(e) not in self.refused}

    def open_starts(self):
        """`start` events that no `done` or `unfinished` closes (a crash, a power cut, a killed step).  A
        close names its start (`start`: its seq); one written before closes did (no `start`) closes the
        start of its boot and kernel before it: a step closes every open start before it starts
        another, whether or not a file was kept (`file: null`).  (A copied event file is read once: load.)"""
        out = []
        for i, e in enumerate(self.events):
            if e["event"] == "start" and not any(_closes(c, e) for c in self.events[i + 1:]):
                out.append(e)
        return out

    def expected(self):
        """The kernel the last arrangement asked for, where no boot has answered it yet; else None."""
        for e in reversed(self.events):
            if e["event"] == "arranged":
                return e["kernel"]
            if e["event"] in ("start", "foreign", "missed", "skipped"):
                return None
        return None

    def misses_in_a_row(self, name):
        n = 0
        for e in reversed(self.events):
            if e["event"] == "missed" and e["expected"] == name:
                n += 1
            elif e["event"] == "done" and e["kernel"] == name and _key(e) not in self.refused:
                break
        return n

    def stuck(self):
        """Kernels that missed MAX_MISSES slots in a row: no longer arranged."""
        return [n for n in self.names if self.remaining()[n] and self.misses_in_a_row(n) >= MAX_MISSES]


def _refusals(directory, plan, events):
    """_key -> why for each done event its file does not bear out (done_problem), and each naming a file
    an earlier done of another boot holds: one file is one observation."""
    kernels = {k["name"]: k for k in plan["kernels"]}
    refused, holder = {}, {}
    for e in events:
        if e["event"] != "done":
            continue
        why = done_problem(directory, e, kernels)
        first = holder.get(os.path.normpath(e["file"]))
        if why is None and first is not None and first["boot_id"] != e["boot_id"]:
            why = f"its file is counted under {_event_path(directory, first)} already"
        if why is not None:
            refused[_key(e)] = why
        else:
            holder.setdefault(os.path.normpath(e["file"]), e)
    return refused


def load(directory):
    plan = load_plan(directory)
    events, warnings = load_events(directory, {k["name"] for k in plan["kernels"]})
    kept, first = [], {}
    for e in events:  # an event file copied (by hand, a backup put back): read once
        key = _content(e)
        if key in first:
            warnings.append(f"{_event_path(directory, e)} is a copy of {_event_path(directory, first[key])}: read "
                            "once")
            continue
        first[key] = e
        kept.append(e)
    c = Campaign(directory, plan, kept, warnings, _refusals(directory, plan, kept))
    for e in kept:
        if _key(e) in c.refused:
            c.warnings.append(f"{_event_path(directory, e)}: not counted ({c.refused[_key(e)]}): its slot of "
                              f"{e['kernel']} is open again")
    for e in c.duplicates():
        c.warnings.append(f"{_event_path(directory, e)}: a second done event of boot {(e['boot_id'][:8])}: counted "
                          "once")
    return c


def sides(directory):
    """compare/plot/model's view of a campaign: every finished boot's file one observation of its kernel.
    Returns (campaign, [(name, [paths in boot order])]), kernels in the plan's order; files the journal
    does not know of (put there by hand) are warned about, never read."""
    c = load(directory)
    c.warnings.extend(stray_results(c))
    out = []
    for name in c.names:
        out.append((name, [os.path.join(directory, e["file"]) for e in c.done if e["kernel"] == name]))
    return c, out


def result_files(c):
    """{kernel: [names of the .json files in DIR/KERNEL/]}, each folder sorted."""
    out = {}
    for name in c.names:
        try:
            out[name] = sorted(n for n in os.listdir(os.path.join(c.directory, name)) if n.endswith(".json"))
        except (FileNotFoundError, NotADirectoryError):
            out[name] = []
    return out


def stray_results(c):
    """Warnings for the result files no counted done event holds: put there by hand (not in the
    journal), kept by an unfinished slot though complete; those of a refused done were named with it."""
    lines = []
    for name, found in result_files(c).items():
        folder = os.path.join(c.directory, name)
        known = {os.path.basename(e["file"]) for e in c.done if e["kernel"] == name}
        refused = {os.path.basename(e.get("file") or "") for e in c.events
                   if e["event"] == "done" and _key(e) in c.refused and e["kernel"] == name}
        kept = {os.path.basename(e.get("file") or "") for e in c.events
                if e["event"] == "unfinished" and e["kernel"] == name}
        for n in found:
            if n in known or n in refused:
                continue
            if n not in kept:
                lines.append(f"{os.path.join(folder, n)} is not in the campaign's journal: left out")
            elif complete_result(os.path.join(folder, n)):  # finished, but its run said it failed
                lines.append(f"{os.path.join(folder, n)} is complete, but its run failed: not compared")
    return lines


def sides_of(items, labels, warn):
    """compare/plot/model DIR: a campaign directory given alone is its kernels' sides, each boot's file one
    observation (the replicate design, unit file), labelled by the plan's names.  Returns (items, labels,
    the Campaign or None); warn(lines) gets the campaign's warnings before anything is refused."""
    dirs = [x for x in items if isinstance(x, str) and os.path.isdir(x)]
    if not dirs:
        return items, labels, None
    if len(items) > 1 or not is_campaign(dirs[0]):
        raise UsageError(f"{dirs[0]} is a directory: give result files, or one campaign directory alone")
    c, found = sides(dirs[0])
    warn(c.warnings)
    empty = [name for name, paths in found if not paths]
    if empty:
        raise UsageError(f"campaign {dirs[0]}: {', '.join(empty)} has no finished boot yet "
                         f"(campaign status {dirs[0]})")
    return [paths for _, paths in found], labels or [name for name, _ in found], c
