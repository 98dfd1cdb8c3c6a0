/*
 * atsd_profile.c - run --profile's sampler: perf_event_open on chosen CPUs with kernel callchains,
 * and the parser of the ring buffer's records.  See atsd.h.
 *
 * The parser takes plain bytes (the ring's data, already linear), so tests run it on captured bytes
 * without a kernel; the reader copies each CPU's new data out of its ring (handling the wrap) and
 * hands it to the parser.  Works without the perf tool.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct atsd_profile {
	int32_t n;
	uint32_t pages;          /* data pages of each ring (a power of two) */
	size_t page;
	int fds[ATSD_PROFILE_MAX_CPUS];
	int32_t cpus[ATSD_PROFILE_MAX_CPUS];
	void *rings[ATSD_PROFILE_MAX_CPUS];
	uint8_t *scratch;        /* one ring's data, made linear */
};


static uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

int64_t atsd_perf_parse(const uint8_t *buf, uint64_t len, uint64_t *out, uint64_t cap, uint64_t *lost,
			uint64_t *used)
{
	uint64_t at = 0, n = 0;

	while (at + 8 <= len) {
		uint32_t type = get32(buf + at);
		uint16_t size;
		const uint8_t *r = buf + at + 8, *end;

		memcpy(&size, buf + at + 6, sizeof(size));
		if (size < 8 || at + size > len)
			break;  /* a record cut off at the end: left for the next read */
		end = buf + at + size;
		if (type == PERF_RECORD_LOST && r + 16 <= end) {
			if (lost)
				*lost += get64(r + 8);
		} else if (type == PERF_RECORD_SAMPLE && r + 32 <= end) {
			/* sample_type IP | TID | CPU | CALLCHAIN, in the kernel's order */
			uint64_t ip = get64(r), nr = get64(r + 24), i, kept = 0, start;
			uint32_t tid = get32(r + 12), cpu = get32(r + 16);
			const uint8_t *ips = r + 32;

			/* nr is the record's word: compared by division, so no nr wraps nr * 8 or n + 3 + nr
			 * into a small number that passes (and the loop then reads and writes out of bounds) */
			if (nr > (uint64_t)(end - ips) / 8)
				return -EINVAL;
			if (n > cap || cap - n < 3 + (nr ? nr : 1))
				break;  /* out is full: the rest is left for the next call */
			out[n] = cpu;
			out[n + 1] = tid;
			start = n + 3;
			for (i = 0; i < nr; i++) {
				uint64_t v = get64(ips + 8 * i);
				if (v >= (uint64_t)PERF_CONTEXT_MAX)
					continue;  /* PERF_CONTEXT_KERNEL, _USER...: markers, not addresses */
				out[start + kept++] = v;
			}
			if (!kept)
				out[start + kept++] = ip;
			out[n + 2] = kept;
			n = start + kept;
		}
		at += size;
	}
	if (used)
		*used = at;
	return (int64_t)n;
}

int atsd_profile_open(struct atsd_profile **out, const int32_t *cpus, int32_t ncpus, int32_t cycles,
		      uint64_t freq, uint32_t pages)
{
	struct atsd_profile *p;
	int32_t i;

	*out = NULL;
	if (ncpus < 1 || ncpus > ATSD_PROFILE_MAX_CPUS || !pages || (pages & (pages - 1)))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->page = (size_t)sysconf(_SC_PAGESIZE);
	p->pages = pages;
	p->scratch = malloc(p->page * pages);
	if (!p->scratch) {
		free(p);
		return -ENOMEM;
	}
	for (i = 0; i < ncpus; i++) {
		struct perf_event_attr a;
		void *ring;
		int fd;

		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = cycles ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
		a.config = cycles ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK;
		a.freq = 1;
		a.sample_freq = freq;
		a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN;
		a.disabled = 1;
		a.exclude_user = 1;
		a.exclude_hv = 1;
		a.exclude_callchain_user = 1;
		fd = (int)syscall(SYS_perf_event_open, &a, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			int err = -errno;
			p->n = i;
			*out = p;
			atsd_profile_close(out);
			return err;
		}
		ring = mmap(NULL, p->page * (pages + 1), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (ring == MAP_FAILED) {
			int err = -errno;
			close(fd);
			p->n = i;
			*out = p;
			atsd_profile_close(out);
			return err;
		}
		p->fds[i] = fd;
		p->cpus[i] = cpus[i];
		p->rings[i] = ring;
	}
	p->n = ncpus;
	*out = p;
	return 0;
}

int atsd_profile_enable(struct atsd_profile *p, int32_t on)
{
	int32_t i;

	for (i = 0; i < p->n; i++)
		if (ioctl(p->fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) < 0)
			return -errno;
	return 0;
}

int64_t atsd_profile_read(struct atsd_profile *p, uint64_t *out, uint64_t cap, uint64_t *lost)
{
	uint64_t n = 0;
	int32_t i;

	for (i = 0; i < p->n; i++) {
		struct perf_event_mmap_page *meta = p->rings[i];
		const uint8_t *data = (const uint8_t *)p->rings[i] + p->page;
		uint64_t size = (uint64_t)p->page * p->pages, head, tail, len, off, first, used = 0;
		int64_t got;

		head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
		tail = meta->data_tail;
		len = head - tail;
		if (len > size)
			len = size;
		off = tail % size;
		first = size - off < len ? size - off : len;
		memcpy(p->scratch, data + off, first);
		memcpy(p->scratch + first, data, len - first);
		got = atsd_perf_parse(p->scratch, len, out + n, cap - n, lost, &used);
		if (got < 0)
			return got;
		n += (uint64_t)got;
		__atomic_store_n(&meta->data_tail, tail + used, __ATOMIC_RELEASE);
	}
	return (int64_t)n;
}

int atsd_profile_close(struct atsd_profile **slot)
{
	struct atsd_profile *p;
	sigset_t old;
	int32_t i;

	if (!slot || !*slot)
		return 0;
	atsd_hold_signals(&old);
	p = *slot;
	*slot = NULL;  /* before anything is released: a second close finds nothing */
	for (i = 0; i < p->n; i++) {
		munmap(p->rings[i], p->page * (p->pages + 1));
		close(p->fds[i]);
	}
	free(p->scratch);
	free(p);
	atsd_release_signals(&old);
	return 0;
}
