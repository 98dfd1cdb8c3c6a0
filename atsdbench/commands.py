"""One function per subcommand; each reads as its pipeline: options -> plan -> run -> export."""
import functools
import math
import sys

from . import signals
from .errors import UsageError
from .render import text as texts


# Consoles a board's or a VM's serial line logs: a carriage return there is no redraw but one endless
# line in the lab's log (LAVA keeps every byte of it)
SERIAL = ("/dev/ttyS", "/dev/ttyAMA", "/dev/ttyUSB", "/dev/ttymxc", "/dev/hvc", "/dev/console", "/dev/ttySIF")


def shows_progress(when="auto", stream=None, environ=None):
    """--progress: always, never, or auto: where stderr is a terminal a person watches: not TERM=dumb,
    not a serial console (SERIAL), not inside LAVA's test shell (it exports LAVA_RESULT_DIR)."""
    import os

    if when in ("always", "never"):
        return when == "always"
    if when not in (None, "auto"):
        raise UsageError(f"--progress must be never, auto or always (got {when!r})")
    stream = stream or sys.stderr
    environ = os.environ if environ is None else environ
    try:
        if not stream.isatty():
            return False
        name = os.ttyname(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return environ.get("TERM") != "dumb" and "LAVA_RESULT_DIR" not in environ and not name.startswith(SERIAL)


def progress_option(args):
    """run's and calibrate's --progress, refused now where it is none of the three (before measuring)."""
    when = getattr(args, "progress", None)
    shows_progress(when)
    return when


def _progress(total, when="auto"):
    """A one-line progress bar on stderr where shows_progress says so.  An adaptive run's total is
    unknown: it shows passes so far.  Waits between spread rounds are shown as such."""
    if not shows_progress(when):
        return None
    done = [0]

    def tick(event):
        if "adaptive" in event:  # after each measured round of --until: round k, time, worst half-width
            sys.stderr.write(f"\r{'':60}\r{done[0]} passes, {event['adaptive']}")
            sys.stderr.flush()
            return
        if "wait" in event:
            sys.stderr.write(f"\r{'':40}\rwaiting {event['wait']:.1f} s before {event['before']}")
            sys.stderr.flush()
            return
        done[0] += 1
        width = 30
        if total:
            filled = width * min(done[0], total) // total
            sys.stderr.write(f"\r[{'#' * filled}{' ' * (width - filled)}] {done[0]}/{total} passes")
        else:
            sys.stderr.write(f"\r{done[0]} passes, round {event.get('round', 0) + 1}")
        if total and done[0] == total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    def end():
        """After the run: where the bar did not fill (an adaptive or interrupted run) its line is still
        open, and the table would start on it."""
        if not (total and done[0] == total):
            sys.stderr.write("\n")
            sys.stderr.flush()
    tick.end = end
    return tick


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
        from .measure import host, plan as plans
        from .render import tables  # noqa: F401  (imported held: numpy's import is no place for a Ctrl-C)

        plan = plans.make_plan(**plan_options(args))
        if plan.verify and any(c["gpu"] is not None for c in plan.cells):
            from .render import text

            _warn([text.verify_gpu()])
        refuse_extra_passes(plan, args)
        when = progress_option(args)
        probe = None
        if getattr(args, "breakdown", None):  # refused here: exit 2 before anything is measured
            from .measure import breakdown

            probe = breakdown.Probe(sorted({c["op"] for c in plan.cells}))
            _warn(probe.notes())
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
        result, save_error = _measure_and_save(plan, output, total, probe, sampler, when)
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
            stale = _print_stale(result.stale(), sys.stderr)
            interrupted = signals.take() or interrupted
    if stale:
        from .render import text

        return text.EXIT_STALE
    return 0 if result.complete and not interrupted else 130


def _print_stale(groups, stream, name=None):
    """run --verify's loud lines (render/text.stale_lines) on `stream`; True where there were any."""
    from .render import text

    for line in text.stale_lines(groups, name):
        print(line, file=stream)
    stream.flush()
    return bool(groups)


def _measure_and_save(plan, output, total, probe=None, sampler=None, progress_when="auto"):
    """run's and calibrate's measuring, inside their held(): the passes, then the file (or its rescue)
    before anything optional runs.  Returns (result, the save's UsageError or None).  probe: run
    --breakdown's, whose traced passes follow a run that was not stopped (measure/breakdown.py)."""
    from .data import results
    from .measure import runner

    progress = _progress(total, progress_when)
    result = runner.run(plan, progress=progress)
    if progress:
        progress.end()
    if probe is not None and result.complete and not signals.pending():
        _breakdown(plan, probe, result)
    if sampler is not None and result.complete and not signals.pending():
        _profile(plan, sampler, result)
    save_error = None
    if not result.records:
        if getattr(result, "failure", None) is None:  # a read-back's one line says it all (exit 3)
            print("atsdbench: no pass finished; nothing written", file=sys.stderr)
    else:
        try:
            results.save_or_rescue(result, output, later=True)
        except UsageError as e:
            save_error = e
    return result, save_error


def _breakdown(plan, probe, result):
    """The breakdown passes into result.config["breakdown"]; a Ctrl-C keeps the strides finished
    (complete false there; the signal stays pending: the run exits 130); an error ends the breakdown,
    never the run's file."""
    from .measure import breakdown

    section = {"passes": []}
    try:
        breakdown.run(plan, probe, breakdown.untraced_us(result), into=section)
    except (OSError, UsageError) as e:
        section["complete"] = False
        section["error"] = str(e.strerror if isinstance(e, OSError) and e.strerror else e)
    result.config["breakdown"] = section


def _profile(plan, sampler, result):
    """run --profile's sampled passes into result.config["profile"], as _breakdown does its own."""
    from .measure import profile

    section = {"passes": []}
    try:
        profile.run(plan, sampler, into=section)
    except (OSError, UsageError) as e:
        section["complete"] = False
        section["error"] = str(e.strerror if isinstance(e, OSError) and e.strerror else e)
    result.config["profile"] = section


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
        from .measure import host, plan as plans

        options = plan_options(args)
        if getattr(args, "breakdown", None) or getattr(args, "profile", None):
            from .render import text

            raise UsageError(text.breakdown_not_calibrate())
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
        result, save_error = _measure_and_save(plan, output, total, progress_when=when)
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
                                 store=None if getattr(args, "no_profile", False) else noise_profile.Store())
    _warn(cmp.warnings)
    from .render import counts as count_formats

    # above every table: on stdout with it, but off the machine formats' stdout (csv, json)
    stale_stream = sys.stderr if args.format in MACHINE_FORMATS else sys.stdout
    for path, group in cmp.stale:
        _print_stale([group], stale_stream, path)

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
    from .render import tables as report, show
    from .data import results

    result = results.load(args.file)
    if args.format == "lava":
        from .render import lava

        if getattr(args, "scaling", False):
            raise UsageError("show --scaling has no lava format (lava gives one case per stride): text, markdown "
                             "or csv")
        _print_stale(result.stale(), sys.stderr)  # loud, and off the lines lava/atsdbench.yaml reads
        print(lava.show_lines(result, args.unit))
        return 0
    if args.format not in show.FORMATS:
        raise UsageError(f"--format must be one of {', '.join(show.FORMATS)} or lava (got {args.format!r})")
    table, warnings = show.render(result, args.unit, args.format, scaling=getattr(args, "scaling", False),
                                  gbps=getattr(args, "gbps", False))
    _warn(warnings)
    _print_stale(result.stale(), sys.stderr if args.format in MACHINE_FORMATS else sys.stdout)  # above the table
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
        from .measure import core, guest, plan as plans

        def run_check():  # run's parser (in cli) and the C plan on this host
            refuse_extra_passes(plans.make_plan(**plan_options(args.run_parsed)), args.run_parsed)
            return list(args.run_options)

        def atsd_check():  # atsd's options, as guest checks them
            checked = guest.check_run_options(args.run_options, core.options())
            plan = core.plan_new()
            for o, value in checked:
                if o["field"]:  # --breakdown is atsd's own, no plan field
                    core.plan_set(plan, o["field"], value if value is not None else o["const"])
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
        from .render import text

        print(text.campaign_installed(path, args.directory))
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


def cmd_guest(args):
    """Boot each kernel image under qemu, run the static atsd (its runs) or a command inside, and bring
    home what it made: a result file per image and run, traces, the command's files (measure/guest.py has
    the pieces)."""
    import os
    import re

    from .measure import core, guest, guest_image, guest_initramfs, guest_qemu

    if not args.kernel:
        raise UsageError("guest needs --kernel IMAGE (one per kernel to boot)")
    for module in args.module:
        guest_initramfs.check_module(module)
    machines = []
    for image in args.kernel:  # every image and option checked before anything boots
        arch, _ = guest_image.detect_image(image)
        machines.append(guest_image.choose_machine(arch, args.machine, image))
    groups = guest.split_runs(args.run_options)
    if len(groups) > 1 and not all(groups):
        raise UsageError("guest: an empty run between two `--` (each starts a run)")
    if args.guest_command is not None and not args.guest_command.strip():
        raise UsageError("--command needs a shell command line to run in the guest")
    if args.guest_command is not None and groups == [[]]:
        groups = []  # the command instead of atsd
    runs, waits = [], 0.0
    for words in groups:
        checked, events = guest.check_run(words, core.options())
        plan = core.plan_new()
        for o, value in checked:
            if o["field"]:  # --breakdown is atsd's own, no plan field
                core.plan_set(plan, o["field"], value if value is not None else o["const"])
        runs.append({"words": guest.atsd_words(checked), "attrs": guest.run_attrs(checked, events),
                     "tracepoints": events, "verify": plan.verify == 1,
                     "breakdown": guest.breakdown_bytes(plan) if any(o["name"] == "breakdown" for o, _ in checked)
                     else 0})
        waits += guest.sleeps(plan.runs, plan.gap, plan.rounds, plan.spread)
    args.timeout = guest_timeout(args.timeout, waits)
    if not re.fullmatch(r"[1-9][0-9]*[KMGT]?", args.mem or "") or args.smp < 1:
        raise UsageError(f"--mem must be a size such as 2G and --smp at least 1 (got {args.mem!r}, {args.smp})")
    if args.smp < 2 and any(run["verify"] for run in runs):  # the guest's atsd would refuse it after the boot
        from .render import text

        raise UsageError(text.guest_verify_smp(args.smp))
    trace_kb = core.parse_size(args.trace_buffer, "--trace-buffer") // 1024
    if trace_kb < 4:
        raise UsageError("--trace-buffer must be a size of at least 4K per CPU, such as 8M (got "
                         f"{args.trace_buffer!r})")
    for archive in args.initrd:
        guest_initramfs.check_archive(archive)
    if args.accel not in ("tcg", "kvm"):
        raise UsageError(f"--accel must be tcg or kvm (got {args.accel!r})")
    if args.accel == "kvm":
        for image, machine in zip(args.kernel, machines):
            arch = guest.MACHINES[machine]["arch"]
            if arch != guest.host_arch():
                raise UsageError(f"--accel kvm runs guests of this machine's own arch ({guest.host_arch()}): "
                                 f"{image} is {arch}")
    traced = sum(1 for run in runs if run["tracepoints"])
    need = guest.expected_bytes(len(runs), traced, trace_kb, args.smp) + sum(run["breakdown"] for run in runs)
    guest.check_output_dir(args.output, len(args.kernel) * need)
    need = guest_initramfs.missing_tools(machines)
    if need:
        raise guest.Missing(f"guest needs {' '.join(need)} (apt-get install {' '.join(need)})")
    if args.accel == "kvm":
        problem = guest_qemu.kvm_problem()
        if problem:
            raise UsageError(f"--accel kvm: {problem}")
    bases = {a: guest_initramfs.initramfs(a) for a in {guest.MACHINES[m]["arch"] for m in machines}}
    try:
        os.makedirs(args.output, exist_ok=True)
    except OSError as e:
        raise UsageError(f"-o {args.output}: cannot make the directory: {e.strerror}") from None
    if args.boots is not None:
        return _guest_campaign(args, machines, runs, bases, trace_kb)
    failed, taken, stale = 0, set(), []
    for image, machine in zip(args.kernel, machines):
        booted = _guest_boot(args, image, machine, bases, runs, trace_kb)
        if booted is None:
            failed += 1
            continue
        failed += _guest_home(args, image, machine, booted[0], booted[1], runs, taken, stale)
    if stale:  # run --verify in a guest: as loud as on the host, after every file is written
        from .render import text as texts

        return texts.EXIT_STALE
    return 1 if failed else 0


def _guest_boot(args, image, machine, bases, runs, trace_kb):
    """One boot of one image under qemu: (console text, (qemu's exit, seconds, messages)), or None where
    it could not start (said on stderr)."""
    import os

    from .measure import guest, guest_initramfs, guest_qemu

    arch = guest.MACHINES[machine]["arch"]
    label = f"{os.path.basename(image)} ({machine})"
    try:
        with tempfile_dir() as tmp:
            log = os.path.join(tmp, "console.log")
            initrd = guest_initramfs.run_initramfs(bases[arch], runs, tmp, command=args.guest_command,
                                                   trace_buffer_kb=trace_kb, archives=args.initrd,
                                                   modules=args.module)
            cmd = guest_qemu.qemu_command(machine, image, initrd, log, smp=args.smp, mem=args.mem,
                                          append=args.append, accel=args.accel)
            rc, seconds, qemu_said = guest_qemu.boot(cmd, log, args.timeout, guest_qemu.tty_progress(label))
            if sys.stderr.isatty():
                sys.stderr.write("\n")
            try:
                with open(log, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except FileNotFoundError:  # qemu stopped before it opened the console
                text = ""
    except OSError as e:  # a full or unwritable temporary directory: this kernel only, the next boots
        where = f" ({e.filename})" if e.filename else ""
        print("atsdbench: " + f"guest {label}: could not boot: {e.strerror or e}{where}",
              file=sys.stderr)
        return None
    return text, (rc, seconds, qemu_said)


def _guest_campaign(args, machines, runs, bases, trace_kb):
    """guest --boots N: fresh qemu boots of the kernels alternating (A,B,A,B,...), N each, every boot's
    result file in a campaign directory (-o DIR: DIR/NAME/BOOT_ID.json, the journal; docs/lab.md), so
    `compare DIR` reads them as the replicate design.  Host-driven: no kexec, each boot is a new qemu."""
    import json
    import os
    import time

    from .campaign import plan as plans, step as steps
    from .data import atsd_output as importer, campaign as store, files, guest_console, results
    from .measure import guest_qemu

    if len(args.kernel) < 2:
        raise UsageError("guest --boots alternates two or more kernels: give --kernel A --kernel B")
    if len(runs) != 1 or args.guest_command is not None or runs[0]["tracepoints"]:
        raise UsageError("guest --boots: one result file per boot, one run (no --command, --tracepoints, second --)")
    if args.boots < 1 or args.boots > 1000:
        raise UsageError(f"--boots must be 1 to 1000 (got {args.boots})")
    directory = args.output
    if store.is_campaign(directory) or os.listdir(directory):
        raise UsageError(f"guest --boots: -o {directory} is not empty (a campaign gets a directory of its own)")
    kernels, machine_of = [], {}
    for image, machine in zip(args.kernel, machines):
        release, version = plans.image_identity(image)
        name = release or os.path.splitext(os.path.basename(image))[0]
        name = name if store.NAME.fullmatch(name) else "kernel"
        while name in [k["name"] for k in kernels]:
            name += "-2"
        kernels.append({"name": name, "image": os.path.abspath(image), "initrd": None, "append": args.append or None,
                        "release": release or name, "version": version})
        machine_of[name] = machine
    plan = {"format": store.FORMAT, "version": store.VERSION, "created": time.time(), "kernels": kernels,
            "boots": args.boots, "schedule": "alternate", "method": "qemu", "run_options": runs[0]["words"]}
    store.check_plan(plan, store.plan_path(directory))
    body = json.dumps(plan, indent=1) + "\n"
    files.write_atomically(store.plan_path(directory), lambda f: f.write(body))
    accel = guest_qemu.accel_name(args.accel)
    failed = 0
    with steps.Lock(directory):
        for name in plans.planned_order(plan):
            k, machine = next(x for x in kernels if x["name"] == name), machine_of[name]
            booted = _guest_boot(args, k["image"], machine, bases, runs, trace_kb)
            why = None
            if booted is not None:
                text, (rc, seconds, qemu_said) = booted
                try:
                    guest_console.reached_init(text, rc, args.timeout, qemu_said)
                    got = guest_console.run_output(text, 1, rc, args.timeout)
                    result = importer.to_result(got["output"], f"{k['image']}'s atsd output")
                except UsageError as e:
                    why = str(e)
            else:
                why = "qemu could not start"
            if why is not None:
                store.append_event(directory, {"event": "missed", "expected": name, "booted": None, "boot_id": "-",
                                               "why": why, "time": time.time()})
                print("atsdbench: " + f"guest {name}: {why.splitlines()[0]} (a missed boot)",
                      file=sys.stderr)
                failed += 1
                continue
            result.host.update({"virtualized": accel, "qemu_machine": machine, "kernel_image": k["image"]})
            boot_id = result.host.get("boot_id") or f"boot-{len(store.load(directory).done) + 1}"
            path = store.free_result_path(directory, name, boot_id)
            try:
                results.save_or_rescue(result, path)
            except UsageError as e:
                print(f"atsdbench: guest {name}: {e}", file=sys.stderr)
                failed += 1
                continue
            _guest_keep(path[:-5] + ".console", text)
            store.append_event(directory, {"event": "done", "kernel": name, "boot_id": boot_id,
                                           "file": os.path.relpath(path, directory), "time": time.time()})
            print(f"wrote {path} ({k['release']}, {machine}, {accel}, {seconds:.0f} s)")
    print(texts.campaign_boots_written(directory, len(store.load(directory).done)))
    return 1 if failed else 0


def _guest_keep(path, data):
    """One of guest's files written through the atomic writer: None, or why it was not (naming it)."""
    from .data import files

    try:
        files.write_atomically(path, lambda f: f.write(data), binary=isinstance(data, bytes))
        return None
    except (OSError, UsageError) as e:
        return f"cannot write {path}: {e.strerror}" if isinstance(e, OSError) and e.strerror else str(e)


def _guest_console(path, text):
    """The console written to `path` (the stem's placeholder), else to a rescue file, else nowhere:
    (where it is or None, the line saying why it is not at `path` or None)."""
    import os

    from .data import files

    why = _guest_keep(path, text)
    if why is None:
        return path, None
    try:
        os.unlink(path)  # the empty placeholder that claimed the name
    except OSError:
        pass
    rescue = files.write_rescue(text, suffix=".console")
    if rescue:
        return rescue, f"{why}; the console was saved to {rescue} instead"
    return None, (f"{why}; no rescue file could be written either: the console is lost (the result files "
                  "hold atsd's output)")


def _guest_home(args, image, machine, text, qemu, runs, taken, stale=None):
    """What one boot brought home, written under -o: each run's result file (and trace), the command's
    output and files, the console; all under a stem no earlier guest used (nothing is overwritten).
    Every finished run is kept whatever came after it, rescued where it cannot be written, and a
    failed write is reported and the rest go on.  Returns how many things failed (each said on stderr)."""
    import os

    from .data import atsd_output as importer, guest_console, results
    from .measure import guest, guest_qemu

    rc, seconds, qemu_said = qemu
    arch = guest.MACHINES[machine]["arch"]
    label = f"{os.path.basename(image)} ({machine})"
    accel = guest_qemu.accel_name(args.accel)

    def fail(why, console):
        shown = f"the whole console: {console}" if console else "no console kept"
        print(f"atsdbench: guest {label}: {why}\n({shown})", file=sys.stderr)

    try:
        values = guest_console.reached_init(text, rc, args.timeout, qemu_said)
    except UsageError as e:
        kept = guest.claim(args.output, f"{os.path.basename(image)}-{machine}", taken, ".failed.console")
        kept, why = _guest_console(kept + ".failed.console", text)
        if why:
            print(f"atsdbench: guest {label}: {why}", file=sys.stderr)
        fail(e if args.accel != "kvm" else f"{e} (under KVM: try without --accel)", kept)
        return 1
    if values.get("module-failed"):  # the runs go on: one that needs the module says so itself
        print(f"atsdbench: guest {label}: insmod {values['module-failed']}", file=sys.stderr)
    import re

    release = values.get("release") or "unknown"
    stem = guest.claim(args.output, guest.result_name(release, machine, arch)[:-5], taken)
    console, why = _guest_console(stem + ".console", text)  # the evidence: kernel messages, atsd's own tables
    failed = 0
    if why:
        print(f"atsdbench: guest {label}: {why}", file=sys.stderr)
        failed += 1
    held = f" (the console holds it: {console})" if console else ""
    for k, run in enumerate(runs, 1):
        name = stem + (f"-run{k}" if len(runs) > 1 else "")
        which = f"run {k}: " if len(runs) > 1 else ""
        try:
            got = guest_console.run_output(text, k, rc, args.timeout)
            result = importer.to_result(got["output"], f"{image}'s atsd output")
        except UsageError as e:
            fail(f"{which}{e}", console)
            failed += 1
            continue
        result.host.update({"virtualized": accel, "qemu_machine": machine, "kernel_image": os.path.abspath(image)})
        for key, field in (("ceiling", "tlb_single_page_flush_ceiling"),
                           ("local_ceiling", "tlb_local_single_page_flush_ceiling")):
            if values.get(key, "").isdigit():  # debugfs in the guest
                result.host[field] = int(values[key])
        if values.get("MMU") and result.host.get("mmu") in (None, "unknown"):
            result.host["mmu"] = values["MMU"]
        if values.get("modules"):
            result.host["guest_modules"] = [re.sub(r"^[0-9]+-", "", m) for m in values["modules"].split(",")]
        try:
            results.save_or_rescue(result, name + ".json")
            saved = True
        except UsageError as e:  # rescued (or on stdout): said, and the next run and kernel go on
            print(f"atsdbench: guest {label}: {which}{e}", file=sys.stderr)
            failed += 1
            saved = False
        trace = got["trace"]
        trace_written = False
        if trace is not None and trace["text"] is None:
            fail(f"{which}the trace came back damaged (the result file is whole)", console)
            failed += 1
        elif trace is not None:
            why = _guest_keep(name + ".trace", trace["text"])
            if why:
                print(f"atsdbench: guest {label}: {which}{why}{held}", file=sys.stderr)
                failed += 1
            trace_written = why is None
            absent = [e for e in run["tracepoints"] if e not in trace["events"]]
            if absent:
                _warn([f"guest {label}: {which}{', '.join(absent)}: no such tracepoint (not traced)"])
            if trace["lost"]:
                _warn([f"guest {label}: {which}trace lost {trace['lost']} events (grow --trace-buffer)"])
        done = f"run {k} of {len(runs)}" if len(runs) > 1 else f"{seconds:.0f} s"
        if saved:
            print(texts.guest_wrote(f"{name}.json", release, machine, accel, done,
                                   f"{name}.trace" if trace_written else None))
        if result.config.get("breakdown"):  # atsd --breakdown's traces, cut into stages by the import
            from .render import breakdown

            print(breakdown.table(result.config["breakdown"], config=result.config, host=result.host))
        if result.stale():  # --verify in the guest read a stale translation: its line, the file named
            _print_stale(result.stale(), sys.stderr, f"{name}.json")
            if stale is not None:
                stale.append(name)
    if args.guest_command is not None:
        try:
            code, output, files, left = guest_console.command_output(text, rc, args.timeout)
        except UsageError as e:
            fail(e, console)
            failed += 1
        else:
            out_why = _guest_keep(stem + ".out", output)
            problems, brought = [out_why] if out_why else [], 0
            for path, data in files.items():
                target = os.path.join(stem, path)
                try:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                except OSError as e:
                    problems.append(f"cannot make {os.path.dirname(target)}: {e.strerror}")
                    continue
                why = _guest_keep(target, data)
                problems += [why] if why else []
                brought += why is None
            for why in problems:
                print(f"atsdbench: guest {label}: {why}{held}", file=sys.stderr)
            failed += len(problems)
            if left:
                _warn([f"guest {label}: not brought home from /out: {', '.join(left)}"])
            files_line = f"{brought} file{'s' * (brought != 1)} it left in /out under {stem}/" if brought else ""
            if out_why is None:
                print(texts.guest_wrote_output(stem, code, files_line if brought else None))
            elif brought:
                print(f"wrote {files_line}")
            if code:
                fail(f"the command exited {code} (its output: {stem}.out)", console)
                failed += 1
    kernel_log = [line.strip() for b in guest_console.parse_console(text)[1] if b["name"] == "kernel-log"
                  for line in b["lines"] if line.strip()]
    if kernel_log:
        _warn([f"guest {label}: the kernel logged {kernel_log[0]!r} (the console has it all)"])
    if (len(runs) > 1 or args.guest_command is not None) and console == stem + ".console":
        print(f"wrote {console} ({release}, {machine}, {accel}, {seconds:.0f} s)")
    return failed


def tempfile_dir():
    import tempfile

    return tempfile.TemporaryDirectory(prefix="atsdbench-guest-")
