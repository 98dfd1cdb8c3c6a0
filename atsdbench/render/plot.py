"""`atsdbench plot`: rate against stride (with CIs), latency distributions, speedup.  matplotlib is optional."""
import math
import os

from ..data import cells, files as outfile, noise_profile, sides as given_sides
from ..data.columns import known
from ..analysis import compare as comparison, stats
from ..errors import UsageError
from ..units import format_size
from .numbers import general, level

FORMATS = ("png", "svg", "pdf")


def _no_matplotlib():
    return UsageError("plot needs matplotlib, which is not installed: pip install 'atsdbench[plot]'")


def require_matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise _no_matplotlib() from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def check_matplotlib():
    """Before the files are read: matplotlib is there to import (imported only once the numbers are
    worked out, make_figure: at 10^6 passes its memory and the analysis's did not fit together)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise _no_matplotlib()


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
    table = result.table
    if "lat_hist" not in table:
        return None
    table = cells.of_cell(stats.measured(table.fields(("warmup", "stride_bytes", "lat_hist", "cell"))), cell)
    counts = {}
    for hist in table["lat_hist"][table["stride_bytes"] == stride]:
        if isinstance(hist, dict):
            for k, c in hist.items():
                counts[int(k)] = counts.get(int(k), 0) + c
    if not counts:
        return None
    keys = range(min(counts), max(counts) + 1)  # empty bins drawn as zero, not bridged
    total = sum(counts.values())
    return [2 ** ((k + 0.5) / 4) / 1e3 for k in keys], [counts.get(k, 0) / total for k in keys]


def _finish(ax, xlabel, ylabel, title, ticks=None, outside=False):
    """outside: the legend right of the panel, off its lines (a sweep's lines span the panel)."""
    if ticks:
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [format_size(t) for t in ticks])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if outside:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    else:
        ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)


def _series(sides, labels):
    """(side's results, cell index, legend label) per line: one per side (a file, or a set of replicate
    files), or one per cell of a side with cells ("LABEL bystanders=1")."""
    out = []
    for side, label in zip(sides, labels):
        names = cells.labels(side[0])
        for index, name in names.items():
            out.append((side, index, f"{label} {printable(name)}" if index is not None else label))
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


# The rate panel's dots: a stride's passes drawn one by one, at most this many a side; past it, this
# many evenly spaced quantiles of them (the fastest and slowest pass included).  Every dot of a
# stride lies on one vertical line a few hundred pixels tall, so a thousand show its range and where
# the passes crowd as well as 10^6 do, and 10^6 would take plot's memory past 700 MiB.
DOTS = 1000
_PANEL_COLUMNS = ("warmup", "stride_bytes", "round", "gbps", "cell")


def _measured_column(result, column):
    """One column of a result's measured passes (not warm-up), as numpy: no copy of the others."""
    table = result.table
    return table[column][~table["warmup"]]


def _dots(values):
    """The dots drawn for one stride's passes: each of them, or DOTS quantiles where there are more."""
    import numpy as np

    values = values[~np.isnan(values)]
    return values if len(values) <= DOTS else np.quantile(values, np.linspace(0, 1, DOTS))


def _side_dots(frames):
    """A side's passes as dots, [(x, y)] a scatter each: each file's every pass in file order where no
    stride of the side has more than DOTS, else one set of dots a stride for the side (_dots).  Returns
    (those, whether it thinned).  A stride's passes are picked by a mask a file: copies of whole
    columns (as floats, then sorted for the strides) were 23 MiB at 10^6 passes a side."""
    import numpy as np

    files = []
    for table in frames:
        timed = ~np.asarray(table["warmup"], dtype=bool)
        files.append((table["stride_bytes"], np.asarray(table["gbps"], dtype=float), timed))
    found = {float(x) for s, _, _ in files for x in np.unique(s)}
    picks = {x: [(s == x) & timed for s, _, timed in files] for x in sorted(found) if not math.isnan(x)}
    picks = {x: masks for x, masks in picks.items() if any(m.any() for m in masks)}
    if all(sum(int(np.count_nonzero(m)) for m in masks) <= DOTS for masks in picks.values()):
        return [(s.astype(float)[timed], g[timed]) for s, g, timed in files], False
    strides = list(picks)
    ys = [_dots(np.concatenate([g[m] for (_, g, _), m in zip(files, picks[x])])) for x in strides]
    return [(np.concatenate([np.full(len(y), x) for x, y in zip(strides, ys)]), np.concatenate(ys))], True


def _rate_lines(sides, labels, metric, confidence):
    """What the rate panel draws, worked out before matplotlib is loaded: per line (label, strides,
    centres, below, above, dots), the units of its observations, and whether dots were thinned."""
    import numpy as np

    lines, units, thinned = [], set(), False
    for side, cell, label in _series(sides, labels):
        # only the columns drawn and counted: a copy of a whole 10^6-pass file is 74 MB
        frames = [cells.of_cell(f.table.fields(_PANEL_COLUMNS), cell) for f in side]
        unit = "pass" if any(stats.effective_unit(fr, "round") == "pass" for fr in frames) else "round"
        units.add(unit)
        per_file = [stats.observations_by_stride(fr, unit, metric) for fr in frames]
        strides = sorted({int(s) for obs in per_file for s in obs})
        centres, below, above = [], [], []
        for s in strides:  # a replicate set's observations pooled: each file's rounds are its own
            obs = np.concatenate([o.get(s, np.empty(0)) for o in per_file])
            c, lo, hi = centre_and_band(obs, metric, confidence)
            centres.append(c)
            below.append(0 if math.isnan(lo) else c - lo)
            above.append(0 if math.isnan(hi) else hi - c)
        dots, thin = _side_dots(frames)
        thinned |= thin
        lines.append((label, strides, centres, below, above, dots))
        del frames, per_file
    return lines, units, thinned


# What the rate panel's centre is, as compare's tables name their rate columns (render/compare.CENTRES).
CENTRE_WORDS = {"mean": "geometric mean with {} CI", "median": "median with {} bootstrap CI"}


def centre_and_band(obs, metric, confidence):
    """(centre, low, high) of a side's observations at a stride: with `mean`, compare's, the geometric
    mean with the t interval of the log rates (exponentiated); with `median`, the median with its
    percentile bootstrap interval.  low and high are NaN with fewer than two observations."""
    import numpy as np

    if metric != "mean":
        return stats.interval(obs, metric, confidence)
    logs = np.log(np.asarray(obs, dtype=float))
    c, lo, hi = stats.interval(logs, "mean", confidence)
    return tuple(math.exp(x) if not math.isnan(x) else math.nan for x in (c, lo, hi))


def _rate_panel(ax, heads, rate, metric, confidence, ticks):
    """heads: (the flush ceilings' [(stride, legend text)], the op's text), worked out from the files."""
    lines, units, thinned = rate
    ceilings, op = heads
    for label, strides, centres, below, above, dots in lines:
        line = ax.errorbar(strides, centres, yerr=[below, above], marker="o", capsize=4, label=label)
        for x, y in dots:
            ax.scatter(x, y, s=6, alpha=0.25, color=line.lines[0].get_color())
    for stride, text in ceilings:
        ax.axvline(stride, color="grey", linestyle="--", label=text)
    per = "round" if units == {"round"} else "pass where a file has one round"
    dots = f";\ndots: {DOTS} quantiles of a side's passes where a stride has more" if thinned else ""
    _finish(ax, "stride", "GB/s (10^9 bytes/s)",
            f"{op} rate, {CENTRE_WORDS[metric].format(level(confidence))} (one observation per {per}){dots}", ticks)


def _op(sides):
    """What the passes timed: "mprotect(PROT_NONE)", "madvise(MADV_DONTNEED)", ops of an axis."""
    from .tables import op_text

    return "/".join(dict.fromkeys(op_text(side[0].config) for side in sides))


def _latency_lines(sides, labels):
    """[(bin centres, fractions, legend label)] the latency panel draws."""
    out = []
    for side, cell, label in _series(sides, labels):
        f = side[0]  # a replicate set's first file: the distributions of one run
        for s in f.config.get("strides", []):
            dist = latency_distribution(f, s, cell)
            if dist:
                out.append((dist[0], dist[1], f"{label} {format_size(s)}"))
    return out


def _latency_panel(ax, lines):
    for xs, ys, label in lines:
        ax.step(xs, ys, where="mid", label=label)
    ax.set_xscale("log")
    _finish(ax, "latency per mprotect call (us)", "fraction of calls", "per-call latency")


def _speedup_panel(ax, cmp, labels, confidence, ticks):
    for label in labels[1:]:
        for cell in dict.fromkeys(r["cell"] for r in cmp.rows):  # "" where the files have no cells
            rows = [r for r in cmp.rows if r["new_label"] == label and r["cell"] == cell]
            text = f"{label} vs {labels[0]}" + (f" ({printable(cell)})" if cell else "")
            xs, ys, low, high = ([r[k] for r in rows] for k in ("stride_bytes", "speedup_pct", "ci_low_pct",
                                                               "ci_high_pct"))
            line = ax.plot(xs, ys, marker="o", label=text)[0]
            ax.fill_between(xs, low, high, alpha=0.2, color=line.get_color())
    ax.axhline(0, color="black", linewidth=0.8)
    # the band is what compare's table calls it: one session a side gives a within-run interval, no CI
    band = "within-run interval, no verdict" if cmp.withheld else f"{level(confidence)} CI"
    _finish(ax, "stride", "speedup %", f"speedup vs {labels[0]}, {band} ({cmp.test}, per {cmp.unit})", ticks)


def _model_analysis(sides, labels, confidence):
    from ..analysis import model

    return model.analyse(sides, labels, confidence, level="file" if any(len(s) > 1 for s in sides) else "session")


def _model_panel(ax, analysis):
    """us per call against pages: the strides, the fitted line, the whole-flush level, the crossover."""
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


def _scaling_sweeps(sides, labels, confidence):
    """[(scaling analysis, side label)] of the sides whose first file is a threads sweep."""
    from ..analysis import scaling

    return [(scaling.analyse(side[0], confidence), label) for side, label in zip(sides, labels)
            if scaling.has_sweep(side[0])]


def _scaling_panel(ax, disturbed, sweeps, confidence):
    """A threads sweep: aggregate rate against thread count (log2), each point its own CI of round
    means, the linear line from the smallest thread count dashed, the legend beside the panel; under
    it, a small panel of its own (`disturbed`), the share of disturbed passes (a task descheduled,
    the disturbance rule: what the result records for each pass) in the same colours.  will-it-scale's
    chart puts the machine's idle there; a result here has no machine-wide idle, and the least task's
    CPU share is in show --scaling --format csv."""
    units, counts, rounds = set(), set(), set()
    for sc, label in sweeps:  # a replicate set's first file: one run's sweep
        units.add(sc.unit)
        rounds.update(sc.rounds)
        keys = list(dict.fromkeys((r.group, r.stride_bytes) for r in sc.rows))
        for group, stride in keys:
            rows = sorted((r for r in sc.rows if (r.group, r.stride_bytes) == (group, stride)), key=lambda r: r.threads)
            name = f"{label} {format_size(stride)}" + (f" {printable(group)}" if group else "")
            xs = [r.threads for r in rows]
            below = [0 if math.isnan(r.rate_low) else r.rate - r.rate_low for r in rows]
            above = [0 if math.isnan(r.rate_high) else r.rate_high - r.rate for r in rows]
            line = ax.errorbar(xs, [r.rate for r in rows], yerr=[below, above], marker="o", capsize=4, label=name)
            color = line.lines[0].get_color()
            ref = rows[0]
            ax.plot(xs, [ref.rate * n / ref.threads for n in xs], linestyle="--", color=color, alpha=0.6,
                    label=f"{name}: linear from {ref.threads}")
            shares = [(r.threads, r.disturbed) for r in rows if not math.isnan(r.disturbed)]
            if shares:
                disturbed.plot(*zip(*shares), marker="o", markersize=4, linewidth=1, color=color, label=name)
            counts.update(xs)
    ticks = sorted(counts)
    for a in (ax, disturbed):
        a.set_xscale("log", base=2)
        a.set_xticks(ticks, [str(t) for t in ticks])
        a.grid(True, alpha=0.3)
    disturbed.set_ylim(0, 100)
    disturbed.set_ylabel("disturbed passes %")
    disturbed.set_title("disturbed passes: a cell's timed passes, in the colours above", fontsize="small")
    disturbed.set_xlabel("tasks (threads or processes)")
    unit = ", ".join(sorted(units)) or "GB/s"
    low, high = min(rounds, default=0), max(rounds, default=0)
    _finish(ax, "", f"{unit}, all tasks",
            scaling_panel_title(level(confidence), str(low) if low == high else f"{low}-{high}"), outside=True)


def scaling_panel_title(confidence, rounds):
    """The scaling panel's title: the centre, its CI's N, and what that CI does not cover."""
    return (f"scaling: geometric mean of round means, {confidence} CI; dashed: linear\n"
            f"N = {rounds} rounds a cell; the CI covers the first file's own rounds, not sessions")


def _labels(sides, given):
    """The user's labels, else each side's --label or kernel release; where two sides would read the
    same (one kernel twice), the file name joins it: "6.8.0 (a.json)"."""
    if given is not None:
        return [printable(x) for x in given_sides.choose_labels(sides, given)]
    names = [side[0].label for side in sides]
    if len(set(names)) < len(names):
        names = [f"{n} ({','.join(os.path.basename(f.path or '?') for f in side)})" for n, side in zip(names, sides)]
    return [printable(x) for x in names]


def title(sides):
    """What the picture is of: kernels, region sizes and hosts, each once."""
    def once(values):
        return ", ".join(dict.fromkeys(str(v) for v in values if v is not None)) or "?"

    files = [f for side in sides for f in side]
    sizes = once(format_size(f.config["size"]) if isinstance(f.config.get("size"), int) else None for f in files)
    return (f"{once(f.host.get('kernel_release') for f in files)}, {sizes}, on "
            f"{once(f.host.get('hostname') for f in files)}")


def _check_drawable(sides):
    """Every file has a measured pass: an axis with nothing on it fails deep inside matplotlib.  (A
    function of its own: make_figure's locals must not keep a file once it lets them go.)"""
    for f in (f for side in sides for f in side):
        if not known(_measured_column(f, "gbps")).any():
            raise UsageError(f"{f.path}: no measured pass has a rate (gbps): nothing to plot")


def make_figure(files, metric=None, confidence=95.0, labels=None, model=False, warnings=None):
    """The matplotlib Figure (tests inspect it), not laid out yet (save does that); nothing is
    written.  files: per side a result file, or a set of replicate files ('a1.json,a2.json', as
    compare takes them); metric: compare's (None: its default, the mean); warnings, a list, gets
    what the picture cannot show (sides of different sizes) and what compare warns of the same files
    (files that differ in what they measured, bystanders or threads, ...)."""
    import numpy as np

    from ..analysis.model import size_warnings

    metric, _, _, _ = comparison.resolve_options(metric, None, confidence)

    sides = given_sides.load(files)
    _check_drawable(sides)
    labels = _labels(sides, labels)
    if warnings is not None:  # a "-80%" speedup panel of 1G against 256M
        warnings += size_warnings(sides, labels)
    has_latency = any(latency_distribution(side[0], s) for side in sides for s in side[0].config.get("strides", []))
    from ..analysis import scaling

    sweep = any(scaling.has_sweep(side[0]) for side in sides)
    ticks = sorted({int(s) for side in sides for f in side for s in np.unique(_measured_column(f, "stride_bytes"))})
    # The numbers first, the figure after: at 10^6 passes a side the analysis's peak and matplotlib
    # (its import, the figure) do not fit in 300 MB together.
    big = sum(f.passes() for side in sides for f in side) > RELEASE_FROM
    rate = _rate_lines(sides, labels, metric, confidence)
    cmp = comparison.compare(sides, metric=metric, confidence=confidence, labels=labels,
                             store=noise_profile.Store()) if len(sides) > 1 else None
    if warnings is not None and cmp is not None:  # compare's words for the same files, each once
        def gist(w):  # "the files differ in size": model's line and compare's say it in other words
            return w.split(":")[0].split(" (")[0]
        said = {gist(w) for w in warnings}
        warnings += [w for w in cmp.warnings if gist(w) not in said]
    if model and big:  # what the rate panel and compare freed, given back before model's own peak
        _release()
    analysis = _model_analysis(sides, labels, confidence) if model else None
    heads = (_ceiling_strides([side[0] for side in sides]), _op(sides))
    latency = _latency_lines(sides, labels) if has_latency else None
    sweeps = _scaling_sweeps(sides, labels, confidence) if sweep else None
    heading, two = printable(title(sides)), len(sides) > 1
    # what the figure draws is worked out: the files read here are let go before matplotlib is loaded
    # (10^6 passes a side: 141 MiB of columns, matplotlib about 28)
    files, sides = None, None
    if big:
        _release()
    plt = require_matplotlib()
    # a sweep takes two rows: its scaling panel and, under it, the small panel of disturbed passes
    heights = [3.6] + [3.6, 1.4] * sweep + [3.6] * (has_latency + two + bool(model))
    fig, axes = plt.subplots(len(heights), 1, figsize=(8 + 2.5 * sweep, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    axes = [a[0] for a in axes]
    _rate_panel(axes[0], heads, rate, metric, confidence, ticks)
    if sweep:
        _scaling_panel(axes[1], axes[2], sweeps, confidence)
    if has_latency:
        _latency_panel(axes[1 + 2 * sweep], latency)
    if cmp is not None:
        _speedup_panel(axes[1 + 2 * sweep + has_latency], cmp, labels, confidence, ticks)
    if model:
        _model_panel(axes[-1], analysis)
    fig.suptitle(heading)
    return fig


# Passes (both sides, all files) from which make_figure gives back what it let go of: below, there is
# little to give, and a full collection with numpy, pandas and matplotlib loaded costs 30-130 ms.
RELEASE_FROM = 100_000


def _release():
    """The memory of what make_figure let go of, given back (data/columns.py's trim_heap)."""
    import gc

    from ..data import columns

    gc.collect()
    columns.trim_heap()


def save(fig, path):
    """Laid out, then written through a temporary file renamed into place: a full disk leaves no
    truncated picture.  (The layout measures every text: a third of a figure's cost, paid only by a
    figure that is written.)"""
    fmt = output_format(path)
    fig.tight_layout()
    # tight_layout leaves a placeholder engine behind (matplotlib >= 3.6), and savefig then draws the
    # whole figure twice; the layout is done: 45 ms of a 320 ms plot
    if hasattr(fig, "set_layout_engine"):
        fig.set_layout_engine(None)
    outfile.write_atomically(path, lambda f: fig.savefig(f, format=fmt, dpi=100), binary=True)
