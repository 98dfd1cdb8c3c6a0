/*
 * atsd_core.h - what the core's files share with each other and with atsd; not part of the API
 * (atsd.h), so no cdef is cut from here.
 */
#ifndef ATSD_CORE_H
#define ATSD_CORE_H

#include <signal.h>
#include <stdint.h>
#include <time.h>

#ifdef CLOCK_MONOTONIC_RAW
#define ATSD_CLOCK CLOCK_MONOTONIC_RAW
#else
#define ATSD_CLOCK CLOCK_MONOTONIC
#endif

/* POWER lines are 128 bytes; enough for x86 and arm64. */
#define ATSD_CACHELINE 128

static inline uint64_t atsd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(ATSD_CLOCK, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Where `name` stands in names[0..n) (atsd_ops.c), -EINVAL where it does not. */
int atsd_name_index(const char *const *names, int n, const char *name);

/* The region mapped again over its own range, with its advice, unpopulated (munmap's restore). */
int atsd_region_remap(struct atsd_region *r);

/* Native cleanup runs with SIGINT and SIGTERM held: a handler (Python's, or atsd's) then runs after the
 * object is gone and its owner's slot is NULL, never half-way through freeing it.  Every C file's
 * release takes these two (atsd.c). */
void atsd_hold_signals(sigset_t *old);
void atsd_release_signals(const sigset_t *old);

/* One op over [base, base + size) in strides (atsd_ops.c): the timed loop, then (munmap) the hole
 * reserved.  *t0, *t1: the loop's clock reads; *done: the calls that succeeded; *lost: munmap's hole
 * could not be reserved. */
int atsd_timed_part(uint8_t *base, uint64_t size, int32_t op, uint64_t stride, uint64_t *lat, uint64_t *t0,
		    uint64_t *t1, uint64_t *done, int *lost);

/* One task's will-it-scale loops over `bytes` of pages (atsd_workload.c), timed; its file made by
 * atsd_workload_file() of the unit (fd; -errno where it could not be made: the pass fails with it). */
int atsd_workload_part(int32_t workload, int fd, uint64_t bytes, int skip, uint64_t *t0, uint64_t *t1,
		       uint64_t *done);
int atsd_workload_file(uint64_t size);
/* The test double's switch for the workload pass under way (atsd_test_skip_madvise's countdown). */
int atsd_workload_skip_next(void);

/* The plan's parts (atsd_plan.c) that its check (atsd_check.c) uses: a refusal's sentence into msg
 * (returns err), whether option FIELD was given, and the option table's default of FIELD. */
int atsd_plan_fail(int err, char *msg, uint64_t msglen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int atsd_plan_given(const struct atsd_plan *p, const char *field);
const char *atsd_option_default(const char *field);

/* The pass's time: the slowest task's t1 - t0. */
uint64_t atsd_threads_slowest(const struct atsd_thread_times *times, int32_t n);

#endif
