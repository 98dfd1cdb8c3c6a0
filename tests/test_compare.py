"""compare: golden outputs from committed fixture files (tests/fixtures, synthetic numbers)."""
import json

import pytest

import atsdbench
from atsdbench import comparison

FORMATS = ["text", "markdown", "csv", "json", "commit", "ministat"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_golden_formats(cli, fixtures, fmt):
    p = cli("compare", "before.json", "after.json", "--format", fmt, cwd=fixtures)
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout == (fixtures.parent / "golden" / f"compare_before_after.{fmt}").read_text()


@pytest.mark.parametrize("args,golden", [
    (["before.json", "after.json", "again.json"], "compare_three.text"),
    (["before.json", "after.json", "--test", "student", "--confidence", "99"], "compare_student99.text"),
    (["before.json", "after.json", "--metric", "median"], "compare_median.text"),
])
def test_golden_variants(cli, fixtures, args, golden):
    p = cli("compare", *args, cwd=fixtures)
    assert p.returncode == 0 and p.stdout == (fixtures.parent / "golden" / golden).read_text()


def test_commit_format_is_paste_ready(cli, fixtures):
    out = cli("compare", "before.json", "after.json", "--format", "commit", cwd=fixtures).stdout
    lines = out.splitlines()
    assert lines[0] == "mprotect rate (GB/s)" and lines[1].split() == ["Stride", "Before", "After", "Speedup"]
    assert all(line == line.rstrip() for line in lines) and "\x1b" not in out
    assert lines[2].split() == ["64K", "5.9", "6.6", "12%"]


def test_file_against_itself_is_zero_and_no_difference(fixtures):
    for test in ("welch", "student", "mannwhitney"):
        frame = atsdbench.compare(str(fixtures / "before.json"), str(fixtures / "before.json"), test=test)
        assert (frame["speedup_pct"] == 0).all() and not frame["significant"].any()


def test_python_api_columns(fixtures):
    frame = atsdbench.compare(str(fixtures / "before.json"), str(fixtures / "after.json"),
                              str(fixtures / "again.json"), confidence=90)
    assert list(frame.columns) == comparison.COLUMNS and len(frame) == 8
    assert set(frame["unit"]) == {"round"} and set(frame["confidence"]) == {90.0}
    assert set(frame["n_base"]) == {5}


def test_json_and_csv_agree(cli, fixtures):
    rows = json.loads(cli("compare", "before.json", "after.json", "--format", "json", cwd=fixtures).stdout)
    assert rows[0]["significant"] is True and rows[0]["stride"] == "64K"
    csv_lines = cli("compare", "before.json", "after.json", "--format", "csv", cwd=fixtures).stdout.splitlines()
    assert csv_lines[0].split(",") == comparison.COLUMNS and len(csv_lines) == 1 + len(rows)


def test_warnings_name_differences_and_missing_strides(cli, fixtures):
    p = cli("compare", "before.json", "single_round.json", "small_other.json", cwd=fixtures)
    assert p.returncode == 0
    assert "differ in size: 1G in before.json, 1G in single_round.json, 64M in small_other.json" in p.stderr
    assert "differ in bystanders" in p.stderr
    assert "stride 2M is missing from small_other.json" in p.stderr
    assert "single round" in p.stderr and "one pass" in p.stdout


def test_kernel_difference_alone_is_silent(cli, fixtures):
    assert cli("compare", "before.json", "after.json", cwd=fixtures).stderr == ""


def test_unit_pass_says_so(cli, fixtures):
    p = cli("compare", "before.json", "after.json", "--unit", "pass", cwd=fixtures)
    assert "ignores between-round variance" in p.stderr and "N (base/new) = 20/20" in p.stdout


def test_warmup_samples_are_never_used(fixtures):
    r = atsdbench.load(str(fixtures / "before.json"))
    from atsdbench import stats

    obs = stats.observations(r.samples, 65536)
    assert len(obs) == 5 and 0 not in set(r.measured["round"])


@pytest.mark.parametrize("args,message", [
    (["before.json"], "needs a baseline file and at least one new file"),
    (["before.json", "missing.json"], "missing.json: no such file"),
    (["before.json", "make_fixtures.py"], "is not JSON"),
    (["before.json", "after.json", "--format", "xml"], "--format must be one of"),
    (["before.json", "after.json", "--test", "ttest"], "--test must be"),
    (["before.json", "after.json", "--confidence", "97"], "--confidence must be one of"),
    (["before.json", "after.json", "--metric", "median", "--test", "welch"], "does not test the median"),
    (["before.json", "after.json", "--labels", "a,b,c"], "3 labels for 2 files"),
])
def test_bad_input(cli, fixtures, args, message):
    p = cli("compare", *args, cwd=fixtures)
    assert p.returncode == 2 and message in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_newer_schema_and_not_a_result(cli, fixtures, tmp_path):
    data = json.loads((fixtures / "before.json").read_text())
    data["schema_version"] = 2
    (tmp_path / "new.json").write_text(json.dumps(data))
    (tmp_path / "other.json").write_text('{"hello": 1}')
    p = cli("compare", str(fixtures / "before.json"), str(tmp_path / "new.json"))
    assert p.returncode == 2 and "schema_version 2" in p.stderr
    p = cli("compare", str(fixtures / "before.json"), str(tmp_path / "other.json"))
    assert p.returncode == 2 and "not an atsdbench result" in p.stderr


def test_no_common_stride(cli, fixtures, tmp_path):
    data = json.loads((fixtures / "before.json").read_text())
    for s in data["samples"]:
        s["stride_bytes"] = 8 << 20
    (tmp_path / "eight.json").write_text(json.dumps(data))
    p = cli("compare", str(fixtures / "before.json"), str(tmp_path / "eight.json"))
    assert p.returncode == 2 and "no stride in common" in p.stderr


def test_show(cli, fixtures):
    p = cli("show", "before.json", cwd=fixtures)
    assert p.returncode == 0 and "N" in p.stdout and "GB/s per round" in p.stdout
    assert "64K" in p.stdout and "CV%" in p.stdout
    p = cli("show", "single_round.json", cwd=fixtures)
    assert "single round" in p.stderr


def test_replicate_runs_use_the_run_as_unit(cli, fixtures):
    p = cli("compare", "before.json,again.json", "after.json,after.json", cwd=fixtures)
    assert p.returncode == 0 and "observation = one run" in p.stdout and "N (base/new) = 2/2" in p.stdout
    p = cli("compare", "before.json,again.json", "after.json", cwd=fixtures)
    assert "observation = one round" in p.stdout and "N (base/new) = 10/5" in p.stdout
    p = cli("compare", "before.json,again.json", "after.json", "--unit", "run", cwd=fixtures)
    assert p.returncode == 2 and "needs two or more replicate runs" in p.stderr


def test_group_observations_are_run_means(fixtures):
    from atsdbench import stats

    group = comparison.load_group(f"{fixtures / 'before.json'},{fixtures / 'again.json'}")
    obs = comparison.group_observations(group, 65536, "run", "mean")
    assert list(obs) == pytest.approx([stats.observations(r.samples, 65536).mean() for r in group])


def test_fewer_than_two_observations_is_na_and_says_why(cli, fixtures, tmp_path):
    import json

    data = json.loads((fixtures / "before.json").read_text())
    data["samples"] = [s for s in data["samples"] if s["round"] in (0, 1) and s["rep"] in (0, 1)]  # one timed pass
    (tmp_path / "one.json").write_text(json.dumps(data))
    p = cli("compare", str(tmp_path / "one.json"), str(fixtures / "after.json"))
    assert p.returncode == 0 and "n/a (fewer than 2 observations)" in p.stdout
    assert "no CI (fewer than 2 observations)" in p.stderr
    assert "5.9" in p.stdout or "5.8" in p.stdout  # the rates are still shown


def test_show_has_counter_and_expected_flush_columns(cli, fixtures, tmp_path):
    import json

    data = json.loads((fixtures / "before.json").read_text())
    data["host"]["tlb_single_page_flush_ceiling"] = 33
    (tmp_path / "c.json").write_text(json.dumps(data))
    out = cli("show", str(tmp_path / "c.json")).stdout
    assert "IPIs/call" in out and "flushes/call" in out and "expected flush" in out
    assert [line.split()[-1] for line in out.splitlines() if line.startswith(("64K", "4M"))] == ["per-page", "full"]
