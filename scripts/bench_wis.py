#!/usr/bin/env python3
"""Benchmark (not a test): `atsdbench run --workload` beside will-it-scale's own binary.

Given a will-it-scale checkout (--wis DIR; built here with make, which needs libhwloc-dev from apt),
runs its tlb_flush binary (`tlb_flushN_threads` or `_processes`, `-t TASKS -s SECONDS`) and
`atsdbench run --workload tlb_flushN --threads TASKS --tasks KIND` alternately, in one run (ABAB...,
the order flipped every other pair), --pairs processes a side for every task count.  Prints, per
task count, the median loops/s of each side, their ratio (atsdbench / will-it-scale) and the
disturbed share of each side:
  atsdbench: passes its disturbance rule caught (a task descheduled, docs/workloads.md);
  will-it-scale: measured seconds in which its slowest task did under half the loops of its
  fastest (will-it-scale has no disturbance rule of its own; a descheduled task shows so).
Without --wis it says why it skips and exits 0.  The figures are this machine's at this moment:
record them only from a quiet machine (docs/workloads.md says where).

usage: scripts/bench_wis.py --wis DIR [--workload tlb_flush2] [--tasks 1,2] [--kind threads]
                            [--pairs 5] [--seconds 5] [--size 128M] [--rounds 3] [--quick]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

WORKLOADS = ("tlb_flush1", "tlb_flush2", "tlb_flush3")
STARVED = 0.5  # a second whose slowest task did under half the fastest's loops


def build(wis, binaries):
    """make the binaries in the checkout; (True, None) or (False, why)."""
    if not os.path.isfile(os.path.join(wis, "main.c")):
        return False, f"{wis} is not a will-it-scale checkout (no main.c)"
    try:
        p = subprocess.run(["make", "-C", wis, *binaries], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"make failed to run: {e}"
    if p.returncode:
        last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        hint = " (it needs libhwloc-dev: apt-get install libhwloc-dev)" if "hwloc" in p.stderr else ""
        return False, f"building will-it-scale failed{hint}: {last}"
    return True, None


def parse_wis(text):
    """(average loops/s, [(min, max) per measured second]) from a will-it-scale binary's output."""
    seconds, measuring, average = [], False, None
    for line in text.splitlines():
        if line.strip() == "measurement":
            measuring = True
        m = re.match(r"min:(\d+) max:(\d+) total:(\d+)", line)
        if m and measuring:
            seconds.append((int(m.group(1)), int(m.group(2))))
        m = re.match(r"average:(\d+)", line)
        if m:
            average = int(m.group(1))
    if average is None:
        raise ValueError("no 'average:' line in will-it-scale's output")
    # main.c counts the second after "measurement" as the first measured one
    return average, seconds[1:] if len(seconds) > 1 else seconds


def run_wis(wis, workload, kind, tasks, seconds):
    binary = os.path.join(wis, f"{workload}_{kind}")
    p = subprocess.run([binary, "-t", str(tasks), "-s", str(seconds)], capture_output=True, text=True,
                       timeout=60 + 3 * seconds)
    if p.returncode:
        raise RuntimeError(f"{binary} exited {p.returncode}: {p.stderr.strip()[-200:]}")
    average, per_second = parse_wis(p.stdout)
    starved = sum(1 for lo, hi in per_second if hi and lo < STARVED * hi)
    return average, (starved / len(per_second)) if per_second else None


def run_atsdbench(workload, kind, tasks, size, rounds, reps, atsdbench):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "w.json")
        cmd = [*atsdbench, "run", "--workload", workload, "--threads", str(tasks), "--tasks", kind,
               "--size", size, "--rounds", str(rounds), "--reps", str(reps), "-o", out]
        # from the temporary directory: in a checkout, `-m atsdbench` would find the source tree first
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, cwd=d)
        if p.returncode:
            raise RuntimeError(f"atsdbench exited {p.returncode}: {p.stderr.strip()[-300:]}")
        with open(out) as f:
            samples = [s for s in json.load(f)["samples"] if not s["warmup"]]
    rates = [s["loops_per_s"] for s in samples if s.get("loops_per_s")]
    disturbed = sum(bool(s.get("disturbed")) for s in samples) / len(samples) if samples else None
    return statistics.median(rates), disturbed


def _pct(v):
    return "n/a" if v is None else f"{100 * v:.0f}%"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wis", help="a will-it-scale checkout (built here with make)")
    ap.add_argument("--workload", default="tlb_flush2", choices=WORKLOADS)
    ap.add_argument("--tasks", default="1,2", help="task counts, comma-separated")
    ap.add_argument("--kind", default="threads", choices=("threads", "processes"))
    ap.add_argument("--pairs", type=int, default=5, help="processes a side for each task count")
    ap.add_argument("--seconds", type=int, default=5, help="will-it-scale's -s (after its 5 s warm-up)")
    ap.add_argument("--size", default="128M", help="atsdbench's --size: pages each task goes through a pass")
    ap.add_argument("--rounds", type=int, default=3, help="atsdbench's --rounds a process")
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--quick", action="store_true", help="one pair, 1 s, 1 round of 2 reps: checks the script runs")
    ap.add_argument("--atsdbench", default=f"{sys.executable} -m atsdbench", help="how to run atsdbench")
    args = ap.parse_args(argv)
    if not args.wis:
        print("bench_wis: skipped: no will-it-scale checkout given (--wis DIR; "
              "git clone https://github.com/antonblanchard/will-it-scale)")
        return 0
    if args.quick:
        args.pairs, args.seconds, args.rounds, args.reps = 1, 1, 1, 2
        if args.size == "128M" and args.workload == "tlb_flush2":
            args.size = "16M"
    try:
        tasks = [int(t) for t in args.tasks.split(",")]
    except ValueError:
        print(f"bench_wis: --tasks {args.tasks!r} is not a list of whole numbers", file=sys.stderr)
        return 2
    ok, why = build(args.wis, [f"{args.workload}_{args.kind}"])
    if not ok:
        print(f"bench_wis: {why}", file=sys.stderr)
        return 2
    atsdbench = args.atsdbench.split()
    print(f"{args.workload}_{args.kind}: will-it-scale -s {args.seconds} against atsdbench run --workload "
          f"(--size {args.size} --rounds {args.rounds} --reps {args.reps}), {args.pairs} processes a side, "
          "alternating")
    rows = []
    for n in tasks:
        wis, ours, wis_bad, our_bad = [], [], [], []
        for k in range(args.pairs):
            order = ("wis", "ours") if k % 2 == 0 else ("ours", "wis")
            for side in order:
                if side == "wis":
                    rate, bad = run_wis(args.wis, args.workload, args.kind, n, args.seconds)
                    wis.append(rate)
                    wis_bad.append(bad)
                else:
                    rate, bad = run_atsdbench(args.workload, args.kind, n, args.size, args.rounds, args.reps,
                                              atsdbench)
                    ours.append(rate)
                    our_bad.append(bad)
        w, o = statistics.median(wis), statistics.median(ours)
        share = [b for b in wis_bad if b is not None]
        rows.append((n, w, o, o / w if w else None, statistics.mean(share) if share else None,
                     statistics.mean([b for b in our_bad if b is not None] or [0])))
    print(f"{'tasks':>5}  {'will-it-scale loops/s':>21}  {'atsdbench loops/s':>17}  {'ratio':>6}  "
          f"{'wis starved':>11}  {'atsdbench disturbed':>19}")
    for n, w, o, ratio, wb, ob in rows:
        r = "n/a" if ratio is None else f"{ratio:.3f}"
        print(f"{n:>5}  {w:>21,.0f}  {o:>17,.0f}  {r:>6}  {_pct(wb):>11}  {_pct(ob):>19}")
    print("ratio: atsdbench / will-it-scale, medians of the processes; loops/s of all tasks together. "
          "Disturbed: see the docstring")
    return 0


if __name__ == "__main__":
    sys.exit(main())
