"""atsdbench/_cli.py: warnings wrapped to 100 columns with a hanging indent, on stderr and under run's table;
compare's warnings name the sides by their (short) labels, not by every file."""
import json

import pytest

import atsdbench
from atsdbench import _cli
from atsdbench.render import tables
from conftest import unwrap

LONG = ("64K: round means are autocorrelated (lag-1 0.30 over 5 rounds; independent rounds exceed 0.29 5% of "
        "the time): consecutive rounds share the machine's state, so the CI is too narrow; take more of them")


def test_a_long_warning_wraps_under_its_first_word(capsys):
    _cli.warn(LONG)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) > 1 and all(len(line) <= _cli.WIDTH for line in lines)
    assert lines[0].startswith("atsdbench: warning: 64K:") and all(line.startswith("  ") for line in lines[1:])
    assert unwrap(err) == f"atsdbench: warning: {LONG}\n"


def test_a_short_warning_is_one_line(capsys):
    _cli.warn("short")
    assert capsys.readouterr().err == "atsdbench: warning: short\n"


def test_the_warnings_under_run_s_table_are_wrapped(fixtures):
    r = atsdbench.load(str(fixtures / "before.json"))
    r.config["round_lag1"] = [{"stride_bytes": s, "lag1": 0.9, "rounds": 5} for s in (65536, 1 << 20)]
    lines = tables.notes(r)
    warned = [i for i, line in enumerate(lines) if line.startswith("warning: 64K: round means are autocorrelated")]
    assert warned and "\n  " in lines[warned[0]]
    assert all(len(x) <= _cli.WIDTH for line in lines for x in line.splitlines())


def _side(fixtures, tmp_path, source, names, disturbed=False):
    data = json.loads((fixtures / source).read_text())
    data["config"]["label"] = None  # the same kernel and no label: the sides are named by their files
    data["host"]["kernel_release"] = "6.12.0"
    for s in data["samples"]:
        s["disturbed"] = disturbed and not s["warmup"]
    for k, name in enumerate(names):  # each a run of its own (copies of one run are one observation)
        for sample in data["samples"]:
            sample["retaken"] = k
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    return ",".join(str(tmp_path / f"{n}.json") for n in names)


def test_replicate_lists_are_named_first_to_last_and_warnings_use_those_names(cli, fixtures, tmp_path):
    a = _side(fixtures, tmp_path, "before.json", ["run-a1", "run-a2", "run-a3"])
    b = _side(fixtures, tmp_path, "after.json", ["run-b1", "run-b2", "run-b3"], disturbed=True)
    p = cli("compare", a, b)
    assert p.returncode == 0, p.stderr
    assert "a1..a3 GB/s" in p.stdout and "b1..b3 GB/s" in p.stdout  # the shared "run-" cut
    [w] = [line for line in unwrap(p.stderr).splitlines() if "were disturbed" in line]
    assert w.startswith("atsdbench: warning: b1..b3: 100% of its timed passes") and "a1..a3: 0%" in w
    assert str(tmp_path) not in p.stderr and all(len(x) <= _cli.WIDTH for x in p.stderr.splitlines())


def test_default_output_names_keep_the_part_that_differs(cli, fixtures, tmp_path):
    a = _side(fixtures, tmp_path, "before.json", ["atsdbench-h-6.12.0-20261204T101500"])
    b = _side(fixtures, tmp_path, "after.json", ["atsdbench-h-6.12.0-20261204T111500"])
    p = cli("compare", a, b)
    assert "20261204T101500 GB/s" in p.stdout and "20261204T111500 GB/s" in p.stdout


@pytest.mark.core
def test_no_option_is_taken_by_its_prefix(cli):
    for args in (["run", "--stride", "64K"], ["run", "--thread", "2"], ["compare", "--label", "a,b", "x", "y"]):
        p = cli(*args)
        usage, said = p.stderr.splitlines()
        assert p.returncode == 2 and usage.startswith("usage: ") and "did you mean" in said, args


@pytest.mark.core
def test_the_help_shows_lists_and_the_run_options_after_the_double_dash(cli):
    run = cli("run", "--help").stdout
    for option in ("--threads N[,N...]", "--bystanders N[,N...]", "--op OP[,OP...]"):
        assert option in run, option
    assert unwrap(run.replace("\n" + " " * 24, " ")).count("is an axis") >= 3
    guest = cli("guest", "--help").stdout
    assert "[-- RUN-OPTIONS [-- RUN-OPTIONS ...]]" in guest.split("\n\n")[0]
    init = cli("campaign", "init", "--help").stdout
    assert "-- RUN-OPTIONS" in init.split("\n\n")[0]


def test_every_help_is_within_100_columns(cli):
    pages = [["--help"], ["stat", "-h"], ["campaign", "init", "--help"], ["guest", "--help"], ["run", "--help"],
             ["compare", "--help"]]
    for args in pages:
        p = cli(*args)
        assert p.returncode == 0 and max(map(len, p.stdout.splitlines())) <= _cli.WIDTH, args


class _Tty:
    def __init__(self, fd, tty=True):
        self.fd, self.tty = fd, tty

    def isatty(self):
        return self.tty

    def fileno(self):
        return self.fd


def test_progress_is_drawn_only_for_a_person(monkeypatch):
    import os

    from atsdbench.errors import UsageError

    names = {}
    monkeypatch.setattr(os, "ttyname", lambda fd: names[fd])
    names.update({3: "/dev/pts/0", 4: "/dev/ttyS0", 5: "/dev/hvc0", 6: "/dev/ttyAMA0"})
    assert _cli.shows_progress("auto", _Tty(3), {"TERM": "xterm"})
    assert not _cli.shows_progress("auto", _Tty(3), {"TERM": "dumb"})
    assert not _cli.shows_progress("auto", _Tty(3), {"TERM": "xterm", "LAVA_RESULT_DIR": "/lava-1/0/results"})
    for fd in (4, 5, 6):  # a serial console: one endless line in the lab's log
        assert not _cli.shows_progress("auto", _Tty(fd), {"TERM": "vt220"})
    assert not _cli.shows_progress("auto", _Tty(3, tty=False), {})
    assert _cli.shows_progress("always", _Tty(4, tty=False), {}) and not _cli.shows_progress("never")
    with pytest.raises(UsageError, match="--progress must be never, auto or always"):
        _cli.shows_progress("sometimes")


def test_a_bad_progress_is_refused_before_measuring(cli, tmp_path):
    p = cli("run", "--size", "4M", "--progress", "often", "-o", tmp_path / "x.json")
    assert p.returncode == 2 and "--progress must be never, auto or always" in p.stderr
    assert not (tmp_path / "x.json").exists()


def test_a_cut_never_splits_a_version():
    from atsdbench.data.sides import common_cut

    stems = ["atsdbench-h-6.12.0-T1", "atsdbench-h-6.13.0-T1"]
    head, tail = common_cut(stems)
    assert [x[head:len(x) - tail] for x in stems] == ["6.12.0", "6.13.0"]
