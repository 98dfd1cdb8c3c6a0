/*
 * atsd_device.c - --device hmm: a device whose TLB mirrors the region, through the kernel's own HMM
 * test driver (lib/test_hmm.c, /dev/hmm_dmirror0).  See atsd.h for the contract, docs/device.md for
 * what it measures.
 *
 * Opening the device registers an mmu interval notifier over this process's whole address space.
 * HMM_DMIRROR_READ makes the driver fault the range into its own page table (an xarray of page
 * pointers, filled by hmm_range_fault) and copy it out through a bounce buffer: after it the "device"
 * translates every page read.  An mprotect, madvise or munmap over a mirrored range then calls the
 * driver's invalidate callback, which erases the entries: the secondary-TLB path a GPU driver takes
 * (notifier chain, ranges, the driver's invalidation), not a device round trip.
 *
 * A read the driver cannot translate (its entry erased and the refault refused: PROT_NONE, unmapped)
 * fails with the fault path's error (-EFAULT); one it still translates copies the page.
 */
#define _GNU_SOURCE
#include "atsd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* lib/test_hmm_uapi.h's struct hmm_dmirror_cmd and its READ ioctl (stable: the selftests use them). */
struct dmirror_cmd {
	uint64_t addr;
	uint64_t ptr;
	uint64_t npages;
	uint64_t cpages;
	uint64_t faults;
};
#define DMIRROR_READ _IOWR('H', 0x00, struct dmirror_cmd)

struct atsd_device {
	int fd;
	uint64_t page_size;
	uint8_t *bounce;        /* ATSD_DEVICE_CHUNK bytes: where the device copies what it read */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(ATSD_CLOCK, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *atsd_device_path(void)
{
	const char *p = getenv("ATSD_HMM_DEVICE");  /* tests point it elsewhere */

	return p && *p ? p : "/dev/hmm_dmirror0";
}

int atsd_device_open(struct atsd_device **out, const char *path)
{
	struct atsd_device *d;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->page_size = page > 0 ? (uint64_t)page : 4096;
	d->fd = open(path && *path ? path : atsd_device_path(), O_RDWR | O_CLOEXEC);
	if (d->fd < 0) {
		err = -errno;
		free(d);
		return err;
	}
	d->bounce = mmap(NULL, ATSD_DEVICE_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (d->bounce == MAP_FAILED) {
		err = -errno;
		close(d->fd);
		free(d);
		return err;
	}
	*out = d;
	return 0;
}

static int device_read(struct atsd_device *d, uint64_t addr, uint64_t npages, uint64_t *faults)
{
	struct dmirror_cmd cmd;

	memset(&cmd, 0, sizeof(cmd));
	cmd.addr = addr;
	cmd.ptr = (uint64_t)(uintptr_t)d->bounce;
	cmd.npages = npages;
	if (ioctl(d->fd, DMIRROR_READ, &cmd))
		return -errno;
	if (faults)
		*faults += cmd.faults;
	return cmd.cpages == npages ? 0 : -EIO;
}

int atsd_device_touch(struct atsd_device *d, const struct atsd_region *r, uint64_t *ns, uint64_t *faults)
{
	uint64_t off, chunk, t0;
	int err = 0;

	*ns = 0;
	if (faults)
		*faults = 0;
	if (!d || !r || !r->addr)
		return -EINVAL;
	t0 = now_ns();
	for (off = 0; off < r->size && !err; off += chunk) {
		chunk = r->size - off < ATSD_DEVICE_CHUNK ? r->size - off : ATSD_DEVICE_CHUNK;
		err = device_read(d, (uint64_t)(uintptr_t)(r->addr + off), chunk / d->page_size, faults);
	}
	*ns = now_ns() - t0;
	return err;
}

int atsd_device_read_word(struct atsd_device *d, const void *addr, uint64_t *word)
{
	uint64_t page = (uint64_t)(uintptr_t)addr & ~(d->page_size - 1), off = (uint64_t)(uintptr_t)addr - page;
	int err;

	if (!d || off + sizeof(*word) > d->page_size)
		return -EINVAL;
	err = device_read(d, page, 1, NULL);
	if (!err)
		memcpy(word, d->bounce + off, sizeof(*word));
	return err;
}

int atsd_device_close(struct atsd_device **slot)
{
	struct atsd_device *d;
	sigset_t old;

	atsd_hold_signals(&old);
	d = *slot;
	*slot = NULL;
	if (d) {
		close(d->fd);  /* the driver's notifier goes with the file */
		munmap(d->bounce, ATSD_DEVICE_CHUNK);
		free(d);
	}
	atsd_release_signals(&old);
	return 0;
}

uint64_t atsd_device_mirror_bytes(uint64_t size, uint64_t page_size)
{
	/* the driver's xarray: a 576-byte node per 64 entries, one entry a page (rounded up to 16 bytes
	 * a page for the partly filled nodes), plus the kernel's bounce buffer of one chunk */
	return (page_size ? size / page_size : 0) * 16 + ATSD_DEVICE_CHUNK;
}

static const char *const names[ATSD_NDEVICES] = {"none", "hmm"};

const char *atsd_device_name(int32_t kind)
{
	return kind >= 0 && kind < ATSD_NDEVICES ? names[kind] : NULL;
}

int atsd_device_parse(const char *name)
{
	int i;

	for (i = 0; i < ATSD_NDEVICES; i++)
		if (!strcmp(name, names[i]))
			return i;
	return -EINVAL;
}

/* ---- the device path's counts: kprobe events ---- */

static const struct {
	const char *column, *symbol, *module;
} probes[] = {
	/* include/linux/mmu_notifier.h calls it only where the mm has notifiers: 0 without the device */
	{"notifier_starts", "__mmu_notifier_invalidate_range_start", NULL},
	{"device_invalidates", "dmirror_interval_invalidate", "test_hmm"},
};
#define KPROBE_GROUP "atsdbench_"
/* the initial pid namespace's inode (include/linux/proc_ns.h PROC_PID_INIT_INO) */
#define PID_NS_INIT 0xEFFFFFFCUL

static unsigned long pid_ns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) ? PID_NS_INIT : (unsigned long)st.st_ino;
}

/* The group of this process's probes: "atsdbench_PID" in the initial pid namespace, "atsdbench_NS_PID"
 * in another (NS its inode): a pid names a process only within its namespace, tracefs is the system's. */
static void group_name(char *out, size_t len)
{
	unsigned long ns = pid_ns();

	if (ns == PID_NS_INIT)
		snprintf(out, len, KPROBE_GROUP "%ld", (long)getpid());
	else
		snprintf(out, len, KPROBE_GROUP "%lu_%ld", ns, (long)getpid());
}

/* When process pid started, in seconds since the epoch (/proc/PID/stat's starttime after boot's btime),
 * or -1 where /proc does not say. */
static double process_start(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ticks = 0, btime = 0;
	long hz = sysconf(_SC_CLK_TCK);
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || hz <= 0)
		return -1;
	buf[n] = 0;
	/* the name in parentheses may hold spaces: fields count from after its last ')' (field 3 on) */
	if (!(p = strrchr(buf, ')')))
		return -1;
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &ticks) != 1)
		return -1;
	if ((fd = open("/proc/stat", O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	char stat_buf[8192];
	n = read(fd, stat_buf, sizeof(stat_buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	stat_buf[n] = 0;
	if (!(p = strstr(stat_buf, "\nbtime ")) || sscanf(p + 7, "%llu", &btime) != 1)
		return -1;
	return (double)btime + (double)ticks / (double)hz;
}

/* 1 where a group name is of a process of this pid namespace that is gone, or whose pid a later
 * process took (it started after the group was made: the group's folder's mtime, with a second's
 * margin); 0 for a live one, one of another namespace (not ours to judge: its pids are not ours),
 * another name, or where the times cannot be told. */
static int group_gone(const char *root, const char *name, unsigned long ours)
{
	const char *rest = name + strlen(KPROBE_GROUP), *pid = rest;
	unsigned long ns = PID_NS_INIT;
	char *end;

	if (strncmp(name, KPROBE_GROUP, strlen(KPROBE_GROUP)) || !*rest)
		return 0;
	if (strchr(rest, '_')) {
		ns = strtoul(rest, &end, 10);
		if (end == rest || *end != '_')
			return 0;
		pid = end + 1;
	}
	if (!*pid || strspn(pid, "0123456789") != strlen(pid) || ns != ours)
		return 0;
	if (kill((pid_t)atol(pid), 0) && errno == ESRCH)
		return 1;
	char path[4200];
	struct stat st;
	double started = process_start(atol(pid));

	snprintf(path, sizeof(path), "%s/events/%s", root, name);
	if (started < 0 || stat(path, &st))
		return 0;
	return started > (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec * 1e-9 + 1.0;
}

int atsd_device_kprobe(int32_t i, char *column, uint64_t column_len, char *symbol, uint64_t symbol_len)
{
	if (i < 0 || i >= (int32_t)(sizeof(probes) / sizeof(probes[0])))
		return -EINVAL;
	snprintf(column, column_len, "%s", probes[i].column);
	if (probes[i].module)
		snprintf(symbol, symbol_len, "%s:%s", probes[i].module, probes[i].symbol);
	else
		snprintf(symbol, symbol_len, "%s", probes[i].symbol);
	return (int32_t)(sizeof(probes) / sizeof(probes[0]));
}

static int kprobe_write(const char *root, const char *line)
{
	char path[4200];
	int fd, err = 0;
	size_t len = strlen(line);
	ssize_t w;

	snprintf(path, sizeof(path), "%s/kprobe_events", root);
	if ((fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)) < 0)
		return -errno;
	w = write(fd, line, len);
	if (w < 0)
		err = -errno;
	else if ((size_t)w != len)  /* a short write sets no errno: half a probe line is an error too */
		err = -EIO;
	close(fd);
	return err;
}

/* Every event of the groups of processes that are gone (a run killed before it removed its probes). */
static void kprobes_remove_stale(const char *root)
{
	char path[4200];
	struct dirent *d, *e;
	DIR *dir, *group;
	unsigned long ours = pid_ns();

	snprintf(path, sizeof(path), "%s/events", root);
	if (!(dir = opendir(path)))
		return;
	while ((d = readdir(dir))) {
		if (!group_gone(root, d->d_name, ours))
			continue;
		snprintf(path, sizeof(path), "%s/events/%s", root, d->d_name);
		if (!(group = opendir(path)))
			continue;
		while ((e = readdir(group))) {
			char line[512];
			if (e->d_type != DT_DIR || e->d_name[0] == '.')
				continue;
			snprintf(line, sizeof(line), "-:%.64s/%.64s\n", d->d_name, e->d_name);
			kprobe_write(root, line);
		}
		closedir(group);
	}
	closedir(dir);
}

static int kprobe_make(const char *root, char kind, const char *column, const char *symbol, char *event,
		       uint64_t event_len, uint64_t *id);

int atsd_kprobe_make(const char *root, const char *column, const char *symbol, char *event, uint64_t event_len,
		     uint64_t *id)
{
	return kprobe_make(root, 'p', column, symbol, event, event_len, id);
}

static int kprobe_make(const char *root, char kind, const char *column, const char *symbol, char *event,
		       uint64_t event_len, uint64_t *id)
{
	struct atsd_tracepoint t;
	char line[512], group[64];
	const char *plain = strchr(symbol, ':');
	int err;

	*id = 0;
	kprobes_remove_stale(root);
	group_name(group, sizeof(group));
	snprintf(event, event_len, "%s/%s", group, column);
	snprintf(line, sizeof(line), "-:%s\n", event);
	kprobe_write(root, line);  /* one of our pid left by an earlier process */
	snprintf(line, sizeof(line), "%c:%s %s\n", kind, event, symbol);
	err = kprobe_write(root, line);
	if (err == -EINVAL && plain) {  /* the driver built in: the symbol without its module */
		snprintf(line, sizeof(line), "%c:%s %s\n", kind, event, plain + 1);
		err = kprobe_write(root, line);
	}
	if (err)
		return err;
	if ((err = atsd_tracepoint_find(root, event, &t)) || !t.id) {
		atsd_kprobe_remove(root, event);
		return err ? err : -ENOENT;
	}
	*id = t.id;
	return 0;
}

int atsd_kprobe_remove(const char *root, const char *event)
{
	char line[512];
	sigset_t old;
	int err;

	atsd_hold_signals(&old);
	snprintf(line, sizeof(line), "-:%s\n", event);
	err = kprobe_write(root, line);
	atsd_release_signals(&old);
	return err;
}

int atsd_device_prime(const struct atsd_plan *p)
{
	struct atsd_device *d = NULL;
	int i, none = 0, hmm = 0, err;

	for (i = 0; i < p->ndevices; i++) {
		none |= p->devices[i] == ATSD_DEVICE_NONE;
		hmm |= p->devices[i] == ATSD_DEVICE_HMM;
	}
	if (!none || !hmm)
		return 0;
	if ((err = atsd_device_open(&d, NULL)))
		return err;
	atsd_device_close(&d);
	return 1;
}

/* run --breakdown's device stage: the driver's callback from its entry to its return. */
static const char *const stage_probes[2] = {"device_entry", "device_exit"};

int atsd_breakdown_device(const char *root, struct atsd_breakdown_probe *p)
{
	char event[2][80], symbol[96];
	uint64_t id;
	int i, err = 0;

	if (p->nevents + 2 > ATSD_MAX_TRACE_EVENTS)
		return -ENOSPC;
	snprintf(symbol, sizeof(symbol), "%s:%s", probes[1].module, probes[1].symbol);
	for (i = 0; i < 2 && !err; i++)
		err = kprobe_make(root, i ? 'r' : 'p', stage_probes[i], symbol, event[i], sizeof(event[i]), &id);
	if (err) {
		atsd_breakdown_device_remove(root);
		return err;
	}
	for (i = 0; i < 2; i++) {
		struct atsd_trace_event *e = &p->events[p->nevents++];
		memset(e, 0, sizeof(*e));
		snprintf(e->event, sizeof(e->event), "%.63s", event[i]);
		snprintf(e->family, sizeof(e->family), "device");
	}
	snprintf(p->have + strlen(p->have), sizeof(p->have) - strlen(p->have), "%sdevice", p->have[0] ? "," : "");
	return 0;
}

void atsd_breakdown_device_remove(const char *root)
{
	char event[80], group[64];
	int i;

	group_name(group, sizeof(group));
	for (i = 0; i < 2; i++) {
		snprintf(event, sizeof(event), "%s/%s", group, stage_probes[i]);
		atsd_kprobe_remove(root, event);
	}
}
