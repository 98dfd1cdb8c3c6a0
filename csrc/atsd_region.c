/*
 * atsd_region.c - the measured region: mapped with its backing advice (and NUMA node), populated,
 * restored between passes, unmapped; and the page sizes it is made of.  See atsd.h.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int64_t atsd_page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	return ps > 0 ? (int64_t)ps : -EINVAL;
}

/* Read once and kept (the size never changes while the system runs), with open/read only, no stdio
 * and no malloc: a --tasks processes helper maps its hugetlb part after fork() from a process whose
 * other threads may hold stdio's or malloc's locks, and atsd_threads_start reads it before forking. */
int64_t atsd_hugepage_size(void)
{
	static int64_t known;
	int64_t size = __atomic_load_n(&known, __ATOMIC_ACQUIRE), kb = 0;
	char text[8192];
	const char *key = "\nHugepagesize:", *q;
	ssize_t n, got = 0;
	int fd;

	if (size)
		return size;
	text[0] = '\n';  /* the key at the file's start reads as at a line's */
	if ((fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	while (got < (ssize_t)sizeof(text) - 2 && (n = read(fd, text + 1 + got, sizeof(text) - 2 - (size_t)got)) > 0)
		got += n;
	close(fd);
	text[1 + got] = 0;
	if (!(q = strstr(text, key)))
		return -ENOENT;
	for (q += strlen(key); *q == ' ' || *q == '\t'; q++)
		;
	for (; *q >= '0' && *q <= '9' && kb < (INT64_MAX - 9) / 10 / 1024; q++)
		kb = kb * 10 + (*q - '0');
	if (kb <= 0)
		return -ENOENT;
	__atomic_store_n(&known, kb * 1024, __ATOMIC_RELEASE);
	return kb * 1024;
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
	if (size > UINT64_MAX - align)
		return -EOVERFLOW;  /* a wrapped length maps a little and touch() writes past it */
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
