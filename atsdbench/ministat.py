"""`atsdbench stat`: FreeBSD's ministat (as Debian ships it, version 20150715), output for output.

Its arithmetic is kept where it shows in the output: sums accumulated in file order (sy, syy),
variance as (syy - sy*sy/n)/(n-1), the median as the upper middle point, Student's t from its table
(stats.ministat_t), C's IEEE division and sqrt (a baseline mean of 0 prints `inf% +/- inf%`), the
plot's truncating casts, its drawing buffer (a shorter data set drawn between taller ones cuts the
rows above it, as ministat's buffer does), its `int` options (-C and -w wrap as C's conversion from
strtol's long does: -w 4294967296 is -w 0).  Where ministat crashes or writes out of bounds, this
prints a usage error or leaves the point undrawn (docs/stat.md).
"""
import getopt
import io
import math
import os
import re
import sys
import threading
import warnings

from .errors import UsageError


def _zen4():
    """An AMD Zen 4: family 25 (Zen 3 and 4) with AVX-512, which only Zen 4 has (first CPU's block
    of /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            head = f.read(16384).split(b"\n\n", 1)[0]
    except OSError:
        return False
    info = dict((k.strip(), v.strip()) for k, _, v in (line.partition(b":") for line in head.splitlines()))
    return (info.get(b"vendor_id") == b"AuthenticAMD" and info.get(b"cpu family") == b"25"
            and b"avx512f" in info.get(b"flags", b"").split())


def _numpy_load_env():
    """What stat sets while numpy loads, where numpy is not loaded yet and the user set none of it:
    one OpenBLAS thread (numpy's OpenBLAS starts one per CPU as it loads, and they spin a while:
    95 ms of CPU on two cores that stat wants for its readers and sorts; it does no linear algebra);
    on AMD Zen 4, numpy's AVX2 kernels instead of its AVX-512 ones (numpy's AVX-512 sort stores with
    a compress instruction that Zen 4 microcodes: 53 ms per 10^6 values there, AVX2's 9 ms;
    numpy/x86-simd-sort#6).  What stat asks of numpy (products, running sums, sorting) is exact
    IEEE arithmetic whichever kernels do it."""
    if "numpy" in sys.modules:
        return {}
    env = {"OPENBLAS_NUM_THREADS": "1"}
    if "NPY_ENABLE_CPU_FEATURES" not in os.environ and _zen4():  # numpy refuses both variables
        env["NPY_DISABLE_CPU_FEATURES"] = "X86_V4 AVX512_ICL AVX512_SPR"
    return {k: v for k, v in env.items() if k not in os.environ}


_NUMPY_ENV = _numpy_load_env()
os.environ.update(_NUMPY_ENV)
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImportWarning)  # a name this numpy does not dispatch: no-op
        import numpy as np
finally:
    for _name in _NUMPY_ENV:  # the environment as it was, for anything stat starts
        del os.environ[_name]

SYMBOL = " x+*%#@O"
_SYMBOLS = SYMBOL.encode("ascii") + bytes(range(8, 256))  # bytes.translate table: byte k to SYMBOL[k]
CONFIDENCES = (80.0, 90.0, 95.0, 98.0, 99.0, 99.5)
MAX_DS = 7
STUDENT_ROWS = 100  # ministat's t table: df 1..100, then infinity
INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1
LONG_MIN, LONG_MAX = -2 ** 63, 2 ** 63 - 1
USAGE = """Usage: ministat [-C column] [-c confidence] [-d delimiter(s)] [-Ans] [-w width] [file [file ...]]
\tconfidence = {80%, 90%, 95%, 98%, 99%, 99.5%}
\t-A : print statistics only. suppress the graph.
\t-C : column number to extract (starts and defaults to 1)
\t-d : delimiter(s) string, default to " \\t"
\t-n : print summary statistics only, no graph/test
\t-s : print avg/median/stddev bars on separate lines
\t-w : width of graph/test output (default 74 or terminal width)"""

def usage(prog="ministat"):
    """ministat's usage text under another name; where that pushes its first line past 100 columns, the
    file operands go on a line of their own."""
    first, rest = USAGE.replace("ministat", prog, 1).split("\n", 1)
    if len(first) > 100:
        head, tail = first.split(" [file", 1)
        first = f"{head}\n{' ' * (len('Usage: ') + len(prog) + 1)}[file{tail}"
    return f"{first}\n{rest}"


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


# x86-64's default NaN, what 0.0/0.0 and sqrt(-1) give in C: printf shows it as "-nan".
C_NAN = -math.nan


def cdiv(a, b):
    """a / b as C divides doubles: by zero gives +-inf, or NaN for 0/0 (Python would raise)."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return C_NAN
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def csqrt(x):
    return C_NAN if x < 0 else math.sqrt(x)


def _qsort(values):
    """The order glibc's qsort leaves with ministat's comparison (-1, 1, or 0 when neither is less):
    a stable merge sort, so 0 and -0 keep their input order.  With NaN, which compares equal to
    everything, the order is whatever that merge sort makes of it: replayed here step by step.

    Without NaN only 0 and -0 compare equal and differ, so any sort gives the stable order but for
    the run of zeros: numpy's quicksort (about half the time of its stable sort), then that run
    rewritten with the zeros in input order."""
    out = np.sort(values)
    if len(out) and np.isnan(out[-1]):  # numpy sorts NaN last: there is one if the last is
        return _qsort_nan(values)
    lo, hi = np.searchsorted(out, 0.0, side="left"), np.searchsorted(out, 0.0, side="right")
    if hi > lo:
        out[lo:hi] = values[values == 0]
    return out


def _qsort_nan(values):
    """glibc's merge sort, step by step (values holding NaN)."""
    out = values.tolist()

    def msort(lo, n):  # glibc stdlib/msort.c, msort_with_tmp
        if n <= 1:
            return
        n1 = n // 2
        msort(lo, n1)
        msort(lo + n1, n - n1)
        a, b, merged = out[lo:lo + n1], out[lo + n1:lo + n], []
        i = j = 0
        while i < len(a) and j < len(b):
            if not a[i] > b[j]:  # cmp(a, b) <= 0
                merged.append(a[i])
                i += 1
            else:
                merged.append(b[j])
                j += 1
        out[lo:lo + n] = merged + a[i:] + b[j:]

    msort(0, len(out))
    return np.array(out, dtype=np.float64)


class Dataset:
    """Points sorted ascending, with ministat's running sums in input order."""

    def __init__(self, name, values):
        values = np.asarray(values, dtype=np.float64)
        self.name = name
        self.n = len(values)
        # cumsum adds left to right, as ministat's loop does; np.sum would pair terms and round differently.
        self.sy = self.syy = 0.0
        if self.n:
            with np.errstate(over="ignore", invalid="ignore"):  # C sums overflow to inf without a word
                # ministat's sums start at 0.0: cumsum starts at the first value, and only a sum of
                # -0.0 alone tells them apart (0.0 + -0.0 is 0.0), which adding 0.0 settles.
                run = np.multiply(values, values)  # one scratch array for both running sums
                self.syy = float(np.cumsum(run, out=run)[-1]) + 0.0
                self.sy = float(np.cumsum(values, out=run)[-1]) + 0.0
        self.values = _qsort(values)

    def min(self):
        return float(self.values[0]) if self.n else math.nan

    def max(self):
        return float(self.values[-1]) if self.n else math.nan

    def avg(self):
        return cdiv(self.sy, self.n)

    def median(self):
        return float(self.values[self.n // 2]) if self.n else math.nan

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


# What stat reads of an input at a time: the memory is this, the values (8 bytes each, in an array
# that doubles as ministat's does) and their sorted copy, whatever the input's size or line lengths.
READ_CHUNK = 1 << 20


def _values(stream, name, column, delim):
    """The numbers of a binary stream as ministat's ReadSet reads them, READ_CHUNK at a time: each
    piece handed to the C reader ends where one of its fgets reads ends (a newline, or 8191 bytes
    of a longer line), so the reads are those of the whole input; at most inputs.MAX_INPUT bytes."""
    from .data import inputs
    from .measure import core

    limit = inputs.MAX_INPUT
    out, n, lines, got, carry, reads = np.empty(1024, dtype=np.float64), 0, 0, 0, b"", []
    while True:
        chunk = stream.read(READ_CHUNK)
        got += len(chunk or b"")
        if got > limit:
            raise StatError(f"{name} is over {limit >> 20} MiB: larger than any input atsdbench reads")
        data = carry + chunk if carry else chunk
        if not chunk:
            piece, carry = data, b""
        else:
            cut = data.rfind(b"\n") + 1 or len(data) // 8191 * 8191
            piece, carry = (data, b"") if cut == len(data) else (data[:cut], data[cut:])
        if piece:
            values, bad_line = core.read_column(piece, column, delim, reads)
            if values is None:
                raise StatError(f"Invalid data on line {lines + bad_line} in {name}", code=2)
            lines += reads.pop()
            if n + len(values) > len(out):
                grown = np.empty(max(2 * len(out), n + len(values)), dtype=np.float64)
                grown[:n] = out[:n]
                out = grown
            out[n:n + len(values)] = values
            n += len(values)
        if not chunk:
            return out[:n]


def read_set(data, name, column=1, delim=" \t"):
    """Parse one input (bytes, or a binary stream read to its end) as ministat's ReadSet does (in C:
    csrc/atsd_column.c); a Dataset or StatError."""
    import io

    values = _values(io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data, name, column, delim)
    if len(values) < 3:
        raise StatError(f"Dataset {name} must contain at least 3 data points", code=2)
    return Dataset(name, values)


def vitals_head():
    return "    N           Min           Max        Median           Avg        Stddev"


def vitals(ds, flag):
    return "%c %3d %s %s %s %s %s" % (SYMBOL[flag], ds.n, *(cfmt("%13.8g", v) for v in (
        ds.min(), ds.max(), ds.median(), ds.avg(), ds.stddev())))


def relative(ds, rs, confidence):
    from .analysis.stats import ministat_t

    i = ds.n + rs.n - 2
    t = ministat_t(confidence, i if i > 0 else STUDENT_ROWS + 1)  # row 0 of its table is df = infinity
    spool = csqrt(cdiv((ds.n - 1) * ds.var() + (rs.n - 1) * rs.var(), ds.n + rs.n - 2))
    s = spool * csqrt(cdiv(1.0, ds.n) + cdiv(1.0, rs.n))
    d = ds.avg() - rs.avg()
    e = t * s
    if abs(d) > e:
        return [f"Difference at {confidence:.1f}% confidence",
                f"\t{cfmt('%g', d)} +/- {cfmt('%g', e)}",
                f"\t{cfmt('%g', cdiv(d * 100, rs.avg()))}% +/- {cfmt('%g', cdiv(e * 100, rs.avg()))}%",
                f"\t(Student's t, pooled s = {cfmt('%g', spool)})"]
    return [f"No difference proven at {confidence:.1f}% confidence"]


def _cint(x):
    """C's (int) cast of a double on x86-64: truncation toward zero; NaN, infinities and values
    beyond int give INT_MIN (cvttsd2si's "integer indefinite")."""
    if not math.isfinite(x) or not INT_MIN <= x < INT_MAX + 1:
        return INT_MIN
    return int(x)


def _cint_wrap(n):
    """C's conversion of a long (strtol's result, already clamped to long) to int: modulo 2^32."""
    return (n - INT_MIN) % 2 ** 32 + INT_MIN


class _Buffer:
    """ministat's plot buffer: `alloc` bytes of which rows [0, height) are shown.  It grows with
    realloc and zeroes only the new rows (from the current height up), and a data set sets the height
    to its own, taller or not: a short set drawn between taller ones hides, then loses, their upper
    rows.  Writes outside the allocation (ministat's out-of-bounds writes) are dropped."""

    def __init__(self, width):
        self.width, self.height, self.data = width, 0, bytearray()

    def set_height(self, m):
        if m > self.height:
            if m * self.width > INT_MAX:  # pl->width * m overflows int: ministat crashes
                raise StatError(f"width {self.width} is too wide: {m} rows of it pass an int of bytes "
                                "(ministat crashes)")
            size = m * self.width
            del self.data[size:]
            self.data.extend(bytes(size - len(self.data)))
            self.data[self.height * self.width:size] = bytes((m - self.height) * self.width)
        self.height = m

    def mark(self, rows, xs, val):
        """ORs val into (row, x) for each point, as ministat's data[row * width + x] |= val: an x
        outside the row lands in a neighbouring one; offsets outside the allocation are dropped."""
        at = rows * self.width + xs
        at = at[(at >= 0) & (at < len(self.data))]
        if len(at):
            view = np.frombuffer(self.data, dtype=np.uint8)
            view[at] |= val  # points sharing an offset OR the same val: once is the same as twice
            del view  # the bytearray can grow again

    def rows(self):
        """Rows height-1 down to 1, as DumpPlot prints them (a byte of 8 or more, which seven sets
        cannot OR together, as its hex)."""
        w, shown = self.width, bytes(self.data[:self.height * self.width])
        if not shown.translate(None, bytes(range(8))):  # every byte is 0-7: a symbol
            text = shown.translate(_SYMBOLS).decode("ascii")
            return [text[r * w:(r + 1) * w] for r in range(self.height - 1, 0, -1)]
        return ["".join(SYMBOL[k] if k < 8 else "[%02x]" % k for k in shown[r * w:(r + 1) * w])
                for r in range(self.height - 1, 0, -1)]


def _columns(points, x0, dx):
    """Each point's column, _cint(cdiv(p - x0, dx)), for all points at once: numpy's IEEE division
    differs from cdiv only in a NaN's sign, and _cint makes every NaN INT_MIN."""
    with np.errstate(all="ignore"):
        q = (np.asarray(points, dtype=np.float64) - x0) / dx
        inside = np.isfinite(q) & (q >= INT_MIN) & (q < INT_MAX + 1.0)
    return np.where(inside, np.trunc(q), INT_MIN).astype(np.int64)


def _places(xs):
    """ministat's two passes over a set's columns in PlotSet: (each point's row, the tallest run m).
    A point's row is its place in its run of equal columns, from 1; the second pass starts with the
    first pass's last j and i = -1, so a first run in column -1 (-w 0 draws leftwards) continues
    from there."""
    if not len(xs):
        return xs, 1
    change = np.empty(len(xs), dtype=bool)
    change[0] = True
    np.not_equal(xs[1:], xs[:-1], out=change[1:])
    at = np.arange(len(xs), dtype=np.int64)
    place = at - np.maximum.accumulate(np.where(change, at, 0)) + 1
    m, last = int(place.max()), int(place[-1])
    if xs[0] == -1:
        first = np.argmax(change[1:]) + 1 if change[1:].any() else len(xs)
        place[:first] += last
    return place, m


def _put(bar, x, char):
    if 0 <= x < len(bar):
        bar[x] = char


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
    dx = cdiv(span, width - 1.0)
    x0 = lo - .5 * dx
    buf = _Buffer(width)
    placed = [(xs, *_places(xs)) for xs in (_columns(ds.values, x0, dx) for ds in sets)]
    for _, _, m in placed:  # the graph's size checked before anything of it is allocated
        if (m + 1) * width > INT_MAX:
            buf.set_height(m + 1)
    bars = [None] * len(sets)
    for val, (ds, (xs, rows, m)) in enumerate(zip(sets, placed), 1):
        bar = val - 1 if separate else 0
        if bars[bar] is None:
            bars[bar] = bytearray(width)
        buf.set_height(m + 1)
        buf.mark(rows, xs, val)
        sd = ds.stddev()
        b = bars[bar]
        if not math.isnan(sd):
            x = _cint(cdiv((ds.avg() - sd) - x0, dx))
            m = _cint(cdiv((ds.avg() + sd) - x0, dx))
            _put(b, m, ord("|"))
            _put(b, x, ord("|"))
            for k in range(max(x + 1, 0), min(m, width)):  # beyond the bar: ministat's stray writes
                if b[k] == 0:
                    b[k] = ord("_")
        _put(b, _cint(cdiv(ds.median() - x0, dx)), ord("M"))
        _put(b, _cint(cdiv(ds.avg() - x0, dx)), ord("A"))
    edge = "+" + "-" * width + "+"
    lines = [edge] + ["|" + row + "|" for row in buf.rows()]
    for b in bars:
        if b is not None:
            lines.append("|" + b.replace(b"\0", b" ").decode() + "|")
    lines.append(edge)
    return lines


def render(sets, confidence=95.0, width=74, plot=True, separate=False, stats_only=False):
    """The whole report (as ministat prints it after reading), ending with a newline."""
    if len(sets) > MAX_DS:
        raise UsageError(f"ministat draws at most {MAX_DS} data sets (got {len(sets)})")
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
    """(value, whole text used) as strtol(3) in base 10: saturating at the long's limits."""
    m = re.match(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", text)
    if not m:
        return 0, text == ""
    digits = m.group(1).lstrip("+-").lstrip("0")
    if len(digits) > len(str(LONG_MAX)):  # not converted: it is out of range whatever it is
        value = LONG_MIN if m.group(1).startswith("-") else LONG_MAX
    else:
        value = min(max(int(m.group(1)), LONG_MIN), LONG_MAX)
    return value, m.end() == len(text)


def _int_option(text):
    """An `int` option as ministat reads it: strtol's long, converted to int."""
    n, whole = _strtol(text)
    return _cint_wrap(n), whole


def _asks_help(argv):
    """-h or --help among the options (before a "--"; after one they are file names)."""
    for a in argv:
        if a == "--":
            return False
        if a in ("-h", "--help"):
            return True
    return False


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
            o["width"] = _int_option(env["COLUMNS"])[0]  # atoi
        else:
            try:
                o["width"] = os.get_terminal_size(sys.stdout.fileno()).columns - 2
            except OSError:
                pass
    confidence_set = False
    for flag, arg in opts:
        if flag == "-A":
            o["suppress_plot"] = True
        elif flag == "-C":
            n, whole = _int_option(arg)
            if not whole:
                raise StatError("Invalid column number.", usage=True)
            if n <= 0:
                raise StatError("Column number should be positive.", usage=True)
            o["column"] = n
        elif flag == "-c":
            value, whole = strtod(arg) if arg else (0.0, True)  # strtod("") is 0, all of it used
            if not whole:
                raise StatError("Not a floating point number", usage=True)
            if value in CONFIDENCES:
                o["confidence"], confidence_set = value, True
            elif not confidence_set:  # ministat keeps an earlier -c's level: its ci is set once found
                raise StatError("No support for confidence level", usage=True)
        elif flag == "-d":
            if arg == "":
                raise StatError("Can't use empty delimiter string", usage=True)
            # strtok_r splits on bytes: "-d €" is three delimiters, as the C library sees argv.
            o["delim"] = os.fsencode(arg).decode("latin-1")
        elif flag == "-n":
            o["stats_only"] = True
        elif flag == "-s":
            o["separate"] = True
        elif flag == "-w":
            n, whole = _int_option(arg)
            if not whole:
                raise StatError("Invalid width, not a number.", usage=True)
            if n < 0:
                raise StatError("Unable to move beyond left margin.", usage=True)
            o["width"] = n
    if len(files) > MAX_DS:
        raise StatError("Too many datasets.", usage=True)
    return o, files


def _open_input(path, stdin, stdin_taken):
    """(binary stream, name, its size where known) or (StatError, name, 0): a regular file, a pipe
    (`<(zcat data.gz)`) or stdin; a device, a socket or a directory is refused before it is read.  A
    second "-" reads an empty stdin, as ministat's second read of it does."""
    if path is None or path == "-":
        if stdin_taken:
            import io

            return io.BytesIO(b""), "<stdin>", 0
        stdin_taken.append(True)
        return stdin, "<stdin>", 0
    import stat

    from .data import inputs

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO opens without a writer
        st = os.fstat(fd)
    except OSError as e:
        return StatError(f"Cannot open {path}: {os.strerror(e.errno)}", code=1), path, 0
    if stat.S_ISDIR(st.st_mode):
        os.close(fd)
        return StatError(f"Cannot open {path}: {os.strerror(21)}", code=1), path, 0  # EISDIR, as fgets says
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        os.close(fd)
        kind = next((name for test, name in inputs.KINDS if test(st.st_mode)), "not a file")
        return StatError(f"{path} is {kind}, not a file or a pipe: stat reads only those"), path, 0
    if st.st_size > inputs.MAX_INPUT:
        os.close(fd)
        return StatError(f"{path} is over {inputs.MAX_INPUT >> 20} MiB: larger than any input atsdbench "
                         "reads"), path, 0
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb", buffering=0), path, st.st_size


def _import_t_quantiles():
    from scipy import special  # noqa: F401  (warmed up while the files are parsed)


class _Job(threading.Thread):
    """One call in a thread of its own; result() waits, then returns or raises what the call did.
    (A plain thread: concurrent.futures and the logging it imports are 5 ms of stat's start-up.)"""

    def __init__(self, fn, *args):
        super().__init__(name=f"stat-{fn.__name__}")
        self.fn, self.args, self.value, self.error = fn, args, None, None
        self.start()

    def run(self):
        try:
            self.value = self.fn(*self.args)
        except BaseException as e:  # handed to the caller of result()
            self.error = e

    def result(self):
        self.join()
        if self.error is not None:
            raise self.error
        return self.value


def read_sets(inputs, column, delim, need_t):
    """Parse every input in parallel (the C reader and numpy release the GIL) while scipy loads;
    errors are raised in input order, as ministat meets them reading one file after another."""
    warm = _Job(_import_t_quantiles) if need_t else None
    jobs = [None if isinstance(data, StatError) else _Job(read_set, data, name, column, delim)
            for data, name, _ in inputs]
    try:
        sets = []
        for (data, _, _), job in zip(inputs, jobs):
            if job is None:
                raise data
            sets.append(job.result())
        if warm:
            warm.result()
        return sets
    finally:  # every thread done before stat goes on, whatever it raises
        for job in (warm, *jobs):
            if job is not None:
                job.join()
        for data, _, _ in inputs:
            if hasattr(data, "close") and isinstance(data, io.FileIO):
                data.close()


def main(argv, prog="ministat", stdout=None, stdin=None):
    stdout = stdout or sys.stdout
    stdin = stdin or sys.stdin.buffer
    if prog != "ministat" and _asks_help(argv):  # ministat has no -h; `atsdbench --help` sends users here
        stdout.write(usage(prog) + "\n")
        stdout.flush()
        return 0
    try:
        o, files = parse_args(argv, isatty=stdout.isatty() if hasattr(stdout, "isatty") else False, prog=prog)
        plot = not o["stats_only"] and not o["suppress_plot"]
        taken = []
        inputs = [_open_input(p, stdin, taken) for p in (files or [None])]
        # scipy is needed for t quantiles with df <= 100 only (stats.ministat_t); warm it up then
        # (a pipe's size is unknown: warmed up).
        small = sum(size for d, _, size in inputs if not isinstance(d, StatError)) < 200 * 1024
        sets = read_sets(inputs, o["column"], o["delim"],
                         need_t=len(inputs) > 1 and not o["stats_only"] and small)
        if plot and o["width"] == 1:  # its scale divides by width - 1; -w 0 draws an empty frame
            raise StatError("width 1 cannot hold the graph (ministat itself crashes): use -w 0, 2 or more, or -A")
        try:
            text = render(sets, o["confidence"], o["width"], plot, o["separate"], o["stats_only"])
        except MemoryError:
            raise StatError(f"width {o['width']} is too wide: no memory for the graph "
                            "(ministat itself crashes)") from None
        stdout.write(text)
        stdout.flush()
        return 0
    except MemoryError:  # the values themselves do not fit (8 bytes each, twice while sorted)
        sys.stderr.write(f"{prog}: not enough memory for the data\n")
        return 2
    except StatError as e:
        if e.usage:
            sys.stderr.write(f"{e}\n{USAGE}\n")
        elif str(e).startswith(("Dataset ",)):
            sys.stderr.write(f"{e}\n")
        else:
            sys.stderr.write(f"{prog}: {e}\n")
        return e.code
