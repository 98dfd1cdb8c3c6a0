/*
 * atsd_check.c - the plan checked against the host (struct atsd_host) and what depends on the host
 * resolved: the measuring CPU, the tasks' and bystanders' CPUs, the checkers', the alignment, a
 * seed.  One step a function, in the order a plan's first problem is named; every refusal is one
 * sentence, the same in both front ends.  See atsd.h (atsd_plan_check).
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define fail atsd_plan_fail
#define fmt_size atsd_format_size

static int has_device(const struct atsd_plan *p, int32_t kind)
{
	int i;

	for (i = 0; i < p->ndevices; i++)
		if (p->devices[i] == kind)
			return 1;
	return 0;
}

/* --cpu auto: a CPU with no housekeeping first (isolated, nohz_full); else one that is neither CPU 0
 * nor its SMT siblings (CPU 0 takes IRQs, timers and RCU work, which land inside passes); else the
 * first allowed. */
static void choose_cpu(struct atsd_plan *p, const struct atsd_host *h)
{
	int i;

	for (i = 0; i < h->naffinity; i++) {
		if (h->quiet[i]) {
			p->cpu = h->affinity[i];
			snprintf(p->cpu_reason, sizeof(p->cpu_reason), "auto: isolated or nohz_full");
			return;
		}
	}
	for (i = 0; i < h->naffinity; i++) {
		if (h->affinity[i] != 0 && (h->cpu0_core < 0 || h->core[i] != h->cpu0_core)) {
			p->cpu = h->affinity[i];
			snprintf(p->cpu_reason, sizeof(p->cpu_reason), "auto: not CPU 0 nor its SMT siblings");
			return;
		}
	}
	p->cpu = h->affinity[0];
	snprintf(p->cpu_reason, sizeof(p->cpu_reason), "auto: no CPU allowed but CPU 0 and its siblings");
}

static void fmt_cpulist(const int32_t *cpus, int n, char *buf, size_t len)
{
	size_t used = 0;
	int i = 0, j;

	buf[0] = 0;
	while (i < n && used < len) {
		for (j = i; j + 1 < n && cpus[j + 1] == cpus[j] + 1; j++)
			;
		used += (size_t)snprintf(buf + used, len - used, i == j ? "%s%d" : "%s%d-%d", used ? "," : "",
					 cpus[i], cpus[j]);
		i = j + 1;
	}
}

static int max_of(const int32_t *v, int n)
{
	int i, m = 0;

	for (i = 0; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

static int has_pages(const struct atsd_plan *p, int kind)
{
	int i;

	for (i = 0; i < p->npages; i++)
		if (p->pages[i] == kind)
			return 1;
	return 0;
}

/* Bystanders go to CPUs on other cores first, SMT siblings last: a sibling shares the core's TLB. */
static int choose_bystanders(struct atsd_plan *p, const struct atsd_host *h, int want)
{
	int32_t used_core[ATSD_MAX_CPUS];
	int i, k, nused = 0, n = 0, pass, cpu_core = -1;

	for (i = 0; i < h->naffinity; i++)
		if (h->affinity[i] == p->cpu)
			cpu_core = h->core[i];
	if (cpu_core >= 0)
		used_core[nused++] = cpu_core;
	for (pass = 0; pass < 2 && n < want; pass++) {
		for (i = 0; i < h->naffinity && n < want; i++) {
			int c = h->affinity[i], core = h->core[i], dup = 0, taken = 0;
			if (c == p->cpu)
				continue;
			for (k = 0; k < n; k++)
				taken |= p->bystander_cpus[k] == c;
			if (taken)
				continue;
			for (k = 0; core >= 0 && k < nused; k++)
				dup |= used_core[k] == core;
			if (pass == 0 && dup)
				continue;
			p->bystander_cpus[n++] = c;
			if (core >= 0 && !dup && nused < ATSD_MAX_CPUS)
				used_core[nused++] = core;
		}
	}
	p->nbystander_cpus = n;
	return n;
}

static uint64_t random_seed(void)
{
	uint32_t s;

	if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s))
		s = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 16);
	return s & 0x7fffffffu;
}

/* A file workload's tasks each make a file of its unit in atsd_workload_dir(): that folder must be
 * there, writable and have room for every task's (the largest --threads), or the run is refused now,
 * naming it, rather than failing (or dying of SIGBUS) at its first pass. */
static int workload_room(const struct atsd_plan *p, uint64_t unit, const char *name, char *msg, uint64_t msglen)
{
	const char *dir = atsd_workload_dir();
	struct statvfs st;
	char a[32], b[32], c[32];
	int i, tasks = 1;
	uint64_t need, room;

	for (i = 0; i < p->nthreads; i++)
		if (p->threads[i] > tasks)
			tasks = p->threads[i];
	if (statvfs(dir, &st) || access(dir, W_OK | X_OK))
		return fail(-errno, msg, msglen, "--workload %s makes its files in TMPDIR (%s): %s", name, dir,
			    strerror(errno));
	need = unit * (uint64_t)tasks;
	room = (uint64_t)st.f_bavail * st.f_frsize;
	if (room < need)
		return fail(-ENOSPC, msg, msglen, "--workload %s needs %s in TMPDIR (%s), a %s file a task: it has %s "
			    "free", name, fmt_size(need, a, sizeof(a)), dir, fmt_size(unit, b, sizeof(b)),
			    fmt_size(room & ~1023ULL, c, sizeof(c)));
	return 0;
}


/* --workload: will-it-scale's loop, as its source runs it: one base page a loop, its own unit of
 * mapping, nothing to put back between passes.  What it cannot take is refused, never ignored. */
static int check_workload(struct atsd_plan *p, const struct atsd_host *h, char *msg, uint64_t msglen)
{
	static const char *const fixed[] = {"op", "strides", "latency", "retouch", "pages", "gpu", "placements",
					     "mem-node", "device"};
	uint64_t unit = 0;
	char a[32], b[32];
	int i, err;

	for (i = 0; i < (int)(sizeof(fixed) / sizeof(fixed[0])); i++)
		if (atsd_plan_given(p, fixed[i]) && (strcmp(fixed[i], "gpu") || p->ngpu > 1 || p->gpu[0] >= 0) &&
		    (strcmp(fixed[i], "device") || p->ndevices > 1 || p->devices[0] != ATSD_DEVICE_NONE) &&
		    (strcmp(fixed[i], "pages") || p->npages > 1 || p->pages[0] != ATSD_PAGES_BASE))
			return fail(-EINVAL, msg, msglen, "--workload runs will-it-scale's loop as it is (one page a loop): "
				    "it takes no --%s", !strcmp(fixed[i], "retouch") ? "no-retouch" : fixed[i]);
	for (i = 0; i < p->nworkloads; i++)
		if (atsd_workload_unit(p->workloads[i]) > unit)
			unit = atsd_workload_unit(p->workloads[i]);
	if (p->size % unit)
		return fail(-EINVAL, msg, msglen, "--workload: size %s is not a multiple of %s, what %s maps "
			    "at a time", fmt_size(p->size, a, sizeof(a)), fmt_size(unit, b, sizeof(b)),
			    unit == atsd_workload_unit(ATSD_WORKLOAD_TLB_FLUSH2) ? "tlb_flush2" : "tlb_flush1/3");
	if (unit < h->page_size)
		return fail(-EINVAL, msg, msglen, "--workload: the page size %s is larger than the unit %s",
			    fmt_size(h->page_size, a, sizeof(a)), fmt_size(unit, b, sizeof(b)));
	p->strides[0] = h->page_size;  /* a loop's call: one page */
	p->nstrides = 1;
	for (i = 0; i < p->nworkloads; i++)
		if (p->workloads[i] != ATSD_WORKLOAD_TLB_FLUSH2 &&
		    (err = workload_room(p, atsd_workload_unit(p->workloads[i]), atsd_workload_name(p->workloads[i]), msg,
					 msglen)))
			return err;
	return 0;
}

/* The strides and the size against the page they are made of (the huge page with --pages hugetlb),
 * and hugetlb's pool; *unit gets that page's size. */
static int check_strides(const struct atsd_plan *p, const struct atsd_host *h, uint64_t *unit, char *msg,
			 uint64_t msglen)
{
	char unit_name[64], a[32], b[32];
	int i, hugetlb = has_pages(p, ATSD_PAGES_HUGETLB);

	*unit = h->page_size;
	snprintf(unit_name, sizeof(unit_name), "the page size (%s)", fmt_size(*unit, a, sizeof(a)));
	if (hugetlb) {
		if (!h->hugepage_size)
			return fail(-EINVAL, msg, msglen, "--pages hugetlb: this kernel has no hugetlb pages "
				    "(no Hugepagesize in /proc/meminfo)");
		*unit = h->hugepage_size;
		snprintf(unit_name, sizeof(unit_name), "the huge page size (%s)", fmt_size(*unit, a, sizeof(a)));
	}
	for (i = 0; i < p->nstrides; i++) {
		uint64_t s = p->strides[i];
		if (s % *unit)
			return fail(-EINVAL, msg, msglen, "stride %s is not a multiple of %s", fmt_size(s, a, sizeof(a)),
				    unit_name);
		if (s > p->size)
			return fail(-EINVAL, msg, msglen, "stride %s is larger than the size %s",
				    fmt_size(s, a, sizeof(a)), fmt_size(p->size, b, sizeof(b)));
		if (p->size % s)
			return fail(-EINVAL, msg, msglen, "size %s is not a multiple of stride %s",
				    fmt_size(p->size, a, sizeof(a)), fmt_size(s, b, sizeof(b)));
	}
	if (p->size % *unit)
		return fail(-EINVAL, msg, msglen, "size %s is not a multiple of %s", fmt_size(p->size, a, sizeof(a)),
			    unit_name);
	if (hugetlb) {
		uint64_t need = p->size / *unit;
		int64_t free_pages = h->hugepages_free < 0 ? 0 : h->hugepages_free;
		if ((uint64_t)free_pages < need)
			return fail(-ENOMEM, msg, msglen, "--pages hugetlb: the pool has %" PRId64 " free %s pages, %"
				    PRIu64 " needed (sysctl vm.nr_hugepages)", free_pages, fmt_size(*unit, a, sizeof(a)),
				    need);
	}
	return 0;
}

/* The region in base or THP pages, and the canary's buffer (timed before every round); with
 * --placements two regions at least: the next one is mapped while the last is still held. */
static int check_memory(const struct atsd_plan *p, const struct atsd_host *h, char *msg, uint64_t msglen)
{
	uint64_t one = p->nworkloads ? 0 : !has_pages(p, ATSD_PAGES_HUGETLB) || p->npages > 1 ? p->size : 0;
	int twice = p->placements > 1 && one;
	char a[32], c[32];

	/* compared a term at a time: size x 2 + the canary wrapped past 2^64 for a size of 2^63 */
	if (h->mem_available >= 0 && (one > (uint64_t)h->mem_available / (twice ? 2 : 1) ||
				      one * (twice ? 2 : 1) + ATSD_CANARY_BYTES > (uint64_t)h->mem_available))
		return fail(-ENOMEM, msg, msglen, "%s%s%s%sthe canary's %s %s more than MemAvailable (%.1f GiB)", one ? "size " : "", one ? fmt_size(one, a, sizeof(a)) : "",
			    twice ? " twice (--placements)" : "", one ? " and " : "", fmt_size(ATSD_CANARY_BYTES, c, sizeof(c)),
			    one ? "are" : "is", (double)h->mem_available / (double)(1ULL << 30));
	return 0;
}

/* The measuring CPU (given, or chosen), the tasks' and the bystanders' CPUs: enough of them, and each
 * task a whole number of strides. */
static int check_cpus(struct atsd_plan *p, const struct atsd_host *h, const char *list, char *msg, uint64_t msglen)
{
	int i, s, found = 0, want = max_of(p->bystanders, p->nbystanders), others = h->naffinity - 1,
	       threads = max_of(p->threads, p->nthreads);
	char a[32], b[32];

	if (p->cpu < 0) {
		choose_cpu(p, h);
	} else {
		snprintf(p->cpu_reason, sizeof(p->cpu_reason), "given");
		for (i = 0; i < h->naffinity; i++)
			found |= h->affinity[i] == p->cpu;
		if (!found)
			return fail(-EINVAL, msg, msglen, "--cpu %d is not in this process's CPU affinity %s", p->cpu, list);
	}
	if (threads > h->naffinity)
		return fail(-EINVAL, msg, msglen, "--threads %d needs %d CPUs (one a thread), but the affinity mask has "
			    "%d (%s)", threads, threads, h->naffinity, list);
	if (want > others)
		return fail(-EINVAL, msg, msglen, "--bystanders %d needs %d other CPUs, but the affinity mask has %d "
			    "besides CPU %d", want, want, others, p->cpu);
	if (threads - 1 + want > others)
		return fail(-EINVAL, msg, msglen, "--threads %d and --bystanders %d need %d CPUs besides CPU %d; the "
			    "mask has %d", threads, want, threads - 1 + want, p->cpu, others);
	for (i = 0; !p->nworkloads && i < p->nthreads; i++)  /* a workload's size is each task's */
		for (s = 0; s < p->nstrides; s++)
			if (p->size % ((uint64_t)p->threads[i] * p->strides[s]))
				return fail(-EINVAL, msg, msglen, "size %s is not a multiple of --threads %d x stride %s "
					    "(equal parts in whole strides)",
					    fmt_size(p->size, a, sizeof(a)), p->threads[i], fmt_size(p->strides[s], b, sizeof(b)));
	if (p->tasks == ATSD_TASKS_PROCESSES && threads < 2 && !p->nworkloads)  /* will-it-scale's -t 1 */
		return fail(-EINVAL, msg, msglen, "--tasks processes makes the --threads processes: it needs --threads 2 "
			    "or more");
	/* helper threads take the CPUs bystanders would (other cores first), bystanders the ones after */
	choose_bystanders(p, h, threads - 1 + want);
	p->thread_cpus[0] = p->cpu;
	for (i = 1; i < threads; i++)
		p->thread_cpus[i] = p->bystander_cpus[i - 1];
	p->nthread_cpus = threads;
	for (i = 0; i < want; i++)
		p->bystander_cpus[i] = p->bystander_cpus[i + threads - 1];
	p->nbystander_cpus = want;
	return 0;
}

/* --gpu and --device: what the GPU toucher and the device mirror cannot take, and the mirror's memory. */
static int check_devices(const struct atsd_plan *p, const struct atsd_host *h, uint64_t unit, char *msg,
			 uint64_t msglen)
{
	int i, k, threads = max_of(p->threads, p->nthreads);
	char a[32], b[32];

	for (i = 0; i < p->nops; i++)
		for (k = 0; p->ops[i] == ATSD_OP_MUNMAP && k < p->ngpu; k++)
			if (p->gpu[k] >= 0)
				return fail(-EINVAL, msg, msglen, "--op munmap with --gpu: the GPU toucher cannot follow a "
					    "region remapped every pass");
	if (!has_device(p, ATSD_DEVICE_HMM))
		return 0;
	for (i = 0; i < p->ngpu; i++)
		if (p->gpu[i] >= 0)
			return fail(-EINVAL, msg, msglen, "--device hmm with --gpu: one device path a run; give one of "
				    "them");
	if (p->tasks == ATSD_TASKS_PROCESSES && threads > 1)
		return fail(-EINVAL, msg, msglen, "--device hmm mirrors one mm; --tasks processes gives each task one: "
			    "use --tasks threads");
	if (!h->hmm_device)
		return fail(-ENODEV, msg, msglen, "--device hmm: no %s (read-write): load the test_hmm driver "
			    "(docs/device.md)", atsd_device_path());
	if (h->mem_available >= 0 && p->size + ATSD_CANARY_BYTES + atsd_device_mirror_bytes(p->size, unit) >
				     (uint64_t)h->mem_available)
		return fail(-ENOMEM, msg, msglen, "--device hmm: size %s, the canary and the mirror's %s exceed "
			    "MemAvailable (%.1f GiB)", fmt_size(p->size, a, sizeof(a)),
			    fmt_size(atsd_device_mirror_bytes(p->size, unit) & ~1023ULL, b, sizeof(b)),
			    (double)h->mem_available / (double)(1ULL << 30));
	return 0;
}

/* --verify: a checker on every allowed CPU; the invalidator's sits out each call, so one CPU has
 * nothing to check from.  auto (neither --verify nor --no-verify) is off, but on for --workload
 * (will-it-scale asserts its read-back) where another CPU is allowed: a workload on one CPU runs
 * unchecked. */
static int check_verify(struct atsd_plan *p, const struct atsd_host *h, const char *list, char *msg,
			uint64_t msglen)
{
	int i;

	if (p->verify < 0)
		p->verify = p->nworkloads > 0 && h->naffinity > 1;
	if (p->verify && h->naffinity < 2)
		return fail(-EINVAL, msg, msglen, "--verify checks each call from another CPU; the affinity mask has "
			    "one (%s)", list);
	p->nverify_cpus = 0;
	for (i = 0; p->verify && i < h->naffinity; i++)
		p->verify_cpus[p->nverify_cpus++] = h->affinity[i];
	return 0;
}

/* How the rounds are repeated and spaced: --trace, --until and its limits, --runs, --processes,
 * --placements, --spread, each against the others. */
static int check_repetition(struct atsd_plan *p, char *msg, uint64_t msglen)
{
	if (p->trace == ATSD_TRACE_ON && p->warmup < 1)
		return fail(-EINVAL, msg, msglen, "--trace needs --warmup 1 or more: it counts flushes on warm-up "
			    "passes, not timed ones");
	if (p->until <= 0 && (p->max_time > 0 || p->max_rounds > 0 || p->confidence > 0))
		return fail(-EINVAL, msg, msglen, "--%s applies to adaptive runs: give --until P%% too",
			    p->max_time > 0 ? "max-time" : p->max_rounds > 0 ? "max-rounds" : "confidence");
	if (p->confidence <= 0)
		atsd_plan_set(p, "confidence", atsd_option_default("confidence"), NULL, 0);
	if (p->runs > 1 && p->processes)
		return fail(-EINVAL, msg, msglen, "--runs %d gives each sub-run a fresh process, --processes each "
			    "round: give one of them", p->runs);
	if (p->placements > 1 && p->processes)
		return fail(-EINVAL, msg, msglen, "--placements %d rotates one process's rounds over its regions: it "
			    "takes no --processes", p->placements);
	if (p->placements > 1 && (p->nops > 1 || p->ops[0] != ATSD_OP_MPROTECT))
		return fail(-EINVAL, msg, msglen, "--placements %d keeps each region's pages across rounds: it takes "
			    "--op mprotect only", p->placements);
	if (p->placements > 1 && (p->nthreads > 1 || p->threads[0] > 1))
		return fail(-EINVAL, msg, msglen, "--placements %d: the --threads' regions are not pooled; give one of "
			    "them", p->placements);
	if (p->runs > 1 && p->spread > 0)
		return fail(-EINVAL, msg, msglen, "--spread paces the rounds of one process, --gap the sub-runs of "
			    "--runs: give one of them");
	if (p->until > 0 && p->runs > 1) {
		/* --until --runs M adds sub-runs of --rounds each: M of them are the minimum, and --max-rounds
		 * caps the measured rounds of the whole file */
		if (p->max_rounds > 0 && p->max_rounds < p->runs * p->rounds)
			return fail(-EINVAL, msg, msglen, "--max-rounds %d is below --runs %d x --rounds %d (%d rounds, "
				    "the adaptive minimum)", p->max_rounds, p->runs, p->rounds, p->runs * p->rounds);
	} else if (p->until > 0) {
		/* --rounds is the minimum, 3 at least (a CI from fewer says nothing), and 3 unless given */
		if (p->rounds < 3 || !p->rounds_given)
			p->rounds = 3;
		if (p->max_rounds > 0 && p->max_rounds < p->rounds)
			return fail(-EINVAL, msg, msglen, "--max-rounds %d is below --rounds %d, the minimum of an adaptive "
				    "run", p->max_rounds, p->rounds);
	}
	if (p->until > 0 && p->max_time <= 0)
		p->max_time = 600;
	return 0;
}

int atsd_plan_check(struct atsd_plan *p, const struct atsd_host *h, char *msg, uint64_t msglen)
{
	uint64_t unit;
	char list[256];
	int err;

	if (!h->page_size)
		return fail(-EINVAL, msg, msglen, "the page size of this system is unknown");
	if (p->nworkloads > 0 && (err = check_workload(p, h, msg, msglen)))
		return err;
	if (p->nstrides < 1)
		return fail(-EINVAL, msg, msglen, "no stride given");
	if (atsd_plan_cells(p) > 256)
		return fail(-E2BIG, msg, msglen, "the axes make %d cells: at most 256", atsd_plan_cells(p));
	/* a round's passes are numbered in 32 bits (both front ends): cells x (warm-up + reps) x strides */
	if ((int64_t)atsd_plan_cells(p) * ((int64_t)p->warmup + p->reps) * p->nstrides > INT32_MAX)
		return fail(-E2BIG, msg, msglen, "a round would make %" PRId64 " passes (cells x (warmup + reps) x "
			    "strides), over 2^31 - 1", (int64_t)atsd_plan_cells(p) * ((int64_t)p->warmup + p->reps) *
			    p->nstrides);
	if ((err = check_strides(p, h, &unit, msg, msglen)) || (err = check_memory(p, h, msg, msglen)))
		return err;
	if (h->naffinity < 1)
		return fail(-EINVAL, msg, msglen, "this process may run on no CPU");
	fmt_cpulist(h->affinity, h->naffinity, list, sizeof(list));
	if ((err = check_cpus(p, h, list, msg, msglen)) || (err = check_devices(p, h, unit, msg, msglen)) ||
	    (err = check_verify(p, h, list, msg, msglen)) || (err = check_repetition(p, msg, msglen)))
		return err;
	/* the region's alignment: a THP (and hugetlb) page at least, and the largest stride */
	p->align = h->thp_size ? h->thp_size : 2ULL << 20;
	if (has_pages(p, ATSD_PAGES_HUGETLB) && h->hugepage_size > p->align)
		p->align = h->hugepage_size;
	if (p->strides[p->nstrides - 1] > p->align)
		p->align = p->strides[p->nstrides - 1];
	if (!p->seed_set) {
		p->seed = random_seed();
		p->seed_set = 1;
	}
	return 0;
}
