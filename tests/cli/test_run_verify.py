"""run --verify through the command line: verify passes apart from the timed ones, a stale read loud
(the file saved first, then the line, exit 3), show and compare saying it above every table, and the
bad inputs.  The stale runs use the core's test-only control (atsd_verify_control), reached here by
a test double of core.Verifier: no option of the command line reaches it."""
import errno
import json
import os
import re

import pytest

from atsdbench.data import results
from atsdbench.measure import core
from conftest import unwrap

OPS = ("mprotect", "madvise", "munmap")
SMALL = ["--size", "4M", "--strides", "64K,1M", "--rounds", "1", "--reps", "1", "--warmup-rounds", "0"]
STALE = re.compile(r"STALE TRANSLATION: (\d+) of (\d+) checks read through a translation after the invalidation "
                   r"returned \((\w+), (\w+), CPUs ([\d,]+) -> ([\d,]+)\)")


def _two_cpus():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing to check from")


@pytest.fixture
def control(monkeypatch):
    """core.Verifier with the control on: every call's flags raised, no system call."""
    start = core.Verifier.__init__

    def init(self, cpus):
        start(self, cpus)
        core.lib.atsd_verify_control(self._v[0], 1)

    monkeypatch.setattr(core.Verifier, "__init__", init)


@pytest.mark.live
@pytest.mark.parametrize("op", OPS)
def test_run_verify_is_clean_here(cli, tmp_path, op):
    _two_cpus()
    out = tmp_path / "v.json"
    p = cli("run", *SMALL, "--op", op, "--verify", "-o", out)
    assert p.returncode == 0, p.stderr
    assert "STALE" not in p.stderr + p.stdout
    assert re.search(r"^verify: untimed passes after each round's timed ones: 0 stale in \d+ checks", p.stdout, re.M)
    data = json.loads(out.read_text())
    assert data["schema_version"] == results.SCHEMA_VERSION >= 4 and data["config"]["verify"] is True
    assert [v["stride_bytes"] for v in data["verify"]] == [64 << 10, 1 << 20]
    assert all(v["stale"] == 0 and v["checks"] == v["calls"] * len(v["checker_cpus"]) for v in data["verify"])
    assert all("checks" not in s for s in data["samples"])  # no timed pass carries a checker's fields


@pytest.mark.live
@pytest.mark.parametrize("op", OPS)
def test_a_stale_read_is_saved_then_loud_with_exit_3(cli, tmp_path, control, op):
    _two_cpus()
    out = tmp_path / "s.json"
    p = cli("run", *SMALL, "--op", op, "--verify", "-o", out)
    assert p.returncode == 3, p.stderr
    found = STALE.findall(" ".join(p.stderr.split()))
    assert len(found) == 2, p.stderr  # one per stride
    (stale, checks, op_seen, stride, _, _), second = found
    assert stale == checks and op_seen == op and {stride, second[3]} == {"64K", "1M"}
    assert f"wrote {out}" in p.stdout and p.stderr.index("STALE") == 0  # saved and reported before the line
    data = json.loads(out.read_text())
    assert data["complete"] and sum(v["stale"] for v in data["verify"]) == sum(v["checks"] for v in data["verify"])
    # show and compare: above every table
    shown = cli("show", out)
    assert shown.returncode == 0 and shown.stdout.startswith("STALE TRANSLATION: ")
    compared = cli("compare", out, out)
    flat = " ".join(compared.stdout.split())  # folded where the path is long
    assert flat.count("STALE TRANSLATION") == 2 and flat.startswith(f"{out}: STALE")


@pytest.mark.live
def test_a_stale_read_outweighs_a_later_failure(cli, tmp_path, control, monkeypatch):
    """A run that read a stale translation and then failed part-way: the failure's line, the finished
    passes saved, the loud line, and exit 3, not 2: the finding is the status (atsd's too)."""
    _two_cpus()
    real = core.cell_verify

    def cell_verify(*args):  # its hook fails once the first verify pass is recorded
        *given, after = args

        def failing(rec):
            after(rec)
            raise OSError(errno.EIO, "injected after the first verify pass")

        return real(*given, failing)

    monkeypatch.setattr(core, "cell_verify", cell_verify)
    out = tmp_path / "s.json"
    p = cli("run", *SMALL, "--verify", "-o", out)
    assert p.returncode == 3, p.stderr
    assert "injected after the first verify pass" in p.stderr and len(STALE.findall(" ".join(p.stderr.split()))) == 1
    data = json.loads(out.read_text())
    assert not data["complete"] and len(data["verify"]) == 1 and data["verify"][0]["stale"] > 0


@pytest.mark.live
def test_no_timed_pass_runs_beside_a_checker(cli, tmp_path, monkeypatch):
    """The order of a run's events: checkers started after a cell's timed passes and stopped before the
    next timed pass (two rounds, two cells)."""
    _two_cpus()
    from atsdbench.measure import session

    events, live = [], []
    start, stop, timed = core.Verifier.__init__, core.Verifier.stop, session._Around.before

    def init(self, cpus):
        start(self, cpus)
        live.append(self)
        events.append("start")

    def halt(self):
        if self in live:
            live.remove(self)
            events.append("stop")
        stop(self)

    def timed_pass(self, *a, **kw):  # run's hook just before each timed pass
        events.append("timed-with-checkers" if live else "timed")
        return timed(self, *a, **kw)

    monkeypatch.setattr(core.Verifier, "__init__", init)
    monkeypatch.setattr(core.Verifier, "stop", halt)
    monkeypatch.setattr(session._Around, "before", timed_pass)
    p = cli("run", "--size", "4M", "--strides", "64K,1M", "--rounds", "2", "--reps", "1", "--op",
            "mprotect,madvise", "--verify", "-o", tmp_path / "o.json")
    assert p.returncode == 0, p.stderr
    assert "timed-with-checkers" not in events
    # (1 warm-up + 2 measured rounds) x 2 cells, each: its timed passes, then its checkers
    assert events.count("start") == events.count("stop") == 6
    # each cell's round: 4 timed passes (a warm-up and a measured rep of 2 strides), then [its checkers]
    assert "".join({"timed": "T", "start": "[", "stop": "]"}[e] for e in events) == "TTTT[]" * 6


def test_verify_with_one_cpu_allowed_is_one_line(cli, tmp_path):
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})
    try:
        p = cli("run", *SMALL, "--verify", "-o", tmp_path / "x.json")
    finally:
        os.sched_setaffinity(0, cpus)
    assert p.returncode == 2 and p.stderr == (f"atsdbench: --verify checks each call from another CPU; the "
                                              f"affinity mask has one ({min(cpus)})\n")
    assert not (tmp_path / "x.json").exists()


def test_verify_with_a_gpu_says_what_it_cannot_check(cli, tmp_path):
    _two_cpus()
    p = cli("run", *SMALL, "--verify", "--gpu", "0", "-o", tmp_path / "g.json")
    assert unwrap(p.stderr).startswith("atsdbench: warning: --verify checks the CPUs, not the GPU's device TLBs (ATS, HMM) "
                               "(docs/verify.md#what-a-pass-proves)\n")


def _stale_file(fixtures, tmp_path):
    data = json.loads((fixtures / "before.json").read_text())
    data["schema_version"] = 4
    data["config"].update(verify=True, verify_cpus=[0, 1])
    data["verify"] = [{"round": 0, "warmup": False, "op": "madvise", "stride_bytes": 65536, "threads": 1,
                       "invalidator_cpus": [0], "checker_cpus": [1], "calls": 16384, "checks": 16384, "faults": 0,
                       "zeros": 16381, "stale": 3, "held": 16000, "ns": 1}]
    path = tmp_path / "stale.json"
    path.write_text(json.dumps(data))
    return path


LAVA_LINE = re.compile(r"\S+ (pass|fail) \S+ \S+|\S+ skip")


@pytest.mark.parametrize("fmt", ["text", "markdown", "csv", "lava"])
def test_show_says_it_above_the_table(cli, fixtures, tmp_path, fmt):
    path = _stale_file(fixtures, tmp_path)
    p = cli("show", path, "--format", fmt)
    assert p.returncode == 0
    said = p.stderr if fmt in ("csv", "lava") else p.stdout  # off csv's data and lava's lines
    if fmt == "lava":  # lava/atsdbench.yaml reads every stdout line as a test case
        assert all(LAVA_LINE.fullmatch(line) for line in p.stdout.splitlines()), p.stdout
        assert p.stdout.splitlines()[-1] == "verify-madvise-64K fail 3 stale"  # the job shows a failed case
    assert " ".join(said.split()).startswith("STALE TRANSLATION: 3 of 16384 checks read through a "
                                             "translation after the invalidation returned (madvise, 64K, CPUs 0 -> 1)")
    if fmt == "text":
        assert "3 stale in 16384 checks; 16000 of 16384 held the translation while the call ran (the other 384 " \
               "proved nothing)" in " ".join(p.stdout.split())


@pytest.mark.parametrize("args", [[], ["--format", "commit"], ["--counts"], ["--format", "json"],
                                  ["--format", "lava"]])
def test_compare_says_it_above_every_table(cli, fixtures, tmp_path, args):
    path = _stale_file(fixtures, tmp_path)
    p = cli("compare", fixtures / "after.json", path, *args)
    said = p.stderr if "json" in args or "lava" in args else p.stdout
    assert " ".join(said.split()).count("STALE TRANSLATION: 3 of 16384 checks") == 1, p.stdout + p.stderr
    if "json" not in args and "lava" not in args and p.returncode == 0:
        assert " ".join(p.stdout.split()).startswith(f"{path}: STALE TRANSLATION")  # folded where the path is long
    if "lava" in args:
        assert p.stdout and all(LAVA_LINE.fullmatch(line) for line in p.stdout.splitlines()), p.stdout
        assert p.stdout.splitlines()[-1] == "verify-stale.json-madvise-64K fail 3 stale"
    if "json" in args:
        json.loads(p.stdout)  # the data untouched


@pytest.mark.live
def test_the_cost_script_runs_quick(script, capsys):
    _two_cpus()
    assert script("bench_verify").main(["--quick"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("verify cost per checked call, 4M at 64K") and [line.split()[0] for line in out[2:]] == \
        list(OPS)
    assert all(line.split()[-1] == "0" for line in out[2:])  # no stale read


@pytest.mark.live
def test_no_bystander_spins_beside_a_checker(cli, tmp_path, monkeypatch):
    _two_cpus()
    bystanders, clash, kept = [], [], []
    start_b, stop_b, start_v = core.Bystanders.__init__, core.Bystanders.stop, core.Verifier.__init__

    def b_init(self, cpus):
        start_b(self, cpus)
        if cpus:
            bystanders.append(self)

    def b_stop(self):
        if self in bystanders:
            bystanders.remove(self)
        stop_b(self)

    def v_init(self, cpus):
        clash.append(bool(bystanders))
        start_v(self, cpus)

    def timed(self, *a, **kw):  # run's hook just before each timed pass
        kept.append(bool(bystanders))
        return timed_pass(self, *a, **kw)

    from atsdbench.measure import session

    timed_pass = session._Around.before
    monkeypatch.setattr(core.Bystanders, "__init__", b_init)
    monkeypatch.setattr(core.Bystanders, "stop", b_stop)
    monkeypatch.setattr(core.Verifier, "__init__", v_init)
    monkeypatch.setattr(session._Around, "before", timed)
    p = cli("run", *SMALL, "--rounds", "2", "--bystanders", "1", "--verify", "-o", tmp_path / "b.json")
    assert p.returncode == 0, p.stderr
    assert clash == [False] * 2 and kept and all(kept)  # every timed pass had its bystander, no checker did


def test_a_clean_verify_is_a_passed_case_in_show_lava(cli, fixtures, tmp_path):
    data = json.loads(_stale_file(fixtures, tmp_path).read_text())
    data["verify"][0].update(stale=0, zeros=16384)  # faults + zeros + stale = checks
    (tmp_path / "clean.json").write_text(json.dumps(data))
    lines = cli("show", tmp_path / "clean.json", "--format", "lava").stdout.splitlines()
    assert lines[-1] == "verify-madvise-64K pass 0 stale" and not any(" fail " in line for line in lines)
    assert not any(line.startswith("verify") for line in cli("show", fixtures / "before.json", "--format",
                                                               "lava").stdout.splitlines())
