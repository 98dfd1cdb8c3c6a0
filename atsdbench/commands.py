"""One function per subcommand; each reads as its pipeline: options -> plan -> run -> export."""
import sys

from .errors import UsageError


def _progress(total):
    """A one-line progress bar on stderr, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None
    done = [0]

    def tick(_sample):
        done[0] += 1
        width = 30
        filled = width * done[0] // total
        sys.stderr.write(f"\r[{'#' * filled}{' ' * (width - filled)}] {done[0]}/{total} passes")
        if done[0] == total:
            sys.stderr.write("\n")
        sys.stderr.flush()
    return tick


def cmd_run(args):
    import time

    from . import host, report, results, sweep

    plan = sweep.make_plan(size=args.size, strides=args.strides, rounds=args.rounds, reps=args.reps,
                           warmup=args.warmup, warmup_rounds=args.warmup_rounds, processes=args.processes,
                           pages=args.pages, bystanders=args.bystanders, cpu=args.cpu, latency=args.latency,
                           retouch=args.retouch, trace=args.trace, label=args.label, seed=args.seed, gpu=args.gpu)
    # Named and checked before measuring: an unwritable output must not cost a finished run.
    output = args.output or results.default_path(host.probe(), time.time())
    results.check_writable(output)
    total = (plan.rounds + plan.warmup_rounds) * (plan.reps + plan.warmup) * len(plan.strides)
    result = sweep.run(plan, progress=_progress(total))
    if result.samples.empty:
        print("atsdbench: no pass finished; nothing written", file=sys.stderr)
    else:
        results.save(result, output)
        print(report.run_report(result))
        print(f"wrote {output}")
    if result.error:
        raise UsageError(result.error)
    return 0 if result.complete else 130


def _warn(lines):
    for line in lines:
        print(f"atsdbench: warning: {line}", file=sys.stderr)


def cmd_compare(args):
    from . import comparison, compare_formats

    if args.format not in compare_formats.RENDERERS:
        raise UsageError(f"--format must be one of {', '.join(compare_formats.RENDERERS)} (got {args.format!r})")
    labels = args.labels.split(",") if args.labels else None
    cmp = comparison.compare(args.files, metric=args.metric, test=args.test, confidence=args.confidence,
                             unit=args.unit, labels=labels)
    _warn(cmp.warnings)
    print(compare_formats.RENDERERS[args.format](cmp))
    return 0


def cmd_show(args):
    from . import report, results, show

    result = results.load(args.file)
    if args.format not in show.FORMATS:
        raise UsageError(f"--format must be one of {', '.join(show.FORMATS)} (got {args.format!r})")
    table, warnings = show.render(result, args.unit, args.format)
    _warn(warnings)
    if args.format == "text":
        print(report.headline(result))
    print(table)
    return 0


def cmd_info(args):
    import json

    from . import host, info

    facts = host.full()
    if args.json:
        print(json.dumps({"host": facts, "warnings": host.warnings(facts)}, indent=1))
    else:
        print(info.render(facts, host.warnings(facts)))
    return 0


def cmd_plot(args):
    from . import comparison, plot, results

    fmt = plot.output_format(args.output)
    plot.require_matplotlib()
    _, _, confidence, _ = comparison.resolve_options(confidence=args.confidence)
    results.check_writable(args.output)
    fig = plot.make_figure(args.files, metric=args.metric, confidence=confidence,
                           labels=args.labels.split(",") if args.labels else None)
    plot.save(fig, args.output)
    print(f"wrote {args.output} ({fmt})")
    return 0


def cmd_import(args):
    from . import importer, report, results

    result = importer.load(args.file)
    output = args.output or results.default_path(result.host)
    results.check_writable(output)
    results.save(result, output)
    print(report.run_report(result))
    print(f"wrote {output}")
    return 0
