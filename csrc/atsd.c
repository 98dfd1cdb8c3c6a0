/*
 * atsd.c - the timing core.  See atsd.h for the contract.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#define ATSD_CACHELINE 128  /* POWER lines are 128 bytes; enough for x86 and arm64 */

void atsd_hold_signals(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

void atsd_release_signals(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

int atsd_abi_version(void)
{
	return ATSD_ABI_VERSION;
}

int64_t atsd_page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	return ps > 0 ? (int64_t)ps : -EINVAL;
}

int64_t atsd_hugepage_size(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	int64_t kb = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		long long v;
		if (sscanf(line, "Hugepagesize: %lld kB", &v) == 1) {
			kb = v > 0 ? (int64_t)v * 1024 : -ENOENT;
			break;
		}
	}
	fclose(f);
	return kb;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(ATSD_CLOCK, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void touch(const struct atsd_region *r)
{
	volatile uint64_t *w;
	uint64_t off;

	for (off = 0; off < r->size; off += r->page_size) {
		w = (volatile uint64_t *)(void *)(r->addr + off);
		*w = off;
	}
}

/* The backing advice of base and THP regions (hugetlb needs none): 0 or -1 with errno. */
#define ATSD_MAX_NODES 1024

/* MPOL_BIND to r->mem_node - 1 (numaif.h's values, without libnuma): 0 or -1 with errno. */
static int bind_node(const struct atsd_region *r)
{
	unsigned long mask[ATSD_MAX_NODES / (8 * sizeof(unsigned long))];
	size_t node;

	if (r->mem_node <= 0)
		return 0;
	node = (size_t)(r->mem_node - 1);
#ifdef SYS_mbind
	memset(mask, 0, sizeof(mask));
	mask[node / (8 * sizeof(unsigned long))] = 1UL << (node % (8 * sizeof(unsigned long)));
	/* maxnode is one more than the bits the kernel reads (it counts down first) */
	return (int)syscall(SYS_mbind, r->addr, r->size, 2 /* MPOL_BIND */, mask, ATSD_MAX_NODES + 1, 0);
#else
	(void)mask;
	(void)node;
	errno = ENOSYS;
	return -1;
#endif
}

static int advise(const struct atsd_region *r)
{
	if (bind_node(r))
		return -1;
	if (r->pages == ATSD_PAGES_HUGETLB)
		return 0;
	return madvise(r->addr, r->size, r->pages == ATSD_PAGES_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

int atsd_region_map(struct atsd_region *r, uint64_t size, uint64_t align, int32_t pages)
{
	return atsd_region_map_node(r, size, align, pages, -1);
}

int atsd_region_map_node(struct atsd_region *r, uint64_t size, uint64_t align, int32_t pages, int32_t node)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	int64_t ps = atsd_page_size();
	uint8_t *p, *start;
	uint64_t len, head, tail;

	memset(r, 0, sizeof(*r));
	if (ps < 0)
		return (int)ps;
	if (node < -1 || node >= ATSD_MAX_NODES)
		return -EINVAL;
	if (size == 0 || size % (uint64_t)ps || align == 0 || (align & (align - 1)))
		return -EINVAL;
	if (pages < ATSD_PAGES_BASE || pages > ATSD_PAGES_HUGETLB)
		return -EINVAL;
	if (align < (uint64_t)ps)
		align = (uint64_t)ps;

	if (pages == ATSD_PAGES_HUGETLB) {
		int64_t hps = atsd_hugepage_size();
		if (hps < 0)
			return (int)hps;
		if (size % (uint64_t)hps)
			return -EINVAL;
		flags |= MAP_HUGETLB;
		if (align < (uint64_t)hps)
			align = (uint64_t)hps;
	}

	/* Over-map and trim so the region starts on an `align` boundary.  hugetlb pages are not
	 * spent on the slack: the range is reserved without them, then exactly `size` is mapped over
	 * its aligned part, so a pool with exactly size / huge page size free pages is enough. */
	len = size + align;
	p = mmap(NULL, len, pages == ATSD_PAGES_HUGETLB ? PROT_NONE : PROT_READ | PROT_WRITE,
		 pages == ATSD_PAGES_HUGETLB ? MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE : flags, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	start = (uint8_t *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	head = (uint64_t)(start - p);
	tail = len - head - size;
	if (pages == ATSD_PAGES_HUGETLB &&
	    mmap(start, size, PROT_READ | PROT_WRITE, flags | MAP_FIXED, -1, 0) == MAP_FAILED) {
		int err = -errno;
		munmap(p, len);
		return err;
	}
	if (head)
		munmap(p, head);
	if (tail)
		munmap(start + size, tail);
	p = start;
	len = size;
	r->map_addr = p;
	r->map_size = len;
	r->addr = start;
	r->size = size;
	r->page_size = (uint64_t)ps;
	r->pages = pages;
	r->mem_node = node + 1;

	if (advise(r)) {
		int err = -errno;
		atsd_region_unmap(r);
		return err;
	}
	touch(r);
	return 0;
}

int atsd_region_remap(struct atsd_region *r)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | (r->pages == ATSD_PAGES_HUGETLB ? MAP_HUGETLB : 0);

	if (!r->addr)
		return -EINVAL;
	/* MAP_FIXED over the region's own range: what is there is ours (the rest of the region, or the
	 * reservation the munmap pass left), so nothing else is replaced. */
	if (mmap(r->addr, r->size, PROT_READ | PROT_WRITE, flags, -1, 0) == MAP_FAILED)
		return -errno;
	return advise(r) ? -errno : 0;
}

int atsd_region_restore(struct atsd_region *r, int32_t retouch)
{
	if (!r->addr)
		return -EINVAL;
	if (mprotect(r->addr, r->size, PROT_READ | PROT_WRITE))
		return -errno;
	if (retouch)
		touch(r);
	return 0;
}

int atsd_region_unmap(struct atsd_region *r)
{
	uint8_t *addr = r->map_addr;
	uint64_t len = r->map_size;
	sigset_t old;
	int err = 0;

	atsd_hold_signals(&old);
	r->addr = NULL;  /* before the munmap: a second unmap finds nothing to unmap */
	r->map_addr = NULL;
	r->size = r->map_size = 0;
	if (addr && munmap(addr, len))
		err = -errno;
	atsd_release_signals(&old);
	return err;
}

static int pin(pthread_t t, int32_t cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -EINVAL;
	CPU_ZERO(&set);
	CPU_SET((size_t)cpu, &set);
	return -pthread_setaffinity_np(t, sizeof(set), &set);
}

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
		if (pthread_getcpuclockid(b->slots[i].thread, &cid) || clock_gettime(cid, &ts))
			return -errno ? -errno : -EINVAL;
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

#include <float.h>
#include <langinfo.h>

/*
 * strtod's value for the plain decimals data files are made of, without strtod's arbitrary-precision
 * arithmetic (80% of the reader's instructions): a whole token [+-]D[.D][(e|E)[+-]D] of at most 19
 * digits, whose digits M are at most 2^53 and whose decimal exponent e is within +-22, is M * 10^e
 * or M / 10^-e: one IEEE operation on two exact doubles, rounded once, as strtod rounds (Clinger's
 * fast path).  Returns 0 for anything else (hex, inf, nan, more digits, a stray byte), which strtod
 * then reads as before.
 */
static int read_decimal(const char *s, double *out)
{
#if FLT_EVAL_METHOD == 0
	static const double pow10[] = {
		1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
		1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
	};
	uint64_t m = 0;
	int neg = 0, digits = 0, scale = 0, e = 0, eneg = 0, edigits = 0;
	double d;

	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	for (; *s >= '0' && *s <= '9'; s++, digits++)
		m = m * 10 + (uint64_t)(*s - '0');  /* wraps past 19 digits: refused below */
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++, digits++, scale++)
			m = m * 10 + (uint64_t)(*s - '0');
	if (digits == 0 || digits > 19 || m > (UINT64_C(1) << 53))
		return 0;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			eneg = *s++ == '-';
		for (; *s >= '0' && *s <= '9' && edigits < 4; s++, edigits++)
			e = e * 10 + (*s - '0');
		if (edigits == 0)
			return 0;
	}
	if (*s != '\0')
		return 0;
	e = (eneg ? -e : e) - scale;
	if (e < -22 || e > 22)
		return 0;
	d = e < 0 ? (double)m / pow10[-e] : (double)m * pow10[e];
	*out = neg ? -d : d;
	return 1;
#else
	(void)s;
	(void)out;
	return 0;
#endif
}

int64_t atsd_read_column(const char *buf, uint64_t len, int32_t column, const char *delim,
			 double *out, uint64_t cap, int64_t *bad_line)
{
	char line[8192];  /* BUFSIZ on glibc: ministat's fgets buffer */
	uint64_t pos = 0, n = 0;
	int64_t lineno = 0;
	/* the fast path spells the decimal point '.', as strtod does in the C locale (ministat's) */
	const int plain = strcmp(nl_langinfo(RADIXCHAR), ".") == 0;

	while (pos < len) {
		size_t k = 0, i;
		char *t, *p, *save = NULL;
		int col;
		double d;

		/* fgets: up to sizeof(line) - 1 bytes, through the first newline */
		const char *nl;
		k = len - pos < sizeof(line) - 1 ? (size_t)(len - pos) : sizeof(line) - 1;
		nl = memchr(buf + pos, '\n', k);
		if (nl)
			k = (size_t)(nl - (buf + pos)) + 1;
		memcpy(line, buf + pos, k);
		pos += k;
		line[k] = '\0';
		lineno++;
		i = strlen(line);
		while (i > 0 && isspace((unsigned char)line[i - 1]))
			line[--i] = '\0';
		for (col = 1, t = strtok_r(line, delim, &save); t != NULL && *t != '#';
		     col++, t = strtok_r(NULL, delim, &save)) {
			if (col == column)
				break;
		}
		if (t == NULL || *t == '#')
			continue;
		if (!plain || !read_decimal(t, &d)) {
			d = strtod(t, &p);
			if (p != NULL && *p != '\0') {
				*bad_line = lineno;
				return -EINVAL;
			}
		}
		if (n == cap)
			return -ENOSPC;
		out[n++] = d;
	}
	return (int64_t)n;
}

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
	t0 = now_ns();
	for (i = 0; i < compute; i++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	t1 = now_ns();
	for (i = 0; i < chase; i++)
		p = c->next[p * 8];
	t2 = now_ns();
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
