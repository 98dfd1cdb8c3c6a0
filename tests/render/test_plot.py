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


# svg and pdf are matplotlib's own writers behind the same save: breadth (png's size is checked quick)
@pytest.mark.parametrize("ext,magic", [("png", b"\x89PNG"), pytest.param("svg", b"<?xml", marks=pytest.mark.slow),
                                       pytest.param("pdf", b"%PDF", marks=pytest.mark.slow)])
def test_cli_writes_each_format(cli, fixtures, tmp_path, ext, magic):
    out = tmp_path / f"sweep.{ext}"
    p = cli("plot", "before.json", "after.json", "-o", out, cwd=fixtures)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes().startswith(magic)
    if ext == "png":
        import matplotlib.image

        assert matplotlib.image.imread(str(out)).shape[:2] == (720, 800)  # 8 x 7.2 in at 100 dpi


@pytest.mark.slow  # a process of its own (the quick set stays in process)
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


def test_matplotlib_is_looked_for_before_the_files_are_read(monkeypatch):
    """cmd_plot finds matplotlib first (one line, exit 2, before any file is read) and imports it only
    once the numbers are worked out (the two did not fit in 300 MB at 10^6 passes)."""
    import importlib.util

    from atsdbench.errors import UsageError

    plot.check_matplotlib()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else 0)
    with pytest.raises(UsageError, match="plot needs matplotlib, which is not installed"):
        plot.check_matplotlib()


def test_replicate_sets_titles_and_size_mismatch(fixtures):
    before, after, small = (str(fixtures / n) for n in ("before.json", "after.json", "small_other.json"))
    warnings = []
    fig = plot.make_figure([f"{before},{after}", small], warnings=warnings)
    rate = fig.axes[0]
    assert len(rate.containers) == 2  # one errorbar per side, the replicate set pooled
    assert fig._suptitle.get_text().startswith("4.19.0-rc4") and "1G, 64M" in fig._suptitle.get_text()
    assert "differ in size (1G in" in warnings[0] and "64M in" in warnings[0]
    assert not any("differ in size" in w for w in warnings[1:])  # said once, compare's words left out
    # what compare warns of the same files, plot warns too
    assert any(w.startswith("the files differ in bystanders: 0 in Before, 1 in Other") for w in warnings)
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


# --- what the figure says, number by number (plot at 10^6 passes in bounded memory) ----------

def figure_numbers(fig):
    """Every number and text a figure draws, panel by panel: titles, legends, the lines' points, the
    scatter's dots, the CI bars and bands; floats to 10 significant digits, NaN as "nan"."""
    import math

    import numpy as np

    def num(v):
        v = float(v)
        return "nan" if math.isnan(v) else float(f"{v:.10g}")

    def arr(a):
        a = np.ma.filled(np.ma.asarray(a, dtype=float), np.nan)
        return [num(v) for v in a.ravel()]

    out = [fig._suptitle.get_text() if fig._suptitle else ""]
    for ax in fig.axes:
        legend = ax.get_legend()
        out.append({"title": ax.get_title(), "x": ax.get_xlabel(), "y": ax.get_ylabel(),
                    "legend": [t.get_text() for t in legend.get_texts()] if legend else [],
                    "lines": [[arr(line.get_xdata()), arr(line.get_ydata())] for line in ax.lines],
                    "collections": [[arr(c.get_offsets())] + [arr(p.vertices) for p in c.get_paths()]
                                    if type(c).__name__ == "PathCollection" else [arr(p.vertices) for p in c.get_paths()]
                                    for c in ax.collections]})
    return out


# the figures tests/golden/plot_numbers.json holds (captured before plot's memory work)
GOLDEN_FIGURES = {  # drawn with the median, plot's default then
    "median, model": (["before.json", "after.json"], {"metric": "median", "model": True}),
    "mean, model": (["before.json", "after.json"], {"metric": "mean", "model": True}),
    "one file": (["before.json"], {"metric": "median"}),
    "replicate sets, model": (["before.json,again.json", "after.json"], {"metric": "median", "model": True}),
    "sweep": (["sweep.json", "sweep_after.json"], {"metric": "median", "model": True}),
}


def golden_figures(fixtures):
    out = {}
    for name, (files, options) in GOLDEN_FIGURES.items():
        fig = plot.make_figure([",".join(str(fixtures / f) for f in item.split(",")) for item in files], **options)
        out[name] = figure_numbers(fig)
        import matplotlib.pyplot as plt

        plt.close(fig)
    return out


def test_the_figures_numbers_are_those_of_before(fixtures):
    """The CIs, the speedup and its band, the model's fit and its seeded bootstrap, and every dot: as
    plot drew them before it was made to fit 10^6 passes in bounded memory (a small file has fewer
    passes a stride than plot thins, so even the dots are the same)."""
    import json

    golden = json.loads((fixtures.parent / "golden" / "plot_numbers.json").read_text())
    now = json.loads(json.dumps(golden_figures(fixtures)))
    assert set(now) == set(golden)
    for name in golden:
        assert now[name] == golden[name], name


def test_a_stride_of_more_passes_than_dots_is_drawn_as_quantiles(script, tmp_path, monkeypatch):
    import numpy as np

    from atsdbench.data import results

    path = script("bench_scale").synthetic(str(tmp_path / "a.json"), 200, 1, warmup_rounds=1)
    every = plot.make_figure([path])
    monkeypatch.setattr(plot, "DOTS", 10)
    thinned = plot.make_figure([path])
    assert "dots: 10 quantiles" in thinned.axes[0].get_title() and "quantiles" not in every.axes[0].get_title()
    assert figure_numbers(thinned)[1]["lines"] == figure_numbers(every)[1]["lines"]  # the CIs are the same
    dots = np.asarray(thinned.axes[0].collections[-1].get_offsets())
    frame = results.load(path).measured
    assert len(dots) == 4 * 10  # 4 strides, each 44 measured passes
    for stride, passes in frame.groupby("stride_bytes")["gbps"]:
        ys = dots[dots[:, 0] == stride, 1]
        assert len(passes) == 44 and ys[0] == passes.min() and ys[-1] == passes.max()
        assert list(ys) == list(np.quantile(passes.to_numpy(), np.linspace(0, 1, 10)))


def _traced_peak(files, tmp_path):
    """tracemalloc's peak over make_figure(model=True) and save: every numpy and Python allocation
    of the analysis and the drawing (memory, not time: the same under load)."""
    import tracemalloc

    tracemalloc.start()
    try:
        plot.save(plot.make_figure(files, model=True), str(tmp_path / "p.png"))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_plot_model_memory_is_bounded(script, tmp_path, fixtures):
    """plot --model of two files of 10^4 and of 10^5 passes (a warm-up round each).  What the
    analysis (compare's, model's bootstrap, the rate panel's CIs) and the figure take on top of the
    loaded files grows by at most a quarter of what the files grow by, and stays under a quarter of
    them plus 24 MiB (the bootstrap's chunks: stats.CHUNK_BYTES).  At 10^6 passes a side that is at
    most 59 MiB on top of the 141 MiB of columns (docs/benchmarks.md: plot within 300 MB).  Measured
    when this was written: 14.8 and 15.3 MiB; before the rate panel's dots were thinned and its
    copies cut, 16.2 and 41.1 MiB (twice the files' growth)."""
    import matplotlib.pyplot as plt

    from atsdbench.data import results

    plt.close(plot.make_figure([str(fixtures / "before.json"), str(fixtures / "after.json")], model=True))
    bench = script("bench_scale")  # the import, fonts and caches first: they are not the files' cost
    sizes, peaks = [], []
    for n in (10**4, 10**5):
        files = [results.load(bench.synthetic(str(tmp_path / f"{k}-{n}.json"), n, k, shift=1 + 0.05 * k,
                                              warmup_rounds=1)) for k in (1, 2)]
        for f in files:
            f.samples  # the frames, as a loaded file gives them to every command
        sizes.append(sum(f.columns.get(k).nbytes for f in files for k in f.columns.keys()))
        peaks.append(_traced_peak(files, tmp_path))
        del files
    assert peaks[1] - peaks[0] <= (sizes[1] - sizes[0]) / 4, (peaks, sizes)
    assert peaks[1] <= sizes[1] / 4 + (24 << 20), (peaks, sizes)


def test_the_files_are_let_go_before_matplotlib_is_loaded(fixtures, monkeypatch):
    """the files' columns (141 MiB at 10^6 passes a side) and matplotlib (about 28 MiB) are
    never resident together: when make_figure loads matplotlib, no file it read is alive.  (Where the
    files hold RELEASE_FROM passes or more: below, the collection that frees them is not worth its
    time; these small files stand for big ones.)"""
    import weakref

    from atsdbench.data import sides

    loaded, alive = [], []
    side_files = sides.files

    def tracked(item):
        side = side_files(item)
        loaded.extend(weakref.ref(f) for f in side)
        return side

    def require():
        alive.extend(ref for ref in loaded if ref() is not None)
        return plot.require_matplotlib.__wrapped__()

    require.__wrapped__ = plot.require_matplotlib
    monkeypatch.setattr(sides, "files", tracked)
    monkeypatch.setattr(plot, "require_matplotlib", require)
    monkeypatch.setattr(plot, "RELEASE_FROM", 0)
    fig = plot.make_figure([str(fixtures / "before.json"), str(fixtures / "after.json")], model=True)
    assert len(loaded) == 2 and not alive
    assert len(fig.axes) == 3


def test_the_default_centre_and_band_are_compares(fixtures):
    """plot's default draws what compare's default reports: the geometric mean of each side's
    observations (the rate panel) and compare's speedup with its interval, named as compare names it."""
    from atsdbench.analysis.compare import compare
    from atsdbench.data import sides

    files = [str(fixtures / "before.json"), str(fixtures / "after.json")]
    fig = plot.make_figure(files)
    cmp = compare(sides.load(files))
    rate, speedup = fig.axes[0], fig.axes[-1]
    assert "geometric mean with 95% CI" in rate.get_title()
    assert "within-run interval" in speedup.get_title() and "95% CI" not in speedup.get_title()  # no verdict
    centres = {int(x): y for x, y in zip(*rate.containers[0].lines[0].get_data())}
    assert [centres[r["stride_bytes"]] for r in cmp.rows] == pytest.approx([r["base_gbps"] for r in cmp.rows])
    xs, ys = speedup.lines[0].get_data()
    assert list(ys) == pytest.approx([r["speedup_pct"] for r in cmp.rows])
