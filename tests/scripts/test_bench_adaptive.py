"""scripts/bench_adaptive.py (the cost of `run --until`, docs/adaptive.md): its bad input, and a smoke of
one repeat over 16M in this process (live: it measures, about 1.5 s, --max-time bounding its longest run;
its times are not asserted)."""
import json

import pytest


@pytest.fixture(scope="module")
def bench(script):
    return script("bench_adaptive")


@pytest.mark.parametrize("args", [["--targets", "x"], ["--repeat", "0"], ["--size", "1X"]])
def test_bench_adaptive_bad_input_is_one_line(bench, args, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(args)
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == "" and err.startswith("bench_adaptive: ") and err.count("\n") == 1, err


@pytest.mark.live
def test_bench_adaptive_runs_small(bench, tmp_path, capsys):
    rows = tmp_path / "rows.json"
    bench.main(["--repeat", "1", "--targets", "50", "--max-time", "1s", "--min-rounds", "2", "--size", "16M",
                "--strides", "64K,1M", "--rounds", "2", "--reps", "1", "--json", str(rows)])
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].startswith("size 16M, strides 64K,1M, 1 reps; fixed plan 2 rounds; adaptive from 2 rounds")
    assert lines[1].split() == ["plan", "seconds", "rounds", "worst", "half-width", "64K", "1M", "stopped"]
    assert lines[2].split()[0] == "fixed" and lines[3].split()[:2] == ["until", "50%"], out
    assert "repeat 1/1 done" in err
    plans = [r["plan"] for r in json.loads(rows.read_text())["rows"]]
    assert plans[:2] == ["fixed", "until 50%"] and set(plans) <= {"fixed", "until 50%", "until own"}
