/*
 * atsd_count.c - the counts atsd takes around a pass: shootdown IPIs on every pass, tracepoint
 * counts on warm-up passes only.  Which tracepoints, under which names, and why one cannot be read
 * are atsd_trace.c's (shared with atsdbench's counters.py); what is here is atsd's own use of them.
 */
#define _GNU_SOURCE
#include "atsd_main.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>

/* Sum of the /proc/interrupts "TLB" row (x86 shootdown IPIs received), -1 where absent.  Its lines
 * are read whole (getline): a machine of a thousand CPUs has lines over 10K. */
int64_t tlb_ipis_of(const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int64_t sum = -1;
	long ncpu = 0;

	if (!f)
		return -1;
	if (getline(&line, &cap, f) > 0) {  /* the header: a name a CPU */
		for (const char *q = line; *q;) {
			q += strspn(q, " \t\n");
			if (*q)
				ncpu++;
			q += strcspn(q, " \t\n");
		}
	}
	while (getline(&line, &cap, f) > 0) {
		char *p = line + strspn(line, " ");
		if (!strncmp(p, "TLB:", 4)) {
			char *end;
			p += 4;
			sum = 0;
			for (long i = 0; i < ncpu; i++) {
				long long v = strtoll(p, &end, 10);
				if (end == p)
					break;
				sum += v;
				p = end;
			}
			break;
		}
	}
	free(line);
	fclose(f);
	return sum;
}

int64_t tlb_ipis(void)
{
	return tlb_ipis_of("/proc/interrupts");
}

/* "0-3,8" -> CPUs into out (at most cap); the count, or -1 for text that is not a CPU list. */
static int32_t parse_cpulist(const char *text, int32_t *out, int32_t cap)
{
	int32_t n = 0;
	const char *q = text;

	while (*q && *q != '\n') {
		char *end;
		long lo = strtol(q, &end, 10), hi, c;
		if (end == q || lo < 0)
			return -1;
		hi = lo;
		q = end;
		if (*q == '-') {
			hi = strtol(q + 1, &end, 10);
			if (end == q + 1 || hi < lo)
				return -1;
			q = end;
		}
		for (c = lo; c <= hi && n < cap; c++)
			out[n++] = (int32_t)c;
		if (*q == ',')
			q++;
		else if (*q && *q != '\n')
			return -1;
	}
	return n;
}

/* perf counters on the tracepoints (atsd_counter_open), opened around warm-up passes only: an
 * attached tracepoint slows every flush, so no timed pass is traced.  x86: tlb:tlb_flush, the
 * columns of atsd_tlb_flush_columns.  POWER (tlb:tlb_flush never fires there): the columns of
 * atsd_power_columns (powerpc:tlbie and tlbia, and on a hash MMU powerpc:hcall_entry by opcode).
 * POWER9's errata workarounds (tlbie_fixup) are not counted: "the same page again" is no field
 * test, and atsdbench run reads them from the trace in order.  atsdbench counts POWER from a trace
 * buffer instead, so these filters stand in for its parser; tests/measure/test_tlbie.py holds the
 * two alike on real traces. */

static int is_power(void)
{
	struct utsname u;

	return !uname(&u) && (!strncmp(u.machine, "ppc64", 5) || !strncmp(u.machine, "powerpc", 7));
}

static void add_column(struct counting *k, const char *name, uint64_t id, const char *filter)
{
	struct column *c;

	if (k->n >= MAX_COLUMNS)
		return;
	c = &k->col[k->n++];
	/* the precision: gcc 12 for ppc64le otherwise sizes a column name by the whole column array */
	snprintf(c->name, sizeof(c->name), "%.*s", (int)sizeof(c->name) - 1, name);
	c->id = id;
	snprintf(c->filter, sizeof(c->filter), "%.*s", (int)sizeof(c->filter) - 1, filter ? filter : "");
	c->c = NULL;
}

static void setup_tlb_flush(struct counting *k, uint64_t id, const struct atsd_tracepoint *tp)
{
	struct atsd_count_column cols[MAX_COLUMNS];
	int32_t i, n = atsd_tlb_flush_columns(tp, cols, MAX_COLUMNS);

	for (i = 0; i < n; i++)
		add_column(k, cols[i].name, id, cols[i].filter[0] ? cols[i].filter : NULL);
	snprintf(k->events, sizeof(k->events), "tlb:tlb_flush");
}

/* The tracepoint's id, 0 where there is no tracefs or no such event. */
static uint64_t event_id(const char *root, const char *event, struct atsd_tracepoint *tp)
{
	memset(tp, 0, sizeof(*tp));
	return root[0] && !atsd_tracepoint_find(root, event, tp) ? tp->id : 0;
}

static void setup_power(struct counting *k, const char *root, uint64_t tlbie)
{
	struct atsd_tracepoint tp;
	struct atsd_power_column cols[16];
	uint64_t tlbia = event_id(root, "powerpc/tlbia", &tp), hcall = event_id(root, "powerpc/hcall_entry", &tp);
	char mmu[64];
	int32_t i, n = atsd_power_columns(cols, 16);
	int hash;

	cpuinfo_field("MMU", mmu, sizeof(mmu));
	hash = hcall && !strcmp(mmu, "Hash");
	snprintf(k->events, sizeof(k->events), "powerpc:tlbie%s%s", tlbia ? ",powerpc:tlbia" : "",
		 hash ? ",powerpc:hcall_entry" : "");
	for (i = 0; i < n; i++) {
		uint64_t id = cols[i].hash ? (hash ? hcall : 0) : !strcmp(cols[i].event, "powerpc/tlbia") ? tlbia : tlbie;
		if (id)
			add_column(k, cols[i].name, id, cols[i].filter[0] ? cols[i].filter : NULL);
	}
}

void counting_close(struct counting *k)
{
	int i;

	for (i = 0; i < k->n; i++)
		atsd_counter_close(&k->col[i].c);
}

int counting_open(struct counting *k)
{
	int i, err;

	for (i = 0; i < k->n; i++) {
		err = atsd_counter_open(&k->col[i].c, k->col[i].id, k->col[i].filter[0] ? k->col[i].filter : NULL,
					k->cpus, k->ncpus, &k->scope);
		if (err) {
			counting_close(k);
			return err;
		}
	}
	return 0;
}

/* Reads every counter: before the pass keeps the values, after it writes the differences. */
void counting_read(struct counting *k, FILE *out, uint64_t *sums)
{
	int i;

	for (i = 0; i < k->n; i++) {
		uint64_t v = 0;
		if (atsd_counter_read(k->col[i].c, &v))
			continue;
		if (!out) {
			k->col[i].before = v;
		} else {
			fprintf(out, "\t%s=%" PRIu64, k->col[i].name, v - k->col[i].before);
			sums[i] += v - k->col[i].before;
		}
	}
}

/* One perf fd per CPU per column: a big machine needs more than the usual 1024. */
static void allow_fds(rlim_t needed)
{
	struct rlimit r;

	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur != RLIM_INFINITY && r.rlim_cur < needed) {
		r.rlim_cur = r.rlim_max == RLIM_INFINITY || r.rlim_max > needed ? needed : r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

void counting_probe(struct counting *k, const struct atsd_host *h)
{
	static struct atsd_tracepoint tp;
	char root[4096], online[4096];
	uint64_t tlbie, flush;
	int err;

	memset(k, 0, sizeof(*k));
	atsd_tracefs_root(sysroot(), root, sizeof(root));
	tlbie = event_id(root, "powerpc/tlbie", &tp);
	flush = event_id(root, "tlb/tlb_flush", &tp);  /* last: its reasons name the columns */
	read_line_of("/sys/devices/system/cpu/online", online, sizeof(online));
	k->ncpus = parse_cpulist(online, k->cpus, ATSD_MAX_CPUS);
	if (k->ncpus <= 0) {
		k->ncpus = h->naffinity;
		memcpy(k->cpus, h->affinity, sizeof(int32_t) * (size_t)h->naffinity);
	}
	if (tlbie)
		setup_power(k, root, tlbie);
	else if (is_power())  /* tlb:tlb_flush exists there but never fires: zeros would not be counts */
		atsd_tracepoint_problem("powerpc:tlbie", -1, -1, k->error, sizeof(k->error));
	else if (flush)
		setup_tlb_flush(k, flush, &tp);
	else
		atsd_tracepoint_problem("tlb:tlb_flush", -1, -1, k->error, sizeof(k->error));
	if (!k->n)
		return;
	allow_fds((rlim_t)k->n * (rlim_t)k->ncpus + 64);
	err = counting_open(k);
	counting_close(k);
	if (err) {
		snprintf(k->error, sizeof(k->error), "perf_event_open on %s failed: %s", k->events, strerror(-err));
		k->n = 0;
	}
}

void counting_device(struct counting *k)
{
	char root[4096], column[48], symbol[96], event[80];
	int32_t i, n = 1;
	uint64_t id;
	int err;

	if (atsd_tracefs_root(sysroot(), root, sizeof(root)) < 0) {
		atsd_tracepoint_problem("kprobes", -1, -1, k->device_error, sizeof(k->device_error));
		return;
	}
	for (i = 0; i < n && k->nkprobes < 4; i++) {
		n = atsd_device_kprobe(i, column, sizeof(column), symbol, sizeof(symbol));
		if ((err = atsd_kprobe_make(root, column, symbol, event, sizeof(event), &id))) {
			snprintf(k->device_error, sizeof(k->device_error), "no kprobe event on %.96s in %.96s/kprobe_events: %s",
				 symbol, root, strerror(-err));
			break;
		}
		snprintf(k->kprobes[k->nkprobes++], sizeof(k->kprobes[0]), "%s", event);
		add_column(k, column, id, NULL);
		snprintf(k->events + strlen(k->events), sizeof(k->events) - strlen(k->events), "%skprobe:%s",
			 k->events[0] ? "," : "", symbol);
	}
	if (k->device_error[0])
		counting_device_remove(k);
}

void counting_device_remove(struct counting *k)
{
	char root[4096];
	int32_t i, j;

	counting_close(k);
	if (atsd_tracefs_root(sysroot(), root, sizeof(root)) < 0)
		return;
	for (i = 0; i < k->nkprobes; i++) {
		atsd_kprobe_remove(root, k->kprobes[i]);
		for (j = 0; j < k->n; j++)  /* their columns go with them */
			if (strstr(k->kprobes[i], "/") && !strcmp(strchr(k->kprobes[i], '/') + 1, k->col[j].name))
				k->col[j--] = k->col[--k->n];
	}
	k->nkprobes = 0;
}
