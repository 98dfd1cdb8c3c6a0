"""model (cost fit, regimes, bootstrap CIs, before/after) and import --table.

Synthetic result files are built here from known costs; the seed's table is the 2018 POWER9 NPU
patch's (tests/fixtures/npu_table.txt is its text, line breaks lost as in the archive;
tests/fixtures/2018-powerpc-npu-atsd-eieio.txt is the whole archived email, copied from the seeds)."""
import json
import math
import pathlib
import re

import numpy as np
import pytest

from atsdbench.analysis import compare as comparison, model
from atsdbench.data import results, published_table as table
from atsdbench.errors import UsageError

SEED_FILE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "2018-powerpc-npu-atsd-eieio.txt"
K, M = 1 << 10, 1 << 20


def make(us, rounds=5, reps=2, page=4096, ceiling="unknown", shares=None, noise=0.02, seed=0, cells=None,
         label="synthetic", size=64 * M):
    """A result file whose stride s costs us[s] microseconds per call (x a round level x pass noise).
    shares: {stride: full-flush share} written as flush counters on the traced warm-up pass.
    cells: [(settings, us)] instead of us: one cell per entry, interleaved as the axes runs do."""
    rng = np.random.default_rng(seed)
    samples = []
    cell_list = cells or [({}, us)]
    for rnd in range(rounds):
        level = rng.normal(1, noise)
        for index, (settings, costs) in enumerate(cell_list):
            for rep in range(reps + 1):
                for order, stride in enumerate(sorted(costs)):
                    calls = size // stride
                    per_call = costs[stride] * level * (rng.normal(1, noise / 2) if rep else 1)
                    ns = int(per_call * 1e3 * calls)
                    s = {"round": rnd, "rep": rep, "order": order, "stride_bytes": stride, "warmup": rep == 0,
                         "traced": rep == 0, "ns": ns, "seconds": ns / 1e9, "calls": calls, "gbps": size / ns,
                         "us_per_call": ns / 1e3 / calls}
                    if shares is not None and rep == 0:
                        s["flushes"] = calls
                        s["full_flushes"] = int(round(calls * shares[stride]))
                    if cells:
                        s["cell"] = index
                        s.update(settings)
                    samples.append(s)
    data = {"format": "atsdbench-result", "schema_version": 1, "complete": True, "started": 0, "finished": 1,
            "host": {"hostname": "t", "arch": "x86_64", "kernel_release": "6.1", "page_size": page,
                     "hugepage_size": 2 * M, "tlb_single_page_flush_ceiling": ceiling},
            "config": {"size": size, "strides": sorted(cell_list[0][1]), "rounds": rounds, "reps": reps,
                       "pages": "base", "label": label},
            "samples": samples}
    if cells:
        data["config"]["cells"] = [s for s, _ in cells]
        data["config"]["axes"] = {k: list(dict.fromkeys(s[k] for s, _ in cells)) for k in cells[0][0]}
    return results.from_dict(data, f"{label}.json")


# x86-like: 4K pages, 0.5 us + 0.1 us/page up to the ceiling, 6 us whole flush past it.
X86 = {4 * K: 0.6, 16 * K: 0.9, 64 * K: 2.1, 1 * M: 6.0, 2 * M: 6.0}


def fit(result, **kw):
    return model.analyse([[result]], [result.label], **kw)


# --- the seed's table ------------------------------------------------------------------------------

def seed_models(fixtures, tmp_path, cli, source=None):
    out = tmp_path / "npu.json"
    p = cli("import", "--table", source or fixtures / "npu_table.txt", "--page-size", "64K", "-o", out)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "npu-after.json").exists()
    return out, tmp_path / "npu-after.json", p


def test_seed_table_gives_the_issue_numbers(cli, fixtures, tmp_path):
    before, after, p = seed_models(fixtures, tmp_path, cli)
    assert "column 'Before'" in p.stdout and "column 'After'" in p.stdout
    doc = json.loads(cli("model", before, after, "--format", "json").stdout)
    b, a = doc["models"]
    # The published table's fit: 9.6 us + 1.5 us/page before, 8.7 + 1.4 after (from the rounded us/call it printed),
    # 4M (64 pages, past the 33-page ceiling) a whole flush at 13.0 us.
    assert b["fixed_us"] == pytest.approx(9.6, abs=0.1) and b["per_page_us"] == pytest.approx(1.5, abs=0.05)
    assert a["fixed_us"] == pytest.approx(8.7, abs=0.1) and a["per_page_us"] == pytest.approx(1.4, abs=0.05)
    assert [s["regime"] for s in b["strides"]] == ["per-page"] * 3 + ["whole-flush"]
    assert {s["regime_source"] for s in b["strides"]} == {"data"}
    assert b["full_flush_us"] == pytest.approx(13.0, abs=0.05)
    assert b["crossover_pages"] == pytest.approx((13.0016 - 9.5751) / 1.50538, rel=1e-3)
    assert [s["pages"] for s in b["strides"]] == [1, 16, 32, 64]
    assert b["fixed_us_low"] is None and b["per_page_us_high"] is None  # one observation per stride
    change = {c["parameter"]: c for c in doc["changes"]}
    assert change["per_page_us"]["change_pct"] == pytest.approx(-5.5, abs=0.05)  # "~5%"
    assert change["fixed_us"]["change_pct"] == pytest.approx(-9.7, abs=0.05)  # "~10%"
    assert change["per_page_us"]["ci_low_pct"] is None


def test_seed_email_itself(cli, fixtures, tmp_path):
    """The whole email, headers and quoting included, gives the table's numbers."""
    before, after, p = seed_models(fixtures, tmp_path, cli, SEED_FILE)
    assert "column 'Before'" in p.stdout and "column 'After'" in p.stdout
    doc = json.loads(cli("model", before, after, "--format", "json").stdout)
    assert doc["models"][0]["per_page_us"] == pytest.approx(1.5054, abs=1e-3)
    (tmp_path / "cut").mkdir()  # the same numbers as from the table cut out of it (npu_table.txt)
    cut = json.loads(cli("model", *seed_models(fixtures, tmp_path / "cut", cli)[:2], "--format", "json").stdout)
    assert [{k: v for k, v in m.items() if k != "file"} for m in doc["models"]] == \
        [{k: v for k, v in m.items() if k != "file"} for m in cut["models"]]
    assert doc["changes"] == cut["changes"]


def test_seed_table_text_and_commit(cli, fixtures, tmp_path):
    before, after, _ = seed_models(fixtures, tmp_path, cli)
    p = cli("model", before, after)
    assert p.returncode == 0 and "imported from a table: one observation per stride, so no CI" in p.stdout
    commit = cli("model", before, after, "--format", "commit").stdout.splitlines()
    assert commit[0] == "mprotect cost per call, Before -> After"
    assert commit[2] == "per-page cost  1.51 -> 1.42 us (-5.5%)"
    assert commit[1] == "fixed cost     9.58 -> 8.65 us (-9.7%)"
    assert all(line == line.rstrip() for line in commit)


def test_ceiling_from_import_decides(cli, fixtures, tmp_path):
    out = tmp_path / "c.json"
    assert cli("import", "--table", fixtures / "npu_table.txt", "--page-size", "64K", "--ceiling", "33",
               "-o", out).returncode == 0
    b = json.loads(cli("model", out, "--format", "json").stdout)["models"][0]
    assert [s["regime_source"] for s in b["strides"]] == ["ceiling"] * 4
    assert b["strides"][3]["regime"] == "whole-flush"


# --- import --table: parsing -------------------------------------------------------------------------

def test_table_forms():
    quoted = "> mprotect rate (GB/s)\n> Stride  Before  After  Speedup\n> 64K  5.9  6.5  10%\n> 1M  31.2  33.4  7%\n"
    labels, rows, warns = table.parse(quoted)
    assert labels == ["Before", "After"] and rows == [(65536, [5.9, 6.5]), (M, [31.2, 33.4])] and not warns
    markdown = "| Stride | v6.1 | v6.2 |\n|---|---|---|\n| 4K | 1.5 | 1.6 |\n| 16K | 3 | 3.3 |\n| 64K | 9.1 | 9.9 |\n"
    labels, rows, _ = table.parse(markdown)
    assert labels == ["v6.1", "v6.2"] and [r[0] for r in rows] == [4096, 16384, 65536]
    two = "results:\n4096 1.5\n16384 3.0\n65536 9.1\nthat is all, 3 runs"
    labels, rows, _ = table.parse(two)
    assert labels == ["table"] and rows == [(4096, [1.5]), (16384, [3.0]), (65536, [9.1])]


def test_speedup_column_checked_against_rates():
    _, _, warns = table.parse("Stride Before After Speedup\n64K 5.9 6.5 10%\n1M 31.2 33.4 17%\n")
    assert len(warns) == 1 and "1M the speedup column (17%)" in warns[0]
    assert not table.speedup_mismatch("36.3", "38.7", "7%")  # 6.6% printed as 7%: rounding, not a misread


@pytest.mark.parametrize("text,message", [
    ("no numbers at all here", "has no table"),
    ("64K 5.9\n1M 31.2\n\nand later\n64K 6.0\n1M 30.0\n", "has 2 tables of 2 rows"),
    ("64K 5.9\n64K 6.1\n", "appears twice"),
    ("64K 0\n1M 31.2\n", "rate of zero"),
])
def test_bad_tables(text, message):
    with pytest.raises(UsageError, match=message):
        table.parse(text)


@pytest.mark.parametrize("row,message", [
    ("64K -5.9", "stride 64K has a negative rate ('-5.9')"),
    ("64K nan", "stride 64K has a rate of 'nan': not a finite number of GB/s"),
    ("64K inf", "stride 64K has a rate of 'inf': not a finite number"),
    ("64K -Infinity", "stride 64K has a rate of '-Infinity': not a finite number"),
    ("64K 1e300", "stride 64K at 1e+300 GB/s: more than --size 1G allows "
     "(1.16e-10 to 1.07e+09)"),
    ("64K 1e400", "stride 64K has a rate of '1e400' GB/s, more than a pass can measure"),
    ("64K 0.00000000000000000001", "stride 64K at 1e-20 GB/s: less than --size 1G allows"),
    ("64K 0.0", "stride 64K has a rate of zero"),
    ("64\uff2b 5.9", "stride '64\uff2b' is not plain ASCII (type it as '64K')"),
    ("\uff16\uff14K 5.9", "is not plain ASCII (type it as '64K')"),
    ("64K \uff15.9", "at 64K the rate '\uff15.9' is not plain ASCII (type it as '5.9')"),
])
def test_rows_it_cannot_use_are_refused_not_dropped(tmp_path, capsys, row, message):
    """Each was left out of the table before, and the other rows imported with exit 0."""
    from atsdbench import cli

    for text in (f"Stride GB/s\n{row}\n1M 6.0\n2M 7.0\n", f"Stride GB/s\n1M 6.0\n{row}\n2M 7.0\n",
                 f"Stride GB/s\n1M 6.0\n2M 7.0\n{row}\n"):
        (tmp_path / "t.txt").write_text(text)
        assert cli.main(["import", "--table", str(tmp_path / "t.txt"), "--page-size", "4K",
                         "-o", str(tmp_path / "t.json")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"atsdbench: {tmp_path / 't.txt'}: ") and message in err and err.count("\n") == 1
        assert not (tmp_path / "t.json").exists()


def test_rates_a_pass_can_measure_are_kept():
    labels, rows, _ = table.parse("64K +5.9\n1M 1.5e1\n2M 7\n")
    assert rows == [(65536, [5.9]), (M, [15.0]), (2 * M, [7.0])]
    (r,) = table.to_results(labels, [(65536, [1073741824.0])], 4096, 1 << 30)  # the whole 1G in 1 ns
    assert r._records[0]["ns"] == 1


@pytest.mark.parametrize("args,message", [
    (["--ceiling", "0"], "--ceiling must be at least 1 (got 0)"),
    (["--ceiling", "kernel"], "--ceiling 'kernel' is not a whole number"),
    (["--ceiling", "\uff13\uff13"], "--ceiling '\uff13\uff13' is not a whole number"),
    (["--ceiling", "1_0"], "--ceiling '1_0' is not a whole number"),
    (["--ceiling", str(2 ** 31)], "--ceiling is a page count: at most 2^30"),
    (["--page-size", "3K"], "--page-size 3K is not a power of two"),
    (["--page-size", "12288"], "--page-size 12288 is not a power of two"),
])
def test_import_table_options_are_blamed_by_name(tmp_path, capsys, fixtures, args, message):
    from atsdbench import cli

    argv = ["import", "--table", str(fixtures / "npu_table.txt"), "-o", str(tmp_path / "x.json")]
    argv += args if "--page-size" in args else ["--page-size", "64K", *args]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"atsdbench: {message}") and err.count("\n") == 1 and not list(tmp_path.iterdir())


def test_import_table_cli_errors(cli, fixtures, tmp_path):
    p = cli("import", "--table", fixtures / "npu_table.txt", "-o", tmp_path / "x.json")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "needs --page-size" in p.stderr
    p = cli("import", fixtures / "npu_table.txt", "--page-size", "4K")
    assert p.returncode == 2 and "go with --table" in p.stderr
    p = cli("import", "--table", tmp_path / "nope.txt", "--page-size", "4K")
    assert p.returncode == 2 and "no such file" in p.stderr
    p = cli("import", "--table", fixtures / "npu_table.txt", "--page-size", "64K", "--size", "3M",
            "-o", tmp_path / "x.json")
    assert p.returncode == 2 and "not a multiple" in p.stderr and "Traceback" not in p.stderr
    p = cli("import", "--table", "-", "--page-size", "64K", stdin="64K 5.9\n1M 31.2\n")
    assert p.returncode == 2 and "give -o" in p.stderr
    p = cli("import", "--table", fixtures / "npu_table.txt", "--page-size", "128K", "-o", tmp_path / "x.json")
    assert p.returncode == 2 and "stride 64K is not a multiple of the page size 128K" in p.stderr
    p = cli("import", "--table", fixtures / "npu_table.txt", "--page-size", "64K", "--ceiling", "-1")
    assert p.returncode == 2 and "--ceiling must be at least 1 (got -1)" in p.stderr


def test_import_table_files(cli, fixtures, tmp_path):
    p = cli("import", "--table", "-", "--page-size", "4K", "-o", tmp_path / "one.json",
            stdin="4K 1.5\n16K 3.0\n64K 9.1\n")
    assert p.returncode == 0 and not (tmp_path / "one-after.json").exists()
    r = results.load(str(tmp_path / "one.json"))
    assert r.config["source"] == "table" and r.host["page_size"] == 4096 and len(r.measured) == 3
    assert list(r.measured["us_per_call"].round(4)) == [round(4096 / 1.5e3, 4), round(16384 / 3e3, 4),
                                                        round(65536 / 9.1e3, 4)]
    # without -o: named after the table file, in the current directory
    p = cli("import", "--table", fixtures / "npu_table.txt", "--page-size", "64K", cwd=tmp_path)
    assert p.returncode == 0 and (tmp_path / "npu_table.json").exists() and (tmp_path / "npu_table-after.json").exists()
    # and `show`/`compare` read them like any result
    assert cli("show", tmp_path / "npu_table.json").returncode == 0
    p = cli("compare", tmp_path / "npu_table.json", tmp_path / "npu_table-after.json")
    assert p.returncode == 0 and "n/a" in p.stdout


# --- regimes ---------------------------------------------------------------------------------------

def test_counters_decide_first():
    shares = {s: (1.0 if s >= M else 0.0) for s in X86}
    m = fit(make(X86, shares=shares, ceiling=1000)).sides[0][0]  # the ceiling would call all per-page
    assert m.sources == ["counters"] * 5 and list(m.whole) == [False, False, False, True, True]
    assert m.params["per_page_us"] == pytest.approx(0.1, rel=0.05)
    assert m.params["full_flush_us"] == pytest.approx(6.0, rel=0.03)
    assert m.params["crossover_pages"] == pytest.approx(55, rel=0.1)


def test_ceiling_next_then_data():
    m = fit(make(X86, ceiling=33)).sides[0][0]
    assert m.sources == ["ceiling"] * 5 and list(m.whole) == [False, False, False, True, True]
    m = fit(make(X86)).sides[0][0]
    assert m.sources == ["data"] * 5 and list(m.whole) == [False, False, False, True, True]
    assert "counters" not in m.source_notes[0]


def test_counters_count_per_call_not_per_flush():
    # As measured on this VM (x86, 6.18): a 4M call took 1 full flush and ~6.7 partial ones.
    r = make(X86, shares={s: (1.04 if s >= M else 0.0004) for s in X86})
    for s in r._records:
        if s["traced"] and s["stride_bytes"] == 2 * M:
            s["flushes"] = int(s["calls"] * 7.7)
    m = fit(r).sides[0][0]
    assert m.sources == ["counters"] * 5 and list(m.whole) == [False, False, False, True, True]
    assert m.source_notes[-1] == "counters (1.03 full/call)"  # 33 full flushes for 32 calls


def test_mixed_counters_fall_through_with_a_warning():
    shares = {4 * K: 0.0, 16 * K: 0.0, 64 * K: 0.5, 1 * M: 1.0, 2 * M: 1.0}
    a = fit(make(X86, shares=shares, ceiling=33))
    m = a.sides[0][0]
    assert m.sources == ["counters", "counters", "ceiling", "counters", "counters"]
    assert any("16 pages: 0.50 full flushes per call" in w for w in a.warnings)


def test_data_regime_needs_a_drop():
    slow = {4 * K: 0.6, 16 * K: 0.9, 64 * K: 2.1, 1 * M: 25.0}  # still on the line (0.5 + 0.1 x 256 = 26.1)
    m = fit(make(slow)).sides[0][0]
    assert not m.whole.any() and math.isnan(m.params["full_flush_us"])


def test_page_table_work_past_the_ceiling_is_named():
    # This VM (x86, 4K pages): mprotect's cost keeps rising ~0.08 us/page past the ceiling.
    pte = {4 * K: 1.1, 16 * K: 1.7, 64 * K: 2.9, 1 * M: 21.0, 4 * M: 80.0}
    a = fit(make(pte, ceiling=33))
    assert any(re.search(r"cost rises with pages \(2\d\.?\d* -> [78]\d\.?\d* us\)", w) for w in a.warnings), a.warnings
    a = fit(make(pte))
    assert any("no whole flush seen: on x86 4K only --trace or the ceiling finds one" in w for w in a.warnings)
    assert not any("cost rises" in w for w in fit(make(X86, ceiling=33)).warnings)


def test_too_few_page_counts_is_a_message():
    a = fit(make({64 * K: 2.1, 1 * M: 6.0, 2 * M: 6.0}, ceiling=33))
    m = a.sides[0][0]
    assert math.isnan(m.params["per_page_us"]) and m.params["full_flush_us"] == pytest.approx(6.0, rel=0.03)
    assert any("needs per-page strides at 2+ page counts" in w for w in a.warnings)
    with pytest.raises(UsageError, match="nothing to fit"):
        fit(make({64 * K: 2.1}, ceiling=33))


def test_hugetlb_counts_huge_pages():
    r = make({2 * M: 3.0, 4 * M: 3.5, 8 * M: 4.5})
    r.config["pages"] = "hugetlb"
    m = fit(r).sides[0][0]
    assert list(m.pages) == [1, 2, 4] and m.page_bytes == 2 * M


def test_cells_fitted_separately():
    cheap = {4 * K: 0.6, 16 * K: 0.9, 64 * K: 2.1}
    dear = {4 * K: 1.6, 16 * K: 2.5, 64 * K: 6.1}
    a = fit(make(None, cells=[({"bystanders": 0}, cheap), ({"bystanders": 1}, dear)]))
    assert [m.cell for m in a.sides[0]] == ["bystanders=0", "bystanders=1"]
    assert a.sides[0][0].params["fixed_us"] == pytest.approx(0.5, rel=0.1)
    assert a.sides[0][1].params["per_page_us"] == pytest.approx(0.3, rel=0.1)


def test_a_cells_ceiling_overrides_the_hosts():
    r = make(None, ceiling=1000, cells=[({"ceiling": 3}, X86), ({"ceiling": "default"}, X86)])
    low, default = fit(r).sides[0]
    assert low.sources == ["ceiling"] * 5 and list(low.whole) == [False, True, True, True, True]
    assert not default.whole.any() and default.source_notes[0] == "ceiling (1000 pages)"
    one = make(X86, ceiling=1000)
    one.config["ceiling"] = 3  # run --ceiling 3: the run set it, the host probe saw the old value
    assert list(fit(one).sides[0][0].whole) == [False, True, True, True, True]


# --- intervals ----------------------------------------------------------------------------------------

def test_file_against_itself():
    r = make(X86, ceiling=33)
    a = model.analyse([[r], [r]], ["A", "B"])
    for row in a.changes:
        assert row["change_pct"] == 0
        if math.isfinite(row["ci_low_pct"]):
            assert row["ci_low_pct"] < 0 < row["ci_high_pct"]  # the sides are resampled independently


def test_one_round_falls_back_to_passes_with_compare_warning():
    a = fit(make(X86, rounds=1, reps=4, ceiling=33))
    m = a.sides[0][0]
    assert m.unit == "pass" and m.n_units == 4 and math.isfinite(m.params["fixed_us_low"])
    assert any("single round: passes are the observations" in w for w in a.warnings)


def test_interrupted_run_keeps_its_finished_passes():
    r = make(X86, ceiling=33)
    records = [s for s in r._records if not (s["round"] == 4 and s["stride_bytes"] >= 64 * K)]
    cut = results.Result(r.host, r.config, records, False, path="cut.json")
    m = fit(cut).sides[0][0]
    assert m.n_units == 4 and all(math.isfinite(m.params[k]) for k in ("fixed_us_low", "full_flush_us_high"))


def test_one_round_says_passes():
    from atsdbench.render import model as model_formats

    m = fit(make(X86, rounds=1, reps=2, ceiling=33)).sides[0][0]
    note = model_formats.ci_note(m)
    assert "bootstrap of 2 passes (" in note and "passs" not in note
    assert "bootstrap of 5 rounds (" in model_formats.ci_note(fit(make(X86, ceiling=33)).sides[0][0])


def test_before_after_across_page_sizes_is_refused():
    """Per-page cost counted in 4K pages against one in 64K pages printed "+882.9%" before."""
    a = make(X86, ceiling=33, label="x86")
    b = make({s * 16: v * 3 for s, v in X86.items()}, page=64 * K, label="power", seed=3)
    a.path, b.path = "x86.json", "power.json"
    with pytest.raises(UsageError, match=r"x86.json counts 4K pages and power.json 64K pages: model each alone"):
        model.analyse([[a], [b]], ["x86", "power"])
    with pytest.raises(UsageError, match="the replicate files count pages in different sizes"):
        model.analyse([[a, b]], ["both"])
    # one page size: compared as before
    assert model.analyse([[a], [make(X86, ceiling=33, seed=4)]], ["x86", "again"]).changes


def test_replicates_with_and_without_axes_are_refused():
    cells = make(X86, ceiling=33, cells=[({"bystanders": 0}, X86), ({"bystanders": 1}, X86)])
    plain = make(X86, ceiling=33, seed=2)
    cells.path, plain.path = "cells.json", "plain.json"
    with pytest.raises(UsageError, match=r"cells.json,plain.json: cells.json has cells and plain.json none: not "
                                         r"replicates"):
        model.analyse([[cells, plain]], ["a"])
    # across sides: said once, by name, instead of "cell None is not in ..."
    a = model.analyse([[cells], [plain]], ["a", "b"])
    assert a.changes == [] and "cells.json has axes (cells) and plain.json has none: no cell compared" in a.warnings
    assert not any("None" in w for w in a.warnings)


def test_replicate_files_are_the_unit_and_round_pools_them_when_asked():
    r1, r2 = make(X86, ceiling=33, seed=1, label="a"), make(X86, ceiling=33, seed=2, label="a")
    m = model.analyse([[r1, r2]], ["a"]).sides[0][0]
    assert m.unit == "run" and m.n_units == 2 and m.processes == 2 and m.file == "a.json"  # named once
    pooled = model.analyse([[r1, r2]], ["a"], unit="round")
    assert pooled.sides[0][0].unit == "round" and pooled.sides[0][0].n_units == 10
    assert any("--unit round pools the rounds of replicate runs" in w for w in pooled.warnings)
    assert any("--unit pass pools the passes of" in w for w in model.analyse([[r1, r2]], ["a"], unit="pass").warnings)


# --- before/after on the unit of replication (compare's rules) -----------------------

def with_runs(parts, label):
    """One result file of `run --runs len(parts)`: each part a sub-run (samples carry `run`, rounds
    numbered across the sub-runs), as the runner writes it."""
    records, offset = [], 0
    for k, part in enumerate(parts):
        for s in part._records:
            records.append({**s, "run": k, "round": s["round"] + offset})
        offset += part.config["rounds"]
    data = parts[0].to_dict()
    data["samples"], data["config"]["runs"], data["config"]["gap"] = records, len(parts), 20
    data["host"]["boot_id"] = f"boot-{label}"
    return results.from_dict(data, f"{label}.json")


def runs_side(label, scale=1.0, runs=5, seed=0, level=0.05):
    """A --runs file whose sub-runs differ by a per-process level of `level` (default 5%)."""
    rng = np.random.default_rng(seed)
    parts = [make({s: v * scale * rng.normal(1, level) for s, v in X86.items()}, ceiling=33, seed=seed * 100 + k,
                  label=label) for k in range(runs)]
    return with_runs(parts, label)


def test_sub_runs_are_the_unit():
    from atsdbench.analysis.compare import sub_runs
    from atsdbench.data.sides import files

    def load_group(item):
        return sub_runs(files(item))

    a, b = runs_side("old", seed=1), runs_side("new", 0.9, seed=2)
    # one --runs file a side is one session a side: no CI of the change unless --unit run asks for it
    assert model.analyse([load_group(a), load_group(b)], ["old", "new"]).withheld == model.WITHHELD
    analysis = model.analyse([load_group(a), load_group(b)], ["old", "new"], unit="run")
    m = analysis.sides[0][0]
    assert m.unit == "run" and m.n_units == 5 and m.processes == 5 and m.file == "old.json"
    assert analysis.unit == "run" and not analysis.withheld and not analysis.mixed
    for row in analysis.changes:
        assert row["unit"] == "run" and (row["n_base"], row["n_new"]) == (5, 5) and not row["verdict_withheld"]
        if row["parameter"] != "crossover_pages":
            assert row["ci_low_pct"] < row["change_pct"] < row["ci_high_pct"]
    per_page = next(r for r in analysis.changes if r["parameter"] == "per_page_us")
    assert per_page["ci_high_pct"] < 0  # a true -10% at 5% between processes, 5 a side
    # the same file's rounds, asked for: 25 a side, pooled, and narrower than the runs' interval
    rounds = model.analyse([load_group(a), load_group(b)], ["old", "new"], unit="round")
    pooled = next(r for r in rounds.changes if r["parameter"] == "per_page_us")
    assert pooled["unit"] == "round" and pooled["n_base"] == 25
    assert pooled["ci_high_pct"] - pooled["ci_low_pct"] < per_page["ci_high_pct"] - per_page["ci_low_pct"]


def test_one_process_a_side_gets_a_within_run_interval_not_a_ci():
    a, b = make(X86, ceiling=33, label="old"), make({s: v * 0.9 for s, v in X86.items()}, ceiling=33, seed=5,
                                                   label="new")
    analysis = model.analyse([[a], [b]], ["old", "new"])
    assert analysis.withheld == model.WITHHELD and analysis.unit == "round"
    assert model.WITHHELD == comparison.WITHHELD  # compare's rule and code, worded by render/text
    assert all(r["verdict_withheld"] and r["unit"] == "round" for r in analysis.changes)
    assert all(math.isfinite(r["ci_low_pct"]) for r in analysis.changes[:3])  # shown, as compare shows it
    asked = model.analyse([[a], [b]], ["old", "new"], unit="round")
    assert asked.withheld is None and not any(r["verdict_withheld"] for r in asked.changes)
    assert [r["ci_low_pct"] for r in asked.changes] == [r["ci_low_pct"] for r in analysis.changes]
    with pytest.raises(UsageError, match="--unit run needs replicate runs"):
        model.analyse([[a], [b]], ["old", "new"], unit="run")
    with pytest.raises(UsageError, match="--unit must be auto, round, pass or run"):
        model.analyse([[a], [b]], ["old", "new"], unit="boot")


def test_one_process_against_runs_borrows_their_spread():
    """compare's mixed group: the one process is one run, varying as the other side's runs do."""
    from atsdbench.analysis.compare import sub_runs
    from atsdbench.data.sides import files

    def load_group(item):
        return sub_runs(files(item))

    runs, one = runs_side("old", seed=3), make(X86, ceiling=33, seed=9, label="new")
    assert model.analyse([load_group(runs), [one]], ["old", "new"]).withheld  # one session a side
    analysis = model.analyse([load_group(runs), [one]], ["old", "new"], unit="run")
    assert analysis.mixed and analysis.unit == "run" and not analysis.withheld
    assert any("replicate runs on one side only: a single run is one observation" in w for w in analysis.warnings)
    both = model.analyse([load_group(runs), load_group(runs_side("new", seed=4))], ["old", "new"], unit="run")
    for row, other in zip(analysis.changes, both.changes):
        assert row["unit"] == "run" and (row["n_base"], row["n_new"]) == (5, 1)
        if row["parameter"] != "crossover_pages":
            # one run against five: wider than five against five
            assert row["ci_high_pct"] - row["ci_low_pct"] > other["ci_high_pct"] - other["ci_low_pct"]
    # its own table still has its rounds' interval, said to cover that process only
    assert analysis.sides[1][0].unit == "round" and analysis.sides[1][0].n_units == 5


def test_legends_say_unit_n_and_what_is_not_covered():
    from atsdbench.analysis.compare import sub_runs
    from atsdbench.data.sides import files

    def load_group(item):
        return sub_runs(files(item))
    from atsdbench.render import compare as compare_formats, model as formats

    a, b = runs_side("old", seed=1), runs_side("new", 0.9, seed=2)
    analysis = model.analyse([load_group(a), load_group(b)], ["old", "new"], unit="run")
    text = formats.render_text(analysis)
    assert "bootstrap of runs; N = 5/5" in text
    assert compare_formats.one_boot([1, 1]) in text  # one boot a side
    note = formats.ci_note(analysis.sides[0][0])
    assert "bootstrap of 5 sub-runs (" in note and max(map(len, note.splitlines())) <= 100
    assert "one file a side: the CI leaves out drift between sessions and boots" in note
    footer = " ".join(formats.render_commit(analysis).splitlines()[-2:])
    assert footer.startswith("95% CIs, bootstrap; one observation per run; N = 5 per side; one boot a side")
    # two boots a side: that level is in the data, and no line says it is missing
    two = [load_group(f) for f in (a, b)]
    for side in two:
        for part in side:
            part.host["boot_id"] = f"boot-{part.sub_run % 2}"
    assert "boot-to-boot" not in formats.render_text(model.analyse(two, ["old", "new"], unit="run"))
    one = make(X86, ceiling=33, label="old")
    single = formats.ci_note(fit(one).sides[0][0])
    assert "one file a side: the CI leaves out drift between sessions" in single
    withheld = model.analyse([[one], [make(X86, ceiling=33, seed=5, label="new")]], ["old", "new"])
    text = formats.render_text(withheld)
    assert "within-run interval: bootstrap of rounds; N = 5/5" in text and "no CI: one session a side" in text
    asked = model.analyse([[one], [make(X86, ceiling=33, seed=5, label="new")]], ["old", "new"], unit="round")
    assert "one file a side: the CI leaves out drift between sessions" in formats.render_text(asked)


# --- command line ----------------------------------------------------------------------------------

def _write(tmp_path, name, result):
    path = tmp_path / name
    results.save(result, str(path))
    return path


def test_cli_json_keys_and_csv(cli, tmp_path):
    path = _write(tmp_path, "x.json", make(X86, ceiling=33))
    doc = json.loads(cli("model", path, "--format", "json").stdout)
    m = doc["models"][0]
    assert list(m) == ["file", "label", "cell"] + [k for p in model.PARAMS for k in (p, p + "_low", p + "_high")] \
        + ["unit", "n_units", "processes", "strides"]
    assert (m["unit"], m["n_units"], m["processes"]) == ("round", 5, 1)
    assert list(m["strides"][0]) == ["stride_bytes", "pages", "regime", "regime_source", "us_per_call",
                                     "residual_us"]
    assert m["fixed_us_low"] < m["fixed_us"] < m["fixed_us_high"] and doc["changes"] == []
    lines = cli("model", path, "--format", "csv").stdout.splitlines()
    assert lines[0].startswith("file,label,cell,fixed_us,") and len(lines) == 1 + 5


def test_cli_before_after_text_commit_csv(cli, tmp_path):
    a = _write(tmp_path, "a.json", make(X86, ceiling=33, label="old"))
    b = _write(tmp_path, "b.json", make({s: v * 0.9 for s, v in X86.items()}, ceiling=33, label="new", seed=5))
    # one process a side: the change has a within-run interval, not a CI, and says why
    p = cli("model", a, b)
    assert p.returncode == 0 and "new against old" in p.stdout and "within-run interval" in p.stdout
    assert "no CI: one session a side" in p.stdout
    commit = cli("model", a, b, "--format", "commit").stdout.splitlines()
    assert commit[2].startswith("per-page cost  0.1") and "CI" not in commit[2]
    foot = " ".join(commit[-2:])
    assert "no CI: one session a side (within-session only: one observation per round; N = 5 per side)" in foot
    assert max(map(len, commit)) <= 100
    # --unit round asks for it knowingly
    commit = cli("model", a, b, "--format", "commit", "--unit", "round").stdout.splitlines()
    assert commit[2].startswith("per-page cost  0.1") and "% to " in commit[2] and "95% CI" in commit[2]
    lines = cli("model", a, b, "--format", "csv", "--confidence", "90").stdout.splitlines()
    assert lines[0].split(",") == model.CHANGE_COLUMNS and len(lines) == 5 and ",90.0,round,5,5,true" in lines[1]


@pytest.mark.parametrize("args,message", [
    (["--format", "xml"], "--format must be one of"),
    (["--confidence", "42"], "--confidence must be one of"),
    (["--unit", "boot"], "--unit must be auto, round, pass or run (got 'boot')"),
    (["--unit", "run"], "--unit run needs replicate runs (a.json,b.json,...) on at least one side"),
])
def test_cli_bad_options(cli, tmp_path, args, message):
    path = _write(tmp_path, "x.json", make(X86, ceiling=33))
    p = cli("model", path, *args)
    assert p.returncode == 2 and message in p.stderr and p.stderr.count("\n") == 1


@pytest.mark.parametrize("item,which", [(",{a}", "1 of 2"), ("{a},", "2 of 2"), ("{a},,{a}", "2 of 3")])
def test_cli_empty_file_name_in_a_list(tmp_path, capsys, monkeypatch, item, which):
    from atsdbench import cli

    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "a.json", make(X86, ceiling=33))
    text = item.format(a="a.json")
    for argv in (["model", text], ["compare", text, "a.json"], ["compare", "a.json", text]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"atsdbench: {text!r} has an empty file name (name {which}: ") and err.count("\n") == 1


def test_cli_bad_files(cli, tmp_path):
    p = cli("model", tmp_path / "missing.json")
    assert p.returncode == 2 and "no such file" in p.stderr
    path = _write(tmp_path, "one.json", make({64 * K: 2.1}, ceiling=33))
    p = cli("model", path)
    assert p.returncode == 2 and "nothing to fit" in p.stderr and p.stderr.count("\n") == 1
    r = make(X86)
    r.host["page_size"] = None
    path = _write(tmp_path, "nopage.json", r)
    p = cli("model", path)
    assert p.returncode == 2 and "no page size" in p.stderr


def test_plot_model_panel(cli, tmp_path):
    pytest.importorskip("matplotlib")
    from atsdbench.render import plot

    path = _write(tmp_path, "x.json", make(X86, ceiling=33, label="x"))
    fig = plot.make_figure([str(path)], model=True)
    panel = fig.axes[-1]
    assert len(fig.axes) == 2 and panel.get_title().startswith("cost model")
    texts = [t.get_text() for t in panel.get_legend().get_texts()]
    assert texts[0] == "x" and any("us/page" in t for t in texts) and any("whole flush" in t for t in texts)
    assert any(t.startswith("x: crossover") for t in texts)
    p = cli("plot", path, "--model", "-o", tmp_path / "m.png")
    assert p.returncode == 0 and (tmp_path / "m.png").read_bytes().startswith(b"\x89PNG")


def test_real_small_run(cli, small_run):
    """A live run (64M, 64K and 1M, 2 rounds): the model reads it whatever this host's regimes are.
    Two strides at two page counts always leave something to fit: a per-page line when both are
    per-page, a whole-flush level when either is a whole flush.  So "nothing to fit" (exit 2) would
    be a defect here, and exit 0 is required."""
    p = cli("model", small_run, "--format", "json")
    assert p.returncode == 0, p.stderr
    m = json.loads(p.stdout)["models"][0]
    host = results.load(str(small_run)).host
    assert [s["stride_bytes"] for s in m["strides"]] == [65536, M]
    assert [s["pages"] for s in m["strides"]] == [65536 / host["page_size"], M / host["page_size"]]
    whole = [s["regime"] == "whole-flush" for s in m["strides"]]
    assert {s["regime"] for s in m["strides"]} <= {"per-page", "whole-flush"}
    if any(whole):
        assert m["full_flush_us"] > 0
    else:
        assert m["fixed_us"] is not None and m["per_page_us"] is not None
    ceiling = host.get("tlb_single_page_flush_ceiling")
    for s in m["strides"]:
        if s["regime_source"] == "ceiling":  # decided by the host's ceiling: pages past it are a whole flush
            assert (s["regime"] == "whole-flush") == (s["pages"] > ceiling), (s, ceiling)
    assert all(s["regime_source"] in ("counters", "ceiling", "data") for s in m["strides"])
    assert all(s["us_per_call"] > 0 for s in m["strides"])


def test_chunked_resampling_draws_what_one_big_draw_does():
    """the bootstrap resamples a chunk at a time (bounded memory at 10^6 passes); for a
    seed the draws are those of all resamples at once, whatever the chunk."""
    units = np.random.default_rng(1).normal(10, 1, size=(9, 3))
    units[2, 1] = np.nan
    pages, whole = np.array([16.0, 256.0, 1024.0]), np.array([False, False, True])
    once = model.bootstrap(units, pages, whole, np.random.default_rng(0), resamples=201, chunk=201)
    for chunk in (1, 2, 7, 64):
        again = model.bootstrap(units, pages, whole, np.random.default_rng(0), resamples=201, chunk=chunk)
        assert np.array_equal(once, again, equal_nan=True), chunk
    assert model.chunk_rows(10**6, 4) == 1 and model.chunk_rows(10, 4) * 10 * 5 * 8 <= 32 << 20


def test_chunked_median_interval_is_unchanged(monkeypatch):
    """plot's median CI (scipy's bootstrap) in batches equals the one drawn at once."""
    from atsdbench.analysis import stats

    v = np.random.default_rng(2).normal(5, 1, size=31)
    assert stats.chunk_rows(10**6) == 1 and stats.chunk_rows(31) >= 4999  # 10^6 rounds: 1 resample a batch (8 MiB)
    once = stats.interval(v, "median", seed=3)
    monkeypatch.setattr(stats, "chunk_rows", lambda n, columns=1: 7)
    assert stats.interval(v, "median", seed=3) == once


def test_sides_of_different_sizes_are_warned_about(fixtures):
    # 1G against 64M: the per-call costs differ with the size alone ("fixed cost -725%" said nothing)
    from atsdbench.analysis.compare import sub_runs
    from atsdbench.data.sides import files

    def load_group(item):
        return sub_runs(files(item))

    big, small = (load_group(str(fixtures / n)) for n in ("before.json", "small_other.json"))
    try:
        analysis = model.analyse([big, small], ["big", "small"])
    except UsageError:  # nothing to fit in the small file: the warning is then made before the refusal
        assert model.size_warnings([big, small], ["big", "small"])
    else:
        assert any("differ in size (1G in big, 64M in small)" in w for w in analysis.warnings)
    assert model.size_warnings([big, big], ["a", "b"]) == []


def _pandas_unit_matrix(frames, unit):
    """unit_matrix as it was written with pandas (the oracle): grouped means, unstacked by stride."""
    import pandas as pd

    keys = ["file_index", "round"] + (["rep"] if unit == "pass" else [])
    parts = []
    for frame in frames:
        timed = ~frame["warmup"]
        if "us_per_call" not in frame or frame["us_per_call"][timed].isna().any():
            m = frame.loc[timed, keys[1:] + ["stride_bytes", "seconds", "calls"]]
            m["us_per_call"] = m["seconds"] * 1e6 / m["calls"]
        else:
            m = frame.loc[timed, keys[1:] + ["stride_bytes", "us_per_call"]]
        parts.append(m.groupby(keys[1:] + ["stride_bytes"])["us_per_call"].mean())
    grouped = pd.concat(parts, keys=range(len(parts)), names=["file_index"])
    if unit == "run":
        grouped = grouped.groupby(["file_index", "stride_bytes"]).mean()
    grouped = grouped.unstack("stride_bytes")
    grouped = grouped.reindex(sorted(grouped.columns), axis=1)
    return [int(s) for s in grouped.columns], grouped.to_numpy(dtype=float)


@pytest.mark.parametrize("unit", ["round", "pass", "run"])
def test_unit_matrix_is_the_grouped_means_pandas_gave(unit):
    """numpy's unit_matrix against pandas' groupby of the same passes: warm-up passes, a stride one
    file lacks, NaN rounds and strides (in no unit), us_per_call with gaps (from seconds and calls),
    rows in (file, round, rep) order."""
    import pandas as pd

    from conftest import table_of

    rng = np.random.default_rng(29)
    for i in range(12):
        frames = []
        for f in range(int(rng.integers(1, 4))):
            n = int(rng.integers(4, 40))
            frame = pd.DataFrame({
                "warmup": rng.random(n) < 0.2,
                "stride_bytes": rng.choice([65536, 1 << 20, 2 << 20] if f or i % 2 else [65536, 1 << 20], n),
                "round": rng.integers(0, 4, n), "rep": rng.integers(0, 3, n),
                "seconds": rng.uniform(0.01, 0.02, n), "calls": rng.integers(100, 200, n)})
            frame["us_per_call"] = frame["seconds"] * 1e6 / frame["calls"] * rng.uniform(0.9, 1.1, n)
            if i % 3 == 1:
                frame.loc[rng.random(n) < 0.2, "us_per_call"] = np.nan
            if i % 5 == 2:
                frame["round"] = frame["round"].astype(float)
                frame.loc[rng.random(n) < 0.1, "round"] = np.nan
            frames.append(frame)
        want_strides, want = _pandas_unit_matrix(frames, unit)
        strides, got = model.unit_matrix([table_of(f) for f in frames], unit)
        assert strides == want_strides
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    warm = frames[0].assign(warmup=True)  # a file of warm-up passes only: no unit of its own
    assert model.unit_matrix([table_of(warm)], unit) == ([], pytest.approx(np.empty((0, 0))))
    strides, got = model.unit_matrix([table_of(warm), table_of(frames[0])], unit)
    np.testing.assert_array_equal(got, model.unit_matrix([table_of(frames[0])], unit)[1])
