"""The one table of bad plans: each is refused by `atsdbench run` and by `atsd` alike (exit 2, one line,
the same sentence), before anything is measured.  A value starting with "-" is given as --opt=value,
which both parsers read.  Host-dependent cases use facts every test machine
shares (less than 1T of memory, fewer than 4096 CPUs, a 4K or 64K base page)."""

BAD_PLANS = [
    # sizes
    (["--size", "0"], "size must not be zero"),
    (["--size", "zz"], "size 'zz' is not a size"),
    (["--size=-1G"], "is not a size"),
    (["--size", "1.5G"], "is not a size"),
    (["--size", "1X"], "is not a size"),
    (["--size", "17592186044432M"], "is too large (a size must fit in 64 bits)"),
    (["--size", "16777216T"], "is too large"),
    (["--size", "17179869185G"], "is too large"),
    (["--size", "99999999999999999999999"], "is too large"),
    (["--size", "1T"], "more than MemAvailable"),
    (["--size", "256MB"], "size '256MB': sizes are binary: write 256M or 256MiB (2^20), not MB (10^6 to many)"),
    (["--size", "1\u0663G"], "is not a size"),  # an Arabic-Indic digit: ASCII only
    (["--size", "18446744073709551616"], "is too large"),
    # strides
    (["--strides", "0"], "stride must not be zero"),
    (["--strides", "6K"], "is not a multiple of the page size"),
    (["--strides", "abc"], "stride 'abc' is not a size"),
    (["--strides", "64K,1mb"], "stride '1mb': sizes are binary: write 1M or 1MiB (2^20), not MB"),
    (["--strides", ","], "no stride given"),
    (["--strides", "64K,1M,64K"], "stride 64K is given twice"),
    (["--size", "64M", "--strides", "128M"], "stride 128M is larger than the size 64M"),
    (["--size", "65M", "--strides", "2M"], "size 65M is not a multiple of stride 2M"),
    (["--strides", ",".join(f"{k}M" for k in range(1, 66))], "--strides takes at most 64 values"),
    # counts
    (["--rounds", "0"], "--rounds must be at least 1 (got 0)"),
    (["--reps", "0"], "--reps must be at least 1 (got 0)"),
    (["--rounds", "x"], "--rounds 'x' is not a whole number"),
    (["--reps", "2.5"], "--reps '2.5' is not a whole number"),
    (["--warmup=-1"], "--warmup must be at least 0 (got -1)"),
    (["--warmup-rounds=-1"], "--warmup-rounds must be at least 0 (got -1)"),
    (["--rounds", "99999999999"], "--rounds '99999999999' is too large"),
    # CPUs
    (["--bystanders", "4096"], "--bystanders 4096 needs 4096 other CPUs"),
    (["--bystanders=-1"], "--bystanders must be at least 0"),
    (["--cpu", "4095"], "--cpu 4095 is not in this process's CPU affinity"),
    (["--cpu", "x"], "--cpu 'x' is not a whole number"),
    # ops (run --op)
    (["--op", "mprotect,bogus"], "--op must be mprotect, madvise or munmap (got 'bogus')"),
    (["--op", "madvise,,munmap"], "--op 'madvise,,munmap' has an empty value"),
    # concurrent invalidators (run --threads)
    (["--threads", "0"], "--threads must be at least 1 (got 0)"),
    (["--threads", "4096"], "--threads 4096 needs 4096 CPUs (one a thread), but the affinity mask has"),
    (["--threads", "1,,2"], "--threads '1,,2' has an empty value"),
    (["--tasks", "forks"], "--tasks must be threads or processes (got 'forks')"),
    (["--tasks", "processes"], "--tasks processes makes the --threads processes: it needs --threads 2 or more"),
    # will-it-scale's loops (run --workload): what they cannot take is refused, never ignored
    (["--workload", "tlb_flush9"], "--workload must be tlb_flush1, tlb_flush2 or tlb_flush3 (got 'tlb_flush9')"),
    (["--workload", "tlb_flush2,,tlb_flush3"], "--workload 'tlb_flush2,,tlb_flush3' has an empty value"),
    (["--workload", "tlb_flush2", "--op", "madvise"], "--workload runs will-it-scale's loop as it is"),
    (["--workload", "tlb_flush2", "--op", "mprotect"], "it takes no --op"),
    (["--workload", "tlb_flush2", "--strides", "64K"], "it takes no --strides"),
    (["--workload", "tlb_flush2", "--latency"], "it takes no --latency"),
    (["--workload", "tlb_flush2", "--no-retouch"], "it takes no --no-retouch"),
    (["--workload", "tlb_flush2", "--pages", "thp"], "it takes no --pages"),
    (["--workload", "tlb_flush1"], "--workload: size 16M is not a multiple of 128M, what tlb_flush1/3 "
                                   "maps at a time"),
    (["--workload", "tlb_flush2", "--size", "1536K"], "is not a multiple of 1M, what tlb_flush2 maps"),
    (["--workload", "tlb_flush2", "--threads", "4096"], "--threads 4096 needs 4096 CPUs (one a thread)"),
    (["--workload", "tlb_flush2", "--threads", "0"], "--threads must be at least 1 (got 0)"),
    # pages
    (["--pages", "huge"], "--pages must be base, thp or hugetlb (got 'huge')"),
    (["--pages", "hugetlb", "--strides", "64K"], "huge"),  # no hugetlb, or not a huge page multiple
    (["--pages", "hugetlb", "--size", "512G", "--strides", "1G"], "--pages hugetlb"),  # pool too small
    # the rest
    (["--seed=-1"], "--seed '-1' is not a whole number from 0 to 2^64-1"),
    (["--seed", "x"], "is not a whole number"),
    (["--label", "x" * 300], "--label is longer than 255 bytes"),
    (["--bystanders", ",".join(["0"] * 17)], "--bystanders takes at most 16 values"),
    # an empty list element is a value left out, not one to skip
    (["--bystanders", "0,,1"], "--bystanders '0,,1' has an empty value (a comma at an end or doubled)"),
    (["--bystanders", "0,"], "--bystanders '0,' has an empty value"),
    (["--bystanders", ",0"], "--bystanders ',0' has an empty value"),
    (["--pages", "base,,thp"], "--pages 'base,,thp' has an empty value"),
    (["--strides", "64K,,1M"], "--strides '64K,,1M' has an empty value"),
    (["--strides", " ,64K"], "--strides ' ,64K' has an empty value"),
    # a negative value after a space reaches the range check in both parsers
    (["--spread", "-1s"], "--spread '-1s' is not a duration"),
    # sub-runs
    (["--runs", "0"], "--runs must be at least 1 (got 0)"),
    (["--runs", "1001"], "--runs '1001' is too large (at most 1000)"),
    (["--runs", "2", "--gap", "soon"], "--gap 'soon' is not a duration"),
    (["--runs", "2", "--spread", "10s"], "--spread paces the rounds of one process"),
    (["-o", "/nonexistent-dir/x.json"], "cannot write output /nonexistent-dir/x.json: no directory"),
    (["-o", "/"], "output / is a directory, not a regular file"),
    # a round's passes in 32 bits: 64 cells x (10^6 + 10^6) x 17 strides, each count within its limit
    (["--reps", "1000000", "--warmup", "1000000", "--size", "256M",
      "--strides", ",".join(f"{1 << k}K" for k in range(2, 19)), "--op", ",".join(["mprotect"] * 16),
      "--bystanders", "0,0,0,0"],
     "a round would make 2176000000 passes (cells x (warmup + reps) x strides), over 2^31 - 1"),
]
