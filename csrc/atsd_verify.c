/*
 * atsd_verify.c - run --verify: after each invalidating call returns, can another CPU still read
 * through the translation it held?  See atsd.h (struct atsd_verify_result) for the contract and
 * docs/verify.md for what a pass proves.
 *
 * One checker thread per CPU given (every allowed CPU), pinned there, of this mm.  For every call
 * of a verify pass the caller (the invalidator, pinned to the CPU of the part it does) and the
 * checkers on every other CPU go through one handshake, on one atomic word `state` = call << 2 |
 * phase:
 *
 *   invalidator                              checker (each, on its own CPU)
 *   writes V_k to the checked word P_k
 *   state = k|ARMED          (release)  -->  acquire ARMED; reads P_k (== V_k: its TLB holds P_k)
 *   waits for every ack      (acquire)  <--  acked = k (release); then reads P_k again and again
 *   state = k|CALLING        (release)  -->  a read of V_k after it saw CALLING: held = 1
 *   the call: mprotect / madvise / munmap    (its reads start to fault or read 0 as the flush lands)
 *   state = k|DONE           (release)  -->  acquire DONE, then ONE read of P_k: the check
 *   waits for every verdict  (acquire)  <--  checked = k (release)
 *
 * Why DONE's release/acquire is the ordering that matters: the call's flush of the other CPUs
 * completed before the call returned (x86: the IPIs were acknowledged, each after its INVLPG or
 * CR3 write; arm64 and POWER: TLBI/tlbie then DSB ISH/tlbsync, complete at return); the store of
 * DONE is after the return in program order and is a release; the checker's read of P_k is after
 * its acquire load that saw DONE, so it cannot be performed (by the compiler or the CPU: an
 * acquire orders later loads after it) before the call returned.  A read that still returns V_k
 * (mprotect, munmap: it must fault; madvise: it must read 0, the zero page) went through a
 * translation that outlived the invalidation: stale.  C11 atomics say nothing about TLBs; what
 * they give here is that the check read is ordered after the return, which is all the argument
 * needs from them.
 *
 * What it cannot prove: that the checker's TLB still held P_k when the flush came.  An unrelated
 * flush or an eviction in between (a context switch of the checker, a full flush for another
 * reason) would have dropped the entry, and the check then proves nothing about the call's flush.
 * So each check records `held`: the checker read V_k after it had seen CALLING (the call had
 * begun).  Checks that are not held are reported as such, never counted as passes.
 *
 * The fault path: SIGSEGV/SIGBUS go to on_fault() for the pass's life (installed at start, the
 * handler found put back at stop).  It jumps back (siglongjmp) only for a fault on the one word a
 * checker is reading at that moment (its thread id and the faulting address both match); any other
 * fault goes to the handler that was there before (Python's faulthandler, or the default: death).
 * SA_NODEFER keeps SIGSEGV unblocked after the jump, so sigsetjmp need not save the mask (no
 * system call per read).
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <time.h>
#include <unistd.h>

#define VERIFY_CACHELINE 128
/* A wait that lasts this long means a checker cannot run (its CPU went offline): the pass fails
 * instead of hanging. */
#define VERIFY_TIMEOUT_NS 20000000000ull

enum phase { PHASE_ARMED = 1, PHASE_CALLING = 2, PHASE_DONE = 3 };

struct checker {
	struct atsd_verifier *v;
	pthread_t thread;
	int32_t cpu;
	int32_t err;            /* of its start (pinning) */
	_Atomic int32_t tid;
	_Atomic uint32_t acked;     /* the last call it read V_k of */
	_Atomic uint32_t checked;   /* the last call it checked */
	/* the fault path: set by this checker only, read by on_fault on its own thread */
	volatile sig_atomic_t armed;
	volatile uint64_t *probe;
	sigjmp_buf jb;
	/* this pass's counts, written by the checker, read by the caller after `checked` (acquire) */
	uint64_t checks, faults, zeros, stale, held;
} __attribute__((aligned(VERIFY_CACHELINE)));

struct atsd_verifier {
	_Atomic uint64_t state;     /* call << 2 | enum phase */
	_Atomic uint32_t part_seq;  /* a futex word: bumped when the checkers' roles change */
	_Atomic int32_t stop;
	_Atomic uint32_t ready;
	/* published by the release of state (ARMED) or part_seq */
	volatile uint64_t *addr;
	uint64_t value;
	int32_t op;
	_Atomic int32_t sitting_out;  /* the invalidator's CPU: its checker waits; -2 between passes (published
				       * by part_seq's release; atomic, since a checker may read it meanwhile) */
	int32_t skip_call;          /* TEST ONLY (atsd_verify_control): raise the flags, make no call */
	struct atsd_device *device; /* --device hmm: each call checked on the device too (the caller's) */
	int32_t n;
	int32_t started;
	int32_t installed;
	struct sigaction old_segv, old_bus;
	struct checker *c;
	size_t bytes;
};

/* The one verifier whose checkers on_fault() looks among, and how many handlers are between their
 * load of it and their last read of it: stop() unmaps the verifier only once none is (a fault on
 * any other thread runs on_fault too, while stop() may run). */
static struct atsd_verifier *_Atomic active;
static _Atomic int32_t in_fault;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(ATSD_CLOCK, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void futex_wait(_Atomic uint32_t *word, uint32_t seen)
{
	struct timespec rel = {0, 100000000};  /* a lost wake-up costs 100 ms, never a hang */

	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, seen, &rel, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* A spin that gives the CPU away once it has lasted: on a loaded machine the other side may be
 * waiting for this very CPU. */
static void relax(uint32_t *spins)
{
	if (++*spins > 1024)
		sched_yield();
}

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
	struct atsd_verifier *v;
	struct sigaction was, *old = NULL;

	atomic_fetch_add(&in_fault, 1);  /* before the load: stop() then waits for this handler */
	v = atomic_load(&active);
	if (v) {
		int32_t tid = (int32_t)syscall(SYS_gettid);
		int i;
		for (i = 1; i <= v->started; i++) {
			struct checker *c = &v->c[i - 1];
			if (atomic_load_explicit(&c->tid, memory_order_relaxed) == tid && c->armed &&
			    (uintptr_t)si->si_addr >= (uintptr_t)c->probe &&
			    (uintptr_t)si->si_addr < (uintptr_t)c->probe + sizeof(uint64_t)) {
				c->armed = 0;
				/* a checker: stop() joins it before it unmaps, so c outlives the jump */
				atomic_fetch_sub(&in_fault, 1);
				siglongjmp(c->jb, 1);
			}
		}
		was = sig == SIGSEGV ? v->old_segv : v->old_bus;  /* a copy: v may go once we are out */
		old = &was;
	}
	atomic_fetch_sub(&in_fault, 1);
	/* Not a checked read: what would have happened without us. */
	if (old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
		old->sa_sigaction(sig, si, ctx);
	} else if (old && old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
	} else {
		signal(sig, SIG_DFL);  /* returning re-runs the access, which now kills as it would have */
	}
}

/* One read of *p by checker c: 0 and *out, or 1 where it faulted. */
static int checked_read(struct checker *c, volatile uint64_t *p, uint64_t *out)
{
	c->probe = p;
	if (sigsetjmp(c->jb, 0))
		return 1;
	atomic_signal_fence(memory_order_seq_cst);
	c->armed = 1;
	atomic_signal_fence(memory_order_seq_cst);
	*out = *p;
	atomic_signal_fence(memory_order_seq_cst);
	c->armed = 0;
	return 0;
}

/* Checker c's part in call k (state k|ARMED seen): arm, hold, check. */
static void check_call(struct atsd_verifier *v, struct checker *c, uint64_t k)
{
	volatile uint64_t *p = v->addr;
	uint64_t want = v->value, x = 0, s;
	uint32_t spins = 0;
	int held = 0, flushed = 0, faulted;

	/* Arm: this read loads the translation of P_k into this CPU's TLB. */
	if (checked_read(c, p, &x) || x != want)
		flushed = 1;  /* cannot happen before the call; such a check is simply not held */
	atomic_store_explicit(&c->acked, (uint32_t)k, memory_order_release);
	for (;;) {
		s = atomic_load_explicit(&v->state, memory_order_acquire);
		if (s >> 2 != k || (s & 3) == PHASE_DONE || atomic_load_explicit(&v->stop, memory_order_relaxed))
			break;
		if (!flushed) {
			/* Hold: keep using the translation; once the call has begun, a read of V_k says the
			 * entry was live in this TLB while the call ran. */
			if (!checked_read(c, p, &x) && x == want)
				held |= (s & 3) == PHASE_CALLING;
			else
				flushed = 1;  /* the flush landed (or the fault is waiting on the call's lock) */
		} else {
			relax(&spins);
		}
	}
	if (s >> 2 != k || (s & 3) != PHASE_DONE)
		return;  /* stopped */
	/* The check: one read, ordered after the acquire that saw DONE. */
	faulted = checked_read(c, p, &x);
	c->checks++;
	c->held += (uint64_t)held;
	if (faulted)
		c->faults++;
	else if (v->op == ATSD_OP_MADVISE && x == 0)
		c->zeros++;
	else
		c->stale++;  /* read through a translation after the call returned */
	atomic_store_explicit(&c->checked, (uint32_t)k, memory_order_release);
}

static void *checker_main(void *arg)
{
	struct checker *c = arg;
	struct atsd_verifier *v = c->v;
	uint64_t last = 0;

	atomic_store_explicit(&c->tid, (int32_t)syscall(SYS_gettid), memory_order_relaxed);
	c->err = atsd_pin_self(c->cpu);
	atomic_fetch_add_explicit(&v->ready, 1, memory_order_release);
	futex_wake(&v->ready);
	while (!atomic_load_explicit(&v->stop, memory_order_acquire)) {
		uint32_t seq = atomic_load_explicit(&v->part_seq, memory_order_acquire), spins = 0;
		int32_t out = atomic_load_explicit(&v->sitting_out, memory_order_relaxed);
		if (out == c->cpu || out == -2) {
			/* not a checker in this part (its CPU is the invalidator's), or no pass: sleep */
			futex_wait(&v->part_seq, seq);
			continue;
		}
		/* A checker until the roles change: every call of the part. */
		while (!atomic_load_explicit(&v->stop, memory_order_relaxed) &&
		       atomic_load_explicit(&v->part_seq, memory_order_acquire) == seq) {
			uint64_t s = atomic_load_explicit(&v->state, memory_order_acquire);
			if (s >> 2 > last && (s & 3) == PHASE_ARMED) {
				/* The roles may have changed between the load of seq and this one: the part's
				 * part_seq bump is before its first ARMED in the invalidator's program order, so
				 * having seen ARMED this load sees the bump.  Without it the checker that now sits
				 * out (on the invalidator's CPU) took the call too, a check nobody waits for: it
				 * could read after the pass had ended and the region been restored (a false stale,
				 * counted into the next pass after its reset). */
				if (atomic_load_explicit(&v->part_seq, memory_order_acquire) != seq)
					continue;
				last = s >> 2;
				check_call(v, c, last);
				spins = 0;
			} else {
				relax(&spins);
			}
		}
	}
	return NULL;
}

int atsd_verify_stop(struct atsd_verifier **slot)
{
	struct atsd_verifier *v;
	sigset_t set, old;
	int i;

	if (!slot || !*slot)
		return 0;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	v = *slot;
	*slot = NULL;  /* before anything is freed: a second stop finds nothing to free */
	atomic_store_explicit(&v->stop, 1, memory_order_release);
	atomic_fetch_add_explicit(&v->part_seq, 1, memory_order_release);
	futex_wake(&v->part_seq);
	for (i = 1; i <= v->started; i++)
		pthread_join(v->c[i - 1].thread, NULL);
	if (v->installed) {
		sigaction(SIGSEGV, &v->old_segv, NULL);
		sigaction(SIGBUS, &v->old_bus, NULL);
		atomic_store(&active, NULL);
		while (atomic_load(&in_fault))  /* a handler on another thread still reading v */
			sched_yield();
	}
	munmap(v, v->bytes);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}

uint64_t atsd_verify_workload_size(int32_t tasks)
{
	return (uint64_t)(tasks > 1 ? tasks : 1) << 20;  /* a whole number of pages up to 1M ones */
}

int32_t atsd_verify_checkers(const int32_t *verify_cpus, int32_t n, const int32_t *invalidators,
			     int32_t ninvalidators, int32_t *out)
{
	int32_t i, j = 0;

	for (i = 0; i < n; i++)
		if (ninvalidators > 1 || verify_cpus[i] != invalidators[0])
			out[j++] = verify_cpus[i];
	return j;
}

int atsd_verify_start(struct atsd_verifier **out, const int32_t *cpus, int32_t n)
{
	struct atsd_verifier *v, *none = NULL;
	struct sigaction sa;
	sigset_t all, old;
	size_t head = (sizeof(*v) + VERIFY_CACHELINE - 1) / VERIFY_CACHELINE * VERIFY_CACHELINE, bytes;
	void *m;
	int i, err = 0;

	*out = NULL;
	if (n < 2 || n > ATSD_MAX_CPUS)
		return -EINVAL;  /* one CPU has no other to check from */
	bytes = head + sizeof(struct checker) * (size_t)n;
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	v = m;
	v->bytes = bytes;
	v->c = (struct checker *)(void *)((uint8_t *)m + head);
	v->n = n;
	atomic_store_explicit(&v->sitting_out, -2, memory_order_relaxed);
	if (!atomic_compare_exchange_strong(&active, &none, v)) {
		munmap(m, bytes);
		return -EBUSY;  /* one verifier at a time: on_fault looks among one's checkers */
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &v->old_segv);
	sigaction(SIGBUS, &sa, &v->old_bus);
	v->installed = 1;
	/* Checkers run with every signal blocked but the faults they catch: a Ctrl-C goes to the
	 * caller, which looks for it between passes. */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 0; i < n; i++) {
		struct checker *c = &v->c[i];
		c->v = v;
		c->cpu = cpus[i];
		err = -pthread_create(&c->thread, NULL, checker_main, c);
		if (err)
			break;
		v->started = i + 1;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	{
		uint32_t r;
		while (!err && (r = atomic_load_explicit(&v->ready, memory_order_acquire)) < (uint32_t)v->started)
			futex_wait(&v->ready, r);
	}
	for (i = 0; !err && i < n; i++)
		err = v->c[i].err;
	if (err) {
		atsd_verify_stop(&v);
		return err;
	}
	*out = v;
	return 0;
}

int atsd_verify_control(struct atsd_verifier *v, int32_t skip_call)
{
	if (!v)
		return -EINVAL;
	v->skip_call = !!skip_call;
	return 0;
}

int atsd_verify_device(struct atsd_verifier *v, struct atsd_device *d)
{
	if (!v)
		return -EINVAL;
	v->device = d;
	return 0;
}

/* The device's check of call k's page after the call returned: mprotect and munmap leave nothing it
 * may translate (its read must fail), madvise the zero page (it must read 0). */
static void device_check(struct atsd_verifier *v, int32_t op, volatile uint64_t *p,
			 struct atsd_verify_result *out)
{
	uint64_t word = 0;
	int e = atsd_device_read_word(v->device, (const void *)p, &word);

	out->device_checks++;
	if (e)
		out->device_failed++;
	else if (op == ATSD_OP_MADVISE && word == 0)
		out->device_zeros++;
	if (!e && (op != ATSD_OP_MADVISE || word != 0))
		out->device_stale++;
}

/* Waits until every checker but the one sitting out has reached call k in `field`; -ETIMEDOUT. */
static int wait_checkers(struct atsd_verifier *v, size_t field, uint32_t k)
{
	uint64_t t0 = 0;
	uint32_t spins = 0;
	int i;

	for (i = 0; i < v->n; i++) {
		struct checker *c = &v->c[i];
		_Atomic uint32_t *w = (_Atomic uint32_t *)(void *)((uint8_t *)c + field);
		if (c->cpu == atomic_load_explicit(&v->sitting_out, memory_order_relaxed))
			continue;
		while (atomic_load_explicit(w, memory_order_acquire) != k) {
			relax(&spins);
			if (spins % 4096 == 0) {
				uint64_t t = now_ns();
				if (!t0)
					t0 = t;
				else if (t - t0 > VERIFY_TIMEOUT_NS)
					return -ETIMEDOUT;
			}
		}
	}
	return 0;
}

static int do_call(int32_t op, uint8_t *a, uint64_t len)
{
	int rc = op == ATSD_OP_MPROTECT ? mprotect(a, len, PROT_NONE) :
		 op == ATSD_OP_MADVISE ? madvise(a, len, MADV_DONTNEED) : munmap(a, len);
	return rc ? -errno : 0;
}

int atsd_verify_pass(struct atsd_verifier *v, struct atsd_region *r, int32_t op, uint64_t stride,
		     const int32_t *invalidators, int32_t ninvalidators, struct atsd_verify_result *out)
{
	uint64_t part, pages, off, t0 = now_ns(), k;
	cpu_set_t saved;
	int i, j, err = 0, lost = 0, pinned = 0;

	memset(out, 0, sizeof(*out));
	/* stride > size first: a larger one times the parts can wrap to 0, a division by zero */
	if (!v || !r || !r->addr || stride == 0 || stride % r->page_size || op < 0 || op >= ATSD_NOPS ||
	    ninvalidators < 1 || stride > r->size || (uint64_t)ninvalidators > r->size / stride ||
	    r->size % ((uint64_t)ninvalidators * stride))
		return -EINVAL;
	k = atomic_load_explicit(&v->state, memory_order_relaxed) >> 2;  /* call numbers go on across passes */
	part = r->size / (uint64_t)ninvalidators;
	pages = stride / r->page_size;
	for (i = 0; i < v->n; i++)
		v->c[i].checks = v->c[i].faults = v->c[i].zeros = v->c[i].stale = v->c[i].held = 0;
	v->op = op;
	if (sched_getaffinity(0, sizeof(saved), &saved))
		return -errno;
	for (i = 0; i < ninvalidators && !err && !lost; i++) {
		uint8_t *base = r->addr + (uint64_t)i * part;
		int active_checkers = 0;
		for (j = 0; j < v->n; j++)
			active_checkers += v->c[j].cpu != invalidators[i];
		if (!active_checkers) {
			err = -EINVAL;  /* no other CPU to check this part from */
			break;
		}
		if ((err = atsd_pin_self(invalidators[i])))
			break;
		pinned = 1;
		/* the roles of this part: every checker but the one on the invalidator's CPU */
		atomic_store_explicit(&v->sitting_out, invalidators[i], memory_order_relaxed);
		atomic_fetch_add_explicit(&v->part_seq, 1, memory_order_release);
		futex_wake(&v->part_seq);
		for (off = 0; off < part; off += stride) {
			/* the checked word: one base page of the stride, a different one call after call */
			uint64_t page = (k * 2654435761u) % pages;
			volatile uint64_t *p = (volatile uint64_t *)(void *)(base + off + page * r->page_size);
			int e, werr, early;
			k++;
			v->addr = p;
			v->value = 0xA75D000000000000ull | k;
			*p = v->value;
			early = 0;
			if (v->device) {  /* the device mirrors the checked page, and must read what was written */
				uint64_t word = 0;
				if ((err = atsd_device_read_word(v->device, (const void *)p, &word)))
					break;
				/* an older page: a translation an earlier invalidation left behind, this call's check */
				early = word != v->value;
			}
			atomic_store_explicit(&v->state, k << 2 | PHASE_ARMED, memory_order_release);
			if ((err = wait_checkers(v, offsetof(struct checker, acked), (uint32_t)k)))
				break;
			atomic_store_explicit(&v->state, k << 2 | PHASE_CALLING, memory_order_release);
			e = v->skip_call ? 0 : do_call(op, base + off, stride);
			atomic_store_explicit(&v->state, k << 2 | PHASE_DONE, memory_order_release);
			werr = wait_checkers(v, offsetof(struct checker, checked), (uint32_t)k);
			if (!werr)
				out->calls++;
			if (!werr && !e && v->device && early) {
				out->device_checks++;
				out->device_stale++;
			} else if (!werr && !e && v->device) {  /* before munmap's reservation: the hole itself is read */
				device_check(v, op, p, out);
			}
			if (!e && op == ATSD_OP_MUNMAP && !v->skip_call) {
				/* after the checks (a reservation faults as the hole does), and also where a checker
				 * timed out: the region keeps its address for atsd_region_remap's MAP_FIXED, so an
				 * unreserved hole would let another mapping land there and be replaced */
				void *q = mmap(base + off, stride, PROT_NONE,
					       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
				if (q != (void *)(base + off)) {
					if (q != MAP_FAILED)
						munmap(q, stride);
					err = werr ? werr : q == MAP_FAILED ? -errno : -EEXIST;
					lost = 1;
					break;
				}
			}
			if ((err = werr))
				break;
			if (e) {
				err = e;
				break;
			}
		}
	}
	atomic_store_explicit(&v->sitting_out, -2, memory_order_relaxed);  /* every checker sleeps until the next pass */
	atomic_fetch_add_explicit(&v->part_seq, 1, memory_order_release);
	futex_wake(&v->part_seq);
	/* the timed passes after this one must run where the plan pinned them, or the run must stop */
	if (pinned && sched_setaffinity(0, sizeof(saved), &saved) && !err)
		err = -errno;
	for (i = 0; i < v->n; i++) {
		out->checks += v->c[i].checks;
		out->faults += v->c[i].faults;
		out->zeros += v->c[i].zeros;
		out->stale += v->c[i].stale;
		out->held += v->c[i].held;
	}
	out->ns = now_ns() - t0;
	if (lost)
		r->addr = NULL;  /* part of the region is gone unreserved: its restore and passes refuse */
	return err;
}

/* Appends the CPUs as "0,1,5" at out + used; the new length (held below len: out stays a string). */
static size_t cpu_list(const int32_t *cpus, int32_t n, char *out, size_t used, size_t len)
{
	for (int32_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%s%d", i ? "," : "", cpus[i]);
	return used < len ? used : len - 1;
}

const char *atsd_verify_stale_text(uint64_t stale, uint64_t checks, int32_t op, uint64_t stride,
				   const int32_t *invalidators, int32_t ninvalidators, const int32_t *checkers,
				   int32_t nchecker, char *out, uint64_t len)
{
	char s[32];
	size_t used;

	if (!len)
		return out;
	/* the CPU lists whole, as atsdbench prints them (a caller's len: 12 a CPU, beside the words) */
	used = (size_t)snprintf(out, len, "STALE TRANSLATION: %llu of %llu checks read through a translation after "
				"the invalidation returned (%s, %s, CPUs ", (unsigned long long)stale,
				(unsigned long long)checks, atsd_op_name(op) ? atsd_op_name(op) : "?",
				atsd_format_size(stride, s, sizeof(s)));
	used = used < len ? used : (size_t)len - 1;
	used = cpu_list(invalidators, ninvalidators, out, used, (size_t)len);
	used += (size_t)snprintf(out + used, (size_t)len - used, " -> ");
	used = used < len ? used : (size_t)len - 1;
	used = cpu_list(checkers, nchecker, out, used, (size_t)len);
	snprintf(out + used, (size_t)len - used, ")");
	return out;
}

const char *atsd_verify_device_stale_text(uint64_t stale, uint64_t checks, int32_t op, uint64_t stride, char *out,
					  uint64_t len)
{
	char s[32];

	snprintf(out, len, "STALE DEVICE TRANSLATION: %llu of %llu device reads went through a translation after "
		 "the invalidation returned (%s, %s, test_hmm)", (unsigned long long)stale, (unsigned long long)checks,
		 atsd_op_name(op) ? atsd_op_name(op) : "?", atsd_format_size(stride, s, sizeof(s)));
	return out;
}
