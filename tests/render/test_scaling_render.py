"""render/scaling (named apart from tests/analysis/test_scaling.py: test files need unique basenames
here): the scaling tables of show and compare and plot's scaling panel, from synthetic sweeps
(tests/fixtures/sweep.json, sweep_after.json: make_fixtures.sweep; files built in
tests/analysis/test_scaling.py); the command line in-process (the cli fixture)."""
import json
import math
import re

import pytest

from atsdbench.analysis import compare as comparison, compare_by
from atsdbench.data import sides
from atsdbench.render import compare as compare_formats, notes


def _rows(out, first):
    """The table rows of an output that start with `first` (a stride)."""
    return [re.split(r"\s{2,}", line.strip()) for line in out.split("\n") if line.startswith(first + " ")]


def test_show_reads_a_sweep_by_thread_count(cli, fixtures):
    p = cli("show", "sweep.json", cwd=fixtures)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "cell 2: threads=4" in out  # the cells' blocks stay
    scaling = out[out.index("scaling: GB/s = 10^9 bytes/s"):]
    assert "N = 6 rounds a cell" in scaling and "paired by round: this run, not sessions" in scaling
    rows = _rows(scaling, "64K")
    assert [r[1] for r in rows] == ["1", "2", "4"]
    assert rows[0][4:6] == ["100%", "reference"]
    rate1, rate4 = float(rows[0][2]), float(rows[2][2])
    assert float(rows[2][3]) == pytest.approx(rate4 / 4, abs=0.01)  # per task
    assert int(rows[2][4][:-1]) == round(100 * rate4 / (4 * rate1))  # efficiency against linear from 1
    assert re.fullmatch(r"\[\d+, \d+\]%", rows[2][5]) and rows[2][6].endswith("%")
    from atsdbench.data import results
    from atsdbench.render import tables

    alone = tables.scaling_table(results.load(str(fixtures / "sweep.json")))
    assert alone in out and max(map(len, alone.split("\n"))) <= notes.WIDTH


def test_show_scaling_alone_in_every_format(cli, fixtures):
    csv = cli("show", "sweep.json", "--scaling", "--format", "csv", cwd=fixtures)
    assert csv.returncode == 0, csv.stderr
    head, *lines = csv.stdout.strip().split("\n")
    assert head.startswith("cell,stride,tasks,rate,rate_per_task,efficiency_pct") and "cpu_share_pct" in head
    assert len(lines) == 6 and [line.split(",")[2] for line in lines[:3]] == ["1", "2", "4"]
    md = cli("show", "sweep.json", "--scaling", "--format", "markdown", cwd=fixtures)
    assert md.returncode == 0 and "| Stride" in md.stdout and "cell 0:" not in md.stdout
    plain = cli("show", "sweep.json", "--format", "csv", cwd=fixtures)
    assert "efficiency" not in plain.stdout  # show's csv stays one table


def test_show_scaling_of_a_file_without_a_sweep_is_one_line(cli, fixtures):
    p = cli("show", "before.json", "--scaling", cwd=fixtures)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "no threads axis of 2 or more thread counts" in p.stderr


def test_compare_by_threads_is_a_row_per_thread_count(cli, fixtures):
    p = cli("compare", "sweep.json", "--by", "threads", cwd=fixtures)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split("\n")
    assert lines[0] == "madvise rate (GB/s = 10^9 bytes/s), geometric mean"
    assert lines[1] == compare_formats.efficiency_from_speedup(1)
    rows = _rows(p.stdout, "2M")
    assert [r[1] for r in rows] == ["1", "2", "4"]
    speedup = float(rows[2][4].rstrip("%"))
    assert int(rows[2][5][:-1]) == round((1 + speedup / 100) / 4 * 100)  # efficiency from the paired speedup
    assert rows[2][-1] == "faster" and "N (rounds) = 6" in p.stdout
    assert all(len(line) <= notes.WIDTH for line in lines)


def test_by_threads_efficiency_ci_is_the_speedups_mapped(fixtures):
    from atsdbench.analysis import scaling
    from atsdbench.data import results

    cmp = compare_by.compare_by(sides.load([str(fixtures / "sweep.json")]), "threads")
    assert cmp.by_values == [1, 2, 4] and cmp.rate[1] == "GB/s"
    sc = scaling.analyse(results.load(str(fixtures / "sweep.json")))
    for row in cmp.rows:
        n = cmp.by_values[cmp.labels.index(row["new_label"])]
        mine = next(r for r in sc.rows if (r.threads, r.stride_bytes) == (n, row["stride_bytes"]))
        # the same pairs, the same paired t: show's efficiency is compare --by's speedup / (N/1)
        assert scaling.efficiency(row["speedup_pct"], n, 1) == pytest.approx(mine.efficiency)
        assert scaling.efficiency(row["ci_low_pct"], n, 1) == pytest.approx(mine.eff_low)
        assert scaling.efficiency(row["ci_high_pct"], n, 1) == pytest.approx(mine.eff_high)


def test_two_files_one_session_a_side_row_per_thread_count_and_no_verdict(cli, fixtures):
    p = cli("compare", "sweep.json", "sweep_after.json", cwd=fixtures)
    assert p.returncode == 0, p.stderr
    rows = _rows(p.stdout, "64K")
    assert [r[1] for r in rows] == ["1", "2", "4"]
    assert all(r[-1] == "no verdict" for r in rows)
    assert "within-run interval" in p.stdout and "N = 6/6" in p.stdout
    assert "no verdict: one session a side" in p.stdout
    cmp = comparison.compare(sides.load([str(fixtures / "sweep.json"), str(fixtures / "sweep_after.json")]))
    assert cmp.withheld and all(r["verdict_withheld"] and not r["significant"] for r in cmp.rows)
    asked = cli("compare", "sweep.json", "sweep_after.json", "--unit", "round", cwd=fixtures)
    assert "faster" in asked.stdout and "one file a side: the CI leaves out drift" in asked.stdout


def _runs(fixtures, tmp_path, name, k=2):
    """k runs with the fixture's rates, each its own (copies of one run are one observation)."""
    data, paths = json.loads((fixtures / name).read_text()), []
    for j in range(k):
        for sample in data["samples"]:
            sample["retaken"] = j
        paths.append(tmp_path / f"{j}-{name}")
        paths[-1].write_text(json.dumps(data))
    return ",".join(map(str, paths))


def test_replicate_files_a_side_give_verdicts_per_thread_count(fixtures, tmp_path):
    side = _runs(fixtures, tmp_path, "sweep.json")  # shape only: the file is the unit
    cmp = comparison.compare(sides.load([side, _runs(fixtures, tmp_path, "sweep_after.json")]))
    assert not cmp.withheld and cmp.level == "file"
    out = compare_formats.render_text(cmp)
    assert [r[1] for r in _rows(out, "2M")] == ["1", "2", "4"]


def test_another_rate_and_unit_drop_in(tmp_path, cli, sweep_data):
    """A workload's loops/s: its column read, its unit in every title, never GB/s."""
    extra = {"rate": {"column": "loops_per_s", "unit": "loops/s", "definition": "loops/s"}}
    for name, e in (("a.json", 0.9), ("b.json", 0.95)):
        data = sweep_data(column="loops_per_s", extra=extra, rate=lambda n, r, e=e: 5e5 * n ** e * (1 + r / 50))
        (tmp_path / name).write_text(json.dumps(data))
    show = cli("show", "a.json", "--scaling", cwd=tmp_path)
    assert show.returncode == 0, show.stderr
    table = show.stdout[show.stdout.index("scaling: "):]
    assert table.startswith("scaling: loops/s of all tasks") and "GB/s" not in table
    luck = math.exp(sum(math.log(1 + r / 50) for r in range(4)) / 4)  # geometric mean of its round means
    assert _rows(show.stdout, "64K")[1][2] == f"{5e5 * 2 ** 0.9 * luck:.0f}"
    by = cli("compare", "a.json", "--by", "threads", cwd=tmp_path)
    assert by.stdout.startswith("madvise rate (loops/s)") and "GB/s" not in by.stdout
    two = cli("compare", "a.json", "b.json", "--unit", "round", cwd=tmp_path)
    assert "a.json loops/s" in two.stdout or "loops/s" in two.stdout.split("\n")[1]
    plain = sweep_data()
    (tmp_path / "gb.json").write_text(json.dumps(plain))
    mixed = cli("compare", "gb.json", "a.json", cwd=tmp_path)
    assert mixed.returncode == 2 and "the files measure different rates (GB/s, loops/s)" in mixed.stderr


def test_plot_draws_the_scaling_panel(cli, fixtures, tmp_path):
    pytest.importorskip("matplotlib")
    from atsdbench.render import plot

    fig = plot.make_figure([str(fixtures / "sweep.json"), str(fixtures / "sweep_after.json")])
    panel = next(a for a in fig.axes if a.get_title().startswith("scaling"))
    # the legend's N and what its CI leaves out, as every legend says them
    assert re.search(r"\nN = \d+(-\d+)? rounds a cell; the CI covers the first file's own rounds, not sessions$",
                     panel.get_title()), panel.get_title()
    assert [t.get_text() for t in panel.get_xticklabels()] == ["1", "2", "4"]
    labels = [t.get_text() for t in panel.get_legend().get_texts()]
    assert "Sweep 64K" in labels and "Sweep 64K: linear from 1" in labels
    linear = next(line for line in panel.lines if line.get_label() == "Sweep 2M: linear from 1")
    xs, ys = linear.get_data()
    assert list(xs) == [1, 2, 4] and ys[2] == pytest.approx(4 * ys[0])
    right = next(a for a in fig.axes if a.get_ylabel().startswith("disturbed passes"))
    assert right.get_ylim() == (0, 100) and len(right.lines) == 4  # per side and stride
    # pasteable: the legend beside the panel, off its lines; the disturbed share a panel of its own under it
    fig.canvas.draw()
    assert panel.get_legend().get_window_extent().x0 >= panel.get_window_extent().x1
    assert right.get_position().y1 < panel.get_position().y0 and not panel.lines[0].get_linestyle() == ":"
    assert [line.get_color() for line in right.lines] == [c.lines[0].get_color() for c in panel.containers]
    out = tmp_path / "sweep.png"
    p = cli("plot", "sweep.json", "-o", out, cwd=fixtures)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes().startswith(b"\x89PNG")


def test_the_docs_table_is_the_fixtures(fixtures):
    """docs/workloads.md#scaling shows the synthetic fixture's table: the same text as show prints."""
    import pathlib

    from atsdbench.data import results
    from atsdbench.render import tables

    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "workloads.md").read_text()
    shown = doc.split("$ atsdbench show sweep.json --scaling\n...\n", 1)[1].split("\n```", 1)[0]
    assert shown == tables.scaling_table(results.load(str(fixtures / "sweep.json")))


def test_other_axes_and_processes(cli, tmp_path, sweep_data):
    """--tasks processes heads the count column so; another axis gives show and compare --by threads a
    block per value, the other axes held equal."""
    data = sweep_data(axes={"bystanders": [0, 1]}, extra={"tasks": "processes"}, strides=(65536, 2 << 20),
                      rate=lambda n, r: 3.0 * n ** 0.5 * (1 + r / 10))
    data["config"]["strides"] = [65536, 2 << 20]
    (tmp_path / "p.json").write_text(json.dumps(data))
    show = cli("show", "p.json", "--scaling", cwd=tmp_path)
    assert show.returncode == 0, show.stderr
    assert "\nbystanders=0\nStride  Processes" in show.stdout and "\nbystanders=1\nStride" in show.stdout
    assert [r[4] for r in _rows(show.stdout, "64K")] == ["100%", "71%", "50%"] * 2  # sqrt(N) / N
    by = cli("compare", "p.json", "--by", "threads", cwd=tmp_path)
    lines = by.stdout.split("\n")
    assert lines[2:4] == ["bystanders=0", lines[3]] and lines[3].split()[:2] == ["Stride", "Processes"]
    after = by.stdout.split("\nbystanders=1\n", 1)[1]
    assert [r[1] for r in _rows(after, "2M")] == ["1", "2", "4"]
    assert max(map(len, lines)) <= notes.WIDTH


def test_show_scaling_has_no_lava_format(cli, fixtures):
    p = cli("show", "--scaling", "--format", "lava", fixtures / "sweep.json")
    assert p.returncode == 2 and "show --scaling has no lava format" in p.stderr and not p.stdout
