/*
 * atsd_ops.c - one timed pass of an operation over the region, and the untimed preparation that
 * gives the next pass the same work.  See atsd.h (enum atsd_op) for the contract.
 *
 * Every op is timed by the one loop below, so mprotect, madvise and munmap differ in the call
 * only: the timed region holds the calls and the clock reads, nothing else.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/futex.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static const char *const op_names[] = {"mprotect", "madvise", "munmap"};
static const char *const op_calls[] = {"mprotect(PROT_NONE)", "madvise(MADV_DONTNEED)", "munmap"};

const char *atsd_op_name(int32_t op)
{
	return op >= 0 && op < ATSD_NOPS ? op_names[op] : NULL;
}

const char *atsd_op_call(int32_t op)
{
	return op >= 0 && op < ATSD_NOPS ? op_calls[op] : NULL;
}

/* Where `name` stands in names[0..n), -EINVAL where it does not: ops and workloads alike. */
static int name_index(const char *const *names, int n, const char *name)
{
	int k;

	for (k = 0; name && k < n; k++)
		if (!strcmp(name, names[k]))
			return k;
	return -EINVAL;
}

int atsd_op_parse(const char *name)
{
	return name_index(op_names, ATSD_NOPS, name);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(ATSD_CLOCK, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The timed loop of every op: CALL(base + off, stride) returns 0 or -1 with errno.  A macro, not a
 * function pointer, so each op's loop is as tight as mprotect's always was. */
#define TIMED_LOOP(CALL)                                                        \
	do {                                                                    \
		if (lat) {                                                      \
			uint64_t prev = now_ns(), t;                            \
			t0 = prev;                                              \
			for (off = 0; off < size; off += stride) {              \
				if (CALL(base + off, stride)) {                 \
					err = -errno;                           \
					break;                                  \
				}                                               \
				t = now_ns();                                   \
				lat[n++] = t - prev;                            \
				prev = t;                                       \
			}                                                       \
			t1 = prev;                                              \
		} else {                                                        \
			t0 = now_ns();                                          \
			for (off = 0; off < size; off += stride) {              \
				if (CALL(base + off, stride)) {                 \
					err = -errno;                           \
					break;                                  \
				}                                               \
			}                                                       \
			t1 = now_ns();                                          \
			n = off / stride;                                       \
		}                                                               \
	} while (0)

#define CALL_MPROTECT(a, len) mprotect((a), (len), PROT_NONE)
#define CALL_MADVISE(a, len) madvise((a), (len), MADV_DONTNEED)
#define CALL_MUNMAP(a, len) munmap((a), (len))

/* One op over [base, base + size) in strides: the timed loop, then (munmap) the hole reserved.
 * *t0, *t1: the loop's clock reads; *done: the calls that succeeded. */
static int timed_part(uint8_t *base, uint64_t size, int32_t op, uint64_t stride, uint64_t *lat, uint64_t *t0_out,
		      uint64_t *t1_out, uint64_t *done, int *lost)
{
	uint64_t off = 0, t0 = 0, t1 = 0, n = 0;
	int err = 0;

	if (op == ATSD_OP_MPROTECT)
		TIMED_LOOP(CALL_MPROTECT);
	else if (op == ATSD_OP_MADVISE)
		TIMED_LOOP(CALL_MADVISE);
	else
		TIMED_LOOP(CALL_MUNMAP);
	*t0_out = t0;
	*t1_out = t1;
	*done = n;
	*lost = 0;
	if (op == ATSD_OP_MUNMAP && n) {
		/* Untimed: hold the hole at once, so no other mapping (the Python front end's allocator)
		 * lands in it before atsd_op_restore maps the region again over its own reservation. */
		uint64_t len = n * stride;
		void *p = mmap(base, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
			       -1, 0);
		if (p != (void *)base) {
			int e = p == MAP_FAILED ? -errno : -EEXIST;
			if (p != MAP_FAILED)
				munmap(p, len);  /* a kernel before 4.17 took NOREPLACE as a hint */
			*lost = 1;
			return err ? err : e ? e : -EEXIST;
		}
	}
	return err;
}

int atsd_op_pass(struct atsd_region *r, int32_t op, uint64_t stride, uint64_t *ns, uint64_t *lat,
		 uint64_t *done)
{
	uint64_t t0, t1, n;
	int err, lost;

	if (!r->addr || stride == 0 || stride % r->page_size || r->size % stride || op < 0 || op >= ATSD_NOPS)
		return -EINVAL;
	err = timed_part(r->addr, r->size, op, stride, lat, &t0, &t1, &n, &lost);
	*ns = t1 - t0;
	if (done)
		*done = n;
	if (lost)
		r->addr = NULL;  /* part of the region is gone unreserved: its restore and passes refuse */
	return err;
}

int atsd_pass(struct atsd_region *r, uint64_t stride, uint64_t *ns, uint64_t *lat, uint64_t *done)
{
	return atsd_op_pass(r, ATSD_OP_MPROTECT, stride, ns, lat, done);
}

int atsd_op_restore(struct atsd_region *r, int32_t op, int32_t retouch)
{
	int err;

	if (op < 0 || op >= ATSD_NOPS)
		return -EINVAL;
	if (op == ATSD_OP_MUNMAP && r->addr && (err = atsd_region_remap(r)))
		return err;
	/* madvise left the mapping as it was: PROT_READ|PROT_WRITE already (mprotect to the same
	 * protection changes nothing), and the touch faults the zapped pages back in. */
	return atsd_region_restore(r, retouch);
}

/* ---- will-it-scale's tlb_flush loops (--workload) ---- */

static const char *const workload_names[] = {"tlb_flush1", "tlb_flush2", "tlb_flush3"};
static int skip_from;  /* atsd_test_skip_madvise: the test double's countdown, never set by a front end */

const char *atsd_workload_name(int32_t workload)
{
	return workload >= 0 && workload < ATSD_NWORKLOADS ? workload_names[workload] : NULL;
}

int atsd_workload_parse(const char *name)
{
	return name_index(workload_names, ATSD_NWORKLOADS, name);
}

uint64_t atsd_workload_unit(int32_t workload)
{
	/* will-it-scale's FILESIZE (tlb_flush1, 3) and MEMORYSIZE (tlb_flush2) */
	if (workload < 0 || workload >= ATSD_NWORKLOADS)
		return 0;
	return workload == ATSD_WORKLOAD_TLB_FLUSH2 ? 1ULL << 20 : 128ULL << 20;
}

void atsd_test_skip_madvise(int32_t from)
{
	skip_from = from > 0 ? from : 0;
}

int atsd_no_aslr(int32_t set)
{
	int old = personality(0xffffffff);

	if (old < 0)
		return -errno;
	if (set && personality(set > 0 ? (unsigned long)old | ADDR_NO_RANDOMIZE :
			       (unsigned long)old & ~(unsigned long)ADDR_NO_RANDOMIZE) < 0)
		return -errno;
	return !!(old & ADDR_NO_RANDOMIZE);
}

const char *atsd_aslr_state(void)
{
	FILE *f = fopen("/proc/sys/kernel/randomize_va_space", "r");
	int space = -1;

	if (f) {
		if (fscanf(f, "%d", &space) != 1)
			space = -1;
		fclose(f);
	}
	return atsd_no_aslr(0) == 1 || space == 0 ? "off" : "on";
}

const char *atsd_strerror(int32_t err)
{
	return err == -ECHILD ? "a helper process died (killed from outside)" : strerror(-err);
}

const char *atsd_workload_failure(char *buf, uint64_t len, int32_t workload, int32_t tasks, uint64_t loops,
				  int32_t err)
{
	int file = workload != ATSD_WORKLOAD_TLB_FLUSH2 && err != -ECHILD && err != -EINTR;

	snprintf(buf, (size_t)len, "%s failed in one of %d tasks after %" PRIu64 " loops: %s%s%s%s",
		 atsd_workload_name(workload), tasks, loops, atsd_strerror(err), file ? " (its file in TMPDIR, " : "",
		 file ? atsd_workload_dir() : "", file ? ")" : "");
	return buf;
}

const char *atsd_workload_dir(void)
{
	const char *dir = getenv("TMPDIR");

	return dir && *dir ? dir : "/tmp";
}

/* A task's file, as will-it-scale's testcase makes it: mkstemp, sized to the unit, unlinked.  Its
 * blocks are allocated here (posix_fallocate), not left sparse as will-it-scale's ftruncate leaves
 * them: a full folder then fails here, with ENOSPC, instead of a SIGBUS at a loop's first touch of
 * a hole; after the warm-up pass the file is the same (every page touched).  -errno where it cannot
 * be made (the pass then fails with it). */
static int workload_file(uint64_t size)
{
	char path[4096];
	int fd, e;

	snprintf(path, sizeof(path), "%s/atsd-wis.XXXXXX", atsd_workload_dir());
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	unlink(path);
	e = ftruncate(fd, (off_t)size) ? errno : 0;
	if (!e) {
		/* tmpfs gives up with EINTR where a signal came (a Ctrl-C the front end only records): again */
		do
			e = posix_fallocate(fd, 0, (off_t)size);
		while (e == EINTR);
	}
	if (e) {
		close(fd);
		return -e;
	}
	return fd;
}

/* One task's loops over `bytes` of pages (see atsd.h): the timed region holds will-it-scale's loop
 * and its mmap/munmap of each unit, as its testcase runs them, and the two clock reads. */
static int workload_part(int32_t workload, int fd, uint64_t bytes, int skip, uint64_t *t0_out, uint64_t *t1_out,
			 uint64_t *done)
{
	uint64_t unit = atsd_workload_unit(workload), ps = (uint64_t)atsd_page_size(), n = 0, at, off, t0, t1;
	int flags = workload == ATSD_WORKLOAD_TLB_FLUSH2 ? MAP_ANONYMOUS | MAP_PRIVATE :
		    workload == ATSD_WORKLOAD_TLB_FLUSH1 ? MAP_PRIVATE : MAP_SHARED;
	char expect = workload == ATSD_WORKLOAD_TLB_FLUSH3 ? 1 : 0;
	int err = 0;

	*t0_out = *t1_out = 0;
	*done = 0;
	if (workload == ATSD_WORKLOAD_TLB_FLUSH2)
		fd = -1;
	else if (fd < 0)
		return fd;  /* its file could not be made */
	t0 = now_ns();
	for (at = 0; at < bytes && !err; at += unit) {
		volatile char *addr = mmap(NULL, unit, PROT_READ | PROT_WRITE, flags, fd, 0);
		if (addr == MAP_FAILED) {
			err = -errno;
			break;
		}
		for (off = 0; off < unit; off += ps) {
			addr[off] = 1;
			if (!skip && madvise((void *)(addr + off), ps, MADV_DONTNEED)) {
				err = -errno;
				break;
			}
			if (addr[off] != expect) {
				err = -EBADMSG;
				break;
			}
			n++;
		}
		munmap((void *)addr, unit);
	}
	t1 = now_ns();
	*t0_out = t0;
	*t1_out = t1;
	*done = n;
	return err;
}

/* ---- concurrent invalidators (--threads): each task its own part of the region ----
 *
 * Tasks are threads of this mm, or (--tasks processes) forked processes with a region of their own,
 * one mm each.  Either way the control block lives in a MAP_SHARED mapping and every wait is on a
 * futex word in it, so both kinds run the same loop. */

#define ATSD_CACHELINE 128

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
		t->w[i].fd = workload_file(atsd_workload_unit(t->workload));  /* untimed, before the barrier */
	x->arrived = now_ns();
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
		x->err = workload_part(t->workload, t->w[i].fd, t->wl_bytes, t->skip, &x->t0, &x->t1, &x->done);
		lost = 0;
	} else {
		x->err = timed_part(base, t->part, t->op, t->stride, lat, &x->t0, &x->t1, &x->done, &lost);
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
	t->skip = skip_from == 1;
	if (skip_from > 1)
		skip_from--;
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
