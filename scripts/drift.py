#!/usr/bin/env python3
"""Benchmark (not a test): how round means drift and correlate over time on this machine.

Runs rounds back to back as `atsdbench run` does (a fresh region per round, pinned, a warm-up pass
then PASSES timed passes of one stride, retouched between passes; the first round is a warm-up
round) for DURATION or ROUNDS, records each round's mean GB/s with the time it was taken, and
prints: within- and between-round CV, the autocorrelation of round means by lag (in rounds) and by
time separation (seconds), the block-mean inflation factor (how much more means of 3, 5, 10
consecutive rounds vary than independent rounds predict), and the mean's CI as the t interval and
as batch means (atsdbench.analysis.timeseries).  The lag at which the ACF falls below --below is the round
spacing that makes consecutive rounds nearly independent.

usage: scripts/drift.py [--size 256M] [--stride 64K] [--duration 300s | --rounds N] [--passes 5]
                        [--cpu N] [--plot FILE] [--json FILE]
"""
import argparse
import json
import math
import os
import re
import sys
import time

LAGS = (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)
NICE = (1, 2, 5)


class Bad(Exception):
    """Bad input: one line on stderr, exit 2."""


def parse_duration(text):
    """'300', '300s', '5m', '1h', '1.5m' -> seconds (float > 0)."""
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h)?\s*$", str(text), re.IGNORECASE)
    if not m or float(m.group(1)) <= 0:
        raise Bad(f"--duration {text!r} is not a positive duration (e.g. 300s, 5m, 1h)")
    return float(m.group(1)) * {"s": 1, "m": 60, "min": 60, "h": 3600}[(m.group(2) or "s").lower()]


def positive_int(text, name, minimum=1):
    try:
        n = int(text)
    except ValueError:
        raise Bad(f"--{name} {text!r} is not a whole number") from None
    if n < minimum:
        raise Bad(f"--{name} must be at least {minimum} (got {n})")
    return n


def time_edges(spacing, span):
    """Bins of time separation on a 1-2-5 scale: from the nice value at or below the round spacing
    (so neighbouring rounds fall in the first bins) to the one at or above half the span."""
    values = [m * 10.0 ** k for k in range(-3, 6) for m in NICE]
    lo = max([v for v in values if v <= spacing] or [values[0]])
    hi = min([v for v in values if v >= span / 2] or [values[-1]])
    return [v for v in values if lo <= v <= hi] if hi > lo else [lo, lo * 2]


def measure(size, stride, passes, warmup, cpu, duration, rounds, progress):
    """([{round, t, gbps: [...]}, ...], error): one entry per measured round, t the mid-time of the
    round's timed passes in seconds from the start.  Ctrl-C or an OSError part-way stops it and
    keeps every finished round; error is the OSError's message (None otherwise)."""
    from atsdbench.measure import core

    core.pin_self(cpu)
    align = max(2 << 20, stride)
    out = []
    start = time.monotonic()
    last_note = start
    index = -1  # round -1 is the warm-up round, never used
    try:
        while True:
            now = time.monotonic()
            if index >= 0 and ((rounds and len(out) >= rounds) or (not rounds and now - start >= duration)):
                break
            rates, stamps = [], []
            with core.Region(size, align, "base") as region:
                for p in range(warmup + passes):
                    if p:
                        region.restore(True)
                    t0 = time.monotonic()
                    ns, _ = region.timed_pass(stride)
                    if p >= warmup:
                        rates.append(size / ns)
                        stamps.append((t0 + time.monotonic()) / 2 - start)
            if index >= 0:
                out.append({"round": index, "t": float(sum(stamps) / len(stamps)), "gbps": rates})
            index += 1
            if progress and time.monotonic() - last_note >= 5:
                last_note = time.monotonic()
                goal = f"{rounds} rounds" if rounds else f"{duration:.0f} s"
                print(f"  {len(out)} rounds, {last_note - start:.0f} s of {goal}", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"drift: interrupted; analysing the {len(out)} finished rounds", file=sys.stderr)
    except OSError as e:
        return out, str(e)
    return out, None


def analyse(rounds, blocks=(3, 5, 10), below=0.1, confidence=95.0):
    """Everything the report prints, as plain numbers (the --json payload's "analysis")."""
    import numpy as np

    from atsdbench.analysis import stats, timeseries as ts

    means = np.array([np.mean(r["gbps"]) for r in rounds])
    times = np.array([r["t"] for r in rounds])
    n = len(means)
    spacing = float(np.median(np.diff(times))) if n > 1 else math.nan
    span = float(times[-1] - times[0]) if n > 1 else 0.0
    within = [stats.cv_pct(r["gbps"]) for r in rounds]
    within = [w for w in within if not math.isnan(w)]
    lags = [k for k in LAGS if k < n]
    r = ts.acf(means, max(lags, default=0))
    out = {"rounds": n, "passes": int(sum(len(x["gbps"]) for x in rounds)), "span_s": span,
           "spacing_s": spacing, "mean_gbps": float(means.mean()) if n else math.nan,
           "within_cv": float(np.mean(within)) if within else math.nan, "between_cv": stats.cv_pct(means),
           "acf": [{"lag": k, "seconds": k * spacing, "acf": float(r[k])} for k in lags],
           "inflation": [{"block": b, "blocks": n // b, "factor": ts.block_inflation(means, b)} for b in blocks],
           "lag1": ts.lag1(means), "below": below, "decorrelated_lag": None, "acf_time": []}
    if n > 2:
        full = ts.acf(means, n - 1)
        under = np.nonzero(full[1:] < below)[0]
        out["decorrelated_lag"] = int(under[0]) + 1 if len(under) else None
        edges = time_edges(spacing, span)
        corr, pairs, mean_dt = ts.acf_by_time(means, times, edges)
        out["acf_time"] = [{"from_s": lo, "to_s": hi, "pairs": int(p), "mean_s": float(d), "acf": float(c)}
                           for lo, hi, p, d, c in zip(edges[:-1], edges[1:], pairs, mean_dt, corr) if p]
    out["warning"] = ts.warn_if_autocorrelated(out["lag1"], n)
    ci = {}
    if n >= 2:
        ci["t"] = stats.t_interval(means, confidence)[1:3]
    if n >= ts.BATCHES * 2:  # shown from 2 rounds a batch, so short runs show what it would give
        ci["batch-means"] = stats.t_interval(ts.batch_means(means), confidence, float(means.mean()))[1:3]
    out["ci"] = {k: {"low": lo, "high": hi} for k, (lo, hi) in ci.items()}
    out["confidence"] = confidence
    return out


def _num(v, fmt):
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def format_report(a, setup):
    """The printed report, a string."""
    from tabulate import tabulate

    lines = [f"drift: {setup}",
             f"{a['rounds']} rounds ({a['passes']} timed passes) over {a['span_s']:.1f} s, "
             f"one round every {_num(a['spacing_s'], '.3f')} s (median); mean {_num(a['mean_gbps'], '.3f')} GB/s",
             f"CV% within rounds {_num(a['within_cv'], '.2f')}, between rounds {_num(a['between_cv'], '.2f')}", ""]
    if a["acf"]:
        lines.append(tabulate([[x["lag"], _num(x["seconds"], ".3g"), _num(x["acf"], ".3f")] for x in a["acf"]],
                              headers=["lag (rounds)", "~ seconds", "ACF"], tablefmt="simple",
                              disable_numparse=True, stralign="right"))
        lines.append("")
    if a["acf_time"]:
        rows = [[f"{x['from_s']:g}-{x['to_s']:g}", _num(x["mean_s"], ".3g"), x["pairs"], _num(x["acf"], ".3f")]
                for x in a["acf_time"]]
        lines.append(tabulate(rows, headers=["separation (s)", "mean (s)", "pairs", "ACF"], tablefmt="simple",
                              disable_numparse=True, stralign="right"))
        lines.append("")
    rows = [[x["block"], x["blocks"], _num(x["factor"], ".2f")] for x in a["inflation"]]
    lines.append(tabulate(rows, headers=["block (rounds)", "blocks", "inflation"], tablefmt="simple",
                          disable_numparse=True, stralign="right"))
    lines.append("inflation = var(block means) / (var(round means) / block); 1 for independent rounds")
    lines.append("")
    if a["decorrelated_lag"] is not None:
        lag = a["decorrelated_lag"]
        lines.append(f"ACF first below {a['below']:g} at lag {lag} (~{lag * a['spacing_s']:.3g} s)")
    elif a["rounds"] > 2:
        lines.append(f"ACF never below {a['below']:g} within {a['rounds']} rounds")
    for name, ci in a["ci"].items():
        half = (ci["high"] - ci["low"]) / 2
        lines.append(f"{a['confidence']:g}% CI of the mean, {name}: {_num(ci['low'], '.3f')} .. "
                     f"{_num(ci['high'], '.3f')} GB/s (+/- {100 * half / a['mean_gbps']:.2f}%)")
    if a["warning"]:
        lines.append(f"warning: {a['warning']}")
    return "\n".join(lines)


def plot(rounds, a, path):
    try:
        import matplotlib
    except ImportError:
        raise Bad("--plot needs matplotlib, which is not installed: pip install matplotlib") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7))
    top.plot([r["t"] for r in rounds], [np.mean(r["gbps"]) for r in rounds], ".", markersize=3)
    top.set_xlabel("time (s)")
    top.set_ylabel("round mean (GB/s)")
    top.set_title("round means over time")
    bottom.axhline(0, color="grey", linewidth=0.8)
    bottom.plot([x["seconds"] for x in a["acf"]], [x["acf"] for x in a["acf"]], "o-", label="by lag (lag x spacing)")
    bottom.plot([x["mean_s"] for x in a["acf_time"]], [x["acf"] for x in a["acf_time"]], "s--", label="by time bin")
    bottom.set_xscale("log")
    bottom.set_xlabel("separation (s)")
    bottom.set_ylabel("autocorrelation of round means")
    bottom.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="256M")
    ap.add_argument("--stride", default="64K")
    ap.add_argument("--duration", help="measure for this long (default 300s)")
    ap.add_argument("--rounds", help="measure this many rounds instead of a duration")
    ap.add_argument("--passes", default="5", help="timed passes per round")
    ap.add_argument("--warmup", default="1", help="warm-up passes per round (not used)")
    ap.add_argument("--cpu", help="CPU to pin to (default: first in the affinity mask)")
    ap.add_argument("--below", type=float, default=0.1, help="report the first lag whose ACF is below this")
    ap.add_argument("--plot", metavar="FILE")
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args(argv)
    from atsdbench.measure import core, host
    from atsdbench.errors import UsageError
    from atsdbench.units import format_size, parse_size

    try:
        size, stride = parse_size(a.size, "size"), parse_size(a.stride, "stride")
        passes, warmup = positive_int(a.passes, "passes", 2), positive_int(a.warmup, "warmup", 0)
        rounds = positive_int(a.rounds, "rounds", 3) if a.rounds is not None else None
        if rounds and a.duration is not None:
            raise Bad("give --duration or --rounds, not both")
        duration = None if rounds else parse_duration(a.duration or "300s")
        page = core.page_size()
        if stride % page or size % stride:
            raise Bad(f"the stride {format_size(stride)} must be a multiple of the page size ({format_size(page)}) "
                      f"and divide the size {format_size(size)}")
        avail = host.parse_meminfo(host.read("/proc/meminfo")).get("MemAvailable")
        if avail is not None and size > avail:
            raise Bad(f"size {format_size(size)} is more than the memory available ({avail / 2**30:.1f} GiB)")
        affinity = sorted(os.sched_getaffinity(0))
        cpu = affinity[0] if a.cpu is None else positive_int(a.cpu, "cpu", 0)
        if cpu not in affinity:
            raise Bad(f"--cpu {cpu} is not in this process's CPU affinity")
        for path in (a.plot, a.json):
            if path and not os.access(os.path.dirname(os.path.abspath(path)), os.W_OK):
                raise Bad(f"cannot write {path}: its directory is not writable")
        if a.plot and os.path.splitext(a.plot)[1].lower() not in (".png", ".svg", ".pdf"):
            raise Bad("--plot: the file name must end in .png, .svg or .pdf")
        setup = (f"size {format_size(size)}, stride {format_size(stride)}, {passes} timed passes per round "
                 f"(+{warmup} warm-up), CPU {cpu}, " + (f"{rounds} rounds" if rounds else f"{duration:g} s"))
        print(f"drift: measuring {setup}", file=sys.stderr)
        data, error = measure(size, stride, passes, warmup, cpu, duration, rounds, progress=True)
        if len(data) < 3:
            raise Bad(error or f"only {len(data)} rounds were measured; the ACF needs at least 3 (measure for longer)")
        analysis = analyse(data, below=a.below)
        print(format_report(analysis, setup))
        if a.json:
            doc = {"format": "atsdbench-drift", "setup": setup, "complete": error is None,
                   "config": {"size": size, "stride": stride, "passes": passes, "warmup": warmup, "cpu": cpu,
                              "duration_s": duration, "rounds": rounds},
                   "host": host.probe(), "rounds": data, "analysis": analysis}
            with open(a.json, "w") as f:
                json.dump(_finite(doc), f, indent=1)
        if a.plot:
            plot(data, analysis, a.plot)
        if error:
            raise Bad(f"{error} (after {len(data)} rounds, analysed above)")
    except (Bad, UsageError, OSError) as e:
        print(f"drift: {e}", file=sys.stderr)
        return 2
    return 0


def _finite(v):
    """NaN and infinities become null: JSON has no NaN."""
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


if __name__ == "__main__":
    sys.exit(main())
