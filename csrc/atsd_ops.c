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
#include <string.h>
#include <sys/mman.h>
#include <time.h>

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

int atsd_op_parse(const char *name)
{
	int k;

	for (k = 0; name && k < ATSD_NOPS; k++)
		if (!strcmp(name, op_names[k]))
			return k;
	return -EINVAL;
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

int atsd_op_pass(struct atsd_region *r, int32_t op, uint64_t stride, uint64_t *ns, uint64_t *lat,
		 uint64_t *done)
{
	uint8_t *base = r->addr;
	uint64_t size = r->size, off = 0, t0 = 0, t1 = 0, n = 0;
	int err = 0;

	if (!base || stride == 0 || stride % r->page_size || size % stride || op < 0 || op >= ATSD_NOPS)
		return -EINVAL;
	if (op == ATSD_OP_MPROTECT)
		TIMED_LOOP(CALL_MPROTECT);
	else if (op == ATSD_OP_MADVISE)
		TIMED_LOOP(CALL_MADVISE);
	else
		TIMED_LOOP(CALL_MUNMAP);
	*ns = t1 - t0;
	if (done)
		*done = n;
	if (op == ATSD_OP_MUNMAP && off) {
		/* Untimed: hold the hole at once, so no other mapping (the Python front end's allocator)
		 * lands in it before atsd_op_restore maps the region again over its own reservation. */
		void *p = mmap(base, off, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
			       -1, 0);
		if (p != (void *)base) {
			int e = p == MAP_FAILED ? -errno : -EEXIST;
			if (p != MAP_FAILED)
				munmap(p, off);  /* a kernel before 4.17 took NOREPLACE as a hint */
			r->addr = NULL;  /* the region is gone: its restore and passes refuse (-EINVAL) */
			return err ? err : e;
		}
	}
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
