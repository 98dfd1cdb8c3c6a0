/*
 * atsd_main.h - what the parts of the standalone atsd share; not part of the core's API (atsd.h).
 *
 * atsd_main.c: options, the rounds and the sub-runs' processes (--runs).  atsd_pass.c: a cell's passes
 * through the core's loop, and the line each pass writes.  atsd_count.c: IPI and flush counts around a
 * pass.  atsd_output.c: the file for `atsdbench import`.  atsd_summary.c: the
 * table printed after the run.  atsd_breakdown.c: --breakdown's traced passes.
 */
#ifndef ATSD_MAIN_H
#define ATSD_MAIN_H

#include "atsd.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Set by SIGINT and SIGTERM: the pass under way finishes, what is finished is written. */
extern volatile sig_atomic_t interrupted;

/* "atsd: " and the message on stderr, then exit 2. */
/* a line wrapped to 100 columns at spaces, the rest indented by indent */
void put_wrapped(FILE *f, const char *text, int indent);
/* where tracefs is looked for: NULL, the system's (a test build: $ATSD_TEST_SYSROOT, a fake tree) */
const char *sysroot(void);
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* The first line of a file (without its newline), "unknown" where it cannot be read. */
void read_line_of(const char *path, char *buf, size_t len);
/* A /proc/cpuinfo field's value, "unknown" where absent. */
void cpuinfo_field(const char *key, char *buf, size_t len);

/* ---- atsd_count.c ---- */
enum { MAX_COLUMNS = 32 };

struct column {
	char name[ATSD_COLUMN_NAME];
	uint64_t id;
	char filter[ATSD_FILTER_MAX];
	struct atsd_counter *c;
	uint64_t before;
};

struct counting {
	int n;                      /* columns; 0 when nothing can be counted */
	struct column col[MAX_COLUMNS];
	int32_t ncpus;
	int32_t cpus[ATSD_MAX_CPUS];
	int32_t scope;              /* 1: every CPU, 0: this thread */
	char events[128];           /* "tlb:tlb_flush" or "powerpc:tlbie,powerpc:tlbia" */
	char error[256];            /* why there are no counts */
	int32_t nkprobes;           /* --device hmm: the kprobe events made for its counts, removed at the end */
	char kprobes[4][80];
	char device_error[256];     /* why the device path is not counted */
};

int64_t tlb_ipis(void);
int64_t tlb_ipis_of(const char *path);
void counting_probe(struct counting *k, const struct atsd_host *h);
int counting_open(struct counting *k);
void counting_close(struct counting *k);
void counting_read(struct counting *k, FILE *out, uint64_t *sums);
/* --device hmm: the device path's kprobe columns added (atsd_device_kprobe), or device_error says why not. */
void counting_device(struct counting *k);
void counting_device_remove(struct counting *k);

/* ---- atsd_output.c ---- */
extern const char *const page_names[3];

struct output {
	const char *path;
	char *buf;
	size_t len;
	FILE *mem;
	int force;  /* --force: an existing regular FILE is replaced; else refused, and never raced */
};

void output_open(struct output *o, const char *path);
int output_close(struct output *o);
void write_host(FILE *out);
/* bd: --breakdown's events and clock (NULL without it) */
void write_config(FILE *out, const struct atsd_plan *p, const struct counting *k,
		  const struct atsd_breakdown_probe *bd);

/* ---- atsd_pass.c ---- */
/* One cell of one round of sub-run `run` through the core's loop: a fresh region with the cell's
 * pages (a workload: its tasks), its passes in the order of atsd_round_order(round x ncells + cell),
 * then with --verify its verify passes (the bystanders in b stopped for them).  first: the round
 * position of its first pass.  Each pass's line is written and flushed as the pass ends.  0 or -errno,
 * said on stderr (a failed read-back only after the save: say_readback). */
struct summary;
int run_cell(FILE *out, const struct atsd_plan *p, int32_t run, int32_t round, int warmup_round, int32_t cell,
	     const struct atsd_cell *c, int first, const uint64_t canary[2], struct counting *k, struct summary *t,
	     struct atsd_bystanders **b);
void say_readback(void);

/* ---- atsd_breakdown.c ---- */
/* What --breakdown records here; one line and exit 2 where it cannot run at all. */
void breakdown_probe(const struct atsd_plan *p, struct atsd_breakdown_probe *bd);
void write_breakdown_config(FILE *out, const struct atsd_breakdown_probe *bd);
/* The traced passes: `breakdown` records, each followed by its `trace` lines; 0 or -errno (said). */
int breakdown_run(FILE *out, const struct atsd_plan *p, struct atsd_breakdown_probe *bd);
/* The device stage's kprobe events gone (atsd_breakdown_device_remove), whatever the run did. */
void breakdown_remove(void);

/* ---- atsd_summary.c ---- */
/* What the table after the run shows, per cell and stride: the measured passes' rates and times,
 * the traced passes' counts and calls, the timed passes' IPIs. */
struct stride_stats {
	double *gbps, *us;
	int n;
	uint64_t traced_calls, sums[MAX_COLUMNS];
	int64_t ipis;
	uint64_t ipi_calls;
	uint64_t verify_checks, verify_stale;  /* --verify: every verify pass's, summed */
	uint64_t device_checks, device_stale;  /* --verify --device hmm: the device's checks, summed */
	int32_t verify_op;
};

struct summary {
	int ncells, nstrides, cap;
	struct stride_stats *s;     /* shared memory (summary_init), which sub-runs' processes fill in */
	size_t bytes;
};

int summary_init(struct summary *t, const struct atsd_plan *p);
struct stride_stats *summary_at(struct summary *t, const struct atsd_plan *p, int32_t cell, uint64_t stride);
void print_summary(FILE *f, const struct atsd_plan *p, struct summary *t, const struct counting *k);
void summary_free(struct summary *t);

#endif
