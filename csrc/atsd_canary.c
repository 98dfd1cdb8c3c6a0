/*
 * atsd_canary.c - the host-drift canary: user-space work no kernel patch can change, timed before
 * each round.  See atsd.h.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

struct atsd_canary {
	uint64_t n;             /* slots */
	uint64_t *next;         /* next[i * 8]: the slot after slot i (one slot per 64-byte line) */
	uint64_t sink;          /* what the loops computed: kept so the compiler cannot drop them */
};

int atsd_canary_new(struct atsd_canary **out, uint64_t bytes, uint64_t seed)
{
	struct atsd_canary *c;
	uint64_t i, x = seed | 1, *order;

	*out = NULL;
	if (bytes < 128)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->n = bytes / 64;
	c->next = aligned_alloc(64, c->n * 64);
	order = malloc(c->n * sizeof(*order));
	if (!c->next || !order) {
		free(c->next);
		free(order);
		free(c);
		return -ENOMEM;
	}
	for (i = 0; i < c->n; i++)
		order[i] = i;
	for (i = c->n - 1; i > 0; i--) {  /* Sattolo: one cycle through every slot */
		uint64_t j, t;
		x = x * 6364136223846793005u + 1442695040888963407u;
		j = (x >> 33) % i;
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < c->n; i++)
		c->next[order[i] * 8] = order[(i + 1) % c->n];
	free(order);
	*out = c;
	return 0;
}

int atsd_canary_run(struct atsd_canary *c, uint64_t compute, uint64_t chase, uint64_t *compute_ns,
		    uint64_t *chase_ns)
{
	uint64_t t0, t1, t2, x = c ? c->sink | 1 : 1, p = 0, i;

	if (!c)
		return -EINVAL;
	t0 = atsd_now_ns();
	for (i = 0; i < compute; i++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	t1 = atsd_now_ns();
	for (i = 0; i < chase; i++)
		p = c->next[p * 8];
	t2 = atsd_now_ns();
	c->sink = x ^ p;
	*compute_ns = t1 - t0;
	*chase_ns = t2 - t1;
	return 0;
}

int atsd_canary_free(struct atsd_canary **slot)
{
	struct atsd_canary *c;
	sigset_t old;

	if (!slot || !*slot)
		return 0;
	atsd_hold_signals(&old);
	c = *slot;
	*slot = NULL;
	free(c->next);
	free(c);
	atsd_release_signals(&old);
	return 0;
}
