"""scripts/bench_overhead.py (the speed goal of atsdbench's passes against a bare C loop, docs/benchmarks.md):
a smoke of one interleaved process a side over 16M (live: it builds and measures; its ratios are not
asserted)."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_overhead.py"


@pytest.mark.live
def test_bench_overhead_runs_small(tmp_path):
    if not shutil.which("cc"):
        pytest.skip("cc not installed")
    p = subprocess.run([sys.executable, str(SCRIPT), "--size", "16M", "--strides", "64K,1M", "--rounds", "1",
                        "--reps", "1"], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("size 16M, 1 interleaved processes each, 1 passes per stride")
    assert lines[1].split() == ["stride", "bare", "loop", "atsdbench", "ratio"]
    rows = [line.split() for line in lines[2:]]
    assert [r[0] for r in rows] == ["64K", "1M"], p.stdout
    assert all(re.fullmatch(r"\d+\.\d{3}", r[-1]) and float(r[-1]) > 0 for r in rows), p.stdout
