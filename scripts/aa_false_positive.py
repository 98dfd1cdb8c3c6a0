#!/usr/bin/env python3
"""A/A test (a benchmark, not a test): how often does `compare` call runs of the same thing different?

Runs 2*PAIRS*REPLICATES separate `atsdbench run` processes of one configuration on this kernel, one
after another, and compares disjoint A/A pairs (Welch on log rates, 95%) three ways: single runs
with the round as the unit (the default for single files), single runs with the pass as the unit
(ministat-style), and, with --replicates N >= 2, groups of N runs per side with the run as the
unit.  An honest compare lands near 5%: per stride unadjusted, and per compare (any of its
strides) after Holm, compare's default.

Within one run: --within N more runs measure the same configuration twice, as two cells
interleaved in every round (`run --bystanders 0,0`), and each is compared with itself by
`compare --by bystanders` (paired t on log round means, paired by round: the drift between rounds
and between runs, which the cross-run numbers suffer, cancels).  Printed under the cross-run lines.

usage: scripts/aa_false_positive.py [--pairs 10] [--replicates 3] [--within 10] [--size 256M] [--rounds 5]
                                    [--reps 4] [--spread DURATION] [--processes]
"""
import argparse
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--size", default="256M")
    ap.add_argument("--rounds", default="5")
    ap.add_argument("--reps", default="4")
    ap.add_argument("--processes", action="store_true", help="each round in a fresh process (run --processes)")
    ap.add_argument("--replicates", type=int, default=3, help="runs per side for the --unit run comparison")
    ap.add_argument("--within", type=int, default=10, help="runs with two identical cells (--bystanders 0,0) "
                    "for the within-run A/A, paired by round (0: none)")
    ap.add_argument("--spread", default=None, help="run --spread DURATION: pace each run's rounds over this time")
    a = ap.parse_args()
    import atsdbench

    tmp = tempfile.mkdtemp()

    def run(name, extra=()):
        path = os.path.join(tmp, name)
        subprocess.run([sys.executable, "-m", "atsdbench", "run", "--size", a.size, "--rounds", a.rounds, "--reps",
                        a.reps, "--no-trace", "-o", path, *extra] + (["--processes"] if a.processes else [])
                       + (["--spread", a.spread] if a.spread else []),
                       check=True, capture_output=True, cwd=tmp)
        return path

    per_side = max(1, a.replicates)
    cross = [(f"run{i}.json", ()) for i in range(2 * a.pairs * per_side)]
    inside = [(f"within{i}.json", ("--bystanders", "0,0")) for i in range(a.within)]
    # Spread over the same hours: each kind's runs evenly through the schedule, so the machine's
    # slow changes reach both kinds alike.
    schedule = sorted([((i + 0.5) / len(jobs), job) for jobs in (cross, inside) for i, job in enumerate(jobs)],
                      key=lambda item: item[0])
    done = {name: run(name, extra) for _, (name, extra) in schedule}
    paths = [done[name] for name, _ in cross]
    within = [done[name] for name, _ in inside]
    setup = (f"size {a.size}, {a.rounds} rounds x {a.reps} reps{', --processes' if a.processes else ''}, "
             "Welch on log rates, 95%")

    def rate(pairs, **options):
        # Two rates: each stride alone, unadjusted (what one stride's verdict risks), and the whole
        # compare after Holm, compare's default (what "some stride is different" risks).
        called = total = families = 0
        for files in pairs:
            frame = atsdbench.compare(*files, adjust="none", **options)
            called += int(frame["significant"].sum())
            total += len(frame)
            families += int(atsdbench.compare(*files, adjust="holm", **options)["significant"].any())
        return (f"{called}/{total} strides called different = {100 * called / total:.1f}% unadjusted, "
                f"{families}/{len(pairs)} compares with any stride different after Holm = "
                f"{100 * families / len(pairs):.1f}%")

    singles = [(paths[2 * i], paths[2 * i + 1]) for i in range(len(paths) // 2)]
    if singles:
        print(f"single runs, unit round: {rate(singles, unit='round')} ({len(singles)} A/A pairs; {setup})")
        print(f"single runs, unit pass : {rate(singles, unit='pass')} ({len(singles)} A/A pairs; {setup})")
    if a.replicates >= 2 and paths:
        n = a.replicates
        groups = [",".join(paths[k * n:(k + 1) * n]) for k in range(len(paths) // n)]
        sides = [(groups[2 * i], groups[2 * i + 1]) for i in range(len(groups) // 2)]
        print(f"{n} runs a side, unit run: {rate(sides, unit='run')} ({len(sides)} A/A pairs; {setup})")
    if within:
        print(f"within one run, paired by round (--bystanders 0,0, compare --by bystanders): "
              f"{rate([(w,) for w in within], by='bystanders')} ({len(within)} runs; "
              f"{setup.replace('Welch on log rates', 'paired t on log rates')})")

if __name__ == "__main__":
    main()
