"""One function per subcommand; each reads as its pipeline: options -> plan -> run -> export."""
import os
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
    from . import report, results, sweep

    plan = sweep.make_plan(size=args.size, strides=args.strides, rounds=args.rounds, reps=args.reps,
                           warmup=args.warmup, warmup_rounds=args.warmup_rounds, processes=args.processes,
                           pages=args.pages, bystanders=args.bystanders, cpu=args.cpu, latency=args.latency,
                           retouch=args.retouch, trace=args.trace, label=args.label, seed=args.seed, gpu=args.gpu)
    output = args.output
    if output:
        results.check_writable(output)
    total = (plan.rounds + plan.warmup_rounds) * (plan.reps + plan.warmup) * len(plan.strides)
    result = sweep.run(plan, progress=_progress(total))
    if output is None:
        output = results.default_path(result.host, result.started)
        results.check_writable(output)
    if result.samples.empty:
        print("atsdbench: no pass finished; nothing written", file=sys.stderr)
    else:
        results.save(result, output)
        print(report.run_report(result))
        print(f"wrote {output}")
    if result.error:
        raise UsageError(result.error)
    return 0 if result.complete else 130
