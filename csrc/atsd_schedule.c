/*
 * atsd_schedule.c - the order and the timing of a run, the same in both front ends: the stride order
 * of a round, the cells and their order, and the schedule of --gap's and --spread's sleeps.
 * See atsd.h (atsd_round_order, struct atsd_cell).
 */
#include "atsd.h"

#include <errno.h>
#include <string.h>

/* splitmix64: the stride-order generator (same seed, same order in both front ends). */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

int atsd_round_order(const struct atsd_plan *p, int32_t round, uint64_t *out, uint64_t cap)
{
	uint64_t state = p->seed * 1000003ULL + (uint64_t)(uint32_t)round, n = 0;
	int rep, i;

	if (p->nstrides < 1 || p->warmup < 0 || p->reps < 1 ||
	    (uint64_t)(p->warmup + p->reps) * (uint64_t)p->nstrides > cap)
		return -ENOSPC;
	for (rep = 0; rep < p->warmup + p->reps; rep++) {
		uint64_t *order = out + n;
		memcpy(order, p->strides, sizeof(order[0]) * (size_t)p->nstrides);
		for (i = p->nstrides - 1; i > 0; i--) {  /* Fisher-Yates */
			int j = (int)(splitmix64(&state) % (uint64_t)(i + 1));
			uint64_t t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		n += (uint64_t)p->nstrides;
	}
	return (int)n;
}

int atsd_plan_cells(const struct atsd_plan *p)
{
	/* in 64 bits and held at INT32_MAX: eight axes of 16 values are 2^32, which an int takes as 0 */
	const int32_t counts[] = {p->nworkloads ? p->nworkloads : 1, p->nops, p->nthreads, p->nbystanders, p->npages,
				  p->ngpu, p->ndevices, p->nceiling};
	int64_t n = 1;

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		n *= counts[i] > 0 ? counts[i] : 0;
		if (n > INT32_MAX)
			return INT32_MAX;
	}
	return (int)n;
}

int atsd_plan_cell(const struct atsd_plan *p, int32_t index, struct atsd_cell *out)
{
	int32_t i = index;

	if (index < 0 || index >= atsd_plan_cells(p))
		return -EINVAL;
	out->ceiling = p->ceiling[i % p->nceiling];
	i /= p->nceiling;
	out->device = p->devices[i % p->ndevices];
	i /= p->ndevices;
	out->gpu = p->gpu[i % p->ngpu];
	i /= p->ngpu;
	out->pages = p->pages[i % p->npages];
	i /= p->npages;
	out->bystanders = p->bystanders[i % p->nbystanders];
	i /= p->nbystanders;
	out->threads = p->threads[i % p->nthreads];
	i /= p->nthreads;
	out->op = p->ops[i % p->nops];
	i /= p->nops;
	out->workload = p->nworkloads ? p->workloads[i] : -1;
	return 0;
}

int atsd_cell_order(const struct atsd_plan *p, int32_t round, int32_t *out, int32_t cap)
{
	/* Its own stream (the seed's bits inverted), so adding cells leaves the stride order alone. */
	uint64_t state = ~p->seed * 1000003ULL + (uint64_t)(uint32_t)round;
	int i, n = atsd_plan_cells(p);

	if (n > cap)
		return -ENOSPC;
	for (i = 0; i < n; i++)
		out[i] = i;
	for (i = n - 1; i > 0; i--) {
		int j = (int)(splitmix64(&state) % (uint64_t)(i + 1));
		int32_t t = out[i];
		out[i] = out[j];
		out[j] = t;
	}
	return n;
}

double atsd_sub_run_start(int32_t first, double previous, double gap, double now)
{
	return first || previous + gap < now ? now : previous + gap;
}

double atsd_round_start(double first_start, int32_t r, double spread, int32_t rounds)
{
	return spread > 0 && rounds > 0 && r > 0 ? first_start + r * spread / rounds : first_start;
}

double atsd_least_sleep(int32_t runs, double gap, int32_t rounds, double spread)
{
	double start = 0.0, end = 0.0;
	int32_t i;

	for (i = 0; i < runs; i++) {
		start = atsd_sub_run_start(i == 0, start, gap, end);
		end = atsd_round_start(start, rounds - 1, spread, rounds);  /* its passes take no time */
	}
	return end;
}
