"""scripts/bench_wis.py: the skip without a checkout, will-it-scale's output read as main.c prints it,
and (live) a quick side-by-side: against a stand-in checkout whose binaries print what main.c prints
(always), and against a real checkout named by ATSDBENCH_WIS_DIR where one is given and builds."""
import os
import shutil
import stat
import subprocess
import sys

import pytest

WIS_OUTPUT = """testcase:TLB flush of anonymous memory private mapping
warmup
min:100 max:110 total:210
min:100 max:110 total:210
min:100 max:110 total:210
min:100 max:110 total:210
min:100 max:110 total:210
min:100 max:110 total:210
measurement
min:90 max:100 total:190
min:10 max:200 total:210
min:95 max:105 total:200
average:205
"""


@pytest.fixture(scope="module")
def bench(script):
    return script("bench_wis")


def test_without_a_checkout_it_skips_with_a_reason(bench, capsys):
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("bench_wis: skipped: no will-it-scale checkout given (--wis DIR")


def test_not_a_checkout_is_one_line_and_exit_2(bench, tmp_path, capsys):
    assert bench.main(["--wis", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"bench_wis: {tmp_path} is not a will-it-scale checkout (no main.c)"]


def test_will_it_scales_output_is_read_as_main_c_prints_it(bench):
    average, seconds = bench.parse_wis(WIS_OUTPUT)
    # the first second after "measurement" is one main.c leaves out of its average
    assert average == 205 and seconds == [(10, 200), (95, 105)]
    with pytest.raises(ValueError):
        bench.parse_wis("warmup\nmin:1 max:1 total:2\n")


def _stand_in(path):
    """A checkout whose make builds tlb_flush2_threads as a script printing WIS_OUTPUT."""
    path.mkdir()
    (path / "main.c").write_text("/* stand-in */\n")
    (path / "stand_in.sh").write_text(f"#!/bin/sh\ncat <<'EOF'\n{WIS_OUTPUT}EOF\n")
    (path / "Makefile").write_text("tlb_flush2_threads: stand_in.sh\n\tcp stand_in.sh $@ && chmod +x $@\n")
    return path


@pytest.mark.live
def test_quick_side_by_side_against_a_stand_in(bench, tmp_path, capsys):
    if not shutil.which("make"):
        pytest.skip("no make")
    wis = _stand_in(tmp_path / "wis")
    assert bench.main(["--wis", str(wis), "--quick", "--tasks", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    row = next(line.split() for line in lines if line.split()[:1] == ["1"])
    assert row[1] == "205" and float(row[3]) > 0  # will-it-scale's average; a ratio, whatever it is
    assert row[4] == "50%"  # one of its two measured seconds had a task at under half the loops
    assert os.stat(wis / "tlb_flush2_threads").st_mode & stat.S_IXUSR


@pytest.mark.live
def test_quick_side_by_side_against_will_it_scale(tmp_path):
    """Set ATSDBENCH_WIS_DIR to a will-it-scale checkout (libhwloc-dev installed) to run this."""
    wis = os.environ.get("ATSDBENCH_WIS_DIR")
    if not wis:
        pytest.skip("ATSDBENCH_WIS_DIR names no will-it-scale checkout")
    copy = tmp_path / "wis"
    shutil.copytree(wis, copy)
    script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "bench_wis.py")
    p = subprocess.run([sys.executable, script, "--wis", str(copy), "--quick", "--tasks", "1"],
                       capture_output=True, text=True, timeout=600)
    if p.returncode == 2 and "building will-it-scale failed" in p.stderr:
        pytest.skip(p.stderr.strip())
    assert p.returncode == 0, p.stderr
    assert any(line.split()[:1] == ["1"] for line in p.stdout.splitlines()), p.stdout
