"""Command line: argument parsing, and `main`, which reads as the pipeline (parse -> plan -> run -> export).

Heavy modules (pandas, scipy, matplotlib, the C core) are imported inside the commands, so
`atsdbench --help` stays fast.
"""
import argparse
import sys

from . import __version__
from .errors import UsageError

CONFIDENCE_CHOICES = "80|90|95|98|99|99.5"


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser():
    p = _Parser(prog="atsdbench", description="Measure and compare the cost of TLB invalidation on Linux "
                "(mprotect(PROT_NONE) over a populated region, in strides). GB/s = 10^9 bytes/s; sizes are binary.")
    p.add_argument("--version", action="version", version=f"atsdbench {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    r = sub.add_parser("run", help="measure and write a result file")
    r.add_argument("--size", default="1G", help="region size, binary K/M/G (default 1G)")
    r.add_argument("--strides", default="64K,1M,2M,4M", help="comma-separated strides (default 64K,1M,2M,4M)")
    r.add_argument("--rounds", default=5, help="measured rounds, each a fresh allocation (default 5)")
    r.add_argument("--reps", default=4, help="timed passes per stride per round (default 4)")
    r.add_argument("--warmup", default=1, help="warm-up passes per stride per round, stored but not used (default 1)")
    r.add_argument("--warmup-rounds", default=1, help="warm-up rounds before the measured ones (default 1)")
    r.add_argument("--processes", action="store_true", help="run each round in a fresh process")
    r.add_argument("--pages", default="base", help="base (default), thp or hugetlb")
    r.add_argument("--bystanders", default=0, help="threads keeping this mm live on other CPUs (default 0)")
    r.add_argument("--cpu", default=None, help="CPU the measuring thread is pinned to (default: first allowed)")
    r.add_argument("--latency", action="store_true", help="record every call's latency (p50/p90/p99/max)")
    r.add_argument("--no-retouch", dest="retouch", action="store_false", help="do not re-touch pages between passes")
    r.add_argument("--trace", dest="trace", action="store_const", const="on", default="auto",
                   help="require tlb:tlb_flush counts (default: count them when allowed)")
    r.add_argument("--no-trace", dest="trace", action="store_const", const="off", help="never attach the tracepoint")
    r.add_argument("--gpu", nargs="?", const=0, default=None, type=_int("--gpu"),
                   help="make GPU N (default 0) hold translations of the region (CUDA driver, ATS or HMM)")
    r.add_argument("--label", default=None, help="label shown by compare and plot (default: kernel release)")
    r.add_argument("--seed", default=None, type=_int("--seed"),
                   help="seed of the stride order (default: random, recorded)")
    r.add_argument("-o", "--output", default=None, help="result file (default atsdbench-HOST-KERNEL-TIME.json)")

    s = sub.add_parser("show", help="one result file's per-stride summary")
    s.add_argument("file")
    s.add_argument("--unit", choices=("round", "pass"), default="round")
    s.add_argument("--format", default="text", help="text, markdown or csv")

    c = sub.add_parser("compare", help="before/after speedup per stride with confidence intervals")
    c.add_argument("files", nargs="+", metavar="FILE[,FILE...]",
                   help="baseline first, then one or more new results; a,b,c = replicate runs of one side")
    c.add_argument("--metric", default=None, help="mean (default) or median")
    c.add_argument("--test", default=None, help="welch (default for mean), student, mannwhitney (median)")
    c.add_argument("--confidence", default="95", help=f"{CONFIDENCE_CHOICES} (default 95)")
    c.add_argument("--unit", default="auto", help="unit of replication: run (each replicate file), round, or pass "
                   "(ignores between-round variance); default: run when every side has replicates, else round")
    c.add_argument("--labels", default=None, help="comma-separated labels, one per file")
    c.add_argument("--format", default="text", help="text, markdown, csv, json, commit or ministat")

    sub.add_parser("stat", help="ministat: FreeBSD's ministat, output for output (atsdbench stat -h for options)",
                   add_help=False)

    i = sub.add_parser("info", help="what on this host shapes TLB-invalidation cost")
    i.add_argument("--json", action="store_true")

    pl = sub.add_parser("plot", help="GB/s against stride (and latency, speedup) as PNG/SVG/PDF")
    pl.add_argument("files", nargs="+", metavar="FILE")
    pl.add_argument("-o", "--output", required=True, help="picture file; its extension picks the format")
    pl.add_argument("--metric", choices=("mean", "median"), default="median")
    pl.add_argument("--confidence", default="95", help=f"{CONFIDENCE_CHOICES} (default 95)")
    pl.add_argument("--labels", default=None)

    im = sub.add_parser("import", help="turn the output of the standalone `atsd` program into a result file")
    im.add_argument("file", help="atsd output ('-' for stdin)")
    im.add_argument("-o", "--output", default=None)
    return p


def _int(name):
    def conv(text):
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} {text!r} is not a whole number") from None
    return conv


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "stat":
            from . import ministat

            return ministat.main(argv[1:], prog="atsdbench stat")
        args = build_parser().parse_args(argv)
        if args.command is None:
            build_parser().print_help()
            return 2
        from . import commands

        return getattr(commands, "cmd_" + args.command)(args)
    except UsageError as e:
        print(f"atsdbench: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # the kernel said no (mmap, mprotect, affinity): one line, with its errno text
        print(f"atsdbench: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before anything was measured: nothing to keep
        return 130
    except BrokenPipeError:
        return 0


def entry():
    sys.exit(main())
