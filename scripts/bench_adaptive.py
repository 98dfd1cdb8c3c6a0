#!/usr/bin/env python3
"""Benchmark (not a test): what an adaptive run (`run --until P%`) costs against the fixed default plan.

Each repeat runs, in this process and one after another, the fixed plan (`--rounds 5` by default),
then in an order rotated every repeat: one adaptive run per target (`--targets 2,1,0.5`), and one
adaptive run whose target is the precision the fixed plan of this same repeat reached (its worst
stride's half-width): that pair answers "at the fixed plan's own precision, is adaptive slower?".
Every run has the same options otherwise (size, strides, reps, warm-up); adaptive runs start from
`--min-rounds` rounds and stop at `--max-time`.  Seconds are wall time around atsdbench.run; the
half-widths are those the stopping rule uses (atsdbench/measure/adaptive.py: relative half-width of the 95%
CI of each stride's round-mean rate), computed the same way for the fixed plan.

Prints one row per plan (medians over repeats), then the two goals of `--until`: adaptive at the
fixed plan's own precision is never slower (counted per repeat), and 1% at every stride takes under
a minute.

usage: scripts/bench_adaptive.py [--targets 2,1,0.5] [--repeat 3] [--max-time 10m] [--min-rounds 3]
                                 [--size 1G] [--strides 64K,1M,2M,4M] [--rounds 5] [--reps 4] [--json FILE]
"""
import argparse
import json
import statistics
import sys
import time


def measure(options):
    """(seconds, Result) of one in-process run."""
    import atsdbench

    t0 = time.monotonic()
    result = atsdbench.run(**options)
    return time.monotonic() - t0, result


def precision(result, confidence=95.0):
    """{stride: relative half-width %} of a result's round means (one cell), as the policy sees it."""
    from atsdbench.measure import adaptive

    out = {}
    for (_, stride), means in adaptive.round_means(result.records).items():
        mean, half, _ = adaptive.half_width(means, confidence)
        out[stride] = float(half / mean * 100)
    return out


def row(name, seconds, result):
    worst = precision(result)
    a = result.config.get("adaptive") or {}
    return {"plan": name, "seconds": seconds, "rounds": int(result.measured["round"].nunique()),
            "half_widths": worst, "worst": max(worst.values()), "stopped": a.get("stop_reason") or "fixed"}


def fail(message):
    print(f"bench_adaptive: {message}", file=sys.stderr)
    sys.exit(2)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", default="2,1,0.5", help="adaptive targets, percent")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-time", default="10m")
    ap.add_argument("--min-rounds", type=int, default=3, help="--rounds of the adaptive runs (their minimum)")
    ap.add_argument("--size", default=None)
    ap.add_argument("--strides", default=None)
    ap.add_argument("--rounds", type=int, default=None, help="--rounds of the fixed plan (default: run's)")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--json", help="write every run's row here")
    a = ap.parse_args(argv)
    try:
        targets = [float(t.rstrip("%")) for t in a.targets.split(",")]
    except ValueError:
        fail(f"--targets takes percentages like 2,1,0.5 (got {a.targets!r})")
    if a.repeat < 1 or a.min_rounds < 1:
        fail(f"--repeat and --min-rounds must be at least 1 (got {a.repeat} and {a.min_rounds})")
    from atsdbench.errors import UsageError
    from atsdbench.measure.plan import make_plan
    from atsdbench.units import format_size

    common = {k: v for k, v in (("size", a.size), ("strides", a.strides), ("reps", a.reps)) if v is not None}
    common["trace"] = "off"  # tracepoint warm-up passes would cost both sides alike; leave them out
    fixed = {**common, **({"rounds": a.rounds} if a.rounds else {})}
    adaptive = {**common, "rounds": a.min_rounds, "max_time": a.max_time}
    try:  # every plan checked before anything runs
        make_plan(**fixed)
        for t in targets:
            make_plan(**adaptive, until=t)
    except UsageError as e:
        fail(str(e))

    rows = []
    for r in range(a.repeat):
        seconds, result = measure(fixed)
        base = row("fixed", seconds, result)
        rows.append({**base, "repeat": r})
        own = round(base["worst"], 3)
        plans = [(f"until {t:g}%", t) for t in targets]
        if 0 < own < 100:  # --until's range; a fixed plan this imprecise has no "own precision" to match
            plans.append(("until own", own))
        else:
            print(f"repeat {r + 1}: the fixed plan's worst half-width is {own}%: no 'until own' run", file=sys.stderr)
        k = r % len(plans)
        for name, target in plans[k:] + plans[:k]:
            seconds, result = measure({**adaptive, "until": target})
            rows.append({**row(name, seconds, result), "repeat": r, "target": target})
        print(f"repeat {r + 1}/{a.repeat} done", file=sys.stderr)

    config = result.config
    strides = config["strides"]
    print(f"size {format_size(config['size'])}, strides {','.join(format_size(s) for s in strides)}, "
          f"{config['reps']} reps; fixed plan {rows[0]['rounds']} rounds; adaptive from {a.min_rounds} rounds, "
          f"max time {a.max_time}; {a.repeat} repeats interleaved, medians; half-width = 95% CI of the "
          "round-mean rate, % of the mean")
    names = ["fixed"] + [f"until {t:g}%" for t in targets] + ["until own"]
    header = ["plan", "seconds", "rounds", "worst half-width"] + [format_size(s) for s in strides] + ["stopped"]
    lines = [header]
    for name in names:
        mine = [x for x in rows if x["plan"] == name]
        if not mine:
            continue
        med = statistics.median
        reasons = sorted({x["stopped"] for x in mine})
        lines.append([name, f"{med(x['seconds'] for x in mine):.1f}", f"{med(x['rounds'] for x in mine):g}",
                      f"{med(x['worst'] for x in mine):.2f}%"]
                     + [f"{med(x['half_widths'][s] for x in mine):.2f}%" for s in strides] + [",".join(reasons)])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(c.rjust(w) for c, w in zip(line, widths)))

    pairs = [(f, o) for f in rows if f["plan"] == "fixed" for o in rows
             if o["plan"] == "until own" and o["repeat"] == f["repeat"]]
    slower = [o["seconds"] / f["seconds"] for f, o in pairs if o["seconds"] > f["seconds"]]
    if pairs:
        took = statistics.median(o["seconds"] for _, o in pairs)
        print(f"at the fixed plan's own precision: adaptive took {took:.1f} s against "
              f"{statistics.median(f['seconds'] for f, _ in pairs):.1f} s; slower in {len(slower)} of "
              f"{len(pairs)} repeats" + (f" (up to {max(slower):.2f}x as long)" if slower else ""))
    one = [x for x in rows if x.get("target") == 1.0]
    if one:
        met = sum(x["stopped"] == "target" for x in one)
        took = statistics.median(x["seconds"] for x in one)
        print(f"1% at every stride: met in {met} of {len(one)} runs; {took:.1f} s median, "
              f"{max(x['seconds'] for x in one):.1f} s at most (goal: met, in under 60 s)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"options": vars(a), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
