"""Both front ends refuse the same plans with the same sentence (tests/bad_plans.py)."""
import os
import subprocess

import pytest

from atsdbench import cli
from bad_plans import BAD_PLANS


def test_at_least_the_cases_the_issue_named():
    assert len(BAD_PLANS) >= 28


@pytest.mark.parametrize("args,message", BAD_PLANS, ids=[" ".join(a)[:40] for a, _ in BAD_PLANS])
def test_refused_alike(atsd, tmp_path, capsys, args, message):
    out = ["-o", str(tmp_path / "x.out")] if "-o" not in args else []
    p = subprocess.run([atsd, "--size", "16M", *out, *args], capture_output=True, text=True)
    rc = cli.main(["run", "--size", "16M", *out, *args])
    err = capsys.readouterr().err
    assert p.returncode == 2 and rc == 2
    c_lines, py_lines = p.stderr.strip().splitlines(), err.strip().splitlines()
    assert len(c_lines) == 1 and len(py_lines) == 1, (p.stderr, err)
    assert c_lines[0].startswith("atsd: ") and py_lines[0].startswith("atsdbench: ")
    assert c_lines[0][len("atsd: "):] == py_lines[0][len("atsdbench: "):]
    assert message in c_lines[0]
    assert not os.listdir(tmp_path)  # refused before anything was written
