/*
 * atsd_bystanders.c - pinning, and the bystanders: threads spinning on other CPUs so this mm stays
 * live there and every flush needs a remote shootdown.  See atsd.h.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int pin(pthread_t t, int32_t cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -EINVAL;
	CPU_ZERO(&set);
	CPU_SET((size_t)cpu, &set);
	return -pthread_setaffinity_np(t, sizeof(set), &set);
}

int atsd_pin_self(int32_t cpu)
{
	return pin(pthread_self(), cpu);
}

/* One slot per bystander, each on its own cache lines so the spinners do not
 * bounce a shared line (and so add no coherence traffic to the measurement). */
struct atsd_slot {
	volatile uint64_t spins;
	int32_t cpu;
	int32_t err;
	pthread_t thread;
	struct atsd_bystanders *owner;
} __attribute__((aligned(ATSD_CACHELINE)));

struct atsd_bystanders {
	volatile int stop;
	int ready;              /* start barrier, under lock */
	int n;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct atsd_slot *slots;
};

static void *bystander(void *arg)
{
	struct atsd_slot *s = arg;
	struct atsd_bystanders *b = s->owner;

	s->err = pin(pthread_self(), s->cpu);
	s->spins++;  /* running on its CPU before it says so: the barrier opens on a live bystander */
	pthread_mutex_lock(&b->lock);
	b->ready++;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	while (!__atomic_load_n(&b->stop, __ATOMIC_RELAXED))
		s->spins++;
	return NULL;
}

int atsd_bystanders_spins(struct atsd_bystanders *b, uint64_t *spins, uint64_t *cpu_ns, int32_t n)
{
	int i;

	if (!b || n < 0 || n > b->n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		clockid_t cid;
		struct timespec ts;

		spins[i] = __atomic_load_n(&b->slots[i].spins, __ATOMIC_RELAXED);
		if (!cpu_ns)
			continue;
		int err = pthread_getcpuclockid(b->slots[i].thread, &cid);  /* returns its error, errno untouched */
		if (err)
			return -err;
		if (clock_gettime(cid, &ts))
			return errno ? -errno : -EINVAL;
		cpu_ns[i] = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
	return 0;
}

int atsd_bystanders_stop(struct atsd_bystanders **slot, uint64_t *spins)
{
	struct atsd_bystanders *b;
	sigset_t old;
	int i;

	if (!slot || !*slot)
		return 0;
	atsd_hold_signals(&old);
	b = *slot;
	*slot = NULL;  /* before anything is freed: a second stop finds nothing to free */
	__atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < b->n; i++) {
		pthread_join(b->slots[i].thread, NULL);
		if (spins)
			spins[i] = b->slots[i].spins;
	}
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	free(b->slots);
	free(b);
	atsd_release_signals(&old);
	return 0;
}

int atsd_bystanders_start(struct atsd_bystanders **out, const int32_t *cpus, int32_t n)
{
	struct atsd_bystanders *b;
	sigset_t all, old;
	int i, err = 0;

	*out = NULL;
	if (n < 0)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	if (n && posix_memalign((void **)&b->slots, ATSD_CACHELINE, sizeof(*b->slots) * (size_t)n)) {
		free(b);
		return -ENOMEM;
	}
	if (n)
		memset(b->slots, 0, sizeof(*b->slots) * (size_t)n);
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	/* Bystanders inherit a mask with every signal blocked: a process signal goes to the measuring
	 * thread, and never interrupts a spinner (which would leave its CPU for the handler). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 0; i < n; i++) {
		b->slots[i].cpu = cpus[i];
		b->slots[i].owner = b;
		err = -pthread_create(&b->slots[i].thread, NULL, bystander, &b->slots[i]);
		if (err)
			break;
		b->n = i + 1;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_lock(&b->lock);
	while (b->ready < b->n)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
	for (i = 0; !err && i < b->n; i++)
		err = b->slots[i].err;
	if (err) {
		atsd_bystanders_stop(&b, NULL);
		return err;
	}
	*out = b;
	return 0;
}
