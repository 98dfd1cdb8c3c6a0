"""lava/atsdbench.yaml's steps run as LAVA's run.sh runs them (tests/support/definition.py), on this machine,
with a lava-test-case that records its calls: the install modes, a size that fits, every expected case
reported when the run fails, the result file kept in the log and read back by import --lava-log, a
BASELINE kept from an earlier job, and bad input as one failing case with a reason."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

import atsdbench
from atsdbench.data import lava_log

import definition

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SMALL = "--strides 64K,1M --rounds 1 --reps 1 --warmup-rounds 0"


def _job(tmp_path, name="job", path=None, environ=None, **params):
    """One job: (exit status, console log, [lava-test-case calls as word lists])."""
    home = tmp_path / name
    home.mkdir()
    calls = home / "calls"
    fake = home / "bin" / "lava-test-case"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{fake.parent}:{path or os.environ['PATH']}", HOME=str(home), TERM="vt220",
               LAVA_RESULT_DIR=str(home), **(environ or {}))
    p = subprocess.run(["sh", "-c", definition.script(**params)], capture_output=True, text=True, env=env,
                       cwd=home, timeout=600)
    made = [line.split() for line in calls.read_text().splitlines()] if calls.exists() else []
    return p.returncode, p.stdout + p.stderr, made


def _results(calls):
    return {c[0]: c[2] for c in calls}


def test_the_definition_has_the_linaro_layout_and_its_steps_parse():
    text = definition.DEFINITION.read_text()
    assert re.findall(r"^(\w+):", text, re.M) == ["metadata", "params", "run"]
    assert re.search(r"^    format: Lava-Test Test Definition 1.0$", text, re.M)
    assert re.search(r"^    name: atsdbench$", text, re.M)
    for key in ("description", "maintainer", "os", "scope", "devices", "environment"):
        assert re.search(rf"^    {key}:", text, re.M), key
    devices = re.findall(r"^        - (\S+)$", text[text.index("    devices:"):text.index("    environment:")], re.M)
    assert "qemu" in devices and not {"x86_64", "arm64", "ppc64le"} & set(devices)  # LAVA device types
    assert definition.params() == {"INSTALL": "none", "SOURCE": "", "REF": "", "SIZE": "auto", "RUN_OPTIONS": "",
                                   "BASELINE": "", "KEEP": "log"}
    assert len(definition.steps()) == 6 and "./lava/report.sh" not in text  # needs no file beside it
    subprocess.run(["sh", "-n", "-c", definition.script()], check=True)


@pytest.mark.live
def test_a_job_runs_reports_and_keeps_its_result_in_the_log(tmp_path, cli):
    code, log, calls = _job(tmp_path, RUN_OPTIONS=SMALL)
    assert code == 0, log
    r = _results(calls)
    assert r["atsdbench-install"] == "pass" and r["atsdbench-run"] == "pass"
    rates = [c for c in calls if c[0].startswith("rate-")]
    assert [c[0] for c in rates] == ["rate-64K", "rate-1M"] and all(c[2] == "pass" and c[6] == "GB/s" for c in rates)
    assert "\r" not in log  # no progress bar in a lab's log
    assert re.search(r"--size (1024|512|256|128|64|32|16)M \(MemAvailable \d+ KiB\)", log)
    (tmp_path / "job.log").write_text(log)
    found, problems = lava_log.extract(log)
    assert len(found) == 1 and problems == []
    p = cli("import", "--lava-log", tmp_path / "job.log", "-o", tmp_path / "kept")
    assert p.returncode == 0, p.stderr
    [kept] = list((tmp_path / "kept").iterdir())
    res = atsdbench.load(str(kept))
    assert res.complete and sorted(set(res.samples["stride_bytes"])) == [65536, 1 << 20]
    # the next job compares against the file kept from this one
    code, log2, calls2 = _job(tmp_path, "job2", RUN_OPTIONS=SMALL, BASELINE=str(kept))
    assert code == 0, log2
    r = _results(calls2)
    assert r["atsdbench-compare"] == "pass" and {"speedup-64K", "speedup-1M"} <= set(r)


@pytest.mark.live
@pytest.mark.parametrize("params,reason", [
    ({"INSTALL": "conda"}, "INSTALL must be none or venv (got conda)"),
    ({"INSTALL": "venv"}, "INSTALL venv needs SOURCE"),
    ({"INSTALL": "venv", "SOURCE": "/nowhere/atsdbench-0.1.0-py3-none-any.whl"}, "pip install"),
    ({"INSTALL": "none", "_path": "/usr/bin:/bin"}, "INSTALL none: no atsdbench on PATH"),
])
def test_an_install_that_fails_is_one_failing_case_and_the_job_goes_on(tmp_path, params, reason):
    path = params.pop("_path", None)
    code, log, calls = _job(tmp_path, path=path, RUN_OPTIONS=SMALL, **params)
    assert code == 0 and reason in log, log
    r = _results(calls)
    assert r["atsdbench-install"] == "fail" and r["atsdbench-run"] == "skip"
    assert r["rate-64K"] == "skip" and r["rate-1M"] == "skip" and "Traceback" not in log


@pytest.mark.live
def test_a_run_that_fails_fails_every_expected_case_and_shows_nothing(tmp_path):
    code, log, calls = _job(tmp_path, SIZE="lots", RUN_OPTIONS=SMALL, BASELINE="/nowhere.json")
    assert code == 0, log
    r = _results(calls)
    assert r["atsdbench-run"] == "fail" and r["rate-64K"] == "fail" and r["rate-1M"] == "fail"
    assert r["atsdbench-compare"] == "skip" and "ATSDBENCH-RESULT-BEGIN" not in log.replace("+ echo", "")
    assert "no result file to show: every rate case fails" in log and "atsdbench show" not in log


@pytest.mark.live
def test_a_baseline_not_on_the_device_is_a_failing_case_with_its_reason(tmp_path):
    code, log, calls = _job(tmp_path, RUN_OPTIONS=SMALL, BASELINE="/nowhere/base.json", KEEP="none")
    assert code == 0, log
    assert _results(calls)["atsdbench-compare"] == "fail" and "BASELINE /nowhere/base.json is not on the device" in log
    assert not lava_log.extract(log)[0]  # KEEP none: nothing in the log


@pytest.mark.live
@pytest.mark.slow  # the session's wheel (tests/support/built.py: a C build, 20-60 s here)
def test_install_venv_from_the_wheel_under_test(tmp_path, wheel):
    # the venv takes its dependencies from this interpreter's site-packages (no index in a test)
    site = subprocess.run([sys.executable, "-c", "import numpy, os; print(os.path.dirname(os.path.dirname("
                           "numpy.__file__)))"], capture_output=True, text=True, check=True).stdout.strip()
    code, log, calls = _job(tmp_path, path="/usr/bin:/bin", INSTALL="venv", SOURCE=str(wheel), RUN_OPTIONS=SMALL,
                            environ={"PIP_NO_INDEX": "1", "PIP_NO_DEPS": "1", "PYTHONPATH": site})
    assert code == 0, log
    r = _results(calls)
    assert r["atsdbench-install"] == "pass" and r["atsdbench-run"] == "pass" and r["rate-64K"] == "pass", log


@pytest.mark.live
@pytest.mark.slow  # pip builds the core from a git clone (20-60 s here)
def test_install_venv_from_a_git_url_and_ref(tmp_path):
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode:
        pytest.skip("not a git checkout")
    site = subprocess.run([sys.executable, "-c", "import numpy, os; print(os.path.dirname(os.path.dirname("
                           "numpy.__file__)))"], capture_output=True, text=True, check=True).stdout.strip()
    code, log, calls = _job(tmp_path, path="/usr/bin:/bin", INSTALL="venv", SOURCE=f"git+file://{ROOT}", REF=head.stdout.strip(),
                            RUN_OPTIONS=SMALL, environ={"PIP_NO_INDEX": "1", "PIP_NO_DEPS": "1",
                                                        "PIP_NO_BUILD_ISOLATION": "0", "PYTHONPATH": site})
    assert code == 0, log
    assert f"git+file://{ROOT}@{head.stdout.strip()}" in log and _results(calls)["atsdbench-run"] == "pass", log
