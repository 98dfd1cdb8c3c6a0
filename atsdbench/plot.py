"""`atsdbench plot`: rate against stride (with CIs), latency distributions, speedup.  matplotlib is optional."""
import math
import os

from . import comparison, results, stats
from .errors import UsageError
from .units import format_size

FORMATS = ("png", "svg", "pdf")


def require_matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise UsageError("plot needs matplotlib, which is not installed: pip install 'atsdbench[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def output_format(path):
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in FORMATS:
        raise UsageError(f"plot output {path}: the extension must be .png, .svg or .pdf")
    return ext


def _ceiling_stride(result):
    ceiling, page = result.host.get("tlb_single_page_flush_ceiling"), result.host.get("page_size")
    return ceiling * page if isinstance(ceiling, int) and page else None


def latency_distribution(result, stride):
    """(bin centres in us, fraction of calls) merged over measured passes, from the stored
    quarter-octave histograms; None when no latency was recorded."""
    frame = result.measured
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


def make_figure(files, metric="median", confidence=95.0, labels=None):
    """The matplotlib Figure (tests inspect it); nothing is written."""
    plt = require_matplotlib()
    files = [results.load(f) for f in files]
    labels = comparison.choose_labels(files, labels)
    has_latency = any(latency_distribution(f, s) for f in files for s in f.config.get("strides", []))
    panels = 1 + has_latency + (len(files) > 1)
    fig, axes = plt.subplots(panels, 1, figsize=(8, 3.6 * panels), squeeze=False)
    axes = [a[0] for a in axes]
    ax = axes[0]
    for f, label in zip(files, labels):
        unit = stats.effective_unit(f.samples, "round")
        strides = sorted(int(s) for s in f.measured["stride_bytes"].unique())
        centres, lows, highs = [], [], []
        for s in strides:
            obs = stats.observations(f.samples, s, unit, metric)
            c, lo, hi = stats.interval(obs, metric, confidence)
            centres.append(c)
            lows.append(c - lo if not math.isnan(lo) else 0)
            highs.append(hi - c if not math.isnan(hi) else 0)
        line = ax.errorbar(strides, centres, yerr=[lows, highs], marker="o", capsize=4, label=label)
        passes = f.measured
        ax.scatter(passes["stride_bytes"], passes["gbps"], s=6, alpha=0.25, color=line.lines[0].get_color())
    ceiling = _ceiling_stride(files[0])
    if ceiling:
        ax.axvline(ceiling, color="grey", linestyle="--", label=f"flush ceiling ({format_size(ceiling)})")
    ax.set_xscale("log", base=2)
    ticks = sorted({int(s) for f in files for s in f.measured["stride_bytes"].unique()})
    ax.set_xticks(ticks, [format_size(t) for t in ticks])
    ax.set_xlabel("stride")
    ax.set_ylabel("GB/s (10^9 bytes/s)")
    ax.set_title(f"mprotect(PROT_NONE) rate, {metric} with {confidence:g}% CI (one observation per round)")
    ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)
    i = 1
    if has_latency:
        lat = axes[i]
        i += 1
        for f, label in zip(files, labels):
            for s in f.config.get("strides", []):
                dist = latency_distribution(f, s)
                if dist:
                    lat.step(dist[0], dist[1], where="mid", label=f"{label} {format_size(s)}")
        lat.set_xscale("log")
        lat.set_xlabel("latency per mprotect call (us)")
        lat.set_ylabel("fraction of calls")
        lat.set_title("per-call latency")
        lat.legend(fontsize="small")
        lat.grid(True, alpha=0.3)
    if len(files) > 1:
        sp = axes[i]
        cmp = comparison.compare(files, metric=metric, confidence=confidence, labels=labels)
        frame = cmp.frame()
        for label in labels[1:]:
            rows = frame[frame["new_label"] == label]
            line = sp.plot(rows["stride_bytes"], rows["speedup_pct"], marker="o", label=f"{label} vs {labels[0]}")[0]
            sp.fill_between(rows["stride_bytes"], rows["ci_low_pct"], rows["ci_high_pct"], alpha=0.2,
                            color=line.get_color())
        sp.axhline(0, color="black", linewidth=0.8)
        sp.set_xscale("log", base=2)
        sp.set_xticks(ticks, [format_size(t) for t in ticks])
        sp.set_xlabel("stride")
        sp.set_ylabel("speedup %")
        sp.set_title(f"speedup vs {labels[0]}, {confidence:g}% CI ({cmp.test})")
        sp.legend(fontsize="small")
        sp.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def save(fig, path):
    fig.savefig(path, format=output_format(path), dpi=100)
