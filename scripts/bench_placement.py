#!/usr/bin/env python3
"""How much of a run's spread is placement: which physical pages it invalidates.

Each of PROCESSES fresh processes (one after another, each its own `python` running this script's worker)
maps K regions of SIZE at once with atsdbench's own core (populated, so each has its own physical pages),
then measures ROUNDS rotations: in each, every region once, one timed pass per stride over it (restored
and retouched between passes, untimed), the regions taken in allocation order.  Variants, each in its own
processes:

  forward    as above
  reversed   the regions measured in the reverse of their allocation order (is the slow one the first
             allocated, or the first measured?)
  recycled   RECYCLE x SIZE x K populated and freed first, so the regions get pages just released

Reported per variant and stride, on log rates (a balanced nested random-effects design: processes >
regions > rounds; method-of-moments estimates from the ANOVA mean squares, negative ones set to 0), each
as a CV% (100 x the standard deviation of log rate):

  between-process   what a fresh process moves (its host state, its allocator, which pages it got)
  between-region    within a process, what the region's physical pages move (the placement level)
  between-round     within a region, round to round
  region F p        the F test of the region level against rounds (scipy.stats.f)

and each region's median PFN (root only; /proc/self/pagemap) beside its mean rate in the JSON (`--out`).
The timing is atsdbench's: its C core times each pass (core.Region.timed_pass).  The lead measures it on a
quiet machine, at two different times, for docs/methodology.md#placement; `--quick` is a seconds-long
run of the same code for the tests, whose figures mean nothing.

  scripts/bench_placement.py --out placement-1.json            (about 4 minutes on a 2-core VM)
  scripts/bench_placement.py --quick
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)
VARIANTS = ("forward", "reversed", "recycled")


def worker(request):
    """One process: K regions at once, ROUNDS rotations; returns its records and each region's PFNs."""
    from atsdbench.measure import core, placement
    from atsdbench.units import parse_size

    size, k, rounds = parse_size(request["size"]), request["k"], request["rounds"]
    strides = [parse_size(s) for s in request["strides"].split(",")]
    ps = core.page_size()
    core.pin_self(request["cpu"])
    if request["variant"] == "recycled":  # pages populated and freed just before the regions take theirs
        with core.Region(size * k * request["recycle"], 2 << 20, "base"):
            pass
    regions = []
    try:
        for _ in range(k):
            regions.append(core.Region(size, max(2 << 20, max(strides)), "base"))
        places = [placement.read(r.address, size, ps) for r in regions]
        order = list(range(k))[::-1] if request["variant"] == "reversed" else list(range(k))
        records = []
        for rnd in range(request["warmup"] + rounds):
            for i in order:
                for stride in strides:
                    regions[i].restore(True)
                    ns, _ = regions[i].timed_pass(stride)
                    if rnd >= request["warmup"]:
                        records.append({"region": i, "round": rnd - request["warmup"], "stride": stride,
                                        "gbps": size / ns})
    finally:
        for r in regions:
            r.close()
    return {"records": records, "placements": [{"region": i, **p} for i, p in enumerate(places)]}


def components(values):
    """Variance components of a balanced nested design, values[p][r][n] (processes, regions, rounds)
    of log rates: {'process', 'region', 'round'} variances (>= 0), the region F test's p, and df."""
    import numpy as np
    from scipy import stats

    y = np.asarray(values, dtype=float)
    P, R, N = y.shape
    mean_pr, mean_p, grand = y.mean(axis=2), y.mean(axis=(1, 2)), y.mean()
    ms_e = ((y - mean_pr[:, :, None]) ** 2).sum() / (P * R * (N - 1)) if N > 1 else float("nan")
    ms_r = N * ((mean_pr - mean_p[:, None]) ** 2).sum() / (P * (R - 1)) if R > 1 else float("nan")
    ms_p = R * N * ((mean_p - grand) ** 2).sum() / (P - 1) if P > 1 else float("nan")
    out = {"round": ms_e,
           "region": max((ms_r - ms_e) / N, 0.0) if R > 1 and N > 1 else float("nan"),
           "process": max((ms_p - ms_r) / (R * N), 0.0) if P > 1 and R > 1 else float("nan"),
           "df": {"process": P - 1, "region": P * (R - 1), "round": P * R * (N - 1)}}
    out["region_p"] = (float(stats.f.sf(ms_r / ms_e, P * (R - 1), P * R * (N - 1)))
                       if R > 1 and N > 1 and ms_e > 0 else float("nan"))
    return out


def analyse(runs, strides):
    """[(variant, stride, components)] from the processes' outputs {variant: [worker output]}."""
    import numpy as np

    rows = []
    for variant, outputs in runs.items():
        for stride in strides:
            values = []
            for out in outputs:
                cells = {}
                for rec in out["records"]:
                    if rec["stride"] == stride:
                        cells.setdefault(rec["region"], {})[rec["round"]] = float(np.log(rec["gbps"]))
                values.append([[cells[r][n] for n in sorted(cells[r])] for r in sorted(cells)])
            rows.append((variant, stride, components(values)))
    return rows


def table(rows):
    from atsdbench.units import format_size

    def cv(var):
        return "n/a" if var != var else f"{100 * var ** 0.5:.1f}"

    lines = ["variant   stride  CV% between-process  between-region  between-round  region F p",
             "--------  ------  -------------------  --------------  -------------  ----------"]
    for variant, stride, c in rows:
        p = "n/a" if c["region_p"] != c["region_p"] else f"{c['region_p']:.2g}"
        lines.append(f"{variant:<8}  {format_size(stride):>6}  {cv(c['process']):>19}  {cv(c['region']):>14}  "
                     f"{cv(c['round']):>13}  {p:>10}")
    return "\n".join(lines)


def run_worker(request):
    proc = subprocess.run([sys.executable, HERE, "--worker"], input=json.dumps(request), capture_output=True,
                          text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"bench_placement: a worker failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(proc.stdout)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="256M")
    ap.add_argument("--k", type=int, default=4, help="regions held at once per process")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1, help="rotations measured and dropped first")
    ap.add_argument("--processes", type=int, default=6, help="processes per variant")
    ap.add_argument("--strides", default="64K,2M")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--recycle", type=int, default=1, help="recycled: K x SIZE x this populated and freed first")
    ap.add_argument("--cpu", type=int, default=1 if (os.cpu_count() or 1) > 1 else 0)
    ap.add_argument("--out", help="JSON of every pass and every region's placement")
    ap.add_argument("--quick", action="store_true", help="seconds: 16M, K 2, 2 rounds, 2 processes (tests)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        json.dump(worker(json.load(sys.stdin)), sys.stdout)
        return 0
    if args.quick:
        args.size, args.k, args.rounds, args.processes, args.warmup = "16M", 2, 2, 2, 0
    variants = [v for v in args.variants.split(",") if v]
    bad = [v for v in variants if v not in VARIANTS]
    if bad or args.k < 2 or args.rounds < 2 or args.processes < 2:
        print(f"bench_placement: variants from {', '.join(VARIANTS)}; --k, --rounds and --processes 2 or more",
              file=sys.stderr)
        return 2
    from atsdbench.units import parse_size

    strides = [parse_size(s) for s in args.strides.split(",")]
    runs, started = {v: [] for v in variants}, time.time()
    for p in range(args.processes):
        for v in variants:  # the variants interleaved, so a drift of the host reaches each alike
            runs[v].append(run_worker({"size": args.size, "k": args.k, "rounds": args.rounds, "warmup": args.warmup,
                                       "strides": args.strides, "variant": v, "recycle": args.recycle,
                                       "cpu": args.cpu}))
    rows = analyse(runs, strides)
    print(f"{args.processes} processes a variant x {args.k} regions of {args.size} x {args.rounds} rounds, CPU "
          f"{args.cpu}, {time.time() - started:.0f} s; CV% of log rate (GB/s), nested components")
    print(table(rows))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "started": started, "runs": runs,
                       "components": [{"variant": v, "stride": s, **c} for v, s, c in rows]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
