#!/usr/bin/env python3
"""Benchmark (not a test): time and peak memory of show, compare, model and plot as files grow.

Synthetic result files (1G, strides 64K,1M,2M,4M, 4 passes a round, log-normal rates, so the schema
and every command accept them) of each --samples size: a one-process file a side, a `--runs` file
of SUB-RUN-sized sub-runs for show (625 sub-runs at 10^5 samples), and --replicates
files a side of the smallest size for compare and model.  Each command runs as its own process
(`python -m atsdbench`, start-up included); its wall time and peak RSS (wait4's ru_maxrss) are
printed as a markdown table for docs/benchmarks.md.  The goal: time linear in samples, memory
bounded where the commands resample (model, plot).

usage: scripts/bench_scale.py [--samples 10000,100000,1000000] [--replicates 50] [--sub-run 160]
       [--commands show,show-runs,compare,model,plot,plot-plain,compare-replicates,model-replicates,
       plot-replicates] [--keep DIR] [--quick]
Takes many minutes and a few GB of disk at 10^6: run it on an idle machine.  --quick: 10^3 passes and
2 replicate files a side, every command once (seconds; the tests run it).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

STRIDES = (64 << 10, 1 << 20, 2 << 20, 4 << 20)
SIZE = 1 << 30
REPS = 4
COMMANDS = ("show", "show-runs", "compare", "model", "plot", "plot-plain", "compare-replicates", "model-replicates",
            "plot-replicates")


def synthetic(path, samples, seed, sub_run=None, shift=1.0, warmup_rounds=0):
    """A result file of about `samples` passes (whole rounds), saved through atsdbench's own writer;
    the first `warmup_rounds` of them warm-up passes (the bench's files have none)."""
    import numpy as np

    from atsdbench.data import results

    rng = np.random.default_rng(seed)
    rounds = max(2, samples // (len(STRIDES) * REPS))
    base = {s: 10.0 * (1 + i) * shift for i, s in enumerate(STRIDES)}
    records = []
    rates = rng.lognormal(0.0, 0.05, size=(rounds, len(STRIDES), REPS))
    for r in range(rounds):
        for j, s in enumerate(STRIDES):
            for p in range(REPS):
                gbps = float(base[s] * rates[r, j, p])
                seconds = SIZE / (gbps * 1e9)
                calls = SIZE // s
                rec = {"round": r, "rep": p, "order": j, "stride_bytes": s, "warmup": r < warmup_rounds,
                       "traced": False, "ns": int(seconds * 1e9), "seconds": seconds, "calls": calls, "gbps": gbps,
                       "us_per_call": seconds * 1e6 / calls}
                if sub_run:
                    rec["run"] = r * len(STRIDES) * REPS // sub_run
                records.append(rec)
    config = {"size": SIZE, "strides": list(STRIDES), "rounds": rounds - warmup_rounds, "reps": REPS, "warmup": 0,
              "warmup_rounds": warmup_rounds, "pages": "base", "runs": 1 + (records[-1]["run"] if sub_run else 0)}
    host = {"hostname": "bench", "kernel_release": f"synthetic-{shift:g}", "arch": "x86_64", "page_size": 4096,
            "tlb_single_page_flush_ceiling": 33}
    results.save(results.Result(host, config, records, started=0.0, finished=1.0), path)
    return path


def make(*args, **kwargs):
    """synthetic() in a fresh interpreter: a child's ru_maxrss starts from what its parent held when it
    forked (Linux keeps the high-water mark across exec), so this process must stay small."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(synthetic, args, kwargs)


def measure(args):
    """(wall seconds, peak RSS in MiB, exit status) of one atsdbench command in its own process."""
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "atsdbench", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    err = proc.stderr.read().decode(errors="replace").strip().splitlines()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, proc.returncode, (err[-1] if err and proc.returncode else "")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", default="10000,100000,1000000")
    ap.add_argument("--replicates", type=int, default=50)
    ap.add_argument("--sub-run", type=int, default=160, help="passes per sub-run of show's --runs file")
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--keep", help="write the files here and keep them (default: a temporary folder)")
    ap.add_argument("--quick", action="store_true", help="10^3 passes, 2 replicate files a side (a check, not a "
                    "measurement)")
    a = ap.parse_args(argv)
    if a.quick:
        a.samples, a.replicates = "1000", 2
    sizes = [int(x) for x in a.samples.split(",")]
    wanted = a.commands.split(",")
    folder = a.keep or tempfile.mkdtemp(prefix="atsdbench-scale-")
    os.makedirs(folder, exist_ok=True)
    rows = []

    def run(what, n, args):
        wall, mib, rc, err = measure(args)
        rows.append((what, n, wall, mib, rc, err))
        print(f"{what:<20} {n:>9} {wall:8.2f} s {mib:9.0f} MiB{'' if rc == 0 else f'  exit {rc}: {err}'}",
              file=sys.stderr, flush=True)

    for n in sizes:
        before = make(os.path.join(folder, f"before-{n}.json"), n, 1)
        after = make(os.path.join(folder, f"after-{n}.json"), n, 2, shift=1.05)
        if "show" in wanted:
            run("show", n, ["show", before])
        if "show-runs" in wanted:
            runs = make(os.path.join(folder, f"runs-{n}.json"), n, 3, sub_run=a.sub_run)
            run(f"show (--runs, {a.sub_run}/sub-run)", n, ["show", runs])
        if "compare" in wanted:
            run("compare", n, ["compare", before, after, "--unit", "round"])
        if "model" in wanted:
            run("model", n, ["model", before, after, "--unit", "round"])
        if "plot" in wanted:
            run("plot --model", n, ["plot", before, after, "--model", "-o", os.path.join(folder, f"p-{n}.png")])
        if "plot-plain" in wanted:
            run("plot", n, ["plot", before, after, "-o", os.path.join(folder, f"q-{n}.png")])
    if any(w.endswith("-replicates") for w in wanted):
        n = sizes[0]
        sides = [",".join(make(os.path.join(folder, f"{side}{k}-{n}.json"), n, 100 * i + k, shift=1 + 0.05 * i)
                          for k in range(a.replicates)) for i, side in enumerate("ab")]
        label = f"{a.replicates} files a side"
        if "compare-replicates" in wanted:
            run(f"compare, {label}", n * a.replicates, ["compare", *sides])
        if "model-replicates" in wanted:
            run(f"model, {label}", n * a.replicates, ["model", *sides])
        if "plot-replicates" in wanted:
            run(f"plot --model, {label}", n * a.replicates,
                ["plot", *sides, "--model", "-o", os.path.join(folder, f"r-{n}.png")])
    print("| Command | Passes (a side) | Wall s | Peak RSS MiB |")
    print("|---|---:|---:|---:|")
    for what, n, wall, mib, rc, err in rows:
        print(f"| {what} | {n:,} | {wall:.2f} | {mib:.0f} |" + ("" if rc == 0 else f" exit {rc}: {err} |"))
    if not a.keep:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return 0 if all(row[4] == 0 for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
