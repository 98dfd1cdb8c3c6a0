/*
 * atsd_options.h - the options of a run, declared once.
 *
 * Both front ends are generated from this table: the standalone atsd builds its getopt_long
 * table and --help from it, and `atsdbench run` builds its argparse parser from it through
 * atsd_option_get() (cffi).  Defaults live here only: atsd_plan_init() applies them.  docs/run-options.md's
 * option table is checked against it by tests/meta/test_options.py.
 *
 * X(name, short, fronts, field, metavar, const_value, default, help)
 *   fronts: RUN (atsdbench run), ATSD (the standalone program), BOTH
 *   field:  the plan field atsd_plan_set() parses the value into; NULL for the front end's own
 *   metavar NULL: a flag, which sets field to const_value; a metavar with const_value: the
 *   argument may be left out and const_value is used.
 */
#define ATSD_OPTIONS(X) \
	X("size", 0, BOTH, "size", "SIZE", NULL, "1G", \
	  "region size, binary K/M/G/T (1G = 2^30 bytes)") \
	X("strides", 0, BOTH, "strides", "LIST", NULL, "64K,1M,2M,4M", \
	  "comma-separated strides; each divides the size and is a multiple of the page size") \
	X("rounds", 0, BOTH, "rounds", "N", NULL, "5", \
	  "measured rounds, each a fresh allocation") \
	X("reps", 0, BOTH, "reps", "N", NULL, "4", \
	  "timed passes per stride per round") \
	X("warmup", 0, BOTH, "warmup", "N", NULL, "1", \
	  "warm-up passes per stride per round, stored but not used") \
	X("warmup-rounds", 0, BOTH, "warmup-rounds", "N", NULL, "1", \
	  "warm-up rounds before the measured ones") \
	X("processes", 0, RUN, "processes", NULL, "1", "0", \
	  "run each round in a fresh process") \
	X("runs", 0, BOTH, "runs", "M", NULL, "1", \
	  "M sub-runs, each in a fresh process (its own allocations, address space, bystanders): compare's unit within one session") \
	X("placements", 0, RUN, "placements", "K", NULL, "1", \
	  "rounds rotate over K regions on distinct physical pages, held at once where memory allows (mprotect)") \
	X("gap", 0, BOTH, "gap", "DURATION", NULL, "20s", \
	  "with --runs: sub-runs start at least this long apart (a fast drift decorrelates in ~20 s; a slower one needs replicate files)") \
	X("op", 0, BOTH, "op", "OP[,OP...]", NULL, "mprotect", \
	  "what each call does to its stride: mprotect(PROT_NONE), madvise(MADV_DONTNEED) or munmap; a list is an axis (a cell each, paired by round)") \
	X("workload", 0, BOTH, "workload", "tlb_flush1|tlb_flush2|tlb_flush3", NULL, NULL, \
	  "will-it-scale's loop instead of --op passes: per loop a page written, madvise(MADV_DONTNEED), read back; loops/s per task count") \
	X("threads", 0, BOTH, "threads", "N[,N...]", NULL, "1", \
	  "N threads of this mm invalidate at once, each its own part of the region, pinned to its own CPU; a list (1,2,4) is an axis: a scaling sweep") \
	X("tasks", 0, BOTH, "tasks", "threads|processes", NULL, "threads", \
	  "what the --threads are: threads of one mm, or processes with a region (an mm) each") \
	X("pages", 0, BOTH, "pages", "base|thp|hugetlb", NULL, "base", \
	  "page backing: MADV_NOHUGEPAGE, MADV_HUGEPAGE or MAP_HUGETLB; a list is an axis") \
	X("mem-node", 0, RUN, "mem-node", "N", NULL, "none", \
	  "bind the region's memory to NUMA node N (mbind MPOL_BIND); default: the kernel's policy") \
	X("bystanders", 0, BOTH, "bystanders", "N[,N...]", NULL, "0", \
	  "threads keeping this mm live on other CPUs; a list (0,1) is an axis (a cell each, paired by round)") \
	X("cpu", 0, BOTH, "cpu", "N|auto", NULL, "auto", \
	  "CPU the measuring thread is pinned to; auto: an isolated or nohz_full CPU, else not CPU 0 nor its SMT siblings") \
	X("latency", 0, BOTH, "latency", NULL, "1", "0", \
	  "record every call's latency (p50/p90/p99/max)") \
	X("no-retouch", 0, BOTH, "retouch", NULL, "0", "1", \
	  "do not re-touch pages between passes") \
	X("trace", 0, RUN, "trace", NULL, "on", "auto", \
	  "require tlb:tlb_flush counts (default: count them when allowed)") \
	X("no-trace", 0, RUN, "trace", NULL, "off", "auto", \
	  "never attach the flush tracepoint") \
	X("progress", 0, RUN, NULL, "never|auto|always", NULL, "auto", \
	  "the progress line on stderr; auto: only on a person's terminal (not TERM=dumb, a serial console or LAVA)") \
	X("breakdown", 0, BOTH, NULL, NULL, "1", NULL, \
	  "after the timed passes, one traced pass per stride: where a call's time goes (tracefs, root)") \
	X("profile", 0, RUN, NULL, NULL, "1", NULL, \
	  "after the timed passes, sampled passes: kernel functions' shares of a call (perf_event_open)") \
	X("gpu", 0, RUN, "gpu", "N", "0", "none", \
	  "make GPU N (default 0) hold translations of the region (CUDA driver, ATS or HMM)") \
	X("device", 0, BOTH, "device", "none|hmm[,...]", NULL, "none", \
	  "a device TLB the calls must invalidate: hmm, the kernel's test_hmm driver mirroring the region (docs/device.md); a list is an axis") \
	X("ceiling", 0, RUN, "ceiling", "PAGES", NULL, "kernel", \
	  "the kernel's TLB single-page flush ceiling during the run (debugfs, root; restored after)") \
	X("until", 0, RUN, "until", "P%", NULL, NULL, \
	  "add rounds (with --runs, sub-runs) until every stride's CI half-width is at most P% of its mean (adaptive run)") \
	X("confidence", 0, RUN, "confidence", "C", NULL, "95", \
	  "confidence level of --until's intervals, percent") \
	X("max-time", 0, RUN, "max-time", "DURATION", NULL, NULL, \
	  "adaptive runs stop before one more round (sub-run) would pass this time, e.g. 90s, 5m (default 10m with --until)") \
	X("max-rounds", 0, RUN, "max-rounds", "N", NULL, NULL, \
	  "adaptive runs take at most N measured rounds (with --runs, all sub-runs' together)") \
	X("spread", 0, BOTH, "spread", "DURATION", NULL, "0", \
	  "pace the measured rounds evenly over at least this wall time (sleeping between rounds), e.g. 60s") \
	X("verify", 0, BOTH, "verify", NULL, "1", "auto", \
	  "verify passes after each round's timed ones: every call checked from every other CPU (docs/verify.md); untimed") \
	X("no-verify", 0, BOTH, "verify", NULL, "0", "auto", \
	  "no verify passes (where a plan would have them by default)") \
	X("label", 0, BOTH, "label", "TEXT", NULL, NULL, \
	  "label shown by compare and plot (default: kernel release)") \
	X("seed", 0, BOTH, "seed", "N", NULL, NULL, \
	  "seed of the stride order (default: random, recorded)") \
	X("output", 'o', BOTH, NULL, "FILE", NULL, NULL, \
	  "result file")
