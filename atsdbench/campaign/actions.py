"""campaign's subcommands: init (the plan, checked now), step, status, install."""
import os
import statistics
import sys
import time

from ..data import campaign as store, files
from ..errors import UsageError
from ..render import messages, text
from .._cli import warn
from . import methods, plan as plans


def check_run_options(words, plan_check):
    """The run options, checked now against the option table and the C plan (on this host), as `run`
    would check them (plan_check: the CLI's, which parsed them with run's parser, or atsd's table for
    --runner atsd; it returns the words to store): a campaign must not find a bad option on its first boot."""
    for w in words:
        if w in ("-o", "--output") or w.startswith("--output=") or (w.startswith("-o") and not w.startswith("--")):
            raise UsageError(messages.CAMPAIGN_NO_OUTPUT_OPTION)
    return plan_check()


def init(directory, kernel_specs, boots=5, schedule="alternate", method="kexec", run_options=(), plan_check=None,
         grub=None, runner="run"):
    if store.is_campaign(directory):
        raise UsageError(messages.CAMPAIGN_ALREADY.format(directory=directory))
    if os.path.exists(directory) and (not os.path.isdir(directory) or os.listdir(directory)):
        raise UsageError(messages.CAMPAIGN_INIT_NOT_EMPTY.format(directory=directory))
    if len(kernel_specs) < 2:
        raise UsageError(messages.CAMPAIGN_INIT_NEEDS_KERNELS)
    if boots < 1 or boots > 1000:
        raise UsageError(messages.CAMPAIGN_BOOTS_RANGE.format(boots=boots))
    if schedule not in store.SCHEDULES:
        raise UsageError(messages.CAMPAIGN_SCHEDULE_MUST.format(schedule=schedule))
    if method not in ("kexec", "grub", "manual"):
        raise UsageError(messages.CAMPAIGN_METHOD_MUST.format(method=method))
    kernels = [plans.parse_kernel(s) for s in kernel_specs]
    names = [k["name"] for k in kernels]
    if len(set(names)) != len(names):
        raise UsageError(messages.CAMPAIGN_KERNEL_NAMES_DIFFER.format(names=", ".join(names)))
    kernels = [plans.resolve_image(k) for k in kernels]
    plans.check_distinct(kernels)
    if method == "grub":
        methods.Grub(**(grub or {})).check(kernels)
    if runner not in store.RUNNERS:
        raise UsageError(messages.CAMPAIGN_RUNNER_MUST.format(runner=runner))
    words = check_run_options(list(run_options), plan_check or (lambda: list(run_options)))
    data = {"format": store.FORMAT, "version": store.VERSION, "created": time.time(), "kernels": kernels,
            "boots": boots, "schedule": schedule, "method": method, "runner": runner, "run_options": words}
    store.check_plan(data, store.plan_path(directory))
    made = not os.path.exists(directory)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise UsageError(messages.CAMPAIGN_INIT_CANNOT_MAKE.format(directory=directory, why=e.strerror)) from None
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
        raise UsageError(messages.CAMPAIGN_INIT_CANNOT_MAKE.format(directory=directory, why=e.strerror)) from None
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
