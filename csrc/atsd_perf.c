/*
 * atsd_perf.c - perf_event_open counters on a tracepoint (the flush counts, the device's kprobes),
 * system-wide where allowed, else this thread's.  See atsd.h.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>

struct atsd_counter {
	int n;
	int fds[];
};

static int perf_open(struct perf_event_attr *a, int pid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, -1, 0);
}

int atsd_counter_open(struct atsd_counter **out, uint64_t tracepoint_id,
		      const char *filter, const int32_t *cpus, int32_t ncpus,
		      int32_t *scope)
{
	struct perf_event_attr a;
	struct atsd_counter *c;
	int i, err = 0, system = 1;

	*out = NULL;
	if (ncpus < 1)
		return -EINVAL;
	c = calloc(1, sizeof(*c) + sizeof(int) * (size_t)ncpus);
	if (!c)
		return -ENOMEM;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_TRACEPOINT;
	a.size = sizeof(a);
	a.config = tracepoint_id;
	a.disabled = 0;

	for (i = 0; i < ncpus; i++) {
		int fd = perf_open(&a, -1, cpus[i]);
		if (fd < 0) {
			err = -errno;
			break;
		}
		c->fds[c->n++] = fd;
	}
	if (err) {
		/* Not allowed system-wide: count this thread's events only. */
		for (i = 0; i < c->n; i++)
			close(c->fds[i]);
		c->n = 0;
		system = 0;
		err = 0;
		c->fds[0] = perf_open(&a, 0, -1);
		if (c->fds[0] < 0) {
			err = -errno;
			free(c);
			return err;
		}
		c->n = 1;
	}
	if (filter) {
		for (i = 0; i < c->n; i++) {
			if (ioctl(c->fds[i], PERF_EVENT_IOC_SET_FILTER, filter)) {
				err = -errno;
				atsd_counter_close(&c);
				return err;
			}
		}
	}
	if (scope)
		*scope = system;
	*out = c;
	return 0;
}

int atsd_counter_read(struct atsd_counter *c, uint64_t *value)
{
	uint64_t sum = 0, v;
	int i;

	for (i = 0; i < c->n; i++) {
		if (read(c->fds[i], &v, sizeof(v)) != (ssize_t)sizeof(v))
			return errno ? -errno : -EIO;
		sum += v;
	}
	*value = sum;
	return 0;
}

int atsd_counter_close(struct atsd_counter **slot)
{
	struct atsd_counter *c;
	sigset_t old;
	int i;

	if (!slot || !*slot)
		return 0;
	atsd_hold_signals(&old);
	c = *slot;
	*slot = NULL;  /* before anything is closed: a second close finds nothing (no stray close(n)) */
	for (i = 0; i < c->n; i++)
		close(c->fds[i]);
	free(c);
	atsd_release_signals(&old);
	return 0;
}
