"""Command line: argument parsing, and `main`, which reads as the pipeline (parse -> plan -> run -> export).

Heavy modules (pandas, scipy, matplotlib, the C core) are imported inside the commands, so
`atsdbench --help` stays fast and works without the core (docs/development.md "What needs the
compiled core").
"""
import argparse
import codecs
import importlib
import os
import re
import select
import sys

from . import __version__
from ._cli import WIDTH
from .errors import EXIT_STALE, ArgumentError, CoreMissing, ReadBackFailed, UsageError

CONFIDENCE_CHOICES = "80|90|95|98|99|99.5"


class _Parser(argparse.ArgumentParser):
    """No abbreviations (--stride is not --strides), and where `trailer` is set, the words a command
    takes after `--` shown at the end of its usage."""

    trailer = None

    def __init__(self, *args, trailer=None, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.trailer = trailer

    def format_usage(self):
        return self._with_trailer(super().format_usage())

    def format_help(self):
        return self._with_trailer(super().format_help())

    def _with_trailer(self, text):
        if not self.trailer:
            return text
        usage, sep, rest = text.partition("\n\n")
        usage = usage.rstrip("\n")
        last = usage.rsplit("\n", 1)[-1]
        joint = "\n" + " " * (len(self.prog) + 8) if len(last) + 1 + len(self.trailer) > 100 else " "
        return usage + joint + self.trailer + (sep + rest if sep else "\n")

    def parse_args(self, args=None, namespace=None):
        self._words = list(sys.argv[1:] if args is None else args)  # error() finds the command meant
        return super().parse_args(args, namespace)

    def error(self, message):
        # "argument --ceiling: --ceiling 'x' is not ...": a converter's message names its option already
        message = re.sub(r"^argument (\S+): (?=\1 )", "", message)
        meant = self._meant()
        hint = f"{meant.prog} --help"
        usage = f"usage: {meant.prog}{_usage_tail(meant)} (options: {hint})"
        choice = re.fullmatch(r"argument (\S+): invalid choice: '(.*)' \(choose from (.*)\)", message, re.S)
        unknown = re.fullmatch(r"unrecognized arguments: (.*)", message, re.S)
        if choice:
            name, got, listed = choice.groups()
            choices = re.findall(r"'([^']*)'", listed)
            what = f"no {name.lower()}" if name.isupper() else f"{name}: no choice"
            listing = " (one of " + ", ".join(choices) + ")"
            message = f"{what} {_shown(got)}{_close(got, choices) or listing}"
            if len(message) > WIDTH - len("atsdbench: "):
                message = f"{what} {_shown(got)} ({hint} lists them)"
        elif unknown:
            words = unknown.group(1).split()
            first = next((w for w in words if w.startswith("-")), words[0] if words else "")
            options = [o for a in meant._actions for o in a.option_strings if o.startswith("--")]
            what = "no option" if first.startswith("-") else "unexpected argument"
            first = first.split("=")[0]
            command = meant.prog.partition(" ")[2]
            message = f"{command + ': ' if command else ''}{what} {_shown(first)}" \
                f"{_close(first, options) if first.startswith('-') else ''}"
        if not (choice or unknown):  # a value refused, an argument missing: the line names it
            raise UsageError(message)
        raise ArgumentError(message, usage)

    def _meant(self):
        """The (sub)command the words name: its parser, for the usage line and the options to match."""
        parser = self
        for word in getattr(self, "_words", []):
            sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
            if sub is None:
                break
            if word in sub.choices:
                parser = sub.choices[word]
        return parser


def _usage_tail(parser):
    """ " [options] POSITIONALS": a usage that fits one line (run's whole usage is some 40 lines)."""
    positionals = [a for a in parser._actions if not a.option_strings]
    text = parser._get_formatter()._format_actions_usage(positionals, []) if positionals else ""
    tail = f" [options] {text}".rstrip()
    return tail if len(tail) <= 40 else " [options] ..."


def _shown(word):
    """A word of the command line as the error quotes it: at most 30 characters of it."""
    return repr(word if len(word) <= 30 else word[:27] + "...")


def _close(word, choices):
    """ " (did you mean X?)" for the choice closest to a misspelled word, or ""."""
    import difflib

    match = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {match[0]}?)" if match else ""


def build_parser(command=None):
    """The parser.  A subcommand asked for (`command`, the first word) is the only one it has, with
    its options: run's and calibrate's come from the compiled core's option table, so every other
    command and the top-level help work without the core, and no command pays for building the
    other ten (their options were about 20 ms, their parsers 1.5 ms, on every start and every
    in-process call).  Without one, or with a word that is none, every subcommand is listed, for
    the help and for the error that names them."""
    p = _Parser(prog="atsdbench", description="Measure and compare the cost of TLB invalidation on Linux "
                "(mprotect(PROT_NONE) over a populated region, in strides). GB/s = 10^9 bytes/s; sizes are binary.")
    p.add_argument("--version", action="version", version=f"atsdbench {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    table = _subcommands()
    asked = [entry for entry in table if entry[0] == command]
    for name, help_, options, extra in asked or table:
        parser = sub.add_parser(name, help=help_, **extra)
        if command == name and options is not None:
            options(parser)
    return p


def _subcommands():
    """(name, help, the function adding its options, add_parser's other arguments), in help order."""
    from .data.noise_profile import CALIBRATION_GAP as GAP, CALIBRATION_RUNS as RUNS

    return (
        ("run", "measure and write a result file", _add_plan_options, {}),
        ("calibrate", f"measure the between-run noise of a plan ({RUNS} sub-runs {GAP} apart) "
         "into a noise profile, which gives single runs a compare verdict", _calibrate_options, {}),
        ("show", "one result file's per-stride summary", _show_options, {}),
        ("compare", "before/after speedup per stride with confidence intervals", _compare_options, {}),
        ("stat", "ministat: FreeBSD's ministat, output for output (atsdbench stat -h for options)", None,
         {"add_help": False}),
        ("info", "what on this host shapes TLB-invalidation cost", _info_options, {}),
        ("plot", "GB/s against stride (and latency, speedup, a threads sweep's scaling) as PNG/SVG/PDF",
         _plot_options, {}),
        ("import", "turn the output of the standalone `atsd` program, or a published rate table (--table), into "
         "result files", _import_options, {}),
        ("guest", "boot kernel images under qemu, run atsd inside, one result file per image and run (atsdbench "
         "guest --kernel IMAGE ... [-- RUN-OPTIONS [-- RUN-OPTIONS ...]])", _guest_options,
         {"trailer": "[-- RUN-OPTIONS [-- RUN-OPTIONS ...]]"}),
        ("atsd", "the standalone atsd (C only, static) for this or another arch, built from the package's "
         "sources, to copy onto a system without Python (atsdbench atsd --arch ppc64le -o atsd)", _atsd_options, {}),
        ("campaign", "an A/B across reboots: plan the boots, run one at each boot (kexec, grub-reboot or by hand), "
         "then compare DIR", _campaign_options, {}),
        ("model", "fit per-call cost = fixed + per-page x pages and a whole-flush cost, with CIs; before/after "
         "changes", _model_options, {}),
        ("lab", "a kernel A/B across a LAVA lab's boards: submit the jobs, status, collect every result into a "
         "fleet directory (compare FLEET)", _lab_options, {}),
    )


def _calibrate_options(cal):
    from .data.noise_profile import CALIBRATION_GAP as GAP, CALIBRATION_RUNS as RUNS

    _add_plan_options(cal, defaults={"runs": RUNS, "gap": GAP},
                      helps={"runs": "sub-runs, each in a fresh process: the profile's between-run variance "
                                     "has M - 1 df",
                             "gap": "sub-runs start at least this long apart: the host drifts over minutes, "
                                    "which the profile must see"},
                      output_help="noise profile (default: in $XDG_DATA_HOME/atsdbench/noise-profiles, where compare "
                      "looks; the calibration's result file goes beside it as NAME.run.json)")
    cal.add_argument("--from", dest="source", default=None, metavar="FILE",
                     help="make the profile from this result file of 2 or more sub-runs (run --runs M) instead of "
                     "measuring")


def _show_options(s):
    s.add_argument("file", metavar="FILE", help="a result file (run -o, import, calibrate's NAME.run.json)")
    s.add_argument("--unit", choices=("round", "pass"), default="round",
                   help="what each N is: round (a round's mean rate; default) or pass (single passes, as run prints)")
    s.add_argument("--format", default="text", help="text, markdown, csv or lava (NAME pass|fail VALUE UNITS lines); "
                   "a column of numbers for `atsdbench stat`: docs/stat.md#a-result-files-numbers")
    s.add_argument("--gbps", action="store_true", help="a --workload file's rates in GB/s (loops/s x page size) "
                   "instead of will-it-scale's loops/s")
    s.add_argument("--scaling", action="store_true", help="a threads sweep (run --threads 1,2,4): its table by "
                   "thread count alone (rate, per task, efficiency against linear, spread, disturbed share)")


def _compare_options(c):
    c.add_argument("files", nargs="+", metavar="FILE[,FILE...]",
                   help="baseline first, then one or more new results; a,b,c = replicate runs of one side; "
                   "or one campaign or fleet directory alone (a fleet: boards as blocks)")
    c.add_argument("--metric", default=None, help="mean (default) or median")
    c.add_argument("--test", default=None, help="welch (default for mean), student, mannwhitney (median)")
    c.add_argument("--confidence", default="95", help=f"{CONFIDENCE_CHOICES} (default 95)")
    c.add_argument("--unit", default="auto", help="unit of replication: run (each replicate file, or each "
                   "--runs sub-run where every side is one file), round, or pass (ignores between-round variance); "
                   "default: the file where a side has replicate files; where every side is one file (one session), "
                   "no verdict (run or round asks for the within-session one)")
    c.add_argument("--labels", default=None, help="comma-separated labels, one per file")
    c.add_argument("--adjust", default="holm", help="holm (default: verdicts hold for all strides, cells and files "
                   "together) or none (each comparison alone)")
    c.add_argument("--format", default="text", help="text, markdown, csv, json, commit, ministat or lava (NAME "
                   "pass|fail VALUE UNITS lines)")
    c.add_argument("--by", default=None, metavar="AXIS", help="one file with axes: every cell against the cell "
                   "with the axis's first value (other axes equal), paired by round (op, threads, bystanders, pages, gpu, ceiling)")
    c.add_argument("--noise-profile", action="append", default=[], metavar="FILE",
                   help="a noise profile (atsdbench calibrate) giving a one-process side its between-run variance; "
                   "repeat, one per kernel (default: found in the profile store by host, kernel and plan)")
    # their old names: `--profile` is run's perf sampling, so compare refuses them, naming the new ones
    c.add_argument("--profile", action="append", dest="old_profile", default=None, help=argparse.SUPPRESS)
    c.add_argument("--no-noise-profile", action="store_true", help="do not look for noise profiles in the store")
    c.add_argument("--no-profile", action="store_true", dest="old_no_profile", help=argparse.SUPPRESS)
    c.add_argument("--fail-on", default=None, metavar="PCT", help="a gate for CI and git bisect run: exit 1 where "
                   "a slowdown beyond PCT (5%%) is proven (verdict slower, CI below -PCT), 125 where a row has no "
                   "verdict, else 0")
    c.add_argument("--counts", action="store_true", help="the kernel's invalidation counts per call only (flushes, "
                   "IPIs, tlbie, hcalls): each side and the change, beyond their pass-to-pass spread")


def _info_options(i):
    i.add_argument("--json", action="store_true", help="the host facts and warnings as JSON (default: text)")
    i.add_argument("--cpus", action="store_true", help="also measure each allowed CPU briefly (rate, CV, interrupts, "
                   "steal) and say which one --cpu auto takes")


def _plot_options(pl):
    pl.add_argument("files", nargs="+", metavar="FILE",
                    help="result files, baseline first; a1.json,a2.json = replicate runs of one side")
    pl.add_argument("-o", "--output", required=True, help="picture file; its extension picks the format")
    pl.add_argument("--metric", choices=("mean", "median"), default=None,
                    help="the centre drawn and tested, as compare's (default mean: geometric means, Welch's t)")
    pl.add_argument("--confidence", default="95", help=f"{CONFIDENCE_CHOICES} (default 95)")
    pl.add_argument("--labels", default=None, help="legend labels, comma-separated (default: each file's --label, "
                    "else its kernel release, with the file name where two would read the same)")
    pl.add_argument("--model", action="store_true", help="add a us/call against pages panel with the cost model")
    _force_option(pl, "the picture file")


def _import_options(im):
    im.add_argument("file", help="atsd output, or with --table a text holding the table ('-' for stdin)")
    im.add_argument("-o", "--output", default=None, help="result file; with --table a third column (after) goes to "
                    "the same name with -after before the extension")
    im.add_argument("--table", action="store_true", help="read a table of stride, GB/s [, after GB/s]")
    im.add_argument("--lava-log", action="store_true", help="FILE is a LAVA job's log (output.yaml, the job "
                    "log, or a console log): every result the test definition printed in it, written into -o DIR "
                    "(default .) as NAME.json")
    im.add_argument("--page-size", default=None, help="with --table (required): the base page size of the machine "
                    "the table was measured on, e.g. 64K (POWER9), 4K (x86)")
    im.add_argument("--ceiling", default=None, type=_int("--ceiling"),
                    help="with --table: that kernel's single-page flush ceiling in pages, where known")
    im.add_argument("--size", default=None, help="with --table: the region the table's benchmark swept (default 1G)")
    _force_option(im, "the result file (with --table its -after file too; --lava-log never replaces: -2, -3)")


def _guest_options(g):
    from .guest.options import GUEST_TIMEOUT

    g.add_argument("--kernel", action="append", default=[], metavar="IMAGE",
                   help="vmlinux (ppc64le), bzImage (x86_64) or Image (arm64); repeat for several")
    g.add_argument("--machine", default=None, help="power9 (radix), power9-hash, power8, x86_64 or aarch64 "
                   "(default: from the image)")
    g.add_argument("--append", default="", help="more kernel arguments")
    g.add_argument("--smp", type=_int("--smp"), default=2, metavar="N",
                   help="virtual CPUs of the guest (default 2: a bystander or a remote flush needs a second)")
    g.add_argument("--mem", default="2G", metavar="SIZE",
                   help="guest memory, as qemu's -m takes it (default 2G; a run's --size must fit in it)")
    g.add_argument("--accel", default="tcg", help="tcg (default: emulation) or kvm (same arch only)")
    g.add_argument("--timeout", type=_int("--timeout"), default=None,
                   help=f"seconds per guest (default {GUEST_TIMEOUT}, plus the runs' --gap and --spread sleeps)")
    g.add_argument("--initrd", action="append", default=[], metavar="ARCHIVE",
                   help="a cpio archive unpacked before guest's own (a root with Python, your tools); repeat for "
                   "several")
    g.add_argument("--module", action="append", default=[], metavar="FILE.ko",
                   help="a kernel module the guest loads (insmod) before the runs, e.g. test_hmm.ko for --device "
                   "hmm (scripts/build-test-hmm); repeat for several, loaded in order")
    g.add_argument("--command", dest="guest_command", default=None, metavar="CMD",
                   help="a shell command line run in the guest (after the runs; instead of atsd without any); its "
                   "output comes home as NAME.out, the files it leaves in $OUT as NAME/")
    g.add_argument("--trace-buffer", default="8M", metavar="SIZE",
                   help="tracefs buffer per CPU for a run's --tracepoints (default 8M)")
    g.add_argument("--boots", type=_int("--boots"), default=None, metavar="N",
                   help="a campaign: N fresh boots of each kernel, alternating, every boot's result file in -o DIR "
                   "(DIR/NAME/BOOT_ID.json; compare DIR)")
    g.add_argument("-o", "--output", default=".", metavar="DIR",
                   help="directory of the result files (default .; made if absent; nothing in it is overwritten: a "
                   "name taken gets -2, -3, ...)")


def _atsd_options(a):
    from .guest.initramfs import CROSS

    a.add_argument("--arch", default=None, choices=sorted(CROSS), help="the machine it runs on (default: this "
                   "one's); another arch needs its cross compiler (the error names the Debian packages)")
    a.add_argument("-o", "--output", default="atsd", metavar="FILE", help="where the program goes (default ./atsd)")
    _force_option(a, "FILE")


def _campaign_options(ca):
    cs = ca.add_subparsers(dest="campaign_command", metavar="ACTION", parser_class=_Parser)
    ci = cs.add_parser("init", trailer="-- RUN-OPTIONS", help="write the plan (atsdbench campaign init DIR --kernel NAME=IMAGE ... -- "
                       "RUN-OPTIONS)")
    ci.add_argument("directory", metavar="DIR", help="the campaign's directory (new or empty)")
    ci.add_argument("--kernel", action="append", default=[], metavar="NAME=IMAGE[,initrd=FILE][,append=ARGS]",
                    help="a kernel to compare (repeat; the first is the baseline); release=R where the image "
                    "does not say it")
    ci.add_argument("--boots", type=_int("--boots"), default=5, help="boots (result files) per kernel (default 5)")
    ci.add_argument("--schedule", default="alternate", help="alternate (A,B,A,B,...; default) or abba (A,B,B,A,...)")
    ci.add_argument("--method", default="kexec", help="how the next boot is arranged: kexec (default), grub "
                    "(grub-reboot) or manual (says which kernel to boot)")
    ci.add_argument("--runner", default="run", help="run (atsdbench run; default) or atsd (the standalone C "
                    "atsd, imported: minimal systems without numpy; its options after --)")
    for name, h in (("step", "one boot's work: which kernel is this, run, save DIR/NAME/BOOT_ID.json, arrange "
                     "the next boot"), ("status", "progress, what is next, the time left"),
                    ("install", "a systemd unit that runs step at each boot until the plan is done")):
        a = cs.add_parser(name, help=h)
        a.add_argument("directory", metavar="DIR")
        if name == "step":
            a.add_argument("--dry-run", action="store_true", help="say what this step would do; do nothing")
            a.add_argument("--disable", default=None, metavar="UNIT", help=argparse.SUPPRESS)
        if name == "install":
            a.add_argument("--settle", type=_int("--settle"), default=60, metavar="S",
                           help="seconds after boot before the step starts (default 60)")
            a.add_argument("--unit-dir", default=None, help=argparse.SUPPRESS)


def _lab_options(la):
    ls = la.add_subparsers(dest="lab_command", metavar="ACTION", parser_class=_Parser)
    su = ls.add_parser("submit", trailer="[-- RUN-OPTIONS]", help="make the jobs from a template and submit them, "
                       "A B B A per board, each recorded in FLEET/fleet.json as it is submitted")
    su.add_argument("directory", metavar="FLEET", help="the fleet's directory (new, or a fleet with --add)")
    su.add_argument("--kernel", action="append", default=[], metavar="NAME=URL[,initrd=URL][,modules=URL][,KEY=V]",
                    help="a side: its kernel's URL and its own template values (repeat; the first is the baseline)")
    su.add_argument("--device-type", required=True, metavar="TYPE", help="the LAVA device type (qemu, x86, ...)")
    su.add_argument("--device", action="append", default=[], metavar="NAME",
                    help="a board, pinned by the tag of its own name (repeat); default: any board of the type")
    su.add_argument("--tag", action="append", default=[], metavar="TAG",
                    help="a board: the device with this tag (repeat, one board each)")
    su.add_argument("--require-tag", action="append", default=[], metavar="TAG",
                    help="a tag every job requires (repeat)")
    su.add_argument("--boots", type=_int("--boots"), default=1, metavar="N",
                    help="jobs (boots) per kernel per board (default 1)")
    su.add_argument("--template", default=None, metavar="FILE",
                    help="a job template with {PLACEHOLDERS} (default: the project's lava/jobs/qemu-amd64.yaml, "
                    "carried in the package)")
    su.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a template placeholder's value for every job (repeat)")
    su.add_argument("--identity", default=None, metavar="NAME",
                    help="an identity of ~/.config/lavacli.yaml (default: LAVA_URI, LAVA_USER and LAVA_TOKEN from "
                    "the environment, else the file's `default`)")
    su.add_argument("--add", action="store_true", help="add jobs to an existing fleet of the same server and kernels")
    su.add_argument("--dry-run", action="store_true", help="write the jobs (FLEET/jobs/), submit none")
    for name, h in (("status", "each job: side, requested and actual board, state, results, the server's reason"),
                    ("collect", "wait until every job has ended, fetch each log, import its results into "
                     "FLEET/results/BOARD/SIDE/ (resumable)")):
        a = ls.add_parser(name, help=h)
        a.add_argument("directory", metavar="FLEET")
        a.add_argument("--identity", default=None, metavar="NAME", help="as lab submit's")
        if name == "collect":
            a.add_argument("--interval", type=_int("--interval"), default=30, metavar="S",
                           help="seconds between polls of the server (default 30)")
            a.add_argument("--patience", type=_int("--patience"), default=300, metavar="S",
                           help="seconds a server may not answer (a restart) before collect stops (default 300)")
            a.add_argument("--no-wait", action="store_true", help="collect what has ended and stop")


def _model_options(mo):
    mo.add_argument("files", nargs="+", metavar="FILE[,FILE...]",
                    help="one or more result files; two or more: the first is the baseline, a,b = replicate runs")
    mo.add_argument("--format", default="text", help="text, json, csv or commit")
    mo.add_argument("--confidence", default="95", help=f"{CONFIDENCE_CHOICES} (default 95)")
    mo.add_argument("--labels", default=None, help="comma-separated labels, one per side")
    mo.add_argument("--unit", default="auto", help="what the bootstrap resamples, as compare's --unit: run (each "
                    "replicate file, or each --runs sub-run where every side is one file), round, or pass; default: "
                    "the file where a side has replicate files; where every side is one file (one session), the "
                    "change gets a within-session interval, not a CI (run or round asks for it as one)")


def _add_plan_options(parser, output_help=None, defaults=None, helps=None):
    """`run`'s options (and calibrate's) come from the option table in C (csrc/atsd_options.h), which
    `atsd` is built from too.  Defaults stay None here: the C plan applies the table's own."""
    from .measure import core

    for o in core.options():
        if not o["run"]:
            continue
        names = [f"--{o['name']}"] + ([f"-{o['short']}"] if o["short"] else [])
        dest = (o["field"] or o["name"]).replace("-", "_")
        help_ = (helps or {}).get(o["name"], o["help"])
        if o["name"] == "output":
            help_ = output_help or help_ + " (default atsdbench-HOST-KERNEL-TIME.json)"
        elif o["metavar"] and (defaults or {}).get(o["name"], o["default"]) is not None:
            help_ += f" (default {(defaults or {}).get(o['name'], o['default'])})"
        help_ = help_.replace("%", "%%")  # argparse formats help with %
        if o["metavar"] is None:
            parser.add_argument(*names, dest=dest, action="store_const", const=o["const"], default=None, help=help_)
        else:
            parser.add_argument(*names, dest=dest, metavar=o["metavar"], default=None, help=help_,
                                nargs="?" if o["const"] is not None else None, const=o["const"])
    _force_option(parser, "the output (and calibrate's NAME.run.json)")


def _force_option(parser, what):
    """Every command that writes a file it is told to write refuses an existing one: --force replaces it
    (data/files.py check_writable; docs/result-file.md#nothing-replaced)."""
    parser.add_argument("--force", action="store_true", help=f"replace {what} where it exists")


_NEGATIVE = re.compile(r"-[0-9.]")


def _joined_values(argv):
    """`run --until -1%` as `run --until=-1%`: argparse takes a word starting with '-' for an option
    (a bare -1 only), so a negative value would get "expected one argument" instead of the plan's
    range error, which `atsd` (getopt) gives for the same words."""
    if not argv or argv[0] not in ("run", "calibrate"):
        return argv
    from .measure import core

    # long names only: argparse reads "-o=x" as the value "=x"
    takes_value = {f"--{o['name']}" for o in core.options() if o["run"] and o["metavar"]}
    out, i = [argv[0]], 1
    while i < len(argv):
        if argv[i] == "--":
            return out + argv[i:]
        if argv[i] in takes_value and i + 1 < len(argv) and _NEGATIVE.match(argv[i + 1]):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _guest_split(argv):
    """`guest ... -- RUN-OPTIONS [-- RUN-OPTIONS ...]`: the words after the first `--` are atsd's runs,
    checked by guest itself."""
    if argv and (argv[0] == "guest" or argv[:2] in (["campaign", "init"], ["lab", "submit"])) and "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def _int(name):
    """A whole number in ASCII digits, as the C plan's options read them (int() would take '３３' and
    '1_000')."""
    def conv(text):
        from .data.schema import cut

        if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", text) or len(text) > 4000:
            raise argparse.ArgumentTypeError(f"{name} {cut(text)} is not a whole number")
        return int(text)
    return conv


def _std_streams():
    """A standard stream closed at start (`<&-`, `>&-`) reads as empty and writes to nowhere, as in
    ministat; opening /dev/null also keeps its descriptor from going to the next file we open.  Text
    that is not UTF-8 (a file name, a --label) is written back as the bytes it came from."""
    for name, mode in (("stdin", "r"), ("stdout", "w"), ("stderr", "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, mode))  # the lowest free descriptor: this stream's
    codecs.register_error("atsdbench", _unencodable)
    for stream in (sys.stdout, sys.stderr):  # a warning names a side by its --label too
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="atsdbench")


def _unencodable(error):
    try:
        return codecs.lookup_error("surrogateescape")(error)
    except UnicodeError:  # a lone surrogate that was never a byte: show it escaped
        return codecs.lookup_error("backslashreplace")(error)


def _stdout_gone():
    """Is stdout a pipe whose reader has left?  (A BrokenPipeError may come from elsewhere.)"""
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


# the subcommands that live in a package of their own; the rest are atsdbench/commands.py's
COMMAND_HOMES = {"guest": ".guest.command", "atsd": ".guest.command", "campaign": ".campaign.command",
                 "lab": ".lab.command"}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    _std_streams()
    try:
        if argv and argv[0] == "stat":
            from . import ministat

            code = ministat.main(argv[1:], prog="atsdbench stat")
        else:
            argv, run_options = _guest_split(argv)
            parser = build_parser(argv[0] if argv else None)
            args = parser.parse_args(_joined_values(argv))
            if args.command in ("guest", "campaign", "lab"):
                args.run_options = run_options
            if args.command == "campaign" and args.campaign_command == "init" and args.runner != "atsd":
                args.run_parsed = build_parser("run").parse_args(_joined_values(["run", *run_options]))
            if args.command is None:
                parser.print_help()
                return 2
            if args.command in ("show", "compare", "model", "plot"):
                from .data import columns

                columns.bound_heap()  # their peak memory at 10^6 passes a side
            home = importlib.import_module(COMMAND_HOMES.get(args.command, ".commands"), __package__)
            code = getattr(home, "cmd_" + args.command)(args)
        sys.stdout.flush()  # a closed pipe shows here, where it is handled, not at exit
        return code
    except BrokenPipeError as e:
        if not _stdout_gone():
            print(f"atsdbench: {e.strerror}", file=sys.stderr)
            return 2
        # The reader left (`| head`): not an error.  Point stdout at /dev/null so the interpreter's
        # last flush does not complain either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (UsageError, CoreMissing) as e:
        if isinstance(e, ArgumentError):
            print(e.usage, file=sys.stderr)
        print(f"atsdbench: {e}", file=sys.stderr)
        return 2
    except ReadBackFailed as e:  # run --workload's read-back check: the run kept its passes, no rate
        print(f"atsdbench: {e.strerror}", file=sys.stderr)
        return EXIT_STALE
    except OSError as e:  # the kernel said no (mmap, mprotect, affinity): one line, with its errno text
        text = e.strerror or str(e)
        print(f"atsdbench: {e.filename}: {text}" if e.filename else f"atsdbench: {text}", file=sys.stderr)
        return 2
    except ImportError:
        from .signals import received, say_interrupted

        if not received():
            raise
        say_interrupted()  # an interrupt that a C extension's import turned into its own error
        return 130
    except KeyboardInterrupt:  # before anything was measured (start-up, the plan check): nothing to keep
        from .signals import say_interrupted

        say_interrupted()
        return 130
