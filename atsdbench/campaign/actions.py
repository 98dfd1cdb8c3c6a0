"""campaign's subcommands: init (the plan, checked now), step, status, install."""
import os
import statistics
import sys
import time

from ..data import campaign as store, files
from ..errors import UsageError
from ..render import text
from .._cli import warn
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
         grub=None, runner="run"):
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
    print(text.campaign_planned(directory, data, plans.planned_order(data)))
    print(text.campaign_next_steps(directory, method))
    return 0


def status(directory, proc="/proc"):
    c = store.load(directory)
    for w in c.warnings:
        warn(w)
    for line in text.campaign_status(c, directory):
        print(line)
    if c.complete:
        print(text.campaign_done(directory))
        return 0
    nxt = plans.next_kernel(c)
    if nxt is None:
        print(text.campaign_stuck(c.stuck(), store.MAX_MISSES))
        return 1
    left = sum(c.remaining().values())
    times = [e["time"] for e in c.done if isinstance(e.get("time"), (int, float))]
    gaps = [b - a for a, b in zip(times, times[1:]) if b > a]
    print(text.campaign_next(nxt, c.kernels[nxt]["release"], left, statistics.median(gaps) if gaps else None))
    return 0
