/*
 * atsd_loop.c - one cell's passes: the one pass loop of atsd and atsdbench run, and its records.
 * See atsd.h (struct atsd_loop) for the contract.
 *
 * What both front ends read around a pass is read here, in one order: the front end's hooks outside,
 * the thread's own state inside them, the measured pass innermost.  What only one front end has (run's
 * GPU touch, counters and bystander reads; atsd's counters and its sample line) is its hooks'.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank, as a latency percentile conventionally is: a latency one call had, never a value
 * between two calls (the p99 of 10 calls is the slowest, not 0.91 of the way from the 9th to it).
 * In integers: ceil(q x n / 100) with n = 100a + b is q x a + ceil(q x b / 100), which cannot
 * overflow, where q x n / 100 in doubles is not exact. */
int atsd_latency_percentiles(uint64_t *lat, uint64_t n, const int32_t *percent, int32_t count, uint64_t *out)
{
	int32_t i;

	if (!n)
		return -EINVAL;
	for (i = 0; i < count; i++)
		if (percent[i] < 1 || percent[i] > 100)
			return -EINVAL;
	qsort(lat, (size_t)n, sizeof(*lat), cmp_u64);
	for (i = 0; i < count; i++) {
		uint64_t q = (uint64_t)percent[i];
		uint64_t k = q * (n / 100) + (q * (n % 100) + 99) / 100;
		out[i] = lat[(k ? k : 1) - 1];
	}
	return 0;
}

/* Where a step failed: the loop stops there, its pass's record keeps the errno. */
static void failed(struct atsd_loop *l, struct atsd_pass_record *rec, int err, int32_t stage)
{
	rec->err = err;
	rec->stage = stage;
	l->err = err;
	l->stage = stage;
}

static void record_init(const struct atsd_loop *l, const struct atsd_cell *c, struct atsd_pass_record *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->round = l->round;
	rec->warmup = !!l->warmup_round;
	rec->cell = l->cell;
	rec->op = c->op;
	rec->threads = c->threads;
	rec->workload = c->workload;
	rec->device_touch_ns = -1;
	rec->self.steal_ticks = -1;
}

/* The untimed work before pass i: the restore (not before the first) and the device's touch. */
static int prepare(struct atsd_loop *l, const struct atsd_cell *c, int dirty, struct atsd_pass_record *rec)
{
	uint64_t touch_ns = 0;
	int err;

	if (dirty && c->workload < 0) {
		if ((err = atsd_op_restore(l->region, c->op, l->plan->retouch))) {
			failed(l, rec, err, ATSD_STAGE_RESTORE);
			return err;
		}
		if (l->threads && (err = atsd_threads_restore(l->threads, c->op, l->plan->retouch))) {
			failed(l, rec, err, ATSD_STAGE_TASKS_RESTORE);
			return err;
		}
	}
	if (l->device) {
		if ((err = atsd_device_touch(l->device, l->region, &touch_ns, NULL))) {
			failed(l, rec, err, ATSD_STAGE_TOUCH);
			return err;
		}
		rec->device_touch_ns = (int64_t)touch_ns;
	}
	return 0;
}

/* The measured pass, with the thread's own state read just outside it. */
static int measure(struct atsd_loop *l, const struct atsd_cell *c, struct atsd_pass_record *rec,
		   struct atsd_thread_times *times, uint64_t *lat)
{
	const struct atsd_plan *p = l->plan;
	struct atsd_self_state s0, s1;
	uint64_t ns = 0, done = 0;
	int err, j;

	atsd_self_state(p->cpu, 0, &s0);
	if (c->workload >= 0)
		err = atsd_workload_pass(l->threads, c->workload, p->size, times, &ns);
	else if (l->threads)
		err = atsd_threads_pass(l->threads, l->region, c->op, rec->stride_bytes, lat, times, &ns);
	else
		err = atsd_op_pass(l->region, c->op, rec->stride_bytes, &ns, lat, &done);
	atsd_self_state(p->cpu, 1, &s1);
	atsd_self_delta(&s0, &s1, &rec->self);
	if (c->workload >= 0 || l->threads) {
		for (j = 0; j < c->threads; j++)
			done += times[j].done;
		rec->times = times;
		rec->ntimes = c->threads;
	}
	rec->ns = ns;
	if (c->workload >= 0)
		rec->calls = rec->loops = done;
	else
		rec->calls = p->size / rec->stride_bytes;
	if (err) {
		rec->done = done;
		failed(l, rec, err, ATSD_STAGE_PASS);
		return err;
	}
	if (lat) {
		static const int32_t percent[] = {50, 90, 99, 100};
		rec->latency = !atsd_latency_percentiles(lat, rec->calls, percent, 4, rec->lat_ns);
		rec->call_ns = lat;
	}
	return 0;
}

int32_t atsd_cell_passes(struct atsd_loop *l, const struct atsd_pass_hooks *hooks, struct atsd_pass_record *out,
			 int32_t cap)
{
	const struct atsd_plan *p = l->plan;
	struct atsd_cell c;
	struct atsd_thread_times *times = NULL;
	uint64_t *order = NULL, *lat = NULL;
	int32_t n, i, count = 0;
	int dirty = 0;

	l->err = l->stage = l->stopped = 0;
	l->failed = -1;
	if (!p || atsd_plan_cell(p, l->cell, &c) || p->nstrides < 1)
		return -EINVAL;
	n = (p->warmup + p->reps) * p->nstrides;
	if (cap < n || (c.workload < 0 && !l->region) || ((c.workload >= 0 || c.threads > 1) && !l->threads))
		return -EINVAL;
	order = malloc(sizeof(*order) * (size_t)n);
	times = calloc((size_t)c.threads, sizeof(*times));
	if (p->latency && c.workload < 0)
		lat = malloc(sizeof(*lat) * (size_t)(p->size / p->strides[0]));
	if (!order || !times || (p->latency && c.workload < 0 && !lat)) {
		free(order);
		free(times);
		free(lat);
		return -ENOMEM;
	}
	atsd_round_order(p, l->round * atsd_plan_cells(p) + l->cell, order, (uint64_t)n);
	for (i = 0; i < n; i++) {
		struct atsd_pass_record *rec = &out[i];
		int stop;

		record_init(l, &c, rec);
		rec->rep = i / p->nstrides;
		rec->order = l->first + i;
		rec->warmup |= rec->rep < p->warmup;
		rec->stride_bytes = order[i];
		if (prepare(l, &c, dirty, rec)) {
			l->failed = i;
			break;
		}
		if (hooks->before && hooks->before(hooks->ctx, rec)) {
			l->stopped = 1;
			break;
		}
		dirty = 1;
		if (measure(l, &c, rec, times, lat)) {
			l->failed = i;
			if (hooks->after)
				hooks->after(hooks->ctx, rec);
			rec->times = NULL;
			rec->call_ns = NULL;
			break;
		}
		count++;
		stop = hooks->after ? hooks->after(hooks->ctx, rec) : 0;
		rec->times = NULL;
		rec->call_ns = NULL;
		if (stop) {
			l->stopped = 1;
			break;
		}
	}
	free(order);
	free(times);
	free(lat);
	return count;
}

int32_t atsd_cell_verify(struct atsd_loop *l, struct atsd_verifier *v, int32_t op, const int32_t *invalidators,
			 int32_t ninvalidators, const struct atsd_pass_hooks *hooks, struct atsd_pass_record *out,
			 int32_t cap)
{
	const struct atsd_plan *p = l->plan;
	struct atsd_cell c;
	int32_t s, count = 0;
	int err;

	l->err = l->stage = l->stopped = 0;
	l->failed = -1;
	if (!p || atsd_plan_cell(p, l->cell, &c) || !l->region || !v || cap < p->nstrides)
		return -EINVAL;
	c.op = op;
	for (s = 0; s < p->nstrides; s++) {
		struct atsd_pass_record *rec = &out[s];

		record_init(l, &c, rec);
		rec->kind = ATSD_RECORD_VERIFY;
		rec->workload = -1;
		rec->stride_bytes = p->strides[s];
		/* every page's translation live again, whatever --no-retouch */
		if ((err = atsd_op_restore(l->region, op, 1))) {
			failed(l, rec, err, ATSD_STAGE_RESTORE);
			l->failed = s;
			break;
		}
		err = atsd_verify_pass(v, l->region, op, rec->stride_bytes, invalidators, ninvalidators, &rec->verify);
		rec->ns = rec->verify.ns;
		rec->calls = rec->verify.calls;
		if (err) {
			failed(l, rec, err, ATSD_STAGE_PASS);
			l->failed = s;
			break;
		}
		count++;
		if (hooks->after && hooks->after(hooks->ctx, rec)) {
			l->stopped = 1;
			break;
		}
	}
	return count;
}
