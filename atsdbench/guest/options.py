"""guest's own options checked before anything boots: the runs after `--` (against the option table,
csrc/atsd_options.h: what `atsd` accepts), --tracepoints, and the time a boot may take."""
import math
import re

from ..errors import UsageError

def split_runs(words):
    """The words after guest's `--`: one list per run, each further `--` starting another."""
    runs = [[]]
    for word in words:
        if word == "--":
            runs.append([])
        else:
            runs[-1].append(word)
    return runs


TRACEPOINT = re.compile(r"[A-Za-z0-9_]+[/:][A-Za-z0-9_]+")


def tracepoints(value):
    """--tracepoints EVENT,...: tracefs names (SUBSYSTEM/EVENT; perf's SUBSYSTEM:EVENT taken too)."""
    names = value.split(",")
    for name in names:
        if not TRACEPOINT.fullmatch(name):
            raise UsageError(f"--tracepoints {value!r}: {name!r} is not SUBSYSTEM/EVENT (as tracefs names it)")
    return list(dict.fromkeys(n.replace(":", "/") for n in names))


def check_run(argv, options):
    """One run's words: atsd's options (check_run_options) and guest's own --tracepoints EVENT,...
    Returns (checked, tracepoints or None)."""
    rest, events, i = [], None, 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word == "--tracepoints" or word.startswith("--tracepoints="):
            value = word.partition("=")[2] if "=" in word else (argv[i] if i < len(argv) else None)
            if "=" not in word:
                i += 1
            if not value:
                raise UsageError("--tracepoints needs a value (EVENT,...: tracefs names such as powerpc/tlbie)")
            events = (events or []) + [e for e in tracepoints(value) if e not in (events or [])]
        else:
            rest.append(word)
    return check_run_options(rest, options), events


def check_run_options(argv, options):
    """The options of one run, checked against the option table: only what `atsd` accepts, each flag
    alone and each valued option with its value.  Returns [(option dict, value or None)]."""
    by_long = {o["name"]: o for o in options}
    by_short = {o["short"]: o for o in options if o["short"]}
    out, i = [], 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            o = by_long.get(name)
            shown = f"--{name}"
        elif word.startswith("-") and len(word) > 1:
            o, eq, value = by_short.get(word[1]), "", word[2:]
            eq = "=" if value else ""
            shown = word[:2]
        else:
            raise UsageError(f"run option {word!r} is not an option (atsd takes no file names)")
        if o is None:
            raise UsageError(f"atsd has no option {shown} (atsd -h lists them)")
        if o["name"] == "output":
            raise UsageError(f"{shown} is guest's own: it names the result files (-o DIR before --)")
        if not o["atsd"]:
            hint = "; use --tracepoints EVENT,..." if o["field"] == "trace" else ""
            raise UsageError(f"{shown} is `atsdbench run`'s only: atsd has no {shown}{hint}")
        if o["metavar"] is None:
            if eq:
                raise UsageError(f"{shown} takes no value (got {value!r})")
            out.append((o, None))
            continue
        if not eq:
            if o["const"] is not None and (i >= len(argv) or argv[i].startswith("-")):
                out.append((o, None))
                continue
            if i >= len(argv):
                raise UsageError(f"{shown} needs a value ({o['metavar']})")
            value = argv[i]
            i += 1
        out.append((o, value))
    return out


def atsd_words(checked):
    """The checked options as atsd's command line (--name=value words: no spaces to quote)."""
    words = []
    for o, value in checked:
        if value is not None and any(c.isspace() for c in value):
            raise UsageError(f"--{o['name']} {value!r}: values with spaces do not reach the guest's atsd")
        words.append(f"--{o['name']}" if value is None else f"--{o['name']}={value}")
    return words


def run_attrs(checked, events=None):
    """The run's options as name=value words, for the console's markers (power_verdict reads size and
    bystanders from them)."""
    words = [f"{o['name']}={value if value is not None else o['const']}" for o, value in checked]
    return " ".join(words + ([f"tracepoints={','.join(events)}"] if events else []))


BREAKDOWN_LINE_BYTES = 16 * 128  # a traced call's events as trace lines (csrc/atsd_breakdown.c), with room


def breakdown_bytes(plan):
    """About what a run's --breakdown brings home in the console: every traced pass's trace lines
    (at most core.BREAKDOWN_CALLS calls a pass, one pass per cell and stride)."""
    from ..measure import core

    calls = sum(min(plan.size // s, core.BREAKDOWN_CALLS) for s in plan.strides[0:plan.nstrides])
    return calls * len(core.cells(plan)) * BREAKDOWN_LINE_BYTES


GUEST_TIMEOUT = 900  # seconds a guest may take to boot, run and power off, not counting the runs' sleeps


def guest_timeout(given, waits):
    """guest's --timeout in seconds: the default grows by the runs' --gap and --spread sleeps
    (`waits`), and a given one that the sleeps alone would reach is refused (the guest would be
    killed as hung)."""
    if given is None:
        return GUEST_TIMEOUT + math.ceil(waits)
    if given < 1:
        raise UsageError(f"--timeout must be at least 1 s (got {given})")
    if given <= waits:
        raise UsageError(f"--timeout {given} is not longer than the runs' --gap and --spread sleeps alone "
                         f"({waits:g} s)")
    return given


def check_runs(groups, command, options):
    """The runs after `--`, each checked against atsd's options and the C plan: [{"words": atsd's
    command line, "attrs", "tracepoints", "verify", "breakdown": bytes its traces bring home}] and the
    least seconds their sleeps take."""
    from ..measure import core

    if len(groups) > 1 and not all(groups):
        raise UsageError("guest: an empty run between two `--` (each starts a run)")
    if command is not None and not command.strip():
        raise UsageError("--command needs a shell command line to run in the guest")
    if command is not None and groups == [[]]:
        groups = []  # the command instead of atsd
    runs, waits = [], 0.0
    for words in groups:
        checked, events = check_run(words, options)
        plan = plan_of(checked)
        traced = any(o["name"] == "breakdown" for o, _ in checked)
        runs.append({"words": atsd_words(checked), "attrs": run_attrs(checked, events), "tracepoints": events,
                     "verify": plan.verify == 1, "breakdown": breakdown_bytes(plan) if traced else 0})
        # each sub-run paces its rounds over --spread and starts --gap after the one before: the least
        # time the run's sleeps take, whatever its passes cost
        waits += core.least_sleep(plan.runs, plan.gap, plan.rounds, plan.spread)
    return runs, waits


def plan_of(checked):
    """The C plan of one run's checked options (refused there as atsd would refuse it)."""
    from ..measure import core

    plan = core.plan_new()
    for o, value in checked:
        if o["field"]:  # --breakdown is atsd's own, no plan field
            core.plan_set(plan, o["field"], value if value is not None else o["const"])
    return plan
