"""`atsdbench stat` against Debian's ministat (20150715): stdout, stderr and exit code must match.

Skipped where ministat is not installed (.ci/run installs it)."""
import io
import shutil
import subprocess
import sys

import numpy as np
import pytest

from atsdbench import ministat
from atsdbench.analysis import stats
from atsdbench.errors import UsageError

MINISTAT = shutil.which("ministat")
needs_ministat = pytest.mark.skipif(MINISTAT is None,
                                    reason="Debian's ministat is not installed (apt-get install ministat)")


class Out(io.StringIO):
    def isatty(self):
        return False


def ours(argv, stdin=b"", capsys=None):
    out = Out()
    code = ministat.main(argv, prog="ministat", stdout=out, stdin=io.BytesIO(stdin))
    err = capsys.readouterr().err if capsys else ""
    return out.getvalue(), err, code


def theirs(argv, stdin=b"", cwd=None):
    p = subprocess.run(["ministat", *argv], executable=MINISTAT, input=stdin, capture_output=True, cwd=cwd)
    return p.stdout.decode(), p.stderr.decode(), p.returncode


def write(tmp_path, name, values, fmt="%.6g", extra=""):
    text = "".join((fmt % v) + "\n" for v in values) + extra
    (tmp_path / name).write_text(text)
    return name


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """The data sets, written once for the module (100,000 numbers among them); the tests only read them."""
    tmp_path = tmp_path_factory.mktemp("ministat")
    rng = np.random.default_rng(20150715)
    files = {
        "normal": write(tmp_path, "normal", rng.normal(100, 10, 40)),
        "normal2": write(tmp_path, "normal2", rng.normal(104, 9, 35)),
        "skewed": write(tmp_path, "skewed", rng.lognormal(3, 1, 50), "%.10g"),
        "ties": write(tmp_path, "ties", rng.integers(1, 6, 30), "%d"),
        "ties2": write(tmp_path, "ties2", rng.integers(2, 7, 30), "%d"),
        "negative": write(tmp_path, "negative", rng.normal(-5, 3, 20)),
        "exp": write(tmp_path, "exp", rng.normal(2e-7, 3e-8, 12), "%e"),
        "three": write(tmp_path, "three", [2302.7, 2525.2, 2351.2]),
        "seed_x": write(tmp_path, "seed_x", [2302.7, 2525.2, 2351.2, 2374.0, 2320.3]),
        "seed_p": write(tmp_path, "seed_p", [2705.1, 2797.2, 2744.5, 2750, 2738.2]),
        "big": write(tmp_path, "big", rng.normal(50, 5, 100_000), "%.9g"),
        "const": write(tmp_path, "const", [0.1] * 7),
        "odd": write(tmp_path, "odd", [1, 2, 3, 4]),
        "comments": "comments",
        "columns": "columns",
        "colon": "colon",
        "bad": "bad",
        "short": write(tmp_path, "short", [1, 2]),
        "syntax": "syntax",
    }
    (tmp_path / "comments").write_text("# header\n1.5\n\n2.5  # trailing\n   3.5\t\n#4\n4.5\r\n5e0\n")
    (tmp_path / "columns").write_text("a,1.5,9\nb,2.5,8\n# c,3,3\nc,3.5,7\nd,4.25,6\nshort\n")
    (tmp_path / "colon").write_text("1:2;3\n4;5:6\n7:8:9\n10;11;12\n")
    (tmp_path / "bad").write_text("1\n2\n3x\n4\n")
    (tmp_path / "syntax").write_text("+3\n.5\n0x1p3\n1e5\n-0\n7.\n")
    return tmp_path, files


@pytest.fixture
def data(data_dir, monkeypatch):
    monkeypatch.chdir(data_dir[0])
    return data_dir[1]


CASES = [
    ["normal"], ["normal", "normal2"], ["seed_x", "seed_p"], ["skewed", "normal"], ["ties", "ties2"],
    ["negative", "normal"], ["exp", "exp"], ["three", "seed_x"], ["big", "big"], ["const"], ["const", "three"],
    ["odd"], ["comments"], ["syntax"], ["normal", "normal2", "skewed", "ties", "negative", "exp", "three"],
    ["ties", "ties2", "ties"], ["negative", "const"],
]
OPTIONS = [[], ["-A"], ["-n"], ["-s"], ["-w", "40"], ["-w", "120"], ["-w", "2"], ["-As"], ["-c", "80"], ["-c", "90"],
           ["-c", "98"], ["-c", "99"], ["-c", "99.5"], ["-c", "95.0"], ["-s", "-w", "60", "-c", "99"]]


# 100,000 numbers a side cost 0.1 s a case: every option on them is breadth (each option is checked on
# the small sets), so the quick set draws them with ministat's defaults only
SAME = [pytest.param(o, c, id=f"{' '.join(o) or 'default'}-{'-'.join(c)}",
                     marks=[pytest.mark.slow] if "big" in c and o else []) for c in CASES for o in OPTIONS]


@needs_ministat
@pytest.mark.parametrize("options, names", SAME)
def test_same_output(data, capsys, names, options):
    argv = options + [data[n] for n in names]
    assert ours(argv, capsys=capsys) == theirs(argv)


@needs_ministat
@pytest.mark.parametrize("argv", [
    ["-C", "2", "-d", ",", "columns"], ["-C", "3", "-d", ",", "columns"], ["-C", "1", "-d", ",", "columns"],
    ["-d", ":;", "colon"], ["-d", ":;", "-C", "2", "colon", "colon"], ["-C", "2", "colon"],
])
def test_columns_and_delimiters(data, capsys, argv):
    assert ours(argv, capsys=capsys) == theirs(argv)


@needs_ministat
@pytest.mark.parametrize("argv", [
    ["bad"], ["normal", "bad"], ["short"], ["normal", "short"], ["missing-file"], ["normal", "missing-file"],
    ["-c", "97", "normal"], ["-c", "abc", "normal"], ["-c", "", "normal"], ["-c", " 95", "normal", "normal2"],
    ["-C", "0", "normal"], ["-C", "x", "normal"], ["-d", "", "normal"],
    ["-w", "-1", "normal"], ["-w", "x", "normal"], ["-q", "normal"], ["normal", "-w"], ["normal"] * 8,
    ["-C", "2", "normal"],
])
def test_errors(data, capsys, argv):
    assert ours(argv, capsys=capsys) == theirs(argv)


@needs_ministat
def test_stdin(data, capsys):
    with open(data["normal"], "rb") as f:
        text = f.read()
    assert ours([], text, capsys) == theirs([], text)
    assert ours(["-", "normal2"], text, capsys) == theirs(["-", "normal2"], text)
    assert ours(["-n"], b"1\n2\n", capsys) == theirs(["-n"], b"1\n2\n")


@needs_ministat
@pytest.mark.core
def test_cli_matches_through_atsdbench_stat(data_dir, cli):
    p = cli("stat", "seed_x", "seed_p", cwd=data_dir[0])
    assert (p.stdout, p.returncode) == theirs(["seed_x", "seed_p"], cwd=data_dir[0])[::2]
    p = cli("stat", "bad", cwd=data_dir[0])
    assert p.returncode == 2 and p.stderr == "atsdbench stat: Invalid data on line 3 in bad\n"


def test_widths_that_crash_ministat_are_one_line(data, capsys):
    for argv in (["-w", "1", "normal", "normal2"], ["-w", "4294967297", "normal"]):  # 4294967297 is int 1
        out, err, code = ours(argv, capsys=capsys)
        assert code == 2 and out == "" and err == "ministat: width 1 cannot hold the graph (ministat itself " \
            "crashes): use -w 0, 2 or more, or -A\n"
    assert ours(["-A", "-w", "1", "normal"], capsys=capsys)[2] == 0  # no graph, nothing to crash on


@pytest.mark.slow  # a real 1.2 GB graph row is allocated before the second one is refused: seconds
def test_a_width_whose_rows_overflow_ministat_s_buffer_is_one_line(data, capsys):
    # ministat's `int` of 99999999999 is 1215752191: two rows of that overflow its buffer size
    out, err, code = ours(["-w", "99999999999", "normal"], capsys=capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "width 1215752191 is too wide" in err


def test_no_memory_for_a_wide_graph_is_one_line(data, capsys, monkeypatch):
    def render(*args, **kwargs):
        raise MemoryError
    monkeypatch.setattr(ministat, "render", render)
    assert ours(["-w", "900000000", "normal"], capsys=capsys) == (
        "", "ministat: width 900000000 is too wide: no memory for the graph (ministat itself crashes)\n", 2)


# Where ministat's C shows: IEEE division, int options, its plot buffer, fgets' 8191-byte reads.
EDGES = {
    "zero_mean": ["-1", "0", "1"], "positive": ["5", "6", "7"], "zeros": ["0", "0", "0"], "ones": ["1", "1", "1"],
    "subnormal": ["1e-320", "2e-320", "3e-320"],
    "quirk_a": ["1", "1", "1", "1", "1", "2"], "quirk_b": ["5", "6", "7"], "quirk_c": ["9", "9", "9", "9", "9", "8"],
    "tall": ["3"] * 9 + ["4"], "nan_data": ["5", "nan", "4", "3", "nan", "2", "1", "0"],
    "signed_zeros": ["-0.0", "0", "-0", "0.0", "1"], "negative_zeros": ["-0", "-0.0", "-0"],
    "zero_runs": ["0", "-0", "2", "-1", "-0", "0.0", "-0", "3", "0"],
    "euro": ["1\u20ac2", "3\u20ac4", "5\u20ac6", "7\u20ac8"],
}
EDGE_CASES = [
    ["zero_mean", "positive"], ["zeros", "ones"], ["subnormal"], ["subnormal", "positive"],
    ["quirk_a", "quirk_b", "quirk_c"], ["-s", "quirk_a", "quirk_b", "quirk_c"], ["quirk_b", "quirk_a", "quirk_c"],
    ["tall", "quirk_b", "quirk_a", "tall"], ["quirk_b", "tall"],
    ["-C", "99999999999", "positive"], ["-C", "4294967297", "positive"], ["-C", "4294967295", "positive"],
    ["-C", "9" * 30, "positive"], ["-w", "4294967296", "positive", "zero_mean"], ["-w", "0", "positive"],
    ["-w", "0", "-s", "positive", "zero_mean"], ["-w", "4294967370", "positive"], ["-w", "9" * 30, "positive"],
    ["-w", "-4294967290", "positive"], ["-d", "\u20ac", "-C", "2", "euro"], ["-d", "\u20ac", "euro"],
    ["-c", "99", "-c", "", "positive", "zero_mean"], ["-c", "99", "-c", "97", "positive", "zero_mean"],
    ["-c", "97", "-c", "99", "positive"], ["-A", "nan_data"], ["-n", "nan_data", "positive"],
    ["-A", "signed_zeros"], ["-A", "negative_zeros"], ["-A", "zero_runs", "negative_zeros"], ["zero_runs"],
    ["long"], ["long", "positive"], ["long_bad"],
]


@pytest.fixture
def edges(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, lines in EDGES.items():
        (tmp_path / name).write_text("".join(v + "\n" for v in lines))
    # 20,000 numbers on one line: ministat's fgets reads it 8191 bytes at a time, each read a line
    (tmp_path / "long").write_text("1 " * 20000 + "\n" + "2 " * 9000 + "\n3\n")
    (tmp_path / "long_bad").write_text("1 " * 4095 + "1x 2\n2\n3\n")  # the second read starts at "x"


@needs_ministat
@pytest.mark.parametrize("argv", EDGE_CASES, ids=[" ".join(a)[:40] for a in EDGE_CASES])
def test_edges_match_ministat(edges, capsys, argv):
    assert ours(argv, capsys=capsys) == theirs(argv)


def test_a_short_set_between_tall_ones_cuts_their_rows(edges, capsys):
    """ministat's plot buffer (see _Buffer): this is what Debian's ministat prints."""
    out, _, code = ours(["quirk_a", "quirk_b", "quirk_c"], capsys=capsys)
    plot = out.splitlines()[3:11]
    assert code == 0 and plot == [
        "+" + "-" * 74 + "+",
        "|" + " " * 71 + "*  |",
        "|" + " " * 71 + "*  |",
        "|" + " " * 71 + "*  |",
        "|" + " " * 71 + "*  |",
        "|  x        x                         +       +        +       *        *  |",
        "||_M_A__|                             |_______A________|           |__A_M_||",
        "+" + "-" * 74 + "+"]


def test_zero_baseline_mean_prints_inf_like_c(edges, capsys):
    out, _, code = ours(["zero_mean", "positive"], capsys=capsys)
    assert code == 0 and "\tinf% +/- inf%\n" in out
    out, _, code = ours(["zeros", "ones"], capsys=capsys)
    assert code == 0 and "\tinf% +/- -nan%\n" in out


def test_long_lines_are_read_in_8191_byte_pieces(edges, capsys):
    out, _, code = ours(["-n", "long"], capsys=capsys)
    # 40,000 bytes: 5 reads (8191 bytes each, whole "1 " pairs split), then 18,000: 3 reads, then "3"
    assert code == 0 and out.splitlines()[2].split()[:2] == ["x", "9"]
    assert ours(["long_bad"], capsys=capsys)[1:] == ("ministat: Invalid data on line 2 in long_bad\n", 2)


def test_more_sets_than_symbols_is_a_usage_error():
    sets = [ministat.Dataset(str(i), [1, 2, 3]) for i in range(8)]
    with pytest.raises(UsageError, match="at most 7 data sets"):
        ministat.render(sets)


def test_small_sets_from_compare_do_not_divide_by_zero():
    one, two = ministat.Dataset("a", [1.0]), ministat.Dataset("b", [2.0])
    assert ministat.relative(two, one, 95.0) == ["No difference proven at 95.0% confidence"]
    assert "nan" in ministat.vitals(ministat.Dataset("e", []), 1)


@pytest.mark.parametrize("redirect,expect", [
    ("<&-", (2, "", "Dataset <stdin> must contain at least 3 data points\n")),  # as ministat
    (">&- <positive", (0, None, "")),
])
@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_closed_stdin_and_stdout(edges, tmp_path, redirect, expect):
    p = subprocess.run(f"{sys.executable} -m atsdbench stat {redirect}", shell=True, capture_output=True,
                       text=True, cwd=tmp_path)
    assert (p.returncode, p.stdout if expect[1] is not None else None, p.stderr) == expect


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_closed_pipe_is_quiet(edges, tmp_path):
    p = subprocess.run(f"{sys.executable} -m atsdbench stat -w 5000 long positive | true; "
                       "echo ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", capture_output=True,
                       text=True, cwd=tmp_path)
    assert p.stdout == "0\n" and p.stderr == ""


def test_t_table_shape():
    assert stats.ministat_t(95, 8) == 2.306 and stats.ministat_t(95, 101) == 1.96
    assert stats.ministat_t(99.5, 1) == 318.313 and stats.ministat_t(99.5, 200) == 3.09
    assert stats.ministat_t(80, 30) == 1.310


def test_plot_layout_alone():
    a = ministat.Dataset("a", [1, 2, 3])
    b = ministat.Dataset("b", [2, 3, 4])
    lines = ministat.plot_lines([a, b], width=10)
    assert lines[0] == lines[-1] == "+" + "-" * 10 + "+"
    assert all(len(line) == 12 for line in lines)
    assert any("*" in line for line in lines)  # overlapping x and + draw as *
    assert sum("A" in line for line in lines) == 1 and "A" in lines[-2]  # one shared bar line
    assert ministat.plot_lines([ministat.Dataset("c", [5, 5, 5])]) == ["[no plot, span is zero width]"]
    separate = ministat.plot_lines([a, b], width=10, separate=True)
    assert len(separate) == len(lines) + 1


def test_strtod_prefixes():
    assert ministat.strtod("0x1p3") == (8.0, True)
    assert ministat.strtod("1e") == (1.0, False)
    assert ministat.strtod(" 12") == (12.0, True)
    assert ministat.strtod("1_0") == (1.0, False)
    assert ministat.strtod("abc") == (0.0, False)


def test_reader_reads_what_strtod_reads():
    """The reader's shortcut for plain decimals (csrc/atsd.c read_decimal) against strtod itself,
    bit for bit, on either side of each of its limits: 19 digits, 2^53, exponents of +-22."""
    import ctypes
    import random
    import struct

    from atsdbench.measure import core

    libc = ctypes.CDLL(None)
    libc.strtod.restype, libc.strtod.argtypes = ctypes.c_double, [ctypes.c_char_p, ctypes.c_void_p]
    rng = random.Random(22)
    tokens = ["0", "-0", "+0", "-0.0", "0e0", "-0e-22", "9007199254740992", "9007199254740993", "1e22", "1e23",
              "9007199254740993e-22", "123456789012345678e-22", "1234567890123456789", "12345678901234567890",
              "5.", ".5", "-.5e+1", "1e0000", "1e00001", "0.1", "4.9406564584124654e-324",
              "1.7976931348623157e308", "0x1p3", "inf", "-nan", "1e-22", "1e-23", "99999999999999999999e-22"]
    for _ in range(20000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 21)))
        if rng.random() < 0.3:
            digits = "90071992547409" + digits[:rng.randint(0, 6)]
        k = rng.randint(0, len(digits))
        token = digits[:k] + "." + digits[k:] if rng.random() < 0.6 else digits
        if rng.random() < 0.5:
            e = rng.randint(-30, 30)
            token += rng.choice("eE") + ("-" if e < 0 else rng.choice(["", "+"])) + str(abs(e)).zfill(rng.randint(1, 5))
        tokens.append(rng.choice(["", "-", "+"]) + token)
    values, bad = core.read_column(("\n".join(tokens) + "\n").encode())
    assert bad is None and len(values) == len(tokens)
    bits = struct.Struct("d").pack
    assert [t for t, v in zip(tokens, values.tolist()) if bits(v) != bits(libc.strtod(t.encode(), None))] == []
    for token in ["1e", "1e+", "1.2.3", "1x", "--1", "+-1", "1e5x", "1e12345x", ".", "-.", "e5", "0x"]:
        assert core.read_column(f"1\n{token}\n".encode()) == (None, 2), token


@pytest.mark.parametrize("argv", [["-h"], ["--help"], ["-n", "-h"]])
def test_atsdbench_stat_help_is_usage_exit_0(argv, capsys):
    # `atsdbench --help` sends the user to `atsdbench stat -h`; ministat itself has no -h (parity kept below)
    out = Out()
    assert ministat.main(argv, prog="atsdbench stat", stdout=out, stdin=io.BytesIO(b"")) == 0
    assert out.getvalue().startswith("Usage: atsdbench stat [-C column]") and not capsys.readouterr().err


def test_plain_ministat_has_no_help_option(capsys):
    out, err, code = ours(["-h"], capsys=capsys)
    assert code == 2 and "invalid option -- 'h'" in err and not out


@needs_ministat
@pytest.mark.parametrize("chunk", [7, 8191, 4096 + 3])
def test_a_stream_read_in_pieces_reads_as_ministat_reads_it(tmp_path, capsys, monkeypatch, chunk):
    """Pieces that end mid-line, lines longer than ministat's 8191-byte reads, a comment and a bad
    token after the first piece: the same output and the same line number as ministat's."""
    rng = np.random.default_rng(1)
    lines = [f"{v:.6g}" for v in rng.normal(10, 2, 3000)]
    lines[100] = " " * 20000 + "5"  # three reads: the number is on the third
    lines[200] = "7 " + "x" * 9000  # column 1 read, then a read of x's alone
    lines[300] = "# a comment"
    good = ("\n".join(lines) + "\n").encode()
    monkeypatch.setattr(ministat, "READ_CHUNK", chunk)
    assert ours([], good, capsys) == theirs([], good)
    bad = good + b"1\n2\nnot-a-number\n3\n"
    assert ours([], bad, capsys) == theirs([], bad)
    assert ours(["-C", "2"], good, capsys) == theirs(["-C", "2"], good)


@needs_ministat
@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_a_pipe_and_process_substitution_are_read(data_dir):
    folder, files = data_dir
    p = subprocess.run(["bash", "-c", f'gzip -c {files["normal"]} > n.gz; '
                        f'"$0" -m atsdbench stat <(zcat n.gz) {files["normal2"]}', sys.executable],
                       capture_output=True, text=True, cwd=folder)
    with open(folder / files["normal"], "rb") as f:
        text = f.read()
    want = subprocess.run(["bash", "-c", f'ministat - {files["normal2"]}'], input=text, capture_output=True,
                          cwd=folder).stdout.decode()
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n", 1)[1] == want.split("\n", 1)[1]  # the first line names the input


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_a_device_is_refused_before_it_is_read():
    from support import memory

    _, small = memory.peak(["stat", "-"], feed="seq 1 5")
    p, _ = memory.peak(["stat", "/dev/zero"], limit=small + (256 << 20))  # a read of it: no OOM killer
    assert p.returncode == 2 and p.stderr == "atsdbench stat: /dev/zero is a character device, not a file or a " \
        "pipe: stat reads only those\n"


@pytest.mark.slow  # a big input through a process, its memory measured
def test_an_endless_stream_stays_in_bounded_memory_and_ends_in_one_line():
    """`yes "" | stat`: no number, no growth; the input cap (1 GiB, 64 MiB here) ends it in one line, also
    under an address-space limit (where a whole read was a MemoryError traceback)."""
    from support import memory

    _, small = memory.peak(["stat", "-"], feed="seq 1 5")
    patch = "from atsdbench.data import inputs; inputs.MAX_INPUT = 64 << 20"
    p, used = memory.peak(["stat", "-"], feed='yes ""', limit=small + (512 << 20), patch=patch)
    assert p.returncode == 2 and p.stderr == "atsdbench stat: <stdin> is over 64 MiB: larger than any input " \
        "atsdbench reads\n"
    assert used - small < 16 << 20, (used, small)
    p, used = memory.peak(["stat", "-"], feed="head -c 300M /dev/zero")  # one endless line of NULs
    assert p.returncode == 2 and "must contain at least 3 data points" in p.stderr
    assert used - small < 16 << 20, (used, small)


@pytest.mark.slow  # a big input through a process, its memory measured
def test_values_take_ministat_s_order_of_memory():
    """2,000,000 numbers: 8 bytes each in ministat; here the values, their doubling array and the
    sorted copy, never the text (about 16 MB of it)."""
    from support import memory

    _, small = memory.peak(["stat", "-A", "-"], feed="seq 1 5")
    p, used = memory.peak(["stat", "-A", "-"], feed="seq 1 2000000")
    assert p.returncode == 0 and "2000000" in p.stdout, p.stderr
    assert used - small < 5 * 8 * 2_000_000, (used, small)


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_a_graph_too_wide_is_refused_before_it_is_allocated():
    from support import memory

    _, small = memory.peak(["stat", "-"], feed="seq 1 5")
    p, used = memory.peak(["stat", "-w", "99999999999", "-"], feed="seq 1 5")
    assert p.returncode == 2 and "is too wide" in p.stderr
    assert used - small < 16 << 20, (used, small)
