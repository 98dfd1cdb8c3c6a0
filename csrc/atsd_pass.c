/*
 * atsd_pass.c - atsd's side of the core's pass loop (atsd_loop.c): a cell's region, tasks and device
 * made and released around the loop, and atsd's hooks on it.  Before a pass: the flush counters
 * opened on a warm-up repetition and read, the IPI count read; after it: both read again and the
 * pass's `sample` (or `verify`) line written and flushed at once, so a sub-run's parent has it before
 * the next pass, and the numbers of the table after the run added up.
 */
#define _GNU_SOURCE
#include "atsd_main.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* What atsd's hooks write to and read around one cell's passes. */
struct cell_hooks {
	FILE *out;
	const struct atsd_plan *p;
	struct atsd_cell c;
	int32_t run;
	const uint64_t *canary;     /* the round's: compute ns, chase ns */
	struct counting *k;
	struct summary *t;
	int device;                 /* the passes have a device (its fields on each line) */
	const int32_t *inv;         /* verify passes: the invalidators' CPUs */
	int32_t ninv;
	int64_t ipi0;
};

/* A workload's read-back that failed (-EBADMSG): main's exit 3 names it, after the save. */
static uint64_t readback_loops;
static int32_t readback_workload;

void say_readback(void)
{
	char why[512];

	fprintf(stderr, "atsd: %s\n", atsd_workload_failure(why, sizeof(why), readback_workload, 0, readback_loops,
							  -EBADMSG));
}

static void write_latency(FILE *out, const uint64_t v[4])
{
	fprintf(out, "\tlat_p50_ns=%" PRIu64 "\tlat_p90_ns=%" PRIu64 "\tlat_p99_ns=%" PRIu64 "\tlat_max_ns=%" PRIu64,
		v[0], v[1], v[2], v[3]);
}

/* --threads: each thread's loop time, CPU time and involuntary switches, comma lists in thread order. */
static void write_thread_times(FILE *out, const struct atsd_thread_times *times, int n)
{
	int i;

	fputs("\tthread_ns=", out);
	for (i = 0; i < n; i++)
		fprintf(out, "%s%" PRIu64, i ? "," : "", times[i].t1 - times[i].t0);
	fputs("\tthread_cpu_ns=", out);
	for (i = 0; i < n; i++)
		fprintf(out, "%s%" PRIu64, i ? "," : "", times[i].cpu_ns);
	fputs("\tthread_preempted=", out);
	for (i = 0; i < n; i++)
		fprintf(out, "%s%" PRId64, i ? "," : "", times[i].preempted);
}

static void write_cpus(FILE *out, const char *name, const int32_t *cpus, int32_t n)
{
	int32_t i;

	fprintf(out, "\t%s=", name);
	for (i = 0; i < n; i++)
		fprintf(out, "%s%d", i ? "," : "", cpus[i]);
}

static int32_t before(void *ctx, struct atsd_pass_record *rec)
{
	struct cell_hooks *x = ctx;

	if (interrupted)
		return 1;
	/* flushes counted on warm-up repetitions only: an attached tracepoint slows every flush */
	rec->traced = rec->rep < x->p->warmup && x->k->n > 0;
	if (rec->traced && counting_open(x->k))
		rec->traced = 0;  /* a pass without counts, not a failed run */
	if (rec->traced)
		counting_read(x->k, NULL, NULL);
	x->ipi0 = tlb_ipis();
	return 0;
}

/* A verify pass's line, its checks summed for the loud line at the end. */
static void write_verify(struct cell_hooks *x, const struct atsd_pass_record *rec)
{
	const struct atsd_verify_result *v = &rec->verify;
	struct stride_stats *st = summary_at(x->t, x->p, rec->cell, rec->stride_bytes);
	int32_t chk[ATSD_MAX_CPUS];
	FILE *out = x->out;

	fprintf(out, "verify\tround=%d\twarmup=%d\top=%s\tstride_bytes=%" PRIu64 "\tthreads=%d", rec->round,
		rec->warmup, atsd_op_name(rec->op), rec->stride_bytes, rec->threads);
	write_cpus(out, "invalidator_cpus", x->inv, x->ninv);
	write_cpus(out, "checker_cpus", chk, atsd_verify_checkers(x->p->verify_cpus, x->p->nverify_cpus, x->inv, x->ninv,
								  chk));
	fprintf(out, "\tcalls=%" PRIu64 "\tchecks=%" PRIu64 "\tfaults=%" PRIu64 "\tzeros=%" PRIu64 "\tstale=%" PRIu64
		"\theld=%" PRIu64 "\tns=%" PRIu64, v->calls, v->checks, v->faults, v->zeros, v->stale, v->held, v->ns);
	if (x->device)
		fprintf(out, "\tdevice_checks=%" PRIu64 "\tdevice_failed=%" PRIu64 "\tdevice_zeros=%" PRIu64
			"\tdevice_stale=%" PRIu64, v->device_checks, v->device_failed, v->device_zeros, v->device_stale);
	if (x->p->runs > 1)
		fprintf(out, "\trun=%d", x->run);
	if (atsd_plan_cells(x->p) > 1)
		fprintf(out, "\tcell=%d", rec->cell);
	fputc('\n', out);
	fflush(out);
	st->verify_checks += v->checks;
	st->verify_stale += v->stale;
	st->device_checks += v->device_checks;
	st->device_stale += v->device_stale;
	st->verify_op = rec->op;
}

/* A timed pass's line: what the loop recorded, the IPIs and (traced) the flush counts around it,
 * the round's canary; its rate and time added to the table's numbers. */
static void write_sample(struct cell_hooks *x, const struct atsd_pass_record *rec, int64_t ipi1)
{
	const struct atsd_plan *p = x->p;
	const struct atsd_cell *c = &x->c;
	struct stride_stats *st = summary_at(x->t, p, rec->cell, rec->stride_bytes);
	int axes = atsd_plan_cells(p) > 1, has_ipis = x->ipi0 >= 0 && ipi1 >= x->ipi0, workload = c->workload >= 0;
	FILE *out = x->out;

	fprintf(out, "sample\tround=%d\trep=%d\torder=%d\tstride_bytes=%" PRIu64 "\twarmup=%d\tns=%" PRIu64
		"\tcalls=%" PRIu64, rec->round, rec->rep, rec->order, rec->stride_bytes, rec->warmup, rec->ns, rec->calls);
	if (workload)
		fprintf(out, "\tloops=%" PRIu64, rec->loops);
	fprintf(out, "\ttraced=%d", rec->traced);
	if (p->runs > 1)
		fprintf(out, "\trun=%d", x->run);
	if (axes)
		fprintf(out, "\tcell=%d\tbystanders=%d\tpages=%s", rec->cell, c->bystanders, page_names[c->pages]);
	if (axes && !workload && p->nops > 1)
		fprintf(out, "\top=%s", atsd_op_name(c->op));
	if (axes && workload && p->nworkloads > 1)
		fprintf(out, "\tworkload=%s", atsd_workload_name(c->workload));
	if (axes && p->nthreads > 1)
		fprintf(out, "\tthreads=%d", c->threads);
	if (axes && !workload && p->ndevices > 1)
		fprintf(out, "\tdevice=%s", atsd_device_name(c->device));
	if (rec->device_touch_ns >= 0)
		fprintf(out, "\tdevice_touch_ns=%" PRId64, rec->device_touch_ns);
	if (rec->times)
		write_thread_times(out, rec->times, rec->ntimes);
	if (has_ipis)
		fprintf(out, "\tipis=%" PRId64, ipi1 - x->ipi0);
	fprintf(out, "\tpreempted=%" PRId64 "\tcpu_ns=%" PRId64, rec->self.preempted, rec->self.cpu_ns);
	if (rec->self.steal_ticks >= 0)
		fprintf(out, "\tsteal_ticks=%" PRId64, rec->self.steal_ticks);
	fprintf(out, "\tcanary_compute_ns=%" PRIu64 "\tcanary_chase_ns=%" PRIu64, x->canary[0], x->canary[1]);
	if (rec->traced) {
		counting_read(x->k, out, st->sums);
		counting_close(x->k);
		st->traced_calls += rec->calls;
	}
	if (rec->latency)
		write_latency(out, rec->lat_ns);
	fputc('\n', out);
	fflush(out);
	if (!rec->warmup && st->n < x->t->cap && rec->ns && rec->calls) {
		/* a workload's rate is run's: the pages zapped, loops x page size / ns */
		st->gbps[st->n] = (double)(workload ? rec->loops * rec->stride_bytes : p->size) / (double)rec->ns;
		/* a task's calls: a workload's loops shared out, an op's strides in whole parts */
		st->us[st->n++] = (double)rec->ns / 1e3 / (workload ? (double)rec->loops / (double)c->threads :
							   (double)(rec->calls / (uint64_t)c->threads));
	}
	if (!rec->warmup && !rec->traced && has_ipis) {	/* IPIs of the timed passes, as run's */
		st->ipis += ipi1 - x->ipi0;
		st->ipi_calls += rec->calls;
	}
}

static int32_t after(void *ctx, struct atsd_pass_record *rec)
{
	struct cell_hooks *x = ctx;
	int64_t ipi1;

	if (rec->kind == ATSD_RECORD_VERIFY) {
		write_verify(x, rec);
		return interrupted;
	}
	ipi1 = tlb_ipis();
	if (rec->err) {
		counting_close(x->k);
		return 1;
	}
	write_sample(x, rec, ipi1);
	return interrupted;
}

/* What stopped a cell's loop, in one line on stderr (a failed read-back: said after the save). */
static void say_failure(const struct atsd_loop *l, const struct atsd_cell *c, const struct atsd_pass_record *rec)
{
	char a[32], why[512];
	const char *stride = atsd_format_size(rec->stride_bytes, a, sizeof(a));

	if (rec->kind == ATSD_RECORD_VERIFY && l->stage == ATSD_STAGE_RESTORE)
		fprintf(stderr, "atsd: restoring the region for a verify pass of stride %s: %s\n", stride, strerror(-l->err));
	else if (rec->kind == ATSD_RECORD_VERIFY && l->err == -ETIMEDOUT)  /* no call failed: a checker was late */
		fprintf(stderr, "atsd: verify pass: a checker missed call %" PRIu64 " of stride %s in time "
			"(its CPU taken or stopped?)\n", rec->verify.calls, stride);
	else if (rec->kind == ATSD_RECORD_VERIFY)
		fprintf(stderr, "atsd: verify pass: %s failed at call %" PRIu64 " of stride %s: %s\n",
			atsd_op_call(rec->op), rec->verify.calls, stride, strerror(-l->err));
	else if (l->stage == ATSD_STAGE_TOUCH)
		fprintf(stderr, "atsd: the device's touch (HMM_DMIRROR_READ) of the region: %s\n", strerror(-l->err));
	else if (l->stage == ATSD_STAGE_PASS && c->workload >= 0 && l->err == -EBADMSG) {
		readback_loops = rec->loops;
		readback_workload = c->workload;
	} else if (l->stage == ATSD_STAGE_PASS && c->workload >= 0)
		fprintf(stderr, "atsd: %s\n", atsd_workload_failure(why, sizeof(why), c->workload, c->threads, rec->loops,
								  l->err));
	else if (l->stage == ATSD_STAGE_PASS)
		fprintf(stderr, "atsd: %s failed at call %" PRIu64 " of stride %s: %s\n", atsd_op_call(c->op), rec->done + 1,
			stride, strerror(-l->err));
}

/* The loop (or its verify sibling, v not NULL) over one cell with atsd's hooks: 0 or -errno (said). */
static int loop(struct atsd_loop *l, struct cell_hooks *x, struct atsd_verifier *v, int32_t verify_op)
{
	const struct atsd_plan *p = l->plan;
	struct atsd_pass_hooks h = {x, before, after};
	int32_t cap = (p->warmup + p->reps) * p->nstrides, n;
	struct atsd_pass_record *recs = calloc((size_t)cap, sizeof(*recs));

	if (!recs)
		return -ENOMEM;
	n = v ? atsd_cell_verify(l, v, verify_op, x->inv, x->ninv, &h, recs, cap) : atsd_cell_passes(l, &h, recs, cap);
	if (n >= 0 && l->failed >= 0)
		say_failure(l, &x->c, &recs[l->failed]);
	free(recs);
	return n < 0 ? n : l->err;
}

/* --verify: after the cell's timed passes (on their region, no timed pass beside a checker), one
 * verify pass per stride of op, checked from every other allowed CPU (csrc/atsd_verify.c), each a
 * `verify` line, with its bystanders stopped as run stops them: spinning on the checkers' CPUs they
 * would take turns with them; they are back before the next timed pass. */
static int verify_cell(struct atsd_loop *l, struct cell_hooks *x, int32_t op, struct atsd_bystanders **b)
{
	const struct atsd_plan *p = l->plan;
	struct atsd_verifier *v = NULL;
	int err, again;

	x->inv = x->c.threads > 1 ? p->thread_cpus : &p->cpu;
	x->ninv = x->c.threads > 1 ? x->c.threads : 1;
	if (x->c.bystanders)
		atsd_bystanders_stop(b, NULL);
	if ((err = atsd_verify_start(&v, p->verify_cpus, p->nverify_cpus))) {
		fprintf(stderr, "atsd: starting checkers on %d CPUs: %s\n", p->nverify_cpus, strerror(-err));
	} else {
#ifdef ATSD_TEST_DOUBLES
		/* A test build only (tests/cli/test_workload.py): every check stale, as tests/measure/test_verify.py's
		 * control does through the core. */
		if (getenv("ATSD_TEST_VERIFY_SKIP_CALL"))
			atsd_verify_control(v, 1);
#endif
		atsd_verify_device(v, l->device);
		err = loop(l, x, v, op);
		atsd_verify_stop(&v);
	}
	if (x->c.bystanders && (again = atsd_bystanders_start(b, p->bystander_cpus, x->c.bystanders))) {
		fprintf(stderr, "atsd: starting %d bystanders: %s\n", x->c.bystanders, strerror(-again));
		if (!err)
			err = again;
	}
	return err;
}

static int start_tasks(struct atsd_threads **th, const struct atsd_plan *p, const struct atsd_cell *c, uint64_t size,
		       int32_t pages)
{
	int err = atsd_threads_start(th, p->thread_cpus, c->threads, p->tasks, size, p->align, pages);

	if (err)
		fprintf(stderr, "atsd: starting %d %s: %s\n", c->threads, p->tasks ? "processes" : "threads",
			atsd_strerror(err));
	return err;
}

/* A --workload cell's round: will-it-scale's loop in the cell's tasks, fresh every round; then its
 * verify passes of the loop's call on a region of their own. */
static int workload_cell(struct atsd_loop *l, struct cell_hooks *x, struct atsd_bystanders **b)
{
	const struct atsd_plan *p = l->plan;
	struct atsd_threads *th = NULL;
	struct atsd_region r;
	int err;

	if ((err = start_tasks(&th, p, &x->c, 0, ATSD_PAGES_BASE)))
		return err;
	l->threads = th;
	err = loop(l, x, NULL, 0);
	atsd_threads_stop(&th);
	l->threads = NULL;
	if (err || interrupted || !p->verify)
		return err;
	memset(&r, 0, sizeof(r));
	if ((err = atsd_region_map(&r, atsd_verify_workload_size(x->c.threads), p->align, ATSD_PAGES_BASE)))
		fprintf(stderr, "atsd: mapping the verify region: %s\n", strerror(-err));
	else {
		l->region = &r;
		err = verify_cell(l, x, ATSD_OP_MADVISE, b);
	}
	atsd_region_unmap(&r);
	return err;
}

int run_cell(FILE *out, const struct atsd_plan *p, int32_t run, int32_t round, int warmup_round, int32_t cell,
	     const struct atsd_cell *c, int first, const uint64_t canary[2], struct counting *k, struct summary *t,
	     struct atsd_bystanders **b)
{
	struct cell_hooks x = {out, p, *c, run, canary, k, t, 0, NULL, 0, -1};
	struct atsd_loop l;
	struct atsd_region r;
	struct atsd_threads *th = NULL;
	struct atsd_device *dev = NULL;
	int err;

	memset(&l, 0, sizeof(l));
	l.plan = p;
	l.cell = cell;
	l.round = round;
	l.warmup_round = warmup_round;
	l.first = first;
	if (c->workload >= 0)
		return workload_cell(&l, &x, b);
	/* the tasks before the region: a forked one (--tasks processes) would share it copy-on-write */
	if (c->threads > 1 && (err = start_tasks(&th, p, c, p->size, c->pages)))
		return err;
	memset(&r, 0, sizeof(r));
	if ((err = atsd_region_map(&r, p->size, p->align, c->pages)))
		goto out;
	/* the device's notifier only for this cell's passes: a --device none cell runs without one */
	if (c->device == ATSD_DEVICE_HMM && (err = atsd_device_open(&dev, NULL))) {
		fprintf(stderr, "atsd: opening %s: %s\n", atsd_device_path(), strerror(-err));
		goto out;
	}
	l.region = &r;
	l.threads = th;
	l.device = dev;
	x.device = dev != NULL;
	err = loop(&l, &x, NULL, 0);
	if (!err && !interrupted && p->verify)
		err = verify_cell(&l, &x, c->op, b);
out:
	atsd_device_close(&dev);
	atsd_threads_stop(&th);
	atsd_region_unmap(&r);
	return err;
}
