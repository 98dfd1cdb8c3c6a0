"""`atsdbench plot`: rate against stride (with CIs), latency distributions, speedup.  matplotlib is optional."""
import math
import os

from ..data import cells, files as outfile, results
from ..analysis import compare as comparison, stats
from ..errors import UsageError
from ..units import format_size
from .numbers import general, level

FORMATS = ("png", "svg", "pdf")


def require_matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise UsageError("plot needs matplotlib, which is not installed: pip install 'atsdbench[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def printable(label):
    """A label as matplotlib can draw it: bytes that were not UTF-8 (surrogates, from a file name or
    --label) as \\xNN, and '$' drawn as itself rather than opening mathtext."""
    text = str(label)
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("$", r"\$")


def output_format(path):
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in FORMATS:
        raise UsageError(f"plot output {path}: the extension must be .png, .svg or .pdf")
    return ext


def _ceiling_stride(result):
    ceiling, page = result.host.get("tlb_single_page_flush_ceiling"), result.host.get("page_size")
    return ceiling * page if isinstance(ceiling, int) and page else None


def latency_distribution(result, stride, cell=None):
    """(bin centres in us, fraction of calls) merged over measured passes (of one cell where the file
    has cells), from the stored quarter-octave histograms; None when no latency was recorded."""
    frame = cells.frame_of(result.measured, cell)
    if "lat_hist" not in frame:
        return None
    counts = {}
    for hist in frame[frame["stride_bytes"] == stride]["lat_hist"]:
        if isinstance(hist, dict):
            for k, c in hist.items():
                counts[int(k)] = counts.get(int(k), 0) + c
    if not counts:
        return None
    keys = range(min(counts), max(counts) + 1)  # empty bins drawn as zero, not bridged
    total = sum(counts.values())
    return [2 ** ((k + 0.5) / 4) / 1e3 for k in keys], [counts.get(k, 0) / total for k in keys]


def _finish(ax, xlabel, ylabel, title, ticks=None):
    if ticks:
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [format_size(t) for t in ticks])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)


def _series(files, labels):
    """(result, cell index, legend label) per line: one per file, or one per cell of a file with cells
    ("LABEL bystanders=1")."""
    out = []
    for f, label in zip(files, labels):
        names = cells.labels(f)
        for index, name in names.items():
            out.append((f, index, f"{label} {printable(name)}" if index is not None else label))
    return out


def _ceiling_strides(files):
    """[(stride, legend text)]: the host's flush ceiling of the first file, or every ceiling its cells
    ran under."""
    f = files[0]
    page = f.host.get("page_size")
    values = sorted({s.get("ceiling") for s in cells.specs(f).values() if s.get("ceiling") is not None})
    if values and page:
        return [(v * page, f"flush ceiling {v} ({format_size(v * page)})") for v in values]
    ceiling = _ceiling_stride(f)
    return [(ceiling, f"flush ceiling ({format_size(ceiling)})")] if ceiling else []


def _rate_panel(ax, files, labels, metric, confidence, ticks):
    units = set()
    for f, cell, label in _series(files, labels):
        frame = cells.frame_of(f.samples, cell)
        unit = stats.effective_unit(frame, "round")
        units.add(unit)
        measured = stats.measured(frame)
        strides = sorted(int(s) for s in measured["stride_bytes"].unique())
        centres, below, above = [], [], []
        for s in strides:
            c, lo, hi = stats.interval(stats.observations(frame, s, unit, metric), metric, confidence)
            centres.append(c)
            below.append(0 if math.isnan(lo) else c - lo)
            above.append(0 if math.isnan(hi) else hi - c)
        line = ax.errorbar(strides, centres, yerr=[below, above], marker="o", capsize=4, label=label)
        ax.scatter(measured["stride_bytes"], measured["gbps"], s=6, alpha=0.25, color=line.lines[0].get_color())
    for stride, text in _ceiling_strides(files):
        ax.axvline(stride, color="grey", linestyle="--", label=text)
    per = "round" if units == {"round"} else "pass where a file has one round"
    _finish(ax, "stride", "GB/s (10^9 bytes/s)",
            f"mprotect(PROT_NONE) rate, {metric} with {level(confidence)} CI (one observation per {per})", ticks)


def _latency_panel(ax, files, labels):
    for f, cell, label in _series(files, labels):
        for s in f.config.get("strides", []):
            dist = latency_distribution(f, s, cell)
            if dist:
                ax.step(dist[0], dist[1], where="mid", label=f"{label} {format_size(s)}")
    ax.set_xscale("log")
    _finish(ax, "latency per mprotect call (us)", "fraction of calls", "per-call latency")


def _speedup_panel(ax, files, labels, metric, confidence, ticks):
    cmp = comparison.compare(files, metric=metric, confidence=confidence, labels=labels)
    frame = cmp.frame()
    for label in labels[1:]:
        for cell in frame["cell"].unique():  # "" where the files have no cells
            rows = frame[(frame["new_label"] == label) & (frame["cell"] == cell)]
            text = f"{label} vs {labels[0]}" + (f" ({printable(cell)})" if cell else "")
            line = ax.plot(rows["stride_bytes"], rows["speedup_pct"], marker="o", label=text)[0]
            ax.fill_between(rows["stride_bytes"], rows["ci_low_pct"], rows["ci_high_pct"], alpha=0.2,
                            color=line.get_color())
    ax.axhline(0, color="black", linewidth=0.8)
    _finish(ax, "stride", "speedup %", f"speedup vs {labels[0]}, {level(confidence)} CI ({cmp.test}, per {cmp.unit})",
            ticks)


def _model_panel(ax, files, labels, confidence):
    """us per call against pages: the strides, the fitted line, the whole-flush level, the crossover."""
    from ..analysis import model

    analysis = model.analyse([[f] for f in files], labels, confidence)
    for models in analysis.sides:
        for m in models:
            name = f"{m.label}{f' [{m.cell}]' if m.cell else ''}"
            p = m.params
            color = ax.plot(m.pages[~m.whole], m.us_per_call[~m.whole], "o",
                            label=name)[0].get_color()
            if m.whole.any():
                ax.plot(m.pages[m.whole], m.us_per_call[m.whole], "s", color=color)  # squares: whole flushes
            if math.isfinite(p["per_page_us"]):
                xs = [0, max(m.pages)]
                ax.plot(xs, [p["fixed_us"] + p["per_page_us"] * x for x in xs], "-", color=color,
                        label=f"{name}: {general(p['fixed_us'])} + {general(p['per_page_us'])} us/page")
            if math.isfinite(p["full_flush_us"]):
                ax.axhline(p["full_flush_us"], color=color, linestyle=":",
                           label=f"{name}: whole flush {general(p['full_flush_us'])} us")
            if math.isfinite(p["crossover_pages"]) and p["crossover_pages"] > 0:
                ax.axvline(p["crossover_pages"], color=color, linestyle="--", alpha=0.6,
                           label=f"{name}: crossover {general(p['crossover_pages'])} pages")
    units = sorted({format_size(m.page_bytes) for models in analysis.sides for m in models})
    _finish(ax, f"pages per call ({', '.join(units)} pages)", "us per mprotect call",
            "cost model: fixed + per-page x pages, whole flush past the ceiling")


def make_figure(files, metric="median", confidence=95.0, labels=None, model=False):
    """The matplotlib Figure (tests inspect it); nothing is written."""
    plt = require_matplotlib()
    files = [results.load(f) for f in files]
    for f in files:  # an axis with nothing on it fails deep inside matplotlib
        if not f.measured["gbps"].notna().any():
            raise UsageError(f"{f.path}: no measured pass has a rate (gbps): nothing to plot")
    labels = [printable(x) for x in comparison.choose_labels(files, labels)]
    has_latency = any(latency_distribution(f, s) for f in files for s in f.config.get("strides", []))
    panels = 1 + has_latency + (len(files) > 1) + bool(model)
    fig, axes = plt.subplots(panels, 1, figsize=(8, 3.6 * panels), squeeze=False)
    axes = [a[0] for a in axes]
    ticks = sorted({int(s) for f in files for s in f.measured["stride_bytes"].unique()})
    _rate_panel(axes[0], files, labels, metric, confidence, ticks)
    if has_latency:
        _latency_panel(axes[1], files, labels)
    if len(files) > 1:
        _speedup_panel(axes[1 + has_latency], files, labels, metric, confidence, ticks)
    if model:
        _model_panel(axes[-1], files, labels, confidence)
    fig.tight_layout()
    return fig


def save(fig, path):
    """Through a temporary file renamed into place: a full disk leaves no truncated picture."""
    fmt = output_format(path)
    outfile.write_atomically(path, lambda f: fig.savefig(f, format=fmt, dpi=100), binary=True)
