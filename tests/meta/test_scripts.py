"""Every script under scripts/ is run by a test or by CI's .ci/run, which names it (a script nothing runs
rots: four did, until tests/scripts/ gave them smokes), and the shell scripts parse (`bash -n`)."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"

# script -> the file that runs it: a test (most under tests/scripts/), .ci/run (whole guest checks, minutes of
# qemu each, after the tests), or a script that is itself run here (python-root: by device-check)
RUN_BY = {
    "aa_false_positive.py": "tests/scripts/test_aa_false_positive.py",
    "adaptive_coverage.py": "tests/scripts/test_adaptive_coverage.py",
    "bench_adaptive.py": "tests/scripts/test_bench_adaptive.py",
    "bench_defaults.py": "tests/scripts/test_bench_defaults.py",
    "bench_overhead.py": "tests/scripts/test_bench_overhead.py",
    "bench_placement.py": "tests/scripts/test_bench_placement.py",
    "bench_scale.py": "tests/scripts/test_bench_scale.py",
    "bench_stat.py": "tests/scripts/test_bench_stat.py",
    "bench_verdict.py": "tests/scripts/test_bench_verdict.py",
    "bench_verify.py": "tests/cli/test_run_verify.py",
    "bench_wis.py": "tests/scripts/test_bench_wis.py",
    "blocked_design.py": "tests/scripts/test_blocked_design.py",
    "build-test-hmm": "tests/scripts/test_device_scripts.py",
    "calibration_table.py": "tests/scripts/test_calibration_table.py",
    "coverage_studies.py": "tests/scripts/test_coverage_studies.py",
    "cross-check": ".ci/run",
    "device-check": "tests/scripts/test_device_scripts.py",
    "device_verdict.py": "tests/scripts/test_device_scripts.py",
    "drift.py": "tests/analysis/test_timeseries.py",
    "lava-rootfs": "tests/lab/test_server.py",
    "model_coverage.py": "tests/scripts/test_model_coverage.py",
    "power-check": ".ci/run",
    "power_verdict.py": "tests/scripts/test_power_check.py",
    "python-root": "scripts/device-check",
    "replicate_designs.py": "tests/scripts/test_replicate_designs.py",
    "x86-guest-check": ".ci/run",
}


def _scripts():
    # _support.py is the scripts' loader of tests/support/noise_sim.py, imported, never run
    return sorted(p.name for p in SCRIPTS.iterdir() if p.is_file() and not p.name.startswith("_"))


def test_every_script_is_run_by_a_test_or_by_ci():
    assert sorted(RUN_BY) == _scripts(), "a script with no line in RUN_BY: give it a test (a smoke at least)"
    for name, runner in RUN_BY.items():
        text = (ROOT / runner).read_text()
        stem = name.removesuffix(".py")
        assert f'"{name}"' in text or f'script("{stem}")' in text or f"scripts/{name}" in text, (name, runner)
        if runner.startswith("scripts/"):
            assert Path(runner).name in RUN_BY, f"{name}: run by {runner}, which nothing runs"


@pytest.mark.parametrize("name", [n for n in _scripts() if (SCRIPTS / n).read_text().startswith("#!/usr/bin/env bash")])
def test_shell_scripts_parse(name):
    if not shutil.which("bash"):
        pytest.skip("bash not installed")
    p = subprocess.run(["bash", "-n", str(SCRIPTS / name)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
