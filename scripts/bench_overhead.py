#!/usr/bin/env python3
"""Benchmark (not a test): atsdbench's passes against a minimal C loop compiled on the spot.

Both sides run the same plan in fresh processes, interleaved (ABAB... with the order flipped every
other round), each process making one warm-up allocation and one measured allocation, so neither
side gets the "first allocation of a process" advantage.  Prints the ratio of median GB/s per
stride (atsdbench / bare loop); the target is >= 0.98.

usage: scripts/bench_overhead.py [--size 1G] [--strides 64K,1M,2M,4M] [--rounds 8] [--reps 4]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

BARE = r"""
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static uint64_t now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC_RAW, &t);
                            return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec; }
static void touch(char *p, size_t size, size_t ps)
{ for (size_t o = 0; o < size; o += ps) *(volatile long *)(p + o) = 1; }
int main(int argc, char **argv) {
    size_t size = strtoull(argv[1], 0, 0), ps = (size_t)sysconf(_SC_PAGESIZE);
    int reps = atoi(argv[2]), n = argc - 3;
    cpu_set_t set; CPU_ZERO(&set); CPU_SET(0, &set); sched_setaffinity(0, sizeof set, &set);
    for (int alloc = 0; alloc < 2; alloc++) {          /* allocation 0 is the warm-up */
        char *raw = mmap(0, size + (4 << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        char *p = (char *)(((uintptr_t)raw + (4 << 20) - 1) & ~(uintptr_t)((4 << 20) - 1));
        /* trim the alignment slack as atsdbench does: a mapped neighbour changes the 64K rate */
        if (p > raw) munmap(raw, (size_t)(p - raw));
        if (raw + size + (4 << 20) > p + size) munmap(p + size, (size_t)(raw + size + (4 << 20) - (p + size)));
        madvise(p, size, MADV_NOHUGEPAGE);
        touch(p, size, ps);
        for (int r = 0; r < reps + 1; r++)              /* pass 0 is the warm-up */
            for (int i = 0; i < n; i++) {
                size_t stride = strtoull(argv[3 + i], 0, 0);
                mprotect(p, size, PROT_READ | PROT_WRITE); touch(p, size, ps);
                uint64_t t0 = now();
                for (size_t o = 0; o < size; o += stride) mprotect(p + o, stride, PROT_NONE);
                uint64_t t1 = now();
                if (alloc && r) printf("%zu %llu\n", stride, (unsigned long long)(t1 - t0));
            }
        munmap(p, size);
    }
    return 0;
}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="1G")
    ap.add_argument("--strides", default="64K,1M,2M,4M")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--reps", type=int, default=4)
    a = ap.parse_args()
    from atsdbench.units import format_size, parse_size, parse_sizes

    size, strides = parse_size(a.size), parse_sizes(a.strides)
    tmp = tempfile.mkdtemp()
    src, exe = os.path.join(tmp, "bare.c"), os.path.join(tmp, "bare")
    with open(src, "w") as f:
        f.write(BARE)
    subprocess.run(["cc", "-O2", "-o", exe, src], check=True)

    rates = {"atsdbench": {s: [] for s in strides}, "bare": {s: [] for s in strides}}

    def bare():
        out = subprocess.run([exe, str(size), str(a.reps), *map(str, strides)], capture_output=True, text=True,
                             check=True).stdout
        for line in out.split("\n"):
            if line:
                s, ns = map(int, line.split())
                rates["bare"][s].append(size / ns)

    def ours():
        path = os.path.join(tmp, "r.json")
        subprocess.run([sys.executable, "-m", "atsdbench", "run", "--size", str(size), "--strides",
                        ",".join(map(str, strides)), "--rounds", "1", "--warmup-rounds", "1", "--reps",
                        str(a.reps), "--cpu", "0", "--no-trace", "-o", path, "--force"],  # each turn's afresh
                       capture_output=True, check=True, cwd=tmp)
        for smp in json.load(open(path))["samples"]:
            if not smp["warmup"]:
                rates["atsdbench"][smp["stride_bytes"]].append(smp["gbps"])

    for i in range(a.rounds):
        for fn in ((bare, ours) if i % 2 else (ours, bare)):
            fn()
    print(f"size {format_size(size)}, {a.rounds} interleaved processes each, {a.reps} passes per stride; "
          "GB/s = 10^9 bytes/s (median of passes)")
    print(f"{'stride':>8} {'bare loop':>10} {'atsdbench':>10} {'ratio':>7}")
    for s in strides:
        b, o = statistics.median(rates["bare"][s]), statistics.median(rates["atsdbench"][s])
        print(f"{format_size(s):>8} {b:10.2f} {o:10.2f} {o / b:7.3f}")


if __name__ == "__main__":
    main()
