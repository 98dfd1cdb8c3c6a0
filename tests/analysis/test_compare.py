"""compare: golden outputs from committed fixture files (tests/fixtures, synthetic numbers)."""
import math
import json

import pytest

import atsdbench
from atsdbench.data import noise_profile, results, sides
from atsdbench.analysis import compare as comparison
from conftest import unwrap

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
    p = cli("compare", *args, "--unit", "round", cwd=fixtures)
    assert p.returncode == 0 and p.stdout == (fixtures.parent / "golden" / golden).read_text()


def test_commit_format_is_paste_ready(cli, fixtures):
    out = cli("compare", "before.json", "after.json", "--format", "commit", "--unit", "round", cwd=fixtures).stdout
    lines = out.splitlines()
    assert lines[0] == "mprotect rate (GB/s), geometric mean"
    assert lines[1].split() == ["Stride", "Before", "After", "Speedup"]
    assert all(line == line.rstrip() for line in lines) and "\x1b" not in out
    assert lines[2].split() == ["64K", "5.9", "6.5", "12%"]
    # a closing statement (test, unit, N per side, confidence), in lines of at most 100 columns
    assert len(lines) == 9 and lines[6].startswith("Welch's t on log rates") and max(map(len, lines)) <= 100
    foot = " ".join(lines[6:])
    assert "per round" in foot and "N = 5 per side" in foot and "95% confidence" in foot


def test_commit_format_marks_what_is_not_proven(cli, fixtures):
    out = cli("compare", "before.json", "again.json", "after.json", "--format", "commit", "--labels", "v1,v2,v3",
              "--unit", "round", cwd=fixtures).stdout.splitlines()
    assert out[1].split() == ["Stride", "v1", "v2", "Speedup", "v2", "v3", "Speedup", "v3"]
    row = out[5]  # 4M: v2 is the same kernel again (n.s.), v3 is 12% faster and proven
    assert row.split()[:4] == ["4M", "321.0", "328.3", "2%"] and row.split()[4] == "n.s."
    foot = " ".join(out[6:])
    assert row.rstrip().endswith("12%") and foot.endswith("n.s. = no difference proven")
    assert "N = 5 per side" in foot and "Holm-adjusted" in foot


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
    rows = json.loads(cli("compare", "before.json", "after.json", "--format", "json", "--unit", "round", cwd=fixtures).stdout)
    assert rows[0]["significant"] is True and rows[0]["stride"] == "64K"
    csv_lines = cli("compare", "before.json", "after.json", "--format", "csv", "--unit", "round", cwd=fixtures).stdout.splitlines()
    columns = csv_lines[0].split(",")  # the rate columns, then the counts' (these files count flushes; IPIs 0)
    assert columns[:len(comparison.COLUMNS)] == comparison.COLUMNS and len(csv_lines) == 1 + len(rows)
    assert columns[len(comparison.COLUMNS):] == ["flushes_base", "flushes_new", "flushes_change", "flushes_changed",
                                                 "centre"]
    assert rows[0]["centre"] == "geometric mean" and csv_lines[1].endswith(",geometric mean")
    assert rows[0]["counts"] == {"flushes": {"base": 1.0, "new": 1.0, "change": 0.0, "changed": False}}


def test_warnings_name_differences_and_missing_strides(cli, fixtures):
    p = cli("compare", "before.json", "single_round.json", "small_other.json", cwd=fixtures)
    assert p.returncode == 0
    assert "differ in size: 1G in Before, 1G in One round, 64M in Other" in p.stderr  # sides by label
    assert "differ in bystanders" in p.stderr
    assert "strides 2M, 4M are missing from Other: Other vs Before has no row there" in unwrap(p.stderr)
    assert "single round" in p.stderr and "one observation per pass" in p.stdout


def test_kernel_difference_alone_is_silent(cli, fixtures):
    assert cli("compare", "before.json", "after.json", cwd=fixtures).stderr == ""


def test_unit_pass_says_so(cli, fixtures):
    p = cli("compare", "before.json", "after.json", "--unit", "pass", cwd=fixtures)
    assert "ignores between-round variance" in p.stderr and "N = 20/20" in p.stdout


def test_warmup_samples_are_never_used(fixtures):
    r = atsdbench.load(str(fixtures / "before.json"))
    from atsdbench.analysis import stats

    obs = stats.observations(r.table, 65536)
    assert len(obs) == 5 and 0 not in set(r.measured["round"])


@pytest.mark.parametrize("args,message", [
    (["before.json"], "needs a baseline file and at least one new file"),
    (["before.json", "missing.json"], "missing.json: no such file"),
    (["before.json", "make_fixtures.py"], "is not JSON, not a result file (atsd's output: `atsdbench import`)"),
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
    from atsdbench.data.results import SCHEMA_VERSION

    newer = SCHEMA_VERSION + 1
    data["schema_version"] = newer
    (tmp_path / "new.json").write_text(json.dumps(data))
    (tmp_path / "other.json").write_text('{"hello": 1}')
    p = cli("compare", str(fixtures / "before.json"), str(tmp_path / "new.json"))
    assert p.returncode == 2 and f"schema_version {newer}" in p.stderr
    p = cli("compare", str(fixtures / "before.json"), str(tmp_path / "other.json"))
    assert p.returncode == 2 and "not an atsdbench result" in p.stderr


def test_no_common_stride(cli, fixtures, tmp_path):
    data = json.loads((fixtures / "before.json").read_text())
    for s in data["samples"]:  # every stride moved, each to one of its own (a file must not repeat a pass)
        s["stride_bytes"] <<= 10
    data["config"]["strides"] = [s << 10 for s in data["config"]["strides"]]
    (tmp_path / "eight.json").write_text(json.dumps(data))
    p = cli("compare", str(fixtures / "before.json"), str(tmp_path / "eight.json"))
    assert p.returncode == 2 and "no stride in common" in p.stderr


def test_show(cli, fixtures):
    p = cli("show", "before.json", cwd=fixtures)
    assert p.returncode == 0 and "N" in p.stdout and "GB/s of round means" in p.stdout
    assert "64K" in p.stdout and "CV%" in p.stdout
    p = cli("show", "single_round.json", cwd=fixtures)
    assert "single round" in p.stderr


def _retaken(fixtures, tmp_path, name="after.json"):
    """A second run with the rates of the fixture's (its own samples: a field more each)."""
    data = json.loads((fixtures / name).read_text())
    for s in data["samples"]:
        s["retaken"] = 1
    path = tmp_path / f"retaken-{name}"
    path.write_text(json.dumps(data))
    return str(path)


def test_replicate_runs_use_the_run_as_unit(cli, fixtures, tmp_path):
    p = cli("compare", "before.json,again.json", f"after.json,{_retaken(fixtures, tmp_path)}", cwd=fixtures)
    assert p.returncode == 0 and "one observation per file;" in p.stdout
    assert "N = 2/2" in p.stdout
    assert "Welch" in p.stdout and "one side only" not in p.stderr
    p = cli("compare", "before.json", "after.json", "--unit", "run", cwd=fixtures)
    assert p.returncode == 2 and "needs replicate runs" in p.stderr


def test_mixed_groups_are_student_on_runs_and_say_the_assumption(cli, fixtures):
    """Replicates on one side only: never pool rounds of different runs silently.  The single run is
    one observation; the replicated side's run-to-run spread is assumed to hold for it (Student)."""
    p = cli("compare", "before.json,again.json", "after.json", "--format", "csv", cwd=fixtures)
    assert p.returncode == 0 and "replicate runs on one side only" in p.stderr
    rows = p.stdout.splitlines()[1:]
    assert all(",student,95.0,run,2,1," in r for r in rows)
    p = cli("compare", "before.json,again.json", "after.json", cwd=fixtures)
    assert "one side replicated: the single run is assumed to vary as those runs" in p.stdout
    p = cli("compare", "before.json,again.json", "after.json", "--test", "welch", cwd=fixtures)
    assert p.returncode == 2 and "--test welch needs replicate runs on every side" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = cli("compare", "before.json,again.json", "after.json", "--unit", "round", cwd=fixtures)
    assert p.returncode == 0 and "N = 10/5" in p.stdout and "pools the rounds" in p.stderr


def test_holm_by_default_and_adjust_none(fixtures):
    import numpy as np

    from atsdbench.analysis import multiplicity

    files = [str(fixtures / f) for f in ("before.json", "after.json", "again.json")]
    holm = atsdbench.compare(*files, unit="round")
    assert set(holm["adjust"]) == {"holm"} and len(holm) == 8  # one family: every stride of every file
    assert list(holm["p_adjusted"]) == pytest.approx(list(multiplicity.holm(holm["p_value"])))
    assert (holm["p_adjusted"] >= holm["p_value"]).all()
    assert list(holm["significant"]) == list(holm["p_adjusted"] < 0.05)
    none = atsdbench.compare(*files, adjust="none", unit="round")
    assert list(none["p_adjusted"]) == list(none["p_value"]) == list(holm["p_value"])
    assert none["significant"].sum() > holm["significant"].sum()
    assert list(none["significant"]) == list(np.array(none["p_value"]) < 0.05)


def test_legend_says_which_adjustment(cli, fixtures):
    out = cli("compare", "before.json", "after.json", "again.json", "--unit", "round", cwd=fixtures).stdout
    assert "Holm-adjusted p < 0.05 over the 8 comparisons made" in out
    assert "n.s. (Holm)" in out  # a CI that excludes 0, not proven for the family
    out = cli("compare", "before.json", "after.json", "again.json", "--adjust", "none", "--unit", "round", cwd=fixtures).stdout
    assert "not adjusted for the 8 made (--adjust none)" in out and "(Holm)" not in out
    p = cli("compare", "before.json", "after.json", "--adjust", "bonferroni", "--unit", "round", cwd=fixtures)
    assert p.returncode == 2 and "--adjust must be holm or none" in p.stderr


def _rounds_only(fixtures, tmp_path, name, keep):
    data = json.loads((fixtures / name).read_text())
    data["samples"] = [s for s in data["samples"] if s["round"] in keep]
    path = tmp_path / f"{len(keep)}-{name}"
    path.write_text(json.dumps(data))
    return path


def test_median_with_three_rounds_warns_and_names_the_smallest_n(cli, fixtures, tmp_path):
    base = _rounds_only(fixtures, tmp_path, "before.json", (0, 1, 2, 3))  # round 0 is the warm-up
    new = _rounds_only(fixtures, tmp_path, "after.json", (0, 1, 2, 3))
    p = cli("compare", base, new, "--metric", "median", "--unit", "round")
    assert p.returncode == 0
    warning = [line for line in unwrap(p.stderr).splitlines() if "no CI" in line]
    assert len(warning) == 1 and "strides 64K, 1M, 2M, 4M" in warning[0]
    assert "3 vs 3 observations cannot reach 95% confidence with a median test; 4 a side could" in warning[0]
    assert p.stdout.count("n/a (too few to prove any)") == 4
    base = _rounds_only(fixtures, tmp_path, "before.json", (0, 1, 2, 3, 4))
    new = _rounds_only(fixtures, tmp_path, "after.json", (0, 1, 2, 3, 4))
    p = cli("compare", base, new, "--metric", "median", "--adjust", "none", "--unit", "round")
    assert p.returncode == 0 and "no CI" not in p.stderr and "faster" in p.stdout


def _with_cells(fixtures, tmp_path, name, cells):
    """A fixture turned into a file with cells: the same samples once per cell, rates scaled."""
    data = json.loads((fixtures / name).read_text())
    samples = []
    for index, (spec, scale) in enumerate(cells):
        for s in data["samples"]:
            samples.append(dict(s, cell=index, gbps=s["gbps"] * scale, **spec))
    data["samples"] = samples
    data["config"]["axes"] = {k: sorted({spec[k] for spec, _ in cells}) for k in cells[0][0]}
    data["config"]["cells"] = [spec for spec, _ in cells]
    path = tmp_path / f"cells-{name}"
    path.write_text(json.dumps(data))
    return path


def test_cells_are_matched_by_their_axis_values(cli, fixtures, tmp_path):
    base = _with_cells(fixtures, tmp_path, "before.json", [({"bystanders": 0}, 1.0), ({"bystanders": 1}, 0.5)])
    # the new file lists its cells in another order: matched by name, not by index
    new = _with_cells(fixtures, tmp_path, "after.json", [({"bystanders": 1}, 0.5), ({"bystanders": 0}, 1.0)])
    cmp = comparison.compare(sides.load([str(base), str(new)]), unit="round")
    assert [(r["cell"], r["stride"]) for r in cmp.rows][:5] == [
        ("bystanders=0", "64K"), ("bystanders=0", "1M"), ("bystanders=0", "2M"), ("bystanders=0", "4M"),
        ("bystanders=1", "64K")]
    assert len(cmp.rows) == 8 and cmp.tests_made == 8
    by = {(r["cell"], r["stride"]): r for r in cmp.rows}
    assert by["bystanders=1", "64K"]["base_gbps"] == pytest.approx(by["bystanders=0", "64K"]["base_gbps"] / 2)
    assert by["bystanders=1", "64K"]["speedup_pct"] == pytest.approx(by["bystanders=0", "64K"]["speedup_pct"])
    p = cli("compare", base, new, "--unit", "round")
    assert p.returncode == 0 and p.stdout.splitlines()[1].split()[:2] == ["Cell", "Stride"]
    assert "over the 8 comparisons made" in p.stdout
    p = cli("compare", base, new, "--format", "ministat", "--unit", "round")
    assert "stride 64K bystanders=1:" in p.stdout
    other = _with_cells(fixtures, tmp_path, "again.json", [({"bystanders": 2}, 1.0), ({"bystanders": 0}, 1.0)])
    p = cli("compare", base, other, "--unit", "round")
    assert p.returncode == 0 and "strides 64K, 1M, 2M, 4M of bystanders=1 are missing from Again" in unwrap(p.stderr)


def test_group_observations_are_run_means(fixtures):
    from atsdbench.analysis import stats

    group = comparison.sub_runs(sides.files(f"{fixtures / 'before.json'},{fixtures / 'again.json'}"))
    obs = comparison.group_observations(group, 65536, "run", "mean")
    assert list(obs) == pytest.approx([stats.observations(r.table, 65536).mean() for r in group])


def test_fewer_than_two_observations_is_na_and_says_why(cli, fixtures, tmp_path):
    import json

    data = json.loads((fixtures / "before.json").read_text())
    data["samples"] = [s for s in data["samples"] if s["round"] in (0, 1) and s["rep"] in (0, 1)]  # one timed pass
    (tmp_path / "one.json").write_text(json.dumps(data))
    p = cli("compare", str(tmp_path / "one.json"), str(fixtures / "after.json"), "--unit", "round")
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
    last = {line.split()[0]: line.split()[-1] for line in out.splitlines() if line.startswith(("64K", "4M"))}
    assert last == {"64K": "per-page", "4M": "full"}  # the last column of the table's last block


def _series_file(tmp_path, name, means, stride=65536):
    import atsdbench.data.results as results

    samples = [{"round": r, "rep": 0, "order": 0, "stride_bytes": stride, "warmup": False, "ns": int(1e9 / m),
                "seconds": 1 / m, "calls": 4, "gbps": float(m), "us_per_call": 1.0, "traced": False}
               for r, m in enumerate(means)]
    res = results.Result({"kernel_release": name}, {"size": 1 << 30, "rounds": len(means), "reps": 1,
                                                    "pages": "base", "strides": [stride], "label": name}, samples)
    path = tmp_path / f"{name}.json"
    results.save(res, str(path))
    return str(path)


def test_long_runs_compare_batch_means_and_short_autocorrelated_runs_warn(tmp_path):
    import numpy as np

    rng = np.random.default_rng(3)
    x = np.cumsum(rng.normal(0, 0.3, 40)) + 20  # a random walk: strongly autocorrelated
    cmp = comparison.compare(sides.load([_series_file(tmp_path, "a", x), _series_file(tmp_path, "b", x[::-1] + 0.01)]))
    assert any("5 batch means" in w for w in cmp.warnings)
    assert cmp.frame()["n_base"].iloc[0] == 5
    short = np.linspace(20, 22, 10)  # a trend: lag-1 high for 10 rounds
    cmp = comparison.compare(sides.load([_series_file(tmp_path, "c", short), _series_file(tmp_path, "d", short[::-1])]))
    assert any("autocorrelated" in w and "over 10 rounds" in w for w in cmp.warnings)


def _with_sub_runs(fixtures, tmp_path, name, source="before.json"):
    """A fixture's rounds as the sub-runs of one --runs file: rounds 0-1 run 0, 2-3 run 1, 4 run 2."""
    data = json.loads((fixtures / source).read_text())
    for s in data["samples"]:
        s["run"] = s["round"] // 2
    data["config"].update(runs=3, gap=20.0)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_a_runs_file_is_its_sub_runs(fixtures, tmp_path):
    from atsdbench.data import results

    r = results.load(str(_with_sub_runs(fixtures, tmp_path, "a.json")))
    parts = r.sub_runs()
    assert [p.sub_run for p in parts] == [0, 1, 2]
    assert sum(len(p.records) for p in parts) == len(r.records) and all(p.config is not r.config for p in parts)
    assert results.load(str(fixtures / "before.json")).sub_runs()[0].path.endswith("before.json")


def test_compare_of_runs_files_uses_the_sub_run_as_the_unit(cli, fixtures, tmp_path):
    """One --runs file a side is one session a side: its sub-runs are the unit, but the drift between
    sessions (measured: 20-69% A/A, scripts/bench_defaults.py) is not in them, so no verdict unless
    --unit run asks for the within-session one."""
    a = _with_sub_runs(fixtures, tmp_path, "a.json")
    b = _with_sub_runs(fixtures, tmp_path, "b.json", "after.json")
    cmp = comparison.compare(sides.load([str(a), str(b)]))
    assert cmp.unit == "run" and cmp.level == "session" and {(r["n_base"], r["n_new"]) for r in cmp.rows} == {(3, 3)}
    assert cmp.withheld and all(r["verdict_withheld"] and not r["significant"] for r in cmp.rows)
    assert cmp.boots == [1, 1]
    p = cli("compare", a, b)
    assert p.returncode == 0, p.stderr
    assert "one observation per sub-run;" in p.stdout
    assert p.stdout.count("no verdict") == 5 and "no verdict: one session a side" in p.stdout
    assert "N = 3/3" in p.stdout and "no verdict: one session a side" in p.stdout
    assert "a.json,a.json" not in p.stdout + p.stderr  # a --runs file is named once
    p = cli("compare", a, b, "--format", "commit", "--unit", "run")
    assert "one observation per sub-run; N = 3 per side; one session a side; one boot a side" in \
        " ".join(p.stdout.splitlines())
    asked = comparison.compare(sides.load([str(a), str(b)]), unit="run")
    assert not asked.withheld and all(not math.isnan(r["mde_pct"]) for r in asked.rows)


def test_replicate_files_of_sub_runs_are_one_observation_each(fixtures, tmp_path):
    """Where a side has two or more files, every file is one observation, its sub-runs averaged inside
    it: the sub-runs of several sessions are not pooled as if they were sessions."""
    a = _with_sub_runs(fixtures, tmp_path, "a.json")
    a2 = _with_sub_runs(fixtures, tmp_path, "a2.json", "again.json")
    b = _with_sub_runs(fixtures, tmp_path, "b.json", "after.json")
    cmp = comparison.compare(sides.load([[str(a), str(a2)], str(b)]), test="student")
    assert cmp.level == "file" and cmp.unit == "run" and not cmp.withheld
    assert {(r["n_base"], r["n_new"]) for r in cmp.rows} == {(2, 1)} and cmp.mixed
    groups, level = comparison.replicates(sides.load([[str(a), str(a2)], str(b)]))
    assert level == "file" and [len(g) for g in groups] == [2, 1]
    groups, level = comparison.replicates(sides.load([str(a), str(b)]))
    assert level == "session" and [len(g) for g in groups] == [3, 3]


def test_replicates_from_two_boots_are_said_to_cover_it(fixtures, tmp_path):
    from atsdbench.data import results

    sides = []
    for name, boot in (("x1.json", "b1"), ("x2.json", "b2"), ("y1.json", "b1"), ("y2.json", "b2")):
        data = json.loads((fixtures / ("before.json" if name[0] == "x" else "after.json")).read_text())
        data["host"]["boot_id"] = boot
        for sample in data["samples"]:  # each a run of its own: copies of one run are one observation
            sample["retaken"] = name
        (tmp_path / name).write_text(json.dumps(data))
        sides.append(results.load(str(tmp_path / name)))
    cmp = comparison.compare([sides[:2], sides[2:]])
    assert cmp.boots == [2, 2]
    from atsdbench.render import compare as render

    assert "boot-to-boot not measured" not in render.legend(cmp)


def test_batch_means_are_named_as_the_observation(fixtures, tmp_path):
    """From 20 rounds a single run's observations are 5 batch means: the legend says so, not "one round"."""
    from atsdbench.render import compare as render

    paths = []
    for name in ("before.json", "after.json"):
        data = json.loads((fixtures / name).read_text())
        measured = [s for s in data["samples"] if not s["warmup"]]
        first = min(s["round"] for s in measured)
        # 5 copies of the 5 measured rounds, numbered on: 25 rounds
        data["samples"] = [{**s, "round": s["round"] - first + 5 * k} for k in range(5) for s in measured]
        data["config"]["rounds"] = 25
        path = tmp_path / name
        path.write_text(json.dumps(data))
        paths.append(str(path))
    cmp = comparison.compare(sides.load(paths))
    assert cmp.batched == {0: [25], 1: [25]} and {(r["n_base"], r["n_new"]) for r in cmp.rows} == {(5, 5)}
    text = render.legend(cmp)
    assert "one observation per batch of consecutive rounds (5 a side)" in text
    assert "one observation per batch of consecutive rounds (5 a side)" in render.render_commit(cmp)
    assert any("slow drift not" in w and "docs/methodology.md#" in w for w in cmp.warnings)


def test_one_process_a_side_gets_no_verdict_unless_asked(cli, fixtures):
    """two single runs have no run-to-run variance; the default compare says so and gives no
    verdict (rates, speedup and a within-run interval only); --unit round asks for the within-run one."""
    cmp = comparison.compare(sides.load([str(fixtures / "before.json"), str(fixtures / "after.json")]))
    assert cmp.withheld and all(not r["significant"] and r["verdict_withheld"] for r in cmp.rows)
    assert all(math.isnan(r["mde_pct"]) for r in cmp.rows)
    out = cli("compare", "before.json", "after.json", cwd=fixtures).stdout
    assert "within-run interval" in out and "95% CI" not in out.splitlines()[1]
    assert out.count("no verdict") == 5 and "no verdict: one session a side" in out and "(5 a side)" in out
    assert "59%" not in out and "measured here" not in out  # our VM's evidence is in docs, not printed
    commit = cli("compare", "before.json", "after.json", "--format", "commit", cwd=fixtures).stdout
    assert commit.count("n.s.") >= 4 and "no verdict: one session a side" in commit
    asked = comparison.compare(sides.load([str(fixtures / "before.json"), str(fixtures / "after.json")]), unit="round")
    assert not asked.withheld and any(r["significant"] for r in asked.rows)


# ---- sides of one process with a noise profile: analysis/noise.py, data/noise_profile.py ----

@pytest.fixture(scope="module")
def sim():
    """The noise simulator (tests/support/noise_sim.py): sides and calibrations simulated with the measured
    noise, real schema."""
    import noise_sim

    return noise_sim


_CALIBRATIONS = {}


def _profiled_sides(sim, seed=1, change=0.0):
    """Two simulated sides (fresh each call: tests change them) and their calibrations, which cost
    seconds and are only read, so they are made once for each seed and change (the same draws)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    a = sim.simulate_side(rng, 1, 5, 0.0, 0.03, 0.0, 0.0, "A", "boot-a")
    b = sim.simulate_side(rng, 1, 5, 0.0, 0.03, 0.0, change, "B", "boot-b")
    if (seed, change) not in _CALIBRATIONS:
        _CALIBRATIONS[seed, change] = (sim.calibration(rng, 8, 5, 0.03, 0.0, 0.0, "A"),
                                       sim.calibration(rng, 8, 5, 0.03, 0.0, change, "B"))
    return (a, b, *_CALIBRATIONS[seed, change])


def _saved(tmp_path, a, b, pa, pb):
    from atsdbench.data import noise_profile, results

    paths = [str(tmp_path / n) for n in ("a.json", "b.json", "pa.json", "pb.json")]
    results.save(a, paths[0])
    results.save(b, paths[1])
    noise_profile.save(pa.data, paths[2])
    noise_profile.save(pb.data, paths[3])
    return paths


def test_one_process_a_side_with_profiles_gets_a_satterthwaite_verdict(sim):
    import numpy as np

    from atsdbench.analysis import detectable, noise, stats
    from atsdbench.render import compare as render

    a, b, pa, pb = _profiled_sides(sim, change=1.0)
    cmp = comparison.compare([a, b], noise_profiles=[pa, pb])
    assert cmp.unit == "round+noise-profile" and cmp.test == "satterthwaite" and not cmp.withheld
    assert set(cmp.noise_profiles) == {0, 1} and cmp.without_noise_profile == {}
    for r in cmp.rows:
        assert r["significant"] and not r["verdict_withheld"] and (r["n_base"], r["n_new"]) == (5, 5)
        assert r["profile_base"].startswith("calibration-A.json (8 sub-runs x 5 rounds, 150 s apart")
        assert r["profile_new"].startswith("calibration-B.json")
        # the row is the combination, recomputed here from its parts
        s = r["stride_bytes"]
        x, y = (np.log(stats.observations(side.table, s)) for side in (a, b))
        terms = noise.side_with_noise_profile(x, pa.entry("", s), 0, "A").terms + \
            noise.side_with_noise_profile(y, pb.entry("", s), 1, "B").terms
        variance, df = noise.combine(terms)
        assert len(terms) in (2, 4, 6) and r["mde_pct"] == pytest.approx(detectable.mde_pct(math.sqrt(variance), df,
                                                                                        tests=4))
        low, high, _ = stats.t_bounds(math.log(r["new_gbps"] / r["base_gbps"]), math.sqrt(variance), df)
        assert r["ci_low_pct"] == pytest.approx((math.exp(low) - 1) * 100)
    text = render.render_text(cmp)
    assert "95% CI" in text.splitlines()[1] and "faster" in text
    assert "between-run variance: noise profiles (8 sub-runs); boots not covered" in text
    assert cmp.rows[0]["profile_base"].startswith("calibration-A.json (8 sub-runs")
    assert "Welch-Satterthwaite t on log rates" in text
    commit = " ".join(render.render_commit(cmp).splitlines()[6:])
    assert commit.startswith("Welch-Satterthwaite t on log rates") and "noise profiles (A: calibration-A.json sha256 " in \
        commit and f"{pa.digest}, 8 sub-runs, 1970-01-01" in commit and "N = 5 per side" in commit and \
        "one boot a side" in commit
    assert "profile_base" in render.render_csv(cmp).splitlines()[0] and not cmp.noise_profile_notes
    assert pa.calibration["span_s"] == 7 * 150.0
    assert json.loads(render.render_json(cmp))[0]["profile_new"].startswith("calibration-B.json")
    assert "ignores the between-run variance" in render.render_ministat(cmp)


def test_a_side_without_a_profile_gets_no_verdict_and_the_command(sim):
    from atsdbench.render import compare as render

    a, b, pa, pb = _profiled_sides(sim, change=1.0)
    cmp = comparison.compare([a, b], noise_profiles=[pa])
    assert all(math.isnan(r["p_value"]) and r["note"] == "no noise profile for B" for r in cmp.rows)
    assert all(render.verdict(r) == "n/a (no noise profile for B)" for r in cmp.rows)
    assert any("no noise profile for B" in w and "atsdbench calibrate --size 256M --strides 64K,1M,2M,4M --rounds 5"
               in w for w in cmp.warnings)
    assert any("no noise profile for B" in w and "atsdbench calibrate" in w for w in cmp.warnings)
    assert "no profile for B" in render.render_commit(cmp)
    base_only = comparison.compare([a, b], noise_profiles=[pb])  # the baseline has none
    assert base_only.withheld and not base_only.noise_profiles
    assert any("no noise profile for the baseline A" in w for w in base_only.warnings)


def test_sides_further_apart_than_their_profiles_span_are_warned_about(sim):
    a, b, pa, pb = _profiled_sides(sim, change=1.0)
    b.started = a.started + 3600  # an hour later; the calibrations' sub-runs spanned 17.5 minutes
    cmp = comparison.compare([a, b], noise_profiles=[pa, pb])
    words = "A and B were measured 60 min apart, beyond the 18 min their profiles' sub-runs spanned"
    assert cmp.noise_profile_notes and cmp.noise_profile_notes[0].startswith(words) and words in " ".join(cmp.warnings)
    assert any(words in w for w in cmp.warnings)


def test_a_side_whose_spread_is_unlike_its_profile_gets_no_verdict(sim):
    a, b, pa, pb = _profiled_sides(sim, change=1.0)
    for s in b.records:  # rounds 20% apart from each other: far beyond the profile's within-run spread
        s["gbps"] *= 1.25 ** (s["round"] % 2)
    b._frame = None
    cmp = comparison.compare([a, b], noise_profiles=[pa, pb])
    assert all(r["verdict_withheld"] and r["note"] == "B's spread unlike its profile" and not r["significant"]
               for r in cmp.rows)
    assert any("B: its rounds spread unlike its profile calibration-B.json" in w for w in cmp.warnings)


def test_a_profile_that_cannot_apply_is_refused(sim, tmp_path, cli):
    a, b, pa, pb = _profiled_sides(sim)
    pa_path, pb_path = _saved(tmp_path, a, b, pa, pb)[2:]
    for options, words in (({"unit": "round"}, "--unit round asks for its own unit"),
                           ({"metric": "median"}, "not with --metric median"),
                           ({"test": "student"}, "--test student")):
        with pytest.raises(comparison.UsageError, match=words):
            comparison.compare([a, b], noise_profiles=[noise_profile.load(pa_path)], **options)
    with pytest.raises(comparison.UsageError, match="is of kernel 'sim-B'.*describes no side"):
        comparison.compare([a, a], noise_profiles=[noise_profile.load(pb_path)])
    with pytest.raises(comparison.UsageError, match="--by pairs the cells of one run"):
        comparison.check([1], by="bystanders", noise_profiles=[pa_path])
    for args in (["a.json", "b.json", "--noise-profile", "pb.json", "--noise-profile", "pb.json"],
                 ["a.json", "a.json", "--noise-profile", "pb.json"],
                 ["a.json", "b.json", "--noise-profile", "missing.json"],
                 ["a.json", "b.json", "--noise-profile", "a.json"],
                 ["a.json", "b.json", "--unit", "round", "--noise-profile", "pa.json"]):
        p = cli("compare", *args, cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith("atsdbench: "), args
        assert "--profile" not in p.stderr, p.stderr  # run's perf sampling: the noise profile's is --noise-profile
    for old in (["--profile", "pa.json"], ["--no-profile"]):
        p = cli("compare", "a.json", "b.json", *old, cwd=tmp_path)
        assert p.returncode == 2 and p.stderr == ("atsdbench: compare takes --noise-profile FILE (--no-noise-profile): "
                                                  "--profile is run's perf sampling\n")


def test_compare_finds_profiles_in_the_store(sim, tmp_path, cli, monkeypatch):
    import os
    import shutil

    from atsdbench.data import noise_profile
    from atsdbench.render import tables

    a, b, pa, pb = _profiled_sides(sim, change=1.0)
    paths = _saved(tmp_path, a, b, pa, pb)
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "xdg"))
    os.makedirs(tmp_path / "xdg" / "atsdbench" / "noise-profiles")
    for p in paths[2:]:
        shutil.copy(p, tmp_path / "xdg" / "atsdbench" / "noise-profiles")
    out = cli("compare", "a.json", "b.json", "--format", "csv", cwd=tmp_path, env=env)  # profile_base/new
    assert out.returncode == 0 and "pa.json (8 sub-runs" in out.stdout and "pb.json" in out.stdout
    assert out.stdout.count(",holm,true,") == 4  # significant, every row
    unused = cli("compare", "a.json", "b.json", "--no-noise-profile", cwd=tmp_path, env=env)
    assert "no verdict: one session a side" in unused.stdout
    given = cli("compare", "a.json", "b.json", "--noise-profile", "pa.json", "--noise-profile", "pb.json",
                cwd=tmp_path)
    assert given.returncode == 0 and given.stdout.count("faster") == 4
    # run and show say what a compare of two such runs detects, with the profile found
    monkeypatch.setenv("XDG_DATA_HOME", env["XDG_DATA_HOME"])
    assert noise_profile.store() == str(tmp_path / "xdg" / "atsdbench" / "noise-profiles")
    note = tables.detect_notes(a)[0]
    assert note.startswith("two runs like this: detects >= ") and note.endswith("(docs/compare.md#profiles)")
    assert len(note) <= 100


def test_the_store_s_older_folder_is_still_read(sim, tmp_path, cli):
    """Profiles older versions wrote into atsdbench/profiles/ are found as the store's own: not moved,
    and nothing new is written there."""
    import os
    import shutil

    a, b, pa, pb = _profiled_sides(sim, change=1.0)
    paths = _saved(tmp_path, a, b, pa, pb)
    old = tmp_path / "xdg" / "atsdbench" / "profiles"
    os.makedirs(old)
    for p in paths[2:]:
        shutil.copy(p, old)
    out = cli("compare", "a.json", "b.json", "--format", "csv", cwd=tmp_path,
              env=dict(os.environ, XDG_DATA_HOME=str(tmp_path / "xdg")))
    assert out.returncode == 0 and "pa.json (8 sub-runs" in out.stdout and out.stdout.count(",holm,true,") == 4
    assert sorted(os.listdir(old)) == ["pa.json", "pb.json"]


def test_a_huge_label_is_cut_in_text_and_whole_in_json(tmp_path, fixtures, cli):
    """a 10 MB label was printed six times by compare; text now shows its first
    LABEL_WIDTH characters and an ellipsis, the json rows keep it whole."""
    import json

    from atsdbench.data import sides

    paths = []
    for name, letter in (("before", "b"), ("after", "a")):
        data = json.load(open(fixtures / f"{name}.json"))
        data["config"]["label"] = letter * 1_000_000
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(data))
    text = cli("compare", *paths, "--unit", "round")
    assert text.returncode == 0, text.stderr
    assert len(text.stdout) + len(text.stderr) < 20_000
    # cut, then wrapped over the header's lines where the table is cut by column (render/layout.py)
    shown = "".join(w for w in text.stdout.split() if set(w) <= set("b."))
    assert shown.startswith("b" * (sides.LABEL_WIDTH - 3) + "...") and "b" * sides.LABEL_WIDTH not in shown
    rows = json.loads(cli("compare", *paths, "--unit", "round", "--format", "json").stdout)
    assert rows[0]["base_label"] == "b" * 1_000_000 and rows[0]["new_label"] == "a" * 1_000_000
    assert sides.shown_label("x" * 10) == "x" * 10


def test_a_runs_file_is_grouped_once(monkeypatch):
    """show of a --runs file of 625 sub-runs took 50 s, Result.sub_runs() filtering every
    record once per sub-run, on every call, and each compare of show's notes splitting each sub-run
    once per stride and side.  Now the sub-runs are made once, and each is split by stride once per
    unit, however many strides and compares ask."""
    from atsdbench.analysis import stats
    from atsdbench.data import results
    from atsdbench.render import tables

    strides = [65536, 1 << 20, 2 << 20]
    records = [{"stride_bytes": s, "round": r, "rep": p, "warmup": False, "seconds": 0.01, "calls": 16,
                "gbps": 1.0 + 0.01 * ((r * 7 + p * 3 + i) % 11), "ns": 10_000_000, "us_per_call": 1.0, "run": r // 2}
               for r in range(40) for i, s in enumerate(strides) for p in range(2)]
    result = results.Result({"hostname": "h", "kernel_release": "6.1"},
                            {"size": 1 << 30, "strides": strides, "rounds": 40, "reps": 2, "pages": "base", "runs": 20},
                            records)
    parts = result.sub_runs()
    assert len(parts) == 20 and all(a is b for a, b in zip(parts, result.sub_runs()))
    assert sum(len(p.records) for p in parts) == len(records)
    calls = []
    real = stats.observations_by_stride
    monkeypatch.setattr(stats, "observations_by_stride", lambda *a, **k: calls.append(a[1:]) or real(*a, **k))
    assert tables.detect_notes(result)
    assert len(calls) <= 2 * len(parts), len(calls)  # two units (round, run's rounds), not x strides x sides


def test_an_interrupted_file_and_a_file_given_twice_are_warned_about(fixtures, tmp_path):
    r = results.load(str(fixtures / "before.json"))
    r.complete = False
    cut = str(tmp_path / "cut.json")
    results.save(r, cut)
    cmp = comparison.compare(sides.load([cut, str(fixtures / "after.json")]))
    assert any("interrupted run (complete: false)" in w and "cut.json" in w for w in cmp.warnings)
    twice = comparison.compare(sides.load([str(fixtures / "before.json"), str(fixtures / "before.json")]))
    assert any("is given 2 times" in w for w in twice.warnings)
    assert not any("given" in w for w in comparison.compare(sides.load([str(fixtures / "before.json"),
                                                              str(fixtures / "after.json")])).warnings)


def test_commit_format_honours_labels_with_two_files(cli, fixtures):
    out = cli("compare", "before.json", "after.json", "--format", "commit", "--labels", "old,new", cwd=fixtures)
    assert out.stdout.splitlines()[1].split() == ["Stride", "old", "new", "Speedup"]


def test_a_meaningless_profile_interval_is_refused_with_its_reason():
    from atsdbench.analysis import noise

    assert noise.unreadable(math.log(10) + 0.01, 5.0) and noise.unreadable(0.1, 1.5)
    assert noise.unreadable(math.log(10) - 0.01, 2.0) is None
    base = noise.Side(0.0, 5, [(1.0, 0.6, ("a", "means"))])
    new = noise.Side(0.1, 5, [(1.0, 0.6, ("b", "means"))])
    d = noise.difference(base, new)
    assert math.isnan(d["ci_low_pct"]) and math.isnan(d["p_value"]) and "df" in d["why"]


def test_the_title_names_the_op_and_a_change_of_op_is_said(fixtures, tmp_path):
    from atsdbench.render.compare import render_text

    same = comparison.compare(sides.load([str(fixtures / "before.json"), str(fixtures / "after.json")]))
    assert render_text(same).startswith("mprotect rate (GB/s = 10^9")  # files before --op timed mprotect
    data = json.loads((fixtures / "after.json").read_text())
    data["config"]["op"] = "madvise"
    (tmp_path / "madvise.json").write_text(json.dumps(data))
    other = comparison.compare(sides.load([str(fixtures / "before.json"), str(tmp_path / "madvise.json")]))
    assert render_text(other).startswith("mprotect/madvise rate (GB/s = 10^9")
    assert any("the sides time different calls (mprotect, madvise)" in w for w in other.warnings)
    assert not any("different calls" in w for w in same.warnings)


def test_compare_names_the_placements_in_its_unit(cli, tmp_path):
    """run --placements K files: compare's observation is a round over K placements (the legend says so)."""
    import json
    import os

    fixtures = os.path.join(os.path.dirname(__file__), "..", "fixtures")
    paths = []
    for name in ("before.json", "after.json"):
        with open(os.path.join(fixtures, name)) as f:
            data = json.load(f)
        data["config"]["placements"] = 3
        (tmp_path / name).write_text(json.dumps(data))
        paths.append(str(tmp_path / name))
    p = cli("compare", *paths, "--unit", "round")
    assert p.returncode == 0, p.stderr
    assert "one observation per round (over 3 placements)" in p.stdout
    plain = cli("compare", os.path.join(fixtures, "before.json"), os.path.join(fixtures, "after.json"), "--unit",
                "round")
    assert "placements" not in plain.stdout

    # one side of one placement a round: the legend does not call its rounds rotated too
    one = cli("compare", os.path.join(fixtures, "before.json"), paths[1], "--unit", "round")
    assert one.returncode == 0, one.stderr
    assert "one observation per round (over 1 or 3 placements)" in one.stdout


@pytest.mark.parametrize("names", [{"workload": "tlb_flush2"},
                                   {"rate": {"column": "loops_per_s", "unit": "loops/s", "definition": "loops/s"}}])
def test_files_of_another_rate_are_compared_on_that_rate(cli, tmp_path, sweep_data, names):
    """A workload's files (loops/s, analysis/scaling.rate_of) are compared on loops_per_s, not on nothing:
    the columns stats reads for the observations must hold the rate's own (gbps is 1.0 in every pass
    here, so GB/s would show no change and loops/s shows +10%)."""
    for name, k in (("a.json", 1.0), ("b.json", 1.1)):
        data = sweep_data(threads=(1,), column="loops_per_s", extra=names,
                          rate=lambda n, r, k=k: 5e5 * k * (1 + r / 50))
        (tmp_path / name).write_text(json.dumps(data))
    p = cli("compare", "a.json", "b.json", "--unit", "round", "--format", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert len(rows) == 1 and rows[0]["n_base"] == 4 and rows[0]["n_new"] == 4
    assert 5e5 <= rows[0]["base_gbps"] <= 5.3e5 and rows[0]["speedup_pct"] == pytest.approx(10, abs=1e-6)
    assert rows[0]["ci_low_pct"] <= 10 <= rows[0]["ci_high_pct"]
    ministat = cli("compare", "a.json", "b.json", "--unit", "round", "--format", "ministat", cwd=tmp_path)
    assert ministat.returncode == 0, ministat.stderr
    assert "stride 64K: loops/s, one observation per round" in ministat.stdout and "GB/s" not in ministat.stdout


def test_a_label_given_twice_is_refused_in_one_line(cli, fixtures, tmp_path, sweep_data):
    """The tables find a side's rows (ministat --by its pairs, --by threads its thread count) by label:
    --labels a,b,b made the third value's efficiency use the second's thread count."""
    p = cli("compare", "before.json", "after.json", "--labels", "x,x", cwd=fixtures)
    assert p.returncode == 2 and p.stderr == "atsdbench: --labels: 'x' names two sides; give each its own\n"
    (tmp_path / "sweep.json").write_text(json.dumps(sweep_data(threads=(1, 2, 4))))
    by = cli("compare", "sweep.json", "--by", "threads", "--labels", "one,two,two", cwd=tmp_path)
    assert by.returncode == 2 and by.stderr == "atsdbench: --labels: 'two' names two sides; give each its own\n"
    ok = cli("compare", "sweep.json", "--by", "threads", "--labels", "one,two,four", "--format", "commit", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr


def test_a_threads_axis_of_no_thread_counts_gets_compares_own_layout(cli, tmp_path, sweep_data):
    """compare --by threads divides by the thread counts (efficiency): an axis whose values are no counts
    (0, or text where the samples do not repeat them) is read as any axis, not a ZeroDivisionError."""
    data = sweep_data(threads=(1, 2, 4))
    data["config"]["axes"]["threads"] = [0, 1, 2]
    data["config"]["cells"] = [{"threads": n} for n in (0, 1, 2)]
    for s in data["samples"]:
        del s["threads"]
    (tmp_path / "odd.json").write_text(json.dumps(data))
    for fmt in ("text", "commit"):
        p = cli("compare", "odd.json", "--by", "threads", "--format", fmt, cwd=tmp_path)
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        assert "threads=1" in p.stdout and "Efficiency" not in p.stdout


def test_files_of_different_placements_are_named_and_an_absent_key_is_one(cli, fixtures, tmp_path):
    """run --placements K measures another level, not only another spread: the first-allocated region ran
    35% slower at 2M than the three after it (docs/methodology.md#placement), so K is a measured setting."""
    base = json.loads((fixtures / "after.json").read_text())
    assert "placements" not in base["config"]  # a file from before run --placements: one region a round
    for name, k in (("one.json", 1), ("four.json", 4)):
        data = json.loads(json.dumps(base))
        data["config"]["placements"] = k
        (tmp_path / name).write_text(json.dumps(data))
    (tmp_path / "old.json").write_text(json.dumps(base))
    p = cli("compare", "one.json", "four.json", "--unit", "round", cwd=tmp_path)
    assert p.returncode == 0 and "differ in placements: 1 in one, 4 in four" in p.stderr
    assert "placements" not in cli("compare", "old.json", "one.json", "--unit", "round", cwd=tmp_path).stderr


@pytest.mark.parametrize("key,value,said", [("threads", 2, "1 in Before, 2 in After"),
                                            ("tasks", "processes", "threads in Before, processes in After"),
                                            ("op", "madvise", "mprotect in Before, madvise in After"),
                                            ("bystanders", 1, "0 in Before, 1 in After")])
def test_files_of_different_work_are_said_to_measure_different_things_in_every_format(cli, fixtures, tmp_path,
                                                                                       key, value, said):
    data = json.loads((fixtures / "after.json").read_text())
    data["config"][key] = value
    (tmp_path / "other.json").write_text(json.dumps(data))
    for fmt in ("text", "commit", "markdown", "csv", "json", "lava"):
        p = cli("compare", fixtures / "before.json", tmp_path / "other.json", "--format", fmt)
        assert p.returncode == 0, p.stderr
        w = unwrap(p.stderr)
        assert f"the files differ in {key}: {said}: they measure different work" in w, (fmt, w)
        if fmt == "lava":
            assert p.stdout.splitlines() and all(" skip " in line for line in p.stdout.splitlines()), p.stdout
    plain = cli("compare", fixtures / "before.json", fixtures / "after.json", "--format", "lava")
    assert all(" skip " not in line for line in plain.stdout.splitlines())


@pytest.mark.parametrize("rounds", [5, 20])  # 20: the rounds batched without a profile
def test_a_stored_profile_sizes_the_interval_and_never_moves_a_point_estimate(sim, tmp_path, rounds):
    import numpy as np

    a, b, pa, pb = _profiled_sides(sim, change=1.0)
    if rounds != 5:
        rng = np.random.default_rng(7)
        a = sim.simulate_side(rng, 1, rounds, 0.0, 0.03, 0.0, 0.0, "A", "boot-a")
        b = sim.simulate_side(rng, 1, rounds, 0.0, 0.03, 0.0, 1.0, "B", "boot-b")
        a.config["rounds"] = b.config["rounds"] = 5  # the profiles' plan, so that the store's match
    folder = tmp_path / "store"
    folder.mkdir()
    for p, name in ((pa, "pa.json"), (pb, "pb.json")):
        noise_profile.save(p.data, str(folder / name))
    plain = comparison.compare([a, b])
    stored = comparison.compare([a, b], store=noise_profile.Store(str(folder)))
    assert len(stored.noise_profiles) == 2 and not plain.noise_profiles
    for key in ("base_gbps", "new_gbps", "speedup_pct"):
        assert [r[key] for r in stored.rows] == pytest.approx([r[key] for r in plain.rows], rel=1e-12)
    # the interval is the profile's: it moved, the point estimate inside it did not
    assert [r["ci_low_pct"] for r in stored.rows] != [r["ci_low_pct"] for r in plain.rows]
    for r in stored.rows:
        assert math.isnan(r["ci_low_pct"]) or r["ci_low_pct"] < r["speedup_pct"] < r["ci_high_pct"]
    from atsdbench.render import compare as render

    # the table says where the intervals came from, and the commit format which profiles (name, digest)
    assert "noise profiles from the store" in render.render_text(stored)
    assert "from the store" not in render.render_text(comparison.compare([a, b], noise_profiles=[pa, pb]))
    commit = " ".join(render.render_commit(stored).split())
    assert f"pa.json sha256 {pa.digest}" in commit and f"pb.json sha256 {pb.digest}" in commit
    for text in (render.render_text(stored), render.render_commit(stored)):
        assert text.splitlines()[0].endswith(", geometric mean")


def test_the_commit_format_keeps_why_a_row_has_no_test(sim):
    from atsdbench.render import compare as render

    a, b, pa, pb = _profiled_sides(sim, change=1.0)
    for s in b.records[:len(b.records) // 2]:  # B's first rounds 25% apart: its spread unlike its profile
        if s["stride_bytes"] in (65536, 1048576):
            s["gbps"] *= 1.25 ** (s["round"] % 2)
    b._frame = None
    for cmp, reasons in ((comparison.compare([a, b], noise_profiles=[pa]), ["no noise profile for B"]),
                         (comparison.compare([a, b], noise_profiles=[pa, pb]), ["B's spread unlike its profile"])):
        lines = render.render_commit(cmp).splitlines()
        untested = [r for r in cmp.rows if math.isnan(r["p_value"])]
        assert untested and all(render.verdict(r).startswith("n/a (") for r in untested)
        body = lines[2:2 + len(cmp.rows)]
        for r, line in zip(cmp.rows, body):
            assert line.endswith(" n/a[1]") if math.isnan(r["p_value"]) else not line.endswith("n/a[1]")
        assert [line for line in lines if line.startswith("[")] == [f"[1] n/a: {why}" for why in reasons]
        assert not any(line.endswith("n.s.") for line, r in zip(body, cmp.rows) if math.isnan(r["p_value"]))


def test_an_unbalanced_design_with_a_short_side_gets_no_verdict_and_says_what_would(cli, fixtures):
    """1 vs k or 2 vs 5 files cannot hold 5% where the short side varies more (scripts/replicate_designs.py):
    no test, no interval, the warning naming how many more files the short side needs."""
    before, again, after = (str(fixtures / n) for n in ("before.json", "again.json", "after.json"))
    cmp = comparison.compare(sides.load([f"{before},{again}", after]))
    assert cmp.level == "file" and cmp.tests_made == 0
    assert all(r["note"] == "unbalanced: 1 vs 2 files" and math.isnan(r["ci_low_pct"]) and not r["significant"]
               for r in cmp.rows)
    assert "no verdict for After: 1 vs 2 files; 2 more for After give one" in cmp.warnings
    asked = comparison.compare(sides.load([f"{before},{again}", after]), unit="run")  # knowingly: made
    assert asked.tests_made == len(asked.rows)
    assert comparison.unbalanced(2, 2) is None and comparison.unbalanced(3, 5) is None
    assert comparison.unbalanced(5, 2) == "unbalanced: 2 vs 5 files"
    p = cli("compare", f"{before},{again}", after, "--format", "commit", cwd=fixtures)
    assert p.returncode == 0 and "n/a[1]" in p.stdout and "[1] n/a: unbalanced: 1 vs 2 files" in p.stdout
def _one_stride(fixtures, tmp_path, name="before.json", stride=65536, label="X"):
    """A copy of a fixture that measured one stride only (as a --strides 64K run)."""
    data = json.loads((fixtures / name).read_text())
    data["config"].update(strides=[stride], label=label)
    data["samples"] = [s for s in data["samples"] if s["stride_bytes"] == stride]
    path = tmp_path / f"{label}.json"
    path.write_text(json.dumps(data))
    return path


def test_a_stride_missing_from_one_side_costs_that_comparison_only(cli, fixtures, tmp_path):
    x = _one_stride(fixtures, tmp_path)
    a1, a2 = (atsdbench.load(str(fixtures / n)) for n in ("before.json", "after.json"))
    cmp = comparison.compare([a1, a2, atsdbench.load(str(x))], unit="round")
    strides = {label: [r["stride"] for r in cmp.rows if r["new_label"] == label] for label in cmp.labels[1:]}
    assert strides == {"After": ["64K", "1M", "2M", "4M"], "X": ["64K"]}
    assert [w for w in cmp.warnings if "missing" in w] == [
        "strides 1M, 2M, 4M are missing from X: X vs Before has no row there; the other comparisons keep them"]
    # the text table keeps X's one row under X's columns, the strides it lacks say so
    p = cli("compare", str(fixtures / "before.json"), str(fixtures / "after.json"), str(x), "--unit", "round")
    rows = {line.split()[0]: line.split() for line in p.stdout.splitlines()[1:8] if line[:1].isdigit()}
    assert p.returncode == 0 and rows["1M"][2] == "33.68" and len(rows["4M"]) >= 8
    p = cli("compare", str(x), str(fixtures / "before.json"), "--unit", "round")
    assert "strides 1M, 2M, 4M are missing from the baseline X: no side is compared there" in unwrap(p.stderr)


def test_copies_of_one_run_are_one_observation(cli, fixtures, tmp_path):
    for name, source in (("a1", "after"), ("a2", "after"), ("b1", "before"), ("b2", "before")):
        (tmp_path / f"{name}.json").write_text((fixtures / f"{source}.json").read_text())
    # as replicates, the copies would prove every stride slower: a LAVA gate failing on nothing
    p = cli("compare", "a1.json,a2.json", "b1.json,b2.json", "--format", "lava", cwd=tmp_path)
    assert p.returncode == 0 and "fail" not in p.stdout and len(p.stdout.splitlines()) == 4
    assert unwrap(p.stderr).splitlines() == [
        "atsdbench: warning: one run in several files, counted once (a run is one observation): a1.json = a2.json; "
        "b1.json = b2.json"]
    p = cli("compare", "a1.json,a1.json", "b1.json,b1.json", cwd=tmp_path)
    assert p.returncode == 0 and "given 2 times" in unwrap(p.stderr)
    assert "95% CI" not in p.stdout and "N = 2/2" not in p.stdout and ">=" not in p.stdout
    assert "no verdict" in p.stdout
    cmp = comparison.compare([[atsdbench.load(str(tmp_path / n)) for n in ("a1.json", "a2.json")],
                              [atsdbench.load(str(tmp_path / n)) for n in ("b1.json", "b2.json")]])
    assert cmp.level == "session" and cmp.withheld and not any(r["significant"] for r in cmp.rows)


def test_one_run_on_two_sides_is_said(cli, fixtures, tmp_path):
    (tmp_path / "copy.json").write_text((fixtures / "before.json").read_text())
    p = cli("compare", str(fixtures / "before.json"), "copy.json", cwd=tmp_path)
    assert "before.json and copy.json hold the same run: the same data against itself" in unwrap(p.stderr)
