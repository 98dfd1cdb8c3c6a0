"""`atsdbench stat`: FreeBSD's ministat (as Debian ships it, version 20150715), output for output.

Its arithmetic is kept where it shows in the output: sums accumulated in file order (sy, syy),
variance as (syy - sy*sy/n)/(n-1), the median as the upper middle point, Student's t from its table
(stats.ministat_t), the plot's truncating casts.  Where ministat crashes (-w 0 or -w 1 with a plot:
a segmentation fault), this prints a usage error instead.
"""
import getopt
import math
import os
import re
import sys

import numpy as np

SYMBOL = " x+*%#@O"
CONFIDENCES = (80.0, 90.0, 95.0, 98.0, 99.0, 99.5)
MAX_DS = 7
USAGE = """Usage: ministat [-C column] [-c confidence] [-d delimiter(s)] [-Ans] [-w width] [file [file ...]]
\tconfidence = {80%, 90%, 95%, 98%, 99%, 99.5%}
\t-A : print statistics only. suppress the graph.
\t-C : column number to extract (starts and defaults to 1)
\t-d : delimiter(s) string, default to " \\t"
\t-n : print summary statistics only, no graph/test
\t-s : print avg/median/stddev bars on separate lines
\t-w : width of graph/test output (default 74 or terminal width)"""

# What strtod(3) accepts as a prefix (after leading white space), in the C locale: for -c.
# (Data files are read in C, csrc/atsd.c atsd_read_column, with strtod itself.)
_STRTOD = re.compile(r"[ \t\n\v\f\r]*([+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?"
                     r"|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?"
                     r"|[nN][aA][nN](?:\([0-9A-Za-z_]*\))?))")


class StatError(Exception):
    def __init__(self, message, code=2, usage=False):
        super().__init__(message)
        self.code, self.usage = code, usage


def strtod(token):
    """(value, whole token used) as strtod(3) would."""
    m = _STRTOD.match(token)
    if not m:
        return 0.0, False
    text = m.group(1)
    low = text.lower().lstrip("+-")
    if low.startswith("0x"):
        value = float.fromhex(text)
    elif low.startswith("nan"):
        value = float("-nan" if text.startswith("-") else "nan")
    else:
        value = float(text)
    return value, m.end() == len(token)


class Dataset:
    """Points sorted ascending, with ministat's running sums in input order."""

    def __init__(self, name, values):
        values = np.asarray(values, dtype=np.float64)
        self.name = name
        self.n = len(values)
        # cumsum adds left to right, as ministat's loop does; np.sum would pair terms and round differently.
        self.sy = float(np.cumsum(values)[-1]) if self.n else 0.0
        self.syy = float(np.cumsum(values * values)[-1]) if self.n else 0.0
        self.values = np.sort(values)

    def min(self):
        return float(self.values[0])

    def max(self):
        return float(self.values[-1])

    def avg(self):
        return self.sy / self.n

    def median(self):
        return float(self.values[self.n // 2])

    def var(self):
        return (self.syy - self.sy * self.sy / self.n) / (self.n - 1.0) if self.n > 1 else math.nan

    def stddev(self):
        v = self.var()
        return -math.nan if v < 0 else math.sqrt(v) if not math.isnan(v) else v


def cfmt(spec, x):
    """printf formatting of a double as glibc does it (nan and -nan spelled its way)."""
    if math.isnan(x):
        text = "-nan" if math.copysign(1, x) < 0 else "nan"
        width = int(re.match(r"%(\d*)", spec).group(1) or 0)
        return text.rjust(width)
    if math.isinf(x):
        width = int(re.match(r"%(\d*)", spec).group(1) or 0)
        return ("-inf" if x < 0 else "inf").rjust(width)
    return spec % x


def read_set(data, name, column=1, delim=" \t"):
    """Parse one input (bytes) as ministat's ReadSet does (in C: csrc/atsd.c); a Dataset or StatError."""
    from . import core

    values, bad_line = core.read_column(data, column, delim)
    if values is None:
        raise StatError(f"Invalid data on line {bad_line} in {name}", code=2)
    if len(values) < 3:
        raise StatError(f"Dataset {name} must contain at least 3 data points", code=2)
    return Dataset(name, values)


def vitals_head():
    return "    N           Min           Max        Median           Avg        Stddev"


def vitals(ds, flag):
    return "%c %3d %s %s %s %s %s" % (SYMBOL[flag], ds.n, *(cfmt("%13.8g", v) for v in (
        ds.min(), ds.max(), ds.median(), ds.avg(), ds.stddev())))


def relative(ds, rs, confidence):
    from .stats import ministat_t

    i = ds.n + rs.n - 2
    t = ministat_t(confidence, i)
    spool = math.sqrt(((ds.n - 1) * ds.var() + (rs.n - 1) * rs.var()) / (ds.n + rs.n - 2))
    s = spool * math.sqrt(1.0 / ds.n + 1.0 / rs.n)
    d = ds.avg() - rs.avg()
    e = t * s
    if abs(d) > e:
        return [f"Difference at {confidence:.1f}% confidence",
                f"\t{cfmt('%g', d)} +/- {cfmt('%g', e)}",
                f"\t{cfmt('%g', d * 100 / rs.avg())}% +/- {cfmt('%g', e * 100 / rs.avg())}%",
                f"\t(Student's t, pooled s = {cfmt('%g', spool)})"]
    return [f"No difference proven at {confidence:.1f}% confidence"]


def _cint(x):
    """C's (int) cast of a double: truncation toward zero."""
    return int(x) if math.isfinite(x) else 0


def plot_lines(sets, width=74, separate=False):
    """The ASCII plot, as lines (ministat's SetupPlot/DimPlot/PlotSet/DumpPlot)."""
    lo, hi = 999e99, -999e99
    for ds in sets:
        sd = ds.stddev()
        for a in (ds.min(), ds.max(), ds.avg() - sd, ds.avg() + sd):
            # AdjPlot: comparisons with NaN are false, as in C
            if a < lo:
                lo = a
            if a > hi:
                hi = a
    span = hi - lo
    if span == 0:
        return ["[no plot, span is zero width]"]
    dx = span / (width - 1.0)
    x0 = lo - .5 * dx
    height = 0
    data = bytearray()
    bars = [None] * len(sets)
    for val, ds in enumerate(sets, 1):
        bar = val - 1 if separate else 0
        if bars[bar] is None:
            bars[bar] = bytearray(width)
        xs = [_cint((p - x0) / dx) for p in ds.values.tolist()]
        m, i, j = 1, -1, 0
        for x in xs:
            if x == i:
                j += 1
                m = max(m, j)
            else:
                j, i = 1, x
        m += 1
        if m > height:
            data.extend(bytes((m - height) * width))
        height = m
        i = -1
        for x in xs:
            if x == i:
                j += 1
            else:
                j, i = 1, x
            data[j * width + x] |= val
        sd = ds.stddev()
        b = bars[bar]
        if not math.isnan(sd):
            x = _cint(((ds.avg() - sd) - x0) / dx)
            m = _cint(((ds.avg() + sd) - x0) / dx)
            b[m] = ord("|")
            b[x] = ord("|")
            for k in range(x + 1, m):
                if b[k] == 0:
                    b[k] = ord("_")
        b[_cint((ds.median() - x0) / dx)] = ord("M")
        b[_cint((ds.avg() - x0) / dx)] = ord("A")
    edge = "+" + "-" * width + "+"
    lines = [edge]
    for i in range(1, height):
        row = data[(height - i) * width:(height - i + 1) * width]
        lines.append("|" + "".join(SYMBOL[k] if k < 8 else "[%02x]" % k for k in row) + "|")
    for b in bars:
        if b is not None:
            lines.append("|" + b.replace(b"\0", b" ").decode() + "|")
    lines.append(edge)
    return lines


def render(sets, confidence=95.0, width=74, plot=True, separate=False, stats_only=False):
    """The whole report (as ministat prints it after reading), ending with a newline."""
    out = [f"{SYMBOL[i + 1]} {ds.name}" for i, ds in enumerate(sets)]
    if plot:
        out += plot_lines(sets, width, separate)
    out.append(vitals_head())
    out.append(vitals(sets[0], 1))
    for i, ds in enumerate(sets[1:], 2):
        out.append(vitals(ds, i))
        if not stats_only:
            out += relative(ds, sets[0], confidence)
    return "\n".join(out) + "\n"


def _strtol(text):
    m = re.match(r"[ \t\n\v\f\r]*([+-]?\d+)", text)
    return (int(m.group(1)), m.end() == len(text)) if m else (0, text == "")


def parse_args(argv, isatty=None, env=None, prog="ministat"):
    try:
        opts, files = getopt.gnu_getopt(argv, "AC:c:d:snw:")
    except getopt.GetoptError as e:
        what = "option requires an argument" if "requires" in e.msg else "invalid option"
        raise StatError(f"{prog}: {what} -- '{e.opt}'\nUnknown option", usage=True) from None
    o = {"column": 1, "confidence": 95.0, "delim": " \t", "stats_only": False, "separate": False,
         "suppress_plot": False, "width": 74, "width_set": False}
    env = os.environ if env is None else env
    if isatty if isatty is not None else sys.stdout.isatty():
        if env.get("COLUMNS"):
            o["width"] = _strtol(env["COLUMNS"])[0]
        else:
            try:
                o["width"] = os.get_terminal_size(sys.stdout.fileno()).columns - 2
            except OSError:
                pass
    for flag, arg in opts:
        if flag == "-A":
            o["suppress_plot"] = True
        elif flag == "-C":
            n, whole = _strtol(arg)
            if not whole:
                raise StatError("Invalid column number.", usage=True)
            if n <= 0:
                raise StatError("Column number should be positive.", usage=True)
            o["column"] = n
        elif flag == "-c":
            value, whole = strtod(arg) if arg else (0.0, True)  # strtod("") is 0, all of it used
            if not whole:
                raise StatError("Not a floating point number", usage=True)
            if value not in CONFIDENCES:
                raise StatError("No support for confidence level", usage=True)
            o["confidence"] = value
        elif flag == "-d":
            if arg == "":
                raise StatError("Can't use empty delimiter string", usage=True)
            o["delim"] = arg
        elif flag == "-n":
            o["stats_only"] = True
        elif flag == "-s":
            o["separate"] = True
        elif flag == "-w":
            n, whole = _strtol(arg)
            if not whole:
                raise StatError("Invalid width, not a number.", usage=True)
            if n < 0:
                raise StatError("Unable to move beyond left margin.", usage=True)
            o["width"] = n
    if len(files) > MAX_DS:
        raise StatError("Too many datasets.", usage=True)
    return o, files


def _read_input(path, stdin):
    """(bytes, name) or (StatError, name): ministat opens each file only after reading the ones before."""
    if path is None or path == "-":
        return stdin.read(), "<stdin>"
    try:
        with open(path, "rb") as f:
            return f.read(), path
    except OSError as e:
        return StatError(f"Cannot open {path}: {os.strerror(e.errno)}", code=1), path


def _import_t_quantiles():
    from scipy import special  # noqa: F401  (warmed up while the files are parsed)


def read_sets(inputs, column, delim, need_t):
    """Parse every input in parallel (the C reader and numpy release the GIL) while scipy loads;
    errors are raised in input order, as ministat meets them reading one file after another."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(inputs) + 1) as pool:
        warm = pool.submit(_import_t_quantiles) if need_t else None
        jobs = [None if isinstance(data, StatError) else pool.submit(read_set, data, name, column, delim)
                for data, name in inputs]
        sets = []
        for (data, _), job in zip(inputs, jobs):
            if job is None:
                raise data
            sets.append(job.result())
        if warm:
            warm.result()
    return sets


def main(argv, prog="ministat", stdout=None, stdin=None):
    stdout = stdout or sys.stdout
    stdin = stdin or sys.stdin.buffer
    try:
        o, files = parse_args(argv, isatty=stdout.isatty() if hasattr(stdout, "isatty") else False, prog=prog)
        plot = not o["stats_only"] and not o["suppress_plot"]
        if plot and o["width"] < 2:
            raise StatError("Width must be at least 2 to draw the graph (ministat itself crashes).", usage=True)
        inputs = [_read_input(p, stdin) for p in (files or [None])]
        # scipy is needed for t quantiles with df <= 100 only (stats.ministat_t); warm it up then.
        small = sum(len(d) for d, _ in inputs if not isinstance(d, StatError)) < 200 * 1024
        sets = read_sets(inputs, o["column"], o["delim"],
                         need_t=len(inputs) > 1 and not o["stats_only"] and small)
        stdout.write(render(sets, o["confidence"], o["width"], plot, o["separate"], o["stats_only"]))
        stdout.flush()
        return 0
    except StatError as e:
        if e.usage:
            sys.stderr.write(f"{e}\n{USAGE}\n")
        elif str(e).startswith(("Dataset ",)):
            sys.stderr.write(f"{e}\n")
        else:
            sys.stderr.write(f"{prog}: {e}\n")
        return e.code
