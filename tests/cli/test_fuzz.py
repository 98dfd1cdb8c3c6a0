"""Hostile input, generated: mutated result files through load, show, compare and plot; mutated
`atsd` output through import; arbitrary data and options through stat.  Every input must end in
success or exit 2 with one line on stderr (besides warnings), never a traceback; stat must also
print what Debian's ministat prints wherever ministat itself does not crash.

Hypothesis runs derandomized (the same inputs every run) with small example counts, so the file
takes seconds; INPUTS counts what each property tried (docs/development.md quotes the totals).
"""
import copy
import io
import json
import math
import os
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atsdbench import cli, ministat
from atsdbench.data import results
from conftest import unwrap

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
MINISTAT = shutil.which("ministat")


def fast(examples):
    return settings(max_examples=examples, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


INPUTS = {}


def _count(name):
    INPUTS[name] = INPUTS.get(name, 0) + 1


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    print(f"\ninputs tried: {INPUTS} = {sum(INPUTS.values())}")  # shown with pytest -s


def run_cli(argv, capsysbinary):
    """cli.main in-process: (exit code, stdout, stderr lines that are not warnings).  Binary capture:
    text that came from bytes that were not UTF-8 is written back as those bytes."""
    code = cli.main([str(a) for a in argv])
    out, err = (b.decode("utf-8", "surrogateescape") for b in capsysbinary.readouterr())
    lines = [line for line in unwrap(err).splitlines() if not line.startswith("atsdbench: warning:")]
    return code, out, lines


def assert_clean(code, lines, what):
    assert code in (0, 2), (what, code, lines)
    assert not any("Traceback" in line for line in lines), (what, lines)
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("atsdbench"), (what, lines)
        assert len(lines[0]) < 400, (what, lines[0][:200])


# --- result files -------------------------------------------------------------------------------

def _fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


BASES = {name: _fixture(name) for name in ("before.json", "single_round.json", "small_other.json")}
HOSTILE = [None, True, False, 0, -1, 1, 2, 0.0, -0.0, 1.5, -2.5, 1e-320, 5e-324, 1e308, 2 ** 62, 2 ** 62 + 1,
           2 ** 63, 2 ** 70, 10 ** 30, "", "0", "12", "nan", "caf\udce9", "$\\frac{$", "x" * 300, [], [1], {},
           {"a": 1}, {"40": 1}, {"9999": 1}, {"1": -1}, {"1": 1.5}]
SAMPLE_KEYS = ["round", "rep", "order", "stride_bytes", "warmup", "traced", "ns", "seconds", "calls", "gbps",
               "us_per_call", "ipis", "flushes", "lat_p50_us", "lat_hist", "gpu_touch_ns", "cell", "pages", "new",
               "thp_share", "bystander_idle", "round_t"]
CONFIG_KEYS = ["size", "strides", "rounds", "reps", "pages", "label", "bystanders", "bystander_cpus", "retouch",
               "gpu", "cpu", "axes", "cells", "trace_scope", "trace_error", "round_lag1", "adaptive"]
HOST_KEYS = ["page_size", "tlb_single_page_flush_ceiling", "kernel_release", "arch", "hostname"]
TOP_KEYS = ["format", "schema_version", "complete", "host", "config", "samples", "started"]
DELETE = "<delete>"
values = st.one_of(st.sampled_from(HOSTILE + [DELETE]), st.integers(), st.floats(allow_nan=False,
                   allow_infinity=False), st.text(max_size=8))


class Case(str):
    """A generated file's text, shown in a failure report by the changes that made it."""

    def __new__(cls, text, changes):
        case = super().__new__(cls, text)
        case.changes = changes
        return case

    def __repr__(self):
        return f"Case({self.changes!r})"


def _put(target, key, value, changes=None):
    if changes is not None:
        changes.append((key, value if not isinstance(value, str) or len(value) < 40 else value[:37] + "..."))
    if value == DELETE:
        target.pop(key, None)
    else:
        target[key] = value


@st.composite
def mutated_results(draw):
    name = draw(st.sampled_from(sorted(BASES)))
    data = copy.deepcopy(BASES[name])
    changes = [name]
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["sample", "sample", "column", "config", "host", "top", "shape"]))
        changes.append(where)
        if where == "sample":
            samples = data.get("samples")
            i = draw(st.integers(0, len(samples) - 1)) if isinstance(samples, list) and samples else None
            if i is not None and isinstance(samples[i], dict):
                _put(data["samples"][i], draw(st.sampled_from(SAMPLE_KEYS)), draw(values), changes)
        elif where == "column" and isinstance(data.get("samples"), list):
            key, value = draw(st.sampled_from(SAMPLE_KEYS)), draw(values)
            for s in data["samples"]:
                if isinstance(s, dict):
                    _put(s, key, value, changes)
        elif where == "config" and isinstance(data.get("config"), dict):
            _put(data["config"], draw(st.sampled_from(CONFIG_KEYS)), draw(values), changes)
        elif where == "host" and isinstance(data.get("host"), dict):
            _put(data["host"], draw(st.sampled_from(HOST_KEYS)), draw(values), changes)
        elif where == "top":
            _put(data, draw(st.sampled_from(TOP_KEYS)), draw(values), changes)
        elif where == "shape" and isinstance(data.get("samples"), list):
            shape = draw(st.sampled_from(["empty", "warmup only", "one", "one stride", "duplicate"]))
            changes.append(shape)
            s = data["samples"]
            data["samples"] = {"empty": [], "warmup only": [x for x in s if isinstance(x, dict) and x.get("warmup")],
                               "one": s[:1], "one stride": [x for x in s if isinstance(x, dict)
                                                            and x.get("stride_bytes") == 65536],
                               "duplicate": s + s}[shape]
    text = json.dumps(data)
    if draw(st.integers(0, 9)) == 0:  # now and then, damaged bytes
        cut = draw(st.integers(0, len(text)))
        tail = draw(st.sampled_from(["", "[" * 5000, "\x00", "}", "\udce9"]))
        text = text[:cut] + tail
        changes.append(("cut at", cut, tail[:5]))
    return Case(text, changes)


# Values each field may take (the schema accepts them), at their extremes: files that load must not
# crash any reader.
EXTREME = {
    "samples": {"gbps": [None, 5e-324, 1e-300, 2.0 ** 62, 1, 3.5], "ns": [0, 1, 2 ** 63 - 1],
                "seconds": [0, 9.2e9], "calls": [1, 2 ** 63 - 1], "us_per_call": [0, 9.2e15, 5e-324],
                "round": [0, 1, 2 ** 63 - 1], "rep": [0, 2 ** 63 - 1], "stride_bytes": [1, 3, 12288, 2 ** 62],
                "warmup": [True, False], "traced": [True, False], "order": [None, 0],
                "lat_hist": [None, {}, {"0": 1}, {"999": 2 ** 63 - 1}, {"0": 1, "999": 1}, {"40": 3, "44": 1}],
                "lat_p50_us": [None, 0, 9.2e15], "lat_max_us": [None, 5e-324],
                "ipis": [None, 0, 1, 2 ** 63 - 1], "flushes": [None, 0, 2 ** 63 - 1], "full_flushes": [None, 0, 7],
                "gpu_touch_ns": [None, 0, 2 ** 63 - 1], "cell": [0, 3], "pages": ["thp", "", None], "new": [None, "x"],
                "round_t": [None, 0, 9.2e9], "bystander_share": [None, -1.0, 2.0], "bystander_idle": [True],
                "thp_share": [None, 0, 0.5, 1]},
    "config": {"label": [None, "", "caf\udce9", "$\\frac{$", "\ud800", "x" * 300, "a,b"], "strides": [[1], [2 ** 62]],
               "size": [1, 2 ** 62], "rounds": [1, 2 ** 63 - 1], "reps": [1], "pages": ["", "thp"],
               "bystanders": [0, 2 ** 63 - 1], "bystander_cpus": [[], [0] * 3], "gpu": [None, 0, 2 ** 63 - 1],
               "cpu": [None, 0], "retouch": [True, False], "axes": [{}, {"pages": ["base"]}],
               "cells": [[{"pages": "base"}] * 4],
               "adaptive": [None, {"target": 1}, {"target": 0.5, "half_widths": [
                   {"stride_bytes": 65536, "cell": 9, "half_width_pct": None, "met": False}], "elapsed_s": 12.0,
                   "rounds": 3, "stop_reason": "time"}], "round_lag1": [[], [{"stride_bytes": 1, "rounds": 0,
                                                                            "lag1": None}]]},
    "host": {"page_size": [None, 1, 4096, 2 ** 62], "tlb_single_page_flush_ceiling": [None, 0, 33, 2 ** 62, "unknown"],
             "kernel_release": [None, "", "caf\udce9"], "arch": [None, "x"], "hostname": [None, ""]},
}


@st.composite
def extreme_results(draw):
    name = draw(st.sampled_from(sorted(BASES)))
    data = copy.deepcopy(BASES[name])
    changes = [name]
    for _ in range(draw(st.integers(1, 4))):
        section = draw(st.sampled_from(["samples", "samples", "samples", "config", "host"]))
        key = draw(st.sampled_from(sorted(EXTREME[section])))
        value = draw(st.sampled_from(EXTREME[section][key]))
        changes.append((section, key, value if not isinstance(value, str) else value[:20]))
        if section != "samples":
            data[section][key] = copy.deepcopy(value)
            continue
        which = draw(st.sampled_from(["one", "column", "stride", "round"]))
        changes.append(which)
        pick = draw(st.sampled_from(data["samples"])) if data["samples"] else {}
        for s in data["samples"]:
            if (which == "column" or s is pick or (which == "stride" and s["stride_bytes"] == pick.get("stride_bytes"))
                    or (which == "round" and s["round"] == pick.get("round"))):
                s[key] = copy.deepcopy(value)
    _keep_passes_consistent(data)
    return Case(json.dumps(data), changes)


def _keep_passes_consistent(data):
    """What the schema asks of the samples as a whole, restored after the values were set: each
    stride in config.strides, a cell only where config.cells has it, no pass twice."""
    samples = data["samples"]
    data["config"]["strides"] = sorted(set(data["config"]["strides"]) | {s["stride_bytes"] for s in samples})
    cells = [s["cell"] for s in samples if "cell" in s]
    if cells and len(data["config"].get("cells") or []) <= max(cells):
        data["config"]["cells"] = [{"pages": "base"}] * (max(cells) + 1)
    seen, kept = set(), []
    for s in samples:
        key = (s.get("cell", 0), s["round"], s["rep"], s["stride_bytes"])
        if key not in seen:
            seen.add(key)
            kept.append(s)
    data["samples"] = kept


def _through_show_and_compare(tmp_path, capsysbinary, text, fmt):
    path = tmp_path / "m.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    code, _, lines = run_cli(["show", path], capsysbinary)
    assert_clean(code, lines, "show")
    shown = code
    after = os.path.join(FIXTURES, "after.json")
    for argv in (["compare", path, after, "--format", fmt], ["compare", f"{after},{path}", f"{path},{after}"]):
        code, _, lines = run_cli(argv, capsysbinary)
        assert_clean(code, lines, "compare")
        if shown == 2:
            assert code == 2  # one schema: what show refuses, compare refuses
    return shown


@pytest.mark.slow
@fast(100)
@given(text=mutated_results(), fmt=st.sampled_from(["text", "ministat", "csv"]))
def test_hostile_result_files(tmp_path, capsysbinary, text, fmt):
    _count("result files, hostile")
    _through_show_and_compare(tmp_path, capsysbinary, text, fmt)


@pytest.mark.slow
@fast(80)
@given(text=extreme_results(), fmt=st.sampled_from(["text", "ministat", "csv", "json", "commit"]))
def test_extreme_but_valid_result_files(tmp_path, capsysbinary, text, fmt):
    _count("result files, extreme")
    assert _through_show_and_compare(tmp_path, capsysbinary, text, fmt) == 0


@pytest.mark.slow
@fast(12)
@given(text=st.one_of(mutated_results(), extreme_results()))
def test_result_files_through_plot(tmp_path, capsysbinary, text):
    pytest.importorskip("matplotlib")
    _count("result files, plot")
    path = tmp_path / "m.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    code, _, lines = run_cli(["plot", path, os.path.join(FIXTURES, "after.json"), "-o", tmp_path / "p.png"],
                             capsysbinary)
    assert_clean(code, lines, "plot")
    assert sorted(os.listdir(tmp_path)) == (["m.json"] if code == 2 else ["m.json", "p.png"])
    (tmp_path / "p.png").unlink(missing_ok=True)
    _close_figures()


def _close_figures():
    import matplotlib.pyplot as plt

    plt.close("all")  # cmd_plot leaves its figure to the process's exit


# --- import -------------------------------------------------------------------------------------

HOST = ("host\thostname=h\tarch=x86_64\tkernel_release=6.1.0\tkernel_version=#1\tcpu_model=c\tmmu=unknown"
        "\tonline_cpus=0-1\tpage_size=4096\thugepage_size=2097152\tthp_enabled=always [madvise] never")
CONFIG = ("config\tsize=16777216\tstrides=65536,1048576\trounds=2\treps=1\twarmup=1\twarmup_rounds=0\tpages=base"
          "\tbystanders=0\tcpu=0\tbystander_cpus=\tlatency=1\tretouch=1\tseed=7")
GOOD = ["atsd-output 1", HOST, CONFIG] + [
    f"sample\tround={r}\trep={p}\torder={i}\tstride_bytes={s}\twarmup={int(p == 0)}\tns={900000 + 1000 * i}"
    f"\tcalls={16777216 // s}\tipis=0\tlat_p50_ns=900\tlat_max_ns=999"
    for r in range(2) for p in range(2) for i, s in enumerate((65536, 1048576))] + ["end\tcomplete=1"]
IMPORT_VALUES = ["", "0", "-1", "1", "+1", "1.5", "64K", "a", "9" * 400, "0-99999999999", "3-1", "0-3,8",
                 "18446744073709551616", " 5", "\u0661", "x" * 2000, "1,,2", ",", "4096", "1\x00"]


@st.composite
def mutated_atsd_output(draw):
    lines = list(GOOD)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["value", "value", "value", "drop field", "drop line", "duplicate",
                                       "insert", "truncate"]))
        fields = lines[i].split("\t")
        if action == "value" and len(fields) > 1:
            j = draw(st.integers(1, len(fields) - 1))
            key = fields[j].partition("=")[0]
            fields[j] = f"{key}={draw(st.one_of(st.sampled_from(IMPORT_VALUES), st.text(max_size=6)))}"
            lines[i] = "\t".join(fields)
        elif action == "drop field" and len(fields) > 1:
            del fields[draw(st.integers(1, len(fields) - 1))]
            lines[i] = "\t".join(fields)
        elif action == "drop line":
            del lines[i]
        elif action == "duplicate":
            lines.insert(i, lines[i])
        elif action == "insert":
            lines.insert(i, draw(st.text(max_size=20)))
        elif action == "truncate":
            lines[i] = lines[i][:draw(st.integers(0, len(lines[i])))]
    return "\n".join(lines) + "\n"


@pytest.mark.slow
@fast(150)
@given(text=mutated_atsd_output())
def test_mutated_atsd_output(tmp_path, capsysbinary, text):
    _count("import")
    src, out = tmp_path / "a.txt", tmp_path / "a.json"
    src.write_bytes(text.encode("utf-8", "surrogateescape"))
    code, _, lines = run_cli(["import", src, "-o", out], capsysbinary)
    assert_clean(code, lines, "import")
    if code == 0:  # what import writes, the other commands read
        code, _, lines = run_cli(["show", out], capsysbinary)
        assert_clean(code, lines, "show of an import")
        assert code == 0
    else:
        assert not out.exists()
    out.unlink(missing_ok=True)


# --- stat ---------------------------------------------------------------------------------------

class Out(io.StringIO):
    def isatty(self):
        return False


def ours(argv, cwd, capsys):
    out = Out()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        code = ministat.main(argv, prog="ministat", stdout=out, stdin=io.BytesIO(b""))
    finally:
        os.chdir(here)
    return out.getvalue(), capsys.readouterr().err, code


numbers = st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64),
                    st.sampled_from([0.0, -0.0, 5e-324, 1e-320, 2e-320, 1e308, -1e308, 1.0, 1.0, 2.0]),
                    st.integers(-10 ** 6, 10 ** 6).map(float))
FORMATS = ["%.17g", "%g", "%.3f", "%e", "%a", "%d"]


@st.composite
def stat_case(draw):
    files = []
    for k in range(draw(st.integers(1, 3))):
        data = draw(st.lists(numbers, min_size=0, max_size=12))
        fmt = draw(st.sampled_from(FORMATS))
        sep = draw(st.sampled_from([" ", "\t", ",", " \t "]))
        lines = []
        for v in data:
            text = ("%d" % v if abs(v) < 1e18 else "%g" % v) if fmt == "%d" else (v.hex() if fmt == "%a" else fmt % v)
            extra = draw(st.sampled_from(["", "", sep + "7", " # note", "x", sep + sep + "3"]))
            lines.append(text + extra)
        if draw(st.booleans()):
            lines.insert(0, draw(st.sampled_from(["# header", "", "   ", "1 " * 5000])))
        files.append((f"f{k}", "\n".join(lines) + draw(st.sampled_from(["\n", "", "\r\n"]))))
    options = []
    for _ in range(draw(st.integers(0, 3))):
        flag = draw(st.sampled_from(["-A", "-n", "-s", "-w", "-C", "-c", "-d"]))
        if flag == "-w":
            options += [flag, draw(st.sampled_from(["0", "1", "2", "3", "20", "74", "200", "-1", "x", "4294967296",
                                                    "4294967370", "99999999999999999999"]))]
        elif flag == "-C":
            options += [flag, draw(st.sampled_from(["1", "2", "0", "-1", "4294967297", "99999999999", "1x", ""]))]
        elif flag == "-c":
            options += [flag, draw(st.sampled_from(["80", "95", "99.5", "97", "abc", "", "0x5Fp0"]))]
        elif flag == "-d":
            options += [flag, draw(st.sampled_from([",", " ,", "\u20ac", "\t", ""]))]
        else:
            options.append(flag)
    return files, options


@pytest.mark.slow
@fast(150)
@given(case=stat_case())
def test_stat_matches_ministat_or_fails_cleanly(tmp_path, capsys, case):
    _count("stat")
    files, options = case
    for name, text in files:
        (tmp_path / name).write_text(text)
    argv = options + [name for name, _ in files]
    _same_as_ministat_unless_it_crashes(argv, tmp_path, capsys)


def _same_as_ministat_unless_it_crashes(argv, cwd, capsys):
    out, err, code = ours(argv, cwd, capsys)
    assert code in (0, 1, 2) and "Traceback" not in err
    if code == 2 and "ministat itself crashes" in err:
        assert err.count("\n") == 1
    if MINISTAT:
        p = subprocess.run(["ministat", *argv], executable=MINISTAT, capture_output=True, cwd=cwd)
        # Where ministat dies of a signal (writing outside its plot), a usage error or the plot
        # without the points it could not draw; everywhere else, its output byte for byte.
        if p.returncode >= 0:
            assert (out, err, code) == (p.stdout.decode(), p.stderr.decode(), p.returncode), argv
    return out, err, code


@pytest.mark.slow
@fast(40)
@given(data=st.lists(st.one_of(numbers, st.sampled_from([math.inf, -math.inf, math.nan])), min_size=3,
                     max_size=8),
       options=st.sampled_from([[], ["-A"], ["-n"], ["-s"], ["-w", "0"]]))
def test_stat_non_finite_data(tmp_path, capsys, data, options):
    """ministat itself crashes plotting inf or nan; without a plot, nan lands where its qsort puts it."""
    _count("stat (non-finite)")
    (tmp_path / "d").write_text("".join(f"{v!r}\n" for v in data))
    out, err, code = _same_as_ministat_unless_it_crashes(options + ["d"], tmp_path, capsys)
    assert code == 0 and err == "" and "N           Min" in out


# --- one test per reported defect in compare/plot/CLI paths ---------------------------------------

def test_compare_eight_files_in_ministat_format(capsysbinary):
    before = os.path.join(FIXTURES, "before.json")
    code, _, lines = run_cli(["compare", *[before] * 8, "--format", "ministat"], capsysbinary)
    assert code == 2 and lines == ["atsdbench: ministat draws at most 7 data sets (got 8)"]


def test_compare_a_side_naming_no_file(capsysbinary):
    code, _, lines = run_cli(["compare", ",", os.path.join(FIXTURES, "before.json")], capsysbinary)
    assert code == 2 and lines == ["atsdbench: ',' names no file (a.json,b.json = replicate runs of one side)"]


def test_compare_one_pass_files_in_ministat_format(tmp_path, capsysbinary):
    data = _fixture("single_round.json")
    data["samples"] = [s for s in data["samples"] if s["rep"] < 2]
    (tmp_path / "one.json").write_text(json.dumps(data))
    code, out, lines = run_cli(["compare", tmp_path / "one.json", tmp_path / "one.json", "--format", "ministat"],
                               capsysbinary)
    assert code == 0 and lines == [] and "No difference proven" in out


def test_all_zero_rates_are_refused_at_load(tmp_path, capsysbinary):
    data = _fixture("before.json")
    for s in data["samples"]:
        s["gbps"] = 0
    (tmp_path / "z.json").write_text(json.dumps(data))
    for argv in (["show", tmp_path / "z.json"], ["compare", tmp_path / "z.json", tmp_path / "z.json"]):
        code, _, lines = run_cli(argv, capsysbinary)
        assert code == 2 and lines == [f"atsdbench: {tmp_path / 'z.json'}: samples[0].gbps must be more than 0 "
                                       "(got 0)"]


LABELS = ["caf\udce9", "caf\u00e9", "$\\frac{$", "\ud800"]


def _labelled(tmp_path, label, name):
    data = _fixture("before.json")
    data["config"]["label"] = label
    (tmp_path / name).write_text(json.dumps(data))
    return tmp_path / name


def test_plot_draws_any_label_side_by_side(tmp_path, capsysbinary):
    """Every hostile label at once, a side each: one figure (about a third of a second) for the four."""
    pytest.importorskip("matplotlib")
    files = [_labelled(tmp_path, label, f"l{i}.json") for i, label in enumerate(LABELS)]
    code, out, lines = run_cli(["plot", *files, "-o", tmp_path / "p.png"], capsysbinary)
    assert code == 0 and lines == [] and (tmp_path / "p.png").stat().st_size > 0
    _close_figures()


# each label alone, against another file, in each vector and raster format: breadth
@pytest.mark.slow
@pytest.mark.parametrize("ext", ["png", "svg"])
@pytest.mark.parametrize("label", LABELS)
def test_plot_draws_any_label(tmp_path, capsysbinary, label, ext):
    pytest.importorskip("matplotlib")
    code, out, lines = run_cli(["plot", _labelled(tmp_path, label, "l.json"), os.path.join(FIXTURES, "after.json"),
                                "-o", tmp_path / f"p.{ext}"], capsysbinary)
    assert code == 0 and lines == [] and (tmp_path / f"p.{ext}").stat().st_size > 0
    _close_figures()


def _shell(command, cwd):
    env = dict(os.environ, LC_ALL="C.UTF-8")
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=cwd, env=env)


# compare's JSON into the gone reader is breadth (a process importing pandas and scipy): slow
@pytest.mark.parametrize("argv", [["info"], pytest.param(["compare", "before.json", "after.json", "--format", "json"],
                                                         marks=pytest.mark.slow), ["stat", "-n", "seed_x"]])
@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_a_reader_that_left_is_not_an_error(tmp_path, argv):
    """`atsdbench info | head -1`: a pipe whose reader has gone, before a byte is written."""
    (tmp_path / "seed_x").write_text("1\n2\n3\n")
    read, write = os.pipe()
    os.close(read)
    try:
        p = subprocess.run([sys.executable, "-m", "atsdbench", *argv], stdout=write, stderr=subprocess.PIPE,
                           cwd=FIXTURES if argv[0] == "compare" else tmp_path)
    finally:
        os.close(write)
    assert (p.returncode, p.stderr) == (0, b"")


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_closed_stdout_and_stdin(tmp_path):
    me = f"{sys.executable} -m atsdbench"
    before = os.path.join(FIXTURES, "before.json")
    p = _shell(f"{me} show {before} >&-; echo $?", tmp_path)
    assert (p.stdout, p.stderr) == ("0\n", "")
    p = _shell(f"{me} import - -o x.json <&-; echo $?", tmp_path)
    assert p.stdout == "2\n" and p.stderr == "atsdbench: <stdin> is not atsd output (its first line must be " \
        "'atsd-output 1' or 2)\n"


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_text_that_is_not_utf8_is_printed_as_its_bytes(tmp_path):
    data = _fixture("before.json")
    data["config"]["label"] = "caf\udce9"
    (tmp_path / "l.json").write_text(json.dumps(data))
    p = subprocess.run([sys.executable, "-m", "atsdbench", "compare", "l.json", os.path.join(FIXTURES, "after.json")],
                       capture_output=True, cwd=tmp_path, env=dict(os.environ, LC_ALL="C", PYTHONIOENCODING="utf-8"))
    assert p.returncode == 0 and b"caf\xe9 GB/s" in p.stdout and p.stderr == b""


def test_saved_results_round_trip_through_the_schema(tmp_path):
    """What save writes, load reads: the fixtures rewritten by save load unchanged."""
    for name in BASES:
        r = results.load(os.path.join(FIXTURES, name))
        results.save(r, str(tmp_path / name))
        assert results.load(str(tmp_path / name)).to_dict() == r.to_dict()
