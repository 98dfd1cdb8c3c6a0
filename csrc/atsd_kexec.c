/*
 * atsd_kexec.c - the next boot of a campaign by kexec_file_load(2) and reboot(2), without kexec-tools.
 *
 * Only atsdbench uses it (the standalone atsd runs no campaign).  Errors are -errno: the meaning of
 * each (lockdown, signatures, CAP_SYS_BOOT) depends on facts read elsewhere, and atsdbench says it.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/reboot.h>

#ifndef KEXEC_FILE_NO_INITRAMFS
#define KEXEC_FILE_NO_INITRAMFS 0x00000004
#endif

/* The kernel reads both files through their descriptors: a pipe or a directory is EINVAL from deep
 * inside; refused here first. */
static int open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int atsd_kexec_load(const char *kernel, const char *initrd, const char *cmdline)
{
#ifdef SYS_kexec_file_load
	int kfd, ifd = -1, rc = 0;
	unsigned long flags = 0;
	const char *line = cmdline ? cmdline : "";

	kfd = open_regular(kernel);
	if (kfd < 0)
		return kfd;
	if (initrd && *initrd) {
		ifd = open_regular(initrd);
		if (ifd < 0) {
			close(kfd);
			return ifd;
		}
	} else {
		flags |= KEXEC_FILE_NO_INITRAMFS;
	}
	/* the command line's length counts its NUL */
	if (syscall(SYS_kexec_file_load, kfd, ifd, strlen(line) + 1, line, flags) < 0)
		rc = -errno;
	close(kfd);
	if (ifd >= 0)
		close(ifd);
	return rc;
#else
	(void)kernel; (void)initrd; (void)cmdline;
	return -ENOSYS;
#endif
}

int atsd_kexec_unload(void)
{
#ifdef SYS_kexec_file_load
	if (syscall(SYS_kexec_file_load, -1, -1, 0, NULL, 0x1 /* KEXEC_FILE_UNLOAD */) < 0)
		return -errno;
	return 0;
#else
	return -ENOSYS;
#endif
}

int atsd_kexec_probe(void)
{
#ifdef SYS_kexec_file_load
	if (syscall(SYS_kexec_file_load, -1, -1, 0UL, NULL, ~0UL) < 0)
		return -errno;
	return 0;
#else
	return -ENOSYS;
#endif
}

int atsd_kexec_reboot(void)
{
	sync();
	if (reboot(LINUX_REBOOT_CMD_KEXEC) < 0)
		return -errno;
	return 0;  /* not reached when it worked */
}
