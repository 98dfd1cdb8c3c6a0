/*
 * atsd_workload.c - will-it-scale's tlb_flush loops (--workload): one task's loops, its file, the
 * names, ASLR as will-it-scale's runtest.py turns it off, and the words of a failed pass.  The tasks
 * that run them are atsd_threads.c's.  See atsd.h (enum atsd_workload) for the contract.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <unistd.h>

static const char *const workload_names[] = {"tlb_flush1", "tlb_flush2", "tlb_flush3"};
static int skip_from;  /* atsd_test_skip_madvise: the test double's countdown, never set by a front end */

const char *atsd_workload_name(int32_t workload)
{
	return workload >= 0 && workload < ATSD_NWORKLOADS ? workload_names[workload] : NULL;
}

int atsd_workload_parse(const char *name)
{
	return atsd_name_index(workload_names, ATSD_NWORKLOADS, name);
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

	if (err == -EBADMSG) {  /* never a rate: both front ends exit 3 with this line */
		snprintf(buf, (size_t)len, "%s: read-back check failed after %" PRIu64 " loops (a page read wrong "
			 "after DONTNEED)", atsd_workload_name(workload), loops);
		return buf;
	}
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
int atsd_workload_file(uint64_t size)
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
int atsd_workload_part(int32_t workload, int fd, uint64_t bytes, int skip, uint64_t *t0_out, uint64_t *t1_out,
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
	t0 = atsd_now_ns();
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
	t1 = atsd_now_ns();
	*t0_out = t0;
	*t1_out = t1;
	*done = n;
	return err;
}

int atsd_workload_skip_next(void)
{
	int skip = skip_from == 1;

	if (skip_from > 1)
		skip_from--;
	return skip;
}
