"""Every line a person reads fits 100 columns, on the paths a line really takes: argparse's own
refusals, the core's sentences (tracefs), a wrapped library's error (dlopen of libcuda), the
'wrote PATH' lines, atsd's help and its refusals.  tests/meta/test_raise_sites.py reads the source;
this runs the command line with each failure forced, so a message built elsewhere (a constant, the
C core, argparse, an exception's text) is measured as printed."""
import os
import re
import subprocess

import pytest

from atsdbench._cli import WIDTH


def _fits(text, paths=()):
    """Every line within WIDTH, or a path alone on its line (kept whole, as _cli.wrapped keeps it); a
    path the user gave, longer than any line, counts as a short one."""
    for line in text.splitlines():
        short = line
        for path in (p for p in map(str, paths) if len(p) > len("results/before.json")):
            short = short.replace(path, "results/before.json")
        assert len(short) <= WIDTH or re.fullmatch(r" *\S+", line), (len(line), line)


def _refused(p, paths=()):
    """A refusal: exit 2, nothing on stdout, one line of its own (argparse's after one usage line)."""
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stderr)
    _fits(p.stderr, paths)
    said = [line for line in p.stderr.splitlines() if not line.startswith("usage: ")]
    assert len(said) == 1, p.stderr
    return said[0]


@pytest.mark.parametrize("args, expect", [
    (["rn"], "no command 'rn' (did you mean run?)"),
    (["zzzzzzzzzz"], "no command 'zzzzzzzzzz' (atsdbench --help lists them)"),
    (["run", "--sise", "4"], "run: no option '--sise' (did you mean --size?)"),
    (["run", "--stride=64K"], "run: no option '--stride' (did you mean --strides?)"),
    (["show", "a.json", "--formt", "csv"], "show: no option '--formt' (did you mean --format?)"),
    (["show", "a.json", "--unit", "rnd"], "--unit: no choice 'rnd' (did you mean round?)"),
    (["show", "a.json", "--unit", "x"], "--unit: no choice 'x' (one of round, pass)"),
    (["show", "a.json", "b.json"], "show: unexpected argument 'b.json'"),
    (["campaign", "stauts"], "no action 'stauts' (did you mean status?)"),
    (["campaign", "init", "d", "--boot", "3"], "campaign init: no option '--boot' (did you mean --boots?)"),
    (["--" + "x" * 300], "no option '--" + "x" * 25),
])
def test_argparse_refusals_are_a_usage_line_and_one_line(cli, args, expect):
    p = cli(*args)
    said = _refused(p)
    assert said.startswith("atsdbench: ") and expect in said, said
    usage = p.stderr.splitlines()[0]
    assert usage.startswith("usage: atsdbench") and "--help" in usage, p.stderr


def test_every_help_fits(cli):
    from atsdbench import cli as cli_module

    for name, *_ in cli_module._subcommands():
        if name != "stat":
            p = cli(name, "--help")
            assert p.returncode == 0, p.stderr
            _fits(p.stdout)
    _fits(cli("--help").stdout)


def test_gpu_without_its_library_says_the_cause_in_one_line(cli, tmp_path):
    for lib in ("libcuda.so.1", str(tmp_path / ("d" * 60) / "libcuda.so.1")):
        said = _refused(cli("run", "--gpu", "--size", "16M", "-o", tmp_path / "g.json",
                            env={**os.environ, "ATSDBENCH_LIBCUDA": lib}), paths=[lib])
        # the dlopen's cause, not cffi's and ctypes' sentences around it
        assert said.startswith(f"atsdbench: --gpu: cannot load {lib}") and "ctypes" not in said, said
        assert "cannot open shared object file" in said or "No such file" in said, said
    assert not (tmp_path / "g.json").exists()


def test_ceiling_without_debugfs_fits(cli, tmp_path, monkeypatch):
    from atsdbench.measure import ceiling

    locate = ceiling.locate
    monkeypatch.setattr(ceiling, "locate", lambda *a, **k: locate((str(tmp_path / "absent"),),
                                                                  debugfs=str(tmp_path)))
    said = _refused(cli("run", "--ceiling", "33", "--size", "16M", "-o", tmp_path / "c.json"))
    assert said == f"atsdbench: --ceiling: {ceiling.UNMOUNTED}"


@pytest.mark.parametrize("option", ["--breakdown", "--trace"])
def test_tracefs_refusals_fit(cli, tmp_path, monkeypatch, option):
    from atsdbench.measure import breakdown, core, counters

    # tracefs absent whatever this machine has mounted (root with tracefs is a kernel developer's
    # machine, and CI's): a pass that starts would measure, so one fails the test at once instead
    monkeypatch.setattr(core, "tracefs_root", lambda *a: None)
    monkeypatch.setattr(counters, "tracefs_root", lambda *a: None)

    def measured(*a, **k):
        raise AssertionError("it measured: tracefs was found after all")

    monkeypatch.setattr(core, "cell_passes", measured)
    said = _refused(cli("run", option, "--size", "16M", "-o", tmp_path / "t.json"))
    assert said.startswith(f"atsdbench: {option}: ") and "tracefs" in said, said
    assert breakdown  # imported: the refusal is its own


def test_the_cores_tracefs_sentences_fit_after_every_prefix():
    """Each case the C sentence has, for the longest event named and the longest prefix put before it
    (run's and atsd's refusals, the table's note)."""
    from atsdbench.measure import core

    events = ["tlb:tlb_flush", "powerpc:tlbie", "kprobes"] + \
        [f"syscalls:sys_enter_{op}" for op in ("mprotect", "madvise", "munmap")]
    for euid in (0, 1000):
        for mounted in (False, True):
            for event in events:
                text = core.tracepoint_problem(event, euid, mounted)
                for prefix in ("atsdbench: --breakdown: ", "atsd: --breakdown: ", "no flush counts: ",
                               "atsdbench: --trace: "):
                    assert len(prefix + text) <= WIDTH, prefix + text


def test_a_long_path_alone_is_one_line():
    from atsdbench._cli import wrote

    path = "/" + "p" * 120 + "/r.json"
    assert wrote(path) == f"wrote {path}" and wrote(path, " ") == f"wrote {path}"
    assert wrote(path, " (run 1 of 2)") == f"wrote {path}\n  (run 1 of 2)"


def test_wrote_lines_of_a_long_path_fit(cli, fixtures, tmp_path):
    folder = tmp_path / ("x" * 70) / ("y" * 40)
    folder.mkdir(parents=True)
    p = cli("import", "--table", fixtures / "npu_table.txt", "--page-size", "64K", "-o", folder / "t.json")
    assert p.returncode == 0, p.stderr
    # the path whole beside "wrote" (pasteable), what follows it wrapped under it
    assert f"wrote {folder / 't.json'}:\n  column 'Before'" in p.stdout, p.stdout
    _fits(p.stdout, paths=[folder / "t.json", folder / "t-after.json"])


@pytest.mark.live  # builds atsd (the atsd fixture)
def test_atsd_help_and_refusals_fit(atsd, tmp_path):
    help_ = subprocess.run([atsd, "--help"], capture_output=True, text=True)
    assert help_.returncode == 0 and "--size" in help_.stdout
    _fits(help_.stdout)
    for args, said in ((["--bogus"], "atsd: no option --bogus (atsd --help lists the options)"),
                       (["--sise=4M"], "atsd: no option --sise (atsd --help lists the options)"),
                       (["-x"], "atsd: no option -x (atsd --help lists the options)"),
                       (["--size"], "atsd: no value for --size (atsd --help lists the options)")):
        p = subprocess.run([atsd, *args], capture_output=True, text=True)
        assert p.returncode == 2 and p.stdout == "" and p.stderr == said + "\n", (args, p.stderr)
    folder = tmp_path / ("z" * 70) / ("w" * 40)
    folder.mkdir(parents=True)
    p = subprocess.run([atsd, "--size", "4M", "--strides", "1M", "--rounds", "1", "--reps", "1", "-o",
                        str(folder / "o.txt")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert f"wrote {folder / 'o.txt'}\n  (atsdbench import {folder / 'o.txt'})" in p.stdout, p.stdout
    _fits(p.stdout, paths=[folder / "o.txt"])
    _fits(p.stderr)


def test_a_core_that_does_not_load_says_the_cause_not_the_loaders_sentence():
    from atsdbench._cli import cause
    from atsdbench.errors import CoreMissing

    error = ImportError("/very/long/site-packages/atsdbench/_atsd.abi3.so: undefined symbol: atsd_plan_cells. "
                        " Additionally, something else entirely")
    said = str(CoreMissing.explain("/opt/atsdbench", cause(error, 50)))  # as measure/core gives it
    assert "(undefined symbol: atsd_plan_cells) in /opt/atsdbench" in said and "Additionally" not in said, said
