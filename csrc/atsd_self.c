/*
 * atsd_self.c - what disturbs the measuring thread, read just outside a pass: its involuntary
 * switches, its CPU time and its CPU's steal ticks.  See atsd.h (struct atsd_self_state).
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* One /proc/stat line: CPU `cpu`'s steal ticks if it is that CPU's line, else -1 (also for a kernel
 * too old to have the column, or a field that is not a whole number). */
static int64_t steal_of_line(const char *line, int32_t cpu)
{
	char name[24];
	const char *q;
	int i;

	if (cpu < 0)
		return -1;
	snprintf(name, sizeof(name), "cpu%d ", (int)cpu);
	if (strncmp(line, name, strlen(name)))
		return -1;
	q = line + strlen(name);
	for (i = 0; i < 8; i++) {  /* user nice system idle iowait irq softirq steal */
		char *end;
		unsigned long long v;

		while (*q == ' ')
			q++;
		if (!isdigit((unsigned char)*q))
			return -1;
		errno = 0;
		v = strtoull(q, &end, 10);
		if (errno || (*end && *end != ' ' && *end != '\n'))
			return -1;
		if (i == 7)
			return v > INT64_MAX ? -1 : (int64_t)v;
		q = end;
	}
	return -1;
}

int64_t atsd_steal_ticks(const char *proc_stat, int32_t cpu)
{
	const char *line = proc_stat;

	while (line && *line) {
		int64_t v = steal_of_line(line, cpu);
		const char *nl = strchr(line, '\n');

		if (v >= 0)
			return v;
		line = nl ? nl + 1 : NULL;
	}
	return -1;
}

static int64_t read_steal(int32_t cpu)
{
	char line[512];
	int64_t v = -1;
	FILE *f = fopen("/proc/stat", "re");

	if (!f)  /* no /proc (a bare initramfs): no steal, not an error */
		return -1;
	while (v < 0 && fgets(line, sizeof(line), f))
		v = steal_of_line(line, cpu);
	fclose(f);
	return v;
}

int atsd_self_state(int32_t cpu, int32_t after, struct atsd_self_state *out)
{
	struct rusage ru;
	struct timespec ts;
	int err = 0;

	out->preempted = 0;
	out->cpu_ns = 0;
	out->steal_ticks = after ? -1 : read_steal(cpu);
	if (getrusage(RUSAGE_THREAD, &ru) || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		err = -errno;
	else {
		out->preempted = ru.ru_nivcsw;
		out->cpu_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	}
	if (after)
		out->steal_ticks = read_steal(cpu);
	return err;
}

void atsd_self_delta(const struct atsd_self_state *before, const struct atsd_self_state *after,
		     struct atsd_self_state *delta)
{
	delta->preempted = after->preempted - before->preempted;
	delta->cpu_ns = after->cpu_ns - before->cpu_ns;
	delta->steal_ticks = before->steal_ticks >= 0 && after->steal_ticks >= before->steal_ticks ?
			     after->steal_ticks - before->steal_ticks : -1;
}
