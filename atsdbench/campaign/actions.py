"""campaign's subcommands: init (the plan, checked now), step, status, install."""
import os
import statistics
import time

from ..data import campaign as store, files
from ..errors import UsageError
from .._cli import warn, wrote
from . import methods, plan as plans


def check_run_options(words, plan_check):
    """The run options, checked now against the option table and the C plan (on this host), as `run`
    would check them (plan_check: the CLI's, which parsed them with run's parser, or atsd's table for
    --runner atsd; it returns the words to store): a campaign must not find a bad option on its first boot."""
    for w in words:
        if w in ("-o", "--output") or w.startswith("--output=") or (w.startswith("-o") and not w.startswith("--")):
            raise UsageError("campaign names its result files (DIR/NAME/BOOT_ID.json): no -o in the run options")
    return plan_check()


def init(directory, kernel_specs, boots=5, schedule="alternate", method="kexec", run_options=(), plan_check=None,
         grub=None, runner="run", kexec=None):
    if store.is_campaign(directory):
        raise UsageError(f"{directory} is a campaign already: campaign status {directory} (or give a new DIR)")
    if os.path.exists(directory) and (not os.path.isdir(directory) or os.listdir(directory)):
        raise UsageError(f"campaign init {directory}: not an empty directory (a campaign gets one of its own)")
    if len(kernel_specs) < 2:
        raise UsageError("campaign init needs two or more --kernel NAME=IMAGE (the kernels to compare)")
    if boots < 1 or boots > 1000:
        raise UsageError(f"--boots must be 1 to 1000 (got {boots})")
    if schedule not in store.SCHEDULES:
        raise UsageError(f"--schedule must be alternate or abba (got {schedule!r})")
    if method not in ("kexec", "grub", "manual"):
        raise UsageError(f"--method must be kexec, grub or manual (got {method!r})")
    kernels = [plans.parse_kernel(s) for s in kernel_specs]
    names = [k["name"] for k in kernels]
    if len(set(names)) != len(names):
        raise UsageError(f"--kernel names must differ (got {', '.join(names)})")
    kernels = [plans.resolve_image(k) for k in kernels]
    plans.check_distinct(kernels)
    if method == "grub":
        methods.Grub(**(grub or {})).check(kernels)
    if runner not in store.RUNNERS:
        raise UsageError(f"--runner must be run or atsd (got {runner!r})")
    words = check_run_options(list(run_options), plan_check or (lambda: list(run_options)))
    if method == "kexec":
        methods.Kexec(**(kexec or {})).check_support(kernels, warn)
    data = {"format": store.FORMAT, "version": store.VERSION, "created": time.time(), "kernels": kernels,
            "boots": boots, "schedule": schedule, "method": method, "runner": runner, "run_options": words}
    store.check_plan(data, store.plan_path(directory))
    made = not os.path.exists(directory)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise UsageError(f"campaign init {directory}: cannot make it: {e.strerror}") from None
    import json

    body = json.dumps(data, indent=1) + "\n"
    try:
        files.write_atomically(store.plan_path(directory), lambda f: f.write(body))
    except OSError as e:  # a full disk: no plan, and no empty DIR left for the next init to refuse
        if made:
            try:
                os.rmdir(directory)
            except OSError:
                pass
        raise UsageError(f"campaign init {directory}: cannot make it: {e.strerror}") from None
    order = plans.planned_order(data)
    names = ",".join(k["name"] for k in data["kernels"])
    more = ",..." if len(order) > 8 else ""
    print(wrote(f"{directory}/campaign.json", f": {names}, {data['boots']} boots each ({data['schedule']}: "
          f"{','.join(order[:8])}{more}), by {data['method']}"))
    first = f"atsdbench campaign install {directory}, then reboot" if method != "manual" else \
        f"boot the first kernel, then atsdbench campaign step {directory}"
    print(f"next: {first}; atsdbench campaign status {directory} shows progress")
    return 0


def status(directory, proc="/proc"):
    c, _ = store.sides(directory)  # the warnings compare DIR gives, result files it leaves out among them
    for w in c.warnings:
        warn(w)
    for line in _status_lines(c, directory):
        print(line)
    if not os.path.isdir(os.path.join(directory, store.JOURNAL)):
        found = {n: len(v) for n, v in store.result_files(c).items() if v}
        if found:
            print(f"no journal ({os.path.join(directory, store.JOURNAL)} is gone), but result files are here: "
                  f"{', '.join(f'{n} {k}' for n, k in found.items())}")
            print("  none is counted (no done event holds it); the next step starts the plan again")
    if c.complete:
        print(plans.complete_line(directory))
        print("next step: nothing to run (it says the plan is done and disables its unit)")
        return 0
    nxt = plans.next_kernel(c)
    if nxt is None:
        print(f"stuck: {', '.join(c.stuck())} missed {store.MAX_MISSES} slots in a row; boot it by hand and step")
        print("next step: measures that kernel where it is the one running; any other is recorded")
        return 1
    left = sum(c.remaining().values())
    times = [e["time"] for e in c.done if isinstance(e.get("time"), (int, float))]
    gaps = [b - a for a, b in zip(times, times[1:]) if b > a]
    boots = f"{left} boot{'s' * (left != 1)}"
    if not gaps:
        eta = f"{boots} left (time left known after two boots)"
    else:
        per = statistics.median(gaps)
        eta = f"about {_duration(per * left)} left ({boots} at the median {_duration(per)} between boots so far)"
    print(f"next: {nxt} ({c.kernels[nxt]['release']}); {eta}")
    print(f"  why: {plans.next_reason(c, nxt)}")
    print("next step: measures the running kernel where it has boots left (else records it), arranges the "
          "next")
    return 0


def _duration(seconds):
    """A campaign's time left or between boots: hours past 90 minutes, minutes past 90 seconds."""
    if seconds >= 5400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _status_lines(c, directory):
    """campaign status's lines: the plan, each kernel's boots, their order, what went wrong, a step that
    started and has not ended."""
    plan = c.plan
    options = " ".join(plan["run_options"]) or "(defaults)"
    lines = [f"campaign {directory}: {', '.join(c.names)}, {plan['boots']} boots each ({plan['schedule']}), by "
             f"{plan['method']}; {plan.get('runner', 'run')} {options}"]
    counts = c.counts()
    width = max(len(n) for n in c.names)
    for n in c.names:
        ids = [e["boot_id"][:8] for e in c.done if e["kernel"] == n]
        row = f"  {n:<{width}}  {c.kernels[n]['release']:<24}  {counts[n]}/{plan['boots']}  {' '.join(ids)}"
        lines.append(row.rstrip())  # no boot yet: no trailing blanks
    lines.append(f"boots done in order: {','.join(e['kernel'] for e in c.done) or 'none'}")
    for e in c.events:
        boot = e["boot_id"][:8] if "boot_id" in e else ""
        if e["event"] == "missed":
            got = e.get("booted") or "a kernel not in the plan"
            lines.append(f"  missed: {e['expected']} was arranged, {got} booted (boot {boot})")
        elif e["event"] == "foreign":
            lines.append(f"  not in the plan: {e['release']} (boot {boot}), not measured")
        elif e["event"] == "unfinished":
            kept = f", {e['file']} kept" if e.get("file") else ""
            lines.append(f"  unfinished: {e['kernel']} in boot {boot} ({e['why']}{kept}): redone")
        elif e["event"] == "stopped":
            lines.append(f"  stopped: boot {boot} ({e['why']}): no next boot arranged")
        elif e["event"] == "done" and c.why_refused(e):
            lines.append(f"  not counted: {e['kernel']} in boot {boot}: its slot is open again")
            lines.append(f"    why: {c.why_refused(e)}")
        elif e["event"] == "done" and e.get("recovered"):
            lines.append(f"  recovered: {e['kernel']} in boot {boot}: its done event was missing")
    opened = c.open_starts()
    if opened:
        e = opened[-1]
        lines.append(f"running or cut off: {e['kernel']} in boot {e['boot_id'][:8]}")
        lines.append("  the next step counts it where its run saved a complete file of its own, else redoes it")
    return lines
