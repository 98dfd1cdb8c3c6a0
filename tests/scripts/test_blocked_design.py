"""scripts/blocked_design.py (the fleet table of docs/benchmarks.md): a smoke on few fleets; what it
asserts holds far beyond its noise: with boards 50 times the effect apart, the exchangeable files'
smallest detectable change is many times the blocked design's."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "blocked_design.py"


@pytest.mark.slow  # a process of its own (the quick set stays in process)
def test_blocked_design_runs_small():
    # as a user runs it: the script's folder on sys.path (its _support), which PYTHONSAFEPATH (the
    # sdist's quick set) would leave out
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    p = subprocess.run([sys.executable, str(SCRIPT), "--reps", "300", "--pool", "40", "--boards", "2,4"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("file noise (noise_sim") and "300 fleets a row; seed 56" in lines[1]
    rows = [line.split(" | ") for line in lines if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == 8 and all(len(r) == 8 for r in rows)
    far = [r for r in rows if r[0] == "| 4" and r[1] == "50x" and r[3] == "0"][0]
    exchangeable, blocked_t = (float(cell.split(" / ")[2].rstrip("% |")) for cell in far[4:6])
    assert exchangeable > 5 * blocked_t, far
    assert all(len(line) <= 100 for line in lines if not line.startswith("|"))
