"""scripts/bench_scale.py (not live: its files are synthetic and nothing is timed by a test): the files it
makes are ones atsdbench loads, and its quick mode runs every command and prints the table that
docs/benchmarks.md holds."""
import pathlib
import subprocess
import sys

import pytest

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"


def test_synthetic_files_have_the_schema_and_the_passes_asked_for(script, tmp_path):
    from atsdbench.data import results

    bench = script("bench_scale")
    r = results.load(bench.synthetic(str(tmp_path / "a.json"), 200, 1))
    assert r.passes() == 192 and r.config["rounds"] == 12  # whole rounds of 4 strides x 4 passes
    assert sorted(r.samples["stride_bytes"].unique()) == list(bench.STRIDES)
    runs = results.load(bench.synthetic(str(tmp_path / "r.json"), 200, 1, sub_run=32))
    assert [len(p.samples) for p in runs.sub_runs()] == [32] * 6


@pytest.mark.slow
def test_quick_mode_runs_every_command_and_prints_the_table(tmp_path):
    p = subprocess.run([sys.executable, str(SCRIPTS / "bench_scale.py"), "--quick", "--keep", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[:2] == ["| Command | Passes (a side) | Wall s | Peak RSS MiB |", "|---|---:|---:|---:|"]
    rows = [line.strip("|").split(" | ") for line in lines[2:]]
    assert [r[0].strip() for r in rows] == [
        "show", "show (--runs, 160/sub-run)", "compare", "model", "plot --model", "plot",
        "compare, 2 files a side", "model, 2 files a side", "plot --model, 2 files a side"]
    assert all(float(r[3]) > 0 for r in rows)  # a peak RSS was read for each
    assert (tmp_path / "p-1000.png").read_bytes().startswith(b"\x89PNG")
