"""One function per subcommand; each reads as its pipeline: options -> plan -> run -> export."""
import functools
import sys

from . import signals
from ._cli import progress_bar, progress_option
from .errors import EXIT_STALE, UsageError


def _releasing(command):
    """A command that writes files: the outputs it claimed (data/files.py's locks) are let go when it
    ends, however it ends, so a second command in the same process (the Python API, tests) finds them free."""
    @functools.wraps(command)
    def run(args):
        try:
            return command(args)
        finally:
            from .data import files

            files.release_all()
    return run


def plan_options(args):
    """The plan's options as given on the command line (None: the option table's default)."""
    from .measure import core

    fields = {(o["field"] or o["name"]).replace("-", "_") for o in core.options() if o["run"] and o["field"]}
    return {name: getattr(args, name) for name in fields if getattr(args, name, None) is not None}


def refuse_extra_passes(plan, args):
    """run's --breakdown and --profile add passes of each cell's --op: a workload cell's would be
    mprotect's, shown under the workload's name.  Refused (run, campaign init's check of run options)."""
    extra = [o for o in ("breakdown", "profile") if getattr(args, o, None)]
    if extra and any(c.get("workload") for c in plan.cells):
        raise UsageError(f"{'--' + extra[0]} adds passes of an --op; --workload's loop has none: give one of them")


@_releasing
def cmd_run(args):
    # Held from the first import on: a Ctrl-C inside numpy's import would reach us as an ImportError
    # (C code turns the interrupt into its own error); here it waits for the check below.
    with signals.held():
        import time

        from .data import results
        from .measure import host, plan as plans, save
        from .render import tables  # noqa: F401  (imported held: numpy's import is no place for a Ctrl-C)

        plan = plans.make_plan(**plan_options(args))
        if plan.verify and any(c["gpu"] is not None for c in plan.cells):
            _warn(["--verify checks the CPUs, not the GPU's device TLBs (ATS, HMM) "
                   "(docs/verify.md#what-a-pass-proves)"])
        refuse_extra_passes(plan, args)
        when = progress_option(args)
        probe = None
        if getattr(args, "breakdown", None):  # refused here: exit 2 before anything is measured
            from .measure import breakdown

            probe = breakdown.Probe(sorted({c["op"] for c in plan.cells}))
            if probe.missing:
                from .render.breakdown import breakdown_missing

                _warn([breakdown_missing(probe.missing)])
        sampler = None
        if getattr(args, "profile", None):
            from .measure import profile

            sampler = profile.Probe([plan.cpu] + list(plan.bystander_cpus))
        # Named and checked before measuring: an unwritable output must not cost a finished run.
        output = args.output if args.output is not None else results.default_path(host.probe(), time.time())
        total = None if plan.until else (plan.rounds + plan.warmup_rounds) * plan.passes_per_round * plan.runs
        results.claim(output, total or plan.passes_per_round, plan.latency)  # held until saved: one writer
        signals.check()  # a Ctrl-C during start-up: nothing measured, exit 130 with one line
        # From the first pass to the saved file a signal stops the run between passes (see runner)
        # and never lands inside the save: the samples are saved before anything optional (pandas,
        # the table) runs; where the output cannot be written they go to a rescue file.
        result, save_error = save.measure_and_save(plan, output, progress_bar(total, when), probe, sampler)
        interrupted = signals.take()
        # the report of what was saved, held too: a storm of signals still arriving would cut it off
        # before "wrote FILE" (the file is whole either way); one that comes makes the exit 130
        try:
            _report_saved(result, output, save_error)
        except UsageError as e:  # a part-way failure or an unsaved file: said, but a stale read is the status
            if not result.stale():
                raise
            print(f"atsdbench: {e}", file=sys.stderr)
        finally:  # loud, after the save and the table, whatever else went wrong
            stale = print_stale(result.stale(), sys.stderr)
            interrupted = signals.take() or interrupted
    if stale:
        return EXIT_STALE
    return 0 if result.complete and not interrupted else 130


def print_stale(groups, stream, name=None):
    """run --verify's loud lines (render/verify.py) on `stream`; True where there were any."""
    from .render.verify import stale_lines

    for line in stale_lines(groups, name):
        print(line, file=stream)
    stream.flush()
    return bool(groups)


def _report_saved(result, output, save_error, calibrating=False):
    """The table of what was measured, where it went, and the save's or the run's error (raised)."""
    from .data import results
    from .render import tables as report

    try:
        if result.records:
            print(report.run_report(result, calibrating))
            from .render import breakdown

            if result.config.get("breakdown"):
                print(breakdown.table(result.config["breakdown"], config=result.config, host=result.host))
            if result.config.get("profile"):
                print(breakdown.profile_table(result.config["profile"], config=result.config, host=result.host))
            if save_error is None:
                print(f"wrote {output}")
    finally:  # no folder took the file: the JSON itself, after the table (or without it)
        if isinstance(save_error, results.Unsaved):
            results.print_unsaved(save_error)
    if save_error is not None:
        raise save_error
    if getattr(result, "failure", None) is not None:
        raise result.failure  # a --workload's read-back: exit 3 (cli)
    if result.error:
        raise UsageError(result.error)


# calibrate's design (docs/calibrate.md): the between-run component's df is K - 1, and its sub-runs must
# spread over the minutes the host drifts on: cut out of 16 real --runs 8 files (scripts/bench_verdict.py
# --from-runs), profiles of 8 sub-runs ~150 s apart gave reboot-spaced single runs a nominal A/A (1 of 21,
# CIs holding 0 in 95% of rows), profiles of 8 sub-runs 20 s apart 26% (75%)
CALIBRATE_RUNS, CALIBRATE_GAP = "8", "150s"


def calibrate_gap_warnings(gap):
    """A gap under the default's: the profile would hold less of the host's drift over minutes than the
    design that was measured nominal (docs/calibrate.md, "What it does")."""
    from .render import noise_profile as report

    floor = float(CALIBRATE_GAP.rstrip("s"))
    return [] if gap >= floor else [report.gap_under_floor(gap, floor)]


@_releasing
def cmd_calibrate(args):
    """An A/A of K sub-runs of the plan (fresh processes, starts >= --gap apart): the result file kept
    as run keeps it (every finished pass, Ctrl-C safe), then the noise profile made from it, which
    compare uses for sides of one process (data/noise_profile.py, analysis/noise.py)."""
    if args.source is not None:
        return _calibrate_from(args)
    with signals.held():  # from the first import on, as in cmd_run
        import os
        import time

        from .data import noise_profile, results
        from .measure import host, plan as plans, save

        options = plan_options(args)
        if getattr(args, "breakdown", None) or getattr(args, "profile", None):
            raise UsageError("calibrate measures noise: --breakdown and --profile are run's (extra passes per "
                             "stride)")
        if options.get("until") is not None:
            raise UsageError("calibrate measures a fixed design: --until would stop on the noise it estimates")
        options.setdefault("runs", CALIBRATE_RUNS)
        options.setdefault("gap", CALIBRATE_GAP)
        plan = plans.make_plan(**options)
        if plan.runs < 2:
            raise UsageError(f"calibrate --runs {plan.runs}: one sub-run has no between-run variance (give 2+; "
                             f"default {CALIBRATE_RUNS})")
        if plan.rounds < 2:  # noise.noise_profile_entries needs a sub-run's spread of round means: say so now
            raise UsageError(f"calibrate --rounds {plan.rounds}: one round a sub-run has no within-run variance "
                             "(give 2+)")
        _warn(calibrate_gap_warnings(plan.gap))
        when = progress_option(args)
        facts = host.probe()
        path = args.output
        if path is None:
            path = noise_profile.default_path(facts, noise_profile.plan_of(plan.config()), time.time())
            os.makedirs(os.path.dirname(path), exist_ok=True)
        output = noise_profile.result_path(path)
        total = (plan.rounds + plan.warmup_rounds) * plan.passes_per_round * plan.runs
        results.claim(path)  # both named, checked and locked before measuring
        results.claim(output, total, plan.latency)
        signals.check()
        result, save_error = save.measure_and_save(plan, output, progress_bar(total, when))
        interrupted = signals.take()
    _report_saved(result, output, save_error, calibrating=True)
    if not result.complete or interrupted:
        if result.records:
            from .render import noise_profile as report

            print(report.none_written(output))
        return 130
    return _save_noise_profile(result, path, _machine_id())


def _calibrate_from(args):
    from .data import noise_profile, results

    given = sorted(k for k in plan_options(args) if k != "output")
    if given:
        raise UsageError(f"calibrate --from takes the plan from its file: no run options (got --{given[0]})")
    result = results.load(args.source)
    path = args.output or noise_profile.default_path(result.host, noise_profile.plan_of(result.config),
                                                     result.started)
    if args.output is None:
        import os

        os.makedirs(os.path.dirname(path), exist_ok=True)
    results.claim(path)
    return _save_noise_profile(result, path, None)


def _machine_id():
    from .measure.procfs import read

    return (read("/etc/machine-id") or "").strip() or None


def _save_noise_profile(result, path, machine_id):
    from .analysis import noise
    from .data import noise_profile
    from .render import noise_profile as report

    entries, rounds = noise.noise_profile_entries(result)
    data = noise_profile.build(result.host, result.config, entries, result.complete, rounds, machine_id,
                               result.path, span_s=noise_profile.span(result))
    noise_profile.save(data, path)
    print(report.render(noise_profile.NoiseProfile(data, path)))
    print(f"wrote {path}")
    return 0


def _warn(lines):
    from ._cli import warn

    for line in lines:
        warn(line)


# Formats a program reads line by line (lava/atsdbench.yaml hands each line to lava-test-case): run --verify's
# loud lines go to stderr there, never among the data.
MACHINE_FORMATS = ("csv", "json", "lava")


def campaign_sides(items, labels):
    """compare/plot/model DIR: a campaign directory given alone is its kernels' sides, each boot's file one
    observation (the replicate design, unit file), labelled by the plan's names.  Returns (items, labels,
    the Campaign or None)."""
    import os

    from .data import campaign as store

    dirs = [x for x in items if isinstance(x, str) and os.path.isdir(x)]
    if not dirs:
        return items, labels, None
    if len(items) > 1 or not store.is_campaign(dirs[0]):
        raise UsageError(f"{dirs[0]} is a directory: give result files, or one campaign directory alone")
    c, sides = store.sides(dirs[0])
    _warn(c.warnings)
    empty = [name for name, paths in sides if not paths]
    if empty:
        raise UsageError(f"campaign {dirs[0]}: {', '.join(empty)} has no finished boot yet "
                         f"(campaign status {dirs[0]})")
    return [paths for _, paths in sides], labels or [name for name, _ in sides], c


def cmd_compare(args):
    from .analysis import compare as comparison, compare_by
    from .data import noise_profile, sides
    from .render import compare as compare_formats

    if args.format not in compare_formats.RENDERERS and args.format != "lava":
        raise UsageError(f"--format must be one of {', '.join(compare_formats.RENDERERS)} or lava (got "
                         f"{args.format!r})")
    if args.format == "lava" and getattr(args, "counts", False):
        raise UsageError("--format lava prints the rates alone: leave --counts out")
    labels = args.labels.split(",") if args.labels else None
    args.files, labels, campaign = campaign_sides(args.files, labels)
    given = getattr(args, "noise_profile", None) or ()
    comparison.check([sides.count(x) for x in args.files], args.metric, args.test, args.confidence, args.unit,
                     args.adjust, args.by, given)
    loaded = sides.load(args.files)
    if args.by is not None:
        cmp = compare_by.compare_by(loaded, args.by, metric=args.metric, confidence=args.confidence, unit=args.unit,
                                    labels=labels, adjust=args.adjust)
    else:
        cmp = comparison.compare(loaded, metric=args.metric, test=args.test, confidence=args.confidence,
                                 unit=args.unit, labels=labels, adjust=args.adjust,
                                 noise_profiles=[noise_profile.load(p) for p in given],
                                 store=None if getattr(args, "no_noise_profile", False) else noise_profile.Store())
    _warn(cmp.warnings)
    from .render import counts as count_formats

    # above every table: on stdout with it, but off the machine formats' stdout (csv, json)
    stale_stream = sys.stderr if args.format in MACHINE_FORMATS else sys.stdout
    for path, group in cmp.stale:
        print_stale([group], stale_stream, path)

    if getattr(args, "counts", False):
        if not cmp.counts:
            raise UsageError("the files have no invalidation counts: measured without tracing")
        print(count_formats.RENDERERS[args.format](cmp))
        return 0
    if args.format == "lava":
        from .render import lava

        print(lava.compare_lines(cmp))
        return 0
    print(compare_formats.RENDERERS[args.format](cmp))
    extra = count_formats.appendix(cmp, args.format)
    if extra:
        print(f"\n{extra}")
    if campaign is not None and args.format in ("text", "markdown", "commit", "ministat"):
        print("\n".join(compare_formats.campaign_legend(campaign)))
    if args.format in ("text", "markdown", "commit"):
        from .render import breakdown

        stages = breakdown.compare_table(cmp, args.format)
        if stages:
            print(f"\n{stages}")
    return 0


def cmd_show(args):
    from .render import tables as report
    from .data import results

    result = results.load(args.file)
    if args.format == "lava":
        from .render import lava

        if getattr(args, "scaling", False):
            raise UsageError("show --scaling has no lava format (lava gives one case per stride): text, markdown "
                             "or csv")
        print_stale(result.stale(), sys.stderr)  # loud, and off the lines lava/atsdbench.yaml reads
        print(lava.show_lines(result, args.unit))
        return 0
    if args.format not in report.FORMATS:
        raise UsageError(f"--format must be one of {', '.join(report.FORMATS)} or lava (got {args.format!r})")
    table, warnings = report.show_table(result, args.unit, args.format, scaling=getattr(args, "scaling", False),
                                  gbps=getattr(args, "gbps", False))
    _warn(warnings)
    print_stale(result.stale(), sys.stderr if args.format in MACHINE_FORMATS else sys.stdout)  # above the table
    if args.format == "text":
        print(report.headline(result))
    print(table)
    if args.format == "text":
        for line in report.notes(result):
            print(line)
    if args.format in ("text", "markdown"):
        from .render import breakdown

        if result.config.get("breakdown"):
            print(breakdown.table(result.config["breakdown"], args.format, result.config, result.host))
        if result.config.get("profile"):
            print(breakdown.profile_table(result.config["profile"], args.format, config=result.config,
                                          host=result.host))
    return 0


def cmd_info(args):
    import json

    from .measure import host
    from .render import info

    facts = host.full()
    cpus = auto = None
    if args.cpus:
        from .measure import plan as plans, survey

        chosen = plans.make_plan(size="16M", strides=str(facts["page_size"]))  # only its CPU is used
        auto = (chosen.cpu, chosen.cpu_reason)
        cpus = survey.survey()
    if args.json:
        out = {"host": facts, "warnings": host.warnings(facts)}
        if cpus is not None:
            out.update(cpus=cpus, cpu_auto={"cpu": auto[0], "reason": auto[1]})
        print(json.dumps(out, indent=1))
    else:
        print(info.render(facts, host.warnings(facts)))
        if cpus is not None:
            print()
            print(info.render_cpus(cpus, auto))
    return 0


@_releasing
def cmd_plot(args):
    from .analysis import compare as comparison
    from .render import plot
    from .data import results

    fmt = plot.output_format(args.output)
    plot.check_matplotlib()
    _, _, confidence, _ = comparison.resolve_options(confidence=args.confidence)
    results.claim(args.output)
    warnings = []
    args.files, labels, _ = campaign_sides(args.files, args.labels.split(",") if args.labels else None)
    args.labels = ",".join(labels) if labels else None
    fig = plot.make_figure(args.files, metric=args.metric, confidence=confidence,
                           labels=args.labels.split(",") if args.labels else None, model=args.model,
                           warnings=warnings)
    _warn(warnings)
    plot.save(fig, args.output)
    print(f"wrote {args.output} ({fmt})")
    return 0


@_releasing
def cmd_import(args):
    from .data import atsd_output as importer, results
    from .render import tables as report

    if args.table:
        return _import_table(args)
    if getattr(args, "lava_log", False):
        return _import_lava_log(args)
    if args.page_size or args.ceiling is not None or args.size:
        raise UsageError("--page-size, --ceiling and --size go with --table")
    result = importer.load(args.file)
    output = args.output if args.output is not None else results.default_path(result.host)
    results.claim(output, len(result.records))
    print(report.run_report(result))
    if result.config.get("breakdown"):  # atsd --breakdown's traces, cut into stages as run's are
        from .render import breakdown

        print(breakdown.table(result.config["breakdown"], config=result.config, host=result.host))
    print(f"wrote {results.save_or_rescue(result, output)}")
    return 0


def _import_lava_log(args):
    """import --lava-log LOG [-o DIR]: the results a LAVA job printed, each DIR/NAME.json (-2, -3 where taken)."""
    import os

    from .data import lava_log, results

    if args.page_size or args.ceiling is not None or args.size:
        raise UsageError("--page-size, --ceiling and --size go with --table")
    found, warnings = lava_log.read(args.file)
    _warn(warnings)
    folder = args.output or "."
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{folder}: {e.strerror}") from None
    for name, result in found:
        stem = os.path.join(folder, name[:-5] if name.endswith(".json") else name)
        path, k = stem + ".json", 1
        while os.path.lexists(path):
            k += 1
            path = f"{stem}-{k}.json"
        results.claim(path, len(result.records))
        print(f"wrote {results.save_or_rescue(result, path)}")
    return 0


def _import_table(args):
    from .data import results, published_table as table
    from .units import parse_size

    if not args.page_size:
        raise UsageError("import --table needs --page-size (the table's machine's: 64K POWER9, 4K x86)")
    # The bounds `run --ceiling` takes: a kernel flushes at least one page singly.
    if args.ceiling is not None and args.ceiling < 1:
        raise UsageError(f"--ceiling must be at least 1 (got {(str(args.ceiling)[:40])})")
    if args.ceiling is not None and args.ceiling > 1 << 30:
        raise UsageError(f"--ceiling is a page count: at most 2^30 (got {(str(args.ceiling)[:40])})")
    page = parse_size(args.page_size, "--page-size")
    if page & (page - 1):  # else every stride would be blamed for not being a multiple of it
        raise UsageError(f"--page-size {args.page_size} is not a power of two (a page is 4K, 16K, 64K, ...)")
    size = parse_size(args.size or "1G", "--size")
    found, warnings = table.load(args.file, page, size, args.ceiling)
    paths = table.output_paths(args.output, len(found), args.file)
    for path in paths:
        results.claim(path)
    for result, path in zip(found, paths):
        results.save_or_rescue(result, path)
    _warn(warnings)
    print(table.summary(found, paths))
    return 0


def cmd_model(args):
    from .analysis import compare as comparison, model
    from .data import sides
    from .render import model as model_formats

    if args.format not in model_formats.RENDERERS:
        raise UsageError(f"--format must be one of {', '.join(model_formats.RENDERERS)} (got {args.format!r})")
    _, _, confidence, unit = comparison.resolve_options(confidence=args.confidence, unit=args.unit)
    args.files, given, campaign = campaign_sides(args.files, args.labels.split(",") if args.labels else None)
    groups, level = comparison.replicates(sides.load(args.files))
    labels = sides.choose_labels(groups, given)
    analysis = model.analyse(groups, labels, confidence, unit=unit, level=level)
    _warn(analysis.warnings)
    print(model_formats.RENDERERS[args.format](analysis))
    return 0


def cmd_campaign(args):
    """campaign init|step|status|install (atsdbench/campaign/)."""
    from .campaign import actions

    action = args.campaign_command
    if action is None:
        raise UsageError("campaign needs an action: init, step, status or install (atsdbench campaign -h)")
    if action == "init":
        from .guest import options as guest
        from .measure import core, plan as plans

        def run_check():  # run's parser (in cli) and the C plan on this host
            refuse_extra_passes(plans.make_plan(**plan_options(args.run_parsed)), args.run_parsed)
            return list(args.run_options)

        def atsd_check():  # atsd's options, as guest checks them
            checked = guest.check_run_options(args.run_options, core.options())
            guest.plan_of(checked)
            return guest.atsd_words(checked)
        return actions.init(args.directory, args.kernel, boots=args.boots, schedule=args.schedule,
                            method=args.method, run_options=args.run_options, runner=args.runner,
                            plan_check=atsd_check if args.runner == "atsd" else run_check)
    if action == "status":
        return actions.status(args.directory)
    from .data import campaign as store

    c = store.load(args.directory)  # a plan that loads before anything is done
    if action == "install":
        from .campaign import unit

        path, name = unit.install(args.directory, **({"unit_dir": args.unit_dir} if args.unit_dir else {}),
                                  settle=args.settle)
        print(f"wrote {path} and enabled it: reboot to start (it runs atsdbench campaign step {args.directory} at "
              "each boot until the plan is done)")
        return 0
    import subprocess

    from .campaign import methods, step

    if c.plan["method"] == "qemu":
        raise UsageError(f"campaign {args.directory} was made by guest --boots (host-driven qemu boots): no step "
                         "to run")
    method = methods.method(c.plan["method"], args.directory)
    disable = (args.disable, subprocess.run) if args.disable else None
    runner = step.run_atsd if c.plan.get("runner") == "atsd" else step.run_subprocess
    return step.Step(args.directory, method, runner=runner, disable=disable)(dry_run=args.dry_run)
