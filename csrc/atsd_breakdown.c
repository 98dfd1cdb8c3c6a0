/*
 * atsd_breakdown.c - atsd --breakdown: after the measured rounds, one untimed pass per cell and stride
 * traced in a private tracefs instance (csrc/atsd_instance.c, the rules atsdbench run --breakdown
 * uses), its raw trace lines written to the output between two clock marks.  atsd cuts nothing into
 * stages: `atsdbench import` (and guest) do, with analysis/breakdown.py, as for run --breakdown.
 */
#define _GNU_SOURCE
#include "atsd_main.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static char root[4096];

void breakdown_probe(const struct atsd_plan *p, struct atsd_breakdown_probe *bd)
{
	struct atsd_instance *t = NULL;
	char why[512], event[64];
	int err;

	snprintf(event, sizeof(event), "syscalls:sys_enter_%s", atsd_op_name(p->ops[0]));
	if (geteuid() || atsd_tracefs_root(sysroot(), root, sizeof(root)))
		die("--breakdown: %s", atsd_tracepoint_problem(event, -1, -1, why, sizeof(why)));
	if (atsd_breakdown_probe(root, p->ops, p->nops, bd) == -ENOENT)
		die("--breakdown: %s", atsd_tracepoint_problem(bd->absent, -1, 1, why, sizeof(why)));
	/* made and removed now: lockdown or a read-only tracefs says no before anything is measured */
	if ((err = atsd_instance_make(&t, root)))
		die("--breakdown: %s", atsd_instance_problem(root, err, NULL, why, sizeof(why)));
	atsd_instance_close(&t);
	for (int32_t d = 0; d < p->ndevices; d++)
		if (p->devices[d] == ATSD_DEVICE_HMM) {  /* the device stage: where kprobe events can be made */
			if (atsd_breakdown_device(root, bd))
				snprintf(bd->missing + strlen(bd->missing), sizeof(bd->missing) - strlen(bd->missing),
					 "%skprobe:test_hmm:dmirror_interval_invalidate", bd->missing[0] ? "," : "");
			break;
		}
	if (bd->missing[0])  /* optional events: those stages are not measured, the run goes on */
		fprintf(stderr, "atsd: --breakdown: no %s events here: those stages not measured\n", bd->missing);
}

void write_breakdown_config(FILE *out, const struct atsd_breakdown_probe *bd)
{
	int32_t i;

	fprintf(out, "\tbreakdown=1\tbreakdown_calls_max=%d\tbreakdown_clock=%s\tbreakdown_have=%s\tbreakdown_missing=%s"
		"\tbreakdown_events=", ATSD_BREAKDOWN_CALLS, bd->clock, bd->have, bd->missing);
	for (i = 0; i < bd->nevents; i++) {
		char name[64], *slash;
		snprintf(name, sizeof(name), "%s", bd->events[i].event);
		if ((slash = strchr(name, '/')))
			*slash = ':';
		fprintf(out, "%s%s", i ? "," : "", name);
	}
}

/* Each line of the trace as a `trace` record (a tab in it would split the record: a space). */
static uint64_t write_trace(FILE *out, char *text)
{
	uint64_t n = 0;
	char *line, *next;

	for (line = text; *line; line = next) {
		char *c;
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		else
			next = line + strlen(line);
		for (c = line; *c; c++)
			if (*c == '\t' || *c == '\r')
				*c = ' ';
		if (*line) {
			fprintf(out, "trace\t%s\n", line);
			n++;
		}
	}
	return n;
}

/* One pass: a fresh region of the breakdown's size, traced between the marks. */
static int traced_pass(FILE *out, const struct atsd_plan *p, struct atsd_instance *t, int32_t cell,
		       const struct atsd_cell *c, uint64_t stride, int32_t tid)
{
	struct atsd_region r;
	uint64_t size = atsd_breakdown_region(p->size, p->align, stride), ns, done = 0, lost = 0;
	char *text = NULL;
	int64_t len;
	int err, err2;
	char a[32];

	struct atsd_device *dev = NULL;

	memset(&r, 0, sizeof(r));
	if ((err = atsd_region_map(&r, size, p->align, c->pages))) {
		fprintf(stderr, "atsd: --breakdown: mapping %" PRIu64 " bytes: %s\n", size, strerror(-err));
		return err;
	}
	/* an hmm cell's pass: the device holds the region, as before a timed pass */
	if (c->device == ATSD_DEVICE_HMM && ((err = atsd_device_open(&dev, NULL)) ||
					     (err = atsd_device_touch(dev, &r, &ns, NULL)))) {
		fprintf(stderr, "atsd: --breakdown: the device (%s): %s\n", atsd_device_path(), strerror(-err));
		atsd_device_close(&dev);
		atsd_region_unmap(&r);
		return err;
	}
	if (!(err = atsd_instance_start(t)) && !(err = atsd_instance_mark_time(t, "t0"))) {
		err = atsd_op_pass(&r, c->op, stride, &ns, NULL, &done);
		err2 = atsd_instance_mark_time(t, "t1");
		if (err)
			fprintf(stderr, "atsd: --breakdown: %s failed at call %" PRIu64 " of stride %s: %s\n",
				atsd_op_call(c->op), done + 1, atsd_format_size(stride, a, sizeof(a)), strerror(-err));
		err = err ? err : err2;
	}
	err2 = atsd_instance_stop(t, &lost);
	err = err ? err : err2;
	atsd_device_close(&dev);
	atsd_region_unmap(&r);
	if (!err && (len = atsd_instance_text(t, &text)) < 0)
		err = (int)len;
	if (err) {
		fprintf(stderr, "atsd: --breakdown: the trace instance: %s\n", strerror(-err));
		atsd_free(text);
		return err;
	}
	fprintf(out, "breakdown\tstride_bytes=%" PRIu64 "\tregion_bytes=%" PRIu64 "\tcalls=%" PRIu64 "\tlost=%" PRIu64
		"\top=%s\tcpu=%d\ttid=%d", stride, size, size / stride, lost, atsd_op_name(c->op), p->cpu, tid);
	if (atsd_plan_cells(p) > 1)
		fprintf(out, "\tcell=%d", cell);
	fputc('\n', out);
	write_trace(out, text);
	fflush(out);
	atsd_free(text);
	return 0;
}

int breakdown_run(FILE *out, const struct atsd_plan *p, struct atsd_breakdown_probe *bd)
{
	struct atsd_instance *t = NULL;
	struct atsd_bystanders *b = NULL;
	int32_t tid = (int32_t)syscall(SYS_gettid), cpus[ATSD_MAX_CPUS + 1], n, cell, s, nrunning = -1;
	uint64_t kb[ATSD_MAX_CPUS + 1], calls = 0;
	int err;

	if ((err = atsd_pin_self(p->cpu))) {  /* with --runs only the sub-runs were pinned */
		fprintf(stderr, "atsd: --breakdown: pinning to CPU %d: %s\n", p->cpu, strerror(-err));
		return err;
	}
	for (s = 0; s < p->nstrides; s++) {
		uint64_t k = atsd_breakdown_region(p->size, p->align, p->strides[s]) / p->strides[s];
		calls = k > calls ? k : calls;
	}
	atsd_breakdown_thread(bd, tid);
	n = atsd_breakdown_sizes(calls, p->cpu, p->bystander_cpus, p->nbystander_cpus, cpus, kb);
	if ((err = atsd_instance_make(&t, root)) ||
	    (err = atsd_instance_setup(t, bd->events, bd->nevents, cpus, kb, n, bd->clock))) {
		fprintf(stderr, "atsd: --breakdown: the trace instance: %s\n", strerror(-err));
		atsd_instance_close(&t);
		return err;
	}
	for (cell = 0; cell < atsd_plan_cells(p) && !interrupted && !err; cell++) {
		struct atsd_cell c;
		atsd_plan_cell(p, cell, &c);
		if (c.threads > 1 || c.workload >= 0)
			continue;  /* only the measuring thread's calls are cut into stages */
		if (!b || nrunning != c.bystanders) {
			atsd_bystanders_stop(&b, NULL);
			nrunning = c.bystanders;
			if ((err = atsd_bystanders_start(&b, p->bystander_cpus, c.bystanders))) {
				fprintf(stderr, "atsd: starting %d bystanders: %s\n", c.bystanders, strerror(-err));
				break;
			}
		}
		for (s = 0; s < p->nstrides && !interrupted && !err; s++)
			err = traced_pass(out, p, t, cell, &c, p->strides[s], tid);
	}
	atsd_bystanders_stop(&b, NULL);
	atsd_instance_close(&t);  /* removed whatever happened, SIGINT/SIGTERM held */
	return err;
}

void breakdown_remove(void)
{
	if (root[0])
		atsd_breakdown_device_remove(root);
}
