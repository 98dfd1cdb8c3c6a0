"""scripts/bench_stat.py (the speed goal of `atsdbench stat` against Debian's ministat, docs/benchmarks.md):
a smoke on two small files, one run each (live: it times this machine; its ratio is not asserted).
Skipped where ministat is not installed (.ci/run installs it)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_stat.py"


@pytest.mark.live
def test_bench_stat_runs_small_and_both_print_the_same(tmp_path):
    if not shutil.which("ministat"):
        pytest.skip("Debian's ministat is not installed")
    p = subprocess.run([sys.executable, str(SCRIPT), "--runs", "1", "--n", "1000"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("2 files x 1000 values, 1 runs each, alternating")
    assert [line.split()[0] for line in lines[2:4]] == ["ministat", "atsdbench"]
    assert lines[4].startswith("ratio") and lines[4].endswith("outputs identical: True"), p.stdout
