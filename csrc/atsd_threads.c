/*
 * atsd_threads.c - the tasks of a pass (--threads, --tasks processes) and of a --workload: the caller
 * and its helpers, each its own part of the region (or its own loops), started on one barrier.  See
 * atsd.h (struct atsd_thread_times) for the contract.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/futex.h>
#include <unistd.h>

/* ---- concurrent invalidators (--threads): each task its own part of the region ----
 *
 * Tasks are threads of this mm, or (--tasks processes) forked processes with a region of their own,
 * one mm each.  Either way the control block lives in a MAP_SHARED mapping and every wait is on a
 * futex word in it, so both kinds run the same loop. */

enum job { JOB_PASS = 1, JOB_RESTORE = 2, JOB_WORKLOAD = 3 };

struct worker {
	struct atsd_threads *owner;  /* the shared block: at the same address in every task */
	int32_t index;
	pthread_t thread;
	pid_t pid;
	int32_t cpu;
	int32_t err;            /* of its start (pinning, its region) */
	int32_t fd;             /* --workload tlb_flush1/3: its own file, -1 until its first pass */
	struct atsd_thread_times times;
} __attribute__((aligned(ATSD_CACHELINE)));

/* Every wait is on a futex word in the shared block: a helper process killed from outside leaves
 * no lock held and no condition variable waited on (glibc's would hang the next broadcast or the
 * destroy), and the caller sees it gone within 200 ms. */
struct atsd_threads {
	/* The start barrier: pass k opens when gate reaches k x n.  Spun on, not slept in: every task
	 * leaves it at once (no wake-up to wait for), its mm live on its CPU, and the caller can see a
	 * helper process that died instead of waiting for it forever. */
	uint64_t gate;
	uint64_t passes;
	int n;                  /* tasks, the caller (index 0) included */
	int processes;
	int started;            /* helpers created (their count, for the stop) */
	uint32_t ready;         /* helpers pinned and waiting */
	uint32_t job;           /* job number: a helper runs job `job` when it is ahead of what it ran */
	int kind;               /* enum job */
	uint32_t finished;      /* helpers done with job `job` */
	uint32_t stop;
	/* the job under way */
	uint8_t *base;          /* threads: the caller's region, each takes its part */
	uint64_t size;          /* the whole region's */
	uint64_t part;          /* size / n */
	int32_t op;
	int32_t retouch;
	uint64_t stride;
	int32_t pages;
	int32_t restore_err;
	uint64_t align;
	uint64_t *lat;          /* the caller's buffer (threads), or shlat (processes) */
	uint64_t *shlat;        /* processes: part / page size entries a task, shared */
	int32_t workload;       /* JOB_WORKLOAD's enum atsd_workload */
	uint64_t wl_bytes;      /* and the bytes of pages each task goes through */
	int32_t skip;           /* the test double: this pass's loops leave out their madvise */
	size_t bytes;           /* of this mapping */
	struct worker *w;
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int64_t thread_nivcsw(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? -1 : (int64_t)ru.ru_nivcsw;
}

static void futex_wait_for(uint32_t *word, uint32_t seen, long timeout_ns)
{
	struct timespec rel = {0, timeout_ns};

	syscall(SYS_futex, word, FUTEX_WAIT, seen, timeout_ns ? &rel : NULL, NULL, 0);
}

static void futex_wake_all(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)

/* A helper process that is gone (killed from outside), reaped here so the stop does not wait for it. */
static int helper_died(struct atsd_threads *t)
{
	int i, died = 0;

	for (i = 1; t->processes && i <= t->started; i++)
		if (t->w[i].pid > 0 && waitpid(t->w[i].pid, NULL, WNOHANG) == t->w[i].pid) {
			t->w[i].pid = 0;
			died = 1;
		}
	return died;
}

/* Task `i`'s share of a pass over [base, base + part): the barrier, its loop, its CPU time and
 * switches read just outside the loop. */
static void run_part(struct atsd_threads *t, int i, uint8_t *base)
{
	struct atsd_thread_times *x = &t->w[i].times;
	uint64_t c0, c1, *lat = NULL;
	int64_t s0, s1;
	int lost;

	if (t->lat)
		lat = t->lat + (uint64_t)i * (t->part / t->stride);
	uint64_t open = t->passes * (uint64_t)t->n, spins = 0;

	memset(x, 0, sizeof(*x));
	if (t->kind == JOB_WORKLOAD && t->workload != ATSD_WORKLOAD_TLB_FLUSH2 && t->w[i].fd < 0)
		t->w[i].fd = atsd_workload_file(atsd_workload_unit(t->workload));  /* untimed, before the barrier */
	x->arrived = atsd_now_ns();
	__atomic_add_fetch(&t->gate, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&t->gate, __ATOMIC_ACQUIRE) < open) {
		if (i == 0 && ++spins % (1u << 20) == 0 && helper_died(t)) {
			x->err = -ECHILD;
			return;
		}
	}
	s0 = thread_nivcsw();
	c0 = thread_cpu_ns();
	if (t->kind == JOB_WORKLOAD) {
		x->err = atsd_workload_part(t->workload, t->w[i].fd, t->wl_bytes, t->skip, &x->t0, &x->t1, &x->done);
		lost = 0;
	} else {
		x->err = atsd_timed_part(base, t->part, t->op, t->stride, lat, &x->t0, &x->t1, &x->done, &lost);
	}
	c1 = thread_cpu_ns();
	s1 = thread_nivcsw();
	x->lost = lost;
	x->cpu_ns = c1 - c0;
	x->preempted = s0 >= 0 && s1 >= 0 ? s1 - s0 : 0;
}

/* A helper's life: pinned (a process: its own region mapped), then one job after another. */
static void helper_loop(struct atsd_threads *t, int i)
{
	struct atsd_region own;
	uint32_t ran = 0, job;

	memset(&own, 0, sizeof(own));
	t->w[i].err = atsd_pin_self(t->w[i].cpu);
	if (!t->w[i].err && t->processes && t->part)
		t->w[i].err = atsd_region_map(&own, t->part, t->align, t->pages);
	__atomic_add_fetch(&t->ready, 1, __ATOMIC_RELEASE);
	futex_wake_all(&t->ready);
	for (;;) {
		while ((job = LOAD(t->job)) == ran && !LOAD(t->stop))
			futex_wait_for(&t->job, ran, 0);
		if (LOAD(t->stop))
			break;
		ran = job;
		if (t->kind == JOB_PASS || t->kind == JOB_WORKLOAD) {
			run_part(t, i, t->processes ? own.addr : t->base + (uint64_t)i * t->part);
			if (t->w[i].times.lost)
				own.addr = NULL;
		} else {
			int32_t err = own.addr ? atsd_op_restore(&own, t->op, t->retouch) : -EINVAL, none = 0;
			if (err)
				__atomic_compare_exchange_n(&t->restore_err, &none, err, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		}
		__atomic_add_fetch(&t->finished, 1, __ATOMIC_RELEASE);
		futex_wake_all(&t->finished);
	}
	atsd_region_unmap(&own);
	if (t->w[i].fd >= 0)
		close(t->w[i].fd);
}

static void *helper_thread(void *arg)
{
	struct worker *w = arg;

	helper_loop(w->owner, w->index);
	return NULL;
}

uint64_t atsd_threads_slowest(const struct atsd_thread_times *times, int32_t n)
{
	uint64_t worst = 0;
	int32_t i;

	for (i = 0; i < n; i++)
		if (times[i].t1 - times[i].t0 > worst)
			worst = times[i].t1 - times[i].t0;
	return worst;
}

static void block_stop_signals(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

int atsd_threads_stop(struct atsd_threads **slot)
{
	struct atsd_threads *t;
	sigset_t old;
	int i;

	if (!slot || !*slot)
		return 0;
	block_stop_signals(&old);
	t = *slot;
	*slot = NULL;  /* before anything is freed: a second stop finds nothing to free */
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&t->job, 1, __ATOMIC_RELEASE);
	futex_wake_all(&t->job);
	for (i = 1; i <= t->started; i++) {
		if (t->processes) {
			while (t->w[i].pid > 0 && waitpid(t->w[i].pid, NULL, 0) < 0 && errno == EINTR)
				;
		} else {
			pthread_join(t->w[i].thread, NULL);
		}
	}
	if (t->w[0].fd >= 0)
		close(t->w[0].fd);
	munmap(t, t->bytes);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}

int atsd_threads_start(struct atsd_threads **out, const int32_t *cpus, int32_t n, int32_t processes, uint64_t size,
		       uint64_t align, int32_t pages)
{
	struct atsd_threads *t;
	sigset_t all, old;
	size_t head = (sizeof(*t) + ATSD_CACHELINE - 1) / ATSD_CACHELINE * ATSD_CACHELINE, bytes;
	int64_t ps = atsd_page_size();
	uint64_t lat_entries;
	void *m;
	int i, err = 0;

	*out = NULL;
	if (n < 1 || n > ATSD_MAX_CPUS || ps < 0 || (processes && size % (uint64_t)n))
		return -EINVAL;
	lat_entries = processes ? size / (uint64_t)ps : 0;
	bytes = head + sizeof(struct worker) * (size_t)n + sizeof(uint64_t) * (size_t)lat_entries;
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	t = m;
	t->bytes = bytes;
	t->w = (struct worker *)(void *)((uint8_t *)m + head);
	t->shlat = lat_entries ? (uint64_t *)(void *)(t->w + n) : NULL;
	t->n = n;
	t->processes = !!processes;
	t->part = processes ? size / (uint64_t)n : 0;
	t->align = align;
	t->pages = pages;
	for (i = 0; i < n; i++)
		t->w[i].fd = -1;
	/* after fork() a helper process calls only what is async-signal-safe: the hugetlb page size
	 * its region needs is read (and kept) here, before the first fork */
	if (processes && pages == ATSD_PAGES_HUGETLB && atsd_hugepage_size() < 0) {
		munmap(m, bytes);
		return -ENOENT;
	}
	/* Helpers run with every signal blocked: a signal goes to the caller, which looks for it
	 * between passes, so every task stops between passes, never inside one. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 1; i < n; i++) {
		struct worker *w = &t->w[i];
		w->owner = t;
		w->index = i;
		w->cpu = cpus[i];
		if (processes) {
			pid_t pid = fork();
			if (pid == 0) {
				/* C only from here: the caller's process may be Python's.  It dies with its parent. */
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				if (getppid() == 1)
					_exit(1);
				helper_loop(t, i);
				_exit(0);
			}
			err = pid < 0 ? -errno : 0;
			w->pid = pid;
		} else {
			err = -pthread_create(&w->thread, NULL, helper_thread, w);
		}
		if (err)
			break;
		t->started = i;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	{
		uint32_t r;
		while (!err && (r = LOAD(t->ready)) < (uint32_t)t->started) {
			futex_wait_for(&t->ready, r, t->processes ? 200000000 : 0);
			if (helper_died(t))
				err = -ECHILD;
		}
	}
	for (i = 1; !err && i < n; i++)
		err = t->w[i].err;
	if (err) {
		atsd_threads_stop(&t);
		return err;
	}
	*out = t;
	return 0;
}

/* Post a job to the helpers; the caller's part runs before it waits for theirs. */
static void post(struct atsd_threads *t, int kind)
{
	t->kind = kind;
	t->restore_err = 0;
	__atomic_store_n(&t->finished, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&t->job, 1, __ATOMIC_RELEASE);  /* publishes the job's fields */
	futex_wake_all(&t->job);
}

/* 0, or -ECHILD where a helper process died (killed from outside): its job will never finish. */
static int wait_helpers(struct atsd_threads *t)
{
	uint32_t f;

	while ((f = LOAD(t->finished)) < (uint32_t)(t->n - 1)) {
		futex_wait_for(&t->finished, f, t->processes ? 200000000 : 0);
		if (LOAD(t->finished) < (uint32_t)(t->n - 1) && helper_died(t))
			return -ECHILD;
	}
	return 0;
}

int atsd_threads_pass(struct atsd_threads *t, struct atsd_region *r, int32_t op, uint64_t stride, uint64_t *lat,
		      struct atsd_thread_times *times, uint64_t *ns)
{
	uint64_t part = r->size / (t ? (uint64_t)t->n : 1);
	int i, err = 0;

	/* stride > size first: a larger one times the threads can wrap to 0, a division by zero */
	if (!t || !r->addr || stride == 0 || stride % r->page_size || op < 0 || op >= ATSD_NOPS ||
	    stride > r->size || (uint64_t)t->n > r->size / stride || r->size % ((uint64_t)t->n * stride) ||
	    (t->processes && part != t->part))
		return -EINVAL;
	t->base = r->addr;
	t->size = r->size;
	t->part = part;
	t->op = op;
	t->stride = stride;
	t->lat = lat ? (t->processes ? t->shlat : lat) : NULL;
	t->passes++;
	post(t, JOB_PASS);
	run_part(t, 0, r->addr);
	if (t->w[0].times.err == -ECHILD)
		return -ECHILD;
	if ((err = wait_helpers(t)))
		return err;
	for (i = 0; i < t->n; i++) {
		times[i] = t->w[i].times;
		if (i == 0 && t->w[i].times.lost)
			r->addr = NULL;  /* its part is gone unreserved: the region's restore and passes refuse */
		if (!err && t->w[i].times.err)
			err = t->w[i].times.err;
	}
	if (lat && t->processes)  /* every task's calls, in task order */
		memcpy(lat, t->shlat, sizeof(*lat) * (size_t)(r->size / stride));
	*ns = atsd_threads_slowest(times, t->n);
	return err;
}

int atsd_threads_restore(struct atsd_threads *t, int32_t op, int32_t retouch)
{
	if (!t || op < 0 || op >= ATSD_NOPS)
		return -EINVAL;
	if (!t->processes)
		return 0;  /* one mm: the caller's restore of its region is every thread's */
	t->op = op;
	t->retouch = retouch;
	post(t, JOB_RESTORE);
	return wait_helpers(t) ? -ECHILD : t->restore_err;
}

int atsd_workload_pass(struct atsd_threads *t, int32_t workload, uint64_t bytes, struct atsd_thread_times *times,
		       uint64_t *ns)
{
	uint64_t unit = atsd_workload_unit(workload);
	int i, err = 0;

	if (!t || !unit || bytes == 0 || bytes % unit || (uint64_t)atsd_page_size() > unit)
		return -EINVAL;
	t->workload = workload;
	t->wl_bytes = bytes;
	t->skip = atsd_workload_skip_next();
	t->lat = NULL;
	t->passes++;
	post(t, JOB_WORKLOAD);
	run_part(t, 0, NULL);
	if (t->w[0].times.err == -ECHILD)
		return -ECHILD;
	if ((err = wait_helpers(t)))
		return err;
	for (i = 0; i < t->n; i++) {
		times[i] = t->w[i].times;
		/* a failed read-back first: it is the one failure that must never pass for a rate */
		if (times[i].err == -EBADMSG || (!err && times[i].err))
			err = err == -EBADMSG ? err : times[i].err;
	}
	*ns = atsd_threads_slowest(times, t->n);
	return err;
}
