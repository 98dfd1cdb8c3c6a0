/*
 * atsd.h - the C timing core of atsdbench: the one declaration of its API, with atsd_trace.h (its
 * tracefs part), which it includes.
 *
 * The cffi build script (build_atsd.py) cuts its cdef from the block between
 * the ATSD-CDEF-BEGIN and ATSD-CDEF-END markers of each, so these headers and the
 * Python binding cannot drift.  Keep that block plain C that cffi's parser
 * accepts: no macros, no includes, fixed-width integer types only.
 *
 * Conventions: every function returns 0 (or a non-negative value) on success
 * and -errno on failure; nothing prints, exits or asserts.  The caller owns
 * every result buffer.  Memory mapped by atsd_region_map() is released by
 * atsd_region_unmap(), also after a failure part-way.  Every release clears its owner's handle
 * before it frees and runs with SIGINT/SIGTERM held, so releasing twice is harmless.
 */
#ifndef ATSD_H
#define ATSD_H

#include <stdint.h>

/* ATSD-CDEF-BEGIN */
/* Bumped whenever a declaration in this block changes meaning. */
int atsd_abi_version(void);

/* How the region is backed. */
enum atsd_pages {
	ATSD_PAGES_BASE = 0,    /* MADV_NOHUGEPAGE: base pages only */
	ATSD_PAGES_THP = 1,     /* MADV_HUGEPAGE */
	ATSD_PAGES_HUGETLB = 2  /* MAP_HUGETLB from the default pool */
};

struct atsd_region {
	uint8_t *addr;          /* aligned start, NULL when unmapped */
	uint64_t size;          /* bytes in the aligned region */
	uint64_t page_size;     /* base page size (sysconf), the touch step */
	int32_t pages;          /* enum atsd_pages */
	int32_t mem_node;       /* the NUMA node its memory is bound to (mbind MPOL_BIND) plus 1; 0: no policy */
	uint8_t *map_addr;      /* what mmap returned (for munmap) */
	uint64_t map_size;
};

/* Host facts the plan is validated against, all read at run time. */
int64_t atsd_page_size(void);
int64_t atsd_hugepage_size(void);     /* default hugetlb size, -errno if none */

/* Map `size` bytes aligned to `align` (a power of two), apply the backing
 * advice and populate: one word written per base page, so every PTE is
 * present and dirty. */
int atsd_region_map(struct atsd_region *r, uint64_t size, uint64_t align, int32_t pages);
/* The same with its memory bound to NUMA node `node` (mbind MPOL_BIND before populating; kept when
 * munmap's restore maps it again); node -1: no policy, as atsd_region_map.  -EINVAL for a node
 * beyond 1023, the kernel's error (-EINVAL, -ENOMEM, -EPERM) for one without memory. */
int atsd_region_map_node(struct atsd_region *r, uint64_t size, uint64_t align, int32_t pages, int32_t node);

/* Untimed preparation between passes: make the region PROT_READ|PROT_WRITE
 * again and, when retouch is non-zero, write one word per base page so the
 * next pass invalidates live translations. */
int atsd_region_restore(struct atsd_region *r, int32_t retouch);

int atsd_region_unmap(struct atsd_region *r);

/* The latency percentiles of one pass's calls (atsd's lat_*_ns, atsdbench's lat_*_us), by nearest
 * rank: percentile q is the smallest latency with at least q% of the calls at or below it (the
 * ceil(q x n / 100)-th smallest, in integers), so each is a latency some call had, and q = 100 is the
 * slowest.  Sorts lat (n entries) in place; out gets one value per percent[i] (each 1 to 100).
 * -EINVAL for n 0 or a percent out of range. */
int atsd_latency_percentiles(uint64_t *lat, uint64_t n, const int32_t *percent, int32_t count, uint64_t *out);

/* The operations a pass can time (run --op), each stride by stride over the populated region:
 * mprotect(PROT_NONE); madvise(MADV_DONTNEED) (the pages freed, the mapping kept); munmap (the
 * mapping gone: the pass then reserves the range PROT_NONE, untimed, so nothing else is mapped
 * there).  atsd_op_pass(): the pass, *ns its time, lat (NULL, or size / stride entries) each call's,
 * *done the calls that succeeded; atsd_op_restore(): the untimed preparation between passes (munmap: the region mapped again over its own range, with its advice), then
 * atsd_region_restore(r, retouch).  Names: "mprotect", and the call as tables print it,
 * "mprotect(PROT_NONE)"; NULL for an op out of range.  atsd_op_parse(): the op, or -EINVAL. */
enum atsd_op {
	ATSD_OP_MPROTECT = 0,
	ATSD_OP_MADVISE = 1,
	ATSD_OP_MUNMAP = 2,
	ATSD_NOPS = 3
};
int atsd_op_pass(struct atsd_region *r, int32_t op, uint64_t stride, uint64_t *ns, uint64_t *lat,
		 uint64_t *done);
int atsd_op_restore(struct atsd_region *r, int32_t op, int32_t retouch);
const char *atsd_op_name(int32_t op);
const char *atsd_op_call(int32_t op);
int atsd_op_parse(const char *name);

/* Concurrent invalidators (--threads N): N threads of this mm, the caller thread 0 (pinned by its
 * caller) and N - 1 helpers pinned to cpus[1..N-1], started with every signal blocked.  A pass gives
 * thread i the i-th of N equal parts of the region, stride by stride; every thread waits on one
 * barrier before its loop, so none starts before all have come.  Each thread's times are its own:
 * t0/t1 its loop's clock reads, cpu_ns and preempted (involuntary switches) read just outside its
 * loop, arrived its coming to the barrier.  The pass's ns is the slowest thread's t1 - t0.  stop() clears the owner's slot first, like the other releases.
 * processes (--tasks processes): the helpers are forked processes, one mm each, every one mapping a
 * region of its own of size / n (align, pages as atsd_region_map takes them) at its start, so start
 * them before the caller maps its region (a fork would share that region copy-on-write); the
 * caller's part is then the first size / n of its region.  Helpers die with the caller. */
struct atsd_thread_times {
	uint64_t t0;
	uint64_t t1;
	uint64_t cpu_ns;
	int64_t preempted;
	uint64_t done;          /* calls that succeeded */
	uint64_t arrived;
	int32_t err;            /* its first failure, -errno */
	int32_t lost;           /* munmap: its part's hole could not be reserved */
};
struct atsd_threads;
int atsd_threads_start(struct atsd_threads **out, const int32_t *cpus, int32_t n, int32_t processes, uint64_t size,
		       uint64_t align, int32_t pages);
int atsd_threads_pass(struct atsd_threads *t, struct atsd_region *r, int32_t op, uint64_t stride, uint64_t *lat,
		      struct atsd_thread_times *times, uint64_t *ns);
/* Untimed, between passes, after the caller restored its own region: processes restore theirs (in
 * parallel, every one before it returns); threads share the caller's region, so nothing to do. */
int atsd_threads_restore(struct atsd_threads *t, int32_t op, int32_t retouch);
int atsd_threads_stop(struct atsd_threads **t);

/* will-it-scale's tlb_flush loops (run --workload), on the tasks of atsd_threads_start (n = 1 is
 * the caller alone; for a workload, processes may start with size 0: no region is mapped).  Per
 * loop, as tests/tlb_flush{1,2,3}.c of will-it-scale: write one byte of a page, madvise(MADV_DONTNEED)
 * that page, read it back (0; 1 for tlb_flush3's shared file), count; each task maps its unit
 * (128M of its own unlinked file in TMPDIR or /tmp, made untimed before its first loop; 1M anonymous for
 * tlb_flush2) and unmaps it after its last page, as will-it-scale does between its units.  A pass
 * is `bytes` of pages a task (a multiple of the unit), every task on the barrier first; ns is the
 * slowest task's, times[i].done its loops.  A read-back that differs is that task's err
 * -EBADMSG (its loops before it counted in done), and the pass returns -EBADMSG: never a rate.
 * Names as run --workload takes them ("tlb_flush2"); NULL out of range.  atsd_workload_unit():
 * the bytes a task maps at a time.  atsd_workload_parse(): the workload, or -EINVAL. */
enum atsd_workload {
	ATSD_WORKLOAD_TLB_FLUSH1 = 0,   /* file, MAP_PRIVATE: read-back 0 */
	ATSD_WORKLOAD_TLB_FLUSH2 = 1,   /* anonymous, MAP_PRIVATE: read-back 0 */
	ATSD_WORKLOAD_TLB_FLUSH3 = 2,   /* file, MAP_SHARED: read-back 1 */
	ATSD_NWORKLOADS = 3
};
int atsd_workload_pass(struct atsd_threads *t, int32_t workload, uint64_t bytes, struct atsd_thread_times *times,
		       uint64_t *ns);
const char *atsd_workload_name(int32_t workload);
int atsd_workload_parse(const char *name);
uint64_t atsd_workload_unit(int32_t workload);
/* What a task's failure (a negative errno of a pass, or of starting the tasks) says: strerror, but
 * -ECHILD, which here means a helper process died (killed from outside, not a child to wait for).
 * atsd_workload_failure() words a failed workload pass (a file workload's file error names TMPDIR);
 * both front ends print these.  Returns buf. */
const char *atsd_strerror(int32_t err);
const char *atsd_workload_failure(char *buf, uint64_t len, int32_t workload, int32_t tasks, uint64_t loops,
				  int32_t err);
/* The folder a file workload's tasks make their files in: TMPDIR, or /tmp where it is unset or empty. */
const char *atsd_workload_dir(void);
/* A test double, for tests only (no front end calls it): from N > 0, the N-th workload pass of this
 * process from now and every one after leave out their madvise (in every task), so a tlb_flush1/2
 * read-back finds the byte written and the pass fails loudly; 0 turns it off. */
void atsd_test_skip_madvise(int32_t from);

/* ASLR as will-it-scale's runtest.py turns it off (setarch -R): set 1 adds ADDR_NO_RANDOMIZE to this
 * process's personality (-1 takes it out again, 0 only reads it), which applies to what it executes next (a process's own layout is
 * chosen when it is executed).  Returns 1 when the flag was in the personality before the call
 * (this process was executed with it: its mappings are not randomized), 0 when not, -errno. */
int atsd_no_aslr(int32_t set);

/* "off" where this process's mappings are not randomized (it was executed with ADDR_NO_RANDOMIZE, or
 * /proc/sys/kernel/randomize_va_space is 0), "on" else: what a --workload result's config says. */
const char *atsd_aslr_state(void);

/* Pin the calling thread to one CPU. */
int atsd_pin_self(int32_t cpu);

/* Bystanders: one thread per listed CPU, pinned there, spinning on its own
 * cache line so this mm stays live on that CPU and every flush needs a remote
 * shootdown.  Start returns after all of them run (a start barrier). */
struct atsd_bystanders;
int atsd_bystanders_start(struct atsd_bystanders **out, const int32_t *cpus, int32_t n);
/* Each bystander's loop count and CPU time (ns, may be NULL) so far.  Read around a pass: CPU time
 * well below the pass's wall time means the bystander was not running for part of it (its CPU was
 * busy with something else), so the mm was not live there and those flushes needed no IPI. */
int atsd_bystanders_spins(struct atsd_bystanders *b, uint64_t *spins, uint64_t *cpu_ns, int32_t n);
/* Stops and joins them; spins[i] (may be NULL) gets thread i's loop count.  Takes the owner's slot
 * and sets it to NULL before freeing anything, so a second stop (after an interrupt) is a no-op. */
int atsd_bystanders_stop(struct atsd_bystanders **b, uint64_t *spins);

/* Counters read around each pass, outside the timed region.  A tracepoint
 * counter is opened with perf_event_open: system-wide on every CPU in cpus
 * when allowed, else for this thread only (reported through *scope: 1 for
 * system-wide, 0 for this thread).  filter may be NULL or a tracepoint
 * filter string such as "pages == -1". */
struct atsd_counter;
int atsd_counter_open(struct atsd_counter **out, uint64_t tracepoint_id,
		      const char *filter, const int32_t *cpus, int32_t ncpus,
		      int32_t *scope);
int atsd_counter_read(struct atsd_counter *c, uint64_t *value);
/* Like atsd_bystanders_stop: clears the owner's slot first; closing twice closes nothing. */
int atsd_counter_close(struct atsd_counter **c);

/* The host-drift canary: user-space work that no kernel patch can change (a compute loop of LCG
 * steps, and a random pointer chase over its own buffer: no system call in either), timed before each
 * round outside every timed pass.  The machine's slow drift (the host's frequency, cache and memory
 * state) moves it and the mprotect rates alike, so it can be measured and cancelled.  new() builds
 * a single random cycle (Sattolo) over `bytes` of 64-byte slots; run() times `compute` LCG steps and
 * `chase` hops; free() clears the owner's slot first, like the other releases. */
struct atsd_canary;
/* Its size as both front ends run it before every round: 20M LCG steps (~20 ms here) and a 250K-hop
 * chase over 16 MB (~40 ms): long enough to see the host's drift, short beside a round. */
enum atsd_canary_plan {
	ATSD_CANARY_BYTES = 16777216,
	ATSD_CANARY_COMPUTE = 20000000,
	ATSD_CANARY_CHASE = 250000
};
int atsd_canary_new(struct atsd_canary **out, uint64_t bytes, uint64_t seed);
int atsd_canary_run(struct atsd_canary *c, uint64_t compute, uint64_t chase, uint64_t *compute_ns,
		    uint64_t *chase_ns);
int atsd_canary_free(struct atsd_canary **c);

/* What disturbs the measuring thread, read just outside a timed pass (after = 0 just before it,
 * 1 just after): its involuntary context switches (getrusage RUSAGE_THREAD), its CPU time
 * (CLOCK_THREAD_CPUTIME_ID) and the steal time of CPU `cpu` in USER_HZ ticks from /proc/stat (-1
 * where the kernel gives none).  /proc/stat is read outside the two CPU-time reads, so that its
 * cost (large on a big host) is not counted as the pass's.  delta(): after - before, steal -1
 * unless both reads had it (and it did not go back). */
struct atsd_self_state {
	int64_t preempted;
	int64_t cpu_ns;
	int64_t steal_ticks;
};
int atsd_self_state(int32_t cpu, int32_t after, struct atsd_self_state *out);
void atsd_self_delta(const struct atsd_self_state *before, const struct atsd_self_state *after,
		     struct atsd_self_state *delta);
/* The steal ticks of CPU `cpu` in /proc/stat text (its "cpuN " line, the 8th number), or -1. */
int64_t atsd_steal_ticks(const char *proc_stat, int32_t cpu);

/* `atsdbench stat`: read numbers exactly as FreeBSD ministat's ReadSet reads a file (fgets with
 * BUFSIZ 8192, trailing white space stripped, strtok on delim, '#' starts a comment, the 1-based
 * column, strtod on the whole token).  out must hold cap doubles: one per line at most, so
 * cap = lines + 1 is enough.  Returns the count (with *bad_line set to the number of fgets reads
 * made, the lines of a buffer that ends with a newline), -EINVAL with *bad_line set for data strtod
 * does not take whole, or -ENOSPC. */
int64_t atsd_read_column(const char *buf, uint64_t len, int32_t column, const char *delim,
			 double *out, uint64_t cap, int64_t *bad_line);
/* ---- The plan: what a run measures, shared by `atsdbench run` and `atsd` ----
 *
 * Both front ends fill a plan the same way: atsd_plan_init() sets every default from the option
 * table (csrc/atsd_options.h), atsd_plan_set() parses one value by field name ("size", "strides",
 * "rounds", "no-retouch"'s field "retouch", ...), and atsd_plan_check() validates the whole plan
 * against the host facts and resolves what depends on them (the measuring CPU, the bystander CPUs,
 * a random seed when none was given).  Every failure returns -errno and writes one sentence into
 * msg, the same words in both front ends.  Lists are axes: several values make several cells. */
enum atsd_limits {
	ATSD_MAX_STRIDES = 64,
	ATSD_MAX_AXIS = 16,     /* values per axis */
	ATSD_MAX_CPUS = 1024,
	ATSD_LABEL_MAX = 256
};

enum atsd_trace {
	ATSD_TRACE_AUTO = 0,    /* count flushes where allowed */
	ATSD_TRACE_ON = 1,      /* require them */
	ATSD_TRACE_OFF = 2
};

struct atsd_plan {
	uint64_t size;
	uint64_t strides[64];   /* ATSD_MAX_STRIDES, sorted, unique */
	int32_t nstrides;
	int32_t rounds;
	int32_t reps;
	int32_t warmup;
	int32_t warmup_rounds;
	int32_t npages;
	int32_t pages[16];      /* axis of enum atsd_pages */
	int32_t nbystanders;
	int32_t bystanders[16]; /* axis of bystander counts */
	int32_t ngpu;
	int32_t gpu[16];        /* axis of GPU ordinals, -1 = none */
	int32_t nceiling;
	int32_t ceiling[16];    /* axis of flush ceilings, -1 = leave the kernel's */
	int32_t cpu;            /* -1 until checked: the first CPU allowed */
	int32_t nbystander_cpus;
	int32_t bystander_cpus[1024];  /* resolved by the check, for the largest bystander count */
	int32_t latency;
	int32_t retouch;
	int32_t processes;
	int32_t trace;          /* enum atsd_trace */
	int32_t seed_set;
	uint64_t seed;
	int32_t label_set;
	char label[256];
	double until;           /* adaptive: target half-width of the CI in percent, 0 = a fixed plan */
	double confidence;      /* percent, for --until */
	double max_time;        /* seconds an adaptive run may take, 0 = no limit */
	int32_t max_rounds;     /* adaptive: at most this many measured rounds, 0 = no limit */
	double spread;          /* seconds the measured rounds are paced over, 0 = back to back */
	int32_t rounds_given;   /* --rounds was given (an adaptive run's minimum is 3 otherwise) */
	int32_t runs;           /* sub-runs, each in a fresh process (atsdbench run --runs) */
	double gap;             /* seconds at least between the starts of two sub-runs */
	uint64_t align;         /* set by the check: the region's alignment, a THP (and hugetlb) page at
				 * least, and the largest stride, so every stride's calls are aligned alike */
	char cpu_reason[64];    /* set by the check: why the measuring CPU is the one it is */
	int32_t nops;
	int32_t ops[16];        /* axis of enum atsd_op (--op) */
	int32_t nthreads;
	int32_t threads[16];    /* axis of thread counts (--threads: concurrent invalidators of this mm) */
	int32_t nthread_cpus;
	int32_t thread_cpus[1024];  /* resolved by the check: cpu first, then further allowed CPUs */
	int32_t tasks;          /* enum atsd_tasks: what the --threads are */
	int32_t verify;         /* --verify: 1 on, 0 off (--no-verify), -1 until checked (auto: see the check) */
	int32_t nverify_cpus;
	int32_t verify_cpus[1024];  /* resolved by the check: every allowed CPU, a checker on each */
	int32_t nworkloads;     /* 0: no --workload (passes of --op) */
	int32_t workloads[16];  /* axis of enum atsd_workload (--workload) */
	uint64_t given;         /* bit i: option i of the table was set after the defaults (the check's
				 * refusals of options a workload cannot take) */
	int32_t placements;     /* run --placements K: rounds rotate over K regions, distinct physical pages */
	int32_t mem_node;       /* run --mem-node N: the region's memory bound to node N (mbind); -1 = none */
	int32_t ndevices;
	int32_t devices[16];    /* axis of enum atsd_device_kind (--device) */
};

enum atsd_tasks {
	ATSD_TASKS_THREADS = 0,    /* threads of this mm */
	ATSD_TASKS_PROCESSES = 1   /* processes, one mm each (will-it-scale's _processes) */
};

/* What the plan is checked against; atsd_host_probe() reads it from this system, tests inject it. */
struct atsd_host {
	uint64_t page_size;
	uint64_t hugepage_size;   /* 0: no hugetlb */
	uint64_t thp_size;        /* transparent_hugepage/hpage_pmd_size: 2M x86/radix, 16M hash; 0 unknown */
	int64_t mem_available;    /* bytes, -1 unknown */
	int64_t hugepages_free;   /* of the default size, -1 unknown */
	int32_t naffinity;
	int32_t affinity[1024];   /* CPUs this process may run on, ascending */
	int32_t core[1024];       /* core id of affinity[i] (package << 16 | core_id), -1 unknown */
	int32_t quiet[1024];      /* affinity[i] is isolated (isolcpus) or nohz_full: no housekeeping there */
	int32_t cpu0_core;        /* core id of CPU 0 (IRQs, timers, RCU: the housekeeping CPU), -1 unknown */
	int32_t hmm_device;       /* 1: atsd_device_path() can be opened read-write (--device hmm) */
};

int atsd_host_probe(struct atsd_host *h);
void atsd_plan_init(struct atsd_plan *p);
int atsd_plan_set(struct atsd_plan *p, const char *field, const char *value, char *msg, uint64_t msglen);
int atsd_plan_check(struct atsd_plan *p, const struct atsd_host *h, char *msg, uint64_t msglen);
/* The pass order of one round: repetition-major (warm-up passes first), the strides shuffled per
 * repetition by the seed.  out must hold (warmup + reps) * nstrides strides; returns the count. */
int atsd_round_order(const struct atsd_plan *p, int32_t round, uint64_t *out, uint64_t cap);

/* The schedule of a run's sleeps, which both front ends take from here (and `guest` its timeout).
 * A sub-run (--runs) starts gap seconds after the one before started (previous), or at now where
 * that has passed; the first (first != 0) at now.  From the one before's start, not k x gap from the
 * first: after a sub-run that ran long, a fixed schedule would start the next one sooner than the gap. */
double atsd_sub_run_start(int32_t first, double previous, double gap, double now);
/* Measured round r (0-based) of a run paced over --spread starts r x spread / rounds after the first
 * measured round (first_start): the rounds are spread evenly, sleeping between them, never inside. */
double atsd_round_start(double first_start, int32_t r, double spread, int32_t rounds);
/* The least time a plan's sleeps take, whatever its passes cost: each sub-run's last measured round
 * starts at atsd_round_start's time, and each sub-run at atsd_sub_run_start's after the one before. */
double atsd_least_sleep(int32_t runs, double gap, int32_t rounds, double spread);

/* Axes: several values for --workload, --op, --threads, --bystanders, --pages, --gpu, --device or --ceiling make their
 * product; a cell is one combination, numbered with the last axis (ceiling) varying fastest.  Every round runs every
 * cell, in an order shuffled per round by the seed (atsd_cell_order); each cell's passes follow
 * the stride order atsd_round_order(p, round * ncells + cell, ...), which for one cell is the round's. */
struct atsd_cell {
	int32_t bystanders;
	int32_t pages;
	int32_t gpu;            /* -1 none */
	int32_t ceiling;        /* -1 the kernel's */
	int32_t op;             /* enum atsd_op */
	int32_t threads;
	int32_t workload;       /* enum atsd_workload, -1: a pass of op */
	int32_t device;         /* enum atsd_device_kind */
};
int atsd_plan_cells(const struct atsd_plan *p);
int atsd_plan_cell(const struct atsd_plan *p, int32_t index, struct atsd_cell *out);
int atsd_cell_order(const struct atsd_plan *p, int32_t round, int32_t *out, int32_t cap);

/* A size such as 64K, 1G or 2MiB (binary; B alone is bytes; KB .. TB are refused: to many they are
 * decimal), ASCII only, at most 2^64 - 1.  0 or -errno with msg (-EINVAL not a size, decimal or
 * zero, -ERANGE too large); `what` names it in the message. */
int atsd_parse_size(const char *text, const char *what, uint64_t *out, char *msg, uint64_t msglen);

/* 65536 -> "64K": exact binary units only, else plain bytes (messages and tables of both front ends). */
const char *atsd_format_size(uint64_t n, char *buf, uint64_t len);

/* A duration such as 90s, 5m, 1h or 2.5 (seconds); 0 or -EINVAL with msg. */
int atsd_parse_duration(const char *text, const char *what, double *out, char *msg, uint64_t msglen);

/* The option table (csrc/atsd_options.h), read by both front ends to build their parsers. */
enum atsd_front {
	ATSD_FRONT_RUN = 1,     /* atsdbench run */
	ATSD_FRONT_ATSD = 2     /* the standalone atsd */
};

struct atsd_option {
	const char *name;       /* long option, without the dashes */
	int32_t short_name;     /* 0 or a letter */
	int32_t fronts;         /* enum atsd_front bits */
	const char *field;      /* plan field it sets (NULL: the front end's own, e.g. output) */
	const char *metavar;    /* NULL: a flag, which sets the field to const_value */
	const char *const_value;/* flag value, or the value of an optional argument left out */
	const char *default_value; /* NULL: none (or decided by the check) */
	const char *help;
};

int atsd_option_count(void);
int atsd_option_get(int32_t i, struct atsd_option *out);

/* ---- run --verify (csrc/atsd_verify.c): no CPU may use a translation after the call returned ----
 *
 * start(): one checker thread per CPU in cpus (every allowed CPU; n >= 2), pinned there, threads of
 * this mm, started with every signal blocked but SIGSEGV/SIGBUS, whose handler is installed for the
 * verifier's life (the one found is put back by stop(), and gets every fault that is not a checked
 * read).  One verifier at a time (-EBUSY).
 * pass(): the caller does the region in ninvalidators equal parts, part i pinned to invalidators[i]
 * (its affinity put back after), stride by stride with op, as a timed pass would, but every call
 * checked: the checkers on every other CPU read the call's checked word (one base page of the
 * stride, written with a known value just before) until the call, and once after it returned: the
 * read must fault (mprotect, munmap) or read 0 (madvise).  munmap: each hole is reserved PROT_NONE
 * after its checks, as after a timed pass; atsd_op_restore() maps the region again.  Never timed: a
 * pass with checkers is not a measurement.  stop(): clears the owner's slot first, SIGINT/SIGTERM
 * held, like the other releases.
 * control(): TEST ONLY, not reachable from either command line: skip_call 1 makes every call of a
 * pass raise its flags without the system call, so every check must come out stale. */
struct atsd_verify_result {
	uint64_t calls;         /* calls made (each checked from every other CPU) */
	uint64_t checks;        /* calls x checkers: one read after the return each */
	uint64_t faults;        /* checks that faulted (mprotect, munmap: as they must) */
	uint64_t zeros;         /* checks that read 0 (madvise: as they must) */
	uint64_t stale;         /* checks that read through a translation after the call returned */
	uint64_t held;          /* checks whose checker read through the translation while the call ran */
	uint64_t ns;            /* the pass's wall time, handshakes included */
	uint64_t device_checks;  /* --device hmm: calls whose page the device read after the call returned */
	uint64_t device_failed;  /* of those, reads the device could not translate (mprotect, munmap: as they must) */
	uint64_t device_zeros;   /* reads that gave 0 (madvise: as they must) */
	uint64_t device_stale;   /* reads through a device translation the call should have invalidated */
};
struct atsd_verifier;
struct atsd_device;
int atsd_verify_start(struct atsd_verifier **out, const int32_t *cpus, int32_t n);
int atsd_verify_pass(struct atsd_verifier *v, struct atsd_region *r, int32_t op, uint64_t stride,
		     const int32_t *invalidators, int32_t ninvalidators, struct atsd_verify_result *out);
int atsd_verify_control(struct atsd_verifier *v, int32_t skip_call);
/* --device hmm: every call of the verifier's passes checked on the device too.  Before the call the
 * device reads the checked page (mirroring it: it must read the value just written; other bytes mean
 * it translates an older page, a translation an earlier invalidation left behind: device_stale, the
 * call's check); after the call returned and the checkers are done, it reads it again: that read must
 * fail (mprotect, munmap) or give 0 (madvise); a read that succeeds otherwise is device_stale.  A
 * device read that fails before the call fails the pass.  NULL turns it off; the device stays the
 * caller's. */
int atsd_verify_device(struct atsd_verifier *v, struct atsd_device *d);
int atsd_verify_stop(struct atsd_verifier **v);
/* The CPUs that check a verify pass (its record's checker_cpus): every verify CPU but a single
 * invalidator's own; with several invalidators (--threads) every verify CPU, each checking the parts
 * the others invalidate.  Writes them to out (room for n) and returns how many. */
int32_t atsd_verify_checkers(const int32_t *verify_cpus, int32_t n, const int32_t *invalidators,
			     int32_t ninvalidators, int32_t *out);
/* The device's loud line (--device hmm), its twin render/text.py's stale_device_translation():
 * "STALE DEVICE TRANSLATION: N of M device reads ... (op, 64K, test_hmm)". */
const char *atsd_verify_device_stale_text(uint64_t stale, uint64_t checks, int32_t op, uint64_t stride, char *out,
					  uint64_t len);
/* --workload's verify passes (on by default: will-it-scale asserts its read-back): a region of its own
 * this large, madvise(MADV_DONTNEED)'d a page a call as the loop does, 1M for each task. */
uint64_t atsd_verify_workload_size(int32_t tasks);
/* The loud line (atsd prints it; atsdbench's render/text.py stale_translation() is its twin, held
 * equal by tests/measure/test_verify.py): "STALE TRANSLATION: N of M checks ... (op, 64K, CPUs 0 -> 1)". */
const char *atsd_verify_stale_text(uint64_t stale, uint64_t checks, int32_t op, uint64_t stride,
				   const int32_t *invalidators, int32_t ninvalidators, const int32_t *checkers,
				   int32_t nchecker, char *out, uint64_t len);

/* ---- run --profile (csrc/atsd_profile.c): sampled kernel callchains ----
 * perf_event_open on each CPU given (cycles: PERF_COUNT_HW_CPU_CYCLES, else the software cpu-clock)
 * at freq samples a second, kernel only, with callchains; a ring of `pages` data pages (a power of
 * two) each.  Owned through one slot (`struct atsd_profile **`): close clears it before it frees,
 * with SIGINT/SIGTERM blocked. */
enum { ATSD_PROFILE_MAX_CPUS = 1024 };
struct atsd_profile;
int atsd_profile_open(struct atsd_profile **out, const int32_t *cpus, int32_t ncpus, int32_t cycles,
		      uint64_t freq, uint32_t pages);
int atsd_profile_enable(struct atsd_profile *p, int32_t on);
/* Drains every ring into out: per sample cpu, tid, n, then n kernel addresses (innermost first);
 * returns the u64s written (a sample that does not fit stays in its ring), or -errno. */
int64_t atsd_profile_read(struct atsd_profile *p, uint64_t *out, uint64_t cap, uint64_t *lost);
int atsd_profile_close(struct atsd_profile **slot);
/* The parser of ring records (PERF_RECORD_SAMPLE of IP|TID|CPU|CALLCHAIN, PERF_RECORD_LOST) on plain
 * bytes: out as above, *lost += lost samples, *used = bytes of whole records consumed. */
int64_t atsd_perf_parse(const uint8_t *buf, uint64_t len, uint64_t *out, uint64_t cap, uint64_t *lost,
			uint64_t *used);
/* A campaign's next boot (atsd_kexec.c): kexec_file_load(2) of KERNEL, with INITRD (NULL or "" for
 * none) and CMDLINE; both regular files.  0 or -errno (EPERM: no CAP_SYS_BOOT, lockdown or
 * kexec_load_disabled; EKEYREJECTED/ENOKEY/EBADMSG: a signature required and not good; ENOSYS: no
 * kexec_file_load in this kernel or arch).  unload drops a loaded one; reboot syncs and boots into
 * the loaded kernel, returning only on failure (-errno). */
int atsd_kexec_load(const char *kernel, const char *initrd, const char *cmdline);
int atsd_kexec_unload(void);
/* Whether this kernel has kexec_file_load: -ENOSYS where not, else the -errno of a call with flags no
 * kernel takes (refused before anything is loaded or unloaded: EINVAL, or EPERM as any caller's). */
int atsd_kexec_probe(void);
int atsd_kexec_reboot(void);
/* ---- --device hmm (csrc/atsd_device.c): a device TLB invalidated through an mmu notifier ----
 *
 * The kernel's HMM test driver (lib/test_hmm.c, CONFIG_TEST_HMM; scripts/build-test-hmm builds it for
 * Debian kernels) as the device.  open(): the device node (path NULL: atsd_device_path(), which is
 * /dev/hmm_dmirror0 unless ATSD_HMM_DEVICE names another); the driver then has an mmu interval
 * notifier over this process's whole address space, until close.  touch(): HMM_DMIRROR_READ over the
 * whole region, ATSD_DEVICE_CHUNK bytes an ioctl through one bounce buffer, untimed by the caller's
 * pass (*ns its own time, *faults the device faults the driver took): afterwards the device
 * translates every page of the region, so each timed call invalidates a range it holds.
 * read_word(): the device reads the 8 bytes at addr (one page ioctl); -errno where it cannot
 * translate the page (-EFAULT: PROT_NONE or unmapped).  close(): clears the slot first, with
 * SIGINT/SIGTERM held; a second close is a no-op.  mirror_bytes(): the kernel memory the mirror of
 * `size` bytes takes at most (its page table and bounce buffer), for the plan's memory check.
 * Names: "none", "hmm"; atsd_device_parse(): the kind, or -EINVAL. */
enum atsd_device_kind {
	ATSD_DEVICE_NONE = 0,
	ATSD_DEVICE_HMM = 1,
	ATSD_NDEVICES = 2
};
enum { ATSD_DEVICE_CHUNK = 2097152 };
struct atsd_device;
const char *atsd_device_path(void);
int atsd_device_open(struct atsd_device **out, const char *path);
int atsd_device_touch(struct atsd_device *d, const struct atsd_region *r, uint64_t *ns, uint64_t *faults);
int atsd_device_read_word(struct atsd_device *d, const void *addr, uint64_t *word);
int atsd_device_close(struct atsd_device **slot);
uint64_t atsd_device_mirror_bytes(uint64_t size, uint64_t page_size);
const char *atsd_device_name(int32_t kind);
int atsd_device_parse(const char *name);
/* The device path's counts, both front ends alike: kprobe events on the kernel's functions, counted
 * like tlb:tlb_flush (perf counters on traced warm-up passes).  kprobe(i): the i-th probe's result
 * column ("notifier_starts": __mmu_notifier_invalidate_range_start, the mm's notifier chain, called
 * only where the mm has notifiers; "device_invalidates": test_hmm's dmirror_interval_invalidate, the
 * driver's callback) and its symbol as kprobe_events takes it ("test_hmm:dmirror_interval_invalidate");
 * returns how many there are, -EINVAL past them.  make(): first removes the probes of processes that
 * are gone (of this pid namespace only: another's pids are not ours to judge), then writes
 * "p:atsdbench_PID/COLUMN SYMBOL" (atsdbench_NS_PID/ outside the initial pid namespace, NS its
 * inode) into ROOT/kprobe_events (a built-in driver's
 * symbol without its module where that is refused); event gets "atsdbench_PID/COLUMN", *id its event
 * id.  -errno: ENOENT no kprobe_events (CONFIG_KPROBE_EVENTS) or no such event, EACCES/EPERM not root or
 * lockdown, EINVAL a symbol that cannot be probed.  remove(): the probe gone, SIGINT/SIGTERM held. */
/* A --device none,hmm axis: the kernel keeps an mm's notifier subscriptions (and its interval tree)
 * from the first device open to the mm's end, so a none cell after an hmm cell runs the mm's (empty)
 * notifier chain on every call and one before it does not.  prime() opens and closes the device once,
 * before the first pass of each measuring process, so that every none cell measures the same mm: the
 * chain there, no device holding the range.  1 primed, 0 where the plan has no such axis, -errno. */
int atsd_device_prime(const struct atsd_plan *p);
int atsd_device_kprobe(int32_t i, char *column, uint64_t column_len, char *symbol, uint64_t symbol_len);
int atsd_kprobe_make(const char *root, const char *column, const char *symbol, char *event, uint64_t event_len,
		     uint64_t *id);
int atsd_kprobe_remove(const char *root, const char *event);
/* run --breakdown's device stage (both front ends): a kprobe and a kretprobe on the driver's callback,
 * atsdbench_PID/device_entry and atsdbench_PID/device_exit, made under ROOT and appended to p's events
 * (family "device", "device" added to have): the stage is the measuring CPU's time between them.
 * 0, or -errno as atsd_kprobe_make (p unchanged).  remove(): both taken out, whatever was made. */
struct atsd_breakdown_probe;  /* atsd_trace.h */
int atsd_breakdown_device(const char *root, struct atsd_breakdown_probe *p);
void atsd_breakdown_device_remove(const char *root);
/* ---- one cell's passes (csrc/atsd_loop.c): the one pass loop of atsd and atsdbench run ----
 *
 * atsd_cell_passes() runs the passes of cell l->cell of round l->round, in atsd_round_order's order
 * (round x cells + cell).  Per pass: the untimed restore of the region (and --tasks processes'), not
 * before the first; the device's touch (l->device: --device hmm); hooks->before; the measuring
 * thread's state (atsd_self_state); the measured pass (atsd_op_pass, atsd_threads_pass with
 * l->threads, a --workload cell's atsd_workload_pass); its state again; the latency percentiles
 * (--latency); hooks->after.  Each pass fills out[i] (cap must hold (warmup + reps) x nstrides).  A
 * hook returns 0 to go on, else the loop stops (l->stopped): before, that pass is not run; after, it
 * is the last.  A failed step stops it too (l->err, l->stage); a failed pass's record (rec->err set)
 * is shown to hooks->after, so it can release what before took, and left at out[count], not counted.
 * Returns the records finished, or -errno before any pass (a bad loop, no memory).
 * atsd_cell_verify(): --verify's passes of the cell, after its timed ones: one a stride of the plan
 * (its order), each region restored with every page retouched, checked (atsd_verify_pass, on the
 * verifier v, which the caller started), one record (kind verify), hooks->after (before: never). */
enum atsd_loop_stage {
	ATSD_STAGE_NONE = 0,
	ATSD_STAGE_RESTORE = 1,         /* atsd_op_restore of the region */
	ATSD_STAGE_TASKS_RESTORE = 2,   /* atsd_threads_restore of the tasks' own regions */
	ATSD_STAGE_TOUCH = 3,           /* the device's touch */
	ATSD_STAGE_PASS = 4             /* the measured (or verify) pass */
};
enum atsd_record_kind { ATSD_RECORD_SAMPLE = 0, ATSD_RECORD_VERIFY = 1 };
/* One pass as the loop ran it: what both front ends make their sample (or verify) record of. */
struct atsd_pass_record {
	int32_t kind;           /* enum atsd_record_kind */
	int32_t round;
	int32_t rep;            /* its repetition, warm-up repetitions first (a sample's) */
	int32_t order;          /* its position in the round: l->first + its index in the cell */
	int32_t warmup;         /* 1: a warm-up repetition, or any pass of a warm-up round */
	int32_t traced;         /* set by hooks->before: its flushes were counted */
	int32_t cell;
	int32_t op;             /* enum atsd_op (a --workload cell's verify passes: madvise) */
	int32_t threads;        /* the cell's tasks */
	int32_t workload;       /* enum atsd_workload, -1: a pass of op */
	uint64_t stride_bytes;
	uint64_t ns;            /* the pass (with tasks, the slowest task's loop) */
	uint64_t calls;         /* size / stride; a workload's: its loops */
	uint64_t loops;         /* --workload: every task's loops, else 0 */
	int64_t device_touch_ns;  /* --device hmm: the touch before it, else -1 */
	struct atsd_self_state self;  /* the measuring thread over the pass (atsd_self_delta) */
	int32_t latency;        /* 1: lat_ns holds p50, p90, p99 and max of its calls (--latency) */
	int32_t err;            /* a failed step's -errno (stage says which), else 0 */
	uint64_t lat_ns[4];
	int32_t stage;          /* enum atsd_loop_stage */
	int32_t ntimes;         /* entries of times */
	uint64_t done;          /* a failed pass: the calls (loops) that succeeded */
	struct atsd_verify_result verify;  /* kind verify: its checks */
	struct atsd_thread_times *times;   /* with tasks: each task's; during the hooks only, else NULL */
	uint64_t *call_ns;      /* --latency: every call's latency (calls of them); during the hooks only */
};
struct atsd_pass_hooks {
	void *ctx;
	int32_t (*before)(void *ctx, struct atsd_pass_record *rec);  /* NULL: none */
	int32_t (*after)(void *ctx, struct atsd_pass_record *rec);
};
struct atsd_loop {
	const struct atsd_plan *plan;
	int32_t cell;
	int32_t round;
	int32_t warmup_round;   /* 1: every pass of it is a warm-up */
	int32_t first;          /* the order of its first pass in the round */
	struct atsd_region *region;     /* the cell's region (a workload's verify region); NULL for a workload */
	struct atsd_threads *threads;   /* --threads > 1 and --workload: the tasks; NULL else */
	struct atsd_device *device;     /* --device hmm, else NULL */
	int32_t err;            /* out: the failure that stopped it, -errno, else 0 */
	int32_t stage;          /* out: where (enum atsd_loop_stage) */
	int32_t stopped;        /* out: 1 where a hook stopped it */
	int32_t failed;         /* out: the index in out of the failed pass's record, -1 none */
};
int32_t atsd_cell_passes(struct atsd_loop *l, const struct atsd_pass_hooks *hooks, struct atsd_pass_record *out,
			 int32_t cap);
int32_t atsd_cell_verify(struct atsd_loop *l, struct atsd_verifier *v, int32_t op, const int32_t *invalidators,
			 int32_t ninvalidators, const struct atsd_pass_hooks *hooks, struct atsd_pass_record *out,
			 int32_t cap);
/* ATSD-CDEF-END */

#define ATSD_ABI_VERSION 27

/* The tracefs part of the API: the rules of the flush tracepoints, the trace instance, --breakdown's. */
#include "atsd_trace.h"
/* What the core's files share with each other and with atsd, never with Python. */
#include "atsd_core.h"

#endif
