"""Axes: a run's cells in the tables and plots, and `compare FILE --by AXIS` (paired by round).

Synthetic files have the structure paired comparisons exist for: every round moves all its cells
alike (a shared round effect and a slow drift, 5-15% CV), and each cell has a little noise of its
own.  Real runs are tiny (16M, 3 rounds).
"""
import json
import math

import numpy as np
import pytest

import atsdbench
from atsdbench.analysis import compare as comparison, compare_by, multiplicity, paired, stats, two_sample
from atsdbench.render import tables as report
from atsdbench.data import results, sides
from atsdbench.units import format_size
from conftest import unwrap
import noise_sim

FORMATS = ["text", "markdown", "csv", "json", "commit", "ministat"]


# --- synthetic result files with cells ---------------------------------------------------------

def write_cells(path, fixtures, axes, effect, rounds=8, round_cv=0.10, cell_cv=0.01, seed=0, drop=()):
    """A result file of `axes` ({axis: [values]}), cells their product (last axis fastest).  A pass's
    rate: stride base rate x effect(cell spec) x the round's shared luck x the cell's own noise.
    `drop`: (round, cell) pairs left out (an interrupted run)."""
    import itertools

    data = json.loads((fixtures / "before.json").read_text())
    config = data["config"]
    size, strides = config["size"], config["strides"][:2]
    config.update(strides=strides, rounds=rounds, reps=2, axes=axes)
    names = list(axes)
    specs = [dict(zip(names, combo)) for combo in itertools.product(*(axes[a] for a in names))]
    config["cells"] = specs
    rng = np.random.default_rng(seed)
    base = {s: 5.0 * (1 + i) for i, s in enumerate(strides)}
    samples = []
    for r in range(rounds):
        shared = math.exp(rng.normal(0, math.log1p(round_cv)) + 0.01 * r)  # luck and drift of the round
        for c, spec in enumerate(specs):
            own = math.exp(rng.normal(0, math.log1p(cell_cv)))
            if (r, c) in drop:
                continue
            for rep in range(2):
                for s in strides:
                    gbps = base[s] * effect(spec) * shared * own * math.exp(rng.normal(0, cell_cv / 5))
                    ns = size / gbps
                    calls = size // s
                    samples.append({"round": r, "rep": rep, "order": 0, "stride_bytes": s, "warmup": False,
                                    "ns": int(ns), "seconds": ns / 1e9, "calls": calls, "gbps": size / int(ns),
                                    "us_per_call": ns / 1e3 / calls, "traced": False, "cell": c, **spec})
    data["samples"] = samples
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def bystanders_file(tmp_path, fixtures):
    """bystanders 0,1: one bystander costs 5%; rounds scatter 10% and drift."""
    return write_cells(tmp_path / "by.json", fixtures, {"bystanders": [0, 1]},
                       lambda s: 0.95 if s["bystanders"] else 1.0)


# --- statistics ----------------------------------------------------------------------------------

def test_paired_t_is_scipys_ttest_rel_on_log_rates():
    from scipy import stats as sps

    rng = np.random.default_rng(1)
    for n in (2, 3, 7):
        a, b = np.exp(rng.normal(0, 0.1, n)), np.exp(rng.normal(0.05, 0.1, n))
        r = paired.paired_t(a, b, 90)
        ref = sps.ttest_rel(np.log(b), np.log(a))
        ci = ref.confidence_interval(0.90)
        assert float(r["p"]) == pytest.approx(ref.pvalue)
        assert math.log(float(r["low"])) == pytest.approx(ci.low) and math.log(float(r["high"])) == pytest.approx(
            ci.high)


def test_signed_rank_p_is_scipys_exact_wilcoxon():
    from scipy import stats as sps

    rng = np.random.default_rng(2)
    for n in (3, 6, 9, 14):
        for shift in (0.0, 0.03, -0.08):
            a, b = np.exp(rng.normal(0, 0.05, n)), np.exp(rng.normal(shift, 0.05, n))
            mine = float(paired.signed_rank(a, b, 95)["p"])
            assert mine == pytest.approx(sps.wilcoxon(np.log(b) - np.log(a), method="exact").pvalue)


def test_signed_rank_ci_agrees_with_its_p():
    """The CI inverts the test: it leaves out 1.0 exactly when p < alpha."""
    rng = np.random.default_rng(3)
    a = np.exp(rng.normal(0, 0.05, (3000, 8)))
    b = a * np.exp(rng.normal(0.03, 0.04, (3000, 8)))
    r = paired.signed_rank(a, b, 95)
    excludes = (r["low"] > 1) | (r["high"] < 1)
    assert np.array_equal(excludes, r["p"] < 0.05) and 0.2 < excludes.mean() < 0.95


@pytest.mark.parametrize("confidence", [80, 95, 99.5])
def test_smallest_pairs_is_where_scipys_best_p_passes_the_level(confidence):
    from scipy import stats as sps

    n = paired.smallest_pairs(confidence)
    best = [sps.wilcoxon(np.arange(1.0, k + 1), method="exact").pvalue for k in (n - 1, n)]
    assert best[0] >= stats.alpha(confidence) > best[1]


# --- calibration: coverage with round effects shared by the cells of a round --------------------
# (the studies of that coverage are scripts/coverage_studies.py's; what is checked here is exact)

EXPERIMENTS = 2000


def paired_experiments(rng, n, ratio, k=EXPERIMENTS):
    return noise_sim.paired_cells(rng, n, ratio, k)


def _covered(r, ratio):
    return (r["low"] <= ratio) & (ratio <= r["high"])


def test_signed_rank_ci_covers_at_least_its_level_exactly_as_theory_says():
    """The inverted signed-rank CI's coverage is 1 - 2 P(T+ <= k-1) >= 95% at every N (the
    per-round differences are symmetric about the true log ratio); simulation agrees within 4
    standard errors."""
    rng = np.random.default_rng(11)
    for n in (6, 8, 10, 13):
        base, new = paired_experiments(rng, n, 1.3)
        r = paired.signed_rank(base, new, 95)
        theory = 1 - 2 * paired.signed_rank_null_cdf(n)[r["k"] - 1]
        cov = _covered(r, 1.3).mean()
        assert theory >= 0.95 and abs(cov - theory) < 4 * math.sqrt(theory * (1 - theory) / EXPERIMENTS), (n, cov)


# --- compare --by ----------------------------------------------------------------------------------

def test_by_finds_what_unpaired_cannot(bystanders_file):
    """A 5% cost under 10% round-to-round luck: paired, it is proven and the CI holds the truth;
    the same rounds compared unpaired (Welch) prove nothing."""
    cmp = compare_by.compare_by(sides.load([str(bystanders_file)]), "bystanders")
    assert cmp.paired and cmp.labels == ["bystanders=0", "bystanders=1"] and len(cmp.rows) == 2
    for r in cmp.rows:
        assert r["test"] == "paired-t" and r["unit"] == "round" and r["n_base"] == r["n_new"] == 8
        assert r["significant"] and r["ci_low_pct"] < -5 < r["ci_high_pct"]
        base, new = cmp.pairs[(1, "", r["stride_bytes"])]
        unpaired = two_sample.difference(base, new, "welch", 95)
        assert not unpaired["significant"]
        assert (r["ci_high_pct"] - r["ci_low_pct"]) < (unpaired["ci_high_pct"] - unpaired["ci_low_pct"]) / 3


def test_by_holds_the_other_axes_equal(tmp_path, fixtures):
    path = write_cells(tmp_path / "two.json", fixtures, {"bystanders": [0, 1, 3], "pages": ["base", "thp"]},
                       lambda s: (1 - 0.1 * s["bystanders"]) * (1.5 if s["pages"] == "thp" else 1.0))
    cmp = compare_by.compare_by(sides.load([str(path)]), "bystanders")
    assert cmp.labels == ["bystanders=0", "bystanders=1", "bystanders=3"]
    assert [(r["cell"], r["stride"], r["new_label"]) for r in cmp.rows][:4] == [
        ("pages=base", "64K", "bystanders=1"), ("pages=base", "64K", "bystanders=3"),
        ("pages=base", "1M", "bystanders=1"), ("pages=base", "1M", "bystanders=3")]
    assert len(cmp.rows) == 8 and cmp.tests_made == 8  # Holm over all 8
    by = {(r["cell"], r["stride"], r["new_label"]): r for r in cmp.rows}
    # thp cells run 1.5x faster, yet the bystander cost is the same ratio within each page kind
    assert by["pages=thp", "64K", "bystanders=3"]["base_gbps"] == pytest.approx(
        1.5 * by["pages=base", "64K", "bystanders=3"]["base_gbps"], rel=0.05)
    for r in cmp.rows:
        want = -10 if r["new_label"] == "bystanders=1" else -30
        assert r["ci_low_pct"] < want < r["ci_high_pct"]
    cmp = compare_by.compare_by(sides.load([str(path)]), "pages")
    assert cmp.labels == ["pages=base", "pages=thp"] and {r["cell"] for r in cmp.rows} == {
        "bystanders=0", "bystanders=1", "bystanders=3"}
    assert all(r["ci_low_pct"] < 50 < r["ci_high_pct"] for r in cmp.rows)


def test_holm_over_everything_and_raw_p_kept(tmp_path, fixtures):
    path = write_cells(tmp_path / "two.json", fixtures, {"bystanders": [0, 1, 3]}, lambda s: 1.0, seed=4)
    holm = compare_by.compare_by(sides.load([str(path)]), "bystanders")
    none = compare_by.compare_by(sides.load([str(path)]), "bystanders", adjust="none")
    assert [r["p_value"] for r in holm.rows] == [r["p_value"] for r in none.rows]
    assert list(multiplicity.holm([r["p_value"] for r in none.rows])) == [r["p_adjusted"] for r in holm.rows]
    assert [r["p_adjusted"] for r in none.rows] == [r["p_value"] for r in none.rows]


def test_repeated_values_are_an_aa_told_apart_by_position(tmp_path, fixtures, cli):
    path = write_cells(tmp_path / "aa.json", fixtures, {"bystanders": [0, 0]}, lambda s: 1.0)
    frame = atsdbench.compare(str(path), by="bystanders")
    assert set(frame["base_label"]) == {"bystanders=0 #1"} and set(frame["new_label"]) == {"bystanders=0 #2"}
    assert frame["ci_low_pct"].lt(0).all() and frame["ci_high_pct"].gt(0).all()
    p = cli("show", path)
    assert "cell 0: bystanders=0" in p.stdout and "cell 1: bystanders=0" in p.stdout


def test_two_files_with_repeated_values_match_cells_by_position(tmp_path, fixtures):
    a = write_cells(tmp_path / "a.json", fixtures, {"bystanders": [0, 0]}, lambda s: 1.0, seed=1)
    b = write_cells(tmp_path / "b.json", fixtures, {"bystanders": [0, 0]}, lambda s: 1.0, seed=2)
    cmp = comparison.compare(sides.load([str(a), str(b)]))
    assert [r["cell"] for r in cmp.rows] == ["bystanders=0 (cell 0)"] * 2 + ["bystanders=0 (cell 1)"] * 2


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_says_paired(cli, bystanders_file, fmt):
    p = cli("compare", bystanders_file, "--by", "bystanders", "--format", fmt)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    out = p.stdout
    if fmt in ("csv", "json"):
        rows = json.loads(out) if fmt == "json" else out.splitlines()[1:]
        assert len(rows) == 2 and "paired-t" in out and "bystanders=1" in out
    else:
        assert "paired by round" in out and "bystanders=1" in out
    if fmt == "commit":
        lines = out.splitlines()
        assert lines[1].split() == ["Stride", "bystanders=0", "bystanders=1", "Speedup"]
        assert "N = 8 rounds paired" in lines[-1] and all(line == line.rstrip() for line in lines)
    if fmt == "ministat":
        assert out.count("per-round difference") == 2 and "bystanders=1 vs bystanders=0, paired by round" in out
        assert "Difference at" not in out  # no unpaired Student's t


def test_median_is_signed_rank_and_says_when_too_few(cli, tmp_path, fixtures):
    need = paired.smallest_pairs(95)
    few = write_cells(tmp_path / "few.json", fixtures, {"bystanders": [0, 1]}, lambda s: 0.9, rounds=need - 1)
    p = cli("compare", few, "--by", "bystanders", "--metric", "median")
    assert p.returncode == 0 and "n/a (too few to prove any)" in p.stdout
    assert f"{need - 1} paired rounds cannot reach 95% confidence with a signed-rank test; {need} could" in unwrap(p.stderr)
    enough = write_cells(tmp_path / "enough.json", fixtures, {"bystanders": [0, 1]},
                         lambda s: 0.9 if s["bystanders"] else 1.0, rounds=10)
    cmp = compare_by.compare_by(sides.load([str(enough)]), "bystanders", metric="median")
    assert cmp.test == "wilcoxon" and all(r["significant"] and r["ci_low_pct"] < -10 < r["ci_high_pct"]
                                          for r in cmp.rows)
    p = cli("compare", enough, "--by", "bystanders", "--metric", "median")
    assert "Wilcoxon signed-rank" in p.stdout and "paired by round" in p.stdout and p.stderr == ""


def test_interrupted_rounds_are_left_out_of_the_pairs(tmp_path, fixtures):
    path = write_cells(tmp_path / "cut.json", fixtures, {"bystanders": [0, 1]}, lambda s: 1.0, drop={(7, 1)})
    cmp = compare_by.compare_by(sides.load([str(path)]), "bystanders")
    assert all(r["n_base"] == 7 for r in cmp.rows)
    assert any("1 round measured one cell only" in w for w in cmp.warnings)


def test_interrupted_in_the_first_round_prints_no_nan(tmp_path, fixtures, cli):
    """Stopped in round 0 inside the thp cell: its second stride never ran.  The base cell's rate there
    is still shown, the rest is n/a, and no legend speaks of a p-value test that was not made."""
    path = write_cells(tmp_path / "cut.json", fixtures, {"pages": ["base", "thp"]}, lambda s: 1.0, rounds=1)
    data = json.loads(path.read_text())
    second = data["config"]["strides"][1]
    data["samples"] = [s for s in data["samples"] if not (s["cell"] == 1 and s["stride_bytes"] == second)]
    data["complete"] = False
    path.write_text(json.dumps(data))
    for fmt in ("text", "markdown", "commit", "ministat"):
        p = cli("compare", path, "--by", "pages", "--format", fmt)
        assert p.returncode == 0 and "p < 0.05" not in p.stdout, fmt
        if fmt != "ministat":  # ministat's own summary prints a one-value Stddev as nan, as FreeBSD's does
            assert "nan" not in p.stdout.lower(), (fmt, p.stdout)
    text = cli("compare", path, "--by", "pages").stdout
    row = [line for line in text.splitlines() if line.startswith(format_size(second))][0].split()
    assert row[1] != "n/a" and float(row[1]) > 0 and row[2:4] == ["n/a", "n/a"]
    assert "no verdict: no comparison could be made" in text


@pytest.mark.parametrize("args,message", [
    (["--by", "pages"], "has no axis pages (its axes: bystanders)"),
    (["--by", "colour"], "--by 'colour' is not an axis"),
    (["--by", "bystanders", "--test", "welch"], "--test welch is for files compared with each other"),
    (["--by", "bystanders", "--unit", "pass"], "--unit pass does not apply"),
    (["--by", "bystanders", "--labels", "a,b,c"], "3 labels for the 2 values"),
])
def test_bad_by_is_one_line_exit_2(cli, bystanders_file, args, message):
    p = cli("compare", bystanders_file, *args)
    assert p.returncode == 2 and p.stdout == "" and message in p.stderr and len(p.stderr.splitlines()) == 1


def test_by_needs_one_file_with_axes(cli, bystanders_file, fixtures):
    for files, message in (([fixtures / "before.json"], "has no axes"),
                           ([bystanders_file, bystanders_file], "give one file (got 2)"),
                           ([f"{bystanders_file},{bystanders_file}"], "not replicate runs")):
        p = cli("compare", *files, "--by", "bystanders")
        assert p.returncode == 2 and message in p.stderr and len(p.stderr.splitlines()) == 1


# --- tables and plots ----------------------------------------------------------------------------

def test_run_and_show_print_a_block_per_cell(tmp_path, fixtures):
    path = write_cells(tmp_path / "c.json", fixtures, {"bystanders": [0, 1], "ceiling": [1, 33]}, lambda s: 1.0)
    r = results.load(str(path))
    table = report.run_table(r)
    heads = [line for line in table.splitlines() if line.startswith("cell ")]
    assert heads == ["cell 0: bystanders=0 ceiling=1", "cell 1: bystanders=0 ceiling=33",
                     "cell 2: bystanders=1 ceiling=1", "cell 3: bystanders=1 ceiling=33"]
    # each cell's expected flush follows its own ceiling: 64K is 1 page of 64K, 1M is 16
    blocks = table.split("\n\n")
    assert blocks[0].splitlines()[-1].split()[-1] == "full" and blocks[1].splitlines()[-1].split()[-1] == "per-page"
    assert "4 cells interleaved in every round: bystanders 0,1 x ceiling 1,33" in report.headline(r)
    text, _ = report.show_table(r)
    assert [line for line in text.splitlines() if line.startswith("cell ")] == heads
    csv, _ = report.show_table(r, fmt="csv")
    lines = csv.splitlines()
    assert lines[0].startswith("cell,bystanders,ceiling,stride,n,") and lines[1].startswith("0,0,1,64K,8,")
    assert len(lines) == 1 + 4 * 2
    md, _ = report.show_table(r, fmt="markdown")
    assert "**cell 3: bystanders=1 ceiling=33**\n\n| Stride" in md


def test_files_without_cells_print_as_before(fixtures):
    golden = fixtures.parent / "golden"
    r = results.load(str(fixtures / "before.json"))
    assert report.run_report(r) + "\n" == (golden / "run_report_before.text").read_text()
    for fmt in ("text", "csv"):
        assert report.show_table(r, fmt=fmt)[0] + "\n" == (golden / f"show_before.{fmt}").read_text()


def test_plot_draws_a_line_per_cell(tmp_path, fixtures):
    pytest.importorskip("matplotlib")
    from atsdbench.render import plot

    path = write_cells(tmp_path / "c.json", fixtures, {"bystanders": [0, 1]}, lambda s: 1.0)
    fig = plot.make_figure([str(path)], labels=["x"])
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["x bystanders=0", "x bystanders=1"]
    assert len(fig.axes[0].containers) == 2
    fig = plot.make_figure([str(path), str(path)], labels=["a", "b"])
    assert [t.get_text() for t in fig.axes[1].get_legend().get_texts()] == ["b vs a (bystanders=0)",
                                                                             "b vs a (bystanders=1)"]


# --- a real run --------------------------------------------------------------------------------------

@pytest.mark.live
def test_real_run_with_two_cells(cli, tmp_path):
    out = tmp_path / "real.json"
    p = cli("run", "--size", "16M", "--strides", "64K,1M", "--rounds", "3", "--reps", "2", "--bystanders", "0,1",
            "--no-trace", "-o", out)
    assert p.returncode == 0, p.stderr
    assert "cell 0: bystanders=0" in p.stdout and "cell 1: bystanders=1" in p.stdout
    p = cli("compare", out, "--by", "bystanders")
    assert p.returncode == 0 and "paired by round" in p.stdout
    frame = atsdbench.compare(str(out), by="bystanders")
    assert list(frame["stride"]) == ["64K", "1M"] and set(frame["n_base"]) == {3}
