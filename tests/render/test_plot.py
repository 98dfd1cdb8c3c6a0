"""plot: rendered from committed fixtures; the figure is inspected as matplotlib objects, not pixels."""
import pytest

pytest.importorskip("matplotlib")

from atsdbench.render import plot  # noqa: E402


def test_figure_lines_and_labels(fixtures):
    fig = plot.make_figure([str(fixtures / "before.json"), str(fixtures / "after.json")], metric="mean")
    rate, speed = fig.axes
    labels = [t.get_text() for t in rate.get_legend().get_texts()]
    assert labels == ["Before", "After"]
    assert [t.get_text() for t in rate.get_xticklabels()] == ["64K", "1M", "2M", "4M"]
    assert rate.get_xscale() == "log" and "GB/s" in rate.get_ylabel()
    assert len(rate.containers) == 2  # one errorbar per file
    assert [t.get_text() for t in speed.get_legend().get_texts()] == ["After vs Before"]
    assert speed.lines[0].get_ydata()[0] == pytest.approx(11.687, abs=0.01)  # the golden text's +11.7%


def test_ceiling_marker_where_known(fixtures, tmp_path):
    import json

    data = json.loads((fixtures / "before.json").read_text())
    data["host"]["tlb_single_page_flush_ceiling"] = 33
    (tmp_path / "c.json").write_text(json.dumps(data))
    fig = plot.make_figure([str(tmp_path / "c.json")])
    assert len(fig.axes) == 1
    assert any("flush ceiling" in t.get_text() for t in fig.axes[0].get_legend().get_texts())


def test_latency_panel(fixtures, tmp_path):
    import json

    data = json.loads((fixtures / "before.json").read_text())
    for s in data["samples"]:
        s["lat_hist"] = {"48": 10, "50": 5}
    (tmp_path / "lat.json").write_text(json.dumps(data))
    fig = plot.make_figure([str(tmp_path / "lat.json")])
    assert len(fig.axes) == 2 and fig.axes[1].get_xlabel().startswith("latency")
    x, y = fig.axes[1].lines[0].get_data()
    assert list(y) == pytest.approx([2 / 3, 0, 1 / 3])  # the empty bin is drawn as zero


@pytest.mark.parametrize("ext,magic", [("png", b"\x89PNG"), ("svg", b"<?xml"), ("pdf", b"%PDF")])
def test_cli_writes_each_format(cli, fixtures, tmp_path, ext, magic):
    out = tmp_path / f"sweep.{ext}"
    p = cli("plot", "before.json", "after.json", "-o", out, cwd=fixtures)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes().startswith(magic)
    if ext == "png":
        import matplotlib.image

        assert matplotlib.image.imread(str(out)).shape[:2] == (720, 800)  # 8 x 7.2 in at 100 dpi


def test_bad_extension_and_missing_matplotlib(cli, cli_process, fixtures, tmp_path):
    p = cli("plot", "before.json", "-o", tmp_path / "x.gif", cwd=fixtures)
    assert p.returncode == 2 and "must be .png, .svg or .pdf" in p.stderr
    fake = tmp_path / "fake"
    (fake / "matplotlib").mkdir(parents=True)
    (fake / "matplotlib" / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    import os

    p = cli_process("plot", "before.json", "-o", tmp_path / "x.png", cwd=fixtures,  # a fresh interpreter's import
                    env={**os.environ, "PYTHONPATH": str(fake)})
    assert p.returncode == 2 and p.stderr.strip() == (
        "atsdbench: plot needs matplotlib, which is not installed: pip install 'atsdbench[plot]'")


def test_replicate_sets_titles_and_size_mismatch(fixtures):
    before, after, small = (str(fixtures / n) for n in ("before.json", "after.json", "small_other.json"))
    warnings = []
    fig = plot.make_figure([f"{before},{after}", small], warnings=warnings)
    rate = fig.axes[0]
    assert len(rate.containers) == 2  # one errorbar per side, the replicate set pooled
    assert fig._suptitle.get_text().startswith("4.19.0-rc4") and "1G, 64M" in fig._suptitle.get_text()
    assert len(warnings) == 1 and "differ in size (1G in" in warnings[0] and "64M in" in warnings[0]
    same = []
    plot.make_figure([before, after], warnings=same)
    assert same == []


def test_one_kernel_twice_keeps_the_kernel_in_the_legend(fixtures, tmp_path):
    import json

    for name in ("x.json", "y.json"):
        data = json.loads((fixtures / "before.json").read_text())
        data["config"].pop("label", None)
        (tmp_path / name).write_text(json.dumps(data))
    fig = plot.make_figure([str(tmp_path / "x.json"), str(tmp_path / "y.json")])
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["4.19.0-rc4 (x.json)", "4.19.0-rc4 (y.json)"]
