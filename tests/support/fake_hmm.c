/*
 * fake_hmm.c - a test double of the kernel's HMM test driver (lib/test_hmm.c), LD_PRELOADed into a
 * test's atsdbench or atsd with ATSD_HMM_DEVICE naming any file: its open() gets a /dev/null fd, and
 * HMM_DMIRROR_READ on it copies the pages as the process itself can read them (process_vm_readv of
 * itself: EFAULT for a PROT_NONE or unmapped page, zeros after MADV_DONTNEED).  A device that caches
 * nothing, so it is never stale; FAKE_HMM_STALE=1 makes it one that never forgets: each page is read
 * once and its bytes kept, every later read served from that copy (a mirror whose invalidation never
 * erases).  The real driver is exercised in guests (scripts/device-check); this serves host tests.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

struct dmirror_cmd {
	uint64_t addr, ptr, npages, cpages, faults;
};
#define DMIRROR_READ _IOWR('H', 0x00, struct dmirror_cmd)

static int fake_fd = -1;

struct kept {
	uint64_t page;
	uint8_t *bytes;
};
static struct kept *kept;
static size_t nkept, capkept;

static int is_device(const char *path)
{
	const char *d = getenv("ATSD_HMM_DEVICE");

	return d && *d && path && !strcmp(path, d);
}

static int open_device(void)
{
	int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	int fd = real("/dev/null", O_RDWR | O_CLOEXEC);

	fake_fd = fd;
	return fd;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode = 0;
	int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");

	if (is_device(path))
		return open_device();
	va_start(ap, flags);
	if (flags & (O_CREAT | O_TMPFILE))
		mode = va_arg(ap, mode_t);
	va_end(ap);
	return real(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode = 0;
	int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");

	if (is_device(path))
		return open_device();
	va_start(ap, flags);
	if (flags & (O_CREAT | O_TMPFILE))
		mode = va_arg(ap, mode_t);
	va_end(ap);
	return real(path, flags, mode);
}

static uint8_t *find(uint64_t page)
{
	size_t i;

	for (i = 0; i < nkept; i++)
		if (kept[i].page == page)
			return kept[i].bytes;
	return NULL;
}

static int read_page(uint64_t page, uint8_t *out, long size)
{
	struct iovec local = {out, (size_t)size}, remote = {(void *)(uintptr_t)page, (size_t)size};
	uint8_t *copy = getenv("FAKE_HMM_STALE") ? find(page) : NULL;

	if (copy) {
		memcpy(out, copy, (size_t)size);
		return 0;
	}
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != size)
		return -EFAULT;
	if (getenv("FAKE_HMM_STALE")) {
		if (nkept == capkept) {
			capkept = capkept ? capkept * 2 : 4096;
			kept = realloc(kept, capkept * sizeof(*kept));
		}
		kept[nkept].page = page;
		kept[nkept].bytes = malloc((size_t)size);
		memcpy(kept[nkept++].bytes, out, (size_t)size);
	}
	return 0;
}

int ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;
	int (*real)(int, unsigned long, ...) = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd == fake_fd && fd >= 0) {
		struct dmirror_cmd *cmd = arg;
		long size = sysconf(_SC_PAGESIZE);
		uint64_t i;
		if (request != DMIRROR_READ) {
			errno = EINVAL;
			return -1;
		}
		cmd->cpages = 0;
		for (i = 0; i < cmd->npages; i++) {
			if (read_page(cmd->addr + i * (uint64_t)size, (uint8_t *)(uintptr_t)cmd->ptr + i * (uint64_t)size,
				      size)) {
				errno = EFAULT;
				return -1;
			}
			cmd->cpages++;
		}
		return 0;
	}
	return real(fd, request, arg);
}

int close(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "close");

	if (fd == fake_fd)
		fake_fd = -1;
	return real(fd);
}
