/*
 * atsd_instance.c - a private tracefs instance, and run --breakdown's rules for one.  See atsd.h.
 *
 * Compiled into both atsd and atsdbench's core: `atsd --breakdown` and `atsdbench run --breakdown`
 * record the same events, with the same filters, buffers and clock, in an instance made, filled and
 * removed by this code (atsdbench's POWER flush counts use the instance too, measure/tracebuf.py),
 * so a trace cut into stages by analysis/breakdown.py means the same whichever front end took it.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PREFIX "atsdbench-"    /* both front ends: either removes the other's stale instances */
#define EVENT_BYTES 64         /* one breakdown event in the ring buffer, rounded up */
#define EVENTS_PER_CALL 16     /* enter, exit, flushes, csd pairs, IPIs, with room */
#define MARK "atsdbench"       /* analysis/breakdown.py's MARK */

struct atsd_instance {
	char path[4096];
	int32_t nevents;
	int32_t on;
	struct atsd_trace_event events[ATSD_MAX_TRACE_EVENTS];
};


static int write_text(const char *path, const char *text)
{
	size_t len = strlen(text);
	ssize_t n;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), err = 0;

	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
	return err;
}

static int write_at(const struct atsd_instance *t, const char *name, const char *text)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", t->path, name);
	return write_text(path, text);
}

/* A tracefs file whole (they say size 0): malloc'd, NUL-ended, or NULL with errno set. */
static char *read_all(const char *path, size_t *len)
{
	char *text = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	n = getdelim(&text, &cap, 0, f);
	fclose(f);
	if (n < 0) {
		free(text);
		text = strdup("");
		n = 0;
	}
	if (len)
		*len = (size_t)n;
	return text;
}

static uint64_t field(const char *text, const char *key)
{
	const char *p = text;
	size_t n = strlen(key);

	for (; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ':')
			return strtoull(p + n + 1, NULL, 10);
	return 0;
}

uint64_t atsd_trace_lost(const char *stats)
{
	/* "overrun" when a buffer overwrites, "dropped events" when it does not */
	return stats ? field(stats, "overrun") + field(stats, "dropped events") : 0;
}

void atsd_instance_remove_stale(const char *root)
{
	char path[4200];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/instances", root);
	if (!(dir = opendir(path)))
		return;
	while ((d = readdir(dir))) {
		const char *pid = d->d_name + strlen(PREFIX);
		char proc[64];
		if (strncmp(d->d_name, PREFIX, strlen(PREFIX)) || !*pid || strspn(pid, "0123456789") != strlen(pid))
			continue;
		snprintf(proc, sizeof(proc), "/proc/%s", pid);
		if (access(proc, F_OK) && errno == ENOENT) {
			snprintf(path, sizeof(path), "%s/instances/%s", root, d->d_name);
			rmdir(path);
		}
	}
	closedir(dir);
}

/* Instances this process holds (made, not yet closed): one named after our pid that we do not hold
 * was left by an earlier process whose pid ours reuses (an exec after a crash, pid_max wrapped). */
static int held;

int atsd_instance_make(struct atsd_instance **slot, const char *root)
{
	struct atsd_instance *t;

	if (!slot || !root)
		return -EINVAL;
	atsd_instance_remove_stale(root);
	if (!(t = calloc(1, sizeof(*t))))
		return -ENOMEM;
	snprintf(t->path, sizeof(t->path), "%s/instances/%s%ld", root, PREFIX, (long)getpid());
	if (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
		rmdir(t->path);  /* a stale one of our pid; an instance with a reader open stays (EBUSY) */
	if (mkdir(t->path, 0755)) {  /* tracefs fills it: buffers, options, events */
		int err = -errno;
		free(t);
		return err;
	}
	__atomic_add_fetch(&held, 1, __ATOMIC_ACQ_REL);
	*slot = t;
	return 0;
}

const char *atsd_instance_path(const struct atsd_instance *t)
{
	return t ? t->path : "";
}

int atsd_instance_setup(struct atsd_instance *t, const struct atsd_trace_event *events, int32_t nevents,
			const int32_t *cpus, const uint64_t *kb, int32_t ncpus, const char *clock)
{
	char name[512], value[32];
	int32_t i;
	int err;

	if (nevents < 0 || nevents > ATSD_MAX_TRACE_EVENTS)
		return -EINVAL;
	memcpy(t->events, events, sizeof(*events) * (size_t)nevents);
	t->nevents = nevents;
	if ((err = write_at(t, "tracing_on", "0")) || (err = write_at(t, "options/overwrite", "0")))
		return err;
	snprintf(value, sizeof(value), "%d", ATSD_INSTANCE_SMALL_KB);  /* a CPU the run does not use */
	if ((err = write_at(t, "buffer_size_kb", value)))
		return err;
	if (clock && *clock && (err = write_at(t, "trace_clock", clock)))
		return err;
	for (i = 0; i < ncpus; i++) {
		snprintf(name, sizeof(name), "per_cpu/cpu%d/buffer_size_kb", cpus[i]);
		snprintf(value, sizeof(value), "%" PRIu64, kb[i]);
		if ((err = write_at(t, name, value)))
			return err;
	}
	for (i = 0; i < nevents; i++) {
		if (!t->events[i].filter[0])
			continue;
		snprintf(name, sizeof(name), "events/%s/filter", t->events[i].event);
		if ((err = write_at(t, name, t->events[i].filter)))
			return err;
	}
	return 0;
}

static int enable(struct atsd_instance *t, int on)
{
	char name[512];
	int32_t i;
	int err, first = 0;

	for (i = 0; i < t->nevents; i++) {
		snprintf(name, sizeof(name), "events/%s/enable", t->events[i].event);
		if ((err = write_at(t, name, on ? "1" : "0")) && !first)
			first = err;
		if (err && on)
			return err;
	}
	return first;
}

int atsd_instance_start(struct atsd_instance *t)
{
	int err;

	if ((err = write_at(t, "trace", "")))  /* empties every CPU's buffer and its counts */
		return err;
	if ((err = enable(t, 1)))
		return err;
	if ((err = write_at(t, "tracing_on", "1")))
		return err;
	t->on = 1;
	return 0;
}

int atsd_instance_mark(struct atsd_instance *t, const char *text)
{
	char line[512];

	snprintf(line, sizeof(line), "%s\n", text);
	return write_at(t, "trace_marker", line);
}

int atsd_instance_mark_time(struct atsd_instance *t, const char *name)
{
	struct timespec ts;
	char line[128];

	/* CLOCK_MONOTONIC (Python's time.monotonic_ns): the trace clock's tick in ns, from two marks */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(line, sizeof(line), "%s %s %" PRIu64, MARK, name,
		 (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
	return atsd_instance_mark(t, line);
}

int atsd_instance_stop(struct atsd_instance *t, uint64_t *lost)
{
	int err = write_at(t, "tracing_on", "0"), err2 = enable(t, 0);
	char path[4400];  /* the instance, a CPU's directory, a file */
	struct dirent *d;
	DIR *dir;

	t->on = 0;
	if (lost)
		*lost = 0;
	snprintf(path, sizeof(path), "%s/per_cpu", t->path);
	if (!(dir = opendir(path)))
		return err ? err : err2 ? err2 : -errno;
	while ((d = readdir(dir))) {
		char *stats;
		if (strncmp(d->d_name, "cpu", 3) || !d->d_name[3])
			continue;
		snprintf(path, sizeof(path), "%s/per_cpu/%s/stats", t->path, d->d_name);
		if ((stats = read_all(path, NULL))) {
			if (lost)
				*lost += atsd_trace_lost(stats);
			free(stats);
		}
	}
	closedir(dir);
	return err ? err : err2;
}

static int by_number(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

int64_t atsd_instance_text(struct atsd_instance *t, char **out)
{
	int32_t cpus[ATSD_MAX_CPUS];
	int n = 0, i;
	char path[4200], *buf = NULL;
	size_t len = 0, cap = 0;
	struct dirent *d;
	DIR *dir;

	*out = NULL;
	snprintf(path, sizeof(path), "%s/per_cpu", t->path);
	if (!(dir = opendir(path)))
		return -errno;
	while ((d = readdir(dir)) && n < ATSD_MAX_CPUS)
		if (!strncmp(d->d_name, "cpu", 3) && d->d_name[3] && strspn(d->d_name + 3, "0123456789") ==
		    strlen(d->d_name + 3))
			cpus[n++] = atoi(d->d_name + 3);
	closedir(dir);
	qsort(cpus, (size_t)n, sizeof(cpus[0]), by_number);
	for (i = 0; i < n; i++) {
		char *stats, *text, *line, *next;
		size_t tlen;
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", t->path, cpus[i]);
		stats = read_all(path, NULL);
		if (!stats || !field(stats, "entries")) {
			free(stats);
			continue;
		}
		free(stats);
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace", t->path, cpus[i]);
		if (!(text = read_all(path, &tlen))) {
			free(buf);
			return -errno;
		}
		for (line = text; line < text + tlen; line = next) {
			size_t l;
			next = memchr(line, '\n', (size_t)(text + tlen - line));
			next = next ? next + 1 : text + tlen;
			l = (size_t)(next - line);
			if (*line == '#')
				continue;
			if (len + l + 2 > cap) {
				char *grown;
				cap = (len + l + 2) * 2;
				if (!(grown = realloc(buf, cap))) {
					free(buf);
					free(text);
					return -ENOMEM;
				}
				buf = grown;
			}
			memcpy(buf + len, line, l);
			len += l;
			if (buf[len - 1] != '\n')
				buf[len++] = '\n';
		}
		free(text);
	}
	if (!buf && !(buf = calloc(1, 1)))
		return -ENOMEM;
	buf[len] = 0;
	*out = buf;
	return (int64_t)len;
}

void atsd_free(void *p)
{
	free(p);
}

int atsd_instance_close(struct atsd_instance **slot)
{
	struct atsd_instance *t;
	sigset_t old;

	if (!slot || !*slot)
		return 0;
	atsd_hold_signals(&old);
	t = *slot;
	*slot = NULL;  /* before anything is released: a second close finds nothing */
	if (t->on)
		write_at(t, "tracing_on", "0");
	enable(t, 0);
	rmdir(t->path);
	free(t);
	__atomic_sub_fetch(&held, 1, __ATOMIC_ACQ_REL);
	atsd_release_signals(&old);
	return 0;
}

const char *atsd_instance_problem(const char *root, int32_t err, const char *lockdown, char *out, uint64_t len)
{
	char mode[64] = "";
	const char *p, *q;

	if (!lockdown) {  /* securityfs: "none integrity [confidentiality]" */
		char *text = read_all("/sys/kernel/security/lockdown", NULL);
		if (text && (p = strchr(text, '[')) && (q = strchr(p, ']')))
			snprintf(mode, sizeof(mode), "%.*s", (int)(q - p - 1), p + 1);
		free(text);
	} else {
		snprintf(mode, sizeof(mode), "%s", lockdown);
	}
	snprintf(out, (size_t)len, "no trace instance in %s/instances: %s%s", root, strerror(err < 0 ? -err : err),
		 !strcmp(mode, "confidentiality") ? " (kernel lockdown=confidentiality closes tracefs; boot with "
		 "lockdown=integrity or none)" : "");
	return out;
}

/* ---- run --breakdown's events ---- */

static const struct {
	const char *event, *family;
} optional[] = {
	{"tlb/tlb_flush", "tlb"}, {"csd/csd_function_entry", "csd"}, {"csd/csd_function_exit", "csd"},
	{"ipi/ipi_send_cpu", "ipi"}, {"ipi/ipi_send_cpumask", "ipi"}, {"powerpc/tlbie", "tlbie"},
	{"powerpc/hcall_entry", "hcall"}, {"powerpc/hcall_exit", "hcall"},
};
/* a raw counter where there is one (ns clocks print µs, which resolve no single call) */
static const char *const clocks[] = {"x86-tsc", "ppc-tb", "mono"};

static int exists(const char *root, const char *event)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/events/%s/format", root, event);
	return !stat(path, &st);
}

static int listed(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p;

	for (p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

static void add_word(char *list, size_t cap, const char *word)
{
	size_t used = strlen(list);

	if (!listed(list, word))
		snprintf(list + used, cap - used, "%s%s", used ? "," : "", word);
}

static int add_event(struct atsd_breakdown_probe *p, const char *event, const char *family, const char *filter)
{
	struct atsd_trace_event *e;

	if (p->nevents >= ATSD_MAX_TRACE_EVENTS)
		return -E2BIG;
	e = &p->events[p->nevents++];
	memset(e, 0, sizeof(*e));
	snprintf(e->event, sizeof(e->event), "%s", event);
	snprintf(e->family, sizeof(e->family), "%s", family);
	snprintf(e->filter, sizeof(e->filter), "%s", filter ? filter : "");
	return 0;
}

const char *atsd_hcall_filter(char *out, uint64_t len)
{
	struct atsd_power_column cols[16];
	int32_t i, n = atsd_power_columns(cols, 16);
	size_t used = 0;

	out[0] = 0;
	for (i = 0; i < n; i++)
		if (cols[i].hash && used < len)
			used += (size_t)snprintf(out + used, (size_t)len - used, "%sopcode == %d", used ? " || " : "",
						 cols[i].opcode);
	return out;
}

int atsd_breakdown_probe(const char *root, const int32_t *ops, int32_t nops, struct atsd_breakdown_probe *p)
{
	char event[64], dir[4200], hcalls[ATSD_FILTER_MAX], *offered;
	int32_t i, j, power;
	int err;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < nops; i++) {
		const char *op = atsd_op_name(ops[i]);
		if (!op)
			return -EINVAL;
		for (j = 0; j < 2; j++) {
			snprintf(event, sizeof(event), "syscalls/sys_%s_%s", j ? "exit" : "enter", op);
			if (!exists(root, event)) {
				snprintf(p->absent, sizeof(p->absent), "syscalls:sys_%s_%s", j ? "exit" : "enter", op);
				return -ENOENT;
			}
			if ((err = add_event(p, event, "syscall", NULL)))  /* the thread's filter: atsd_breakdown_thread */
				return err;
		}
	}
	snprintf(dir, sizeof(dir), "%s/events/powerpc", root);
	{
		struct stat st;
		power = !stat(dir, &st) && S_ISDIR(st.st_mode);
	}
	p->power = power;
	atsd_hcall_filter(hcalls, sizeof(hcalls));
	for (i = 0; i < (int32_t)(sizeof(optional) / sizeof(optional[0])); i++) {
		const char *family = optional[i].family;
		int pw = !strcmp(family, "tlbie") || !strcmp(family, "hcall");
		if (pw && !power)
			continue;
		if (!strcmp(family, "tlb") && power)
			continue;  /* POWER has tlb:tlb_flush and never fires it */
		if (!exists(root, optional[i].event)) {
			char name[64];
			snprintf(name, sizeof(name), "%s", optional[i].event);
			*strchr(name, '/') = ':';
			add_word(p->missing, sizeof(p->missing), name);
			continue;
		}
		if ((err = add_event(p, optional[i].event, family, !strcmp(family, "hcall") ? hcalls : NULL)))
			return err;
		add_word(p->have, sizeof(p->have), family);
	}
	snprintf(dir, sizeof(dir), "%s/trace_clock", root);
	offered = read_all(dir, NULL);
	for (i = 0; offered && i < (int32_t)(sizeof(clocks) / sizeof(clocks[0])); i++) {
		const char *c = offered;
		size_t l = strlen(clocks[i]);
		for (; (c = strstr(c, clocks[i])); c += l)
			if ((c == offered || c[-1] == ' ' || c[-1] == '[') && (c[l] == ' ' || c[l] == ']' || c[l] == '\n' ||
									   !c[l]))
				break;
		if (c) {
			snprintf(p->clock, sizeof(p->clock), "%s", clocks[i]);
			break;
		}
	}
	free(offered);
	return 0;
}

int atsd_breakdown_thread(struct atsd_breakdown_probe *p, int32_t tid)
{
	int32_t i;

	for (i = 0; i < p->nevents; i++)
		if (!strcmp(p->events[i].family, "syscall"))
			snprintf(p->events[i].filter, sizeof(p->events[i].filter), "common_pid == %d", tid);
	return 0;
}

uint64_t atsd_breakdown_region(uint64_t size, uint64_t align, uint64_t stride)
{
	uint64_t unit = stride > align ? stride : align, want;

	if (!stride || !unit)
		return 0;
	want = (stride * ATSD_BREAKDOWN_CALLS + unit - 1) / unit * unit;
	return want < size ? want : size;
}

int32_t atsd_breakdown_sizes(uint64_t calls, int32_t cpu, const int32_t *bystander_cpus, int32_t nbystanders,
			     int32_t *cpus, uint64_t *kb)
{
	uint64_t mine = calls * EVENTS_PER_CALL * EVENT_BYTES / 1024;
	int32_t i, n = 0;

	if (mine < 1024)
		mine = 1024;
	cpus[n] = cpu;
	kb[n++] = mine;
	for (i = 0; i < nbystanders; i++) {  /* their remote flushes only */
		if (bystander_cpus[i] == cpu)
			continue;
		cpus[n] = bystander_cpus[i];
		kb[n++] = mine / 2;
	}
	return n;
}
