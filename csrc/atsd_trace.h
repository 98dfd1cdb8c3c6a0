/*
 * atsd_trace.h - the tracefs part of the core's API (atsd.h includes it): the rules of the flush
 * tracepoints (csrc/atsd_trace.c), the private trace instance and --breakdown's rules
 * (csrc/atsd_instance.c).  build_atsd.py cuts the cdef from its ATSD-CDEF block as from atsd.h's.
 */
#ifndef ATSD_TRACE_H
#define ATSD_TRACE_H

#include <stdint.h>

/* ATSD-CDEF-BEGIN */
/* ---- tracefs (csrc/atsd_trace.c): finding and naming the flush tracepoints ----
 *
 * The one copy of these rules for both front ends (atsd's counting, atsdbench's counters.py), so a
 * column or a sentence cannot differ between them.  Every function takes the tree it looks in, so
 * tests run them on a fixture tracefs. */
enum atsd_trace_limits {
	ATSD_MAX_REASONS = 32,
	ATSD_REASON_NAME = 64,
	ATSD_COLUMN_NAME = 48,
	ATSD_FILTER_MAX = 256
};

struct atsd_reason {
	int64_t code;
	char name[64];          /* ATSD_REASON_NAME */
};

/* A tracepoint as its format file describes it. */
struct atsd_tracepoint {
	uint64_t id;            /* the "ID:" line; 0 when absent */
	int32_t nreasons;
	int32_t reserved;
	struct atsd_reason reasons[32];  /* the { code, "name" } pairs of its print fmt, first seen first */
};

/* A perf counter on a tracepoint: the result-file column and its kernel filter ("" for none). */
struct atsd_count_column {
	char name[48];          /* ATSD_COLUMN_NAME */
	char filter[256];       /* ATSD_FILTER_MAX */
};

/* The first of /sys/kernel/tracing and /sys/kernel/debug/tracing (under sysroot; NULL or "" is /)
 * whose events/ directory can be listed, into out; -ENOENT when neither can. */
int atsd_tracefs_root(const char *sysroot, char *out, uint64_t len);
/* A format file's text -> *t (its id 0 when the text has no ID line). */
int atsd_tracepoint_parse(const char *text, struct atsd_tracepoint *t);
/* ROOT/events/EVENT/format, EVENT as "tlb/tlb_flush"; -errno (and t->id 0) where it cannot be read. */
int atsd_tracepoint_find(const char *root, const char *event, struct atsd_tracepoint *t);
/* "remote IPI send" -> "flushes_remote_ipi_send"; returns out. */
const char *atsd_reason_column(const char *reason, char *out, uint64_t len);
/* What is counted from tlb:tlb_flush: flushes (every reason but the sender's note), full_flushes
 * (of those, pages == TLB_FLUSH_ALL), then flushes_<reason> per reason.  Returns the count (at most
 * cap; ATSD_MAX_REASONS + 2 holds them all). */
int atsd_tlb_flush_columns(const struct atsd_tracepoint *t, struct atsd_count_column *out, int32_t cap);
/* POWER's flush counts (tlb:tlb_flush never fires there): every column a kernel filter on one event
 * can count, as atsd counts them with perf counters; atsdbench counts the same columns (and the
 * errata workarounds, which need the order of events) from a trace buffer (measure/tlbie.py), taking
 * the names, the hypervisor calls' opcodes and the filters it is tested against from here. */
struct atsd_power_column {
	char name[48];          /* ATSD_COLUMN_NAME: the result-file column */
	char event[48];         /* the tracepoint, as "powerpc/tlbie" */
	char filter[256];       /* ATSD_FILTER_MAX: its kernel filter, "" for none */
	int32_t hash;           /* 1: a pseries hypervisor call, counted on a hash MMU only */
	int32_t opcode;         /* that call's PAPR number, -1 for the others */
};
/* The columns in order; returns the count (at most cap; 16 holds them all). */
int atsd_power_columns(struct atsd_power_column *out, int32_t cap);
/* 1 when /proc/mounts text (NULL: this system's) lists a tracefs, else 0. */
int atsd_tracefs_mounted(const char *mounts);
/* Why EVENT ("tlb:tlb_flush") cannot be read, in one sentence with the way out.  euid -1: this
 * process's; mounted -1: atsd_tracefs_mounted(NULL).  Returns out. */
const char *atsd_tracepoint_problem(const char *event, int32_t euid, int32_t mounted, char *out, uint64_t len);
/* ---- a private tracefs instance (csrc/atsd_instance.c): run --breakdown's traced passes (atsd and
 * atsdbench alike) and atsdbench's POWER flush counts (measure/tracebuf.py) ----
 *
 * make(): stale instances of dead processes removed, then ROOT/instances/atsdbench-PID made (tracefs
 * fills it).  setup(): recording off, no overwrite, every CPU's buffer small, cpus[i]'s kb[i], the
 * trace clock (NULL or "": tracefs's), each event's filter.  start(): buffers emptied, the events
 * enabled, recording on.  mark(): one trace_marker line; mark_time(): "atsdbench NAME NS" with
 * CLOCK_MONOTONIC ns (two of them give the trace clock's tick).  stop(): recording and events off,
 * *lost the events every CPU's buffer lost.  text(): every CPU's buffer that has entries, CPU by CPU,
 * comment lines left out, into a malloc'd *out (atsd_free); its length or -errno.  close(): events
 * off, the instance removed, the slot cleared first, SIGINT/SIGTERM held; a second close is a no-op. */
enum { ATSD_MAX_TRACE_EVENTS = 24, ATSD_BREAKDOWN_CALLS = 2048, ATSD_INSTANCE_SMALL_KB = 256 };
struct atsd_trace_event {
	char event[64];         /* "tlb/tlb_flush" */
	char filter[256];       /* ATSD_FILTER_MAX: "" for none */
	char family[8];         /* run --breakdown's: syscall, tlb, csd, ipi, tlbie, hcall */
};
struct atsd_instance;
int atsd_instance_make(struct atsd_instance **slot, const char *root);
const char *atsd_instance_path(const struct atsd_instance *t);
int atsd_instance_setup(struct atsd_instance *t, const struct atsd_trace_event *events, int32_t nevents,
			const int32_t *cpus, const uint64_t *kb, int32_t ncpus, const char *clock);
int atsd_instance_start(struct atsd_instance *t);
int atsd_instance_mark(struct atsd_instance *t, const char *text);
int atsd_instance_mark_time(struct atsd_instance *t, const char *name);
int atsd_instance_stop(struct atsd_instance *t, uint64_t *lost);
int64_t atsd_instance_text(struct atsd_instance *t, char **out);
int atsd_instance_close(struct atsd_instance **slot);
void atsd_free(void *p);
void atsd_instance_remove_stale(const char *root);
/* Events a buffer lost, from its per_cpu/cpuN/stats text ("overrun" plus "dropped events"). */
uint64_t atsd_trace_lost(const char *stats);
/* Why no instance can be made in ROOT (err: the -errno of make), in one sentence with the way out
 * (lockdown: securityfs' mode, NULL to read it here).  Returns out. */
const char *atsd_instance_problem(const char *root, int32_t err, const char *lockdown, char *out, uint64_t len);
/* run --breakdown: what it records under ROOT for these ops: each op's syscall enter/exit, and where
 * this kernel has them tlb:tlb_flush, csd:csd_function_entry/exit, ipi:ipi_send_cpu/_cpumask, on POWER
 * powerpc:tlbie and powerpc:hcall_entry/exit (the hash page table's calls only; tlb:tlb_flush never
 * fires there); the trace clock (a raw counter where offered).  -ENOENT with `absent` naming a
 * syscall event this kernel lacks (the breakdown cannot run). */
struct atsd_breakdown_probe {
	int32_t nevents;
	int32_t power;          /* 1: tracefs has powerpc events */
	struct atsd_trace_event events[24];  /* ATSD_MAX_TRACE_EVENTS */
	char have[64];          /* the families recorded, "tlb,csd,ipi" */
	char missing[512];      /* optional events this kernel lacks, "csd:csd_function_entry,..." */
	char absent[64];        /* the syscall event that is not there */
	char clock[16];         /* "" where none of x86-tsc, ppc-tb, mono is offered */
};
int atsd_breakdown_probe(const char *root, const int32_t *ops, int32_t nops, struct atsd_breakdown_probe *p);
/* The filter of powerpc:hcall_entry/exit: only the hypervisor calls that change the hash page table
 * (atsd_power_columns' hash ones; an idle CPU's H_CEDE would fill a buffer).  Returns out. */
const char *atsd_hcall_filter(char *out, uint64_t len);
/* The syscall events filtered to the measuring thread. */
int atsd_breakdown_thread(struct atsd_breakdown_probe *p, int32_t tid);
/* A breakdown pass's region: the run's layout (align), at most ATSD_BREAKDOWN_CALLS calls of stride,
 * at most size. */
uint64_t atsd_breakdown_region(uint64_t size, uint64_t align, uint64_t stride);
/* The buffers for passes of at most `calls` calls: the measuring CPU's, half that on each bystander's
 * CPU (their remote flushes); into cpus/kb (1 + nbystanders long), returns how many. */
int32_t atsd_breakdown_sizes(uint64_t calls, int32_t cpu, const int32_t *bystander_cpus, int32_t nbystanders,
			     int32_t *cpus, uint64_t *kb);
/* ATSD-CDEF-END */

#endif
