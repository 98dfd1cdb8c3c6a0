"""`atsdbench calibrate`: bad input before anything is measured, a profile made from a --runs file
(--from), and (live) a small real calibration that compare then uses, and one interrupted."""
import json
import os
import signal
import subprocess
import sys
import time

import noise_sim
import pytest

from atsdbench.data import noise_profile, results


@pytest.fixture
def calibration_file(tmp_path):
    import numpy as np

    path = str(tmp_path / "cal.json")
    results.save(noise_sim.simulate_side(np.random.default_rng(4), 4, 3, 20.0, 0.03, 0.0, label="A"), path)
    return path


def _one_line(p):
    assert p.returncode == 2 and p.stderr.startswith("atsdbench: ") and p.stderr.count("\n") == 1, p.stderr
    return p.stderr


@pytest.mark.parametrize("args,words", [
    (["--runs", "1"], "calibrate --runs 1: one sub-run has no between-run variance (give 2+; default 8)"),
    (["--until", "5%"], "calibrate measures a fixed design: --until"),
    (["--runs", "0"], "--runs"),
    (["--gap", "soon"], "--gap"),
    (["--rounds", "1"], "calibrate --rounds 1: one round a sub-run has no within-run variance"),
])
def test_bad_input_is_one_line_before_anything_runs(cli, tmp_path, args, words):
    out = tmp_path / "p.json"
    err = _one_line(cli("calibrate", "--size", "16M", "--strides", "64K", *args, "-o", out))
    assert words in err and not out.exists() and not (tmp_path / "p.run.json").exists()


def test_a_gap_under_the_measured_design_warns():
    from atsdbench.measure import calibration
    from atsdbench.render import noise_profile as report

    floor = calibration.gap_floor()
    assert floor == 150.0
    line = report.gap_under_floor(0.0, floor)
    assert line.startswith("--gap 0s under 150s") and "docs/calibrate.md#" in line


def test_an_output_that_cannot_be_written_is_refused_first(cli, tmp_path):
    (tmp_path / "d.json").mkdir()
    assert "is a directory" in _one_line(cli("calibrate", "--size", "16M", "--strides", "64K", "-o",
                                             tmp_path / "d.json"))


@pytest.mark.core
def test_an_existing_profile_is_replaced_only_with_force(cli, tmp_path, calibration_file):
    out = tmp_path / "p.json"
    assert cli("calibrate", "--from", calibration_file, "-o", out).returncode == 0
    old = out.read_bytes()
    assert "exists: --force replaces it" in _one_line(cli("calibrate", "--from", calibration_file, "-o", out))
    assert out.read_bytes() == old
    assert cli("calibrate", "--from", calibration_file, "-o", out, "--force").returncode == 0


def test_a_profile_from_a_runs_file(cli, tmp_path, calibration_file):
    p = cli("calibrate", "--from", calibration_file, "-o", tmp_path / "p.json")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "noise profile of sim (CPU unknown), kernel sim-A:"
    assert lines[1].startswith("p.json (4 sub-runs x 3 rounds, 20 s apart")
    assert lines[2].split() == ["Stride", "within", "SD%", "df", "between", "SD%", "df", "Detects", "(80%)"]
    assert [line.split()[0] for line in lines[4:8]] == ["64K", "1M", "2M", "4M"]
    assert "Holm over 4 strides" in p.stdout and all(len(line) <= 100 for line in lines[2:])
    assert lines[-1] == f"wrote {tmp_path / 'p.json'}" and "boot-to-boot not measured" in p.stdout
    made = noise_profile.load(str(tmp_path / "p.json"))
    assert made.calibration == {"runs": 4, "gap": 20.0, "rounds": [3, 3, 3, 3], "complete": True,
                                "source": calibration_file, "span_s": 60.0}  # sub-runs start 20 s apart
    assert {e["within_df"] for e in made.entries.values()} == {8} and made.host["machine_id"] is None


def test_from_takes_no_run_options_and_needs_sub_runs(cli, tmp_path, calibration_file):
    import numpy as np

    assert "no run options (got --size)" in _one_line(cli("calibrate", "--from", calibration_file, "--size", "1G",
                                                           "-o", tmp_path / "p.json"))
    single = str(tmp_path / "single.json")
    results.save(noise_sim.simulate_side(np.random.default_rng(5), 1, 5, 0.0, 0.0, 0.0), single)
    assert "has one sub-run: its between-run variance cannot be estimated" in _one_line(
        cli("calibrate", "--from", single, "-o", tmp_path / "p.json"))
    assert "no such file" in _one_line(cli("calibrate", "--from", tmp_path / "nothing.json"))


def test_the_profile_goes_to_the_store_by_default(cli, tmp_path, calibration_file):
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "xdg"))
    p = cli("calibrate", "--from", calibration_file, env=env)
    assert p.returncode == 0, p.stderr
    written = p.stdout.splitlines()[-1].removeprefix("wrote ")
    assert os.path.dirname(written) == str(tmp_path / "xdg" / "atsdbench" / "noise-profiles")
    assert os.path.basename(written).startswith("sim-sim-A-") and noise_profile.load(written).calibration["runs"] == 4


SMALL = ["--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "2", "--no-trace"]


@pytest.mark.live  # measures
def test_a_real_calibration_then_compare_uses_it(cli, tmp_path):
    cal = cli("calibrate", *SMALL, "--runs", "3", "--gap", "0s", "-o", tmp_path / "p.json")
    assert cal.returncode == 0, cal.stderr
    assert "atsdbench: warning: --gap 0s under" in cal.stderr
    assert "noise profile" not in cal.stdout.split("noise profile of")[0]  # calibrate does not advise calibrate
    assert f"wrote {tmp_path / 'p.run.json'}" in cal.stdout and f"wrote {tmp_path / 'p.json'}" in cal.stdout
    kept = results.load(str(tmp_path / "p.run.json"))
    assert kept.complete and len(kept.sub_runs()) == 3
    made = noise_profile.load(str(tmp_path / "p.json"))
    assert made.calibration["runs"] == 3 and made.host["boot_id"] == kept.host["boot_id"]
    for name in ("a.json", "b.json"):
        assert cli("run", *SMALL, "-o", tmp_path / name).returncode == 0
    p = cli("compare", "a.json", "b.json", "--noise-profile", "p.json", cwd=tmp_path)
    assert p.returncode == 0 and "between-run variance: noise profiles" in p.stdout, p.stderr
    other = cli("run", *SMALL, "--rounds", "3", "-o", tmp_path / "c.json")  # --rounds differs: another plan
    assert other.returncode == 0
    assert "is of another plan: rounds 2, c.json 3" in _one_line(cli("compare", "c.json", "c.json", "--noise-profile",
                                                                     "p.json", cwd=tmp_path))


def _workers(pid):
    """The pids of the round workers (`python -m atsdbench.measure.worker`) that are pid's children now."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
    except FileNotFoundError:
        return None  # a kernel without CONFIG_PROC_CHILDREN
    out = []
    for kid in kids:
        try:
            with open(f"/proc/{kid}/cmdline", "rb") as f:
                if b"atsdbench.measure.worker" in f.read():
                    out.append(kid)
        except OSError:  # it ended in between
            pass
    return out


def _first_sub_run_ended(proc, timeout=50):
    """Until the first sub-run's worker came and went (no fixed sleep: under load it may take long)."""
    deadline, seen = time.monotonic() + timeout, False
    while time.monotonic() < deadline and proc.poll() is None:
        workers = _workers(proc.pid)
        if workers is None:
            time.sleep(15)  # the first sub-run takes a second or two
            return
        if workers:
            seen = True
        elif seen:
            return
        time.sleep(0.02)
    if proc.poll() is None:
        raise AssertionError("the first sub-run did not end" if seen else "no sub-run started")


@pytest.mark.live  # measures
def test_an_interrupted_calibration_keeps_its_passes_and_writes_no_profile(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "atsdbench", "calibrate", *SMALL, "--runs", "3", "--gap", "60s",
                             "-o", str(tmp_path / "p.json")], cwd=str(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    kept = tmp_path / "p.run.json"
    _first_sub_run_ended(proc)  # the second waits for its 60 s gap
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    data = json.loads(kept.read_text())
    assert data["complete"] is False and {s["run"] for s in data["samples"]} == {0}
    assert not (tmp_path / "p.json").exists()
    assert f"atsdbench calibrate --from {kept}" in out


def test_a_profile_to_a_full_disk_names_its_path(cli, full_disk, calibration_file):
    """calibrate --from ... -o FULL/prof.json said "No space left on device" alone."""
    err = _one_line(cli("calibrate", "--from", calibration_file, "-o", full_disk / "prof.json"))
    assert f"{full_disk / 'prof.json'}: No space left on device" in err
    assert sorted(os.listdir(full_disk)) == ["filler"]


def _screen(text):
    """What a terminal shows of `text`: each \\r returns to the line's start, characters overwrite."""
    lines, line, col = [], [], 0
    for ch in text:
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append("".join(line))
            line, col = [], 0
        else:
            line[col:col + 1] = [ch]
            col += 1
    return lines + ["".join(line)]


def test_the_countdown_clears_its_line(monkeypatch):
    """calibrate's wait before each sub-run, its bar and the countdown rewrite one line: a shorter one
    leaves nothing of a longer one (no `(--gap)ses` on the terminal)."""
    import io
    import sys

    from atsdbench import _cli

    class Tty(io.StringIO):
        def isatty(self):
            return True

    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    tick = _cli.progress_bar(4, "always")
    tick({"round": 0})
    tick({"wait": 150.0, "before": "sub-run 2 of 2 (--gap)"})
    assert _screen(err.getvalue())[-1] == "waiting 150.0 s before sub-run 2 of 2 (--gap)"
    tick({"round": 0})
    assert _screen(err.getvalue())[-1].rstrip() == f"[{'#' * 15}{' ' * 15}] 2/4 passes"
    tick({"wait": 9.5, "before": "sub-run 2"})
    assert _screen(err.getvalue())[-1].rstrip() == "waiting 9.5 s before sub-run 2"
