"""scripts/aa_false_positive.py (the A/A table of docs/methodology.md): a smoke of its three cross-run
comparisons and its within-run one on five tiny runs (live: it measures; slow: five processes; the rates
are not asserted)."""
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "aa_false_positive.py"


@pytest.mark.live
@pytest.mark.slow
def test_aa_false_positive_runs_small(tmp_path):
    p = subprocess.run([sys.executable, str(SCRIPT), "--pairs", "1", "--replicates", "2", "--within", "1", "--size",
                        "16M", "--rounds", "2", "--reps", "1"], capture_output=True, text=True, cwd=tmp_path,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "single runs, unit round", "single runs, unit pass ", "2 runs a side, unit run",
        "within one run, paired by round (--bystanders 0,0, compare --by bystanders)"], p.stdout
    assert "(2 A/A pairs; size 16M, 2 rounds x 1 reps" in lines[0] and "(1 runs;" in lines[3]
