"""The standalone `atsd` program (csrc/, plain make) and `atsdbench import`."""
import os
import subprocess

import pytest

import atsdbench
from atsdbench import importer, plan as plans
from atsdbench.errors import UsageError

CSRC = os.path.join(os.path.dirname(__file__), "..", "csrc")



def test_runs_and_imports(atsd, tmp_path, cli):
    out = tmp_path / "run.txt"
    p = subprocess.run([atsd, "--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "2", "--seed", "5",
                        "--latency", "--label", "minimal", "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    r = cli("import", out, "-o", tmp_path / "run.json")
    assert r.returncode == 0 and "p99 us" in r.stdout
    res = atsdbench.load(str(tmp_path / "run.json"))
    s = res.samples
    assert res.complete and res.config["label"] == "minimal" and res.config["source"] == "atsd"
    assert len(s) == 3 * 3 * 2 and len(res.measured) == 2 * 2 * 2 and (s["gbps"] > 0).all()
    assert not s.duplicated(["round", "rep", "stride_bytes"]).any()
    assert (s["calls"] == (16 << 20) // s["stride_bytes"]).all()
    assert res.host["page_size"] == os.sysconf("SC_PAGE_SIZE") and res.host["affinity"] == "unknown"


def test_same_seed_same_order_as_atsdbench(atsd, tmp_path):
    out = tmp_path / "o.txt"
    subprocess.run([atsd, "--size", "16M", "--strides", "64K,1M,2M,4M", "--rounds", "1", "--reps", "2", "--seed",
                    "42", "-o", str(out)], check=True, capture_output=True)
    res = importer.load(str(out))
    plan = plans.make_plan(size="16M", rounds=1, reps=2, seed=42)
    got = [(s["round"], s["stride_bytes"]) for s in res._records]
    want = [(r, st) for r in range(2) for _, _, st in plans.round_order(plan, r)]
    assert got == want


@pytest.mark.parametrize("args,message", [
    (["--size", "0"], "size must not be zero"),
    (["--strides", "6K"], "is not a multiple of the page size"),
    (["--size", "64M", "--strides", "128M"], "is larger than the size"),
    (["--size", "65M", "--strides", "2M"], "is not a multiple of stride"),
    (["--size", "1T"], "more than the memory available"),
    (["--rounds", "0"], "--rounds must be at least 1"),
    (["--bystanders", "4096"], "other CPUs"),
    (["--cpu", "4095"], "not in this process's CPU affinity"),
    (["--pages", "huge"], "--pages must be"),
    (["-o", "/nonexistent-dir/x"], "cannot write output"),
])
def test_bad_plans(atsd, tmp_path, args, message):
    argv = [atsd, "--size", "16M", "-o", str(tmp_path / "x.txt")] + args
    p = subprocess.run(argv, capture_output=True, text=True)
    assert p.returncode == 2 and message in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("text,message", [
    ("hello\n", "is not atsd output"),
    ("atsd-output 1\nhost\ta=1\n", "has no host or config line"),
    ("atsd-output 1\nwhat\tx=1\n", "unknown record"),
    ("atsd-output 1\nsample\tround=x\n", "is not a whole number"),
    ("atsd-output 1\nsample\tround=1\n", "sample without"),
])
def test_import_rejects(tmp_path, text, message, cli):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        importer.load(str(path))
    p = cli("import", path, "-o", tmp_path / "o.json")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


def test_import_missing_file(cli, tmp_path):
    p = cli("import", tmp_path / "nope.txt")
    assert p.returncode == 2 and "no such file" in p.stderr


def test_axes_same_cells_same_order_as_atsdbench(atsd, tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no bystander possible")
    out = tmp_path / "ax.txt"
    subprocess.run([atsd, "--size", "16M", "--strides", "64K,1M", "--rounds", "2", "--reps", "1", "--seed", "9",
                    "--bystanders", "0,1", "--pages", "base,thp", "-o", str(out)], check=True, capture_output=True)
    res = importer.load(str(out))
    plan = plans.make_plan(size="16M", strides="64K,1M", rounds=2, reps=1, seed=9, bystanders="0,1",
                           pages="base,thp")
    assert res.config["axes"] == plan.axes and res.config["cells"] == plan.config()["cells"]
    got = [(s["round"], s["cell"], s["stride_bytes"]) for s in res._records]
    want = [(r, c, st) for r in range(3) for c in plans.cell_order(plan, r)
            for _, _, st in plans.round_order(plan, r, cell=c)]
    assert got == want
    assert all(plan.cells[s["cell"]]["pages"] == s["pages"] for s in res._records)
