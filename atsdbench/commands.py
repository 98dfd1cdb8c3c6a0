"""One function per subcommand; each reads as its pipeline: options -> plan -> run -> export."""
import functools
import sys

from . import signals
from ._cli import progress_bar, progress_option, wrote
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


@_releasing
def cmd_run(args):
    # Held from the first import on: a Ctrl-C inside numpy's import would reach us as an ImportError
    # (C code turns the interrupt into its own error); here it waits for the check below.
    with signals.held():
        import time

        from .data import results
        from .measure import host, plan as plans, save
        from .render import tables  # noqa: F401  (imported held: numpy's import is no place for a Ctrl-C)

        plan = plans.make_plan(**plans.options_given(args))
        if plan.verify and any(c["gpu"] is not None for c in plan.cells):
            _warn(["--verify checks the CPUs, not the GPU's device TLBs (ATS, HMM) "
                   "(docs/verify.md#what-a-pass-proves)"])
        plans.refuse_extra_passes(plan, args)
        when = progress_option(args)
        # refused here where they cannot run: exit 2 before anything is measured
        probe, sampler = save.probes(plan, getattr(args, "breakdown", None), getattr(args, "profile", None))
        if probe is not None and probe.missing:
            from .render.breakdown import breakdown_missing

            _warn([breakdown_missing(probe.missing)])
        # Named and checked before measuring: an unwritable output must not cost a finished run.
        output = args.output if args.output is not None else results.default_path(host.probe(), time.time())
        total = None if plan.until else (plan.rounds + plan.warmup_rounds) * plan.passes_per_round * plan.runs
        force = getattr(args, "force", False)
        results.claim(output, total or plan.passes_per_round, plan.latency, force)  # held until saved: one writer
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
                print(wrote(output))
    finally:  # no folder took the file: the JSON itself, after the table (or without it)
        if isinstance(save_error, results.Unsaved):
            results.print_unsaved(save_error)
    if save_error is not None:
        raise save_error
    if getattr(result, "failure", None) is not None:
        raise result.failure  # a --workload's read-back: exit 3 (cli)
    if result.error:
        raise UsageError(result.error)


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
        from .measure import calibration, host, plan as plans, save
        from .render import noise_profile as report

        plan = calibration.make_plan(plans.options_given(args), args)
        if plan.gap < calibration.gap_floor():
            _warn([report.gap_under_floor(plan.gap, calibration.gap_floor())])
        when = progress_option(args)
        facts = host.probe()
        path = args.output
        if path is None:
            path = noise_profile.default_path(facts, noise_profile.plan_of(plan.config()), time.time())
            os.makedirs(os.path.dirname(path), exist_ok=True)
        output = noise_profile.result_path(path)
        total = (plan.rounds + plan.warmup_rounds) * plan.passes_per_round * plan.runs
        force = getattr(args, "force", False)
        results.claim(path, replace=force)  # both named, checked and locked before measuring
        results.claim(output, total, plan.latency, force)
        signals.check()
        result, save_error = save.measure_and_save(plan, output, progress_bar(total, when))
        interrupted = signals.take()
    _report_saved(result, output, save_error, calibrating=True)
    if not result.complete or interrupted:
        if result.records:
            from .render import noise_profile as report

            print(report.none_written(output))
        return 130
    return _save_noise_profile(result, path, calibration.machine_id())


def _calibrate_from(args):
    from .data import noise_profile, results
    from .measure import plan as plans

    given = sorted(k for k in plans.options_given(args) if k != "output")
    if given:
        raise UsageError(f"calibrate --from takes the plan from its file: no run options (got --{given[0]})")
    result = results.load(args.source)
    path = args.output or noise_profile.default_path(result.host, noise_profile.plan_of(result.config),
                                                     result.started)
    if args.output is None:
        import os

        os.makedirs(os.path.dirname(path), exist_ok=True)
    results.claim(path, replace=getattr(args, "force", False))
    return _save_noise_profile(result, path, None)


def _save_noise_profile(result, path, machine_id):
    from .analysis import noise
    from .data import noise_profile
    from .render import noise_profile as report

    entries, rounds = noise.noise_profile_entries(result)
    data = noise_profile.build(result.host, result.config, entries, result.complete, rounds, machine_id,
                               result.path, span_s=noise_profile.span(result))
    noise_profile.save(data, path)
    print(report.render(noise_profile.NoiseProfile(data, path)))
    print(wrote(path))
    return 0


def _warn(lines):
    from ._cli import warn

    for line in lines:
        warn(line)


# Formats a program reads line by line (lava/atsdbench.yaml hands each line to lava-test-case): run --verify's
# loud lines go to stderr there, never among the data.
MACHINE_FORMATS = ("csv", "json", "lava")


def cmd_compare(args):
    from .analysis import compare as comparison, compare_by, gate
    from .data import campaign as store, fleet, noise_profile, sides
    from .render import compare as compare_formats

    if args.format not in compare_formats.RENDERERS and args.format != "lava":
        raise UsageError(f"--format must be one of {', '.join(compare_formats.RENDERERS)} or lava (got "
                         f"{args.format!r})")
    if args.format == "lava" and getattr(args, "counts", False):
        raise UsageError("--format lava prints the rates alone: leave --counts out")
    labels = args.labels.split(",") if args.labels else None
    limit = gate.threshold(getattr(args, "fail_on", None))
    if limit is not None and getattr(args, "counts", False):
        raise UsageError("--fail-on gates the rates' verdicts: leave --counts out")
    if len(args.files) == 1 and fleet.is_fleet(args.files[0]):
        return _gated(_compare_fleet(args, labels), limit)
    args.files, labels, campaign = store.sides_of(args.files, labels, _warn)
    given = getattr(args, "noise_profile", None) or ()
    if getattr(args, "old_profile", None) or getattr(args, "old_no_profile", False):
        raise UsageError("compare takes --noise-profile FILE (--no-noise-profile): --profile is run's perf sampling")
    counts_only = getattr(args, "counts", False)
    _refuse_a_missing_one(args.files)
    _warn(sides.replicate_hint(args.files))
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
                                 store=None if getattr(args, "no_noise_profile", False) or counts_only
                                 else noise_profile.Store())  # counts need none: no word of a missing one
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
        return _gated(cmp.rows, limit)
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
    return _gated(cmp.rows, limit)


def _gated(rows, limit):
    """compare's exit status: 0, or with --fail-on the gate's (analysis/gate.py), its reason on stderr."""
    if limit is None:
        return 0
    from .analysis import gate

    sys.stdout.flush()  # the table first, then the gate's line under it on a terminal
    print(f"atsdbench: {gate.reason(rows, limit)}", file=sys.stderr)
    return gate.status(rows, limit)


def _compare_fleet(args, labels):
    """compare FLEET: every board's own comparison of its files, then the boards as blocks
    (analysis/blocked.py); prints the table and returns the fleet's rows."""
    from .analysis import blocked, compare as comparison
    from .data import sides
    from .render import blocked as fleet_formats

    if args.format not in fleet_formats.RENDERERS:
        raise UsageError(f"compare FLEET: --format must be one of {', '.join(fleet_formats.RENDERERS)} (got "
                         f"{args.format!r})")
    for option, given in (("--by", args.by), ("--counts", getattr(args, "counts", False)),
                          ("--noise-profile", getattr(args, "noise_profile", None))):
        if given:
            raise UsageError(f"compare FLEET compares each board's sides by their files: {option} does not apply")
    names, boards, one_sided = sides.fleet_sides(args.files[0])
    if labels is not None and len(labels) != len(names):
        raise UsageError(f"--labels gives {len(labels)} labels for the fleet's {len(names)} sides")
    shown = labels or names
    comparison.check([1] * len(names), args.metric, args.test, args.confidence, args.unit, args.adjust)
    _, _, confidence, _ = comparison.resolve_options(args.metric, args.test, args.confidence, args.unit)
    warnings, found = [], {}
    for board, paths in boards.items():
        try:
            cmp = comparison.compare(sides.load(paths), metric=args.metric, test=args.test,
                                     confidence=args.confidence, unit=args.unit, labels=shown, adjust=args.adjust,
                                     store=None)
        except UsageError as e:  # which board's files, where a fleet has many
            raise UsageError(f"board {board}: {e}") from None
        warnings += [f"{board}: {w}" for w in cmp.warnings]
        found[board] = cmp
    result = blocked.blocked(found, shown, confidence, args.adjust, one_sided, warnings)
    if result.withheld and args.format in MACHINE_FORMATS:  # the other formats' legend says it
        warnings.append(fleet_formats.no_fleet_verdict(result))
    _warn(warnings)
    stale_stream = sys.stderr if args.format in MACHINE_FORMATS else sys.stdout
    for cmp in found.values():
        for path, group in cmp.stale:
            print_stale([group], stale_stream, path)
    print(fleet_formats.RENDERERS[args.format](result))
    return result.rows


def _refuse_a_missing_one(items):
    """One name alone that is not there (a campaign folder, --by's file): said as such, not as a
    compare of too few files."""
    import os

    if len(items) == 1 and isinstance(items[0], str) and "," not in items[0] and not os.path.exists(items[0]):
        name = items[0]
        kind = "folder" if name.endswith("/") else "file" if name.endswith(".json") else "file or folder"
        raise UsageError(f"{name}: no such {kind}")


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
    from .measure import host
    from .render import info

    facts = host.full()
    cpus = auto = None
    if args.cpus:
        from .measure import plan as plans, survey

        chosen = plans.make_plan(size="16M", strides=str(facts["page_size"]))  # only its CPU is used
        auto = (chosen.cpu, chosen.cpu_reason)
        cpus = survey.survey()
    print(info.render_json(facts, host.warnings(facts), cpus, auto) if args.json else
          info.render(facts, host.warnings(facts), cpus, auto))
    return 0


@_releasing
def cmd_plot(args):
    from .analysis import compare as comparison
    from .data import campaign as store, results
    from .render import plot

    fmt = plot.output_format(args.output)
    plot.check_matplotlib()
    _, _, confidence, _ = comparison.resolve_options(confidence=args.confidence)
    results.claim(args.output, replace=getattr(args, "force", False))
    warnings = []
    args.files, labels, _ = store.sides_of(args.files, args.labels.split(",") if args.labels else None, _warn)
    args.labels = ",".join(labels) if labels else None
    fig = plot.make_figure(args.files, metric=args.metric, confidence=confidence,
                           labels=args.labels.split(",") if args.labels else None, model=args.model,
                           warnings=warnings)
    _warn(warnings)
    plot.save(fig, args.output)
    print(wrote(args.output, f" ({fmt})"))
    return 0


@_releasing
def cmd_import(args):
    from .data import atsd_output as importer, results
    from .render import tables as report

    if args.table:
        return _import_table(args)
    if args.page_size or args.ceiling is not None or args.size:
        raise UsageError("--page-size, --ceiling and --size go with --table")
    if getattr(args, "lava_log", False):
        return _import_lava_log(args)
    result = importer.load(args.file)
    output = args.output if args.output is not None else results.default_path(result.host)
    results.claim(output, len(result.records), replace=getattr(args, "force", False))
    print(report.run_report(result))
    if result.config.get("breakdown"):  # atsd --breakdown's traces, cut into stages as run's are
        from .render import breakdown

        print(breakdown.table(result.config["breakdown"], config=result.config, host=result.host))
    print(wrote(results.save_or_rescue(result, output)))
    return 0


def _import_lava_log(args):
    """import --lava-log LOG [-o DIR]: the results a LAVA job printed, each DIR/NAME.json (-2, -3 where taken);
    any left out (each said with its reason) make the exit status 2, after the others are written."""
    from ._cli import warn
    from .data import lava_log

    written, there, lost = lava_log.import_log(args.file, args.output, warn, print)
    if lost or not (written or there):
        source = "<stdin>" if args.file == "-" else args.file
        raise UsageError(f"{source}: {lost} result(s) left out (said above), {len(written)} written" if lost else
                         f"{source}: no atsdbench result between markers")
    return 0


def _import_table(args):
    from .data import results, published_table as table

    page, size = table.check_options(args.page_size, args.ceiling, args.size)
    found, warnings = table.load(args.file, page, size, args.ceiling)
    paths = table.output_paths(args.output, len(found), args.file)
    for path in paths:
        results.claim(path, replace=getattr(args, "force", False))
    for result, path in zip(found, paths):
        results.save_or_rescue(result, path)
    _warn(warnings)
    print(table.summary(found, paths))
    return 0


def cmd_model(args):
    from .analysis import compare as comparison, model
    from .data import campaign as store, sides
    from .render import model as model_formats

    if args.format not in model_formats.RENDERERS:
        raise UsageError(f"--format must be one of {', '.join(model_formats.RENDERERS)} (got {args.format!r})")
    _, _, confidence, unit = comparison.resolve_options(confidence=args.confidence, unit=args.unit)
    given = args.labels.split(",") if args.labels else None
    args.files, given, campaign = store.sides_of(args.files, given, _warn)
    groups, level = comparison.replicates(sides.load(args.files))
    labels = sides.choose_labels(groups, given)
    analysis = model.analyse(groups, labels, confidence, unit=unit, level=level)
    _warn(analysis.warnings)
    print(model_formats.RENDERERS[args.format](analysis))
    return 0
