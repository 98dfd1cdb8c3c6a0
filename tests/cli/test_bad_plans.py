"""Both front ends refuse the same plans with the same sentence (tests/support/bad_plans.py)."""
import os
import subprocess

import pytest

from atsdbench import cli
from atsdbench._cli import WIDTH
from bad_plans import BAD_PLANS


# docs/run-options.md's list of bad input (unparsable or zero sizes, strides that do not
# fit, a size above MemAvailable, rounds or reps below 1, more bystanders than other CPUs, --cpu
# outside the mask, an empty hugetlb pool, an unwritable output path), plus overflow, duplicate strides
# and a hugetlb pool too small.  Each: its row of the table, and a sentence `run` must give for it.
NAMED = {
    "unparsable size": (["--size", "zz"], "size 'zz' is not a size"),
    "zero size": (["--size", "0"], "size must not be zero"),
    "size that overflows 64 bits": (["--size", "17592186044432M"], "is too large (a size must fit in 64 bits)"),
    "size above MemAvailable": (["--size", "1T"], "size 1T and the canary's 16M are more than MemAvailable"),
    "zero stride": (["--strides", "0"], "stride must not be zero"),
    "stride not a page multiple": (["--strides", "6K"], "stride 6K is not a multiple of the page size"),
    "stride larger than the size": (["--size", "64M", "--strides", "128M"], "stride 128M is larger than the size 64M"),
    "size not a stride multiple": (["--size", "65M", "--strides", "2M"], "size 65M is not a multiple of stride 2M"),
    "duplicate strides": (["--strides", "64K,1M,64K"], "stride 64K is given twice"),
    "rounds below 1": (["--rounds", "0"], "--rounds must be at least 1 (got 0)"),
    "reps below 1": (["--reps", "0"], "--reps must be at least 1 (got 0)"),
    "more bystanders than other CPUs": (["--bystanders", "4096"], "--bystanders 4096 needs 4096 other CPUs"),
    "--cpu outside the mask": (["--cpu", "4095"], "--cpu 4095 is not in this process's CPU affinity"),
    "hugetlb pool empty or too small": (["--pages", "hugetlb", "--size", "512G", "--strides", "1G"],
                                        "--pages hugetlb: the pool has"),
    "unwritable output": (["-o", "/nonexistent-dir/x.json"], "cannot write output /nonexistent-dir/x.json"),
}


def test_at_least_the_cases_the_issue_named():
    assert len(BAD_PLANS) >= 28
    rows = {tuple(args): message for args, message in BAD_PLANS}
    missing = [case for case, (args, _) in NAMED.items() if tuple(args) not in rows]
    assert not missing, f"tests/support/bad_plans.py has no row for: {', '.join(missing)}"


@pytest.mark.parametrize("case", NAMED)
def test_the_named_cases_are_refused_by_run(case, tmp_path, capsys, monkeypatch):
    """`run` alone, in-process (test_refused_alike holds atsd to the same sentence): exit 2, one line
    with the table's message and the named sentence, nothing written, nothing measured."""
    from atsdbench.measure import runner

    monkeypatch.setattr(runner, "run", lambda *a, **k: pytest.fail(f"{case}: the plan was accepted and run"))
    args, sentence = NAMED[case]
    message = dict((tuple(a), m) for a, m in BAD_PLANS).get(tuple(args))
    assert message is not None, f"{case}: no row {args} in tests/support/bad_plans.py"
    out = ["-o", str(tmp_path / "x.out")] if "-o" not in args else []
    rc = cli.main(["run", "--size", "16M", *out, *args])
    lines = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, lines
    assert lines[0].startswith("atsdbench: ") and message in lines[0] and sentence in lines[0], lines[0]
    assert not os.listdir(tmp_path)


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
    # the real line (tests/meta/test_raise_sites.py holds the C formats with sampled values)
    assert len(py_lines[0]) <= WIDTH or str(tmp_path) in py_lines[0], py_lines[0]
    assert not os.listdir(tmp_path)  # refused before anything was written
