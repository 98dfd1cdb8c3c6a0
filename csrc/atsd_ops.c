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
int atsd_name_index(const char *const *names, int n, const char *name)
{
	int k;

	for (k = 0; name && k < n; k++)
		if (!strcmp(name, names[k]))
			return k;
	return -EINVAL;
}

int atsd_op_parse(const char *name)
{
	return atsd_name_index(op_names, ATSD_NOPS, name);
}

#define now_ns atsd_now_ns

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

int atsd_timed_part(uint8_t *base, uint64_t size, int32_t op, uint64_t stride, uint64_t *lat, uint64_t *t0_out,
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
	err = atsd_timed_part(r->addr, r->size, op, stride, lat, &t0, &t1, &n, &lost);
	*ns = t1 - t0;
	if (done)
		*done = n;
	if (lost)
		r->addr = NULL;  /* part of the region is gone unreserved: its restore and passes refuse */
	return err;
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
